"""Audit of a multi-site second moment with public ranges: one site's reply on a neighbouring pair.

With ``ranges`` in the plan, a site clips each ranged column to its range and standardises it by the midpoint
and half-width before anything else (``dpmoments.multisite.column_ranges``), then sends its normalised second
moment plus the plan's Gaussian noise (conventional protocol: its own noise). The pair is the worst case the
ranges allow: rows far outside both ranges that map to the box corners (1, 1) and (1, -1), whose outer products
differ by 2 in the two off-diagonal entries (replace-one sensitivity sqrt(2) R^2 / n at R = sqrt(2), the box's
bound). A replica (the exact mapped statistic plus the plan's std times standard normals from the same stream)
is checked draw for draw against the site's reply; the audit projects onto the difference and must not refute
the round's claim. Negative control: half the noise, which the same audit refutes.
"""

import math

import numpy as np
import pytest

from dpmoments._rng import as_generator
from dpmoments.mechanisms import gaussian_noise, upper_triangle
from dpmoments.multisite import Plan, Query, Site, deal, from_wire, to_wire
from dpmoments.testing import audit

EPS, DELTA = 1.0, 1e-3
RANGES = {0: (0.0, 10.0), 1: (0.0, 100.0)}
_BACK = np.random.default_rng(5).uniform([0.0, 0.0], [10.0, 100.0], size=(499, 2))
PAIR = {"A": np.array([1e6, 1e6]), "B": np.array([1e6, -1e6])}  # outside both ranges: clipped to the corners
N_OTHER = 2_000


def _plan():
    return Plan.build("conventional", ["s", "other"], [500, N_OTHER], n_features=2, row_norm=math.sqrt(2.0),
                      epsilon=EPS, delta=DELTA, ranges=RANGES)


def _exact(name):
    Z = (np.clip(np.vstack([_BACK, PAIR[name]]), [0.0, 0.0], [10.0, 100.0]) - [5.0, 50.0]) / [5.0, 50.0]
    return upper_triangle(Z.T @ Z / len(Z))


def _replica(plan, noise_factor=1.0):
    sd = float(plan.noise[0].g_std[0]) * noise_factor
    exact = {name: _exact(name) for name in PAIR}

    def draw(name, rng, size=1):
        return exact[name] + gaussian_noise((size, exact[name].size), sd, rng)

    return draw, exact["A"] - exact["B"]


def test_replica_reproduces_the_sites_ranged_reply():
    plan = _plan()
    bundle = deal(plan, 0)["s"]
    sd = float(plan.noise[0].g_std[0])
    for name in PAIR:
        for seed in range(3):
            site = Site("s", np.vstack([_BACK, PAIR[name]]), row_norm=math.sqrt(2.0), ranges=RANGES)
            site.accept(bundle, rng=seed, throwaway=True)  # one share asked again on purpose: the replica's check
            reply = from_wire(site.handle(to_wire(Query(plan.digest, 0, f"r-{seed}"))))
            expected = _exact(name) + sd * gaussian_noise(3, 1.0, as_generator(seed))
            np.testing.assert_allclose(upper_triangle(reply.value(0)), expected, rtol=0, atol=1e-15)
    difference = _exact("A") - _exact("B")
    assert np.linalg.norm([difference[0], difference[1], difference[1], difference[2]]) == pytest.approx(
        math.sqrt(2.0) * 2.0 / 500)  # the worst case: the sensitivity itself


def _claim(plan):
    return plan.claimed(0, "s").epsilon, float(plan.noise[0].deltas[0])


@pytest.mark.statistical
def test_ranged_reply_audit():
    plan = _plan()
    draw, direction = _replica(plan)
    eps, delta = _claim(plan)
    result = audit(draw, "A", "B", delta=delta, n_samples=200_000, batch=100_000, projection=direction, rng=43)
    result.check(eps)
    assert result.epsilon_lower_bound > 0.4 * eps  # observed 0.517 (seed 43)


@pytest.mark.statistical
def test_ranged_reply_with_half_the_noise_is_detected():
    plan = _plan()
    draw, direction = _replica(plan, noise_factor=0.5)
    eps, delta = _claim(plan)
    result = audit(draw, "A", "B", delta=delta, n_samples=200_000, batch=100_000, projection=direction, rng=44)
    assert not result.consistent_with(eps)  # observed 1.243 (seed 44)
