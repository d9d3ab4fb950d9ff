"""Calibration of the exact grid samplers: grid sensitivity, sigma and scale, guarantees."""

import math
from fractions import Fraction

import pytest

from dpmoments.mechanisms.grid import rational_scale
from dpmoments.privacy import ApproxDP, PureDP, calibrate_gaussian, zcdp_to_approx_dp
from dpmoments.privacy.discrete import (
    calibrate_discrete_gaussian,
    calibrate_discrete_laplace,
    grid_exponent,
    grid_sensitivity,
)


@pytest.mark.parametrize("k", [0, 4, 20])
@pytest.mark.parametrize("m", [1, 10, 20_100])
def test_grid_sensitivity(k, m):
    l2 = grid_sensitivity(2.0, k, m)
    l1 = grid_sensitivity(2.0, k, m, norm="l1")
    assert l2 >= 2.0 + math.sqrt(m) * 2.0**-k
    assert l1 >= 2.0 + m * 2.0**-k
    assert l2 == pytest.approx(2.0 + math.sqrt(m) * 2.0**-k, rel=1e-11)
    assert l1 == pytest.approx(2.0 + m * 2.0**-k, rel=1e-11)


def test_grid_sensitivity_validation():
    with pytest.raises(ValueError):
        grid_sensitivity(0.0, 3, 4)
    with pytest.raises(ValueError):
        grid_sensitivity(1.0, 3, 0)
    with pytest.raises(ValueError):
        grid_sensitivity(1.0, 3, 4, norm="linf")
    with pytest.raises(TypeError):
        grid_sensitivity(1.0, 2.5, 4)


@pytest.mark.parametrize("m", [1, 55, 20_100])
@pytest.mark.parametrize("rel", [1e-2, 1e-4])
def test_grid_exponent_is_smallest(m, rel):
    k = grid_exponent(0.5, m, relative_increase=rel)
    assert math.sqrt(m) * 2.0**-k <= rel * 0.5
    assert k == 0 or math.sqrt(m) * 2.0 ** -(k - 1) > rel * 0.5


@pytest.mark.parametrize(
    "epsilon, delta, k, m", [(0.5, 1e-6, 0, 1), (1.0, 1e-5, 8, 55), (4.0, 1e-8, 20, 20_100), (1.0, 1e-6, -2, 3)]
)
def test_calibrate_discrete_gaussian(epsilon, delta, k, m):
    sensitivity = 1.5
    sigma, guarantee = calibrate_discrete_gaussian(epsilon, delta, sensitivity, k, m)
    assert isinstance(guarantee, ApproxDP)
    assert (guarantee.epsilon, guarantee.delta) == (epsilon, delta)
    rho = guarantee.rho
    assert zcdp_to_approx_dp(rho, delta) <= epsilon
    # the variance the sampler will use, with the grid sensitivity, gives at most rho (exactly)
    variance_grid = rational_scale(sigma, k)
    delta_grid = Fraction(sensitivity) * 2**k + Fraction(math.sqrt(m))  # sqrt rounded: compare with slack
    realised_rho = delta_grid**2 / (2 * variance_grid)
    assert realised_rho <= Fraction(rho) * (1 + Fraction(1, 10**10))
    # rho is the largest that fits: a little more breaks (epsilon, delta)
    assert zcdp_to_approx_dp(rho * (1 + 1e-6), delta) > epsilon
    # with a fine grid the discrete sigma matches the continuous zCDP sigma
    sigma_c, _ = calibrate_gaussian(epsilon, delta, grid_sensitivity(sensitivity, k, m), calibration="zcdp")
    assert sigma == pytest.approx(sigma_c, rel=1e-9)


def test_calibrate_discrete_gaussian_fine_grid_costs_little():
    sigma_coarse, _ = calibrate_discrete_gaussian(1.0, 1e-6, 1.0, 0, 20_100)
    sigma_fine, _ = calibrate_discrete_gaussian(1.0, 1e-6, 1.0, 18, 20_100)
    sigma_c, _ = calibrate_gaussian(1.0, 1e-6, 1.0, calibration="zcdp")
    assert sigma_coarse > 100 * sigma_c  # grid step 1 over 20,100 coordinates: sqrt(m) ~ 142
    assert sigma_fine == pytest.approx(sigma_c, rel=1e-3)


def test_calibrate_infinite_epsilon():
    assert calibrate_discrete_gaussian(math.inf, 1e-6, 1.0, 3, 2)[0] == 0.0
    assert calibrate_discrete_laplace(math.inf, 1.0, 3, 2)[0] == 0.0


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("k, m", [(0, 1), (10, 55)])
def test_calibrate_discrete_laplace(epsilon, k, m):
    b, guarantee = calibrate_discrete_laplace(epsilon, 2.0, k, m)
    assert guarantee == PureDP(epsilon)
    t = rational_scale(b, k, "laplace")
    delta1_grid = Fraction(2.0) * 2**k + m
    assert delta1_grid / t <= Fraction(epsilon)  # (Delta_grid / t)-DP with Delta_grid in grid units
    assert b == pytest.approx((2.0 + m * 2.0**-k) / epsilon, rel=1e-9)


def test_calibration_validation():
    with pytest.raises(ValueError):
        calibrate_discrete_gaussian(1.0, 0.0, 1.0, 3, 2)
    with pytest.raises(ValueError):
        calibrate_discrete_gaussian(-1.0, 1e-6, 1.0, 3, 2)
    with pytest.raises(ValueError):
        calibrate_discrete_laplace(1.0, -2.0, 3, 2)
