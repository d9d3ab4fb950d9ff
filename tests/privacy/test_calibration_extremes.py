"""Calibration at the edges: a high-precision corner grid, and every calibration fuzzed over all floats.

Every call must end in bounded time and either return a finite value whose
guarantee holds (checked in 80-digit arithmetic where the guarantee is a
Gaussian curve) or refuse with a one-line ``ValueError``.
"""

import math
from datetime import timedelta

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpmoments.estimators._budget import irls_budget
from dpmoments.privacy import (
    analytic_gaussian_sigma,
    calibrate_gaussian,
    calibrate_laplace,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_rho,
    pure_to_zcdp,
    zcdp_delta,
    zcdp_gaussian_sigma,
    zcdp_to_approx_dp,
)
from dpmoments.privacy.calibration import _largest_rho
from dpmoments.privacy.discrete import calibrate_discrete_gaussian, calibrate_discrete_laplace, grid_exponent
from dpmoments.privacy.wishart import wishart_degrees_of_freedom

MP = mpmath.mp.clone()
MP.dps = 80


def mp_delta(ratio, epsilon):
    """Balle & Wang's exact delta with sigma / sensitivity = ratio, in 80-digit arithmetic."""
    r, e = MP.mpf(ratio), MP.mpf(epsilon)
    return MP.ncdf(1 / (2 * r) - e * r) - MP.exp(e) * MP.ncdf(-1 / (2 * r) - e * r)


def holds(sigma, sensitivity, epsilon, delta):
    return mp_delta(MP.mpf(sigma) / MP.mpf(sensitivity), epsilon) <= delta


# -- the corner grid (the audit: (1e-8, 1e-100) and (1e-6, 1e-12) were under-noised) ---------------
EPSILONS = (1e-10, 1e-8, 1e-6, 1e-3, 1.0, 10.0, 1e3)
DELTAS = (1e-300, 1e-200, 1e-100, 1e-50, 1e-12, 1e-6, 0.5)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_analytic_sigma_is_never_below_the_requirement_on_the_corner_grid(epsilon, delta):
    sigma = analytic_gaussian_sigma(epsilon, delta)
    assert holds(sigma, 1.0, epsilon, delta)
    assert not holds(sigma * (1 - 1e-8), 1.0, epsilon, delta)  # and it is the requirement, to 1e-8


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_gaussian_delta_is_accurate_on_the_corner_grid(epsilon, delta):
    sigma = analytic_gaussian_sigma(epsilon, delta) * 1.01
    reference = mp_delta(sigma, epsilon)
    if reference < 1e-320:
        assert gaussian_delta(sigma, epsilon) <= 1e-320
    else:
        assert gaussian_delta(sigma, epsilon) == pytest.approx(float(reference), rel=1e-10)


# -- fuzzing over every float ---------------------------------------------------------------------------
ANY = st.floats(allow_subnormal=True)  # the full range: subnormals, huge values, +-inf, NaN, +-0
POSITIVE = st.floats(min_value=0.0, exclude_min=True, allow_infinity=False, allow_subnormal=True)
UNIT = st.floats(min_value=0.0, max_value=1.0, exclude_min=True, exclude_max=True, allow_subnormal=True)
EPSILON, DELTA, SCALE = st.one_of(ANY, POSITIVE), st.one_of(ANY, UNIT), st.one_of(ANY, POSITIVE)  # half in range
FUZZ = settings(max_examples=60, deadline=timedelta(seconds=20), derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def answer(call):
    """The value, or ``None`` after a one-line ValueError."""
    try:
        return call()
    except ValueError as exc:
        assert "\n" not in str(exc) and str(exc)
        return None


def positive_finite(x):
    return isinstance(x, float) and 0 < x < math.inf


@FUZZ
@given(epsilon=EPSILON, delta=DELTA, sensitivity=SCALE)
def test_fuzz_analytic_and_classic(epsilon, delta, sensitivity):
    for calibration in ("analytic", "classic"):
        out = answer(lambda: calibrate_gaussian(epsilon, delta, sensitivity, calibration))
        if out is None:
            continue
        sigma, g = out
        if math.isinf(epsilon):
            assert sigma == 0.0 and not g.is_private
            continue
        assert positive_finite(sigma)
        what = g.holding
        if what is not None:  # the guarantee that holds really does, on the exact curve
            assert what.epsilon <= epsilon or not g.certified
            assert holds(sigma, sensitivity, what.epsilon, what.delta)


@FUZZ
@given(epsilon=EPSILON, delta=DELTA, sensitivity=SCALE)
def test_fuzz_zcdp_calibration(epsilon, delta, sensitivity):
    out = answer(lambda: calibrate_gaussian(epsilon, delta, sensitivity, "zcdp"))
    if out is None or math.isinf(epsilon):
        return
    sigma, g = out
    assert positive_finite(sigma) and positive_finite(g.rho)
    assert MP.mpf(sensitivity) ** 2 / (2 * MP.mpf(sigma) ** 2) <= g.rho  # sigma buys at most rho
    assert zcdp_delta(g.rho, epsilon) <= delta and zcdp_to_approx_dp(g.rho, delta) <= epsilon


@FUZZ
@given(epsilon=EPSILON, sensitivity=SCALE, sigma=SCALE, delta=DELTA)
def test_fuzz_laplace_rho_and_sigma_conversions(epsilon, sensitivity, sigma, delta):
    out = answer(lambda: calibrate_laplace(epsilon, sensitivity))
    if out is not None and math.isfinite(epsilon):
        assert positive_finite(out[0]) and MP.mpf(out[0]) * MP.mpf(epsilon) >= MP.mpf(sensitivity)
    rho = answer(lambda: gaussian_rho(sigma, sensitivity))
    if rho is not None:
        assert positive_finite(rho) and MP.mpf(sensitivity) ** 2 / (2 * MP.mpf(sigma) ** 2) <= rho
    s = answer(lambda: zcdp_gaussian_sigma(epsilon, sensitivity))  # epsilon read as a rho here
    if s is not None and math.isfinite(epsilon):
        assert positive_finite(s) and MP.mpf(sensitivity) ** 2 / (2 * MP.mpf(s) ** 2) <= epsilon
    e = answer(lambda: gaussian_epsilon(sigma, delta, sensitivity))
    if e is not None:
        assert 0 <= e < math.inf and holds(sigma, sensitivity, e, delta)
    d = gaussian_delta(sigma, 1.0, sensitivity) if positive_finite(sigma) and positive_finite(sensitivity) else 0.0
    assert 0.0 <= d <= 1.0


@settings(max_examples=40, deadline=timedelta(seconds=20), derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(rho=st.floats(min_value=0.0, allow_subnormal=True), epsilon=EPSILON, delta=DELTA)
def test_fuzz_zcdp_conversions(rho, epsilon, delta):
    eps = answer(lambda: zcdp_to_approx_dp(rho, delta))
    if eps is not None and 0 < rho < math.inf:  # valid by the optimal bound, or else the standard one
        standard = MP.mpf(rho) + 2 * MP.sqrt(MP.mpf(rho) * MP.log(1 / MP.mpf(delta)))
        assert positive_finite(eps) and (zcdp_delta(rho, eps) <= delta or eps >= standard)
    if not math.isnan(epsilon) and epsilon >= 0:
        assert 0.0 <= zcdp_delta(rho, epsilon) <= 1.0
    r = answer(lambda: pure_to_zcdp(epsilon)) if not math.isnan(epsilon) and epsilon > 0 else None
    if r is not None and math.isfinite(epsilon):
        assert positive_finite(r) and r >= MP.mpf(epsilon) ** 2 / 2
    if positive_finite(epsilon) and epsilon >= 2.3e-308 and 0 < delta < 1:
        largest = answer(lambda: _largest_rho(epsilon, delta))
        if largest is not None:
            assert positive_finite(largest) and zcdp_to_approx_dp(largest, delta) <= epsilon


@settings(max_examples=40, deadline=timedelta(seconds=20), derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(epsilon=EPSILON, delta=DELTA, sensitivity=SCALE, k=st.integers(-1100, 1100), m=st.integers(1, 10**6))
def test_fuzz_discrete_calibrations(epsilon, delta, sensitivity, k, m):
    out = answer(lambda: calibrate_discrete_gaussian(epsilon, delta, sensitivity, k, m))
    if out is not None and math.isfinite(epsilon):
        assert positive_finite(out[0]) and positive_finite(out[1].rho)
    out = answer(lambda: calibrate_discrete_laplace(epsilon, sensitivity, k, m))
    if out is not None and math.isfinite(epsilon):
        assert positive_finite(out[0]) and MP.mpf(out[0]) * MP.mpf(epsilon) >= MP.mpf(sensitivity)
    kk = answer(lambda: grid_exponent(sensitivity, m))
    assert kk is None or isinstance(kk, int)


@settings(max_examples=30, deadline=timedelta(seconds=60), derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(epsilon=EPSILON, delta=DELTA, n_iter=st.integers(1, 200),
       accounting=st.sampled_from(["zcdp", "basic", "advanced", "cdp-paper"]),
       first=st.sampled_from(["gaussian", "laplace"]), second=st.sampled_from(["gaussian", "wishart"]))
def test_fuzz_irls_budget_splits(epsilon, delta, n_iter, accounting, first, second):
    b = answer(lambda: irls_budget(epsilon, delta, n_iter, accounting=accounting, first_moment=first,
                                   second_moment=second))
    if b is None:
        return
    total = b.total.claim.as_approx()
    assert positive_finite(total.epsilon) and total.epsilon <= epsilon * (1 + 1e-9)
    assert total.delta <= delta * (1 + 1e-9) + 1e-300


@pytest.mark.slow
@settings(max_examples=8, deadline=timedelta(seconds=120), derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(epsilon=EPSILON, delta=DELTA)
def test_fuzz_wishart_degrees_of_freedom(epsilon, delta):
    k = answer(lambda: wishart_degrees_of_freedom(3, epsilon, delta))
    assert k is None or (isinstance(k, int) and 3 < k <= 3 + 10**7)


@pytest.mark.parametrize("epsilon,delta", [(1e-300, 1e-6), (1e-320, 1e-6), (1e-200, 1e-6)])
def test_the_issue_cases_answer_or_refuse_at_once(epsilon, delta):
    # Old: OverflowError, ZeroDivisionError, and a zCDP loop that never returned.
    for calibration in ("analytic", "classic", "zcdp"):
        out = answer(lambda: calibrate_gaussian(epsilon, delta, 1.0, calibration))
        assert out is None or positive_finite(out[0])
