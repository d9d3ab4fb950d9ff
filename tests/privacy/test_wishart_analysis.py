"""The exact Wishart analysis (dpmoments.privacy.wishart) against simulation and closed forms."""

import math

import numpy as np
import pytest
from scipy import stats

from dpmoments.mechanisms import sheffet_degrees_of_freedom, wishart_noise
from dpmoments.privacy.wishart import _delta_one_t, wishart_add_remove_delta, wishart_degrees_of_freedom, wishart_delta


def test_jiang_d_plus_one_has_the_closed_form_support_mismatch():
    # k = d + 1: the loss is finite and <= t/2 except on {Y <= t}, Y ~ chi2(2): delta = 1 - exp(-t/2).
    for t in (0.1, 0.5, 2.0):
        assert _delta_one_t(t / 2, t, 0, 2) == pytest.approx(1 - math.exp(-t / 2), rel=1e-9)
        assert _delta_one_t(10.0, t, 0, 2) == pytest.approx(1 - math.exp(-t / 2), rel=1e-9)  # no epsilon helps


def test_inverse_wishart_quadratic_form_is_chi_square():
    # The fact the analysis rests on (Muirhead 1982, Thm 3.2.12): ||v||^2 / (c v^T W^-1 v) ~ chi2(k - d + 1).
    rng = np.random.default_rng(0)
    d, k, c = 4, 9, 0.7
    v = np.array([0.3, -0.5, 0.1, 0.2])
    # 5000 draws (20 000 cost 3.6 s of CPU): over 20 seeds the true law's p-value is >= 0.024, while a df off
    # by one gives p <= 1e-61 and a scale 10% off p <= 1e-18, so the test still tells the law apart.
    ratios = [v @ v / (c * v @ np.linalg.solve(wishart_noise(d, k, c, rng), v)) for _ in range(5000)]
    assert stats.kstest(ratios, stats.chi2(k - d + 1).cdf).pvalue > 1e-6


@pytest.mark.statistical
def test_delta_matches_a_monte_carlo_of_the_privacy_loss():
    rng = np.random.default_rng(1)
    d, k, eps = 3, 40, 0.5
    m, nu, t = k - d - 1, k - d + 1, 1.0
    Y = rng.chisquare(nu, size=2_000_000)
    with np.errstate(invalid="ignore", divide="ignore"):
        loss = np.where(Y > t, -(m / 2) * np.log1p(-t / Y) - t / 2, np.inf)
    mc = np.mean(np.clip(1 - np.exp(eps - loss), 0, None))
    assert _delta_one_t(eps, t, m, nu) == pytest.approx(mc, rel=0.05, abs=2e-5)


def test_delta_is_worst_at_the_boundary_and_decreases_with_df():
    for eps, k in ((0.5, 40), (1.0, 20), (0.25, 80)):
        m, nu = k - 6, k - 4
        ts = np.geomspace(1e-3, 1, 20)
        ds = [_delta_one_t(eps, t, m, nu) for t in ts]
        assert np.all(np.diff(ds) >= -1e-15)
    deltas = [wishart_add_remove_delta(1.0, 5, k, 1.0) for k in (10, 20, 40, 80)]
    assert np.all(np.diff(deltas) < 0)


def test_degrees_of_freedom_is_the_smallest_that_works():
    d, eps, delta = 5, 1.0, 1e-6
    k = wishart_degrees_of_freedom(d, eps, delta)
    assert wishart_delta(eps, d, k, 1.0) <= delta < wishart_delta(eps, d, k - 1, 1.0)
    assert k < sheffet_degrees_of_freedom(d, eps, delta)  # far fewer than the quoted constant needs


def test_replace_one_is_group_privacy_of_two_steps():
    d, k = 4, 60
    half = wishart_add_remove_delta(0.4, d, k, 1.0)
    assert wishart_delta(0.8, d, k, 1.0) == pytest.approx((1 + math.exp(0.4)) * half)
