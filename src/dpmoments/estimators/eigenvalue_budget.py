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
from .eigenvalue_ties import tie_factors
from .eigenvalue_turn import TURN_TEXT, turn_parts, turned_upper
from .eigenvalue_weyl import WeylCentre, half_width
from .fcr import selected_by_fcr
from .error_budget import (FAR_Z, _far_rows_likely as far_rows_likely, _far_rows_possible as far_rows_possible,
                           clipping_part, loss_cap, release_centre_bias, tail_factor, unseen_loss_columns,
                           TAIL_RATIO)
from .uncertainty import family_z, noise_law, row_blocks, z_value

special = lazy_module("scipy.special")  # imported when an interval is first computed

__all__ = ["eigenvalue_error_budget"]

FCR_TEXT = ("false coverage rate (Benjamini & Yekutieli 2005), as the covariance's entries: the eigenvalues whose "
            "interval excludes 0 are chosen by Benjamini-Hochberg at 1 - level among the m printed ones, and their "
            "intervals are at level 1 - R (1 - level) / m (R chosen); every other interval is the one at the level, "
            "stretched to hold 0")


# What rows beyond 2R lose beyond it along a component, against what the band [R, 2R] lost along it: taken as at
# most this ratio, twice the covariance's per-column TAIL_RATIO (error_budget.tail_factor). For a tail falling as
# |x|^-3 the ratio is 1 *on average*, but the fourth moment is infinite and a handful of rows carry the far loss, so
# in a given fit it often exceeds 1; the first component, along which the largest rows lie, gathers it: on the t3
# simulation of `python -m benchmarks coverage` (5000 rows, 20 fits) the first eigenvalue's interval missed the
# full-data value while excluding 0 in 4 of 8 fits at epsilon 1 and 2 of 9 at epsilon 4 with ratio 1 (its rows
# beyond 2R had lost 1.9-3.3 times the band's loss), in none of 8 with 2. A heavier tail than that is what the
# intervals' 'not covered' names.
EIGEN_TAIL_RATIO = 2.0


def _tail_factors(k):
    """The tail factor of each of the ``k`` components while rows beyond 2R are not ruled out: ``1 +
    EIGEN_TAIL_RATIO`` on the first, ``1 + TAIL_RATIO`` (the covariance's, once the band's loss) on the later ones.

    Why the first only: for rows drawn from an elliptical law a row's direction does not depend on its length, so
    along any *fixed* direction what rows beyond 2R lose against the band's loss is the ratio of the row norms', the
    covariance's ``TAIL_RATIO`` (1 for a tail falling as ``|x|^-3``). The released first component is not fixed: it
    is fitted to maximise the clipped spread, and so turns towards the few largest rows, which carry the far loss
    (on t3 the first eigenvalue missed with ratio 1 in 4 of 8 fits). The later ones are fitted orthogonal to it, away
    from those rows: their far / band ratio is 0.00 on the Gaussian simulation and 0.3-0.5 on t3 in the median
    (`python -m benchmarks pca_width`), where the first's is 0.5-1.7. Tables whose tail is heavier than that
    (breast cancer, star98: 0.8-3.1 in the median along pc2 and pc3; anes96: 7-60) pass either factor; their
    intervals rely on the loss's noise and on withholding the components that bear such rows."""
    factors = np.full(int(k), 1.0 + TAIL_RATIO)
    factors[:1] = 1.0 + EIGEN_TAIL_RATIO
    return factors


def eigenvalue_error_budget(release, components, noise_interval, noise_se, level, target, spectrum=None):
    r"""PCA's eigenvalue intervals with every part counted (original units): centre, sampling, clipping.

    ``components`` (k, d) in the original units, ``noise_interval`` (2, k) and
    ``noise_se`` (k,) the noise-only ones. Along a component ``v`` (``w = s v``
    with the release's column scales ``s``) the private centre adds
    :math:`(w^\top e)^2`, of mean :math:`s_c^2\|w\|^2` (removed) and sd
    :math:`\sqrt2 s_c^2\|w\|^2`; sampling (``target="population"``) spreads an
    eigenvalue by :math:`\sqrt{2/n}\,\lambda` (normal theory); clipping removed
    a positive semi-definite :math:`D`, so by Weyl the unclipped eigenvalue lies
    in :math:`[\lambda_k, \lambda_k + \lambda_1(D)]` with
    :math:`\lambda_1(D) \le \operatorname{tr} D`, and to first order by :math:`v^\top D v`, whose released
    estimate (the loss matrix along the component where it is released, times the tail factor where rows
    beyond twice the bound are not ruled out: ``1 + EIGEN_TAIL_RATIO`` on the first component, the covariance's
    ``1 + TAIL_RATIO`` on the later ones, :func:`_tail_factors`) moves the upper end up, its noise in quadrature
    with the other parts.
    The eigenvalues whose interval excludes 0 are chosen, and every printed interval's
    level set, as the covariance's entries (:func:`~.fcr.selected_by_fcr`); a component
    lying mostly in a column the covariance withholds has its interval withheld (NaN).
    On one machine and across sites the lower ends are Weyl's where the centre's term may drive a component
    (:mod:`.eigenvalue_weyl`; ``spectrum`` the released eigenvalues, descending, for the eigengaps: without it
    Weyl's everywhere). Returns ``(interval, se, parts)``.
    """
    scales = np.ones(release.n_features) if release.column_scale is None else np.asarray(release.column_scale)
    W = components * scales  # (k, d): the directions in the release's standardised units
    along = np.sum(W**2, axis=1)
    s = centre_noise_scale(release) or 0.0
    mid = (noise_interval[0] + noise_interval[1]) / 2 - s**2 * along
    lam = np.maximum(mid, 0.0)
    sampling_var = 2.0 * lam**2 / float(release.n) if target == "population" else np.zeros(len(mid))
    extra = 2.0 * s**4 * along**2 + sampling_var
    offset = location_offset(release)  # across sites: -2 (w.u)(w.e), |w.u| <= |w.a| + s ||w|| (centre_bias.py)
    if offset is not None:
        extra = extra + 4.0 * s**2 * along * (np.abs(W @ offset) + s * np.sqrt(along)) ** 2
    se = np.sqrt(noise_se**2 + extra)
    z = z_value(level)
    # Below a signal-to-noise of about 3 first-order intervals are too short (docs/uncertainty.md, PCA), and so they
    # are where a released neighbour lies within twice the noise's spectral norm: the noise mixes the near-tied
    # components and pushes the top of their group up by about that norm, not by its first-order share (N(0, I),
    # d = 100, n = 20 000, epsilon 4: every top eigenvalue's interval excluded the full-data one, 0.2 below it).
    # There the eigenvalue is within the noise's spectral norm of the released one (Weyl), which holds at any SNR
    norm = noise_law(release).spectral_norm(release.n_features)
    edge = norm * along
    gaps = _gaps(spectrum, len(mid))  # 0 without a spectrum: Weyl's lower ends, and no tie known
    weak = (mid < 3.0 * edge) | (gaps < 2.0 * edge if spectrum is not None else False)
    # Weyl in the data's units is ||D E D|| <= max(s)^2 ||E||, not ||E|| ||w||^2 (that bounds w'Ew, along w alone):
    # with column scales a component below its own noise may follow a small-scale column while the population's
    # eigenvalue lies along a large-scale one the noise hid (heart, ranges, epsilon 1: [0, 1218] for 2.07e5)
    weyl_edge = edge if release.column_scale is None else np.where(mid < 3.0 * edge, norm * float(np.max(scales)) ** 2,
                                                                   edge)
    # the top of a tied group sits above the population's by more than normal theory (eigenvalue_ties.py)
    down, up = (tie_factors(spectrum, len(mid), release.n, 2.0 * float(np.max(edge, initial=0.0)))
                if target == "population" else (np.ones(len(mid)), np.ones(len(mid))))
    part, clip = clipping_part(release), "not estimated: no clipping-excess release"
    point, tail, withheld = np.zeros(len(mid)), np.ones(len(mid)), np.zeros(len(mid), dtype=bool)
    if part is not None:
        law = noise_law(release)
        variances = np.diagonal(release.second_moment) - law.diagonal_mean
        point, clipping_at, clip = _eigenvalue_clipping(part, W, scales, level, release.second_moment, variances,
                                                        variances + z * law.diagonal_sd)
        # rows beyond 2R not ruled out: counted as the covariance's variances count them, at EIGEN_TAIL_RATIO
        tail = _tail_factors(len(mid)) if tail_factor(part) > 1.0 else np.ones(len(mid))
        withheld = _along_unseen_loss(part, W, level, *_along_loss_matrix(part.get("loss_matrix"), W,
                                                                           float(part["noise_sd"])))
        clip["eigenvalues_withheld"] = np.nonzero(withheld)[0].tolist()
        clip["tail_factors"] = tail.tolist()
    turn = None if part is None else turn_parts(part.get("loss_matrix"), components, scales, spectrum,
                                                     float(np.max(tail, initial=1.0)), float(part["noise_sd"]))
    bias_bound, joint = release_centre_bias(release, level, with_norm=True) or (None, None)
    # across sites the released step a joins the centre's error norm (eigenvalue_weyl.py): the same lower ends
    weyl = None if not s else WeylCentre(
        s, scales, noise_interval, noise_se, sampling_var, weyl_edge, weak, level, gaps,
        _bias_norm(bias_bound, joint, scales), 0.0 if offset is None else float(np.linalg.norm(offset * scales)))

    def pieces(at):  # (noise and sampling, the loss's noise, centre bias below, above) at level 'at', each (k,)
        z_at = z_value(at)
        # the noise-only interval (exact for its law at 'level') scaled to 'at' where it is the wider
        half = half_width((noise_interval[1] - noise_interval[0]) / 2, z_at / z, z_at, se, weak, weyl_edge, extra)
        # the loss's own noise is a part like the others: in quadrature with them, at the upper tail's (1 - at) / 2
        spread = (clipping_at(z_at) - point) * tail if part is not None else np.zeros(len(mid))
        return (half, spread, *eigenvalue_centre_bias(bias_bound, s, W, at, offset, joint))

    def intervals(at):  # every eigenvalue's interval at level 'at' (2, k)
        half, spread, below, above = pieces(at)
        lower = np.maximum(mid - half - below, 0.0)  # cut at 0 below only
        upper = lam * up + point * tail + np.sqrt(half**2 + spread**2) + above
        if turn is not None:  # where clipping may turn the component: the 2 x 2 bound past first order
            upper = np.where(turn[3], turned_upper(upper, turn[2], turn[0], turn[1]), upper)
        return np.stack([(lower if weyl is None else weyl.lower(at, lower)) / down, upper])

    # Which exclude 0, at a level that keeps the false coverage rate among them: the covariance's selection, its
    # entries a (1, k) row (every one 'distinct')
    marginal, printed = intervals(level), ~withheld
    t = np.divide(marginal[0], se, out=np.where(marginal[0] > 0, np.inf, 0.0), where=se > 0)
    selected, adjusted, interval = selected_by_fcr(lambda at: intervals(at)[:, None, :], t[None, :], printed[None, :],
                                                   level)
    selected, interval = selected[0], interval[:, 0, :]
    # Not selected: the interval at the level itself, stretched to hold 0 (its coverage is at least the level)
    interval[:, ~selected] = marginal[:, ~selected]
    interval[0, ~selected] = 0.0
    interval[:, withheld] = np.nan  # rows beyond twice the bound lost more than the release sees: not complete
    parts = {"target": target, "centre_noise_scale": s, "level_each": adjusted, "selected": int(selected.sum()),
             "multiplicity": FCR_TEXT,
             "sampling": "normal theory 2 lambda^2 / n" if target == "population" else "not counted",
             "clipping": clip, "centre_bias": "not bounded" if bias_bound is None else CENTRE_BIAS_TEXT}
    if turn is not None:
        parts["clipping"]["may_turn"] = {"components": np.nonzero(turn[3])[0].tolist(), "off_mass": turn[0].tolist(),
                                         "off_top_loss": turn[1].tolist(), "rule": TURN_TEXT}
    parts["tie_factors"] = {"lower_divided_by": down.tolist(), "upper_times": up.tolist()}
    half, spread, _, above = pieces(level)
    parts["upper_end"] = _upper_end(lam, half, spread, above, point * tail, lam * (up - 1.0))
    first_order = lam * up + point * tail + np.sqrt(half**2 + spread**2) + above
    parts["upper_end"]["turn"] = (intervals(level)[1] - first_order).tolist()  # the 2 x 2 bound's excess, 0 elsewhere
    if weyl is not None:
        parts["centre_rank_one"] = {"norm_squared_bound": float(weyl.norm_bound(level)),
                                    "first_order_lower_end": weyl.clear(level).tolist(), "rule": WEYL_TEXT}
    return interval, se, parts


def _upper_end(lam, half, spread, above, loss, ties):
    """Where each upper end comes from, at the level (an eigenvalue the multiplicity rule selects is printed at
    ``level_each``, wider): from ``lam`` (the released eigenvalue less the centre's mean term, floored at 0) the
    noise and sampling's half-width, the clipping loss's estimate (times the tail factor), its noise's share of the
    parts in quadrature, the centre's bias and a tied group's spread add up to it (with ``turn``, the excess of the
    turn-proof bound where clipping may turn the first component, :mod:`.eigenvalue_turn`). Lists (k,): which part
    makes the width (``benchmarks/pca_width.py`` tabulates them)."""
    return {"from": lam.tolist(), "noise_and_sampling": half.tolist(), "clipping_loss": loss.tolist(),
            "clipping_loss_noise": (np.sqrt(half**2 + spread**2) - half).tolist(), "centre_bias": above.tolist(),
            "ties": ties.tolist()}


WEYL_TEXT = ("lower ends by Weyl (the eigenvalue less the bound on the centre's squared error norm) where that bound "
             "is not under half the component's eigengaps; elsewhere the larger of Weyl's and the first-order one")


def _gaps(spectrum, k):
    """The smaller released eigengap on either side of each of the top ``k`` eigenvalues (0 without a spectrum)."""
    if spectrum is None:
        return np.zeros(k)
    values = np.asarray(spectrum, dtype=float)
    gaps = np.full(len(values) + 1, np.inf)
    gaps[1:-1] = values[:-1] - values[1:]
    return np.minimum(gaps[:k], gaps[1:k + 1])


def _bias_norm(bound, joint, scales):
    """A bound on the norm of the centre's clipping bias in the data's units (0 without a bound): every column's,
    or the joint norm's over its columns (:func:`~.centre_bias.centre_bias_bound`) with the rest's, the smaller."""
    if bound is None:
        return 0.0
    each = np.abs(np.asarray(bound, dtype=float)) * scales
    norm = float(np.linalg.norm(each))
    if joint is not None and np.isfinite(joint[0]):
        columns = np.asarray(joint[1], dtype=bool)
        norm = min(norm, float(joint[0]) * float(np.max(scales[columns], initial=0.0))
                   + float(np.linalg.norm(each[~columns])))
    return norm


def _along_unseen_loss(part, W, level, direct=None, direct_sd=None):
    """The components that lie mostly (half their weight or more) in the columns whose loss beyond the outer bound
    is unseen, by the covariance's rule (:func:`~.error_budget.unseen_loss_columns`: rows beyond it seen and the
    column bearing them, or not ruled out and the column's loss standing out): such rows lose along them an
    unbounded share, as of those columns' entries, which the covariance withholds.

    Where the loss matrix is released, ``direct`` and ``direct_sd`` (the band's loss along each component and its
    noise sd) apply the same rule to the component itself: a row beyond the outer bound loses ``3 R^2`` times its
    share along every direction in the band, so a component whose band loss stands out bears them. On star98 at
    epsilon 1 the first eigenvalue's full-data value was 5 times the clipped one, its rows beyond ``2R`` having lost
    4 times what the band lost, while no column's loss stood out of the vector's noise (the intervals the tighter
    matrix bound gave missed it in 9 of 20 fits). Released values and the components only."""
    d = W.shape[1]
    bearing, variance_only = unseen_loss_columns(part, level, d)
    columns = bearing | variance_only
    weight = np.sum(W[:, columns] ** 2, axis=1) / np.maximum(np.sum(W**2, axis=1), 1e-300)
    by_columns = weight >= 0.5
    if direct is None:
        return by_columns
    seen = part["rows_beyond_outer"] > FAR_Z * part["rows_beyond_noise_sd"]
    z_detect, z_withhold = (family_z(level, m) for m in (d, 10 * d))
    z_possible = z_detect if far_rows_likely(part) else z_withhold  # the covariance's variances' rule
    along_bearing = seen & (direct - bears_z(level, W.shape[0]) * direct_sd > 0)
    along_possible = far_rows_possible(part) & (direct - z_possible * direct_sd > 0)
    return by_columns | along_bearing | along_possible


def bears_z(level, k):
    """The one-sided threshold at which a component's band loss says it bears rows beyond the outer bound: ``1 - (1 -
    level) / k``, Bonferroni over the ``k`` components tested, as the covariance asks its columns over ``d``
    (:func:`~.error_budget.unseen_loss_columns`), so that noise alone withholds a component in at most ``1 - level``
    of fits. The family is the ``k`` printed components, not ``d``: only they are asked, and the covariance's ``d``
    counts its columns, which are what it asks. Every component is asked alike: the first gathers far rows' loss
    (EIGEN_TAIL_RATIO), but it gathers it in ``direct`` itself, which its test reads. At one-sided 90% per component
    noise alone could withhold one in ten of them once far rows were seen (breast cancer, star98, grunfeld, anes96:
    withheld 0.18-0.45 -> 0.15-0.38, hold full and wrong 'excludes 0' unchanged; ``python -m benchmarks coverage``)."""
    return family_z(level, max(int(k), 1))


def _eigenvalue_clipping(part, W, scales, level, second_moment, variances, variance_upper):
    """What clipping removed along each component, ``(point, upper, summary)``: the smaller of two bounds on
    ``w' D w`` with the released losses at their estimates (``point``, negative ones at 0) and ``upper(q)``, with
    them ``q`` noise sd up (the interval takes ``q`` two-sided at its level: its upper end has ``(1 - level) / 2`` to
    spend, as the covariance's variances).

    ``tr D`` (Weyl: ``lambda_1(D)``) and, to first order, ``sum_ij |w_i| |w_j| |D_ij|`` with the covariance's bounds
    on ``D``'s entries (:func:`~.error_budget.covariance_error_budget`): ``sqrt(U_i U_j)`` (``D`` positive
    semi-definite) where column ``i`` or ``j`` is detected as clipped, and otherwise, as clipping shrinks elliptical
    rows, ``|rho_ij| sqrt(U_i U_j)`` with the released correlation (:func:`_elliptical_share`); each column's loss no
    more than 3 times its released variance's upper end ``variance_upper`` (:func:`loss_cap`). Where the release
    carries the whole loss matrix ``L`` (``loss_matrix``, :mod:`dpmoments.moments.clipping_bias`), a third: ``w' L w``
    itself, its noise of sd ``tau ||w||^2`` (``tau`` the vector's), which needs neither the columns' caps nor the
    elliptical share and whose noise is one column's, not the sum of every column's it touches.
    """
    lost, sd = np.asarray(part["variance_lost"], dtype=float), float(part["noise_sd"])
    trace, trace_sd = float(np.sum(scales**2 * lost)), sd * float(np.sqrt(np.sum(scales**4)))
    cap = loss_cap(variance_upper)
    detected = lost - family_z(level, lost.size) * sd > 0  # the covariance's 'clipped'
    direct, direct_sd = _along_loss_matrix(part.get("loss_matrix"), W, sd)

    def bound(q):
        each = np.minimum(np.maximum(lost + q * sd, 0.0), cap)  # standardised units, as W
        along = _elliptical_share(second_moment, variances, detected, np.abs(W) * np.sqrt(each))
        along = np.minimum(along, max(trace + q * trace_sd, 0.0))
        return along if direct is None else np.minimum(along, np.maximum(direct + q * direct_sd, 0.0))

    z, q = z_value(level), float(special.ndtri(level))  # the summary's upper end two-sided, its 'surely' one-sided
    bearing, _ = unseen_loss_columns(part, level, lost.size)
    summary = {"trace_lost": trace, "trace_lost_noise_sd": trace_sd, "upper_by_trace": max(trace + z * trace_sd, 0.0),
               "trace_lost_surely": max(trace - q * trace_sd, 0.0), "loss_beyond_outer_unseen": bool(bearing.any())}
    if direct is not None:
        summary.update(lost_along_components=direct.tolist(), lost_along_components_noise_sd=direct_sd.tolist())
    return bound(0.0), bound, summary


def _along_loss_matrix(matrix, W, sd):
    """``(w' L w, tau ||w||^2)`` (k,) for each row of ``W`` where the loss matrix ``L`` is released, else
    ``(None, None)``: the diagonal's noise has sd ``tau``, each entry off it ``tau / sqrt 2``, so ``w' N w`` has
    variance ``tau^2 (sum_i w_i^2)^2`` (:mod:`dpmoments.moments.clipping_bias`)."""
    if matrix is None:
        return None, None
    return np.sum((W @ np.asarray(matrix, dtype=float)) * W, axis=1), sd * np.sum(W**2, axis=1)


def _elliptical_share(second_moment, variances, detected, V):
    """``sum_ij V_ki V_kj C_ij`` for each row of ``V`` (k, d): ``C_ij = |rho_ij|`` (the released correlation, at most
    1) between two undetected columns, else 1. Made a block of rows at a time: no second d x d array (800 MB at
    d = 10 000)."""
    d = len(variances)
    root = np.sqrt(np.maximum(np.asarray(variances, dtype=float), 1e-300))
    out = np.zeros(V.shape[0])
    for rows in row_blocks(d):
        with np.errstate(over="ignore"):  # a released variance at or below 0 (floored at 1e-300): C = inf -> 1
            C = np.abs(np.asarray(second_moment[rows], dtype=float)) / np.outer(root[rows], root)
        np.minimum(C, 1.0, out=C)
        C[:, detected] = 1.0
        C[detected[rows]] = 1.0
        C[np.arange(C.shape[0]), np.arange(rows.start, rows.stop)] = 1.0
        out += np.sum(V[:, rows] * (C @ V.T).T, axis=1)
    return out
