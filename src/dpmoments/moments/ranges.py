r"""Per-column public ranges: each column's centre and scale, and the row bound, for free.

A statistician usually knows some columns' ranges before seeing the data: an
age lies in 0 to 120, an indicator in 0 to 1, a score in 0 to 10. Given as
``ranges={"age": (0, 120), "smoker": (0, 1)}`` (``--ranges age=0:120,...``
on the command line, or a ranges file), each ranged column ``j`` is clipped
to its range entry by entry and mapped to

.. math::  z_{ij} = (\min(\max(x_{ij}, l_j), u_j) - c_j) / h_j \in [-1, 1],
   \qquad c_j = (l_j + u_j)/2, \quad h_j = (u_j - l_j)/2,

so its centre ``c_j`` and scale ``h_j`` cost nothing, and the standardised
row has ``||z||_2 <= sqrt(k)`` over its ``k`` ranged coordinates -- the
tightest L2 bound a box gives (its corners reach it, and the midpoint is the
centre that makes it smallest). Columns without a range are left as they are,
for the private choices (:mod:`dpmoments.moments.private_release`).

Privacy
-------
The ranges are **public inputs**, fixed before the data are read, never
computed from them: they enter no guarantee as data. Clipping and
standardising is a fixed map applied to each row on its own, so two tables
that differ in one row (replaced, or added/removed) map to two that differ in
that row only, and every guarantee of what is released from the mapped rows
holds for the original table under the same relation (zero-out: the zero row
of the centred, standardised rows, as everywhere in dpmoments). The
sensitivity is that of the release about the mapped rows (for a second moment
clipped to ``R`` in these units, ``sqrt(2) R^2 / n`` under replace-one). A
value outside its range is clipped, not refused: that is part of the map and
costs no privacy, but biases the estimate if the range was too narrow.
"""

import csv
import json
import math
import os
import unicodedata
from dataclasses import dataclass

import dataclasses

import numpy as np

from ..data import as_source, iter_chunks

__all__ = ["ColumnRanges", "as_column_ranges", "with_indicator_ranges", "merged_indicator_ranges", "read_ranges_file",
           "parse_ranges_text", "RangedRows",
           "ClippedRows", "clipped_to_ranges", "ranged_public_release", "feature_names_of"]


# The widest range taken: a column's variance is in squared units (up to a quarter of the width squared), and
# its interval multiplies that by the noise's quantiles and tail factors; a 0/1 column given 0:1e153 printed
# its variance's interval as [0, inf] and at 1.3e154 its estimate as inf (measured), so 1e150 leaves headroom.
_WIDEST_RANGE = 1e150


@dataclass(frozen=True)
class ColumnRanges:
    """Public ``(lower, upper)`` ranges keyed by column name or 0-based position.

    ``resolve(names)`` turns them into two arrays, ``nan`` where a column has
    no range. A key naming no column, a non-finite end or ``lower >= upper``
    is refused in one line naming the column (never a data value).
    """

    items: tuple  # ((key, lower, upper), ...)

    def __post_init__(self):
        seen = set()
        for key, lower, upper in self.items:
            if isinstance(key, bool) or not isinstance(key, (str, int, np.integer)):
                raise TypeError(f"'ranges' keys must be column names or 0-based positions; got {key!r}.")
            if not (math.isfinite(lower) and math.isfinite(upper)) or not lower < upper:
                raise ValueError(f"'ranges' of column {key!r} must be two finite numbers lower < upper; "
                                 f"got ({lower!r}, {upper!r}).")
            if not math.isfinite(upper - lower):  # the centre and half-width would be inf: every value 0 or nan
                raise ValueError(f"'ranges' of column {key!r} is wider than floating point holds (upper - lower "
                                 "overflows); give a narrower range.")
            if upper - lower > _WIDEST_RANGE:
                raise ValueError(f"'ranges' of column {key!r} is wider than 1e150: its variance (in squared units) "
                                 "and that variance's interval would overflow floating point; give a narrower range.")
            if key in seen:
                raise ValueError(f"'ranges' gives column {key!r} twice.")
            seen.add(key)

    @property
    def keys(self):
        return [k for k, _, _ in self.items]

    def resolve(self, names):
        """``(lower, upper)`` arrays over ``names`` (the feature columns, in order), ``nan`` where unranged."""
        names = [str(n) for n in names]
        lower, upper = np.full(len(names), np.nan), np.full(len(names), np.nan)
        for key, lo, hi in self.items:
            j = _position(key, names)
            if not np.isnan(lower[j]):  # a name and a position of one column: which range holds is not ours to guess
                raise ValueError(f"'ranges' gives column {names[j]!r} twice (by name and by position).")
            lower[j], upper[j] = lo, hi
        return lower, upper

    def to_dict(self):
        return {str(k): [lo, hi] for k, lo, hi in self.items}


def _position(key, names):
    if getattr(key, "text", None) in names:  # a number typed on the command line names a column where one has it
        return names.index(key.text)
    if isinstance(key, str) and key in names:
        return names.index(key)
    if isinstance(key, str):  # the same name in another Unicode form (a header in NFD, typed in NFC), as 'columns'
        nfc = unicodedata.normalize("NFC", key)
        same = [j for j, name in enumerate(names) if unicodedata.normalize("NFC", name) == nfc]
        if len(same) == 1:
            return same[0]
    if isinstance(key, (int, np.integer)) and 0 <= key < len(names):
        return int(key)
    shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    raise ValueError(f"'ranges' names column {key!r}, which is not a feature column ({shown}).")


def as_column_ranges(ranges):
    """``None``, a ``ColumnRanges``, or a mapping ``{column: (lower, upper)}`` -> ``ColumnRanges`` or ``None``."""
    if ranges is None or isinstance(ranges, ColumnRanges):
        return ranges
    if not hasattr(ranges, "items"):
        raise TypeError(f"'ranges' must be a mapping {{column: (lower, upper)}}; got {type(ranges).__name__}.")
    items = []
    for key, pair in ranges.items():
        try:
            lower, upper = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise ValueError(f"'ranges' of column {key!r} must be a pair (lower, upper); got {pair!r}.") from None
        items.append((key, lower, upper))
    if not items:
        raise ValueError("'ranges' is empty; give at least one column's (lower, upper), or None.")
    return ColumnRanges(tuple(items))


def with_indicator_ranges(ranges, X):
    """The ranges a fit of ``X`` uses: ``ranges`` and the 0 to 1 range of each 0/1 column ``X`` makes.

    An opened table (:func:`~dpmoments.data.open_table`, of a file or a DataFrame) with declared
    categories or imputed columns makes one-hot and ``:missing`` columns whose range is 0 to 1 by
    construction (``Table.indicator_ranges``, from the declared levels and names only: public).
    Every estimator and release function adds them, as the command line does for ``--categories``
    and ``--impute``; ``None`` stays ``None`` for any other input. A different range for one of
    them is refused (its values are 0 and 1 whatever is stated); the same range is accepted.
    """
    made = getattr(as_source(X).x, "indicator_ranges", None)
    if not made:
        return ranges
    return merged_indicator_ranges({} if ranges is None else {k: (lo, hi) for k, lo, hi in
                                                               as_column_ranges(ranges).items}, made)


def merged_indicator_ranges(given, made):
    """``given`` ranges with the indicator ranges ``made`` added (the library's and ``--ranges``' one rule)."""
    for key, span in given.items():
        if key in made and tuple(map(float, span)) != tuple(map(float, made[key])):
            raise ValueError(f"'ranges' gives column {key!r} the range {float(span[0]):g}:{float(span[1]):g}; it is "
                             "a 0/1 column the table makes (a declared level or a missing-value indicator), whose "
                             "range is 0:1: leave it out.")
    return {**given, **{k: tuple(v) for k, v in made.items() if k not in given}}


def parse_ranges_text(text, option="--ranges"):
    """``"age=0:120,idp=0:1"`` -> ``{"age": (0.0, 120.0), "idp": (0.0, 1.0)}`` (ValueError naming ``option``)."""
    out = {}
    for token in (t.strip() for t in text.split(",")):
        name, eq, span = token.rpartition("=")
        lo, colon, hi = span.partition(":")
        if not (eq and colon and name.strip()):
            raise ValueError(f"{option} takes COLUMN=LOWER:UPPER items separated by commas (e.g. age=0:120); "
                             f"got {token!r}.")
        if name.strip() in out:  # a dict would keep the last silently
            raise ValueError(f"{option} gives column {name.strip()!r} twice; give it once.")
        try:
            out[name.strip()] = (float(lo), float(hi))
        except ValueError:
            raise ValueError(f"{option}: the range of {name.strip()!r} must be two numbers LOWER:UPPER; "
                             f"got {span!r}.") from None
    return out


def read_ranges_file(path):
    """Ranges from a CSV (``column,lower,upper``, a header row optional) or JSON (``{"col": [lo, hi]}``) file."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        raise ValueError(f"could not read the ranges file '{path}' (UTF-8 text: CSV or JSON)") from None
    if path.lower().endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"the ranges file '{path}' is not valid JSON") from None
        if not isinstance(data, dict):
            raise ValueError(f"the ranges file '{path}' must hold an object {{\"column\": [lower, upper]}}")
        return {k: tuple(v) if isinstance(v, list) else v for k, v in _json_ranges(data, path).items()}
    rows = [r for r in csv.reader(text.splitlines()) if r and any(c.strip() for c in r)]
    out = {}
    for k, row in enumerate(rows):
        if len(row) != 3:
            raise ValueError(f"the ranges file '{path}' line {k + 1}: expected column,lower,upper")
        if row[0].strip() in out:
            raise ValueError(f"the ranges file '{path}' line {k + 1}: column {row[0].strip()!r} is given twice")
        try:
            out[row[0].strip()] = (float(row[1]), float(row[2]))
        except ValueError:
            if k == 0:
                continue  # a header row
            raise ValueError(f"the ranges file '{path}' line {k + 1}: lower and upper must be numbers") from None
    return out


def _json_ranges(data, path):
    """The column ranges of a JSON ranges file: under ``"ranges"``, or every key at the top level but
    ``"categories"`` (``{"age": [0, 120], "categories": {...}}`` kept its ``age`` range only this way; it was dropped)."""
    if "ranges" not in data:
        return {k: v for k, v in data.items() if k != "categories"}
    beside = sorted(set(data) - {"ranges", "categories"})
    if beside:
        raise ValueError(f"the ranges file '{path}' gives column {beside[0]!r} beside \"ranges\": give every column's "
                         "range in one place, under \"ranges\" or at the top level")
    if not isinstance(data["ranges"], dict):
        raise ValueError(f"the ranges file '{path}': \"ranges\" must hold an object {{\"column\": [lower, upper]}}")
    return data["ranges"]


class RangedRows:
    """The rows with their ranged columns clipped and standardised, read afresh on every iteration.

    ``lower``/``upper``: arrays over the columns, ``nan`` for a column left as
    it is. An array gives an array (one mapped copy), a dask collection a
    dask array, anything else a re-readable stream of mapped chunks.
    """

    def __init__(self, X, lower, upper):
        self.X, self.ranged = X, np.isfinite(lower)
        self.lower, self.upper = lower[self.ranged], upper[self.ranged]
        self.center = (self.lower + self.upper) / 2
        self.half = (self.upper - self.lower) / 2

    def map(self, chunk):
        Z = np.array(chunk, dtype=np.float64, copy=True)
        Z[:, self.ranged] = (np.clip(Z[:, self.ranged], self.lower, self.upper) - self.center) / self.half
        return Z

    def source(self):
        """What the private choices read: an array, a dask array, or this re-readable stream."""
        source = as_source(self.X)
        if source.sparse:
            raise ValueError("'ranges' needs dense X (each value is clipped to its range and centred); give an "
                             "array, a frame or a file.")
        if source.dask:
            X = self.X.to_dask_array(lengths=True) if hasattr(self.X, "to_dask_array") else self.X
            return X.rechunk({1: -1}).map_blocks(self.map, dtype=np.float64)  # every block holds whole rows
        if source.in_memory:
            return self.map(np.asarray(source.checked(), dtype=np.float64))
        return self

    def __iter__(self):
        for chunk in iter_chunks(self.X):
            yield self.map(chunk)


class ClippedRows(RangedRows):
    """The rows with their ranged columns clipped to their ranges, in their own units (no standardising).

    For a release whose model is stated in the data's units (a mixture of Gaussians with a public
    isotropic ``sigma2``, which a per-column scale would break): the ranges clip, and bound the rows.
    """

    def map(self, chunk):
        Z = np.array(chunk, dtype=np.float64, copy=True)
        Z[:, self.ranged] = np.clip(Z[:, self.ranged], self.lower, self.upper)
        return Z


def clipped_to_ranges(X, ranges, center=None):
    """``(rows, ranged, names, box)``: ``X`` clipped to ``ranges`` (:class:`ClippedRows`), which columns are
    ranged, the columns' names, and the largest ``||x - center||`` over the box when every column is ranged
    (``None`` otherwise): public facts only.

    Privacy: clipping is a fixed map of each row on its own (the module docstring): every guarantee of a
    release of the clipped rows holds for ``X`` under the same relation.
    """
    names = feature_names_of(X)
    lower, upper = as_column_ranges(ranges).resolve(names)
    rows = ClippedRows(X, lower, upper)
    c = np.zeros(lower.size) if center is None else np.asarray(center, dtype=float)
    box = float(np.sqrt(np.sum(np.maximum(np.abs(lower - c), np.abs(upper - c)) ** 2))) if rows.ranged.all() else None
    return rows.source(), rows.ranged, names, box


def feature_names_of(X):
    """The columns' names a ``ranges`` key may use: a frame's, a file's, else ``x0, x1, ...``."""
    source = as_source(X)
    return source.feature_names or [f"x{j}" for j in range(source.n_features)]


def ranged_public_release(release, X, ranges, *, center, row_norm, **kwargs):
    """``release(X mapped by ranges, ...)`` about the midpoints (or the public ``center``), mapped back.

    ``row_norm=None`` takes the box's bound (every column must be ranged). Privacy: that of ``release``
    on the mapped rows (module docstring).
    """
    lower, upper = as_column_ranges(ranges).resolve(feature_names_of(X))
    rows = RangedRows(X, lower, upper)
    mid = np.where(rows.ranged, np.nan_to_num((lower + upper) / 2), 0.0)
    half = np.where(rows.ranged, np.nan_to_num((upper - lower) / 2, nan=1.0), 1.0)
    if center is not None and not (isinstance(center, str) and center == "private"):
        z_center = (np.asarray(center, dtype=float) - mid) / half
    else:
        z_center = np.zeros(lower.size)
    if row_norm is None:
        if not rows.ranged.all():
            raise ValueError("'row_norm' is required when some columns have no range: the box's bound "
                             "sqrt(k) holds for ranged columns only.")
        row_norm = float(np.sqrt(np.sum((1.0 + np.abs(z_center)) ** 2)))
    rel = release(rows.source(), center=z_center, row_norm=row_norm, **kwargs)
    return dataclasses.replace(rel, column_scale=half, center=mid + z_center * half)
