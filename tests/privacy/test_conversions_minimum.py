"""The zCDP conversion's own minimiser returns scipy's bounded Brent answer bit for bit.

``conversions.bounded_minimum`` replaces ``scipy.optimize.minimize_scalar(method="bounded")`` (whose import
was a quarter to a full CPU-second of every private command); every epsilon, delta and noise scale computed
through ``zcdp_delta`` must stay what it was. A wider grid (72,160 points of ``zcdp_delta`` from rho and
epsilon 1e-300 to 1e300, 2,400 conversions) matched exactly when the change was made.
"""

import math

import numpy as np
import pytest

from dpmoments.privacy import conversions

minimize_scalar = pytest.importorskip("scipy.optimize").minimize_scalar


def _scipy_zcdp_delta(rho, epsilon):
    """``zcdp_delta`` as it was written with scipy's minimiser."""
    if rho == 0 or math.isinf(epsilon):
        return 0.0
    if math.isinf(rho):
        return 1.0
    centre = max(conversions._approximate_minimiser(rho, epsilon), 1e-300)
    hi = min(10.0 * max(centre, 1.0), 1e300 / max(abs(rho - epsilon), 1.0), math.sqrt(1e300 / rho))
    lo = max(1e-300, min(1e-12, 1e-3 * math.exp(min(epsilon - rho, 0.0))))
    hi = max(hi, 10.0 * lo)

    def f(t):
        value = conversions._log_delta_cks(math.exp(t), rho, epsilon)
        return 1e300 if value != value else min(max(value, -1e300), 1e300)

    res = minimize_scalar(f, bounds=(math.log(lo), math.log(hi)), method="bounded", options={"xatol": 1e-10})
    candidates = [res.fun, f(math.log(hi)), f(math.log(min(max(centre, lo), hi)))]
    log_delta = min(c for c in candidates if not math.isnan(c))
    return 1.0 if log_delta >= 0 else math.exp(log_delta)


def test_zcdp_delta_is_bit_identical_to_the_scipy_minimiser_over_a_grid():
    rng = np.random.default_rng(27)
    rhos = np.concatenate([10.0 ** rng.uniform(-12, 12, 12), [5e-324, 1e-300, 1e300, 1.0]])
    epsilons = np.concatenate([10.0 ** rng.uniform(-8, 8, 6), [0.0, 1.0, 1e300]])
    mismatches = [(r, e) for r in rhos for e in epsilons
                  if conversions.zcdp_delta(float(r), float(e)) != _scipy_zcdp_delta(float(r), float(e))]
    assert mismatches == []


@pytest.mark.parametrize("f, bounds", [
    (lambda t: (t - 0.3) ** 2, (-5.0, 5.0)),          # parabolic steps
    (lambda t: abs(t - 1.0), (0.0, 3.0)),             # a kink: golden steps
    (lambda t: -t, (0.0, 1.0)),                       # the minimum at the bound
    (lambda t: math.cos(3 * t) + 0.1 * t, (-4.0, 4.0)),  # several local minima
    (lambda t: 7.0, (-1.0, 1.0)),                     # flat
])
def test_bounded_minimum_matches_scipy(f, bounds):
    for xatol in (1e-5, 1e-10):
        expected = minimize_scalar(f, bounds=bounds, method="bounded", options={"xatol": xatol}).fun
        assert conversions.bounded_minimum(f, *bounds, xatol=xatol) == expected


def test_bounded_minimum_stops_at_its_evaluation_cap():
    calls = []

    def f(t):
        calls.append(t)
        return math.sin(50 * t)

    conversions.bounded_minimum(f, 0.0, 100.0, xatol=0.0, max_evaluations=12)
    assert len(calls) == 12


@pytest.mark.parametrize("rho", [float("nan"), -1.0])
def test_conversion_refuses_a_rho_that_is_not_a_number_at_least_zero(rho):
    with pytest.raises(ValueError, match="'rho' must be a number >= 0"):
        conversions.zcdp_to_approx_dp(rho, 1e-6)
