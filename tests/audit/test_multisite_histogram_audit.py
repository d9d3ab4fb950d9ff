"""Audit of the multi-site bound step (issue 13): one site's noisy histogram of row norms, on a neighbouring pair.

The site's reply in the bound step is its exact counts on the plan's public grid plus its own Gaussian noise
(``dpmoments.multisite.bounds``); under replace-one one row moves between two bins, so the counts move by
``e_a - e_b`` (L2 sensitivity sqrt 2). A replica (the counts plus the plan's std times standard normals from the
same stream) is checked draw for draw against the site's reply; the audit projects onto ``e_a - e_b``, the
direction of the worst loss, and must not refute the round's claimed (epsilon, delta). Negative control: half
the noise, which the same audit refutes.

Pair: 499 rows with norms spread over 0.3 to 30, and a row of norm 0.5 against one of norm 20 (two bins apart
from each other's, on the default factor-2 grid).
"""

import numpy as np
import pytest

from dpmoments._rng import as_generator
from dpmoments.mechanisms import gaussian_noise
from dpmoments.multisite import Plan, Query, Site, deal, from_wire, to_wire
from dpmoments.multisite.bounds import histogram_counts
from dpmoments.testing import audit

EPS, DELTA, SHARE = 2.0, 1e-3, 0.5  # the bound step: (1, 5e-4) of one site's budget
_BACK = np.random.default_rng(3).normal(size=(499, 2))
_BACK *= (np.geomspace(0.3, 30.0, 499) / np.linalg.norm(_BACK, axis=1))[:, None]
PAIR = {"A": np.array([0.5, 0.0]), "B": np.array([0.0, 20.0])}
N_OTHER = 40_000  # a second site with many rows lets the plan pass its row check; only site "s" is audited


def _plan():
    return Plan.build("conventional", ["s", "other"], [500, N_OTHER], n_features=2, row_norm="auto", epsilon=EPS,
                      delta=DELTA, bound_budget=SHARE)


def _counts(name, plan):
    rows = np.vstack([_BACK, PAIR[name]])
    return histogram_counts(np.linalg.norm(rows, axis=1), plan.auto.edges())


def _replica(plan, noise_factor=1.0):
    sd = float(plan.noise[0].g_std[0]) * noise_factor
    counts = {name: _counts(name, plan) for name in PAIR}

    def draw(name, rng, size=1):
        return counts[name] + gaussian_noise((size, counts[name].size), sd, rng)

    return draw, counts["A"] - counts["B"]


def test_replica_reproduces_the_sites_histogram_reply():
    plan = _plan()
    draw, _ = _replica(plan)
    bundle = deal(plan, 0)["s"]
    for name in PAIR:
        for seed in range(5):
            site = Site("s", np.vstack([_BACK, PAIR[name]]), row_norm="auto")
            site.accept(bundle, rng=seed, throwaway=True)  # one share asked again on purpose: the replica's check
            reply = from_wire(site.handle(to_wire(Query(plan.digest, 0, f"r-{seed}"))))
            expected = _counts(name, plan) + float(plan.noise[0].g_std[0]) * gaussian_noise(
                plan.auto.n_bins, 1.0, as_generator(seed))
            np.testing.assert_array_equal(reply.value(0), expected)
    difference = _counts("A", plan) - _counts("B", plan)
    assert np.count_nonzero(difference) == 2 and np.linalg.norm(difference) == pytest.approx(np.sqrt(2.0))


def _claim(plan):
    site = plan.claimed(0, "s")
    return site.epsilon, float(plan.noise[0].deltas[0])


@pytest.mark.statistical
def test_histogram_audit():
    plan = _plan()
    draw, direction = _replica(plan)
    eps, delta = _claim(plan)
    assert eps == pytest.approx(SHARE * EPS, rel=1e-6)
    result = audit(draw, "A", "B", delta=delta, n_samples=200_000, batch=100_000, projection=direction, rng=41)
    result.check(eps)
    # observed 0.75 (seed 41) against the claimed 1: the pair and the projection are near the worst case
    assert result.epsilon_lower_bound > 0.5 * eps


@pytest.mark.statistical
def test_histogram_with_half_the_noise_is_detected():
    plan = _plan()
    draw, direction = _replica(plan, noise_factor=0.5)
    eps, delta = _claim(plan)
    result = audit(draw, "A", "B", delta=delta, n_samples=200_000, batch=100_000, projection=direction, rng=42)
    assert not result.consistent_with(eps)  # observed 1.85 (seed 42)
