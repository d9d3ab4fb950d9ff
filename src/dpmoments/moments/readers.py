"""Chunked readers: one pass over data that need not fit in memory.

``iter_chunks`` turns an array, an ``(X, y)`` pair, a file (``.npy``,
``.csv``, ``.parquet``), a dask array or any iterable of chunks into a stream
of float64 row blocks, so that ``accumulate_moments`` touches every source the
same way and holds at most one chunk at a time.

Optional dependencies are imported only when needed: pyarrow for Parquet (and
for fast CSV; the standard-library ``csv`` module is the fallback) and dask,
which is never imported here, only recognised.
"""

import csv
import numbers
import os
from pathlib import Path

import numpy as np

from dpmoments._validation import check_int

__all__ = ["iter_chunks"]

_EXTENSIONS = (".npy", ".csv", ".parquet", ".pq")
# pyarrow's default CSV null tokens; the stdlib fallback reads them as NaN too.
_NULL_TOKENS = frozenset(
    ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
     "1.#QNAN", "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null"]
)


def iter_chunks(source, *, chunk_size=65536, columns=None, target=None):
    """Stream a data source as float64 row blocks.

    Parameters
    ----------
    source : array, (X, y) tuple, path, dask array or iterable of chunks
        * a 2-D array (or anything with ``__array__``, e.g. a DataFrame);
        * a tuple ``(X, y)`` of a 2-D array and a 1-D array of equal length
          (a tuple of length 2 is always read as such a pair);
        * a path (``str`` or ``os.PathLike``) to a ``.npy`` file (memory-mapped,
          never loaded whole), a ``.csv`` file with a header row, or a
          ``.parquet`` / ``.pq`` file;
        * a dask array: its row blocks are computed one at a time;
        * any other iterable (a list, a generator) of ``X`` chunks or
          ``(X, y)`` tuples: passed through unchanged and unchecked
          (``accumulate_moments`` checks each chunk). A list is read as a
          list of chunks, never as rows: wrap nested lists in ``np.asarray``.
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
        non-numeric, missing or non-finite value, a missing column), with the
        file, column and row named; an array that is not 2-D.
    ImportError
        A ``.parquet`` file without pyarrow (``pip install dpmoments[parquet]``).

    Examples
    --------
    >>> import numpy as np
    >>> [c.shape for c in iter_chunks(np.ones((5, 2)), chunk_size=2)]
    [(2, 2), (2, 2), (1, 2)]
    """
    chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    if isinstance(source, (str, os.PathLike)):
        return _iter_path(Path(source), chunk_size, columns, target)
    if isinstance(source, tuple) and len(source) == 2:
        return _iter_pair(source, chunk_size, columns, target)
    if _is_dask(source) or hasattr(source, "__array__"):
        A = _check_array(source, "X")
        feats, t = _resolve(columns, target, _column_names(source), A.shape[1], "'X'")
        return _split(_blocks(A, chunk_size), feats, t)
    if isinstance(source, (bytes, dict)) or not hasattr(source, "__iter__"):
        raise TypeError(
            "'source' must be an array, an (X, y) tuple, a path to a .npy/.csv/.parquet file, "
            f"a dask array or an iterable of chunks; got {type(source).__name__}."
        )
    if columns is not None or target is not None:
        raise ValueError("'columns' and 'target' apply to arrays and files, not to an iterable of chunks; got "
                         f"columns={columns!r}, target={target!r}.")
    return iter(source)


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
        A = np.asarray(A)
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


def _split(blocks, feats, t):
    """``(start, block)`` -> ``X`` or ``(X, y)`` with the selected columns."""
    n_cols = None
    for _, block in blocks:
        n_cols = block.shape[1] if n_cols is None else n_cols
        X = block if feats == list(range(n_cols)) else block[:, feats]
        yield X if t is None else (X, np.ascontiguousarray(block[:, t]))


def _iter_pair(pair, chunk_size, columns, target):
    if target is not None:
        raise ValueError(f"'target' selects a response column, but the source is already an (X, y) pair; got target={target!r}.")
    X = _check_array(pair[0], "X")
    y = pair[1] if _is_dask(pair[1]) else np.asarray(pair[1])
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


def _resolve(columns, target, names, n_cols, where):
    """Feature positions and target position (or None) from names/positions."""
    t = None if target is None else _position(target, "target", names, n_cols, where)
    if columns is None:
        feats = [j for j in range(n_cols) if j != t]
    else:
        if isinstance(columns, (str, bytes, numbers.Number)) or not hasattr(columns, "__iter__"):
            raise TypeError(f"'columns' must be a list of column names or positions; got {type(columns).__name__} {columns!r}.")
        feats = [_position(c, "columns", names, n_cols, where) for c in columns]
        if len(set(feats)) != len(feats):
            raise ValueError(f"'columns' names a column more than once; got {list(columns)!r}.")
        if t in feats:
            raise ValueError(f"'target' {target!r} is also listed in 'columns'; a response cannot be a feature.")
    if not feats:
        raise ValueError(f"No feature columns are left in {where}; got columns={columns!r}, target={target!r}.")
    return feats, t


def _position(c, param, names, n_cols, where):
    if isinstance(c, str):
        if names is None:
            raise TypeError(f"'{param}' gives a column name ({c!r}) but {where} has no column names; use 0-based positions.")
        if c not in names:
            raise ValueError(f"{where} has no column named {c!r} (from '{param}'); its columns are {names}.")
        if names.count(c) > 1:
            raise ValueError(f"{where} has more than one column named {c!r} (from '{param}').")
        return names.index(c)
    if isinstance(c, bool) or not isinstance(c, numbers.Integral):
        raise TypeError(f"'{param}' must hold column names (str) or positions (int); got {type(c).__name__} {c!r}.")
    if not -n_cols <= c < n_cols:
        raise ValueError(f"'{param}' positions must be in [0, {n_cols}) for {where}; got {c}.")
    return int(c) % n_cols


# -- files -------------------------------------------------------------------

def _iter_path(path, chunk_size, columns, target):
    if not path.exists():
        raise FileNotFoundError(f"No such data file: '{path}'.")
    if path.is_dir():
        raise ValueError(f"'{path}' is a directory; give one {', '.join(_EXTENSIONS)} file.")
    suffix = path.suffix.lower()
    if suffix not in _EXTENSIONS:
        raise ValueError(f"Cannot read '{path}': unknown extension {path.suffix!r}; supported: {', '.join(_EXTENSIONS)}.")
    opener = {".npy": _open_npy, ".csv": _open_csv}.get(suffix, _open_parquet)
    return opener(path, chunk_size, columns, target)


def _checked(blocks, where, labels, row_text):
    """Raise on the first non-finite value, naming file, column and row."""
    total = 0
    for start, block in blocks:
        bad = ~np.isfinite(block)
        if bad.any():
            r, c = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{where}: missing or non-finite value ({block[r, c]}) in column {labels[c]} "
                             f"at {row_text(start + r)}; remove or impute it first.")
        total += block.shape[0]
        yield start, block
    if total == 0:
        raise ValueError(f"{where} has no data rows.")


def _open_npy(path, chunk_size, columns, target):
    where = f"file '{path}'"
    try:
        A = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"Could not read {where} as a .npy array: {exc}") from exc
    if not isinstance(A, np.ndarray) or A.dtype.kind not in "biuf":
        kind = A.dtype if isinstance(A, np.ndarray) else type(A).__name__
        raise ValueError(f"{where} must hold an array of real numbers; got {kind}.")
    if A.ndim != 2:
        raise ValueError(f"{where} must hold a 2-D array (n_samples, n_features); got {A.ndim}-D shape {A.shape}.")
    feats, t = _resolve(columns, target, None, A.shape[1], where)
    used = feats + ([] if t is None else [t])
    labels = [str(j) for j in used]
    everything = used == list(range(A.shape[1]))
    # Copy each block out of the memory map (fancy indexing copies already).
    blocks = ((s, np.array(b) if everything else b[:, used]) for s, b in _blocks(A, chunk_size))
    blocks = _checked(blocks, where, labels, lambda r: f"row {r} (0-based)")
    return _split(blocks, list(range(len(feats))), None if t is None else len(feats))


def _used_names(header, columns, target, where):
    feats, t = _resolve(columns, target, header, len(header), where)
    used = feats + ([] if t is None else [t])
    names = [header[j] for j in used]
    for j, name in zip(used, names):
        if name == "":
            raise ValueError(f"{where}: column {j} (0-based) of the header has no name; name it or select columns.")
        if header.count(name) > 1:
            raise ValueError(f"{where}: the header names column {name!r} more than once.")
    return names, len(feats), t is not None


def _open_csv(path, chunk_size, columns, target):
    where = f"file '{path}'"
    with open(path, newline="", encoding="utf-8-sig") as f:
        header = next(csv.reader(f), None)
    if not header:
        raise ValueError(f"{where} is empty: expected a header row naming the columns.")
    names, n_feats, has_y = _used_names(header, columns, target, where)
    labels = [repr(n) for n in names]
    arrow = _import_pyarrow_csv()
    if arrow is None:
        blocks = _csv_stdlib(path, header, names, where, chunk_size)
    else:
        blocks = _csv_arrow(path, header, names, where, chunk_size, *arrow)
    row_text = lambda r: f"data row {r + 1} (1-based, header excluded)"  # noqa: E731
    blocks = _rebatch(_checked(blocks, where, labels, row_text), chunk_size)
    return _split(blocks, list(range(n_feats)), n_feats if has_y else None)


def _import_pyarrow_csv():
    try:
        import pyarrow
        import pyarrow.csv
    except ImportError:
        return None
    return pyarrow, pyarrow.csv


def _csv_arrow(path, header, names, where, chunk_size, pa, pacsv):
    with open(path, "rb") as f:
        sample = f.read(1 << 16)
    per_row = len(sample) / max(sample.count(b"\n"), 1)
    block_size = int(min(max(2 * per_row * chunk_size, 1 << 20), 1 << 26))
    options = {
        "read_options": pacsv.ReadOptions(block_size=block_size),
        "convert_options": pacsv.ConvertOptions(column_types={n: pa.float64() for n in names}, include_columns=names),
    }
    reader, start = None, 0
    while True:
        try:
            if reader is None:
                reader = pacsv.open_csv(path, **options)
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid as exc:
            for _ in _csv_stdlib(path, header, names, where, chunk_size):
                pass  # raises the precise error (column, line)
            raise ValueError(f"Could not parse {where}: {exc}") from exc
        block = np.empty((batch.num_rows, len(names)))
        for j, name in enumerate(names):
            block[:, j] = batch.column(name).to_numpy(zero_copy_only=False)
        yield start, block
        start += batch.num_rows


def _csv_stdlib(path, header, names, where, chunk_size):
    """The pyarrow-free reader; also locates the cell pyarrow could not parse."""
    idx = [header.index(n) for n in names]
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        next(reader)
        rows, start = [], 0
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise ValueError(f"{where}: line {reader.line_num} has {len(row)} fields but the header has {len(header)}.")
            rows.append([_parse_cell(row[j], header[j], where, reader.line_num) for j in idx])
            if len(rows) == chunk_size:
                yield start, np.array(rows, dtype=np.float64)
                start, rows = start + len(rows), []
        if rows:
            yield start, np.array(rows, dtype=np.float64)


def _parse_cell(cell, name, where, line):
    if cell in _NULL_TOKENS:
        return np.nan
    try:
        return float(cell)
    except ValueError:
        raise ValueError(f"{where}: non-numeric value {cell!r} in column {name!r} at line {line}.") from None


def _rebatch(blocks, chunk_size):
    """Re-cut ``(start, block)`` pairs into blocks of exactly ``chunk_size`` rows (the last may be shorter)."""
    pending, count, start = [], 0, 0
    for _, block in blocks:
        pos = 0
        if count:
            take = block[: chunk_size - count]
            pending.append(take)
            count, pos = count + take.shape[0], take.shape[0]
            if count < chunk_size:
                continue
            yield start, np.concatenate(pending)
            start, pending, count = start + chunk_size, [], 0
        while block.shape[0] - pos >= chunk_size:
            yield start, block[pos:pos + chunk_size]
            start, pos = start + chunk_size, pos + chunk_size
        if pos < block.shape[0]:
            pending, count = [block[pos:]], block.shape[0] - pos
    if count:
        yield start, np.concatenate(pending)


def _open_parquet(path, chunk_size, columns, target):
    where = f"file '{path}'"
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError(f"Reading {where} needs pyarrow: pip install dpmoments[parquet]") from exc
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"Could not read {where} as Parquet: {exc}") from exc
    schema = pf.schema_arrow
    names, n_feats, has_y = _used_names(list(schema.names), columns, target, where)
    for name in names:
        kind = schema.field(name).type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            raise ValueError(f"{where}: column {name!r} has type {kind}; expected integers or floats.")
    labels = [repr(n) for n in names]
    blocks = _parquet_blocks(pf, names, chunk_size)
    blocks = _rebatch(_checked(blocks, where, labels, lambda r: f"row {r} (0-based)"), chunk_size)
    return _split(blocks, list(range(n_feats)), n_feats if has_y else None)


def _parquet_blocks(pf, names, chunk_size):
    start = 0
    for batch in pf.iter_batches(batch_size=chunk_size, columns=names):
        block = np.empty((batch.num_rows, len(names)))
        for j, name in enumerate(names):
            block[:, j] = batch.column(name).to_numpy(zero_copy_only=False)
        yield start, block
        start += batch.num_rows
