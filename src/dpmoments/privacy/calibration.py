"""Noise calibration: from (epsilon, delta) and a sensitivity to a noise scale.

Every function returns the noise scale only; :func:`calibrate_gaussian` and
:func:`calibrate_laplace` also return the guarantee the scale buys, so that
callers never restate it by hand. Every search here runs in log space over
the whole float range and ends in bounded time; where the answer is not a
representable float (a sigma that overflows, a scale that underflows) the
function refuses in one line naming the parameter.

References
----------
.. [BW18] B. Balle and Y.-X. Wang. Improving the Gaussian mechanism for
   differential privacy: analytical calibration and optimal denoising.
   ICML 2018, Thm 8 (the exact (epsilon, delta) curve of the Gaussian).
.. [DR14] C. Dwork and A. Roth. The algorithmic foundations of differential
   privacy, Thm A.1 (classic Gaussian, proven for epsilon < 1 only).
.. [BS16] M. Bun and T. Steinke, Prop. 1.6 (Gaussian is rho-zCDP with
   rho = sensitivity^2 / (2 sigma^2)).
"""

import functools
import math
from fractions import Fraction

from .._validation import check_delta, check_epsilon, check_option, check_positive
from ._gaussian_tail import log_gaussian_delta
from .conversions import MIN_NORMAL, TINY, round_up, search_safe, sqrt_up, zcdp_delta, zcdp_to_approx_dp
from .guarantees import ApproxDP, PureDP, Uncertified, ZCDP

__all__ = [
    "gaussian_delta",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "zcdp_gaussian_sigma",
    "gaussian_rho",
    "gaussian_epsilon",
    "laplace_scale",
    "calibrate_gaussian",
    "calibrate_laplace",
    "CALIBRATIONS",
]

CALIBRATIONS = ("analytic", "classic", "zcdp")


def _representable(value, name, what):
    """A computed noise scale, refused when it left the normal floats."""
    if math.isinf(value):
        raise ValueError(f"{what} overflows: {name}.")
    if value < MIN_NORMAL:
        raise ValueError(f"{what} underflows: {name}.")
    return value


def gaussian_delta(sigma, epsilon, sensitivity=1.0):
    """The exact delta of the Gaussian mechanism at ``epsilon`` [BW18, Thm 8].

    ``delta = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``, evaluated
    without cancellation (see :mod:`dpmoments.privacy._gaussian_tail`) so that
    tiny ``D/s``, tiny deltas and large epsilons keep their precision.
    """
    if sigma == 0:
        return 1.0
    return math.exp(log_gaussian_delta(sigma / sensitivity, epsilon))


@functools.lru_cache(maxsize=4096)
def _analytic_sigma_unit(epsilon, delta):
    # delta(sigma) decreases in sigma; compare logarithms so that subnormal targets keep their precision.
    log_target = math.log(delta)
    guess = math.sqrt(2.0 * math.log(1.25 / delta)) / max(epsilon, 1e-300)
    ratio = search_safe(lambda r: log_gaussian_delta(r, epsilon) <= log_target, min(guess, 1e300))
    if ratio is None:
        raise ValueError(f"'epsilon' = {epsilon:g} is too small at delta = {delta:g}: the Gaussian noise it "
                         "needs exceeds the float range.")
    # A relative nudge upwards absorbs rounding in the delta evaluation itself.
    return ratio * (1.0 + 1e-10)


def analytic_gaussian_sigma(epsilon, delta, sensitivity=1.0):
    """The smallest sigma (rounded up) for which the Gaussian mechanism is (epsilon, delta)-DP.

    Valid for every epsilon > 0 [BW18]. ``epsilon = inf`` gives ``0`` (no noise).

    Examples
    --------
    >>> round(analytic_gaussian_sigma(1.0, 1e-5), 4)
    3.7306
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    sensitivity = check_positive(sensitivity, "sensitivity")
    if math.isinf(epsilon):
        return 0.0
    sigma = sensitivity * _analytic_sigma_unit(epsilon, delta)
    return _representable(sigma, f"'epsilon' = {epsilon:g} with 'sensitivity' = {sensitivity:g}", "the Gaussian sigma")


def classic_gaussian_sigma(epsilon, delta, sensitivity=1.0, allow_large_epsilon=False):
    """The classic ``sigma = sensitivity sqrt(2 ln(1.25/delta)) / epsilon`` [DR14, Thm A.1].

    The theorem is proven only for ``epsilon < 1``. Larger epsilons raise
    ``ValueError`` unless ``allow_large_epsilon=True`` (paper reproductions
    only; :func:`calibrate_gaussian` then reports what the exact analysis
    proves for that sigma).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    sensitivity = check_positive(sensitivity, "sensitivity")
    if math.isinf(epsilon):
        return 0.0
    if epsilon >= 1 and not allow_large_epsilon:
        raise ValueError(
            f"The classic Gaussian calibration is proven only for epsilon < 1; got epsilon={epsilon}. "
            "Use calibration='analytic' (valid for every epsilon), or allow_large_epsilon=True "
            "to reproduce a paper (the guarantee is then reported as uncertified)."
        )
    sigma = sensitivity * (math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon)
    return _representable(sigma, f"'epsilon' = {epsilon:g} with 'sensitivity' = {sensitivity:g}",
                          "the classic Gaussian sigma")


def gaussian_rho(sigma, sensitivity=1.0):
    """The Gaussian mechanism with noise sigma is ``sensitivity^2/(2 sigma^2)``-zCDP [BS16]; rounded up.

    A rho below the smallest float is stated as that float (a valid upper
    bound); one above the largest float is refused.
    """
    sigma = check_positive(sigma, "sigma")
    sensitivity = check_positive(sensitivity, "sensitivity")
    u = sensitivity / sigma
    rho = 0.5 * u * u
    if math.isinf(rho):
        raise ValueError(f"'sigma' = {sigma:g} is too small for 'sensitivity' = {sensitivity:g}: rho overflows.")
    return max(round_up(rho, (Fraction(sensitivity) / Fraction(sigma)) ** 2 / 2), TINY)


def _rho_if_finite(sigma, sensitivity):
    # The zCDP parameter is optional on an (epsilon, delta) guarantee: omit it where it overflows.
    try:
        return gaussian_rho(sigma, sensitivity)
    except ValueError:
        return None


def zcdp_gaussian_sigma(rho, sensitivity=1.0):
    """The sigma for which the Gaussian mechanism is exactly rho-zCDP."""
    rho = check_positive(rho, "rho", allow_inf=True)
    sensitivity = check_positive(sensitivity, "sensitivity")
    if math.isinf(rho):
        return 0.0
    sigma = _representable(sensitivity / math.sqrt(2.0 * rho), f"'rho' = {rho:g} with 'sensitivity' = {sensitivity:g}",
                           "the zCDP Gaussian sigma")
    return sqrt_up(Fraction(sensitivity) ** 2 / (2 * Fraction(rho)), start=sigma)


def gaussian_epsilon(sigma, delta, sensitivity=1.0):
    """The exact epsilon of a Gaussian mechanism with noise ``sigma`` at ``delta`` [BW18].

    Used to state what really holds when a paper's sigma is used outside its
    theorem. Rounded up (safe side); ``0.0`` when even epsilon = 0 meets
    ``delta``. Raises ``ValueError`` when no finite epsilon does.
    """
    sigma = check_positive(sigma, "sigma")
    delta = check_delta(delta, allow_zero=False)
    sensitivity = check_positive(sensitivity, "sensitivity")
    eps = _gaussian_epsilon_of_ratio(sigma / sensitivity, delta)
    if eps is None:
        raise ValueError(f"'sigma' = {sigma:g} is too small for 'sensitivity' = {sensitivity:g}: no finite epsilon "
                         f"holds at delta = {delta:g}.")
    return eps


@functools.lru_cache(maxsize=4096)
def _gaussian_epsilon_of_ratio(ratio, delta):
    """:func:`gaussian_epsilon` at ``sigma / sensitivity = ratio`` (``None``: no finite epsilon holds).

    Memoised (a pure function of two floats): a multi-site plan asks for the same few ratios thousands of times,
    its cost and every round's joint view (a small CAPE reproduction: 2172 calls, 95 distinct, 40% of its time).
    """
    log_target = math.log(delta)
    if log_gaussian_delta(ratio, 0.0) <= log_target:
        return 0.0
    return search_safe(lambda e: log_gaussian_delta(ratio, e) <= log_target, 1.0)


def laplace_scale(epsilon, sensitivity_l1):
    """The Laplace mechanism with scale ``b = sensitivity_l1 / epsilon`` is epsilon-DP (rounded up)."""
    epsilon = check_epsilon(epsilon)
    sensitivity_l1 = check_positive(sensitivity_l1, "sensitivity_l1")
    if math.isinf(epsilon):
        return 0.0
    scale = round_up(sensitivity_l1 / epsilon, Fraction(sensitivity_l1) / Fraction(epsilon))
    return _representable(scale, f"'epsilon' = {epsilon:g} with 'sensitivity_l1' = {sensitivity_l1:g}",
                          "the Laplace scale")


@functools.lru_cache(maxsize=4096)
def _largest_rho(epsilon, delta):
    """The largest rho whose optimal conversion stays within (epsilon, delta).

    zCDP's delta at a fixed epsilon grows with rho, so one search on rho
    over ``zcdp_delta`` suffices (not a conversion, itself a search, per step).
    The search targets an epsilon a relative 1e-10 below the request, so that
    :func:`zcdp_to_approx_dp` (which rounds its epsilon up by ~1e-12) maps
    the answer back inside the request; that is checked once.
    """
    target = epsilon * (1.0 - 1e-10)
    guess = min(epsilon * (epsilon / (4.0 * math.log(1.0 / delta))), 1e300)
    rho = search_safe(lambda r: zcdp_delta(r, target) <= delta, guess, safe_above=False)
    if rho is None or rho < MIN_NORMAL:
        raise ValueError(f"'epsilon' = {epsilon:g} is too small for a zCDP calibration at delta = {delta:g}: "
                         "the zCDP parameter rho underflows.")
    for _ in range(8):  # in practice the first check passes
        if zcdp_to_approx_dp(rho, delta) <= epsilon:
            return rho
        rho *= 1.0 - 1e-8
    raise ValueError(f"no zCDP parameter fits (epsilon={epsilon:g}, delta={delta:g}).")


def _classic(epsilon, delta, sensitivity):
    """The classic sigma, and what it provably buys: the claim where proven or rescued, else Uncertified."""
    sigma = classic_gaussian_sigma(epsilon, delta, sensitivity, allow_large_epsilon=True)
    rho = _rho_if_finite(sigma, sensitivity)
    if epsilon < 1:
        return sigma, ApproxDP(epsilon, delta, rho=rho)
    try:
        exact = gaussian_epsilon(sigma, delta, sensitivity)
    except ValueError:
        exact = math.inf
    if exact <= epsilon:
        basis = ("the exact Gaussian analysis (Balle & Wang 2018): the classic formula was used at epsilon >= 1, "
                 f"outside Dwork & Roth Thm A.1, and its sigma gives epsilon = {exact:.4g} <= {epsilon:g}")
        return sigma, ApproxDP(epsilon, delta, rho=rho, basis=basis)
    holds = ApproxDP(exact, delta, rho=rho) if math.isfinite(exact) else None
    reason = ("classic Gaussian formula used at epsilon >= 1, outside Dwork & Roth Thm A.1; what holds is the "
              "exact epsilon of its sigma (Balle & Wang 2018)")
    return sigma, Uncertified(ApproxDP(epsilon, delta), reason, holds=holds)


def calibrate_gaussian(epsilon, delta, sensitivity, calibration="analytic"):
    """The Gaussian noise scale for a release, and the guarantee it buys.

    Parameters
    ----------
    epsilon : float in (0, inf]
    delta : float in (0, 1)
    sensitivity : float > 0
        L2 sensitivity of the statistic on the coordinates the noise acts on.
    calibration : {"analytic", "classic", "zcdp"}
        ``"analytic"`` [BW18] (default; any epsilon); ``"classic"`` [DR14]
        (paper reproductions; at ``epsilon >= 1`` the claim is certified when
        the exact analysis proves it for that sigma, and otherwise
        :class:`Uncertified`, recording the epsilon that really holds);
        ``"zcdp"``: the largest rho whose conversion [CKS20] fits (epsilon,
        delta), guarantee :class:`ZCDP`.

    Returns
    -------
    sigma : float
    guarantee : ApproxDP, ZCDP or Uncertified
    """
    calibration = check_option(calibration, "calibration", CALIBRATIONS)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    sensitivity = check_positive(sensitivity, "sensitivity")
    if math.isinf(epsilon):
        return 0.0, PureDP(math.inf)
    if calibration == "analytic":
        sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity)
        return sigma, ApproxDP(epsilon, delta, rho=_rho_if_finite(sigma, sensitivity))
    if calibration == "zcdp":
        rho = _largest_rho(epsilon, delta)
        return zcdp_gaussian_sigma(rho, sensitivity), ZCDP(rho)
    return _classic(epsilon, delta, sensitivity)


def calibrate_laplace(epsilon, sensitivity_l1):
    """The Laplace scale for an epsilon-DP release, and its :class:`PureDP` guarantee."""
    b = laplace_scale(epsilon, sensitivity_l1)
    return b, PureDP(check_epsilon(epsilon))
