"""Calibration: the analytic sigma against an independent high-precision computation."""

import math

import mpmath
import pytest

from dpmoments import ApproxDP, PureDP, ZCDP
from dpmoments.privacy import (
    analytic_gaussian_sigma,
    calibrate_gaussian,
    calibrate_laplace,
    classic_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_rho,
    laplace_scale,
    zcdp_gaussian_sigma,
    zcdp_to_approx_dp,
)

mpmath.mp.dps = 60


def mp_delta(sigma, epsilon, sensitivity=1.0):
    """Balle & Wang's exact delta of the Gaussian mechanism, in 60-digit arithmetic."""
    s, e, d = mpmath.mpf(sigma), mpmath.mpf(epsilon), mpmath.mpf(sensitivity)
    phi = lambda t: mpmath.ncdf(t)  # noqa: E731
    return phi(d / (2 * s) - e * s / d) - mpmath.exp(e) * phi(-d / (2 * s) - e * s / d)


def mp_sigma(epsilon, delta):
    """Independent root of mp_delta(sigma) = delta: bisection in 60-digit arithmetic."""
    lo, hi = mpmath.mpf("1e-6"), mpmath.mpf(1e4)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if mp_delta(mid, epsilon) <= delta else (mid, hi)
    return hi


GRID = [(e, d) for e in (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0) for d in (1e-3, 1e-6, 1e-10)]


@pytest.mark.parametrize("epsilon,delta", GRID)
def test_analytic_sigma_matches_high_precision_and_is_never_below(epsilon, delta):
    sigma = analytic_gaussian_sigma(epsilon, delta)
    reference = float(mp_sigma(epsilon, delta))
    assert sigma >= reference  # never less noise than required
    assert sigma == pytest.approx(reference, rel=1e-8)
    assert mp_delta(sigma, epsilon) <= delta


@pytest.mark.parametrize("epsilon,delta", GRID)
def test_gaussian_delta_matches_high_precision(epsilon, delta):
    sigma = analytic_gaussian_sigma(epsilon, delta) * 1.3
    assert gaussian_delta(sigma, epsilon) == pytest.approx(float(mp_delta(sigma, epsilon)), rel=1e-8, abs=1e-300)


def test_analytic_beats_classic_where_classic_is_valid():
    for eps in (0.1, 0.5, 0.9):
        assert analytic_gaussian_sigma(eps, 1e-5) < classic_gaussian_sigma(eps, 1e-5)


def test_sigma_scales_with_sensitivity():
    assert analytic_gaussian_sigma(1.0, 1e-6, 3.0) == pytest.approx(3 * analytic_gaussian_sigma(1.0, 1e-6))


def test_classic_refuses_large_epsilon_unless_allowed():
    with pytest.raises(ValueError, match="epsilon < 1.*epsilon=1.5"):
        classic_gaussian_sigma(1.5, 1e-5)
    sigma = classic_gaussian_sigma(1.5, 1e-5, allow_large_epsilon=True)
    assert sigma == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 1.5)


def test_classic_at_large_epsilon_is_reported_uncertified_with_what_holds():
    # A claimed (50, 1e-6) whose sigma really gives epsilon = 88.6.
    sigma, g = calibrate_gaussian(50.0, 1e-6, 1.0, "classic")
    assert not g.certified
    assert g.claim == ApproxDP(50.0, 1e-6)
    # what really holds is the exact epsilon of that sigma, and it is the true one
    assert g.holding.epsilon == pytest.approx(gaussian_epsilon(sigma, 1e-6))
    assert mp_delta(sigma, g.holding.epsilon) <= 1e-6 < mp_delta(sigma, g.holding.epsilon * (1 - 1e-9))
    assert g.holding.epsilon > 88
    assert str(g).startswith("UNCERTIFIED: (50, 1e-06)-DP is claimed but not proven")
    assert str(g).endswith(f"what holds: {g.holding}")


@pytest.mark.parametrize("epsilon", [1.0, 2.0, 5.0])
def test_classic_at_large_epsilon_is_certified_where_the_exact_analysis_proves_it(epsilon):
    # Old: "UNCERTIFIED claim of (2, 1e-06)" although the exact epsilon of that sigma is below 2.
    sigma, g = calibrate_gaussian(epsilon, 1e-6, 1.0, "classic")
    assert g.certified and g == ApproxDP(epsilon, 1e-6, rho=gaussian_rho(sigma, 1.0))
    assert gaussian_epsilon(sigma, 1e-6) <= epsilon and mp_delta(sigma, epsilon) <= 1e-6
    assert "exact Gaussian analysis" in g.basis and "exact Gaussian analysis" in g.describe()
    assert str(g) == f"({epsilon:g}, 1e-06)-DP"


def test_classic_below_one_is_certified():
    sigma, g = calibrate_gaussian(0.5, 1e-5, 2.0, "classic")
    assert g == ApproxDP(0.5, 1e-5, rho=gaussian_rho(sigma, 2.0))


def test_analytic_guarantee_records_rho():
    sigma, g = calibrate_gaussian(1.0, 1e-6, 2.0, "analytic")
    assert isinstance(g, ApproxDP) and g.epsilon == 1.0 and g.delta == 1e-6
    assert g.rho == pytest.approx(4.0 / (2 * sigma**2))


def test_zcdp_calibration_converts_within_the_request():
    sigma, g = calibrate_gaussian(1.0, 1e-6, 1.0, "zcdp")
    assert isinstance(g, ZCDP)
    assert zcdp_to_approx_dp(g.rho, 1e-6) <= 1.0
    assert zcdp_to_approx_dp(g.rho * 1.001, 1e-6) > 1.0  # the largest such rho
    assert sigma == pytest.approx(zcdp_gaussian_sigma(g.rho))


def test_gaussian_epsilon_inverts_the_calibration():
    sigma = analytic_gaussian_sigma(0.7, 1e-7)
    assert gaussian_epsilon(sigma, 1e-7) == pytest.approx(0.7, rel=1e-7)


def test_infinite_epsilon_means_no_noise():
    assert analytic_gaussian_sigma(math.inf, 1e-6) == 0.0
    assert calibrate_gaussian(math.inf, 1e-6, 1.0)[1] == PureDP(math.inf)


def test_laplace():
    assert laplace_scale(0.5, 2.0) == 4.0
    b, g = calibrate_laplace(0.5, 2.0)
    assert b == 4.0 and g == PureDP(0.5)


def test_zcdp_gaussian_sigma_round_trip():
    assert gaussian_rho(zcdp_gaussian_sigma(0.3, 2.0), 2.0) == pytest.approx(0.3)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: analytic_gaussian_sigma(0.0, 1e-5), "'epsilon' must be in \\(0, inf\\]; got 0.0"),
        (lambda: analytic_gaussian_sigma(-1, 1e-5), "'epsilon'.*got -1"),
        (lambda: analytic_gaussian_sigma(float("nan"), 1e-5), "'epsilon' must not be NaN"),
        (lambda: analytic_gaussian_sigma(1.0, 0.0), "'delta' must be in \\(0, 1\\); got 0.0"),
        (lambda: analytic_gaussian_sigma(1.0, 1.0), "'delta'.*got 1.0"),
        (lambda: analytic_gaussian_sigma(1.0, 1e-5, -2.0), "'sensitivity'.*got -2.0"),
        (lambda: calibrate_gaussian(1.0, 1e-5, 1.0, "paper"), "'calibration' must be one of"),
        (lambda: laplace_scale(1.0, 0.0), "'sensitivity_l1'"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_wrong_type():
    with pytest.raises(TypeError, match="'epsilon' must be a real number; got str"):
        analytic_gaussian_sigma("1", 1e-5)
