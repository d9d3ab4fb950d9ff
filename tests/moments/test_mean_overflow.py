"""The private mean's overflow release (moments/mean_overflow.py): its value, its noise, its audit (its use on a
small table: tests/estimators/test_error_budget.py, grunfeld)."""

import numpy as np
import pytest

from dpmoments._rng import as_generator
from dpmoments.mechanisms import laplace_noise
from dpmoments.moments.mean_overflow import mean_bound, overflow_sum, release_overflow
from dpmoments.moments.private_bounds import SearchRange
from dpmoments.testing import audit

EDGES = SearchRange().edges()


def _counts(norms):
    return np.bincount(np.searchsorted(EDGES, norms, side="left"), minlength=EDGES.size + 1)


def test_the_overflow_sum_is_at_least_the_capped_overflows_and_at_most_a_grid_step_more():
    norms = np.array([0.5, 1.0, 1.2, 1.9, 2.5, 40.0, 1e9])  # 1e9: beyond the grid's top edge
    bound, cap = float(EDGES[np.searchsorted(EDGES, 1.0)]), 1.5
    exact = np.minimum(np.maximum(norms - bound, 0.0), cap).sum()
    value = overflow_sum(_counts(norms), EDGES, bound, cap)
    assert exact <= value <= exact + 0.034 * norms[(norms > bound) & (norms - bound < cap)].sum()
    assert overflow_sum(_counts(norms), EDGES, bound, 0.0) == 0.0
    assert mean_bound(bound, EDGES) in EDGES and 2 * bound <= mean_bound(bound, EDGES) <= 2.07 * bound
    assert mean_bound(EDGES[-1], EDGES) == EDGES[-1]  # never beyond the grid the pass binned on


def _replica(cap, epsilon, noise=1.0):
    """The release as :func:`release_overflow` makes it (checked below), vectorised: a row at the cap or at 0."""
    def draw(extra, rng, size):
        return extra * cap + rng.laplace(scale=noise * cap / epsilon, size=size)
    return draw


def test_the_release_is_its_replica_and_the_audit_holds_it_to_its_epsilon():
    counts, bound, cap, epsilon = _counts(np.array([3.0, 9.0])), float(EDGES[600]), 2.0, 1.0
    exact = overflow_sum(counts, EDGES, bound, cap)
    noisy = release_overflow(counts, EDGES, bound, cap, epsilon=epsilon, rng=7)
    assert noisy.value == exact + laplace_noise(1, cap / epsilon, as_generator(7))[0]
    assert noisy.noise_sd == pytest.approx(np.sqrt(2) * cap / epsilon) and noisy.guarantee.epsilon == epsilon
    gaussian = release_overflow(counts, EDGES, bound, cap, rho=0.5, rng=7)
    assert gaussian.noise_sd == pytest.approx(cap) and gaussian.guarantee.rho == 0.5
    # one row moved from beyond bound + cap to inside the bound changes T by the cap, its sensitivity
    result = audit(_replica(cap, epsilon), 1.0, 0.0, n_samples=100_000, batch=100_000, rng=3)
    result.check(epsilon)
    leaky = audit(_replica(cap, epsilon, noise=0.5), 1.0, 0.0, n_samples=100_000, batch=100_000, rng=4)
    assert not leaky.consistent_with(epsilon)  # the negative control: half the noise is caught
