"""The exact statistics a site computes from its own rows: a round's moment, IRLS's weighted moments and sampling
statistics, and the counts a choosing step releases.

Private: everything here runs inside a site, on its own rows (already mapped by the plan's ranges and scales,
:mod:`~.site_rows`); nothing leaves but noised, through :meth:`~.site.Site.handle`.
"""

import numpy as np

from ..moments import accumulate_moments, clip_responses, clip_rows
from ..moments.clipping_bias import excess_mean
from ..moments.irls_sandwich import residual_scale, sandwich_statistics, sign_score
from ..solvers.irls import irls_weights, weighted_moments
from .analyses import intercept_factor
from .bounds import histogram_counts
from .site_rows import dense_blocks, row_norms
from .statistics import CROSS, EXCESS, RESIDUAL_SCALE, SANDWICH_K, SIGN_SCORE, THIRD

__all__ = ["intercept", "exact_moment", "weighted_moment", "sampling_moment", "bound_counts"]


def intercept(plan):
    """``(c, sqrt(1 + c^2))`` of a plan whose sites append IRLS's constant column, else ``(None, 1)``."""
    share = plan.option("intercept")
    return (None, 1.0) if share is None else (float(share), intercept_factor(share))


def _responses(y):
    if y is None:
        raise ValueError("this plan needs the site's responses y")
    return y


def exact_moment(plan, rnd, X, y, center):
    """The exact normalised statistic of one unweighted round, from the rows ``X`` (and responses ``y``)."""
    stat = rnd.stat
    if stat is EXCESS:  # what clipping at row_norm removes from each variance, up to twice it
        return excess_mean(dense_blocks(X), center, plan.row_norm)
    src, r = X, None
    if stat is CROSS:  # the rows with their responses (or the constant 1: the mean)
        ones = rnd.response == "ones"
        src = (X, np.ones(X.shape[0]) if ones else _responses(y))
        r = 1.0 if ones else plan.response_bound
    sums = accumulate_moments(src, row_norm=plan.row_norm, third=stat is THIRD, center=center, response_bound=r)
    return stat.of_sums(sums)


def _irls_rows(plan, X, y):
    """IRLS's rows ``Z`` (``x`` clipped, the public constant appended) and clipped responses."""
    y = _responses(y)
    share, scale = intercept(plan)
    Z, yc = clip_rows(X, plan.row_norm / scale), clip_responses(y, plan.response_bound)
    if share is not None:  # the public constant c R / s: the rows formed have norm at most R
        Z = np.hstack([Z, np.full((Z.shape[0], 1), share * plan.row_norm / scale)])
    return Z, yc


def weighted_moment(plan, rnd, X, y, theta):
    """IRLS: ``A = (1/n) sum s_i x_i y_i`` or ``B = (1/n) sum s_i x_i x_i^T`` at the public ``theta``."""
    Z, yc = _irls_rows(plan, X, y)
    A, B = weighted_moments(Z, yc, irls_weights(yc - Z @ theta, rnd.w_max, rnd.p))
    return A if rnd.stat is CROSS else B


def sampling_moment(plan, rnd, X, y, params):
    """IRLS's sampling statistics at the final public iterate (:mod:`dpmoments.moments.irls_sandwich`, one
    machine's code): the residual scale ``(1,)`` at ``params = theta``, or ``K_h`` / ``V`` at ``params = (theta,
    h)``, the bandwidth ``h`` from the released scale, or LAD's score ``(d,)`` at the same ``theta``."""
    Z, yc = _irls_rows(plan, X, y)
    if rnd.stat is RESIDUAL_SCALE:
        return np.array([residual_scale(Z, yc, params, plan.response_bound)])
    theta, h = params[:-1], float(params[-1])
    if rnd.stat is SIGN_SCORE:
        return sign_score(Z, yc - Z @ theta)
    key = "K" if rnd.stat is SANDWICH_K else "V"
    return sandwich_statistics(Z, yc - Z @ theta, h, rnd.w_max)[key]


def bound_counts(plan, rnd, X, y, center):
    """Exact counts of the row norms (or ``|y|``) on the plan's public grid, for the bound step's round ``rnd``."""
    if rnd.bound == "response_bound":
        values = np.abs(_responses(y))
    else:  # with an intercept column, the bound of the rows it forms: sqrt(1 + c^2) ||x|| (analyses)
        values = row_norms(X, center) * intercept(plan)[1]
    return histogram_counts(values, plan.auto.edges())
