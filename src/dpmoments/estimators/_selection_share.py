"""Model selection's private bounds on a small table: the least share of epsilon at which their draws run.

``PrivateModelSelection`` draws its entry bound and its response bound (two exponential-mechanism draws, pure
shares of ``bound_budget``, 10% by default) at a lowered 0.95-quantile, never below the 0.75-quantile
(:func:`~dpmoments.moments.auto_release.choose_bounds`). Such a draw runs where
``epsilon_draw * n / 8 >= ln(G + 1) + 5`` (:func:`~dpmoments.moments.private_bounds.check_margin`): at about 200
rows and epsilon 1, 10% split in two is a tenth of what even the coarsest grid (30 steps) needs, and the command
was refused below epsilon 6. Where the share given is refused on every grid of
:data:`~dpmoments.moments.draw_grid.COARSE_STEPS`, the bounds take the least share (at most
:data:`SELECTION_BOUNDS_CAP` of epsilon) at which both draws run on the finest grid that share reaches, and the
selection the rest; where even that cap is not enough the draws are refused at the cap, and the refusal says from
which epsilon they run there (the command line adds every column's ``--ranges``, which draws nothing).

Privacy. A function of the public ``n`` (model selection is replace-one with ``n`` public), epsilon, the number of
draws and the grid only, decided before any draw: every draw keeps its sensitivity 1 and its guarantee, the parts
still add up to epsilon (basic composition), and the report's ``budget_parts`` list the shares taken. What it
costs is the selection's share of epsilon, read by its noise scale and margin (a choice within the noise is named
"noise", not a model). A share or grid that runs as given is kept: tables that ran before keep their releases.
"""

import math

from ..moments.draw_grid import COARSE_STEPS
from ..moments.auto_release import FIXED_LOWEST
from ..moments.private_bounds import least_epsilon_each
from ..moments.quantile_grid import SearchRange

__all__ = ["SELECTION_BOUNDS_CAP", "selection_bound_share", "widened_basis"]

# The most of epsilon the two bound draws may take: the selection keeps at least 20% (and R its own 10%); at
# 200-235 rows and epsilon 1 the draws need 0.57-0.66 of it on 30 steps.
SELECTION_BOUNDS_CAP = 0.7


def _least_each(n, steps):
    """The least epsilon per draw that runs on a grid of ``steps`` (check_margin at the lowest target)."""
    return least_epsilon_each((1.0 - FIXED_LOWEST) * n, steps + 1)


def selection_bound_share(n, epsilon, share, draws, search):
    """``share``, or the least share up to :data:`SELECTION_BOUNDS_CAP` whose ``draws`` pure draws run.

    Only where ``n`` is public, epsilon finite, the grid the default one and ``share`` refused on every grid of
    the small-table ladder; the finest grid that a share within the cap runs on is the one taken (its bound lies
    nearer its target); where none does, the cap (the draws are then refused, naming the epsilon they run from).
    """
    if n is None or draws == 0 or not math.isfinite(epsilon) or search != SearchRange():
        return share
    grids = (search.steps,) + COARSE_STEPS
    if share * epsilon / draws >= _least_each(n, grids[-1]):
        return share  # runs as given (on a coarser grid, maybe: draw_grid's rule)
    for steps in grids:
        needed = draws * _least_each(n, steps) / epsilon * (1.0 + 1e-9)
        if needed <= SELECTION_BOUNDS_CAP:
            return max(share, needed)
    return max(share, SELECTION_BOUNDS_CAP)


def widened_basis(given, taken):
    """What a refusal's smallest epsilon assumes: the shares as given, or as this rule widened them."""
    return "the same shares" if taken == given else f"the bounds taking {taken:.2g} of epsilon"

