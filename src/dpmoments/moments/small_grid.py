"""A coarser public grid for the private choices of a table too small for them on the default one.

An exponential-mechanism draw over ``G + 1`` bins, aimed at a rank ``n / 2`` rows from either end, runs (lands
among the rows with probability ``1 - e^-5``, :func:`~dpmoments.moments.private_bounds.check_margin`) from epsilon
``4 (ln(G + 1) + 5) / n`` per draw. On the default grid (1000 steps over 1e-6 to 1e8) ``ln(G + 1)`` is 6.9 of the
11.9 that sets it: at 150 to 220 rows two draws (the location's and the row bound's) needed 0.7 to 1.5 of the
budget at epsilon = 1, more than :data:`~dpmoments.moments.choice_budget.CHOICES_CAP` lets the choices take. On
100 steps (a bound within 39% above the quantile it covers) a draw needs 0.65 of that budget share, on 30 steps
(within a factor 3.0) half: where the draws on the default grid are refused even with their shares widened
(:func:`~dpmoments.moments.choice_budget.widen_choices`), the grid is the finest of :data:`COARSE_STEPS` on which
they run, over the same range, and the coarsest where none does (its refusal then names the epsilon at which that
one runs). A function of the public ``n``, the shares and the grid only: the draws keep their sensitivity 1 and
their guarantee, the bound is a released grid edge as before, and it costs resolution only (a bound up to one
step above its target: more noise, fewer clipped rows; every interval reads the bound drawn). A grid the user gave
is kept; tables that run on the default grid are not touched.
"""

import dataclasses

from ..exceptions import TooFewRowsError
from .choice_budget import check_draws, widen_choices
from .draw_grid import COARSE_STEPS  # one ladder of grids for every private choice (regression's bounds too)
from .quantile_grid import SearchRange

__all__ = ["COARSE_STEPS", "GRID_NOTE", "coarser_grid", "grid_note", "grid_runs", "on_grid"]

GRID_NOTE = "the private choices were drawn on a grid of"  # how the release says so (the summary prints it)


def coarser_grid(n, budget, shares, bounds, plan_at):
    """``bounds``, or a copy on the finest grid of :data:`COARSE_STEPS` on which every draw runs.

    ``plan_at(bounds)`` is the draw plan (``shares -> plan``, :func:`~dpmoments.moments.choice_budget.draw_plan`)
    on that grid. Only where ``n`` is public, the grid is the default one and its draws are refused even with their
    shares widened; the coarsest rung where none runs. Sets ``budget.coarsened`` to ``(steps given, steps taken)``.
    """
    if n is None or budget.exact or bounds.search != SearchRange() or grid_runs(n, budget, shares, plan_at(bounds)):
        return bounds
    for steps in COARSE_STEPS:
        coarse = dataclasses.replace(bounds, search=SearchRange(steps=steps))
        if grid_runs(n, budget, shares, plan_at(coarse)):
            break
    budget.coarsened = (bounds.search.steps, coarse.search.steps)
    return coarse


def on_grid(bounds, budget):
    """``bounds`` on the grid the choices were drawn on (:func:`coarser_grid`'s, where it made one coarser)."""
    if getattr(budget, "coarsened", None) is None:
        return bounds
    return dataclasses.replace(bounds, search=SearchRange(steps=budget.coarsened[1]))


def grid_note(budget):
    """The release's record of a coarser grid (public values only), or nothing."""
    if getattr(budget, "coarsened", None) is None:
        return ()
    given, taken = budget.coarsened
    return (f"{GRID_NOTE} {taken} steps instead of {given} (too few rows for their "
            "draws on the finer one; a bound lies within one step above its target)",)


def grid_runs(n, budget, shares, plan_of):
    """Whether every draw of ``plan_of`` runs at ``shares`` widened (no draw made, nothing read but public values)."""
    kept = budget.widened
    try:
        check_draws(n, budget, plan_of(widen_choices(n, budget, dict(shares), plan_of)))
        return True
    except TooFewRowsError:
        return False
    finally:
        budget.widened = kept
