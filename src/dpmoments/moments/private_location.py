"""Where the rows are clipped about, chosen privately: the refined location and the private mean.

The location's steps and the final mean of :mod:`dpmoments.moments.private_release` (its module docstring says
how they fit with the scales, the row bound and the second moment, and how their shares are accounted). Every
step is an exponential-mechanism draw of a bound (sensitivity 1) and a mean of the rows clipped at it (L2
sensitivity ``2R/n`` under replace-one; a noisy count and sums under add-remove), each from the share it is given.
"""

import numpy as np

from .._rng import spawn
from ..data import as_source
from .choice_budget import (ONE_STEP_MEAN, REFINE_MEAN, check_draws, draw_plan, public_rows, refinement_steps,
                            upper_share, widen_choices)
from .clipping_bias import OUTER_FACTOR
from .mean_overflow import OVERFLOW_FRACTION, mean_bound, record_overflow
from .private_bounds import quantile_pass
from .private_passes import bound_pass, clipped_mean, column_medians, column_scales, row_bound_draw
from .release import release_part
from .reused_bound import one_draw_grid
from .scale_floors import at_resolution, drawn_columns, median_resolution
from .scale_guard import guard_scales
from .small_grid import coarser_grid
from .statistics import CROSS

__all__ = ["refined_location", "private_mean", "public_n", "SETTLED"]

SETTLED = 0.1  # a step that moved the centre by at most this share of its bound ends the refinement (_settled)


def refined_location(X, budget, shares, main, relation, scale, auto, bounds, rng, known=None):
    """Where to clip, chosen privately and refined: ``(location, (private medians, coarse scales) or None)``.

    Each step's error is a small fraction of the last one's.

    The start is the origin (or, with ``scale="private"``, the private column
    medians, whose grid error is ~3% of their magnitude). Each step draws a
    private bound on ``||x - c||`` and moves ``c`` by the mean of the rows'
    offsets from it clipped at that bound (CoinPress's refinement): its noise
    is proportional to the bound, so data far from the origin (columns around
    1e6, say) lose their offset's error in a few steps instead of carrying it
    into the covariance as ``(mu - c)(mu - c)^T``. The draws share
    ``CenterBudget.location``; the means take ``sum(REFINE_MEAN)`` of ``CenterBudget.mean``, in
    ``REFINE_MEAN``'s proportions over the steps planned (one step: ``ONE_STEP_MEAN`` of it). A settled step
    ends it.

    Returns ``(c, coarse, binned, unspent)``: the centre; ``(private medians, coarse scales, upper)`` where
    they were drawn, else None (``upper``: the share the final scales' upper quartiles take, where the final scales
    are about the medians, else 0); the :class:`~dpmoments.moments.binned_sums.BinnedSums` about ``c``
    where the settled step's pass can serve the row bound and final mean (without scales), else
    None; the share the second moment gains: the draws not made, less what a small table's choices took
    beyond their given shares (:func:`~dpmoments.moments.choice_budget.widen_choices`) and the share the upper
    quartiles of the scales about the medians take (:func:`~dpmoments.moments.choice_budget.upper_share`).
    """
    d = as_source(X).n_features
    n, steps, bounds, first, taken = _planned_draws(X, d, budget, shares, scale, auto, bounds, known)
    draw_share = shares["location"] / (steps + 2 * (scale is not None))
    gens = spawn(rng, 2 * steps + 2)
    # the scales about the medians (the coarse ones; with no step, the final ones) take their upper quartiles'
    # share from the second moment: returned as a negative unspent share
    upper = 0.0 if scale is None else upper_share(n, budget, int(drawn_columns(known, d).sum()), bounds.search)
    if steps == 0:  # few rows: the column medians alone, from the whole share (as before the refinement)
        medians = column_medians(X, budget, shares["location"], bounds.search, rng, first)
        return medians, (None if scale is None else (medians, None, upper)), None, -upper - taken
    c, s = np.zeros(d), np.ones(d)
    if scale is not None:  # refine in units of coarse scales, so that no column's noise is set by another's
        c = column_medians(X, budget, draw_share, bounds.search, gens[-1], first)
        medians, first = c, None
        width = median_resolution(c, bounds.search)
        s = guard_scales(column_scales(X, c, budget, draw_share, bounds.search, gens[-2], shares["location"],
                                       "coarse column scales", known, tie_width=width, upper=upper),
                         bounds.search.low, "coarse column scales", about=(c, width, drawn_columns(known, d)))
        s = at_resolution(s, width, known)
    drawn_bound = auto and not budget.one_draw  # one draw for both: the last step's bound is the row bound
    for k, fraction in enumerate(_step_fractions(steps, drawn_bound)):
        label = "location" if k == 0 and scale is None else f"location refinement {k + (scale is not None)}"
        mean_share, s_k = shares["mean"] * fraction, None if scale is None else s
        binned = first if k == 0 and first is not None else bound_pass(X, c, s_k, bounds, "mean")
        R_k, _ = row_bound_draw(X, c, s_k, budget, draw_share, bounds,
                            (CROSS, *main[1:3], mean_share, main[4]), gens[2 * k], label, diagnostic=False,
                            option_share=shares["location"], binned=binned)
        budget.reused_bound = R_k if budget.one_draw else None  # the last step's: the row bound too
        mean = clipped_mean(X, s_k, c / s, budget.release(mean_share), gens[2 * k + 1],
                     dict(row_norm=R_k, **relation), binned)
        name = "mean" if _step_is_centre(steps, drawn_bound) else f"{label} mean"
        settled = steps > 1 and _settled(mean.cross_moment, R_k)  # c is already where the rows are: stop here
        budget.parts.append(release_part(name, mean, mean_share, noise_scale=mean.noise_scale,
                                         **({"settled": True} if settled else {}),
                                         **(_mean_clipping(budget, mean, R_k, drawn_by=label) if name == "mean"
                                            else {})))
        if settled:
            unspent = draw_share * (steps - k - 1) - upper - taken
            if scale is None:  # the final bound and mean come from this pass's counts and sums about c
                return c, None, binned, unspent
            return c + mean.cross_moment * s, (medians, s, 0.0), None, unspent
        c = c + mean.cross_moment * s
    return c, ((medians, s, 0.0) if scale is not None else None), None, -upper - taken


def _planned_draws(X, d, budget, shares, scale, auto, bounds, known):
    """The first pass, the public ``n`` and every draw judged before any is made: ``(n, steps, bounds, first pass,
    share the choices took beyond their given shares)``; ``shares`` widened in place (the bound's pass reads its
    share from it); refused here where even the small-table rules cannot run the draws."""
    # The first pass (the bound about the origin and its mean; or the column medians) also counts the rows
    first = _first_pass(X, d, scale, bounds)
    counted = None if first is None else first.n if scale is None else int(first.counts[0].sum())
    n = public_n(X, budget, counted)

    given = sum(shares.values())

    def steps_on(grid):  # the refinement steps planned on a grid, at the location's share as given
        return refinement_steps(n, d, budget, shares["location"], scale, grid.search)

    def plan_on(grid, with_bound):  # the draws on a grid, as a function of the shares
        steps = steps_on(grid)
        return lambda sh: draw_plan(d, budget, sh, scale, with_bound, steps, grid)

    def plan_at(grid):
        return plan_on(grid, auto)

    # a small table: a coarser public grid (not with ranges: their refusal falls back to the ranges alone, free)
    coarse = bounds if known is not None else coarser_grid(n, budget, shares, bounds, plan_at)
    if auto and scale is None and known is None:  # two draws refused even there: one, its bound the row bound's too
        coarse, plan_at = one_draw_grid(n, budget, shares, bounds, coarse, plan_at,
                                        lambda grid: plan_on(grid, False))
    if coarse is not bounds:  # the first pass again, on that grid (a small table: cheap)
        bounds, first = coarse, _first_pass(X, d, scale, coarse)
    steps, plan_of = steps_on(bounds), plan_at(bounds)
    shares.update(widen_choices(n, budget, shares, plan_of))  # a small table: the choices take more, the moment less
    check_draws(n, budget, plan_of(shares))
    return n, steps, bounds, first, sum(shares.values()) - given


def _first_pass(X, d, scale, bounds):
    """The first pass on ``bounds``' grid: the norms about the origin and their mean, or the columns' counts."""
    if scale is None:
        return bound_pass(X, np.zeros(d), None, bounds, "mean")
    (first,), _ = quantile_pass(X, [("column", None, None)], search=bounds.search)
    return first


def _step_is_centre(steps, auto):
    """One step with a public bound (or the step's own, reused: reused_bound.py): its mean is the centre (a final
    mean would clip at that same bound)."""
    return steps == 1 and not auto


def _step_fractions(steps, auto):
    """Each refinement step's share of ``CenterBudget.mean``: ``REFINE_MEAN``'s first ``steps`` in proportion,
    ``sum(REFINE_MEAN)`` in all; one step ``ONE_STEP_MEAN`` (all of it where that step's mean is the centre)."""
    taken = REFINE_MEAN[:steps]
    total = sum(REFINE_MEAN) if steps > 1 else (1.0 if _step_is_centre(steps, auto) else ONE_STEP_MEAN)
    return [f * total / sum(taken) for f in taken]


def _settled(step, bound):
    """Whether a refinement step moved the centre by at most ``SETTLED`` of the bound it clipped at (released values).

    A centre off by ``a`` from the rows' mean moves by about ``a`` (up to
    the bound, where the clipped rows all pull one way); once ``a`` is a
    tenth of the bound, the bound about the centre is within half a percent
    of the one about the mean (the offset adds in quadrature), and further
    steps would not narrow it.
    """
    return float(np.linalg.norm(step)) <= SETTLED * float(bound)


def public_n(X, budget, counted=None):
    """``n`` where it is public (replace-one, zero-out; counted by a pass for a stream), else ``None``."""
    return None if budget.neighbours == "add-remove" or budget.exact else public_rows(X, counted)


def private_mean(X, s, m_z, R, budget, share, rng, relation, binned=None):
    """The private mean of the standardised rows: ``m_z`` plus the mean of their clipped offsets from it; after one
    location step, with a private bound (the norms about ``m_z`` binned, ``binned``), clipped at twice ``R`` and
    ``OVERFLOW_FRACTION`` of its share releases how far the rows it clipped lay beyond that
    (:mod:`~dpmoments.moments.mean_overflow`), for the centre's error budget."""
    small = binned is not None and _one_location_step(budget)  # a public bound is the user's: kept
    overflow = share * OVERFLOW_FRACTION if small and not budget.exact else 0.0
    R_m = mean_bound(R, binned.edges) if small else R
    mean = clipped_mean(X, s, m_z, budget.release(share - overflow), rng, dict(row_norm=R_m, **relation), binned)
    reused = {"row_bound_reused": True} if budget.reused_bound is not None else {}  # counted, not drawn
    budget.parts.append(release_part("mean", mean, share - overflow, noise_scale=mean.noise_scale,
                                     **_mean_clipping(budget, mean, R, R_m), clipped_rows_counted=True, **reused))
    if overflow:
        record_overflow(budget, binned, R_m, OUTER_FACTOR * R, mean.cross_moment, overflow, spawn(rng, 1)[0])
    return m_z + mean.cross_moment


def _one_location_step(budget):
    """Whether the location took one step (few rows for more; its mean is the only one so far): there the row bound
    clips a third of the rows, and a mean clipped at it would be pulled one way by all of them. On more rows the
    bound clips few, the location has settled, and the final mean keeps the row bound (mean_overflow.py)."""
    return [p.label for p in budget.parts if p.label.endswith("mean")] == ["location mean"]


def _mean_clipping(budget, mean, R, R_m=None, drawn_by="row_norm"):
    """What the centre's error budget reads of its own clipping (estimators/centre_bias.py): the bound ``R`` the
    final mean clipped at, its step ``offset`` (released: the centre less where it clipped about, standardised
    units) and, where the draw of ``R`` gives one, the most rows beyond it (``clipped_rows_at_most``). Released
    and public values only. The final mean (:func:`private_mean`) also says that the ``"clipped rows"`` part
    counts the rows it clipped (``clipped_rows_counted``): the row bound's count is about the same centre.
    ``drawn_by``: the label of the part that drew ``R`` about the mean's own centre (the row bound's; a location
    step's where its mean is the centre); a bound reused from a draw about another centre gives none."""
    drawn = next((p.released for p in reversed(budget.parts)  # the draw of R about the mean's own centre
                  if p.label == drawn_by and (p.released or {}).get("row_norm") == R), {})
    out = {"row_norm": float(R if R_m is None else R_m), "offset": [float(v) for v in np.ravel(mean.cross_moment)]}
    if "clipped_rows_at_most" in drawn:
        out["clipped_rows_at_most"] = drawn["clipped_rows_at_most"]
    return out
