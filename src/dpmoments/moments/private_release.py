r"""The second moment an estimator releases, with its centre, column scales and row bound chosen privately.

Passes over the data, each paid from a stated share of the budget:

1. **location** (``center="private"`` without a public prior,
   ``CenterBudget.location`` for the draws, part of ``CenterBudget.mean``
   for the means): from the origin (with ``scale="private"``: the private
   column medians and coarse scales about them), up to four refinement steps,
   each a private bound on ``||x - c||`` and the mean clipped about ``c`` at
   it (:mod:`~dpmoments.moments.private_location`), until a step finds ``c`` settled (``_settled``:
   it moved ``c`` by at most a tenth of its bound); the row bound of step 3
   (or the public ``row_norm``) then applies about the refined ``c``;
2. **scales** (``scale="private"``): per column, a private median of the
   ``|x_j - m_j|`` that are not 0 (:mod:`dpmoments.moments.private_bounds`),
   half of ``bound_budget``, never below ``COARSE_FLOOR`` times the column's
   coarse scale of step 1 (post-processing: a 0/1 column keeps the scale of
   its gap, not of its share of ones); about the private medians (the coarse
   scales, and the scales where no step refines) the rows within a median's
   grid bin count as tied to it, and no scale is below that bin's width
   (:func:`~dpmoments.moments.scale_floors.median_resolution`); where the public
   ``n`` lets it run, each is raised to half a private 0.75-quantile of the same
   distances, paid from the second moment's share
   (:func:`~dpmoments.moments.choice_budget.upper_share`: a median in a gap);
3. **row bound** (``row_norm="auto"``): a private quantile of
   ``||(x - m) / s||`` and the noisy count of rows beyond it (the rest of
   ``bound_budget``, :mod:`dpmoments.moments.auto_release`);
4. **mean** (``center="private"``): the mean of the clipped ``(x - m) / s``
   (the rest of ``CenterBudget.mean``), clipped at the row bound; with a
   single refinement step (few rows) and a private row bound, from half of
   the share, clipped at twice the bound, and beside it how far the rows it
   clipped lay beyond that (:mod:`~dpmoments.moments.mean_overflow`,
   ``OVERFLOW_FRACTION`` of its share), from the row bound's pass; with a
   single step and a public bound, that step's mean is the centre;
5. **second moment** of the clipped ``(x - c) / s`` about that private mean,
   with the rest (and the draws' shares of the steps not taken); its pass also
   sums what clipping removed (:class:`~dpmoments.moments.clipping_bias.ExcessTap`).

A pass serves several of these: each step's pass counts the norms about ``c``
and sums the rows per bin (:mod:`~dpmoments.moments.binned_sums`), so the
step's bound and mean come from it, and the settled step's pass also gives the
row bound (3) and the mean (4) without scales. Data about the origin are read
twice in all (the first step, which settles at once, and the release); data a
few spreads off it three times.

The release is of the standardised rows ``z = (x - c) / s``; it records
``center = c`` and ``column_scale = s`` (``None`` without scaling), and the
estimators map their estimate back to the original units (post-processing).

Refusals
--------
Where ``n`` is public, every draw a private location leads to is checked
against it before the first is made: a refusal names the
epsilon at which all of them run, not only the first one drawn (``check_draws``).

Accounting
----------
A share is fixed, from earlier outputs only, before its part runs, and the
shares add up to the whole on every path (the steps not taken leave theirs to
the final mean and the second moment): composition with a privacy filter
(Rogers et al. 2016 for pure DP; Feldman & Zrnic 2021 for Renyi DP, hence
zCDP) gives the total whatever the number of steps taken.
With Gaussian noise the shares are shares of ``rho``, the largest zCDP
parameter whose conversion fits the caller's ``(epsilon, delta)``: each
exponential-mechanism draw is ``e^2/8``-zCDP, each Gaussian release
``rho_i``-zCDP (``calibration="zcdp"``), the noisy count Gaussian; the rhos
add and the total is reported converted back at ``delta``. Splitting
``(epsilon, delta)`` into parts and adding them up instead would cost more
noise as soon as there are three parts or more (e.g. 6.45 against 5.62 units
of sigma for a second moment given 65% of ``(1, 1e-6)``), and ``d`` median
draws would get ``epsilon/d`` each. With Laplace noise everything is pure:
the shares are shares of ``epsilon`` and add up.
"""

import dataclasses
import math
import warnings

import numpy as np

from .._rng import spawn
from .._validation import check_option
from ..exceptions import BoundWarning, PrivacyLeakWarning
from ..data import as_source
from ..data.dask_spill import parsed_once
from ..mechanisms import laws
from .releases import release_public_second_moment
from .auto_release import (as_bound_budget, check_auto_privacy, check_auto_source, is_auto, rank_error, warn_clipped,
                           warn_unreliable)
from .clipping_bias import ExcessTap, record_clipping_excess, wants_loss_matrix
from .counts import COUNT_SHARE, check_count_share, planned_guarantee, warn_if_delta_large
from .choice_budget import BOUND_OPTION, LOCATION_OPTION, SCALE_SHARE, PrivateChoiceBudget
from .statistics import SECOND
from .release import calibrated_as, randomness_of, release_part
from ..privacy import NEIGHBOURS, ApproxDP, PureDP, Uncertified
from .scale_guard import guard_scales, named_columns
from .scale_floors import at_resolution, drawn_columns, median_resolution, scale_floor
from .private_location import private_mean, refined_location
from .small_grid import grid_note, on_grid
from .reused_bound import reused_note, reused_row_bound
from .private_passes import bound_pass, column_scales, fused_sums, row_bound_draw, scaled_rows

__all__ = ["private_second_moment", "needs_private_choices", "planned_second_moment_guarantee"]

# What a refusal for too few rows adds: with every column's range the estimators draw nothing that needs the rows
# (docs/bounds.md, "Too few rows for those draws"), so the table runs at any epsilon, its noise marked.
RANGES_REMEDY = ", or every column's range (ranges=), with which no draw needs these rows"


def needs_private_choices(row_norm, center, scale):
    return is_auto(row_norm) or isinstance(center, str) or scale is not None


def planned_second_moment_guarantee(epsilon, delta, *, mechanism, calibration, neighbours, count_share, row_norm,
                                    center, scale):
    """The guarantee a second moment will carry, known before touching the data: the one
    :func:`private_second_moment` composes (private centre, scales or bound) or
    :func:`~dpmoments.moments.release_second_moment` calibrates (public values).
    """
    if math.isinf(epsilon):
        return PureDP(math.inf)
    private = needs_private_choices(row_norm, center, scale)
    mechanism = laws.named(mechanism)
    if mechanism in laws.ADDITIVE and private and not mechanism.zcdp:
        return PureDP(epsilon)
    if mechanism in laws.ADDITIVE and not private:
        return planned_guarantee(epsilon, delta, mechanism, calibration, neighbours, check_count_share(count_share))
    if mechanism is not None and not mechanism.certified:
        return Uncertified(PureDP(epsilon), "Wishart noise with d+1 degrees of freedom is not epsilon-DP")
    return ApproxDP(epsilon, delta)


def _check_scale(scale):
    if scale is not None and not (isinstance(scale, str) and scale == "private"):
        raise ValueError(f"'scale' must be None or 'private'; got {scale!r}.")


def _shares(center, center_budget, scale, row_norm, bound_budget):
    private_center = isinstance(center, str)
    located = private_center and center_budget.prior is None
    shares = {
        "location": center_budget.location if located else 0.0,
        "mean": center_budget.mean if private_center else 0.0,
        "bound": bound_budget.share if (is_auto(row_norm) or scale is not None) else 0.0,
        "clipping": bound_budget.bias if is_auto(row_norm) else 0.0,  # what the private bound clipped away
    }
    if sum(shares.values()) >= 1 - 1e-9:  # 0.6 + 0.3 + 0.1 adds up to 0.999...: nothing left all the same
        raise ValueError(f"the budget shares {', '.join(f'{k}={v:g}' for k, v in shares.items() if v)} add up to "
                         "1 or more and leave nothing for the second moment; lower them.")
    return shares


def _second_or_counts(shares, budget):
    """What a bound's pass about the release's own centre sums: the second moment, unless the release's pass
    must read the rows anyway (to sum what clipping removed, :class:`ExcessTap`): then the counts alone."""
    return "counts" if shares["clipping"] > 0 and not budget.exact else "second"


def private_second_moment(X, *, epsilon, delta, row_norm, center, center_budget, scale, bound_budget, mechanism,
                          neighbours, calibration, rng, count_share=COUNT_SHARE, scale_limits=None, column_names=None,
                          second_bound=None):
    """The second moment of the clipped, privately centred and scaled rows (module docstring).

    Returns
    -------
    Release
        ``guarantee`` composes every part; ``parts`` lists them.

    Privacy
    -------
    Sequential composition (module docstring, through
    :func:`dpmoments.privacy.compose`) of, each under the estimator's
    relation (replace-one, zero-out or add-remove):
    exponential-mechanism draws (sensitivity 1 under all three), a noisy
    count of clipped rows (sensitivity 1), the mean (L2 sensitivity ``2R/n``
    under replace-one) and the second moment (``sqrt(2) R^2/n`` under
    replace-one) of standardised rows clipped to ``R``. Under add-remove the
    mean and the second moment are each a noisy row count (``count_share``
    of their part) and noisy sums, composed within their part
    (:func:`~dpmoments.moments.release.release_part` lists the count). Every
    data-dependent choice is one of these outputs. ``delta >= 1/n`` is
    warned about once, on the caller's ``delta`` and the released ``n``.
    ``column_names`` (default: the input's own) name the columns in the scale warnings.
    ``second_bound``: where given with a private centre, ``f(R, c)`` of the drawn bound and the released centre
    (standardised units), a bound the second moment about ``c`` is clipped to instead of ``R`` and which no row
    can exceed (an all-0/1 table's box about its centre, ranged_release.py): post-processing of released values
    and public facts. Nothing is clipped, so no clipping-excess release is made; its share goes to the second
    moment.
    """
    source = as_source(X)
    X = source.data  # a Source is read as the input it holds
    names = source.feature_names if column_names is None else list(column_names)
    mechanism = laws.named(mechanism)  # a name from an estimator, a value from release_second_moment
    _check_scale(scale)
    check_option(neighbours, "neighbours", NEIGHBOURS)  # before any draw is judged against n (public or not)
    bounds = as_bound_budget(bound_budget)
    if is_auto(row_norm) or scale is not None:
        check_auto_privacy(mechanism, False, what="row_norm='auto'" if is_auto(row_norm) else "scale='private'")
    if is_auto(row_norm) or scale is not None or (isinstance(center, str) and center_budget.prior is None):
        check_auto_source(X, "a private centre, scale or bound")
    shares = _shares(center, center_budget, scale, row_norm, bounds)
    main_share = 1.0 - sum(shares.values())
    budget = PrivateChoiceBudget(epsilon, delta, mechanism, calibration, neighbours)
    budget.also = RANGES_REMEDY
    main = (SECOND, mechanism, neighbours, main_share, count_share)
    relation = dict(mechanism=mechanism, neighbours=neighbours, count_share=count_share)
    names = names if names is not None and len(names) == source.n_features else None
    # on a cluster each block is parsed once and its later passes replay it from its worker's disk
    with warnings.catch_warnings(), named_columns(names), parsed_once(X) as X:
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # delta >= 1/n is judged once, on the caller's delta
        rel, s, count, main_share = _choose_and_release(X, budget, shares, main, relation, row_norm, center,
                                                        center_budget, scale, bounds, rng, scale_limits, second_bound)
    return _finish(rel, budget, main_share, s, count, bounds, rng, epsilon, delta)


def _choose_and_release(X, budget, shares, main, relation, row_norm, center, center_budget, scale, bounds, rng,
                        known=None, second_bound=None):
    """The passes of the module docstring: ``(second-moment release, scales, clipped count, main share)``."""
    rng_mean, rng_cov, rng_loc, rng_scale, rng_bound = spawn(rng, 5)  # mean, cov first: as before this module
    private_center = isinstance(center, str)
    m, coarse, settled, main = _clipping_centre(X, budget, shares, main, relation, center, center_budget, scale,
                                                row_norm, bounds, rng_loc, known)
    bounds = on_grid(bounds, budget)  # a small table's choices may have been drawn on a coarser grid
    final_share = shares["mean"] - sum(p.share for p in budget.parts if p.label.endswith("mean"))
    s, bound_share = None, shares["bound"]  # without scales the row bound takes the whole bound option
    if scale is not None:
        s, bound_share = _scales_step(X, m, budget, shares, row_norm, coarse, bounds, rng_scale, known)
    m_z = None if m is None else np.asarray(m, dtype=float) / (1.0 if s is None else s)
    R, count, binned = row_norm, None, None
    with_mean = private_center and final_share > 1e-12 * shares["mean"]
    if is_auto(row_norm):
        R, count, binned = _private_row_bound(X, m, s, budget, shares, bound_share, bounds, main, rng_bound,
                                              with_mean, settled)
    c = private_mean(X, s, m_z, R, budget, final_share, rng_mean, relation, binned) if with_mean else None
    clipping_share, main_share = shares["clipping"], main[3]
    if second_bound is not None and c is not None:  # a bound no row exceeds about c: nothing clipped to measure
        R, clipping_share, main_share = float(second_bound(R, c)), 0.0, main_share + clipping_share
    rel = _second_moment_release(X, s, m_z if c is None else c, R, None if c is not None else binned, budget,
                                 clipping_share, main_share, relation, rng_cov)
    return rel, s, count, main_share


def _clipping_centre(X, budget, shares, main, relation, center, center_budget, scale, row_norm, bounds, rng, known):
    """Where the rows are clipped about: ``(centre, coarse scales or None, settled pass or None, main)``.

    A public centre (or none) as given; a private one from its prior, or chosen privately and refined
    (:func:`refined_location`), whose steps not taken leave their share to the second moment (``main``).
    """
    if not isinstance(center, str):
        return center, None, None, main
    if center_budget.prior is not None:
        return np.asarray(center_budget.prior, dtype=float), None, None, main
    # the refined location then serves as a privately chosen prior
    m, coarse, settled, unspent = refined_location(X, budget, shares, main, relation, scale, is_auto(row_norm),
                                                    bounds, rng, known)
    return m, coarse, settled, (*main[:3], main[3] + unspent, main[4])  # the draws not made; a small table's widening


def _scales_step(X, m, budget, shares, row_norm, coarse, bounds, rng, known):
    """The private column scales about ``m`` (floored by the coarse ones, where drawn), and the share of the bound
    option left to the row bound."""
    scale_share = shares["bound"] * (SCALE_SHARE if is_auto(row_norm) else 1.0)
    medians, coarse, upper = (None, None, 0.0) if coarse is None else coarse
    floor = None if coarse is None else scale_floor(medians, coarse, bounds.search)
    width = None if medians is None or coarse is not None else median_resolution(medians, bounds.search)
    s = guard_scales(column_scales(X, m, budget, scale_share, bounds.search, rng, shares["bound"], limits=known,
                                   floor=floor, tie_width=width, upper=upper), bounds.search.low, "column scales",
                     about=None if width is None else (medians, width, drawn_columns(known, medians.size)))
    return at_resolution(s, width, known), shares["bound"] - scale_share


def _private_row_bound(X, m, s, budget, shares, share, bounds, main, rng, with_mean, settled):
    """The private row bound about ``m``: ``(R, clipped count, binned sums of its pass)``.

    The bound's pass also sums what the next pass needs (binned_sums.py); a settled location's last step
    already binned the rows about ``m`` (and summed them for the mean).
    """
    binned = settled if (settled is not None and with_mean) else \
        bound_pass(X, m, s, bounds, "mean" if with_mean else _second_or_counts(shares, budget))
    if budget.one_draw:  # a small table: the location's drawn bound, and the count of the rows beyond it about m
        if binned is None:  # an array's second moment is read again: this pass only counts
            binned = bound_pass(X, m, s, bounds, "counts")
        return (*reused_row_bound(binned, budget, share, spawn(rng, 2)[1]), binned)
    R, count = row_bound_draw(X, m, s, budget, share, bounds, main, rng, option_share=shares["bound"], binned=binned)
    return R, count, binned


def _second_moment_release(X, s, center_z, R, binned, budget, clipping_share, main_share, relation, rng):
    """The second moment about ``center_z`` of the rows clipped to ``R`` (from the bound pass's binned sums where
    they hold it), and, with a clipping share, the release of what clipping removed."""
    second = fused_sums(binned, R, center_z)
    tap = None
    if second is None and clipping_share > 0 and not budget.exact:
        tap = ExcessTap(scaled_rows(X, s, False), center_z, R,  # the release's pass also sums what clipping removed
                        matrix=relation["mechanism"].norm == "l2" and wants_loss_matrix(as_source(X).n_features))
        second = tap.moment_sums() if as_source(X).dask else None  # on dask: in the same block tasks
    rows = second if second is not None else (tap if tap is not None else scaled_rows(X, s, False))
    rel = release_public_second_moment(rows, center=center_z, rng=rng, row_norm=R, **relation,
                                       **budget.release(main_share))
    if clipping_share > 0 and not budget.exact:
        record_clipping_excess(X, s, rel, budget, clipping_share, spawn(rng, 1)[0],
                               sums=None if tap is None else tap.sums())
    return rel


def _warn_weakest(each, what, search, n):
    """A BoundWarning when the weakest draw's rank error exceeds 10% of the (public or noisy) ``n``."""
    if what == "row bound":
        return warn_unreliable(each, search, n, what)
    err = rank_error(each, search)
    if err > 0.1 * n:
        option = BOUND_OPTION if what == "column scales" else LOCATION_OPTION
        warnings.warn(f"the private draw of the {what} is unreliable here: its rank error (about {err:.0f} rows, "
                      f"from epsilon={each:.3g} per draw) exceeds 10% of the {n} rows; give a larger {option}, a "
                      "larger epsilon or public values.", BoundWarning, stacklevel=5)


def _finish(rel, budget, main_share, s, count, bounds, rng, epsilon, delta):
    if count is not None and count[0] is not None:
        noisy, share = count
        fraction, sd = noisy.value / rel.n, noisy.noise_sd / rel.n
        budget.record("clipped rows", noisy.guarantee, share, clipped_fraction=fraction,
                      clipped_fraction_noise_sd=sd)
        warn_clipped(fraction, sd, any(p.released.get("at_range_end") for p in budget.parts))
    budget.parts.append(release_part("second moment", rel, main_share))
    if rel.law.needs_delta:
        warn_if_delta_large(delta, rel.n, noisy=not rel.n_public, stacklevel=5)
    bounds = on_grid(bounds, budget)
    if budget.weakest is not None:  # where n is public a weak draw was refused; under add-remove it is warned about
        _warn_weakest(*budget.weakest, bounds.search, rel.n)
    center = rel.center if (rel.center is None or s is None) else rel.center * s
    steps = rel.postprocessing + budget.widening_note() + grid_note(budget) + reused_note(budget) + (
        ("standardised by private column scales; estimates are mapped back",) if s is not None else ())
    rel = dataclasses.replace(rel, center=center, column_scale=s, guarantee=budget.total(), parts=tuple(budget.parts),
                              randomness=randomness_of(rng, epsilon), postprocessing=steps)
    return calibrated_as(rel, budget.calibration) if budget.zcdp else rel
