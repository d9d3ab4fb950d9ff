"""The mixture's tensor moments with the row bound chosen privately (``row_norm="auto"`` of the tensor estimator).

One private 0.95-quantile of the row norms (lowered at small ``n`` to leave the draw's rank error
above it, as :func:`~dpmoments.moments.auto_release.choose_bounds`), then the two moment releases at
that bound, the whole composed in zCDP (shares of rho). Where every column has a public range and
``n`` is too small for a draw, the ranges' box is the bound, free; otherwise a too-small public
``n`` is refused saying from which epsilon it runs.
"""

import dataclasses

import numpy as np

from .._rng import spawn
from .._validation import check_vector
from ..exceptions import TooFewRowsError
from .auto_release import as_bound_budget
from .private_bounds import SearchRange
from .ranged_release import GRID_DECADES, GRID_STEPS
from .tensor_moments import release_mog_moments

__all__ = ["release_mog_moments_auto", "with_note"]


def release_mog_moments_auto(X, *, sigma2, center, bound_budget, box, rng, epsilon, delta, budget, neighbours,
                             calibration, count_share):
    """MOG moments at a private row bound drawn from stream 3 of ``rng`` (the releases take streams 0 and 1).

    ``box``: the ranges' bound about the centre when every column is ranged (the search grid ends at
    it), else ``None``. Returns the :class:`~dpmoments.moments.tensor_moments.TensorMoments`, whose
    guarantee is the composed total, and the budget's parts (none when the box was taken, free).
    """
    # Loaded when a bound is drawn: a public bound imports none of the private passes.
    from ..mechanisms.laws import GAUSSIAN
    from .auto_release import FIXED_LOWEST, MARGIN_T, check_auto_source, public_n_what, rank_error
    from .choice_budget import BOUND_OPTION, PrivateChoiceBudget
    from .private_bounds import quantile_pass, select_quantiles
    from .release import count_fields

    common = dict(epsilon=epsilon, delta=delta, budget=budget, neighbours=neighbours, calibration=calibration,
                  rng=rng, count_share=count_share)
    check_auto_source(X)
    bounds = as_bound_budget(bound_budget)
    if box is not None and bounds.search == SearchRange():  # every column ranged: the grid ends at the box
        bounds = dataclasses.replace(bounds, search=SearchRange(box * 10.0 ** -GRID_DECADES, box, GRID_STEPS))
    choices = PrivateChoiceBudget(epsilon, delta, GAUSSIAN, calibration, neighbours)
    each, guarantee = choices.draws(bounds.share)
    center_vector = None if center is None else check_vector(center, "center")
    (bins,), _ = quantile_pass(X, [("row-norm", center_vector, None)], search=bounds.search)
    q = bounds.fixed_quantile()
    floor = rank_error(each, bounds.search, t=MARGIN_T) if np.isfinite(each) else None
    try:
        with choices.refusal(bounds.share, BOUND_OPTION):
            R = float(select_quantiles(bins, bounds.search.edges(), epsilon_each=each, quantile=q,
                                       rng=spawn(rng, 4)[3], what=public_n_what(neighbours, "row_norm='auto'"),
                                       min_clipped=floor, lowest=FIXED_LOWEST)[0][0])
    except TooFewRowsError:  # decided from the public n: every column ranged, the box's bound is free
        if box is None:
            raise
        return with_note(release_mog_moments(X, sigma2=sigma2, row_norm=box, center=center, **common),
                         "row bound: the ranges' box about the centre, free (too few rows to draw a tighter one "
                         "privately)"), ()
    target = f"{q:g}-quantile" + ("" if floor is None else f", lowered if needed to leave {floor:.3g} rows above it")
    choices.record("row_norm", guarantee, bounds.share, (1, each), row_norm=R, target=target)
    main = choices.release(1.0 - bounds.share)
    moments = release_mog_moments(X, sigma2=sigma2, row_norm=R, center=center, **{**common, **main})
    choices.record("moments", moments.guarantee, 1.0 - bounds.share, **count_fields(moments.second))
    return dataclasses.replace(moments, guarantee=choices.total()), tuple(choices.parts)


def with_note(moments, line):
    """The two releases with ``line`` added to their post-processing notes (a note: no numbers change)."""
    return dataclasses.replace(moments, **{part: dataclasses.replace(
        getattr(moments, part), postprocessing=getattr(moments, part).postprocessing + (line,))
        for part in ("second", "third")})
