"""The public grid and the one streaming pass behind every private quantile.

:class:`SearchRange` is the grid, fixed before the data are read.
:func:`quantile_pass` reads a source once (an array, a path, a list of
chunks through :func:`~dpmoments.data.iter_chunks`, a dask collection
block by block inside its own tasks) and counts how many rows fall in each
bin of the grid, for one or more statistics of the rows. The counts are
exact statistics of the data: only the exponential mechanism of
:mod:`dpmoments.moments.private_bounds` reads them, and only its draws leave.
"""

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._validation import check_data, check_int, check_option, check_positive, check_vector
from .accumulate import _checked, _unpack  # the one place chunks are validated
from ..data import as_source, iter_chunks

__all__ = ["SearchRange", "as_search_range", "STATISTICS", "BinCounts", "quantile_pass"]

# statistic -> (one value per row, or one per column; signed?)
STATISTICS = {
    "row-norm": ("row", False),        # ||(x - c) / s||_2
    "max-abs-entry": ("row", False),   # max_j |x_j - c_j| / s_j
    "abs-response": ("row", False),    # |y|
    "abs-column": ("column", False),   # |x_j - c_j|, one quantile per column (ties at c_j counted apart)
    # |x_j - c_j| with the rows within w_j of c_j counted as ties (set to 0): the request's third element is
    # w (public, or a function of private outputs), never a divisor; see column_scales' tie_width
    "abs-column-tied": ("column", False),
    "column": ("column", True),        # x_j - c_j (signed), one quantile per column
}


@dataclass(frozen=True)
class SearchRange:
    """The public grid a private quantile is searched on: fixed before the data are read.

    Parameters
    ----------
    low, high : float, default 1e-6 and 1e8
        The smallest and largest positive edge (a signed statistic uses the
        mirror image too, and 0). Values outside are reported as the end edge.
    steps : int, default 1000
        Log-spaced edges between them: 1000 over 14 decades is a step of
        3.3%, so a chosen bound is within 3.3% above the quantile drawn.
        The rank error grows only with ``ln(steps)``.

    Examples
    --------
    >>> SearchRange().edges()[[0, -1]]
    array([1.e-06, 1.e+08])
    >>> SearchRange(1.0, 100.0, steps=3).edges(signed=True)
    array([-100.,  -10.,   -1.,    0.,    1.,   10.,  100.])
    """

    low: float = 1e-6
    high: float = 1e8
    steps: int = 1000

    def __post_init__(self):
        low, high = check_positive(self.low, "low"), check_positive(self.high, "high")
        if not low < high:
            raise ValueError(f"the search range is empty: 'low' must be below 'high'; got low={low:g}, high={high:g}.")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "steps", check_int(self.steps, "steps", minimum=2))

    def edges(self, signed=False):
        """The grid's edges: log-spaced positives, and for ``signed`` their negatives and 0."""
        pos = np.geomspace(self.low, self.high, self.steps)
        return np.concatenate([-pos[::-1], [0.0], pos]) if signed else pos

    def to_dict(self):
        return {"low": self.low, "high": self.high, "steps": self.steps}


def as_search_range(search):
    """``None`` (the default range), a ``(low, high)`` pair or a :class:`SearchRange`."""
    if search is None:
        return SearchRange()
    if isinstance(search, SearchRange):
        return search
    if isinstance(search, (tuple, list)) and len(search) == 2:
        return SearchRange(*search)
    raise TypeError(f"'bound_range' must be a (low, high) pair or a SearchRange; got {search!r}.")


def _values(statistic, X, y, center, scale):
    """The statistic of every row of one chunk: shape (rows, k)."""
    if statistic == "abs-response":
        return np.abs(y)[:, None]
    Z = X if center is None else X - center
    if statistic == "abs-column-tied":  # scale is here the tie width (STATISTICS)
        A = np.abs(Z)
        return np.where(A <= scale, 0.0, A)
    if scale is not None:
        Z = Z / scale
    if statistic == "row-norm":
        return np.sqrt(np.einsum("ij,ij->i", Z, Z))[:, None]
    if statistic == "max-abs-entry":
        return np.abs(Z).max(axis=1, initial=0.0)[:, None]
    return np.abs(Z) if statistic == "abs-column" else Z


@dataclass(frozen=True)
class BinCounts:
    """Exact bin counts of one statistic (never to be published): ``counts`` (k, G + 1), ``ties`` (k,) or None.

    ``ties`` counts the rows tied at the centre (``abs-column``: exactly at it; ``abs-column-tied``: within the
    width); they are also in bin 0.
    """

    counts: np.ndarray
    ties: Optional[np.ndarray] = None

    def merge(self, other):
        return BinCounts(self.counts + other.counts, None if self.ties is None else self.ties + other.ties)


class _Counts:
    """Bin counts of one statistic over the grid, summed chunk by chunk."""

    def __init__(self, statistic, center, scale, edges):
        self.statistic, self.center, self.scale, self.edges = statistic, center, scale, edges
        self.counts = self.ties = None

    def start(self, d, y):
        """Check the transforms against the first chunk's width; size the counts."""
        self.center = _check_transform(self.center, "center", d)
        self.scale = _check_transform(self.scale, "tie width" if self.statistic == "abs-column-tied" else "scale", d)
        if self.statistic == "abs-response" and y is None:
            raise ValueError("a private response bound needs 'y'; got none.")
        k = d if STATISTICS[self.statistic][0] == "column" else 1
        self.counts = np.zeros((k, self.edges.size + 1), dtype=np.int64)
        if self.statistic in ("abs-column", "abs-column-tied"):
            self.ties = np.zeros(k, dtype=np.int64)

    def add(self, X, y):
        v = _values(self.statistic, X, y, self.center, self.scale)
        n_bins = self.edges.size + 1
        # bin k holds (edges[k-1], edges[k]]; one bincount for all k columns
        idx = np.searchsorted(self.edges, v, side="left") + n_bins * np.arange(v.shape[1])
        self.counts += np.bincount(idx.ravel(), minlength=self.counts.size).reshape(self.counts.shape)
        if self.ties is not None:  # rows exactly at the centre (module docstring)
            self.ties += np.count_nonzero(v == 0, axis=0)


def _check_transform(vector, name, d):
    if vector is None:
        return None
    vector = check_vector(vector, name, length=d)
    if name == "scale" and np.any(vector <= 0):
        raise ValueError("'scale' must hold positive column scales.")
    if name == "tie width" and not np.all(vector >= 0):
        raise ValueError("'tie width' must hold widths >= 0.")
    return vector


def quantile_pass(source, requests, *, search, chunk_size=65536):
    """One streaming pass: bin counts of each requested statistic on the public grid.

    Parameters
    ----------
    source : array, (X, y) pair, path, dask array or DataFrame, or iterable of chunks
        Read with :func:`~dpmoments.data.iter_chunks`; a dask collection is
        counted block by block inside its own tasks (as
        :func:`~dpmoments.moments.dask_moments.dask_moment_sums` sums it).
    requests : list of (statistic, center, scale)
        Statistics of :data:`STATISTICS`, each with an optional public centre
        and column scale.
    search : SearchRange

    Returns
    -------
    counts : list of BinCounts
        Bin counts per statistic. Exact statistics of the data: for
        :func:`select_quantiles` only, never to be published.
    n_features : int
    """
    for statistic, _, _ in requests:
        check_option(statistic, "statistic", tuple(STATISTICS))
    if as_source(source).dask:
        counts, n, d = _dask_counts(source, requests, search)
    else:
        counts, n, d = _count(iter_chunks(source, chunk_size=chunk_size), requests, search)
    if n == 0:
        raise ValueError("The data have no rows (n = 0): at least one row is needed to choose a bound privately.")
    return counts, d


def _count(items, requests, search):
    """Bin counts over an iterable of chunks: (counts per request, n, d)."""
    jobs = [_Counts(stat, center, scale, search.edges(signed=STATISTICS[stat][1])) for stat, center, scale in requests]
    n, d = 0, None
    for k, item in enumerate(items):
        X, y = _unpack(item, k, n)
        X = _checked(check_data, X, "X", k, n, min_samples=0)
        if d is None:
            d = X.shape[1]
            for job in jobs:
                job.start(d, y)
        elif X.shape[1] != d:
            raise ValueError(f"'X' in chunk {k} has {X.shape[1]} features but earlier chunks had {d}.")
        if X.shape[0]:
            for job in jobs:
                job.add(X, y)
        n += X.shape[0]
    return [BinCounts(job.counts, job.ties) for job in jobs], n, d


def _dask_counts(source, requests, search):
    """Per-block counts inside the blocks' own tasks, added up in a tree (never materialising the data)."""
    from .dask_moments import _SPLIT_EVERY, _frame_pair_blocks, _import_dask, _is_frame, _x_blocks, _y_blocks

    dask, _ = _import_dask()
    X, y = source if isinstance(source, tuple) else (source, None)
    if y is not None and _is_frame(X) and _is_frame(y):
        xb, yb = _frame_pair_blocks(X, y), None
    else:
        xb = _x_blocks(X)
        yb = None if y is None else _y_blocks(y, X, len(xb))
    block = dask.delayed(_block_counts, pure=True)
    parts = [block(b, None if yb is None else yb[k], k, requests, search) for k, b in enumerate(xb)]
    merge = dask.delayed(_merge_counts, pure=True)
    while len(parts) > 1:
        parts = [merge(*parts[i:i + _SPLIT_EVERY]) for i in range(0, len(parts), _SPLIT_EVERY)]
    (result,) = dask.compute(parts[0]) if parts else ((None, 0, None),)
    return result


def _block_counts(X, y, k, requests, search):
    if isinstance(X, tuple):  # an (X, y) partition of a DataFrame
        X, y = X
    try:
        return _count([np.asarray(X) if y is None else (np.asarray(X), np.asarray(y))], requests, search)
    except ValueError as exc:
        raise ValueError(f"In dask block {k} (0-based, along rows): {exc}") from None


def _merge_counts(*parts):
    counts, n, d = None, 0, None
    for c, m, width in parts:
        if not m:
            continue
        if d is not None and width != d:
            raise ValueError(f"dask blocks have different numbers of features ({d} and {width}).")
        counts = c if counts is None else [a.merge(b) for a, b in zip(counts, c)]
        n, d = n + m, width
    return counts, n, d
