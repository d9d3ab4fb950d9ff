"""The small-table grid rule for the one-off bound draws of regression and model selection.

:func:`~dpmoments.moments.auto_release.choose_bounds` (``PrivateIRLS``'s row and response bounds,
``PrivateModelSelection``'s entry and response bounds) draws each bound once by the exponential mechanism over the
``G + 1`` bins of the public grid, aimed at a quantile lowered to leave the draw's rank error above it, never
below the 0.75-quantile; it runs (:func:`~dpmoments.moments.private_bounds.check_margin`) where
``epsilon_draw * n / 8 >= ln(G + 1) + 5``. On the default grid (1000 steps) ``ln(G + 1)`` is 6.9 of the 11.9
that sets it: engel (235 rows) at epsilon = 4 gives regression's draws 0.35 each (zCDP shares of 10% of rho, two
draws) against 0.41 needed, model selection's 0.2 (pure shares). The covariance family's rule
(:mod:`~dpmoments.moments.small_grid`) applies here too: where the default grid refuses a draw, the grid is the
finest of :data:`COARSE_STEPS` (the covariance family's too) on which it runs, over the same range, and the
coarsest where none does (the refusal then names the epsilon from which it runs there). The shares are not
widened: the accounting of every draw is the one planned.

Privacy. A function of the public ``n`` (replace-one and zero-out; under add-remove ``n`` is private and nothing
is decided from it), the draw's epsilon and the grid only, made before any draw: the draw keeps its sensitivity 1
and its guarantee, and its bound is a released grid edge as before. What it costs is resolution: a bound up to one
step above its target (39% on 100 steps, a factor 3 on 30), so fewer clipped rows and more noise, which every
interval reads from the bound drawn. A grid the user gave is kept; tables that run on the default grid are not
touched (their seeded releases are the same).
"""

import dataclasses

from ..exceptions import TooFewRowsError
from .private_bounds import check_margin, target_rank
from .quantile_grid import SearchRange

__all__ = ["COARSE_STEPS", "draw_grid", "draw_grid_note"]

COARSE_STEPS = (300, 100, 30)  # each rung's ln(G + 1) + 5: 10.7, 9.6, 8.4 against 11.9 on the default 1000 steps


def draw_grid(n, search, epsilon_each, quantile, floor_of, lowest):
    """``search``, or the coarser grid its draws run on: where ``n`` is public (not None), ``search`` is the
    default grid and a draw at ``epsilon_each`` aimed at ``quantile`` is refused on it.

    ``floor_of(grid)``: the rows the target leaves above it on ``grid`` (the draw's rank error there)."""
    if n is None or search != SearchRange() or _runs(n, search, epsilon_each, quantile, floor_of, lowest):
        return search
    for steps in COARSE_STEPS:
        coarse = dataclasses.replace(search, steps=steps)
        if _runs(n, coarse, epsilon_each, quantile, floor_of, lowest):
            break
    return coarse


def _runs(n, grid, epsilon_each, quantile, floor_of, lowest):
    """Whether :func:`~dpmoments.moments.private_bounds.select_quantiles` would run the draw (public values only)."""
    floor = floor_of(grid)
    best = (1.0 - lowest) * n if floor and quantile >= lowest else None
    try:
        check_margin(n, target_rank(n, quantile, None, floor, lowest), epsilon_each, grid.steps + 1, "",
                     best_margin=best)
        return True
    except TooFewRowsError:
        return False


def draw_grid_note(given, taken):
    """The basis a refusal names, and the release's record, of a coarser grid (public values only), or ``""``."""
    if taken.steps == given.steps:
        return ""
    return f" on a grid of {taken.steps} steps instead of {given.steps}"
