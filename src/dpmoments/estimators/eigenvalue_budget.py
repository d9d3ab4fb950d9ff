r"""The error budget behind PCA's eigenvalue intervals: the covariance's parts along each component.

The noise-only interval of an eigenvalue holds the eigenvalue of the *exact statistic of the clipped
rows about the private centre*. Along a component the same parts as a covariance entry's
(:mod:`dpmoments.estimators.error_budget`) lie between it and the value without privacy or the
population's: the private centre's noise, sampling (``target="population"``), the clipping loss
and the centre's own clipping bias. Everything here reads a release, the released components and
public values only: no rows.
"""

import numpy as np

from .._lazy import lazy_module
from .centre_bias import CENTRE_BIAS_TEXT, eigenvalue_centre_bias, location_offset
from .diagnostics import _centre_noise_scale as centre_noise_scale
from .error_budget import (_far_rows_possible, clipping_part, loss_beyond_outer_unseen, loss_cap,
                           release_centre_bias, tail_factor)
from .uncertainty import noise_law, z_value

special = lazy_module("scipy.special")  # imported when an interval is first computed

__all__ = ["eigenvalue_error_budget"]


def eigenvalue_error_budget(release, components, noise_interval, noise_se, level, target):
    r"""PCA's eigenvalue intervals with every part counted (original units): centre, sampling, clipping.

    ``components`` (k, d) in the original units, ``noise_interval`` (2, k) and
    ``noise_se`` (k,) the noise-only ones. Along a component ``v`` (``w = s v``
    with the release's column scales ``s``) the private centre adds
    :math:`(w^\top e)^2`, of mean :math:`s_c^2\|w\|^2` (removed) and sd
    :math:`\sqrt2 s_c^2\|w\|^2`; sampling (``target="population"``) spreads an
    eigenvalue by :math:`\sqrt{2/n}\,\lambda` (normal theory); clipping removed
    a positive semi-definite :math:`D`, so by Weyl the unclipped eigenvalue lies
    in :math:`[\lambda_k, \lambda_k + \lambda_1(D)]` with
    :math:`\lambda_1(D) \le \operatorname{tr} D`, whose released estimate's upper
    end (one-sided, at the level) widens the interval upwards.
    Returns ``(interval, se, parts)``.
    """
    scales = np.ones(release.n_features) if release.column_scale is None else np.asarray(release.column_scale)
    W = components * scales  # (k, d): the directions in the release's standardised units
    along = np.sum(W**2, axis=1)
    s = centre_noise_scale(release) or 0.0
    mid = (noise_interval[0] + noise_interval[1]) / 2 - s**2 * along
    lam = np.maximum(mid, 0.0)
    extra = 2.0 * s**4 * along**2 + (2.0 * lam**2 / float(release.n) if target == "population" else 0.0)
    offset = location_offset(release)  # across sites: -2 (w.u)(w.e), |w.u| <= |w.a| + s ||w|| (centre_bias.py)
    if offset is not None:
        extra = extra + 4.0 * s**2 * along * (np.abs(W @ offset) + s * np.sqrt(along)) ** 2
    se = np.sqrt(noise_se**2 + extra)
    z = z_value(level)
    half = np.maximum((noise_interval[1] - noise_interval[0]) / 2, z * se)
    # Below a signal-to-noise of about 3 first-order intervals are too short (docs/uncertainty.md, PCA): there the
    # eigenvalue is within the noise's spectral norm of the released one (Weyl), which bounds it at any SNR
    edge = noise_law(release).spectral_norm(release.n_features) * along
    weak = mid < 3.0 * edge
    half = np.where(weak, np.maximum(half, edge + z * np.sqrt(extra)), half)
    part, upper, clip = clipping_part(release), np.zeros(len(mid)), "not estimated: no clipping-excess release"
    withheld = np.zeros(len(mid), dtype=bool)
    if part is not None:
        law = noise_law(release)
        variance_upper = np.diagonal(release.second_moment) - law.diagonal_mean + z * law.diagonal_sd
        upper, clip = _eigenvalue_clipping(part, W, scales, level, variance_upper)
        upper = upper * tail_factor(part)  # rows beyond 2R not ruled out: as the covariance's variances count them
        withheld = np.full(len(mid), clip["loss_beyond_outer_unseen"]) | _along_unseen_loss(part, W, level)
        clip["eigenvalues_withheld"] = np.nonzero(withheld)[0].tolist()
    bias_bound = release_centre_bias(release, level)
    below, above = eigenvalue_centre_bias(bias_bound, s, W, level, offset)
    interval = np.stack([np.maximum(mid - half - below, 0.0), lam + half + upper + above])  # cut at 0 below only
    interval[:, withheld] = np.nan  # rows beyond twice the bound lost more than the release sees: not complete
    parts = {"target": target, "centre_noise_scale": s,
             "sampling": "normal theory 2 lambda^2 / n" if target == "population" else "not counted",
             "clipping": clip, "centre_bias": "not bounded" if bias_bound is None else CENTRE_BIAS_TEXT}
    return interval, se, parts


def _along_unseen_loss(part, W, level):
    """The components that lie mostly (half their weight or more) in clipped columns while rows beyond the outer
    bound are not ruled out: such rows lose along them an unbounded share, as of those columns' variances
    (:func:`_far_rows_possible`). Released values and the components only."""
    lost, sd = np.asarray(part["variance_lost"], dtype=float), float(part["noise_sd"])
    # at the covariance's withholding level (covariance_clipping: a tenth of the detection's error rate), on the
    # loss counted with the tail factor as there, so that a one-column PCA withholds where the variance does
    z_withhold = float(special.ndtri(1.0 - (1.0 - level) / (10 * lost.size)))
    tail = tail_factor(part)
    detected = tail * (lost - z_withhold * sd) > 0
    weight = np.sum(W[:, detected] ** 2, axis=1) / np.maximum(np.sum(W**2, axis=1), 1e-300)
    return (weight >= 0.5) & _far_rows_possible(part)


def _eigenvalue_clipping(part, W, scales, level, variance_upper):
    """Upper shifts of each eigenvalue for what clipping removed: the smaller of two bounds on ``w' D w``.

    ``tr D`` (Weyl: ``lambda_1(D)``) and, to first order, ``(sum_j |w_j| sqrt(D_jj))^2`` (``D`` positive
    semi-definite), each with the released losses at their upper ends (one-sided, at ``level``), each column's
    no more than 3 times its released variance's upper end ``variance_upper`` (:func:`loss_cap`).
    """
    q = float(special.ndtri(level))
    lost, sd = np.asarray(part["variance_lost"], dtype=float), float(part["noise_sd"])
    trace, trace_sd = float(np.sum(scales**2 * lost)), sd * float(np.sqrt(np.sum(scales**4)))
    by_trace = max(trace + q * trace_sd, 0.0)
    upper_each = np.minimum(np.maximum(lost + q * sd, 0.0), loss_cap(variance_upper))  # standardised units, as W
    along = (np.abs(W) @ np.sqrt(upper_each)) ** 2
    beyond = loss_beyond_outer_unseen(part, level)  # as for the covariance
    return np.minimum(along, by_trace), {"trace_lost": trace, "trace_lost_noise_sd": trace_sd,
                                         "upper_by_trace": by_trace, "trace_lost_surely": max(trace - q * trace_sd, 0.0),
                                         "loss_beyond_outer_unseen": bool(beyond)}
