"""Numeric conversions between privacy notions.

Pure functions of numbers (no guarantee objects), so that calibration, the
guarantee classes and the accountant share one implementation.

References
----------
.. [BS16] M. Bun and T. Steinke. Concentrated differential privacy:
   simplifications, extensions, and lower bounds. TCC 2016 (arXiv 1605.02065).
.. [CKS20] C. Canonne, G. Kamath and T. Steinke. The discrete Gaussian for
   differential privacy. NeurIPS 2020 (arXiv 2004.00010), Prop. 12 / Cor. 13.
.. [DR14] C. Dwork and A. Roth. The algorithmic foundations of differential
   privacy, Thm 3.20 (advanced composition).
"""

import math

import numpy as np

__all__ = [
    "bisect_safe",
    "pure_to_zcdp",
    "zcdp_to_approx_dp",
    "zcdp_delta",
    "advanced_composition",
]


def bisect_safe(is_safe, safe, unsafe, rel_tol=1e-13, max_iter=300):
    """Bisect between a ``safe`` and an ``unsafe`` end of a monotone predicate; return a safe point.

    Works in either direction (``safe`` may be above or below ``unsafe``),
    so every privacy search here ends on the side that keeps the guarantee.
    """
    for _ in range(max_iter):
        if abs(safe - unsafe) <= rel_tol * max(abs(safe), abs(unsafe), 1e-300):
            break
        mid = 0.5 * (safe + unsafe)
        if is_safe(mid):
            safe = mid
        else:
            unsafe = mid
    return safe


def pure_to_zcdp(epsilon):
    """epsilon-DP implies (epsilon^2/2)-zCDP [BS16, Prop. 1.4]."""
    return 0.5 * epsilon * epsilon


def _log_delta_cks(alpha, rho, epsilon):
    # log of exp((a-1)(a*rho - eps)) / (a-1) * (1 - 1/a)^a   [CKS20, Cor. 13]
    return (alpha - 1.0) * (alpha * rho - epsilon) - math.log(alpha - 1.0) + alpha * math.log1p(-1.0 / alpha)


def zcdp_delta(rho, epsilon):
    """The delta at which rho-zCDP gives (epsilon, delta)-DP [CKS20].

    Any order ``alpha > 1`` gives a valid bound, so the numerical minimisation
    over ``alpha`` can only make the answer looser, never unsafe.
    """
    if rho == 0:
        return 0.0
    if math.isinf(rho):
        return 1.0
    # The minimiser is near alpha = (epsilon + rho) / (2 rho); search a wide bracket in log-space.
    centre = max((epsilon + rho) / (2.0 * rho), 1.0 + 1e-9)
    lo, hi = math.log(1e-12), math.log(max(10.0 * centre, 10.0))
    from scipy.optimize import minimize_scalar  # here: scipy.optimize would double `import dpmoments`

    res = minimize_scalar(
        lambda t: _log_delta_cks(1.0 + math.exp(t), rho, epsilon),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-10},
    )
    log_delta = min(res.fun, _log_delta_cks(1.0 + math.exp(hi), rho, epsilon))
    return min(1.0, math.exp(log_delta))


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
        ``"optimal"``: the [CKS20] conversion, solved for epsilon by bisection
        and rounded up (the returned epsilon always satisfies
        ``zcdp_delta(rho, epsilon) <= delta``); never larger than the standard.
    """
    if method not in ("optimal", "standard"):
        raise ValueError(f"'method' must be one of 'optimal', 'standard'; got {method!r}.")
    if not 0 < delta < 1:
        raise ValueError(f"'delta' must be in (0, 1) to convert zCDP to (epsilon, delta)-DP; got {delta}.")
    if rho == 0:
        return 0.0
    if math.isinf(rho):
        return math.inf
    upper = _standard(rho, delta)
    if method == "standard":
        return upper
    if zcdp_delta(rho, upper) > delta:  # cannot happen mathematically; stay safe numerically
        return upper
    return bisect_safe(lambda eps: zcdp_delta(rho, eps) <= delta, upper, 0.0, rel_tol=1e-12)


def advanced_composition(epsilons, deltas, delta_slack):
    """Advanced composition of (epsilon_i, delta_i)-DP mechanisms [DR14, Thm 3.20].

    ``epsilon = sqrt(2 ln(1/delta_slack) sum eps_i^2) + sum eps_i (e^eps_i - 1)``
    and ``delta = sum delta_i + delta_slack`` (the heterogeneous form; with
    equal ``eps_i`` it is exactly Dwork & Roth's statement). It is the
    baseline Park & Welling compare against.

    Returns
    -------
    (epsilon, delta) : tuple of float
    """
    eps = np.asarray(epsilons, dtype=float)
    if not 0 < delta_slack < 1:
        raise ValueError(f"'delta_slack' must be in (0, 1); got {delta_slack}.")
    if eps.size == 0:
        return 0.0, 0.0
    total = math.sqrt(2.0 * math.log(1.0 / delta_slack) * float(np.sum(eps**2)))
    total += float(np.sum(eps * np.expm1(eps)))
    return total, float(np.sum(deltas)) + delta_slack
