r"""A private bound's pass and the pass it serves, fused into one: clipped sums for every grid edge at once.

A private row bound is one of the public grid's edges ``t_k`` (the exponential
mechanism draws a bin and returns its upper edge, :mod:`~dpmoments.moments.private_bounds`),
and a row is scaled exactly when its norm exceeds the bound. So, with sums
over the rows ``z`` whose norm falls in bin ``b`` (``(t_{b-1}, t_b]``, the
histogram's own bins),

.. math::

    A_b = \sum f(z), \qquad B_b = \sum f(z / \|z\|),

where ``f(z) = z`` (a mean) or ``z z^T`` (a second moment, ``p = 2``), the
sum of the rows clipped to ``R = t_k`` is

.. math::

    \sum_{b \le k} A_b + R^p \sum_{b > k} B_b,

the sum a second pass at ``R`` computes, up to the order of the additions.
One pass then yields both the bin counts the draw needs and, once ``R`` is
drawn, the clipped sums of the release: the released distribution is the
one of the two-pass route, and the data are read once instead of twice.

Costs: a mean keeps ``2 (G + 1) d`` floats (one row of each per bin); a
second moment ``2 d^2`` per *occupied* bin and twice the Gram work per row.
Where that memory would pass ``max_bytes`` (64 MiB by default) the sums are
dropped (the counts are kept) and :attr:`BinnedSums.fused` is False: the
caller reads the data a second time, as before.
"""

import functools
import os

import numpy as np

from .._lazy import matching_extension
from .._validation import check_data
from .accumulate import _block_rows, _checked, _unpack
from .quantile_grid import BinCounts, _values
from ..data import as_source, iter_chunks
from .sums import MomentSums

__all__ = ["BinnedSums", "binned_pass", "FUSE_BYTES"]

# The version of ``_binned.c``'s calls this module and clipping_bias.py make (its ``DPM_BINNED_ABI``): an
# extension built from another version is not used.
BINNED_ABI = 2
try:  # the compiled binned pass; absent where the package was installed without a C compiler
    from . import _binned as _compiled
except ImportError:  # pragma: no cover
    _compiled = None
_compiled = matching_extension(_compiled, BINNED_ABI)
if os.environ.get("DPMOMENTS_PURE_NUMPY", "") not in ("", "0"):  # tests and comparisons run the NumPy path
    _compiled = None
_NONE = np.empty(0)  # no centre, scale or sums, to the compiled pass


def compiled_binned():
    """The compiled module (``_binned.c``), or None where it is not built or ``DPMOMENTS_PURE_NUMPY`` is set."""
    return _compiled

_RECUT_BYTES = 2 * 2**20  # a file's blocks for the compiled pass: about the size of a cache (2048 rows of 100 columns)
FUSE_BYTES = 64 * 2**20  # the most memory the per-bin sums may take before the caller falls back to a second read
MOMENTS = {"mean": 1, "second": 2, "counts": None}  # the power of R that multiplies the clipped rows' sums


class BinnedSums:
    """Bin counts of ``||(x - center) / scale||`` on the grid and, while they fit, the per-bin sums above.

    Privacy
    -------
    Exact statistics of private data: never published. The counts go to the
    exponential mechanism only, and :meth:`clipped` only at the bound it drew.
    """

    def __init__(self, moment, edges, center, scale, max_bytes):
        self.moment, self.center, self.scale = moment, center, scale
        self.edges = np.ascontiguousarray(edges, dtype=np.float64)
        self.max_bytes, self.n, self.d = max_bytes, 0, None
        self.counts = np.zeros(edges.size + 1, dtype=np.int64)
        self.fused, self.buf = True, None  # buf: the reused block of centred rows
        self.inside, self.outside = {}, {}  # bin -> A_b, B_b (second); arrays (G + 1, d) (mean)

    def __getstate__(self):
        """Sent between processes (a dask block's result): a mean's per-bin sums only where rows fell, most of the
        grid's 1001 bins being empty (640 KiB a block at d = 40 otherwise); :meth:`__setstate__` restores the
        same arrays bit for bit (a bin no row fell in holds the zeros it was made with)."""
        state = dict(self.__dict__)
        if isinstance(self.inside, np.ndarray):
            rows = np.flatnonzero(self.counts)
            state["inside"], state["outside"] = (rows, self.inside[rows]), (rows, self.outside[rows])
        return state

    def __setstate__(self, state):
        for key in ("inside", "outside"):
            if isinstance(state[key], tuple):
                rows, values = state[key]
                full = np.zeros((state["counts"].size, values.shape[1]))
                full[rows] = values
                state[key] = full
        self.__dict__.update(state)

    def start(self, d):
        self.d = d
        if self.moment == "counts":  # the bin counts alone: the pass it serves reads the rows again
            self.fused = False
        elif self.moment == "mean":
            if 2 * self.counts.size * d * 8 > self.max_bytes:
                self.fused = False
            else:
                self.inside, self.outside = (np.zeros((self.counts.size, d)) for _ in range(2))

    def add(self, X):
        """Bin and sum the rows of one chunk; False where a row norm is not finite (the caller then checks ``X``).

        The counts and a mean's sums are made a cache-sized block of rows at a time, centred into one reused
        buffer: the chunk is read from memory once, with no chunk-sized temporaries (the pass costs little more
        than the read). A second moment's sums are made per chunk (:meth:`_add_second`).
        """
        if self.moment == "second":
            return self._add_second(X)
        finite = True
        if self.buf is None:
            self.buf = np.empty((_block_rows(self.d), self.d))
        step = self.buf.shape[0]
        for lo in range(0, X.shape[0], step):
            finite &= self._add_block(X[lo:lo + step])
        self.n += X.shape[0]
        return finite

    def _centred(self, X, out):
        """``(X - center) / scale``, as :func:`~dpmoments.moments.quantile_grid._values` makes it (the same values)."""
        if self.center is None and self.scale is None:
            return X
        Z = X if self.center is None else np.subtract(X, self.center, out=out)
        return Z if self.scale is None else np.divide(Z, self.scale, out=out)

    def _norms(self, Z):
        norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))  # as quantile_pass counts them, row by row
        idx = np.searchsorted(self.edges, norms, side="left")
        self.counts += np.bincount(idx, minlength=self.counts.size)
        return norms, idx

    def _add_block(self, B):
        B = B[self._compiled_rows(B):]  # the rows the compiled pass did not take (none, usually)
        if not B.shape[0]:
            return True
        Z = self._centred(B, self.buf[:B.shape[0]])
        norms, idx = self._norms(Z)
        if np.isfinite(norms).all():
            if self.fused and self.moment == "mean":
                inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)  # zero rows stay zero
                bins, sums = _per_bin_sums(Z, idx, inverse)  # (bin 0, whose B is never used: every bound is above)
                self.inside[bins] += sums[:bins.size]
                self.outside[bins] += sums[bins.size:]
            return True
        self.fused = False  # squares overflow float64: leave the sums to the clipping pass
        return bool(np.isfinite(B).all())  # a NaN or inf in the data: the caller refuses the chunk

    def _compiled_rows(self, B):
        """How many of the block's first rows the compiled pass (``_binned.c``) counted (and summed): all of them, or
        none where there is no compiled module or the block is not one it takes, or those before the first row whose
        norm is not finite (the NumPy path sorts that row out)."""
        if _compiled is None or not B.flags.c_contiguous or B.dtype != np.float64:
            return 0
        center, scale = (_NONE if v is None else np.ascontiguousarray(v, dtype=np.float64).reshape(-1)
                         for v in (self.center, self.scale))
        if center.size not in (0, self.d) or scale.size not in (0, self.d) or (center.size == 0) != (self.center is None) \
                or (scale.size == 0) != (self.scale is None):
            return 0  # the NumPy path broadcasts them, or refuses them
        sums = self.fused and self.moment == "mean"
        return _compiled.bin_rows(B, center, scale, self.edges, self.buf[:4].reshape(-1), self.counts,
                                  self.inside if sums else _NONE, self.outside if sums else _NONE, self.d)

    def _add_second(self, X):
        Z = self._centred(X, np.empty_like(X) if self.center is not None or self.scale is not None else None)
        norms, idx = self._norms(Z)
        self.n += X.shape[0]
        if np.isfinite(norms).all():
            if self.fused:
                self._add_second_sums(Z, norms, idx)
            return True
        self.fused = False
        return bool(np.isfinite(X).all())

    def _add_second_sums(self, Z, norms, idx):
        inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        order = np.argsort(idx, kind="stable")
        bins, starts = np.unique(idx[order], return_index=True)
        Zs = Z[order]
        units = Zs * inverse[order, None]
        for b, lo, hi in zip(bins, starts, np.append(starts[1:], Zs.shape[0])):
            rows, unit = Zs[lo:hi], units[lo:hi]
            self.inside[b] = self.inside.get(b, 0.0) + rows.T @ rows
            if b > 0:
                self.outside[b] = self.outside.get(b, 0.0) + unit.T @ unit
        if (len(self.inside) + len(self.outside)) * self.d * self.d * 8 > self.max_bytes:
            self.fused, self.inside, self.outside = False, {}, {}

    def bin_counts(self):
        return BinCounts(self.counts[None, :])

    def clipped(self, row_norm, center=None):
        """The :class:`MomentSums` of the rows clipped to ``row_norm``, a grid edge (``center`` recorded).

        A mean's sums are the cross moment with the constant response 1
        (``response_bound`` 1; ``xtx`` is not summed and holds zeros).
        """
        if not self.fused:
            raise RuntimeError("the per-bin sums were dropped (memory cap): read the data again.")
        k = int(np.searchsorted(self.edges, row_norm))
        if k >= self.edges.size or self.edges[k] != row_norm:
            raise ValueError(f"'row_norm' must be an edge of the grid the pass binned on; got {row_norm!r}.")
        scale = row_norm ** MOMENTS[self.moment]
        d, center = self.d, None if center is None else np.asarray(center, dtype=float)
        if self.moment == "mean":
            total = self.inside[:k + 1].sum(axis=0) + scale * self.outside[k + 1:].sum(axis=0)
            return MomentSums(n=self.n, n_features=d, xtx=np.zeros((d, d)), xty=total, yty=float(self.n),
                              row_norm=row_norm, response_bound=1.0, center=center)
        total = np.zeros((d, d))
        for b, A in self.inside.items():
            if b <= k:
                total += A
        for b, B in self.outside.items():
            if b > k:
                total += scale * B
        return MomentSums(n=self.n, n_features=d, xtx=(total + total.T) / 2.0, row_norm=row_norm, center=center)


def _per_bin_sums(Z, idx, inverse):
    """The occupied bins and, stacked, the sums of their rows and of their unit rows: one sparse product.

    A (2 bins x rows) matrix of indicators and inverse norms times ``Z`` reads each row once; sorting the
    rows by bin and adding them up in runs copied every chunk twice and cost five times as much.
    """
    from scipy import sparse  # here: a command that draws no bound never loads it

    bins, local = np.unique(idx, return_inverse=True)
    n = idx.size
    rows = np.empty(2 * n, dtype=np.int64)
    rows[0::2], rows[1::2] = local, local + bins.size
    weights = np.empty(2 * n)
    weights[0::2], weights[1::2] = 1.0, inverse
    spread = sparse.csc_matrix((weights, rows, np.arange(0, 2 * n + 1, 2)), shape=(2 * bins.size, n))
    return bins, spread @ Z


def binned_pass(source, *, moment, search, center=None, scale=None, chunk_size=65536, max_bytes=None):
    """One read of ``source``: bin counts of ``||(x - center) / scale||`` and the clipped sums at every edge.

    Parameters
    ----------
    source : array, path or list of chunks (not a dask collection: see Returns)
    moment : {"mean", "second", "counts"}
        What the pass sums beside the counts ("counts": nothing).
    search : SearchRange
        The public grid the bound will be drawn on.
    center, scale : array-like of shape (d,), optional
        Public (or privately chosen) centre and column scales.
    max_bytes : int, optional
        The memory the per-bin sums may take (default :data:`FUSE_BYTES`).

    Returns
    -------
    BinnedSums
        A dask collection's blocks are binned and summed in their own tasks
        and merged in a tree (the counts and sums are mergeable), never
        pulled through the client.

    Privacy
    -------
    Exact statistics (module docstring); nothing leaves but what the caller
    releases with noise. The work per row does not depend on which bin the
    row falls in, but a second moment makes one product per occupied bin per
    chunk: its time shows how widely the row norms spread over the grid
    (tens of 3.3% bins), as docs/privacy.md states.
    """
    args = (moment, search.edges(), center, scale, FUSE_BYTES if max_bytes is None else max_bytes)
    if as_source(source).dask:
        result = _dask_pass(source, args)
    else:
        result = BinnedSums(*args)
        for k, item in enumerate(_chunks(source, moment, chunk_size)):
            _add_chunk(result, item, k)
        result.buf = None
    if result.n == 0:
        raise ValueError("The data have no rows (n = 0): at least one row is needed to choose a bound privately.")
    return result


def _chunks(source, moment, chunk_size):
    """The rows of one pass. Where the compiled pass counts and sums them (a mean's or the counts' pass), its
    result is the same however the rows are cut (each row is added in order), and a file is read in blocks
    of a few MB (:meth:`~dpmoments.data.Source.recut`): the reader's check and the pass then find each block
    in the cache. A second moment's sums are made per chunk: its chunks are the caller's."""
    if _compiled is None or moment == "second":
        return iter_chunks(source, chunk_size=chunk_size)
    return as_source(source).recut(_RECUT_BYTES, chunk_size)


def _add_chunk(result, item, k, offset=-1):
    """``offset``: the chunk's first row overall (default: the rows so far; None where unknown, a dask block's)."""
    offset = result.n if offset == -1 else offset
    X, _ = _unpack(item, k, offset)  # the NaN scan is left to the row norms, which show a non-finite value
    if result.d is None:
        result.start(X.shape[1])
    elif X.shape[1] != result.d:
        raise ValueError(f"'X' in chunk {k} has {X.shape[1]} features but earlier chunks had {result.d}.")
    if X.shape[0] and not result.add(X):
        _checked(check_data, X, "X", k, offset, min_samples=0)  # names the chunk and row of the first one


def _block_pass(block, k, args, start=None):
    """One dask block's :class:`BinnedSums` (in its own task); ``start``: its first row, where known."""
    result = BinnedSums(*args)
    _add_chunk(result, np.asarray(block, dtype=np.float64), k, start)
    result.buf = None  # not sent back with the counts and sums
    return result


def _held_block_pass(block, k, start, args):
    return _block_pass(block, k, args, start)


def _merged(*parts):
    """The :class:`BinnedSums` of the rows of all ``parts`` (blocks of one pass, same grid and centre)."""
    parts = [p for p in parts if p.d is not None] or list(parts[:1])
    out = parts[0]
    for p in parts[1:]:
        if p.d != out.d:
            raise ValueError(f"'X' has blocks of {p.d} and of {out.d} features; every block must have the same columns.")
        out.counts, out.n = out.counts + p.counts, out.n + p.n
        out.fused = out.fused and p.fused
        if not out.fused:
            out.inside, out.outside = {}, {}
        elif out.moment == "mean":
            out.inside, out.outside = out.inside + p.inside, out.outside + p.outside
        else:
            for mine, theirs in ((out.inside, p.inside), (out.outside, p.outside)):
                for b, A in theirs.items():
                    mine[b] = mine.get(b, 0.0) + A
    if out.fused and out.moment == "second" and \
            (len(out.inside) + len(out.outside)) * out.d * out.d * 8 > out.max_bytes:
        out.fused, out.inside, out.outside = False, {}, {}
    return out


def _partial_bytes(X, args):
    """About the bytes of one block's per-bin sums: a d-vector per bin on each side of the bound (d x d matrices
    for a fused second moment, at most ``max_bytes``); unbounded where the width is unknown."""
    moment, edges, max_bytes = args[0], args[1], args[4]
    from .dask_moments import _known_width

    d = _known_width(X)
    if d is None:
        return float("inf")
    per_bin = 2.0 * 8.0 * d * (d if moment == "second" else 1)
    return min(per_bin * (len(edges) + 1), max_bytes if moment == "second" else float("inf"))


def _dask_pass(X, args):
    from ..data.dask_spill import held_merge_fits, merge_levels, merged_where_held, replayed_blocks
    from .dask_moments import _SPLIT_EVERY, _block_starts, _import_dask, _x_blocks

    dask, _ = _import_dask()
    block = dask.delayed(_block_pass, pure=True)
    blocks = _x_blocks(X)
    # spilled on the workers: one task a worker, the same merges (where every block's per-bin sums fit one merge
    # task together)
    if blocks and replayed_blocks(X) is not None and held_merge_fits(len(blocks), _partial_bytes(X, args)):
        return merged_where_held(blocks, functools.partial(_held_block_pass, args=args), _merged, _SPLIT_EVERY,
                                 _block_starts(X, len(blocks)))
    parts = [block(b, k, args, start) for k, (b, start) in enumerate(zip(blocks, _block_starts(X, len(blocks))))]
    merge = dask.delayed(_merged, pure=True)
    parts = merge_levels(parts, merge, _SPLIT_EVERY)
    if not parts:
        return BinnedSums(*args)
    (result,) = dask.compute(parts[0])
    return result
