r"""Per-column public ranges across sites: a part of the plan every site checks, applied by each site to its rows.

A plan may carry ``ranges``: for each feature column, a public ``(lower, upper)`` or ``None``
(no range). Each site clips its ranged columns to their ranges and standardises them by the
midpoint and half-width, exactly as one machine does (:mod:`dpmoments.moments.ranges`), before
anything else: the location steps, the bound step and every moment round then see the mapped
rows. The aggregator maps the release back (``column_scale`` the half-widths, ``center`` the
midpoints plus the chosen centre in those units), so every estimator answers in the user's units,
and the release's post-processing line says which columns had a range.

With a private centre the columns also get **private scales**, as one machine's ranged release
gives them (:mod:`dpmoments.moments.ranged_release`): a 0/1 column keeps the scale its range gives, every
other ranged column gets a private scale within ``[SCALE_FLOOR, 2]`` half-widths, and a column without a
range a private scale of its own (``scale="private"`` gives them to a table without ranges too). Each is the
median distance from the column's median in the last location step's summed noisy histograms, at least half
their upper quartile, the gap to the column's next values and the median bin's width
(:func:`~dpmoments.multisite.site_spreads.site_spreads`): post-processing of counts already released, no share
of its own. Every later query carries the scales; each site divides its mapped rows by them. Without a private
centre there are no scales across sites: a column without a range stays in its own units under the one row
bound. Ranges apply to the second-moment analyses (covariance, correlation, PCA, precision, ridge) of the rows
``x``.

Privacy
-------
The ranges are public inputs, fixed in the plan before any site reads its rows, never computed
from them: they enter no guarantee as data. Clipping and standardising is a fixed map of each row
on its own, so two tables that differ in one row map to two that differ in that row only, and
every guarantee of the plan (its sensitivities are in the mapped units, with the plan's row bound)
holds for the sites' original rows under the same relation.
"""

import dataclasses
import math
import warnings
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from ..exceptions import BoundWarning
from ..moments.ranged_release import GRID_DECADES, SCALE_FLOOR, mapped_back
from ..moments.ranges import ClippedRows, RangedRows, as_column_ranges
from ..moments.scale_floors import resolution_on
from ..moments.scale_guard import guard_scales, named_columns
from .bounds import AutoBounds
from .statistics import CROSS, THIRD

DEFAULT_LOW, DEFAULT_HIGH = AutoBounds.low, AutoBounds.high

__all__ = ["PlanRanges", "plan_ranges", "plan_scale", "scale_limits", "column_scales", "scales_about", "check_column_scale", "grids_within_ranges", "check_plan_ranges", "ranges_to_json", "ranges_from_json", "map_rows", "ranges_mapped_back", "ranged_columns", "row_map", "map_response", "MODELS"]

#: The analyses of a model that take ranges across sites beside the second-moment ones: model selection and IRLS
#: (the features standardised, the response by ``options["response_range"]``) and the mixture of Gaussians (the
#: ranges clip only: its public ``sigma2`` is in the data's units, as one machine's tensor release).
MODELS = ("select", "regress", "tensor-mog")


NOTE = ("centres (midpoints) and scales (half-widths) from the ranges, free; each site clipped and standardised its "
        "own rows")


UNRANGED = "own units under the row bound (no private scales across sites without a private centre)"
SCALED_NOTE = ("0/1 columns scaled by their range, the others by private scales within it (the median distance from "
               "the median in the last location step's noisy histograms, at least the gap to the next values); each "
               "site clipped and standardised its own rows")
SCALED_UNRANGED = "private location and scale"

#: A plan's public ranges: one ``(lower, upper)`` or ``None`` per column (what :func:`plan_ranges` returns).
PlanRanges = tuple[Optional[tuple[float, float]], ...]


def plan_ranges(ranges: Any, n_features: int, names: Optional[Sequence[str]] = None) -> Optional[PlanRanges]:
    """The plan's form of ``ranges``: a tuple over the ``n_features`` columns of ``(lower, upper)`` or ``None``.

    ``ranges``: ``None``; that tuple (or list) itself; or a mapping ``{column: (lower, upper)}`` keyed by
    a name of ``names`` or a 0-based position (as ``ranges=`` of one machine). One line naming the
    column for a bad range (never a data value).
    """
    if ranges is None:
        return None
    if not hasattr(ranges, "items") and not hasattr(ranges, "resolve"):
        ranges = list(ranges)
        if len(ranges) != n_features:
            raise ValueError(f"'ranges' must give one (lower, upper) or None per column ({n_features}); "
                             f"got {len(ranges)}.")
        ranges = {j: pair for j, pair in enumerate(ranges) if pair is not None}
        if not ranges:
            return None
    names = [f"x{j}" for j in range(n_features)] if names is None else [str(c) for c in names]
    lower, upper = as_column_ranges(ranges).resolve(names)
    return tuple(None if math.isnan(lo) else (float(lo), float(hi)) for lo, hi in zip(lower, upper))


def scale_limits(ranges, d):
    """``(low, high)``: each column's private scale in the mapped units, as one machine bounds it: a ranged 0/1
    column (width 1, integer ends) 1, known; another ranged column ``[SCALE_FLOOR, 2]`` half-widths; a column
    without a range ``(0, inf)``. Public facts only."""
    if ranges is None:
        return np.zeros(d), np.full(d, np.inf)
    lower, upper = _ends(ranges)
    ranged = ranged_columns(ranges)
    two_valued = ranged & (upper - lower == 1) & (lower == np.round(np.nan_to_num(lower)))
    return (np.where(two_valued, 1.0, np.where(ranged, SCALE_FLOOR, 0.0)),
            np.where(two_valued, 1.0, np.where(ranged, 2.0, np.inf)))


def plan_scale(scale, ranges, location):
    """The plan's ``scale``: ``"private"`` or ``None``, checked. With ranges and a private centre the scales are
    private unless every column is a ranged 0/1 one (one machine's ranged route); ``"private"`` needs a private
    centre, whose location steps' histograms give the scales."""
    if scale is not None and not (isinstance(scale, str) and scale == "private"):
        raise ValueError(f"'scale' must be None or 'private'; got {scale!r}.")
    if scale is None and ranges is not None and location is not None:
        low, high = scale_limits(ranges, len(ranges))
        scale = "private" if bool(np.any(low < high)) else None
    if scale is not None and location is None:
        raise ValueError("scale='private' across sites needs center='private': the scales are read off the location "
                         "steps' noisy histograms.")
    return scale


def column_scales(spreads, ranges, low_edge, names=None, about=None):
    """The private column scales from the last location step's spreads (post-processing): clipped to
    :func:`scale_limits`, a column without a range whose spread is at the bottom of the grid (``<= low_edge``: a
    constant or zero-inflated column) replaced by the median of the others, with a warning naming it; with
    ``about`` (:func:`scales_about`), also one whose spread is only its median's distance from 0, by one machine's
    rule (:func:`~dpmoments.moments.scale_guard.guard_scales`)."""
    spreads = np.asarray(spreads, dtype=np.float64)
    low, high = scale_limits(ranges, spreads.size)
    s = np.clip(spreads, low, high)
    floored = (low > 0) & (low < high) & (spreads <= low)
    if floored.any():  # as one machine warns (ranged_release): the range is far wider than the data, or misses them
        shown = ", ".join(names[j] if names is not None else f"x{j}" for j in np.flatnonzero(floored))
        warnings.warn(f"the private scale of the ranged column(s) {shown} is at its floor, a twentieth of the range's "
                      "half-width: the column varies little within its range -- a range far wider than the data, or "
                      "one that leaves most values outside it (they are clipped to its ends); check the range.",
                      BoundWarning, stacklevel=5)
    with named_columns(names):
        return guard_scales(np.where(low > 0, s, np.maximum(s, 0.0)), low_edge, "column scales across sites",
                            stacklevel=5, about=about)


def scales_about(center, move, edges, ranges):
    """What one machine's scale guard reads of the medians a scale was taken about, from the sites' releases:
    ``(the location, the resolution of the last step's median on the location grid, which columns' scales are
    drawn)``: the location after the last step (whose histograms gave the spreads), the width of the grid bin its
    move was rounded up to (``edges``: the public location grid), and the columns not fixed by a range. Released
    and public values only."""
    d = len(center)
    low, high = scale_limits(ranges, d)
    return np.asarray(center, dtype=np.float64), resolution_on(edges, np.asarray(move, dtype=np.float64)), low < high


def check_column_scale(scale, ranges, d):
    """Whether a query's column scales are ones a plan allows: ``d`` finite positive values within
    :func:`scale_limits` (public facts; any such scale is public whatever its value: the row bound clips after
    it, so no sensitivity depends on it)."""
    low, high = scale_limits(ranges, d)
    s = np.asarray(scale, dtype=np.float64)
    return s.shape == (d,) and bool(np.all(np.isfinite(s)) and np.all(s > 0) and np.all(s >= low * (1 - 1e-12))
                                    and np.all(s <= high * (1 + 1e-12)))


def grids_within_ranges(ranges, auto, location, center, scale=None):
    """The choosing steps' grids where every column has a range and the grids are the default ones.

    The mapped rows lie in the box ``[-1, 1]^d``, so the default grids (1e-6 to 1e8) are mostly empty
    bins that cost rows: the row bound's grid ends at the box's largest norm about the centre (``sqrt(d)``
    about the midpoints, ``2 sqrt(d)`` about a location inside the box) and the location's at 2, each
    over four decades, as one machine's ranged release does. Public facts only; a grid the user gave is
    kept. With private scales (``scale="private"``) the standardised rows leave the box: the row bound's grid
    stays the default one, as one machine's private route keeps it.
    """
    if ranges is None or not ranged_columns(ranges).all():
        return auto, location
    if center is not None and not isinstance(center, str):
        raise ValueError("a public 'center' with 'ranges' across sites is not taken: the ranges centre each column "
                         "at its midpoint (center=None) or the sites choose a private centre (center='private').")
    d = len(ranges)
    top = (2.0 if location is not None else 1.0) * math.sqrt(d)
    if auto is not None and "row_norm" in auto.names and _default_grid(auto) and scale is None:
        auto = dataclasses.replace(auto, low=top * 10.0 ** -GRID_DECADES, high=top)
    if location is not None and _default_grid(location):
        location = dataclasses.replace(location, low=2.0 * 10.0 ** -GRID_DECADES, high=2.0)
    return auto, location


def _default_grid(choice):
    return (choice.low, choice.high) == (DEFAULT_LOW, DEFAULT_HIGH)


def check_plan_ranges(plan):
    """Refuse (one line) a plan's ranges that do not fit it: a second moment of the rows ``x`` (and a private
    centre's mean round, an auto bound's clipping excess) or an analysis of :data:`MODELS`, one finite
    ``(lower, upper)``, lower < upper, or ``None`` per feature column."""
    ranges = plan.ranges
    if ranges is None:
        return
    second = plan.rows == "x" and all(
        r.stat is not THIRD and (r.stat is CROSS) == (
            i == plan.mean_round) for i, r in enumerate(plan.rounds))
    if len(ranges) != plan.feature_width or not (second or plan.analysis in MODELS):
        raise ValueError("'ranges' across sites are for a second moment of the rows x (covariance, correlation, "
                         "pca, precision, ridge), select, regress and tensor-mog, one (lower, upper) or None per "
                         "feature column.")
    if not all(r is None or (len(r) == 2 and math.isfinite(r[0]) and math.isfinite(r[1] - r[0]) and r[0] < r[1])
               for r in ranges):
        raise ValueError("a plan's 'ranges' must be finite pairs lower < upper (or None).")


def ranges_to_json(ranges):
    return None if ranges is None else [None if r is None else [r[0], r[1]] for r in ranges]


def ranges_from_json(data):
    return None if data is None else tuple(None if r is None else (float(r[0]), float(r[1])) for r in data)


def _ends(ranges):
    lower = np.array([np.nan if r is None else r[0] for r in ranges])
    upper = np.array([np.nan if r is None else r[1] for r in ranges])
    return lower, upper


def ranged_columns(ranges):
    """Which columns have a range (a boolean array)."""
    return np.array([r is not None for r in ranges])


def row_map(plan):
    """How a plan's ranges map the rows, as one machine maps them for its analysis: ``"standardise"`` (midpoint and
    half-width), ``"clip"`` (the mixture of Gaussians: its ``sigma2`` is in the data's units) or ``"scale"`` (IRLS
    without an intercept: divided by ``max(|lower|, |upper|)``, so that no intercept is implied)."""
    if plan.analysis == "tensor-mog":
        return "clip"
    return "scale" if plan.analysis == "regress" and plan.option("intercept") is None else "standardise"


def map_rows(X, ranges, how="standardise"):
    """``X`` (dense, ``(n, d)``) with its ranged columns clipped and mapped as :func:`row_map` says (a copy)."""
    lower, upper = _ends(ranges)
    if how == "standardise":
        return RangedRows(X, lower, upper).map(X)
    Z = ClippedRows(X, lower, upper).map(X)
    if how == "scale":
        ranged = ranged_columns(ranges)
        Z[:, ranged] /= np.maximum(np.abs(lower), np.abs(upper))[ranged]
    return Z


def map_response(y, span, centred):
    """The response clipped to its public range ``span`` and mapped to ``[-1, 1]``: about the midpoint
    (``centred``), else divided by ``max(|lower|, |upper|)`` (IRLS without an intercept), as one machine's."""
    lower, upper = span
    y = np.clip(np.asarray(y, dtype=np.float64), lower, upper)
    return (y - (lower + upper) / 2) / ((upper - lower) / 2) if centred else y / max(abs(lower), abs(upper))


def ranges_mapped_back(release, ranges, names=None):
    """A release of the mapped rows in the user's units, with the line saying which columns had a range.

    A release about the origin of the mapped rows is about the midpoints (unranged columns: 0), as one
    machine's ranged release; a release with private column scales (its ``column_scale``) is scaled back by
    the half-widths times them. Post-processing of ``release``.
    """
    lower, upper = _ends(ranges)
    ranged = ranged_columns(ranges)
    mid = np.where(ranged, np.nan_to_num((lower + upper) / 2), 0.0)
    half = np.where(ranged, np.nan_to_num((upper - lower) / 2, nan=1.0), 1.0)
    names = [f"x{j}" for j in range(len(ranges))] if names is None else list(names)
    if release.center is None:
        release = dataclasses.replace(release, center=np.zeros(len(ranges)))
    scaled = release.column_scale is not None
    return mapped_back(release, SCALED_NOTE if scaled else NOTE, mid, half, names, ranged,
                       SCALED_UNRANGED if scaled else UNRANGED, standardised=False)  # maps vary: no coordinate bounds
