"""Exact (un-noised) moment sums of clipped rows, in one streaming pass.

``accumulate_moments`` reads a data source chunk by chunk, forces every row
into the public bound (``bounds.py``), and adds up

* ``xtx = sum_i x_i x_i^T``        (d, d)
* ``xty = sum_i x_i y_i``          (d,)
* ``yty = sum_i y_i^2``            scalar
* ``third = sum_i x_i (x) x_i (x) x_i``   (d, d, d)

The sums are un-normalised, so partial sums over disjoint chunks, dask
partitions or sites combine by ``MomentSums.merge`` and only the release
divides by ``n``. Memory stays at one chunk plus the sums.
"""

import functools
import os

import numpy as np

from .._lazy import matching_extension
from .._validation import check_data, check_positive, check_vector
from .bounds import _clip_responses, _clip_rows
from ..data import as_source, iter_chunks
from .sparse_sums import sparse_moment_sums
from .sums import MomentSums, expand_third, third_rows

# The version of ``_clip.c``'s calls this module makes (its ``DPM_CLIP_ABI``): an extension built from
# another version is not used.
CLIP_ABI = 1
try:  # the compiled row clipping; absent where the package was installed without a C compiler
    from . import _clip as _compiled
except ImportError:  # pragma: no cover
    _compiled = None
_compiled = matching_extension(_compiled, CLIP_ABI)
if os.environ.get("DPMOMENTS_PURE_NUMPY", "") not in ("", "0"):  # tests and comparisons run the NumPy path
    _compiled = None

__all__ = ["MomentSums", "accumulate_moments"]

# Elements per chunk when an in-memory array is chunked here.
_CHUNK_ELEMENTS = 1 << 20
# The widest rows whose clipping and Gram product are one compiled loop (``_clip.clip_gram``): there a
# separate clipping pass, about a read and a write of every row, costs a fifth to a half of BLAS's product
# (measured 1.3-1.5x ``X.T @ X`` at d = 10-64), while the compiled loop reads each row once and fetches
# the next rows while it sums; from about 100 columns on BLAS's product is faster (benchmarks/speed.py).
# A ``_clip`` built before it accepted rows this wide (no ``GRAM_MAX_D``) takes them up to 24.
_FUSED_MAX_D = min(96, getattr(_compiled, "GRAM_MAX_D", 24))
# Elements per block of the fused clip-and-accumulate loop (2 MiB of float64: it stays in the
# last-level cache; larger blocks measured faster than L2-sized ones, whose per-call overhead dominates).
_BLOCK_ELEMENTS = 1 << 18


def accumulate_moments(chunks, *, row_norm=None, entry_bound=None, response_bound=None, third=False,
                       center=None):
    r"""Exact moment sums of clipped rows in one pass over the data.

    .. math::

        \mathrm{xtx} = \sum_i \bar x_i \bar x_i^\top, \quad
        \mathrm{xty} = \sum_i \bar x_i \bar y_i, \quad
        \mathrm{yty} = \sum_i \bar y_i^2, \quad
        \mathrm{third} = \sum_i \bar x_i \otimes \bar x_i \otimes \bar x_i

    where :math:`\bar x_i` is row :math:`x_i - c` clipped to the public bound
    and :math:`\bar y_i = \max(-r, \min(r, y_i))`.

    Parameters
    ----------
    chunks : iterable of X chunks or (X, y) tuples, or any ``iter_chunks`` source
        Each ``X`` of shape (n_rows, n_features), each ``y`` of shape
        (n_rows,). An array, an ``(X, y)`` tuple, a file path or a dask
        array is first passed through ``iter_chunks``. Chunks are never
        concatenated: memory is one chunk plus the sums. A ``scipy.sparse``
        ``X`` (alone or in an ``(X, y)`` pair) is summed from its non-zeros
        (:func:`~dpmoments.moments.sparse_sums.sparse_moment_sums`; no ``center``).
    row_norm : float, optional
        Public L2 bound per row: ``x -> x min(1, row_norm / ||x||)``.
    entry_bound : float, optional
        Public bound per entry: ``x_ij -> clip(x_ij, -b, b)``. Exactly one of
        ``row_norm`` and ``entry_bound`` must be given.
    response_bound : float, optional
        Public bound ``r`` on ``|y|``; required when the chunks carry ``y``.
    third : bool, default=False
        Also sum the third moment ``x (x) x (x) x`` (``d^3`` floats).
    center : array-like of shape (n_features,), optional
        A *public* centre subtracted from every row before clipping (never
        the data's own mean, which is private).

    Returns
    -------
    MomentSums
        ``n``, ``n_features``, ``xtx``, ``xty`` and ``yty`` (when ``y`` was
        given), ``third`` (when asked), and the bounds enforced.

    Raises
    ------
    ValueError
        Neither or both bounds; ``y`` without ``response_bound``; a chunk
        that is not 2-D, holds a NaN/inf (the chunk and row are named), or
        has a different number of features; chunks with and without ``y``;
        no rows at all.

    Privacy
    -------
    The sums are exact statistics of private data and are not private
    themselves. Every row is clipped here, so under replace-one a record
    changes ``xtx`` by at most ``sqrt(2) R^2`` in Frobenius norm (``R =
    row_norm``; ``docs/algorithms.md`` §0.2) and under add-remove by ``R^2``;
    with ``entry_bound = b`` use ``R = b sqrt(d)``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[3.0, 4.0], [0.0, 0.5]])
    >>> accumulate_moments([X[:1], X[1:]], row_norm=1.0).xtx
    array([[0.36, 0.48],
           [0.48, 0.89]])
    """
    clip = _bound_clipper(row_norm, entry_bound)
    if response_bound is not None:
        response_bound = check_positive(response_bound, "response_bound")
    if not isinstance(third, (bool, np.bool_)):
        raise TypeError(f"'third' must be True or False; got {type(third).__name__} {third!r}.")
    src = as_source(chunks)
    chunks = src.data  # a Source is summed as the input it holds
    if src.sparse:
        return _sparse_sums(chunks, row_norm, entry_bound, response_bound, bool(third), center)
    if src.kind not in ("chunks", "stream") or isinstance(chunks, (bytes, tuple)):
        chunks = iter_chunks(chunks, chunk_size=_chunk_rows(chunks))
    fused_bound = None if third or row_norm is None else clip.keywords["bound"]  # clip_gram: the row bound alone
    state = _State(clip, response_bound, bool(third), center, fused_bound)
    for k, item in enumerate(chunks):
        state.add(k, item)
    return state.result(row_norm, entry_bound)


def _sparse_sums(source, row_norm, entry_bound, response_bound, third, center):
    if center is not None:
        raise ValueError("'center' cannot be used with sparse 'X': subtracting it makes every row dense. "
                         "Pass a dense array, or centre the data yourself.")
    X, y = source if isinstance(source, tuple) else (source, None)
    return sparse_moment_sums(X, y, row_norm=row_norm, entry_bound=entry_bound, response_bound=response_bound,
                              third=third)


def _chunk_rows(source):
    """Rows per chunk for an in-memory source: about 8 MiB of float64, so the
    clipping passes run in cache, but at least ``d`` rows so the per-chunk
    ``d x d`` addition stays small next to the product."""
    X = source[0] if isinstance(source, tuple) and len(source) == 2 else source
    try:
        d = int(X.shape[1]) if len(X.shape) == 2 else 0
    except (AttributeError, TypeError, ValueError):  # no shape, or an unknown (NaN) width
        d = 0
    if d < 1:
        return 65536
    return max(min(65536, _CHUNK_ELEMENTS // d), min(d, 8192))


def _bound_clipper(row_norm, entry_bound):
    """A function ``clip(B, out, k, offset)`` that checks a block is finite and writes it, clipped, to ``out``.

    The same arithmetic runs on every row whether or not it is clipped (see :func:`_clip_rows_into`).
    """
    if (row_norm is None) == (entry_bound is None):
        raise ValueError(
            "Exactly one of 'row_norm' (an L2 bound on each row) and 'entry_bound' (a bound on each entry) "
            f"must be given, as a public bound stated before seeing the data; got row_norm={row_norm!r}, "
            f"entry_bound={entry_bound!r}."
        )
    if row_norm is not None:
        return functools.partial(_clip_rows_into, bound=check_positive(row_norm, "row_norm"))
    bound = check_positive(entry_bound, "entry_bound")

    def clip(B, out, k, offset):
        if not np.isfinite(np.einsum("ij,ij->", B, B)):  # one reduction instead of a full isfinite mask
            _checked(check_data, B, "X", k, offset, min_samples=0)
        return np.clip(B, -bound, bound, out=out)

    return clip


def _clip_rows_into(B, out, k, offset, bound):
    """``B`` with every row scaled by ``min(1, bound / ||row||)``, written to ``out``.

    Every row is multiplied, by exactly 1 when it lies inside the ball, so the work (and so
    the time) does not depend on whether or how many rows were clipped: a timer learns the
    shape of the data, not which rows were large. The finite check is read off the squared
    row norms (a row's sum of squares is finite only if every entry is); only a row whose
    squares overflow float64 (an entry above about 1e154) takes the slower, overflow-safe
    ``_clip_rows``, which is the one data-dependent branch left (docs/privacy.md).
    """
    if _compiled is not None and _contiguous(B) and _contiguous(out):
        if _compiled.clip_rows(B, out, B.shape[1], bound):  # the same arithmetic, one pass per row
            return out
        return _clip_overflow_safe(B, out, k, offset, bound)
    sq = np.einsum("ij,ij->i", B, B)
    if not np.isfinite(sq).all():
        return _clip_overflow_safe(B, out, k, offset, bound)
    np.sqrt(sq, out=sq)
    with np.errstate(divide="ignore"):
        np.divide(bound, sq, out=sq)  # a zero row gives inf, then 1
    np.minimum(sq, 1.0, out=sq)
    return np.multiply(B, sq[:, None], out=out)


def _clip_overflow_safe(B, out, k, offset, bound):
    """A block with a row whose sum of squares is not finite: name a NaN/inf entry, else clip safely.

    Where ``out`` is ``B`` (a centred block) the compiled pass may have clipped the rows before the
    one it stopped at; clipping is idempotent, so the sums are the same.
    """
    _checked(check_data, B, "X", k, offset, min_samples=0)
    out[...] = _clip_rows(B, bound)
    return out


def _contiguous(A):
    return A.dtype == np.float64 and A.flags.c_contiguous


def _block_rows(d):
    """Rows per block of the fused clip-and-accumulate loop: about 2 MiB of float64, so the block
    stays in cache between its row norms, its scaling and its ``B^T B``; at least ``d`` rows (up
    to 8192) so the per-block ``d x d`` addition stays small next to the product."""
    return max(_BLOCK_ELEMENTS // d, min(d, 8192), 1)


class _State:
    """Running sums over the chunks seen so far."""

    def __init__(self, clip, response_bound, third, center, fused_bound=None):
        self.clip, self.response_bound, self.third = clip, response_bound, third
        self.fused_bound = fused_bound  # a row bound the compiled clip_gram may apply (no y, no third moment)
        self.center = None if center is None else np.ascontiguousarray(check_vector(center, name="center"))
        self.n, self.d, self.has_y = 0, None, None
        self.xtx = self.xty = self.yty = self.r3 = None
        self.buf = None  # the reused block buffer

    def add(self, k, item):
        X, y = _unpack(item, k, self.n)
        d = X.shape[1]
        if self.d is None:
            self._start(d, y is not None, k)
        elif d != self.d:
            raise ValueError(f"'X' in chunk {k} has {d} features but earlier chunks had {self.d}; "
                             "every chunk must have the same columns.")
        elif (y is not None) != self.has_y:
            raise ValueError(f"Chunk {k} {'has' if y is not None else 'has no'} 'y' but chunk 0 "
                             f"{'had' if self.has_y else 'had no'} 'y'; give y in every chunk or in none.")
        if X.shape[0] == 0:
            return
        if self.buf is None or self.buf.shape[1] != d:
            self.buf = np.empty((_block_rows(d), d))
        step = self.buf.shape[0]
        for lo in range(0, X.shape[0], step):
            self._add_block(X[lo:lo + step], None if y is None else y[lo:lo + step], k, self.n + lo)
        self.n += X.shape[0]

    def _add_block(self, B, y, k, offset):
        """One cache-sized block: centre and clip into the reused buffer, then add its products."""
        out = self.buf[:B.shape[0]]
        if y is None and self._fused(B):
            if not _contiguous(B):  # every layout takes this loop, so the sums do not depend on it
                np.copyto(out, B)
                B = out
            if _compiled.clip_gram(B, self.center, self.xtx, B.shape[1], self.fused_bound):
                return  # clipped and summed in one compiled loop; a row not finite falls through to the checks
        if self.center is not None:
            B = np.subtract(B, self.center, out=out)
        Xc = self.clip(B, out, k, offset)
        self.xtx += Xc.T @ Xc
        if y is not None:
            yc = _clip_responses(y, self.response_bound)
            self.xty += Xc.T @ yc
            self.yty += float(yc @ yc)
        if self.third:
            self.r3 += third_rows(Xc)

    def _fused(self, B):
        """Whether the compiled loop can clip this block and add its Gram product (narrow rows, row bound)."""
        return (self.fused_bound is not None and _compiled is not None and B.shape[1] <= _FUSED_MAX_D
                and hasattr(_compiled, "clip_gram"))

    def _start(self, d, has_y, k):
        if has_y and self.response_bound is None:
            raise ValueError(f"Chunk {k} carries responses 'y', so 'response_bound' (a public bound on |y|) is "
                             "required; got response_bound=None.")
        if self.center is not None and self.center.shape[0] != d:
            raise ValueError(f"'center' must have one entry per feature ({d}); got {self.center.shape[0]}.")
        self.d, self.has_y = d, has_y
        self.xtx = np.zeros((d, d))
        if has_y:
            self.xty, self.yty = np.zeros(d), 0.0
        if self.third:
            self.r3 = np.zeros((d * (d + 1) // 2, d))

    def result(self, row_norm, entry_bound):
        if self.n == 0:
            raise ValueError("The data have no rows (n = 0): at least one row is needed to accumulate moments.")
        return MomentSums(
            n=self.n, n_features=self.d, xtx=self.xtx, xty=self.xty, yty=self.yty,
            third=None if self.r3 is None else expand_third(self.r3, self.d),
            row_norm=None if row_norm is None else float(row_norm),
            entry_bound=None if entry_bound is None else float(entry_bound),
            response_bound=self.response_bound if self.has_y else None, center=self.center,
        )


def _unpack(item, k, offset):
    """Validate one chunk; name the chunk and row of a NaN."""
    if isinstance(item, tuple):
        if len(item) != 2:
            raise ValueError(f"Chunk {k} must be an X array or an (X, y) tuple; got a tuple of length {len(item)}.")
        X, y = item
    else:
        X, y = item, None
    X = _checked(check_data, X, "X", k, offset, min_samples=0, finite=False)  # the clipper checks finiteness
    if y is not None:
        y = _checked(check_vector, y, "y", k, offset, length=X.shape[0])
    return X, y


def _checked(check, value, name, k, offset, **kwargs):
    try:
        return check(value, name=f"{name} (chunk {k})", **kwargs)
    except ValueError:
        arr = np.asarray(value)
        if arr.dtype.kind in "fc" and arr.ndim in (1, 2) and not np.all(np.isfinite(arr)):
            bad = np.argwhere(~np.isfinite(arr))[0]
            where = f"row {bad[0]}" + (f", column {bad[1]}" if arr.ndim == 2 else "")
            overall = "" if offset is None else f" (row {offset + bad[0]} overall)"  # None: unknown (a dask block)
            raise ValueError(f"'{name}' has a NaN or infinite value in chunk {k} at {where} of the chunk{overall}; "
                             "remove or impute it first.") from None
        raise
