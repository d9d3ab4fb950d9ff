r"""The second moment of a table some of whose columns have public ranges (``ranges=``).

Ranged columns are clipped to their range entry by entry and standardised by
its midpoint and half-width (:mod:`dpmoments.moments.ranges`): their centre
and scale are free. What is still needed is chosen by the private choices of
:func:`~dpmoments.moments.private_release.private_second_moment`, on the
mapped rows, by one of two routes decided from public facts only:

* **private location and scales, within the ranges** (some column without a
  range; or, with a private centre, any ranged column that is not 0/1 and
  rows enough for the draws): a 0/1 column (a range of width 1 with integer
  ends) keeps the scale its range gives; every other column gets a private
  scale, a ranged one's clipped to ``[SCALE_FLOOR, 2]`` half-widths (so a
  generous range costs little, and a draw cannot blow a column up), an
  unranged one's as today; the private location and row bound as today.
  Measured on real tables, this was 2-5 times more accurate than the
  half-widths alone wherever the rows allowed it (benchmarks/results/ranges.md).
* **the ranges alone** (every column ranged, and too few rows for those draws
  -- the refusal comes before anything is released -- or add-remove, or a
  public centre): the private mean is taken about the midpoints (a public
  prior: no location draws), and the row bound is drawn privately on the
  standardised rows on a grid that ends at the box's own bound ``sqrt(k)``;
  where ``n`` is too small for even that draw, the box's bound is used, for
  free (and the release says so).

The release is mapped back: ``column_scale`` is the half-widths times any
private scales, ``center`` the midpoints plus the private centre in those
units, so every estimator returns its estimate in the user's units.
"""

import dataclasses
import math
import warnings

import numpy as np

from ..exceptions import BoundWarning, TooFewRowsError
from .auto_release import as_bound_budget, is_auto
from .private_bounds import SearchRange
from .private_release import private_second_moment
from .ranges import RangedRows, as_column_ranges

__all__ = ["ranged_second_moment", "ranges_note", "mapped_back"]

GRID_DECADES, GRID_STEPS = 4, 300  # the ranged row bound's grid: sqrt(k) 1e-4 to sqrt(k), 3.1% apart
# A ranged column's private scale, in half-widths: at least SCALE_FLOOR (a range up to 20 times wider than the
# column's typical deviation), at most 2 (the largest |z - m| in the box).
SCALE_FLOOR = 0.05
PRIVATE_NOTE = "0/1 columns scaled by their range, the others by private scales within it"
FREE_NOTE = "centres (midpoints) and scales (half-widths) from the ranges, free"


def ranged_second_moment(X, ranges, names, *, center, center_budget, scale, row_norm, bound_budget, **kwargs):
    """The release of ``X`` with ``ranges`` (module docstring); ``names``: the feature columns, in order.

    Privacy
    -------
    That of :func:`private_second_moment` on the clipped, standardised rows
    (a fixed per-row map: the same relation, the same sensitivity in the
    standardised units, e.g. ``sqrt(2) R^2 / n`` for the second moment under
    replace-one). The ranges are public inputs and enter no guarantee as data;
    which of the two routes runs is decided from public facts alone (``n``
    under replace-one and zero-out, the budget, the grid).
    """
    lower, upper = as_column_ranges(ranges).resolve(names)
    rows = RangedRows(X, lower, upper)
    d, k = lower.size, int(rows.ranged.sum())
    mid = np.where(rows.ranged, np.nan_to_num((lower + upper) / 2), 0.0)
    half = np.where(rows.ranged, np.nan_to_num((upper - lower) / 2, nan=1.0), 1.0)
    public_center = _public_center(center, mid, half, d)
    common = dict(row_norm=row_norm, bound_budget=bound_budget, **kwargs)
    two_valued = rows.ranged & (upper - lower == 1) & (lower == np.round(lower))
    private = isinstance(center, str) and not two_valued.all() and kwargs["neighbours"] != "add-remove"
    if k < d or private:  # private location and scales where the rows allow: the ranges clip, and bound the scales
        low = np.where(two_valued, 1.0, np.where(rows.ranged, SCALE_FLOOR, 0.0))
        high = np.where(two_valued, 1.0, np.where(rows.ranged, 2.0, np.inf))
        try:
            release = private_second_moment(rows.source(), center=center if isinstance(center, str) else
                                            public_center, center_budget=center_budget,
                                            scale="private", scale_limits=(low, high), column_names=names,
                                            **common)
            _warn_at_floor(release.column_scale, rows.ranged & ~two_valued, names)
            _warn_at_ends(release, rows.ranged & ~two_valued, names)
            return mapped_back(release, PRIVATE_NOTE, mid, half, names, rows.ranged)
        except TooFewRowsError:
            if k < d:
                raise
    release, note = _from_ranges_alone(rows, center, center_budget, public_center, common, two_valued.all())
    _warn_at_ends(release, rows.ranged & ~two_valued, names)
    return mapped_back(release, note, mid, half, names, rows.ranged)


def _warn_at_floor(scales, drawn, names):
    """A warning naming the ranged columns whose private scale is at its floor (post-processing of the draws).

    Such a column varies by less than a twentieth of its half-width: its range is far wider than its data, or
    excludes most of them (each value is then clipped to an end, and the column is nearly constant there).
    """
    low = drawn & (np.asarray(scales) <= SCALE_FLOOR * (1 + 1e-9))
    if low.any():
        shown = ", ".join(str(n) for n, at in zip(names, low) if at)
        warnings.warn(f"the private scale of the ranged column(s) {shown} is at its floor, a twentieth of the range's "
                      "half-width: the column varies little within its range -- a range far wider than the data, or "
                      "one that leaves most values outside it (they are clipped to its ends); check the range.",
                      BoundWarning, stacklevel=5)


# A ranged column's released second moment, in squared half-widths, above this: most of its values lie at the
# range's ends (a column spread within its range has far less: 1/3 uniform, about 1/9 for a normal filling it)
AT_ENDS = 0.8


def _warn_at_ends(release, ranged, names):
    """A warning naming the ranged columns (not 0/1) whose released second moment is near the largest the range
    allows, half-width squared: most values sit at its ends, as when a range narrower than the data clips them
    (``a=-0.1:0.1`` for a column of sd 1: variance 0.01 released for 1, with no other word). Post-processing of the
    release (its diagonal, scales and noise scale): no rows."""
    scale = np.ones(ranged.size) if release.column_scale is None else np.asarray(release.column_scale, dtype=float)
    diag = np.diagonal(release.second_moment)
    noise = float(release.noise_scale or 0.0)
    ends = ranged & (diag * scale**2 > AT_ENDS) & (diag > 4.0 * noise)
    if ends.any():
        shown = ", ".join(str(n) for n, at in zip(names, ends) if at)
        warnings.warn(f"most values of the ranged column(s) {shown} lie at their range's ends (the released spread "
                      f"is over {AT_ENDS:g} of the largest the range allows): a two-valued column, or a range narrower "
                      "than the data, which clips them to its ends (every estimate of those columns is then of the "
                      "clipped values); check the range.", BoundWarning, stacklevel=5)


def _from_ranges_alone(rows, center, center_budget, public_center, common, all_two_valued=False):
    """Every column ranged and no private scales: the centre about the midpoints, the scales the half-widths.

    Every 0/1 row lies at the box's bound ``sqrt(k)`` from the midpoints, so the bound drawn about them is that
    bound, and about the private mean ``c`` it clipped every row of a column far from 1/2 (a column of 90% ones:
    its zeros 1.8 half-widths from ``c``): its variance lost, withheld, and the median width was 49 times the
    noise's (the coverage benchmark's 0/1 table with ranges). With a private centre and every column 0/1 the
    second moment about ``c`` is clipped instead to the box about ``c``, ``sqrt(sum (1 + |c_j|)^2)``, which no row
    exceeds (post-processing of the released ``c``).
    """
    d = rows.ranged.size
    budget = as_bound_budget(common["bound_budget"])
    box = _box_bound(public_center, rows.ranged)
    if budget.search == SearchRange():  # the default grid: end it at the box's bound
        common["bound_budget"] = dataclasses.replace(budget, search=SearchRange(
            box * 10.0 ** -GRID_DECADES, box, GRID_STEPS))
    z_center = public_center
    if isinstance(center, str):
        z_center = "private"
        center_budget = dataclasses.replace(center_budget, prior=tuple(np.zeros(d)))
        if all_two_valued and is_auto(common["row_norm"]):  # a row_norm the user gave is used as given
            common["second_bound"] = _box_about
    try:
        release = private_second_moment(rows.source(), center=z_center, center_budget=center_budget,
                                        scale=None, **common)
        note = FREE_NOTE + ("; row bound drawn privately on the standardised rows" if is_auto(common["row_norm"])
                            else "")
    except TooFewRowsError:
        if not is_auto(common["row_norm"]):
            raise
        common["row_norm"] = box
        release = private_second_moment(rows.source(), center=z_center, center_budget=center_budget,
                                        scale=None, **common)
        note = f"{FREE_NOTE}; row bound {box:.4g} from the ranges (too few rows to draw a tighter one privately)"
    return release, note


def _box_about(drawn, c):
    """The largest ``||z - c||`` over ``z`` in ``[-1, 1]^d``: no ranged row exceeds it (``drawn`` is not needed)."""
    return float(math.sqrt(np.sum((1.0 + np.abs(np.asarray(c, dtype=float))) ** 2)))


def _public_center(center, mid, half, d):
    """A public centre (or None: the origin) in the standardised units; ``"private"`` passes through."""
    if isinstance(center, str):
        return center
    v = np.zeros(d) if center is None else np.asarray(center, dtype=float)
    if v.shape != (d,):
        raise ValueError(f"'center' must have one value per feature ({d}); got shape {v.shape}.")
    return (v - mid) / half


def _box_bound(z_center, ranged):
    """The largest ``||z - v||`` over the box ``[-1, 1]^k`` (``v`` the centre, zeros for a private one)."""
    v = np.zeros(ranged.size) if isinstance(z_center, str) else np.asarray(z_center)
    return float(math.sqrt(np.sum((1.0 + np.abs(v[ranged])) ** 2)))


def mapped_back(release, note, mid, half, names, ranged, unranged="private location and scale", standardised=True):
    """The release in the user's units: scales are half-widths times private scales, the centre mapped back.

    ``unranged``: what the columns without a range had (the note's words). ``standardised``: the rows were the
    ranged values clipped and standardised by midpoint and half-width, so each coordinate's bound is recorded
    (``coordinate_bound``); else (rows mapped another way) none is.
    """
    s = half if release.column_scale is None else half * release.column_scale
    center = None if release.center is None else mid + np.asarray(release.center) * half
    steps = release.postprocessing + (ranges_note(names, ranged, note, unranged),)
    # A ranged value is clipped to [mid - half, mid + half]: |x - centre| / s is at most this (row clipping only
    # shrinks it); public ranges and the released centre and scales
    offset = np.zeros(mid.size) if center is None else np.abs(center - mid)
    bound = np.where(ranged, (half + offset) / s, np.inf)
    about = mid if center is None else center  # each range's ends about the centre, in the same units
    ends = np.stack([np.where(ranged, (mid - half - about) / s, -np.inf), np.where(ranged, (mid + half - about) / s,
                                                                                  np.inf)])
    return dataclasses.replace(release, column_scale=s, center=center, postprocessing=steps,
                               coordinate_bound=bound if standardised else None,
                               coordinate_range=ends if standardised else None)


def ranges_note(names, ranged, note=None, unranged="private location and scale"):
    """One line: which columns were clipped to public ranges, and which were left to the private choices."""
    have = [str(n) for n, r in zip(names, ranged) if r]
    private = [str(n) for n, r in zip(names, ranged) if not r]
    text = f"public ranges for {', '.join(have)} (each value clipped to its range)"
    if private:
        text += f"; {unranged} for {', '.join(private)}"
    return text + (f"; {note}" if note else "")
