"""An exact privacy analysis of the Wishart mechanism (ours; see docs/privacy.md).

Mechanism: release ``S + W`` where ``S = sum_i x_i x_i^T`` (rows ``||x_i|| <= R``)
and ``W ~ W_d(k, c I)`` (``k >= d`` degrees of freedom, scale ``c``).

Add/remove neighbours change ``S`` by a rank-one ``v v^T`` with
``s = ||v||^2 <= R^2``. Write ``t = s / c`` and ``m = k - d - 1``. The Wishart
density is proportional to ``det(W)^(m/2) exp(-tr(W)/(2c))``, so the privacy
loss of an output ``o = S + W`` against ``S + v v^T`` is

    L1 = -(m/2) log(1 - q) - t/2      (q = v^T W^-1 v < 1; +inf when q >= 1)

and, for an output of the larger dataset, ``L2 = -(m/2) log(1 + q') + t/2``.
By the classical result on inverse-Wishart quadratic forms (Muirhead 1982,
Thm 3.2.12), ``t / q ~ chi2(k - d + 1)`` exactly, whatever ``v`` and ``S``.
So both losses are functions of one chi-square variable and the exact
hockey-stick divergence ``delta(epsilon) = E[(1 - e^(epsilon - L))_+]`` is a
one-dimensional integral, maximised over ``t in (0, R^2/c]`` on a grid.

Consequences:

* ``k = d + 1`` (the papers' "epsilon-DP" Wishart, Jiang et al. 2016; Wang
  et al. 2018; Park & Welling 2016): ``m = 0`` and the support-mismatch event
  ``{Y <= t}`` has probability ``1 - e^(-t/2)`` > 0, so no finite epsilon holds
  with ``delta = 0``.
* Large ``k`` (Sheffet's "add random samples" regime, k = d + O(ln(1/delta)/eps^2))
  is (epsilon, delta)-DP with the delta computed here.

Replace-one neighbours are two add/remove steps; group privacy gives
``(2 eps, (1 + e^eps) delta)`` from one step's ``(eps, delta)``.
"""

import functools
import math

import numpy as np

from .._validation import check_delta, check_epsilon

__all__ = [
    "wishart_add_remove_delta",
    "wishart_delta",
    "wishart_degrees_of_freedom",
]

_GRID = 16
_QUADRATURE_MARGIN = 1e-12  # added to every delta: below it the analysis cannot certify anything
_MAX_DF = 10**7


def _delta_one_t(epsilon, t, m, nu):
    """Exact hockey-stick delta of one add/remove pair with t = ||v||^2 / c."""
    from scipy import integrate, stats  # here: scipy.stats alone costs more than the rest of `import dpmoments`

    chi = stats.chi2(nu)
    # Direction 1: output of the smaller dataset; loss decreasing in Y, infinite for Y <= t.
    if m > 0:
        y1 = t / -math.expm1(-(2.0 * epsilon + t) / m)
    else:
        y1 = t if epsilon + t / 2 >= 0 else math.inf
    # In log space: the exponent is <= 0 wherever the integrand is used, so no epsilon overflows it.
    f1 = lambda y: -math.expm1(epsilon + t / 2 + (m / 2) * math.log1p(-t / y)) * chi.pdf(y)  # noqa: E731
    d1 = chi.cdf(t)
    if y1 > t:
        d1 += integrate.quad(f1, t, y1, limit=200)[0]
    # Direction 2: output of the larger dataset; loss > epsilon only when t > 2 epsilon.
    d2 = 0.0
    if t > 2 * epsilon and m > 0:
        y2 = t / math.expm1((t - 2.0 * epsilon) / m)
        f2 = lambda y: -math.expm1(epsilon - t / 2 + (m / 2) * math.log1p(t / y)) * chi.pdf(y)  # noqa: E731
        d2 = integrate.quad(f2, y2, np.inf, limit=200)[0]
    elif t > 2 * epsilon:  # m == 0: constant loss t/2 > epsilon
        d2 = 1.0 - math.exp(epsilon - t / 2)
    return max(d1, d2)


@functools.lru_cache(maxsize=1024)
def wishart_add_remove_delta(epsilon, n_features, df, t_max):
    """delta(epsilon) of ``W_d(df, c I)`` noise under add/remove, with ``t_max = R^2 / c``.

    The worst case over ``t = ||v||^2 / c`` in ``(0, t_max]`` is taken on a
    log-spaced grid that includes ``t_max``; the result is rounded up by
    1e-12 for quadrature error.
    """
    if df < n_features:
        raise ValueError(f"'df' must be >= n_features ({n_features}) for a Wishart density; got {df}.")
    m, nu = df - n_features - 1, df - n_features + 1
    grid = t_max * np.geomspace(1e-3, 1.0, _GRID)
    worst = max(_delta_one_t(epsilon, float(t), m, nu) for t in grid)
    return min(1.0, worst + _QUADRATURE_MARGIN)


def wishart_delta(epsilon, n_features, df, t_max, neighbours="replace-one"):
    """delta(epsilon) of the Wishart mechanism under either neighbouring relation.

    Replace-one is two add/remove steps at ``epsilon/2`` each (group privacy).
    """
    if neighbours == "add-remove":
        return wishart_add_remove_delta(epsilon, n_features, df, t_max)
    half = epsilon / 2.0
    step = wishart_add_remove_delta(half, n_features, df, t_max)
    return 0.0 if step == 0 else min(1.0, math.exp(_log_group_factor(half) + math.log(step)))


def _log_group_factor(half):
    """``log(1 + e^half)`` without overflow."""
    return half + math.log1p(math.exp(-half))


def wishart_degrees_of_freedom(n_features, epsilon, delta, neighbours="replace-one"):
    """The smallest ``k`` (up to 0.1%, rounded up) for which ``W_d(k, R^2 I)`` noise is (epsilon, delta)-DP.

    By the exact analysis, with the scale fixed at ``c = R^2`` (Sheffet's
    choice), so ``t_max = 1``. Refuses in one line, without searching, where
    ``delta`` is below the analysis' quadrature margin or where the privacy
    loss's Gaussian approximation (standard deviation ``t / sqrt(2k)``)
    already needs more than ``10^7`` degrees of freedom; the search itself
    stops there too.
    """
    epsilon = check_epsilon(epsilon, allow_inf=False)
    delta = check_delta(delta, allow_zero=False)
    floor = _QUADRATURE_MARGIN * (1.0 if neighbours == "add-remove" else 1.0 + math.exp(min(epsilon / 2, 700.0)))
    if delta <= 2.0 * floor:
        raise ValueError(f"'delta' = {delta:g} is below what the exact Wishart analysis can certify "
                         f"(about {2 * floor:.2g} at this epsilon); use the Gaussian mechanism.")
    guess = math.log(1.0 / delta) / (4.0 * epsilon) / epsilon  # the loss's Gaussian approximation; a lower estimate
    if guess > _MAX_DF:
        raise ValueError(f"'epsilon' = {epsilon:g} is too small for the Wishart mechanism at delta = {delta:g}: it "
                         f"would need more than {_MAX_DF:g} degrees of freedom; use the Gaussian mechanism.")
    ok = lambda k: wishart_delta(epsilon, n_features, k, 1.0, neighbours) <= delta  # noqa: E731
    lo, hi = n_features, n_features + max(1, int(guess))
    while not ok(hi):
        lo, hi = hi, n_features + 2 * (hi - n_features)
        if hi - n_features > _MAX_DF:
            raise ValueError(f"no Wishart degrees of freedom up to {_MAX_DF:g} reach (epsilon={epsilon:g}, "
                             f"delta={delta:g}); use the Gaussian mechanism.")
    while hi - lo > max(1, hi // 1000):  # a k within 0.1% above the smallest is as private, and safe
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
