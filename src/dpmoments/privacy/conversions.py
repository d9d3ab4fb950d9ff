"""Numeric conversions between privacy notions, and the one search they all use.

Pure functions of numbers (no guarantee objects), so that calibration, the
guarantee classes and the accountant share one implementation. Every
function terminates in a bounded number of steps for every float input and
either answers on the safe side or raises a one-line ``ValueError`` naming
the parameter whose value makes the answer unrepresentable.

References
----------
.. [BS16] M. Bun and T. Steinke. Concentrated differential privacy:
   simplifications, extensions, and lower bounds. TCC 2016 (arXiv 1605.02065).
.. [CKS20] C. Canonne, G. Kamath and T. Steinke. The discrete Gaussian for
   differential privacy. NeurIPS 2020 (arXiv 2004.00010), Prop. 12 / Cor. 13.
.. [DR14] C. Dwork and A. Roth. The algorithmic foundations of differential
   privacy, Thm 3.20 (advanced composition).
"""

import functools
import math
import sys
from fractions import Fraction

import numpy as np

__all__ = [
    "search_safe",
    "pure_to_zcdp",
    "zcdp_to_approx_dp",
    "zcdp_delta",
    "advanced_composition",
    "TINY",
    "HUGE",
    "MIN_NORMAL",
    "round_up",
    "sqrt_up",
]

TINY = math.ulp(0.0)  # the smallest positive float (subnormal)
MIN_NORMAL = sys.float_info.min
HUGE = sys.float_info.max
_LOG_TINY, _LOG_HUGE = math.log(TINY), math.log(HUGE)


def _step(x, dlog):
    """``x * e^dlog``, kept inside the positive floats."""
    target = math.log(x) + dlog
    if target >= _LOG_HUGE:
        return HUGE
    if target <= _LOG_TINY:
        return TINY
    return math.exp(target)


def search_safe(is_safe, start, *, safe_above=True, rel_tol=1e-14):
    """The boundary of a monotone predicate over the positive floats, returned on its safe side.

    ``is_safe`` holds on ``[x*, inf)`` (``safe_above=True``) or on ``(0, x*]``
    (``safe_above=False``). The search works in log space (an exponential
    search from ``start``, then bisection of the logarithm), so it takes at
    most about 80 evaluations anywhere between the smallest subnormal and the
    largest float, and returns a point where ``is_safe`` was *observed* true,
    within a relative ``rel_tol`` of the boundary. Returns ``None`` when no
    positive finite float is safe; the extreme float when every one is.
    """
    toward_safe = 1.0 if safe_above else -1.0
    x = min(max(float(start), TINY), HUGE)
    step = 1.0
    if is_safe(x):
        safe = x
        while True:  # walk away from safety until it fails (or the floats end)
            candidate = _step(safe, -toward_safe * step)
            if candidate == safe:
                return safe
            if not is_safe(candidate):
                unsafe = candidate
                break
            safe, step = candidate, 2.0 * step
    else:
        unsafe = x
        while True:
            candidate = _step(unsafe, toward_safe * step)
            if candidate == unsafe:
                return None
            if is_safe(candidate):
                safe = candidate
                break
            unsafe, step = candidate, 2.0 * step
    for _ in range(200):  # ~60 halvings of the log-gap reach 1e-14 from the widest bracket
        log_safe, log_unsafe = math.log(safe), math.log(unsafe)
        if abs(log_safe - log_unsafe) <= rel_tol:
            break
        mid = math.exp(0.5 * (log_safe + log_unsafe))
        if mid in (safe, unsafe):
            break
        if is_safe(mid):
            safe = mid
        else:
            unsafe = mid
    return safe


def round_up(value, exact):
    """``value`` (a float near the rational ``exact``), moved up to the first float ``>= exact``.

    Noise scales and privacy parameters computed in floating point may land an
    ulp on the unsafe side; this puts them back on the safe one, and leaves
    exact results (``4.0``) exact.
    """
    if not math.isfinite(value):
        return value
    while Fraction(value) < exact:
        value = math.nextafter(value, math.inf)
    return value


def sqrt_up(exact, start=None):
    """The first float at or above ``start`` whose square is at least the rational ``exact``.

    ``start`` (default ``sqrt(float(exact))``) must be within a few ulps of the root.
    """
    s = math.sqrt(float(exact)) if start is None else start
    while Fraction(s) ** 2 < exact:
        s = math.nextafter(s, math.inf)
    return s


def pure_to_zcdp(epsilon):
    """epsilon-DP implies (epsilon^2/2)-zCDP [BS16, Prop. 1.4]; rounded up.

    A rho below the smallest float is stated as that float (a valid upper
    bound); a rho above the largest float is refused.
    """
    if math.isinf(epsilon):
        return math.inf
    rho = 0.5 * epsilon * epsilon
    if math.isinf(rho):
        raise ValueError(f"'epsilon' = {epsilon:g} is too large: its zCDP parameter epsilon^2/2 overflows.")
    return max(round_up(rho, Fraction(epsilon) ** 2 / 2), TINY)


def _log_delta_cks(a, rho, epsilon):
    # log of e^{(α-1)(αρ-ε)} / (α-1) · (1 - 1/α)^α  [CKS20, Cor. 13], written in a = α - 1 > 0 so that
    # orders close to 1 (huge rho) keep their precision. The last two terms, -log a + α log(a/α), are
    # a log a - (1 + a) log(1 + a); for a > 1 that difference cancels, so it is taken as -log a - α log(1 + 1/a).
    tail = a * math.log(a) - (1.0 + a) * math.log1p(a) if a <= 1 else -math.log(a) - (1.0 + a) * math.log1p(1.0 / a)
    return a * (rho - epsilon) + a * a * rho + tail


def _approximate_minimiser(rho, epsilon):
    """The ``a = alpha - 1`` minimising ``a^2 rho + a (rho - epsilon) - log a``, the bound's large-``a`` form.

    ``(s + sqrt(s^2 + 8 rho)) / (4 rho)`` with ``s = epsilon - rho``: about
    ``s / (2 rho)`` when epsilon dominates and ``1 / sqrt(2 rho)`` when it does not.
    """
    s = epsilon - rho
    root = math.hypot(s, 2.0 * math.sqrt(2.0 * rho))
    a = (s + root) / rho / 4.0 if s >= 0 else 2.0 / (root - s)
    return a if a == a else 1.0  # NaN only from inf/inf at the very top of the float range


_SQRT_EPS = math.sqrt(2.2e-16)
_GOLDEN = 0.5 * (3.0 - math.sqrt(5.0))


def bounded_minimum(f, a, b, *, xatol=1e-5, max_evaluations=500):
    """The least value of ``f`` that Brent's bounded search on ``[a, b]`` observes (finite ``f``).

    Golden-section steps with parabolic interpolation, the algorithm of
    ``scipy.optimize.minimize_scalar(method="bounded")`` (Forsythe, Malcolm
    and Moler's ``fmin``) written here operation for operation, so that it
    returns the same float bit for bit (checked over a grid in
    ``tests/privacy/test_conversions_minimum.py``) without importing
    ``scipy.optimize`` (about a quarter of a CPU-second per command). It
    stops when the bracket is within ``xatol`` (plus a relative ``sqrt(eps)``)
    of its best point, or after ``max_evaluations`` calls of ``f``.
    """
    fulc = a + _GOLDEN * (b - a)
    nfc = xf = x = fulc
    rat = e = 0.0
    fx = ffulc = fnfc = f(x)
    evaluations = 1
    xm = 0.5 * (a + b)
    tol1 = _SQRT_EPS * abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while abs(xf - xm) > tol2 - 0.5 * (b - a):
        golden = True
        if abs(e) > tol1:  # try a parabola through the three best points
            step, e = _parabolic_step((xf, fx), (nfc, fnfc), (fulc, ffulc), a, b, e, rat, tol1, xm)
            if step is not None:
                golden, rat = False, step
        if golden:
            e = (a - xf) if xf >= xm else (b - xf)
            rat = _GOLDEN * e
        x = xf + _sign_or_one(rat) * max(abs(rat), tol1)
        fu = f(x)
        evaluations += 1
        if fu <= fx:
            if x >= xf:
                a = xf
            else:
                b = xf
            fulc, ffulc, nfc, fnfc, xf, fx = nfc, fnfc, xf, fx, x, fu
        else:
            if x < xf:
                a = x
            else:
                b = x
            if fu <= fnfc or nfc == xf:
                fulc, ffulc, nfc, fnfc = nfc, fnfc, x, fu
            elif fu <= ffulc or fulc == xf or fulc == nfc:
                fulc, ffulc = x, fu
        xm = 0.5 * (a + b)
        tol1 = _SQRT_EPS * abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if evaluations >= max_evaluations:
            break
    return fx


def _parabolic_step(best, second, third, a, b, e, rat, tol1, xm):
    """``fmin``'s step to the least point of the parabola through three ``(x, f(x))`` points, best first.

    Returns the step (``None`` where the parabola's least point is refused: outside ``(a, b)``, or a step
    not under half the one before last, so that a golden-section step is due) and the new ``e`` (the last
    step but one), in the order of ``bounded_minimum``'s operations.
    """
    (xf, fx), (nfc, fnfc), (fulc, ffulc) = best, second, third
    tol2 = 2.0 * tol1
    r = (xf - nfc) * (fx - ffulc)
    q = (xf - fulc) * (fx - fnfc)
    p = (xf - fulc) * q - (xf - nfc) * r
    q = 2.0 * (q - r)
    if q > 0.0:
        p = -p
    q = abs(q)
    r, e = e, rat
    if not (abs(p) < abs(0.5 * q * r) and p > q * (a - xf) and p < q * (b - xf)):
        return None, e
    rat = (p + 0.0) / q
    x = xf + rat
    if (x - a) < tol2 or (b - x) < tol2:  # too near an end: a minimal step towards the middle
        rat = tol1 * _sign_or_one(xm - xf)
    return rat, e


def _sign_or_one(value):
    """``sign(value)``, with 1 for 0 (numpy's ``sign(v) + (v == 0)``)."""
    return -1.0 if value < 0 else 1.0


def zcdp_delta(rho, epsilon):
    """The delta at which rho-zCDP gives (epsilon, delta)-DP [CKS20].

    Any order ``alpha > 1`` gives a valid bound, so the numerical minimisation
    over ``alpha`` can only make the answer looser, never unsafe; orders are
    kept where every term of the bound is a finite float.
    """
    if rho == 0 or math.isinf(epsilon):
        return 0.0
    if math.isinf(rho):
        return 1.0
    centre = max(_approximate_minimiser(rho, epsilon), 1e-300)
    hi = min(10.0 * max(centre, 1.0), 1e300 / max(abs(rho - epsilon), 1.0), math.sqrt(1e300 / rho))
    lo = max(1e-300, min(1e-12, 1e-3 * math.exp(min(epsilon - rho, 0.0))))
    hi = max(hi, 10.0 * lo)

    def f(t):  # kept finite for the minimiser: -inf (delta = 0) and overflow are clamped, never made smaller
        value = _log_delta_cks(math.exp(t), rho, epsilon)
        return 1e300 if value != value else min(max(value, -1e300), 1e300)

    least = bounded_minimum(f, math.log(lo), math.log(hi), xatol=1e-10)
    candidates = [least, f(math.log(hi)), f(math.log(min(max(centre, lo), hi)))]
    log_delta = min(c for c in candidates if not math.isnan(c))
    return 1.0 if log_delta >= 0 else math.exp(log_delta)


def _standard(rho, delta):
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_to_approx_dp(rho, delta, method="optimal"):
    """The epsilon such that rho-zCDP implies (epsilon, delta)-DP.

    Parameters
    ----------
    rho : float >= 0
    delta : float in (0, 1)
    method : {"optimal", "standard"}
        ``"standard"``: ``rho + 2 sqrt(rho ln(1/delta))`` [BS16, Prop. 1.3].
        ``"optimal"``: the [CKS20] conversion, solved for epsilon in log space
        and rounded up (the returned epsilon always satisfies
        ``zcdp_delta(rho, epsilon) <= delta``); never larger than the standard.
    """
    if method not in ("optimal", "standard"):
        raise ValueError(f"'method' must be one of 'optimal', 'standard'; got {method!r}.")
    if not 0 < delta < 1:
        raise ValueError(f"'delta' must be in (0, 1) to convert zCDP to (epsilon, delta)-DP; got {delta}.")
    if not rho >= 0:  # NaN came back as an epsilon of NaN, a negative rho as "math domain error"
        raise ValueError(f"'rho' must be a number >= 0 to convert zCDP to (epsilon, delta)-DP; got {rho}.")
    if rho == 0:
        return 0.0
    if math.isinf(rho):
        return math.inf
    upper = math.nextafter(_standard(rho, delta), math.inf)
    if math.isinf(upper):
        raise ValueError(f"'rho' = {rho:g} is too large: its (epsilon, delta) conversion overflows.")
    if method == "standard" or zcdp_delta(rho, upper) > delta:  # the latter cannot happen; stay safe
        return upper
    return _optimal_epsilon(rho, delta, upper)


@functools.lru_cache(maxsize=4096)
def _optimal_epsilon(rho, delta, upper):
    """The [CKS20] search of :func:`zcdp_to_approx_dp`, memoised (a pure function of three floats): an
    accountant states the same composed rho at the same delta again at every check and every report."""
    eps = search_safe(lambda e: zcdp_delta(rho, e) <= delta, upper, rel_tol=1e-12)
    return max(eps, MIN_NORMAL)  # a subnormal epsilon is stated as the smallest normal one (larger, so valid)


def advanced_composition(epsilons, deltas, delta_slack):
    """Advanced composition of (epsilon_i, delta_i)-DP mechanisms [DR14, Thm 3.20].

    ``epsilon = sqrt(2 ln(1/delta_slack) sum eps_i^2) + sum eps_i (e^eps_i - 1)``
    and ``delta = sum delta_i + delta_slack`` (the heterogeneous form; with
    equal ``eps_i`` it is exactly Dwork & Roth's statement). It holds for
    mechanisms whose parameters are fixed in advance (the mechanisms
    themselves may be chosen adaptively); it is the baseline Park & Welling
    compare against. Overflow gives ``epsilon = inf`` (a vacuous, valid bound).

    Returns
    -------
    (epsilon, delta) : tuple of float
    """
    eps = np.asarray(epsilons, dtype=float)
    if not 0 < delta_slack < 1:
        raise ValueError(f"'delta_slack' must be in (0, 1); got {delta_slack}.")
    if eps.size == 0:
        return 0.0, 0.0
    with np.errstate(over="ignore"):
        total = math.sqrt(2.0 * math.log(1.0 / delta_slack) * float(np.sum(eps**2)))
        total += float(np.sum(eps * np.expm1(eps)))
    return total, math.fsum(deltas) + delta_slack
