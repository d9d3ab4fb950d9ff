r"""The passes behind the private choices: each reads the rows once and makes one private draw or release.

A private centre, column scales and row bound (:mod:`~dpmoments.moments.private_release`, and CoinPress,
:mod:`~dpmoments.moments.coinpress`) are made of these steps, in the order their plan fixes: the column
medians, the column scales, a row bound about a centre (with the noisy count of the rows it clips), and the
mean of the rows clipped about a centre. Each is paid from a share of a
:class:`~dpmoments.moments.choice_budget.PrivateChoiceBudget` and records its part there; a row bound's pass can
also sum what the pass after it needs (:func:`bound_pass`, :mod:`~dpmoments.moments.binned_sums`), so that the
data are read fewer times.

Privacy: every draw is an exponential-mechanism selection on a histogram of one statistic per row
(:mod:`~dpmoments.moments.private_bounds`: sensitivity 1 under every relation), and the mean a cross moment
release of rows clipped to the drawn bound (:func:`~dpmoments.moments.release_cross_moment`); the budget
records each guarantee and composes them.
"""

import numpy as np

from .._rng import spawn
from ..data import as_source, iter_chunks
from .auto_release import MARGIN_T, clip_target, public_n_what, rank_error, warn_range_end
from .binned_sums import binned_pass
from .choice_budget import BOUND_OPTION, LOCATION_OPTION, what_for
from .dask_moments import row_ones
from .private_bounds import BinCounts, noisy_clipped_count, quantile_pass, select_quantiles
from .releases import release_cross_moment
from .scale_guard import warn_scale_at_top

__all__ = ["scaled_rows", "column_medians", "column_scales", "row_bound_draw", "bound_pass", "fused_sums",
           "clipped_mean"]


def scaled_rows(X, scale, with_ones):
    """The rows divided by the column scales (paired with a response of ones for the mean), read afresh.

    An array or a dask collection stays one (a pair ``(Z, ones)`` for the mean);
    anything else becomes a new stream of chunks, so each pass reads the source again.
    """
    if scale is None and not with_ones:
        return X
    if as_source(X).kind == "dask":
        Z = X if scale is None else X / scale
        return (Z, row_ones(Z)) if with_ones else Z
    if scale is None and isinstance(X, np.ndarray):
        return X, np.ones(X.shape[0])

    def chunks():
        for chunk in iter_chunks(X):
            Z = chunk if scale is None else chunk / scale
            yield (Z, np.ones(Z.shape[0])) if with_ones else Z

    return chunks()


def column_medians(X, budget, share, search, rng, bins=None):
    """Private column medians (signed grid); ``bins``: their counts, where a pass already made them."""
    if bins is None:
        (bins,), _ = quantile_pass(X, [("column", None, None)], search=search)
    d = bins.counts.shape[0]
    each, guarantee = budget.draws(share, d)
    budget.drawn(each, "column medians")
    with budget.refusal(share, LOCATION_OPTION):
        m, outside = select_quantiles(bins, search.edges(signed=True), epsilon_each=each, quantile=0.5, rng=rng,
                                      what=public_n_what(budget.neighbours, "private column medians "
                                                                            "(center='private', no prior)"))
    budget.record("location", guarantee, share, (d, each), statistic="column medians", at_range_end=int(outside.sum()))
    if outside.any():
        warn_range_end("column median", search)
    return m


def column_scales(X, m, budget, share, search, rng, option_share=None, label="column scales", limits=None, floor=None,
                  tie_width=None, upper=0.0):
    """Private per-column medians of the non-zero ``|x_j - m_j|`` (``share`` is part of ``option_share``,
    the share of the user's bound option -- or of the location's, for the coarse scales; default ``share``).
    ``limits``: public ``(low, high)`` arrays each scale is clipped to (post-processing); where ``low == high``
    the scale is known and not drawn: only the other columns are drawn, and share the draws. ``floor``: private
    values (already released) each drawn scale is raised to, before the limits (post-processing).
    ``tie_width``: rows with ``|x_j - m_j| <= tie_width_j`` count as tied at ``m_j`` (a function of private
    outputs and the public grid only: each row's statistic is still a fixed function of that row, so the draw's
    sensitivity stays 1, private_bounds.py). ``upper``: a further share (from the second moment,
    :func:`~dpmoments.moments.choice_budget.upper_share`) for one more draw per column, the 0.75-quantile of the
    same distances, the tied rows at 0 (:func:`_raised_to_upper_quartile`); 0: none."""
    request = ("abs-column", m, None) if tie_width is None else ("abs-column-tied", m, tie_width)
    (bins,), d = quantile_pass(X, [request], search=search)
    free = np.ones(d, dtype=bool) if limits is None else limits[0] < limits[1]
    bins, d = BinCounts(bins.counts[free], None if bins.ties is None else bins.ties[free]), int(free.sum())
    each, guarantee = budget.draws(share, d)
    budget.drawn(each, label)
    option = BOUND_OPTION if label == "column scales" else LOCATION_OPTION
    with budget.refusal(share if option_share is None else option_share, option):
        s, outside = select_quantiles(bins, search.edges(), epsilon_each=each, quantile=0.5, rng=rng,
                                      what=public_n_what(budget.neighbours, f"private {label} (scale='private')"))
    budget.record(label, guarantee, share, (d, each), statistic="medians of the non-zero |x_j - m_j|",
                  at_range_end=int(outside.sum()))
    if upper:
        s = _raised_to_upper_quartile(s, bins, budget, upper, search, spawn(rng, 1)[0], label)
    if label == "column scales" and (outside & (s > search.low)).any():  # the coarse ones' said once, by these
        warn_scale_at_top(np.flatnonzero(free)[outside & (s > search.low)], label, search)
    if floor is not None:
        s = np.maximum(s, floor[free])
    if limits is None:
        return s
    out = np.array(limits[0], dtype=float)
    out[free] = np.clip(s, limits[0][free], limits[1][free])
    return out


def _raised_to_upper_quartile(s, bins, budget, share, search, rng, label):
    """``s`` raised to half the private 0.75-quantile of the same distances (the rows tied at the median counted at
    0), where that draw fell inside the grid; ``share`` for the draws of all ``len(s)`` columns.

    A median of the distances measures the column only where the median they are taken about sits among its
    rows. In a gap between the column's values (a balanced 0/1 column: every edge between 0 and 1 ranks as its
    median) half the rows lie at about the median's distance from the gap's near side, so the median of the
    distances can be anything from that distance (1e-5, say) to the far side's, and a column divided by 1e-4 set
    the row bound and drowned the others. The 0.75-quantile lies among the far side's rows unless the near side
    holds three quarters of them (a median could then fall in the gap only by a rank error of a quarter of the
    rows): half of it is at least half the gap. A continuous column's median distance exceeds half its
    0.75-quantile (Gaussian: 0.67 against 0.58 sd), and a column mostly at one value has a 0.75-quantile of 0,
    so both keep their median distance. The target is ``0.75 n`` with the tied rows counted (not set apart): its
    distance from the top, a quarter of the public ``n``, is what :func:`~dpmoments.moments.choice_budget.upper_share`
    judged. One exponential-mechanism draw per column of a fixed statistic of each row: sensitivity 1.
    """
    each, guarantee = budget.draws(share, s.size)
    budget.drawn(each, label)
    high, outside = select_quantiles(BinCounts(bins.counts), search.edges(), epsilon_each=each, quantile=0.75,
                                     rng=rng)
    budget.record(f"{label}, upper quartile", guarantee, share, (s.size, each), at_range_end=int(outside.sum()),
                  statistic="0.75-quantiles of the |x_j - m_j| (the rows tied at m_j at 0); a scale is at least half")
    # a median distance at the bottom of the grid is the scale_guard's to replace (a constant or mostly-tied column
    # whose upper quartile landed just above it would escape that guard and be multiplied by 1e5)
    return np.where(outside | (s <= search.low), s, np.maximum(s, high / 2.0))


def row_bound_draw(X, m, s, budget, share, bounds, main, rng, label="row_norm", diagnostic=True, option_share=None,
               binned=None):
    """A private row bound on (x - m)/s, and the noisy clipped count: (R, (count, share) or None).

    ``main`` is ``(statistic, mechanism, neighbours, share, count_share)`` of the
    release the bound serves, whose noise sets the "auto" target (:func:`clip_target`);
    ``share`` is part of ``option_share`` (the user's option it is paid from; default ``share``).
    ``binned`` is the :func:`bound_pass` that already counted the norms about ``m`` (else a pass counts them).
    """
    if binned is None:
        (bins,), d = quantile_pass(X, [("row-norm", m, s)], search=bounds.search)
    else:
        bins, d = binned.bin_counts(), binned.d
    diag = bounds.diagnostic * share if diagnostic and not budget.exact else 0.0
    each, guarantee = budget.draws(share - diag)
    budget.drawn(each, "row bound" if label == "row_norm" else label)
    statistic, mechanism, neighbours, main_share, count_share = main
    args = budget.release(main_share)
    quantile, clipped = clip_target(bounds, statistic, mechanism, d, args["epsilon"], args["delta"], neighbours,
                                    args["calibration"], each, count_share)
    gen_draw, gen_count = spawn(rng, 2)
    option = BOUND_OPTION if label == "row_norm" else LOCATION_OPTION
    with budget.refusal(share if option_share is None else option_share, option):
        values, outside = select_quantiles(bins, bounds.search.edges(), epsilon_each=each, quantile=quantile,
                                           clipped_rows=clipped, rng=gen_draw,
                                           what=public_n_what(budget.neighbours, f"private {label} ({what_for(label)})"))
    R = float(values[0])
    target = f"{quantile:g}-quantile" if clipped is None else f"clip about {clipped:.3g} rows"
    budget.record(label, guarantee, share - diag, (1, each), row_norm=R, target=target, at_range_end=bool(outside[0]),
                  **_clipped_at_most(clipped, each, bounds.search, outside[0]))
    if outside[0]:
        warn_range_end(label, bounds.search)
    if not diag:
        return R, None
    count = noisy_clipped_count(bins, bounds.search.edges(), R, rng=gen_count, **budget.count(diag))
    return R, (count, diag)


def _clipped_at_most(clipped, each, search, at_range_end):
    """``{"clipped_rows_at_most": k}``: the rows beyond the drawn bound are at most ``k`` with probability
    ``1 - e^-MARGIN_T`` (the draw's target plus its rank error, :func:`rank_error`), from public values only.
    Empty where the target is a quantile or the draw is at the range's end (rows beyond it are then unbounded)."""
    if clipped is None or at_range_end or not np.isfinite(each):
        return {}
    return {"clipped_rows_at_most": float(clipped + rank_error(each, search, t=MARGIN_T))}


def bound_pass(X, m, s, bounds, moment):
    """The pass of a row bound about ``m`` fused with the pass it serves (``moment``), or None where not worth it.

    A mean is always fused (its per-bin sums are ``2 d`` floats a bin and
    cheaper than the mean's own pass). A second moment only where the rows
    are read from a file or chunks: for an array in memory a second pass
    costs less than the fused pass's second Gram product per row.
    """
    if moment == "second" and as_source(X).kind in ("array", "frame", "dask"):
        return None
    return binned_pass(X, moment=moment, search=bounds.search, center=m, scale=s)


def fused_sums(binned, R, center):
    """The clipped sums at ``R`` from a fused pass, or None where there is none (read the data again)."""
    return binned.clipped(R, center) if binned is not None and binned.fused else None


def clipped_mean(X, s, m_z, args, rng, kwargs, binned=None):
    """The mean of the clipped ``x / s - m_z``: the cross moment with the constant response 1 (bound 1)."""
    sums = fused_sums(binned, kwargs["row_norm"], m_z)
    if sums is not None:
        return release_cross_moment(sums, None, response_bound=1.0, center=m_z, rng=rng, **args, **kwargs)
    source = scaled_rows(X, s, True)
    Z, ones = source if isinstance(source, tuple) else (source, None)  # else a stream of (Z, 1) chunks
    return release_cross_moment(Z, ones, response_bound=1.0, center=m_z, rng=rng, **args, **kwargs)
