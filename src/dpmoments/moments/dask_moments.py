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

Readers that build dask collections without loading the file:

* :func:`open_zarr_array`: ``da.from_zarr`` (the preferred on-disk format).
* :func:`open_npy_array`: one ``map_blocks`` task per row block, each reading
  *only its rows* (one positioned read; a memory map for Fortran-ordered files). Never
  ``da.from_array(np.load(path, mmap_mode="r"))``: dask copies the whole
  memory map into memory, as large as the file.
* :func:`open_parquet_frame`: ``dd.read_parquet``; moments are taken
  partition by partition (never ``to_dask_array(lengths=True)``, which reads
  the whole dataset once just to count rows).

Only the row axis may be chunked: a dask array with several column blocks
is rechunked to one column block first (``x.rechunk({1: -1})``), which makes
each task hold a full-width row block.

dask is imported inside the functions; without it they raise an
``ImportError`` naming ``pip install "dpmoments[dask]"``.
"""

import numbers
import os
import sys

import numpy as np

from dpmoments._validation import as_float_array
from .accumulate import accumulate_moments

__all__ = ["dask_moment_sums", "is_dask_collection", "open_npy_array", "open_parquet_frame", "open_zarr_array",
           "row_ones", "names_only"]

_INSTALL = 'pip install "dpmoments[dask]"'
# Partial sums merged per task of the reduction tree.
_SPLIT_EVERY = 8
# Default rows per block of ``open_npy_array``: about 64 MiB of float64 per block.
_NPY_BLOCK_BYTES = 64 << 20
# The response's column while it rides along with the features of a DataFrame.
_Y_COLUMN = "__dpmoments_y__"


def _import_dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(f"Moments of dask arrays and the Zarr/.npy/Parquet dask readers need dask: {_INSTALL}.") \
            from exc
    return dask, da


def _import_dataframe():
    try:
        import dask.dataframe as dd
    except ImportError as exc:  # pragma: no cover
        raise ImportError(f"dask DataFrames (Parquet) need dask[dataframe] and pandas: {_INSTALL}.") from exc
    return dd


def is_dask_collection(obj):
    """True for a dask array, DataFrame or Series (checked without importing dask)."""
    if not type(obj).__module__.startswith("dask"):
        return False
    try:
        import dask
    except ImportError:  # pragma: no cover
        return False
    return dask.is_dask_collection(obj)


def _is_frame(obj):
    return is_dask_collection(obj) and hasattr(obj, "divisions") and hasattr(obj, "to_delayed")


def names_only(frame):
    """An empty pandas DataFrame with a dask DataFrame's columns: scikit-learn reads names from eager frames only."""
    import pandas as pd  # dask's own dependency

    return pd.DataFrame(columns=list(frame.columns))


def row_ones(x):
    """A dask vector of ones with one entry per row of ``x``, blocked like ``x``'s rows.

    Works for unknown block lengths (a DataFrame converted without
    ``lengths=True``): each block's length is read inside its own task.
    """
    _, da = _import_dask()
    if _is_frame(x):
        return x.map_partitions(_partition_ones)
    x = _as_array(x, "X")
    return x.map_blocks(lambda b: np.ones(b.shape[0]), drop_axis=1, dtype=np.float64, meta=np.empty((0,)))


def _partition_ones(p):
    import pandas as pd

    return pd.Series(np.ones(len(p)), index=p.index, name="ones")


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
        match ``x``'s (known) row blocks.
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
    dask, _ = _import_dask()
    # Validate the options before any task runs (the same errors as the numpy path).
    if (row_norm is None) == (entry_bound is None):
        accumulate_moments([np.zeros((1, 1))], row_norm=row_norm, entry_bound=entry_bound)  # raises
    split_every = max(2, int(split_every))
    _check_center_width(x, center)
    if y is not None and _is_frame(x) and _is_frame(y):
        # Columns of one DataFrame: join them so that every partition carries its X and y rows (the two
        # collections on their own may be partitioned differently once dask optimises the reads).
        xb, yb = _frame_pair_blocks(x, y), None
    else:
        xb = _x_blocks(x)
        yb = None if y is None else _y_blocks(y, x, len(xb))
    kwargs = dict(row_norm=row_norm, entry_bound=entry_bound, response_bound=response_bound, third=third,
                  center=center)
    part = dask.delayed(_block_sums, pure=True)
    starts = _block_starts(x, len(xb))
    parts = [part(b, None if yb is None else yb[k], k, starts[k], **kwargs) for k, b in enumerate(xb)]
    merge = dask.delayed(_merge_parts, pure=True)
    while len(parts) > 1:
        parts = [merge(*parts[i:i + split_every]) for i in range(0, len(parts), split_every)]
    (result,) = dask.compute(parts[0]) if parts else (None,)
    if result is None:
        raise ValueError("The data have no rows (n = 0): at least one row is needed to accumulate moments.")
    return result


def _check_center_width(x, center):
    """The centre's length against the known width, before any task (not "In dask block 0: ..." from each)."""
    if center is None or np.ndim(center) != 1:
        return  # none, or a shape accumulate_moments refuses in its own words
    width = len(x.columns) if _is_frame(x) else x.shape[1] if getattr(x, "ndim", 0) == 2 else None
    if isinstance(width, (int, np.integer)) and len(center) != width:
        raise ValueError(f"'center' must have one entry per feature ({width}); got {len(center)}.")


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
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"'y' must be 1-D with shape (n_samples,); got {y.ndim}-D shape {y.shape}.")
        x_rows = None if _is_frame(x) else _as_array(x, "X").chunks[0]
        if x_rows is None or any(np.isnan(c) for c in x_rows):
            raise ValueError("A numpy 'y' needs 'X' with known row blocks; pass y as a dask array blocked like X.")
        if y.shape[0] != sum(x_rows):
            raise ValueError(f"'y' must have one entry per row of 'X' ({sum(x_rows)}); got {y.shape[0]}.")
        y = da.from_array(y, chunks=(x_rows,))
    if y.ndim != 1:
        raise ValueError(f"'y' must be 1-D with shape (n_samples,); got {y.ndim}-D shape {y.shape}.")
    if np.dtype(y.dtype).kind not in "biuf":
        raise TypeError(f"'y' must hold real numbers; got dtype {y.dtype}.")
    if not _is_frame(x):
        x_rows = _as_array(x, "X").chunks[0]
        if y.chunks[0] != x_rows:
            known = not any(np.isnan(c) for c in x_rows + y.chunks[0])
            if known and sum(x_rows) != sum(y.chunks[0]):
                raise ValueError(f"'y' must have one entry per row of 'X' ({sum(x_rows)}); got {sum(y.chunks[0])}.")
            if not known:
                raise ValueError("'y' and 'X' have different (unknown) row blocks; derive y from the same "
                                 "collection as X, or compute chunk sizes first.")
            y = y.rechunk((x_rows,))
    if y.numblocks[0] != nblocks:
        raise ValueError(f"'y' has {y.numblocks[0]} row blocks but 'X' has {nblocks}.")
    return list(y.to_delayed().ravel())


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


def _merge_parts(*parts):
    out = None
    for p in parts:
        if p is not None:
            out = p if out is None else out.merge(p)
    return out


# -- readers -------------------------------------------------------------------

def open_zarr_array(path, component=None, *, chunk_rows=None):
    """A dask array over a 2-D Zarr array, blocked along rows on the stored chunks (nothing is read).

    Parameters
    ----------
    path : str or os.PathLike
        The Zarr store (a directory) or a URL dask/zarr understand.
    component : str, optional
        The array inside a group.
    chunk_rows : int, optional
        Rows per dask block, rounded up to a whole number of stored row
        chunks (worth setting when the stored chunks are small, say under
        16 MiB of whole rows: one task per chunk then costs more than the
        read). Default: one stored row chunk per block.

    Returns
    -------
    dask.array.Array
        Blocks of whole rows (all columns), each a whole number of stored
        chunks along rows, so no chunk is read twice.

    Notes
    -----
    The recommended layout for moments is chunks of whole rows,
    uncompressed (``zarr.create_array(..., chunks=(rows, d),
    compressors=None)``): a local store in that layout (Zarr format 2 or 3,
    no filters, no sharding, native byte order) is read with one positioned
    read per chunk file straight into the block, without the extra copies
    of zarr's generic path. Any other store or layout (compressed,
    column-split chunks, remote) is read through zarr, a block of whole rows
    per task. ``zarr.create_array``'s default layout (zstd, chunks of a few
    columns) is several times slower to read than the recommended one
    (``benchmarks/results/dask_moments.md``).
    """
    _, da = _import_dask()
    try:
        import zarr
    except ImportError as exc:  # pragma: no cover
        raise ImportError(f"Reading Zarr needs zarr: {_INSTALL}.") from exc
    url = os.fspath(path)
    try:
        z = zarr.open_array(store=url, path=component, mode="r") if component is not None else \
            zarr.open_array(store=url, mode="r")
    except Exception:  # remote URLs with storage options and the like: dask's own opener
        z = None
    if z is None or z.ndim != 2:
        x = da.from_zarr(url, component=component)
        if x.ndim != 2:
            raise ValueError(f"Zarr array '{path}' must be 2-D (n_samples, n_features); got shape {x.shape}.")
        return x
    n, d = z.shape
    cr = max(1, int(z.chunks[0]))
    dtype = np.dtype(z.dtype)
    if chunk_rows is None:
        per_block = 1
    else:
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, numbers.Integral) or chunk_rows < 1:
            raise ValueError(f"'chunk_rows' must be a positive integer; got {chunk_rows!r}.")
        per_block = -(-int(chunk_rows) // cr)
    block = per_block * cr
    rows = tuple(min(block, n - a) for a in range(0, n, block)) or (0,)
    plain = _plain_local_zarr(z)
    if plain is None:
        # zarr reads every stored chunk a block overlaps concurrently, in one call per block.
        return da.from_array(z, chunks=(rows, (d,)), name=f"from-zarr-{_zarr_token(z, url, component, rows)}")
    root, keys, fill = plain
    starts = tuple(int(s) for s in np.concatenate([[0], np.cumsum(rows)[:-1]]))
    return da.map_blocks(_read_zarr_rows, dtype=dtype, chunks=(rows, (d,)), meta=np.empty((0, 0), dtype),
                         root=root, chunk_keys=keys, starts=starts, rows=rows, chunk_rows=cr, width=d,
                         file_dtype=dtype.str, fill=fill, name=f"zarr-{_zarr_token(z, url, component, rows)}")


def _zarr_token(z, url, component, rows):
    from dask.base import tokenize

    return tokenize(url, component, z.shape, z.chunks, str(z.dtype), rows, _zarr_mtime(url, component))


def _zarr_mtime(url, component):
    base = os.path.join(url, component) if component else url
    for name in ("zarr.json", ".zarray"):
        try:
            return os.path.getmtime(os.path.join(base, name))
        except OSError:
            pass
    return None


def _plain_local_zarr(z):
    """``(directory, chunk file names, fill value)`` when ``z`` can be read by plain positioned reads, else None.

    That is a local store, chunks of whole rows, raw bytes in native order (no
    compressor, filter, transpose or sharding), a regular chunk grid.
    """
    try:
        from zarr.storage import LocalStore
    except ImportError:  # zarr 2: always the generic path
        return None
    meta = getattr(z, "metadata", None)
    if meta is None or not isinstance(z.store, LocalStore) or getattr(z, "shards", None) is not None:
        return None
    dtype, (n, d) = np.dtype(z.dtype), z.shape
    if not _native_numeric(dtype) or tuple(z.chunks)[1] != d:  # or column-split chunks
        return None
    try:
        if not _raw_chunks(meta, dtype):
            return None
        nchunks = -(-n // int(z.chunks[0])) if n else 0
        keys = tuple(meta.encode_chunk_key((i, 0)) for i in range(nchunks))
        fill = 0 if meta.fill_value is None else np.asarray(meta.fill_value, dtype=dtype).item()
    except Exception:  # any metadata this reader does not know: the generic path
        return None
    root = os.path.abspath(os.fspath(z.store.root))
    return (os.path.join(root, z.path) if z.path else root), keys, fill


def _native_numeric(dtype):
    """A plain number type stored in this machine's byte order."""
    native = "<" if sys.byteorder == "little" else ">"
    return dtype.kind in "biuf" and not dtype.hasobject and dtype.byteorder in ("=", "|", native)


def _raw_chunks(meta, dtype):
    """Whether every chunk file holds the raw bytes of its rows (Zarr 2 or 3 metadata)."""
    if meta.zarr_format == 3:
        from zarr.codecs import BytesCodec
        from zarr.core.chunk_grids import RegularChunkGrid

        codecs = tuple(meta.codecs)
        if len(codecs) != 1 or not isinstance(codecs[0], BytesCodec) or \
                not isinstance(meta.chunk_grid, RegularChunkGrid):
            return False
        endian = getattr(codecs[0].endian, "value", codecs[0].endian)
        return dtype.itemsize == 1 or endian in (None, sys.byteorder)
    if meta.zarr_format == 2:
        return meta.compressor is None and not meta.filters and meta.order == "C"
    return False  # pragma: no cover


def _aligned_empty(count, dtype, file_offset=0):
    """An uninitialised 1-D array whose first byte sits at ``file_offset`` modulo the 4 KiB page.

    Reading a file into a buffer whose address is 16 bytes past the file
    offset modulo 4096 (what ``malloc`` returns for a large buffer read from
    offset 0) was 3x slower on the benchmark machine (4K aliasing in the
    kernel's copy); matching the offsets avoids it.
    """
    dtype = np.dtype(dtype)
    nbytes = int(count) * dtype.itemsize
    raw = np.empty(nbytes + 8192, dtype=np.uint8)
    start = (int(file_offset) - raw.ctypes.data) % 4096
    return raw[start:start + nbytes].view(dtype)


def _read_exact(path, offset, out_bytes):
    """Fill the byte view ``out_bytes`` from ``path`` at ``offset``; the number of bytes read."""
    got = 0
    with open(path, "rb", buffering=0) as f:
        if offset:
            f.seek(offset)
        while got < len(out_bytes):
            k = f.readinto(out_bytes[got:])
            if not k:
                break
            got += k
    return got


def _read_zarr_rows(block_id=None, *, root, chunk_keys, starts, rows, chunk_rows, width, file_dtype, fill):
    i = block_id[0]
    dtype = np.dtype(file_dtype)
    a, m = starts[i], rows[i]
    out = _aligned_empty(m * width, dtype).reshape(m, width)
    view = memoryview(out.reshape(-1)).cast("B")
    row_bytes = width * dtype.itemsize
    r = a
    while r < a + m:
        c = r // chunk_rows
        lo = r - c * chunk_rows  # 0 unless the block starts inside a chunk
        take = min((c + 1) * chunk_rows, a + m) - r
        path = os.path.join(root, *chunk_keys[c].split("/"))
        dst = view[(r - a) * row_bytes:(r - a + take) * row_bytes]
        try:
            got = _read_exact(path, lo * row_bytes, dst)
        except FileNotFoundError:  # a chunk never written (or equal to the fill value) holds the fill value
            out[r - a:r - a + take] = fill
        else:
            if got != len(dst):
                raise ValueError(f"Zarr chunk '{path}' is shorter than the array's metadata says.")
        r += take
    return out


def open_npy_array(path, chunk_rows=None):
    """A dask array over a 2-D ``.npy`` file: each block reads only its own rows.

    Parameters
    ----------
    path : str or os.PathLike
    chunk_rows : int, optional
        Rows per block. Default: about 64 MiB per block.

    Returns
    -------
    dask.array.Array
        One ``map_blocks`` task per block; each reads only its rows with one
        positioned read (``np.fromfile`` at the block's offset; Fortran-ordered
        files through a memory map). The graph holds only the path, so it
        pickles to cluster workers that see the same file system.

    Notes
    -----
    ``da.from_array(np.load(path, mmap_mode="r"))`` copies the whole memory
    map into memory; this reader does not.
    """
    _, da = _import_dask()
    path = os.path.abspath(os.fspath(path))
    try:
        A = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"Could not read file '{path}' as a .npy array: {exc}") from exc
    if not isinstance(A, np.ndarray) or A.dtype.kind not in "biuf" or A.ndim != 2:
        raise ValueError(f"File '{path}' must hold a 2-D array of real numbers; got {getattr(A, 'dtype', '?')} "
                         f"shape {getattr(A, 'shape', '?')}.")
    n, d = A.shape
    dtype = A.dtype
    # A C-ordered file is read with one positioned read per block (no page faults of a memory map).
    offset = int(A.offset) if A.flags.c_contiguous and not A.dtype.hasobject else None
    del A
    if chunk_rows is None:
        chunk_rows = max(1, _NPY_BLOCK_BYTES // max(1, d * dtype.itemsize))
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, numbers.Integral) or chunk_rows < 1:
        raise ValueError(f"'chunk_rows' must be a positive integer; got {chunk_rows!r}.")
    rows = tuple(min(chunk_rows, n - a) for a in range(0, n, chunk_rows)) or (0,)
    starts = tuple(int(s) for s in np.concatenate([[0], np.cumsum(rows)[:-1]]))
    return da.map_blocks(_read_npy_rows, dtype=dtype, chunks=(rows, (d,)), meta=np.empty((0, 0), dtype),
                         path=path, starts=starts, rows=rows, offset=offset, width=d, file_dtype=dtype.str,
                         name=f"npy-{_token(path, n, d, chunk_rows)}")


def _token(*parts):
    from dask.base import tokenize

    return tokenize(*parts, os.path.getmtime(parts[0]))


def _read_npy_rows(block_id=None, *, path, starts, rows, offset, width, file_dtype):
    i = block_id[0]
    if offset is not None:
        dtype = np.dtype(file_dtype)
        count = rows[i] * width
        at = offset + starts[i] * width * dtype.itemsize
        out = _aligned_empty(count, dtype, file_offset=at)
        if _read_exact(path, at, memoryview(out).cast("B")) != count * dtype.itemsize:
            raise ValueError(f"File '{path}' is shorter than its header says (block {i}).")
        return out.reshape(rows[i], width)
    mm = np.load(path, mmap_mode="r", allow_pickle=False)
    try:
        return np.array(mm[starts[i]:starts[i] + rows[i]])  # copies only this block's rows
    finally:
        del mm


def open_parquet_frame(path, columns=None):
    """A dask DataFrame over Parquet file(s); moments are then taken per partition.

    Parameters
    ----------
    path : str, os.PathLike or list
        A file, a directory of files or a glob.
    columns : list of str, optional
        The columns to read (default: all).

    Returns
    -------
    dask.dataframe.DataFrame
        Pass it (or ``frame[features]`` and ``frame[target]``) to
        :func:`dask_moment_sums` or any release: partial sums are taken
        partition by partition, without counting rows first.
    """
    dd = _import_dataframe()
    path = [os.fspath(p) for p in path] if isinstance(path, (list, tuple)) else os.fspath(path)
    return dd.read_parquet(path, columns=None if columns is None else list(columns))
