"""Audit of an all-0/1 table's second moment about its private centre (``moments/ranged_release.py``).

With every column 0/1 and given its range, the rows are the corners of ``[-1, 1]^d``; the second moment
about the released private mean ``c`` is clipped to the box about ``c``, ``sqrt(sum (1 + |c_j|)^2)``
(``_box_about``), which no corner exceeds, and its noise is calibrated to that bound. Conditional on ``c``
(a released value) the release is the Gaussian second moment of rows bounded by it: audited here on the
pair of corners whose outer products about ``c`` differ most, as exact coordinates plus the noise scale
the real release reports (the replica of ``tests/moments/test_release_audit.py``). Negative control: the
noise calibrated to the bound about the midpoints, ``sqrt(d)``, the bound the rows were drawn against
before (every corner lies there), which the far corner exceeds about ``c``: it must fire.
"""

import itertools

import numpy as np
import pytest

from dpmoments.mechanisms import upper_triangle
from dpmoments.moments.ranged_release import _box_about
from dpmoments.moments.releases import release_public_second_moment
from dpmoments.testing import audit

EPS, DELTA = 1.0, 1e-3
C = np.array([-0.8, 0.8, -0.8])  # a released centre, standardised (columns of 10%, 90% and 10% ones)
BOX = _box_about(None, C)
FAR = np.where(C > 0, -1.0, 1.0)  # the corner farthest from c: at the box's bound
# The far corner against the near one: the pair whose outer products about c differ most (brute force, 8 corners)
PAIR = {"A": FAR, "B": -FAR}
BACKGROUND = np.array([[1.0, 1.0, -1.0], [-1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]])
DATA = {name: np.vstack([BACKGROUND, row]) for name, row in PAIR.items()}


def _exact(X):
    Z = X - C
    return upper_triangle(Z.T @ Z / len(Z))


def _replica(noise_factor=1.0):
    scale = release_public_second_moment(DATA["A"], epsilon=EPS, delta=DELTA, row_norm=BOX, center=C,
                                         rng=0).noise_scale * noise_factor
    exact = {name: _exact(X) for name, X in DATA.items()}

    def draw(name, rng, size):
        return exact[name] + rng.normal(0.0, scale, size=(size, exact[name].size))

    return draw, exact["A"] - exact["B"]


def test_the_box_about_the_centre_holds_every_corner_so_nothing_is_clipped():
    corners = np.array(list(itertools.product((-1.0, 1.0), repeat=C.size)))
    norms = np.linalg.norm(corners - C, axis=1)
    assert norms.max() == pytest.approx(BOX) and np.linalg.norm(FAR - C) == pytest.approx(BOX)
    assert norms.max() > np.sqrt(C.size)  # the midpoints' bound would clip the far corner


@pytest.mark.statistical
def test_the_second_moment_about_the_private_centre_keeps_its_epsilon_and_the_midpoint_bound_does_not():
    draw, projection = _replica()
    result = audit(draw, "A", "B", delta=DELTA, n_samples=50_000, batch=50_000, projection=projection, rng=5)
    result.check(EPS)
    assert result.epsilon_lower_bound > 0.2  # not vacuous (this pair is not tight: the near corner is short)
    # the control: noise for rows within sqrt(d) of c, which the far corner is not (sensitivity goes as R^2)
    draw, projection = _replica(noise_factor=C.size / BOX**2)
    control = audit(draw, "A", "B", delta=DELTA, n_samples=50_000, batch=50_000, projection=projection, rng=6)
    assert control.epsilon_lower_bound > 1.3 * EPS
