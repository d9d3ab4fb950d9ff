"""Moments of dask collections by per-block partial sums (extra ``dpmoments[dask]``).

``dask_moment_sums`` turns every row block of a ``dask.array.Array`` (or
every partition of a ``dask.dataframe.DataFrame``) into a small
:class:`~dpmoments.moments.MomentSums` *inside one task* (clip, ``X^T X``,
optionally ``X^T y`` and the third moment) and adds the partial sums up with
a tree of :meth:`MomentSums.merge`. The data are never materialised: each
task holds one block plus the ``d x d`` (or ``d^3``) sums, so memory is about
one block per worker thread. Raw rows never become a dask key of their own
beyond the blocks the source already has (load and reduce in one task), and
the result is an ordinary numpy ``MomentSums``, equal to the one of ``accumulate_moments`` on the same rows
up to floating-point summation order.

The computation runs on whatever scheduler is active: the threaded
scheduler by default, or a ``distributed.Client`` (``LocalCluster``,
dask-jobqueue, ...) if one is set. Pin BLAS to one thread per worker
(``OPENBLAS_NUM_THREADS=1``): threads of BLAS inside threads of workers
oversubscribe the cores.

The dask collections over files (Zarr, ``.npy``, Parquet) are opened by
:mod:`dpmoments.data.dask_files`, without reading them.

Only the row axis may be chunked: a dask array with several column blocks
is rechunked to one column block first (``x.rechunk({1: -1})``), which makes
each task hold a full-width row block.

dask is imported inside the functions; without it they raise an
``ImportError`` naming ``pip install "dpmoments[dask]"``.
"""

import functools

import numpy as np

from .._validation import as_float_array
from ..data import is_dask_collection
from ..data.dask_files import import_dask as _import_dask
from ..data.dask_spill import held_merge_fits, merge_levels, merged_where_held, replayed_blocks
from .accumulate import accumulate_moments

__all__ = ["dask_moment_sums", "dask_moment_sums_with", "row_ones", "RowOnes", "rows_array", "names_only"]

# Partial sums merged per task of the reduction tree.
_SPLIT_EVERY = 8
# The response's column while it rides along with the features of a DataFrame.
_Y_COLUMN = "__dpmoments_y__"
# A block's response of ones (RowOnes), made in its task.
_ONES = "ones"


def _is_frame(obj):
    return is_dask_collection(obj) and hasattr(obj, "divisions") and hasattr(obj, "to_delayed")


def names_only(frame):
    """An empty pandas DataFrame with a dask DataFrame's columns: scikit-learn reads names from eager frames only."""
    import pandas as pd  # dask's own dependency

    return pd.DataFrame(columns=list(frame.columns))


class RowOnes:
    """The response ``y = 1`` on every row of the dask collection ``x``, made inside each of its blocks' tasks.

    The cross moment with it is the sum of the clipped rows (a mean). A dask
    vector of ones (``map_blocks`` over the rows) read every block a second
    time for its length once dask optimised the two graphs apart: the mean,
    the tensor's first moment and CoinPress's steps cost two passes on a cluster.
    """

    def __init__(self, x):
        self.x = x


def row_ones(x):
    """``y = 1`` for every row of the dask array or DataFrame ``x``: a :class:`RowOnes`, for ``dask_moment_sums(x, y)``.

    Works for unknown block lengths (a DataFrame converted without
    ``lengths=True``): each block makes its ones from its own rows, read once.
    """
    if not is_dask_collection(x):
        raise TypeError(f"'X' must be a dask array or dask DataFrame; got {type(x).__name__}.")
    return RowOnes(x)


# -- the partial sums ----------------------------------------------------------

def dask_moment_sums(x, y=None, *, row_norm=None, entry_bound=None, response_bound=None, third=False, center=None,
                     split_every=_SPLIT_EVERY):
    """Exact moment sums of a dask array or DataFrame, one partial sum per block.

    Parameters
    ----------
    x : dask.array.Array of shape (n_samples, n_features) or dask.dataframe.DataFrame
        Chunked along rows; several column blocks are merged into one
        (``x.rechunk({1: -1})``). Row block lengths may be unknown (NaN).
        A DataFrame is read partition by partition (all columns, as float64).
    y : dask array / Series of shape (n_samples,), or numpy array, optional
        Responses. A dask ``y`` must have the same row blocks as ``x`` (it is
        rechunked to them when both are known); a numpy ``y`` is split to
        match ``x``'s (known) row blocks. ``row_ones(x)``: one per row, made
        inside each block's task (the rows are read once).
    row_norm, entry_bound, response_bound, third, center
        As in :func:`~dpmoments.moments.accumulate_moments`.
    split_every : int, default=8
        Fan-in of the reduction tree of partial sums.

    Returns
    -------
    MomentSums
        numpy sums, as ``accumulate_moments`` would return for the same rows.

    Raises
    ------
    ImportError
        dask is not installed (``pip install "dpmoments[dask]"``).
    ValueError
        As ``accumulate_moments`` (the block is named); ``y`` blocked unlike ``x``.

    Privacy
    -------
    The sums are exact statistics of private data; pass them to a release.
    Each block's rows are clipped inside its task, before anything is summed.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> X = np.arange(12.0).reshape(6, 2) / 20
    >>> s = dask_moment_sums(da.from_array(X, chunks=(4, 2)), row_norm=1.0)
    >>> bool(np.allclose(s.xtx, accumulate_moments(X, row_norm=1.0).xtx))
    True
    """
    kwargs = dict(row_norm=row_norm, entry_bound=entry_bound, response_bound=response_bound, third=third,
                  center=center)
    result = _computed(x, y, kwargs, split_every, None)
    if result is None:
        raise ValueError("The data have no rows (n = 0): at least one row is needed to accumulate moments.")
    return result


def dask_moment_sums_with(x, tap, *, row_norm, center=None, split_every=_SPLIT_EVERY):
    """``(MomentSums, tap's sums)`` of a dask array or DataFrame in ONE pass: each block's task makes both.

    ``tap`` is a pair of picklable functions ``(per_block, merge)``: ``per_block(rows)`` sums what
    another statistic needs from a block's float64 rows (as given, before clipping), and
    ``merge(*parts)`` adds such sums up; they are merged in the same tree as the moment sums. The
    release's pass serves a second statistic this way (what clipping removed,
    :class:`~dpmoments.moments.clipping_bias.ExcessTap`) instead of reading every block again.
    The moment sums are those of :func:`dask_moment_sums` (``row_norm``, ``center``), bit for bit.

    Privacy
    -------
    Exact statistics of private data, as :func:`dask_moment_sums`; pass both to releases.
    """
    result = _computed(x, None, dict(row_norm=row_norm, entry_bound=None, response_bound=None, third=False,
                                     center=center), split_every, tap)
    if result is None or result[0] is None:
        raise ValueError("The data have no rows (n = 0): at least one row is needed to accumulate moments.")
    return result


def _computed(x, y, kwargs, split_every, tap):
    """The merged partial sums (``None`` for no rows; with a ``tap``, a pair): one ``dask.compute``."""
    dask, _ = _import_dask()
    # Validate the options before any task runs (the same errors as the numpy path).
    if (kwargs["row_norm"] is None) == (kwargs["entry_bound"] is None):
        accumulate_moments([np.zeros((1, 1))], row_norm=kwargs["row_norm"], entry_bound=kwargs["entry_bound"])
    split_every = max(2, int(split_every))
    _check_center_width(x, kwargs["center"])
    if y is not None and _is_frame(x) and _is_frame(y):
        # Columns of one DataFrame: join them so that every partition carries its X and y rows (the two
        # collections on their own may be partitioned differently once dask optimises the reads).
        xb, yb = _frame_pair_blocks(x, y), None
    elif isinstance(y, RowOnes):
        if y.x is not x:
            raise ValueError("'y' = row_ones(...) must be of the very collection given as 'X'.")
        xb = _x_blocks(x)
        yb = [_ONES] * len(xb)  # made in each block's task from its rows: the rows are read once
    else:
        xb = _x_blocks(x)
        yb = None if y is None else _y_blocks(y, x, len(xb))
    starts = _block_starts(x, len(xb))
    if replayed_blocks(x) is not None and (yb is None or isinstance(y, RowOnes)) and \
            held_merge_fits(len(xb), _partial_bytes(x, kwargs, tap)):  # one task per worker, the same sums
        return _merged_where_held(xb, yb is not None, kwargs, split_every, tap, starts)
    if tap is None:
        part, merge, lead = dask.delayed(_block_sums, pure=True), dask.delayed(_merge_parts, pure=True), ()
        parts = [part(b, None if yb is None else yb[k], k, starts[k], **kwargs) for k, b in enumerate(xb)]
    else:  # the same tree, each node a pair
        part, merge, lead = dask.delayed(_block_sums_with, pure=True), dask.delayed(_merge_with, pure=True), tap[1:]
        parts = [part(b, k, starts[k], tap[0], **kwargs) for k, b in enumerate(xb)]
    parts = merge_levels(parts, functools.partial(merge, *lead), split_every)
    (result,) = dask.compute(parts[0]) if parts else (None,)
    return result


def _partial_bytes(x, kwargs, tap):
    """About the bytes of one block's partial sums: the d x d second moment (twice with a clipping-loss tap; the
    third moment's d^3 with ``third``), where the width is known; else unbounded (the graph's path)."""
    d = _known_width(x)
    if d is None:
        return float("inf")
    return 8.0 * d * d * (2 if tap is not None else 1) * (d if kwargs.get("third") else 1)


def _merged_where_held(handles, ones, kwargs, split_every, tap, starts):
    """:func:`_computed`'s tree over blocks spilled on the workers (:func:`~dpmoments.data.dask_spill.merged_where_held`)."""
    if tap is None:
        per_block = functools.partial(_held_sums, ones=ones, kwargs=kwargs)
        return merged_where_held(handles, per_block, _merge_parts, split_every, starts)
    per_block = functools.partial(_held_sums_with, tap=tap[0], kwargs=kwargs)
    return merged_where_held(handles, per_block, functools.partial(_merge_with, *tap[1:]), split_every, starts)


def _held_sums(block, k, start, ones, kwargs):
    return _block_sums(block, _ONES if ones else None, k, start, **kwargs)


def _held_sums_with(block, k, start, tap, kwargs):
    return _block_sums_with(block, k, start, tap, **kwargs)


def _known_width(x):
    """The collection's number of columns, or ``None`` where it is not known before the blocks are read."""
    width = len(x.columns) if _is_frame(x) else x.shape[1] if getattr(x, "ndim", 0) == 2 else None
    return int(width) if isinstance(width, (int, np.integer)) else None


def _check_center_width(x, center):
    """The centre's length against the known width, before any task (not "In dask block 0: ..." from each)."""
    if center is None or np.ndim(center) != 1:
        return  # none, or a shape accumulate_moments refuses in its own words
    width = _known_width(x)
    if width is not None and len(center) != width:
        raise ValueError(f"'center' must have one entry per feature ({width}); got {len(center)}.")


def rows_array(x):
    """The rows of a dask array or DataFrame as a 2-D dask array (a frame's block lengths unknown: nothing is read)."""
    return _as_array(x, "X")


def _as_array(x, name):
    """A 2-D (or, for ``y``, 1-D) dask array from a dask array or DataFrame/Series."""
    _, da = _import_dask()
    if isinstance(x, da.Array):
        return x
    if _is_frame(x):
        return x.to_dask_array()  # lengths unknown (NaN): nothing is read to count rows
    raise TypeError(f"'{name}' must be a dask array or dask DataFrame; got {type(x).__name__}.")


def _x_blocks(x):
    """One delayed float64 block (full width) per row block or partition."""
    replayed = replayed_blocks(x)
    if replayed is not None:  # each block once on its worker's disk: its handle is the task's argument
        return replayed
    if _is_frame(x):
        if getattr(x, "ndim", 2) != 2:
            raise ValueError("'X' must be a dask DataFrame (2-D); got a Series. Use series.to_frame().")
        return [_frame_block(p) for p in x.to_delayed()]
    x = _as_array(x, "X")
    if np.dtype(x.dtype).kind not in "biuf":
        raise TypeError(f"'X' must hold real numbers; got dtype {x.dtype}.")
    if x.ndim != 2:
        raise ValueError(f"'X' must be 2-D with shape (n_samples, n_features); got {x.ndim}-D shape {x.shape}.")
    if x.numblocks[1] > 1:
        x = x.rechunk({1: -1})  # a row's clipping needs the whole row inside one task
    return list(x.to_delayed().ravel())


def _frame_pair_blocks(x, y):
    import dask

    if getattr(x, "ndim", 2) != 2 or getattr(y, "ndim", 1) != 1:
        raise ValueError("With a dask DataFrame 'X', 'y' must be a dask Series (one column).")
    joined = x.assign(**{_Y_COLUMN: y})
    return [dask.delayed(_frame_pair_to_numpy, pure=True)(p) for p in joined.to_delayed()]


def _frame_pair_to_numpy(p):
    A = _frame_values(p, "X")
    return A[:, :-1], np.ascontiguousarray(A[:, -1])


def _frame_block(partition):
    import dask

    return dask.delayed(_frame_to_numpy, pure=True)(partition)


def _frame_to_numpy(p):
    A = _frame_values(p, "X")
    return A if p.ndim == 2 else A[:, None]


def _frame_values(p, name):
    """A partition as float64 under the one input rule: numeric columns as they are (missing -> NaN, refused
    later with its row); anything else through ``as_float_array``, which refuses text without quoting it
    (pandas' own conversion error quotes the cell, and would parse numeric strings silently)."""
    from pandas.api.types import is_numeric_dtype

    if all(is_numeric_dtype(t) for t in ([p.dtype] if p.ndim == 1 else p.dtypes)):
        return p.to_numpy(dtype=np.float64, na_value=np.nan)
    return as_float_array(p.to_numpy(), name)


def _y_blocks(y, x, nblocks):
    _, da = _import_dask()
    if _is_frame(y):
        if y.npartitions != nblocks:
            raise ValueError(f"'y' has {y.npartitions} partitions but 'X' has {nblocks} row blocks; "
                             "take both from the same DataFrame.")
        return [_frame_vector(p) for p in y.to_delayed()]
    if not isinstance(y, da.Array):
        y = _numpy_y_blocked_like(y, x, da)
    if y.ndim != 1:
        raise ValueError(f"'y' must be 1-D with shape (n_samples,); got {y.ndim}-D shape {y.shape}.")
    if np.dtype(y.dtype).kind not in "biuf":
        raise TypeError(f"'y' must hold real numbers; got dtype {y.dtype}.")
    if not _is_frame(x):
        y = _dask_y_blocked_like(y, _as_array(x, "X").chunks[0])
    if y.numblocks[0] != nblocks:
        raise ValueError(f"'y' has {y.numblocks[0]} row blocks but 'X' has {nblocks}.")
    return list(y.to_delayed().ravel())


def _numpy_y_blocked_like(y, x, da):
    """An in-memory ``y`` as a dask array in ``x``'s row blocks, which must be known and hold as many rows."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"'y' must be 1-D with shape (n_samples,); got {y.ndim}-D shape {y.shape}.")
    x_rows = None if _is_frame(x) else _as_array(x, "X").chunks[0]
    if x_rows is None or any(np.isnan(c) for c in x_rows):
        raise ValueError("A numpy 'y' needs 'X' with known row blocks; pass y as a dask array blocked like X.")
    if y.shape[0] != sum(x_rows):
        raise ValueError(f"'y' must have one entry per row of 'X' ({sum(x_rows)}); got {y.shape[0]}.")
    return da.from_array(y, chunks=(x_rows,))


def _dask_y_blocked_like(y, x_rows):
    """A dask ``y`` rechunked to ``X``'s row blocks ``x_rows``, refused where the rows cannot be matched."""
    if y.chunks[0] == x_rows:
        return y
    known = not any(np.isnan(c) for c in x_rows + y.chunks[0])
    if known and sum(x_rows) != sum(y.chunks[0]):
        raise ValueError(f"'y' must have one entry per row of 'X' ({sum(x_rows)}); got {sum(y.chunks[0])}.")
    if not known:
        raise ValueError("'y' and 'X' have different (unknown) row blocks; derive y from the same "
                         "collection as X, or compute chunk sizes first.")
    return y.rechunk((x_rows,))


def _frame_vector(partition):
    import dask

    return dask.delayed(_series_to_numpy, pure=True)(partition)


def _series_to_numpy(p):
    return _frame_values(p, "y").reshape(-1)


def _block_starts(x, nblocks):
    """The first row of every block, where the row blocks are known (else None for each)."""
    chunks = getattr(x, "chunks", None)
    rows = chunks[0] if chunks and not _is_frame(x) else None
    if rows is None or len(rows) != nblocks or any(np.isnan(r) for r in rows):
        return [None] * nblocks
    return [int(s) for s in np.cumsum((0,) + tuple(rows[:-1]))]


def _block_sums(X, y, k, start, **kwargs):
    """Partial sums of one block (``None`` for an empty block); runs inside one task."""
    if isinstance(X, tuple):  # an (X, y) partition of a DataFrame
        X, y = X
    X = np.asarray(X)
    if X.ndim == 2 and X.shape[0] == 0:
        return None
    if isinstance(y, str) and y == _ONES:
        y = np.ones(X.shape[0])
    try:
        return accumulate_moments(X if y is None else (X, np.asarray(y)), **kwargs)
    except ValueError as exc:
        where = f"In dask block {k} (0-based, along rows)"
        for name, A in (("X", X), ("y", y)):
            A = None if A is None else np.asarray(A)
            if A is not None and A.dtype.kind == "f" and not np.all(np.isfinite(A)):
                r = int(np.argwhere(~np.isfinite(A))[0][0])
                row = f"row {start + r} (0-based)" if start is not None else f"row {r} of the block (0-based)"
                raise ValueError(f"{where}: '{name}' has a NaN or infinite value at {row}; remove or impute it "
                                 "first.") from None
        raise ValueError(f"{where}: {exc}") from None


def _block_sums_with(X, k, start, per_block, **kwargs):
    """One block's moment sums and its tap's sums, in one task (the block is read once)."""
    X = np.asarray(X)
    return _block_sums(X, None, k, start, **kwargs), per_block(X)


def _merge_with(merge_tap, *parts):
    return _merge_parts(*(p[0] for p in parts)), merge_tap(*(p[1] for p in parts))


def _merge_parts(*parts):
    out = None
    for p in parts:
        if p is not None:
            out = p if out is None else out.merge(p)
    return out
