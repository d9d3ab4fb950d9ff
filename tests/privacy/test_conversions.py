"""Conversions between privacy notions."""

import math

import numpy as np
import pytest

from dpmoments import ApproxDP, PureDP, ZCDP
from dpmoments.privacy import advanced_composition, gaussian_delta, zcdp_delta, zcdp_to_approx_dp


def test_pure_to_zcdp():
    assert PureDP(0.5).to_zcdp() == ZCDP(0.125)


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_standard_conversion_formula(rho, delta):
    assert zcdp_to_approx_dp(rho, delta, "standard") == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)))


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_optimal_conversion_is_tighter_and_valid(rho, delta):
    eps = zcdp_to_approx_dp(rho, delta)
    assert eps <= zcdp_to_approx_dp(rho, delta, "standard")
    assert zcdp_delta(rho, eps) <= delta
    # The Gaussian with sensitivity 1 and sigma = 1/sqrt(2 rho) is exactly rho-zCDP, so no valid
    # conversion can claim less than the Gaussian's own exact (epsilon, delta) curve.
    sigma = 1 / math.sqrt(2 * rho)
    assert gaussian_delta(sigma, eps) <= delta


def test_cks_delta_dominates_the_gaussian_curve():
    for sigma in (0.5, 1.0, 3.0, 10.0):
        rho = 1 / (2 * sigma**2)
        for eps in np.linspace(0.05, 5, 25):
            assert zcdp_delta(rho, eps) >= gaussian_delta(sigma, eps) * (1 - 1e-9)


def test_zcdp_guarantee_converts():
    g = ZCDP(0.5).to_approx_dp(1e-6, method="standard")
    assert g.delta == 1e-6 and g.rho == 0.5
    assert g.epsilon == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e6)))


def test_advanced_composition_matches_dwork_roth():
    k, eps, dp, slack = 50, 0.1, 1e-7, 1e-6
    total, delta = advanced_composition([eps] * k, [dp] * k, slack)
    expected = math.sqrt(2 * k * math.log(1 / slack)) * eps + k * eps * (math.exp(eps) - 1)
    assert total == pytest.approx(expected)
    assert delta == pytest.approx(k * dp + slack)


def test_approx_dp_epsilon_at():
    g = ApproxDP(1.0, 1e-6, rho=0.02)
    assert g.epsilon_at(1e-6) <= 1.0
    assert g.epsilon_at(1e-9) == pytest.approx(zcdp_to_approx_dp(0.02, 1e-9))
    assert ApproxDP(1.0, 1e-6).epsilon_at(1e-9) == math.inf
    assert PureDP(0.3).epsilon_at(0.0) == 0.3


def test_guarantee_validation():
    with pytest.raises(ValueError, match="'epsilon'"):
        PureDP(0)
    with pytest.raises(ValueError, match="'delta' must be in \\[0, 1\\); got 1.5"):
        ApproxDP(1.0, 1.5)
    with pytest.raises(ValueError, match="'rho'"):
        ZCDP(-1)
    with pytest.raises(ValueError, match="only Gaussian releases"):
        ApproxDP(1.0, 1e-5).to_zcdp()


def test_to_dict_is_json_able():
    import json

    for g in (PureDP(1.0), ApproxDP(1.0, 1e-6, rho=0.1), ZCDP(0.2), PureDP(math.inf)):
        json.dumps(g.to_dict(), allow_nan=False)
