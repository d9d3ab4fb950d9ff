"""Report-noisy-min's free gap: same draws, same choice, and the pair (index, gap) passes its audit."""

import numpy as np
import pytest

from dpmoments.mechanisms import report_noisy_min
from dpmoments.testing import audit


def test_gap_comes_with_the_same_choice():
    scores = np.array([3.0, 0.0, 5.0, 0.5])
    index, gap = report_noisy_min(scores, 0.2, rng=4, return_gap=True)
    assert index == report_noisy_min(scores, 0.2, rng=4)
    noisy = scores + np.random.default_rng(4).laplace(0.0, 0.2, size=4)
    assert gap == pytest.approx(np.diff(np.sort(noisy)[:2])[0])
    assert report_noisy_min(scores, 0.0, return_gap=True) == (1, 0.5)
    assert report_noisy_min([1.0], 1.0, rng=0, return_gap=True) == (0, np.inf)


@pytest.mark.statistical
def test_audit_noisy_min_with_gap():
    """Scores (0, 0) against (Delta, -Delta), Laplace(2 Delta / eps): the index *and* the gap stay eps-DP.

    The output is projected to one signed number (+gap if the first model wins, -gap otherwise), so the
    audit's threshold events are joint events on (index, gap). A quarter of the noise must be caught.
    """
    delta_q = 49.0
    centres = [np.array([0.0, 0.0]), np.array([delta_q, -delta_q])]

    def mech(factor):
        scale = factor * 2.0 * delta_q

        def draw(which, rng, size):
            noisy = centres[which] + rng.laplace(0.0, scale, size=(size, 2))
            gap = np.abs(noisy[:, 0] - noisy[:, 1])
            return np.where(np.argmin(noisy, axis=1) == 0, gap, -gap)

        return draw

    audit(mech(1.0), 0, 1, n_samples=400_000, batch=200_000, projection=lambda o: o, rng=5).check(1.0)
    leaky = audit(mech(0.25), 0, 1, n_samples=400_000, batch=200_000, projection=lambda o: o, rng=6)
    assert not leaky.consistent_with(1.0)
