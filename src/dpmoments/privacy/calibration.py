"""Noise calibration: from (epsilon, delta) and a sensitivity to a noise scale.

Every function returns the noise scale only; :func:`calibrate_gaussian` and
:func:`calibrate_laplace` also return the guarantee the scale buys, so that
callers never restate it by hand.

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

from scipy.special import log_ndtr

from .._validation import check_delta, check_epsilon, check_option, check_positive
from .conversions import bisect_safe, zcdp_delta, zcdp_to_approx_dp
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


def gaussian_delta(sigma, epsilon, sensitivity=1.0):
    """The exact delta of the Gaussian mechanism at ``epsilon`` [BW18, Thm 8].

    ``delta = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``, evaluated
    in log space so that tiny deltas and large epsilons keep their precision.
    """
    if sigma == 0:
        return 1.0
    u = sensitivity / sigma
    a = 0.5 * u - epsilon / u
    b = -0.5 * u - epsilon / u
    log_first = log_ndtr(a)
    log_second = epsilon + log_ndtr(b)
    if log_second >= log_first:  # only through rounding; the true value is >= 0
        return 0.0
    return float(math.exp(log_first) * -math.expm1(log_second - log_first))


@functools.lru_cache(maxsize=4096)
def _analytic_sigma_unit(epsilon, delta):
    # delta(sigma) decreases in sigma: bracket, then bisect, keeping the safe end.
    hi = max(1.0, math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon)
    while gaussian_delta(hi, epsilon) > delta:
        hi *= 2.0
    sigma = bisect_safe(lambda s: gaussian_delta(s, epsilon) <= delta, hi, 0.0, rel_tol=1e-14)
    # A relative nudge upwards absorbs rounding in the delta evaluation itself.
    return sigma * (1.0 + 1e-10)


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
    return sensitivity * _analytic_sigma_unit(epsilon, delta)


def classic_gaussian_sigma(epsilon, delta, sensitivity=1.0, allow_large_epsilon=False):
    """The classic ``sigma = sensitivity sqrt(2 ln(1.25/delta)) / epsilon`` [DR14, Thm A.1].

    The theorem is proven only for ``epsilon < 1``. Larger epsilons raise
    ``ValueError`` unless ``allow_large_epsilon=True`` (paper reproductions
    only; :func:`calibrate_gaussian` then reports the result as uncertified).
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
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def gaussian_rho(sigma, sensitivity=1.0):
    """The Gaussian mechanism with noise sigma is ``sensitivity^2/(2 sigma^2)``-zCDP [BS16]."""
    sigma = check_positive(sigma, "sigma")
    sensitivity = check_positive(sensitivity, "sensitivity")
    return sensitivity**2 / (2.0 * sigma**2)


def zcdp_gaussian_sigma(rho, sensitivity=1.0):
    """The sigma for which the Gaussian mechanism is exactly rho-zCDP."""
    rho = check_positive(rho, "rho", allow_inf=True)
    sensitivity = check_positive(sensitivity, "sensitivity")
    return 0.0 if math.isinf(rho) else sensitivity / math.sqrt(2.0 * rho)


def gaussian_epsilon(sigma, delta, sensitivity=1.0):
    """The exact epsilon of a Gaussian mechanism with noise ``sigma`` at ``delta`` [BW18].

    Used to state what really holds when a paper's sigma is used outside its
    theorem. Rounded up (safe side).
    """
    sigma = check_positive(sigma, "sigma")
    delta = check_delta(delta, allow_zero=False)
    sensitivity = check_positive(sensitivity, "sensitivity")
    if gaussian_delta(sigma, 0.0, sensitivity) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(sigma, hi, sensitivity) > delta:
        hi *= 2.0
    return bisect_safe(lambda eps: gaussian_delta(sigma, eps, sensitivity) <= delta, hi, 0.0)


def laplace_scale(epsilon, sensitivity_l1):
    """The Laplace mechanism with scale ``b = sensitivity_l1 / epsilon`` is epsilon-DP."""
    epsilon = check_epsilon(epsilon)
    sensitivity_l1 = check_positive(sensitivity_l1, "sensitivity_l1")
    return 0.0 if math.isinf(epsilon) else sensitivity_l1 / epsilon


@functools.lru_cache(maxsize=4096)
def _largest_rho(epsilon, delta):
    """The largest rho whose optimal conversion stays within (epsilon, delta).

    zCDP's delta at a fixed epsilon grows with rho, so one bisection on rho
    over ``zcdp_delta`` suffices (not a conversion, itself a search, per step).
    """
    rho = bisect_safe(lambda r: zcdp_delta(r, epsilon) <= delta, 0.0, epsilon)
    # Stay consistent with zcdp_to_approx_dp, whose own search rounds epsilon up by ~1e-12.
    while rho > 0 and zcdp_to_approx_dp(rho, delta) > epsilon:
        rho *= 1.0 - 1e-9
    return rho


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
        (paper reproductions; at ``epsilon >= 1`` the guarantee is
        :class:`Uncertified` and records the epsilon that really holds);
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
        return sigma, ApproxDP(epsilon, delta, rho=gaussian_rho(sigma, sensitivity))
    if calibration == "zcdp":
        rho = _largest_rho(epsilon, delta)
        return zcdp_gaussian_sigma(rho, sensitivity), ZCDP(rho)
    sigma = classic_gaussian_sigma(epsilon, delta, sensitivity, allow_large_epsilon=True)
    rho = gaussian_rho(sigma, sensitivity)
    if epsilon < 1:
        return sigma, ApproxDP(epsilon, delta, rho=rho)
    holds = ApproxDP(gaussian_epsilon(sigma, delta, sensitivity), delta, rho=rho)
    reason = (
        "classic Gaussian formula used at epsilon >= 1, outside Dwork & Roth Thm A.1; "
        f"the exact analysis (Balle & Wang 2018) gives epsilon = {holds.epsilon:.4g} at this delta"
    )
    return sigma, Uncertified(ApproxDP(epsilon, delta), reason, holds=holds)


def calibrate_laplace(epsilon, sensitivity_l1):
    """The Laplace scale for an epsilon-DP release, and its :class:`PureDP` guarantee."""
    b = laplace_scale(epsilon, sensitivity_l1)
    return b, PureDP(check_epsilon(epsilon))
