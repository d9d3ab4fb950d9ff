"""Dask collections over files, built without reading them (extra ``dpmoments[dask]``).

* :func:`open_zarr_array`: ``da.from_zarr`` (the preferred on-disk format).
* :func:`open_npy_array`: one ``map_blocks`` task per row block, each reading
  *only its rows* (one positioned read; a memory map for Fortran-ordered files). Never
  ``da.from_array(np.load(path, mmap_mode="r"))``: dask copies the whole
  memory map into memory, as large as the file.
* :func:`open_parquet_frame`: ``dd.read_parquet``; moments are taken
  partition by partition (never ``to_dask_array(lengths=True)``, which reads
  the whole dataset once just to count rows).

Their moments are summed per block by :func:`dpmoments.moments.dask_moments.dask_moment_sums`.
dask is imported inside the functions; without it they raise an
``ImportError`` naming ``pip install "dpmoments[dask]"``.
"""

import numbers
import os
import sys

import numpy as np

__all__ = ["open_npy_array", "open_parquet_frame", "open_zarr_array", "import_dask", "import_dataframe"]

_INSTALL = 'pip install "dpmoments[dask]"'
# Default rows per block of ``open_npy_array``: about 64 MiB of float64 per block.
_NPY_BLOCK_BYTES = 64 << 20


def import_dask():
    """``(dask, dask.array)``, or an ``ImportError`` naming the extra to install."""
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(f"Moments of dask arrays and the Zarr/.npy/Parquet dask readers need dask: {_INSTALL}.") \
            from exc
    return dask, da


def import_dataframe():
    """``dask.dataframe``, or an ``ImportError`` naming the extra to install."""
    try:
        import dask.dataframe as dd
    except ImportError as exc:  # pragma: no cover
        raise ImportError(f"dask DataFrames (Parquet) need dask[dataframe] and pandas: {_INSTALL}.") from exc
    return dd


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
    _, da = import_dask()
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
    _, da = import_dask()
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
    dd = import_dataframe()
    path = [os.fspath(p) for p in path] if isinstance(path, (list, tuple)) else os.fspath(path)
    return dd.read_parquet(path, columns=None if columns is None else list(columns))
