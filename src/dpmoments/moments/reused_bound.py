"""One draw for two roles: a small table's private location bound reused as its row bound.

A private centre with a private row bound makes two exponential-mechanism draws at least: the location's bound on
``||x - c_0||`` (where to clip the rows for the first mean) and the row bound on ``||x - c||`` about the centre that
mean gives. Each must land among the rows (:func:`~dpmoments.moments.private_bounds.check_margin`:
``epsilon_draw * n / 4 >= ln(bins) + 5``), so at 150 to 180 rows and epsilon = 1 the two need more than
:data:`~dpmoments.moments.choice_budget.CHOICES_CAP` of the budget even on the coarsest grid of
:mod:`~dpmoments.moments.small_grid` (iris: 2 x 26% of rho on 30 steps), where one draw needs 26% (34% on 100
steps). Where the two draws are refused that way, and only there, the plan makes one: the last location step's drawn
bound ``R_k`` is also the row bound about the centre (:func:`one_draw_grid` decides it, from the public ``n``, the
shares and the grid only, before any draw; tables that run with two draws are not touched). Its share goes to the
second moment, except the noisy count of the rows beyond ``R_k`` about the centre (the bound option's diagnostic
share, :func:`reused_row_bound`), which the clipping error budget reads as before. With one location step (these
tables) that step's mean, clipped at ``R_k`` about where it clipped, is the centre and takes all of
``CenterBudget.mean``, as with a public bound: a final mean would clip at that same bound (at twice it, the rule of a
drawn row bound, its noise made the covariance of iris and wine 1.3-1.5 times wider and PCA's 1.1-1.2 times).

Privacy. ``R_k`` is a released value (a grid edge drawn by the exponential mechanism on a histogram of ``||x - c_k||``,
sensitivity 1 under replace-one, zero-out and add-remove) and the centre is post-processing of released means, so
clipping ``||x - c|| <= R_k`` is a fixed map of each row given released values: the second moment's sensitivity is
``sqrt(2) R_k^2 / n`` under replace-one (the zero row under zero-out, a noisy count under add-remove, as for a drawn
bound), a mean's ``2 R / n``. Nothing is drawn twice and nothing is paid twice: the report lists the
location's draw once (its part ``location``), no ``row_norm`` part, and the count's part ``clipped rows``; the parts'
shares still add up to the whole, so the composed guarantee is the (epsilon, delta) asked for. Under add-remove
``n`` is private and nothing is decided from it: the two draws are made and warned about as before.

What it costs: ``R_k`` bounds the rows' distance from where the last step clipped, not from the centre. On a table
about the origin the two are the same; on one far from it (iris: rows about 8 from the origin, about 2 from their
mean) the bound clips no row and its noise is that of the larger bound (``R_k^2``), which every interval reads: wider,
with no clipping bias to count.
"""

from .small_grid import coarser_grid, grid_runs

__all__ = ["REUSED_NOTE", "one_draw_grid", "reused_note", "reused_row_bound"]

REUSED_NOTE = "the row bound is the private location's drawn bound"  # how the release says so (the summary prints it)


def one_draw_grid(n, budget, shares, bounds, coarse, plan_at, plan_at_one):
    """``(bounds, plan_at)`` for the draws: ``coarse`` and ``plan_at`` where the two draws run on it; else the
    finest grid of :func:`~dpmoments.moments.small_grid.coarser_grid` on which the location's draws alone run (or
    the coarsest, refused there by the caller's check), with ``plan_at_one`` and ``budget.one_draw`` set.

    ``plan_at(grid)`` / ``plan_at_one(grid)``: the draw plans (``shares -> plan``) with and without the row bound's
    draw. ``shares`` loses the row bound's draw in place (the bound option keeps its diagnostic share, for the noisy
    count at the reused bound). Public values only: ``n``, the shares, the grids."""
    if n is None or budget.exact or grid_runs(n, budget, shares, plan_at(coarse)):
        return coarse, plan_at
    budget.coarsened, budget.one_draw = None, True
    budget.draw_freed = shares["bound"] * (1.0 - bounds.diagnostic)  # the widening note counts it as given
    shares["bound"] -= budget.draw_freed
    return coarser_grid(n, budget, shares, bounds, plan_at_one), plan_at_one


def reused_row_bound(binned, budget, share, rng):
    """``(R, (noisy count, share) or None)``: the last location draw's bound and, from ``share``, the noisy count of
    the rows beyond it about the centre that ``binned`` (:func:`~dpmoments.moments.private_passes.bound_pass`) binned.

    The count has sensitivity 1 under every relation (a row is beyond the bound or not)."""
    from .private_bounds import noisy_clipped_count

    R = budget.reused_bound
    if share <= 0 or budget.exact:
        return R, None
    count = noisy_clipped_count(binned.bin_counts(), binned.edges, R, rng=rng, **budget.count(share))
    return R, (count, share)


def reused_note(budget):
    """The release's record that one draw served both roles (public values only), or nothing."""
    if not getattr(budget, "one_draw", False):
        return ()
    return (f"{REUSED_NOTE} (one draw instead of two: too few rows for both; it bounds the rows' distance from "
            "where the location clipped, so it may clip none and add more noise)",)
