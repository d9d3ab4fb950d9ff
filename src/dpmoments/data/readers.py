"""Chunked readers: one pass over data that need not fit in memory.

``iter_chunks`` turns an array, an ``(X, y)`` pair, a file (``.npy``,
``.csv``, ``.parquet``), a dask array or any iterable of chunks into a stream
of float64 row blocks, so that ``accumulate_moments`` touches every source the
same way and holds at most one chunk at a time.

Files are read by :func:`dpmoments.data.open_table` (one reader
for every format, in memory that does not grow with the file); pyarrow is
imported only when a CSV or Parquet file is read, and dask is never
imported here, only recognised.
"""

import numbers
import os

import numpy as np

from .._validation import as_float_array, check_columns_finite, check_int, frame_columns

from ._chunking import resolve_columns as _resolve
from ._chunking import split as _split
from .file_sets import is_file_set
from .tables import open_table

__all__ = ["iter_chunks"]


def iter_chunks(source, *, chunk_size=65536, columns=None, target=None, delimiter=None, header=True):
    """Stream a data source as float64 row blocks.

    Parameters
    ----------
    source : array, (X, y) tuple, path, dask array or iterable of chunks
        * a 2-D array (or anything with ``__array__``, e.g. a DataFrame);
        * a tuple ``(X, y)`` of a 2-D array and a 1-D array of equal length
          (a tuple of length 2 is always read as such a pair);
        * a path (``str`` or ``os.PathLike``) to a ``.csv``/``.tsv`` file
          (also ``.gz``/``.bz2`` compressed), a ``.parquet``/``.pq``, ``.npy``
          or ``.npz`` (``scipy.sparse.save_npz``) file, streamed in memory
          that does not grow with the file (see :func:`~dpmoments.data.open_table`);
        * several files read as one table: a directory of Parquet files (hive partitions), a glob,
          a list or tuple of paths, or a URL (``s3://``, ``gs://``, ``https://``; see
          :mod:`~dpmoments.data.file_sets`). A list of paths is never read as data;
        * a dask array: its row blocks are computed one at a time;
        * any other iterable (a list, a generator) of ``X`` chunks or
          ``(X, y)`` tuples: passed through unchanged and unchecked
          (``accumulate_moments`` checks each chunk). A list is read as a
          list of chunks, never as rows: a list whose first item is a row of
          numbers is refused (pass ``np.asarray(rows)``).
    chunk_size : int, default=65536
        The most rows in one yielded chunk (not applied to a passed-through
        iterable).
    columns : sequence of str or int, optional
        The feature columns, in order: names (files with a header, Parquet,
        DataFrames) or 0-based positions (any array or file). Default: every
        column except ``target``.
    target : str or int, optional
        The response column (a name or a position). When given, the chunks
        are ``(X, y)`` pairs.
    delimiter : str, optional
        Text files only: the field separator (default ``,``; tab for ``.tsv``).
    header : bool, default=True
        Text files only: whether the first row names the columns (else they
        are named ``x0, x1, ...``).

    Yields
    ------
    X : ndarray of shape (n_rows, n_features), or (X, y) with y of shape (n_rows,)
        ``n_rows <= chunk_size``. Chunks from files are new arrays; chunks of
        an in-memory array may be views of it.

    Raises
    ------
    FileNotFoundError
        The path does not exist.
    ValueError
        Unknown extension; a malformed file (empty, no data rows, a
        non-numeric, missing or non-finite value, a missing column, a header
        of numbers), with the file, column and row named but never a value;
        an array that is not 2-D; a masked array with masked entries.
    TypeError
        Text, missing (``None``/pandas ``NA``) or complex values in an array.

    Examples
    --------
    >>> import numpy as np
    >>> [c.shape for c in iter_chunks(np.ones((5, 2)), chunk_size=2)]
    [(2, 2), (2, 2), (1, 2)]
    """
    chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    if isinstance(source, (str, os.PathLike)) or is_file_set(source):
        table = open_table(source, columns=columns, target=target, delimiter=delimiter, header=header)
        return table.chunks(chunk_size)
    if delimiter is not None or header is not True:
        raise ValueError("'delimiter' and 'header' apply to text files, not to in-memory data.")
    if isinstance(source, tuple) and len(source) == 2:
        return _iter_pair(source, chunk_size, columns, target)
    if _is_dask(source) or hasattr(source, "__array__"):
        A = _check_array(source, "X")
        feats, t = _resolve(columns, target, _column_names(source), A.shape[1], "'X'")
        return _split(_blocks(A, chunk_size), feats, t)
    if isinstance(source, (bytes, dict)) or not hasattr(source, "__iter__"):
        raise TypeError(
            "'source' must be an array, an (X, y) tuple, a path to a data file, "
            f"a dask array or an iterable of chunks; got {type(source).__name__}."
        )
    if columns is not None or target is not None:
        raise ValueError("'columns' and 'target' apply to arrays and files, not to an iterable of chunks; got "
                         f"columns={columns!r}, target={target!r}.")
    return _chunks_of(source) if isinstance(source, list) else iter(source)


def _chunks_of(items):
    """A list of chunks, refused with the right advice when it is really a list of rows."""
    for k, item in enumerate(items):
        if isinstance(item, (list, tuple)) and item and all(isinstance(v, numbers.Number) for v in item):
            raise TypeError(f"A list is read as a list of chunks (2-D arrays or (X, y) pairs), but its item {k} is "
                            "a row of numbers: for a list of rows pass np.asarray(rows).")
        yield item


# -- arrays, pairs and dask --------------------------------------------------

def _is_dask(obj):
    return type(obj).__module__.startswith("dask")


def _column_names(source):
    names = getattr(source, "columns", None)
    return None if names is None or _is_dask(source) else [str(c) for c in names]


def _check_array(A, name):
    if _is_dask(A):
        if not hasattr(A, "blocks"):
            raise TypeError(f"'{name}' is a dask {type(A).__name__}; pass a dask array "
                            "(for a dask DataFrame: .to_dask_array(lengths=True)).")
    else:
        columns = frame_columns(A)
        A = as_float_array(A, name, convert=False)  # the one input rule (text, missing values, masks)
        if columns is not None and A.ndim == 2 and A.dtype.kind == "f":
            check_columns_finite(A, name, columns)  # a data frame's column has a name to give
    if np.dtype(A.dtype).kind not in "biuf":
        raise TypeError(f"'{name}' must hold real numbers; got dtype {A.dtype}.")
    if A.ndim != 2:
        raise ValueError(f"'{name}' must be 2-D with shape (n_samples, n_features); got {A.ndim}-D shape {A.shape}.")
    return A


def _blocks(A, chunk_size):
    """Yield ``(start_row, float64 block)`` with at most ``chunk_size`` rows."""
    if _is_dask(A):
        start = 0
        for i in range(A.numblocks[0]):
            block = np.asarray(A.blocks[i].compute(), dtype=np.float64)
            for lo in range(0, block.shape[0], chunk_size):
                yield start + lo, block[lo:lo + chunk_size]
            start += block.shape[0]
        return
    for start in range(0, A.shape[0], chunk_size):
        block = A[start:start + chunk_size]
        yield start, block.astype(np.float64, copy=False)


def _iter_pair(pair, chunk_size, columns, target):
    if target is not None:
        raise ValueError(f"'target' selects a response column, but the source is already an (X, y) pair; got target={target!r}.")
    X = _check_array(pair[0], "X")
    y = pair[1] if _is_dask(pair[1]) else as_float_array(pair[1], "y", convert=False)
    if y.ndim != 1:
        raise ValueError(f"'y' must be 1-D with shape (n_samples,); got {y.ndim}-D shape {y.shape}.")
    if np.dtype(y.dtype).kind not in "biuf":
        raise TypeError(f"'y' must hold real numbers; got dtype {y.dtype}.")
    if not (np.isnan(X.shape[0]) or np.isnan(y.shape[0])) and X.shape[0] != y.shape[0]:
        raise ValueError(f"'y' must have one entry per row of 'X' ({X.shape[0]}); got {y.shape[0]}.")
    feats, _ = _resolve(columns, None, _column_names(pair[0]), X.shape[1], "'X'")
    return _pair_chunks(X, y, chunk_size, feats)


def _pair_chunks(X, y, chunk_size, feats):
    for start, Xb in _blocks(X, chunk_size):
        yb = y[start:start + Xb.shape[0]]
        yb = np.asarray(yb.compute() if _is_dask(yb) else yb, dtype=np.float64)
        yield (Xb if feats == list(range(Xb.shape[1])) else Xb[:, feats]), yb
