"""A data file (or a set of files) as a dask array read by the workers, in pieces of bounded memory.

:func:`open_dask_table` is what the command line's ``--scheduler`` runs on: every format the one
reader (:func:`~dpmoments.data.open_table`) knows, plus Zarr stores, become a dask
array of the selected columns (and one of the response) whose blocks are read *inside the
workers' tasks*, so no row passes through the client. The columns and the pieces are worked
out by a first small task (on a worker when a ``distributed`` client is active: the client
needs no access to the files), from the files' headers and footers only.

One block of the array is:

* Parquet (a file, a directory, a glob, a list, a URL): a run of row groups of one file (about
  :data:`PIECE_BYTES` of the selected columns), read in record batches straight into the block,
  so the task holds the block plus one batch, about 1x the block's numbers;
* a Zarr store: the stored row chunks (:func:`~.dask_files.open_zarr_array`);
* ``.npy``: a row range read with one positioned read (:func:`~.dask_files.open_npy_array`);
* CSV/TSV and ``.npz``: one whole file (text is not split without parsing it), so a task holds
  the file's numbers: split a large text file into several (a glob reads them all).

Declared ``categories`` (a hive partition column's too) and ``impute`` values are public, so the
blocks' columns are known before any row is read; each task encodes and completes its own rows
with the local reader's functions (:func:`~.columns.one_hot_block`, :func:`~.columns.impute_block`),
so a cluster run reads the same table as :meth:`~.tables.Table.chunks`.

Every block reports its row count as a ``distributed`` event (topic :data:`PROGRESS_TOPIC`),
so the client can show progress; nothing else about the rows leaves the task. Problems are
named by file, column and row, never by value.
"""

import os

import numpy as np

from ._chunking import checked
from .columns import impute_block, one_hot_block

__all__ = ["open_dask_table", "DaskTable", "PROGRESS_TOPIC", "PIECE_BYTES", "PARSED_PREFIX"]

#: Selected numbers per Parquet block (32 MiB): one task holds about this much (and its clipped copy).
PIECE_BYTES = 32 << 20
#: The ``distributed`` event topic each block's row count is logged to.
PROGRESS_TOPIC = "dpmoments-rows"
_BATCH_ROWS = 65536
#: The key prefix of a block parsed from a file (Parquet, CSV, ``.npz``): the blocks worth keeping parsed on the
#: workers between the passes of one release (:mod:`~dpmoments.data.dask_spill`), unlike Zarr's or ``.npy``'s raw reads.
PARSED_PREFIX = "dpmoments-parsed-"
# Rows per record batch read into a cluster block: a batch's copies are the block's only overhead.
_PIECE_BATCH_ROWS = 8192


class DaskTable:
    """The opened source: ``X`` (and ``y``) dask arrays, the names, and what the footers say.

    Attributes: ``X``, ``y`` (None without a target), ``names``, ``feature_names``, ``target_name``,
    ``format``, ``n_rows`` (None when only reading counts them), ``notes``, ``n_blocks``,
    ``indicator_ranges`` (the 0/1 columns the declared categories and imputations make).
    """

    def __init__(self, X, y, info):
        self.X, self.y = X, y
        self.names, self.feature_names = info["names"], info["feature_names"]
        self.target_name, self.format = info["target_name"], info["format"]
        self.n_rows, self.notes, self.n_blocks = info["n_rows"], info["notes"], X.numblocks[0]
        self.indicator_ranges = info["indicator_ranges"]


def open_dask_table(source, *, columns=None, target=None, delimiter=None, header=True, exclude=None,
                    categories=None, impute=None, piece_bytes=PIECE_BYTES):
    """A file, a Zarr store or a set of files as dask arrays read block by block on the workers.

    Parameters
    ----------
    source : str, os.PathLike, or list of them
        As :func:`~dpmoments.data.open_table` (one file, a Parquet directory, a glob, a
        list, a URL), or a Zarr store (a directory).
    columns, target, delimiter, header, exclude, categories, impute
        As :func:`~dpmoments.data.open_table`; a Zarr store's columns are ``x0, x1, ...``. The
        declared categories (a hive partition column's too) and imputed values are public: the
        blocks' columns are known from them before any row is read, and each block is encoded
        and completed inside its task by the same functions as the local reader's chunks.
    piece_bytes : int
        The selected numbers one Parquet block holds at most (whole row groups; one row group
        larger than this is one block).

    Returns
    -------
    DaskTable

    Privacy
    -------
    Reads private data but releases nothing: the arrays hold exact rows, to be passed to a
    ``release_*`` function or a private estimator, which run their passes as tasks.
    """
    import dask

    source = [_absolute(p) for p in source] if isinstance(source, (list, tuple)) else _absolute(source)
    plan = dask.delayed(_plan, pure=False)(source, columns, target, delimiter, header, piece_bytes,
                                           exclude, categories, impute).compute()
    if plan["kind"] == "array":
        X, y = _array_source(source, plan)
    else:
        X, y = _pieces_source(plan)
    return DaskTable(X, y, plan)


def _absolute(path):
    """A local path as the workers must see it (their working directory is not the client's)."""
    from .file_sets import is_url

    text = os.fspath(path)
    return text if is_url(text) else os.path.abspath(text)


def _plan(source, columns, target, delimiter, header, piece_bytes, exclude=None, categories=None, impute=None):
    """The names, selection and pieces of ``source`` (runs as a task: only headers and footers are read)."""
    from .file_sets import is_file_set
    from .tables import open_table

    if isinstance(source, str) and os.path.isdir(source) and not is_file_set(source):
        return _zarr_plan(source, columns, target, exclude, categories, impute)
    table = open_table(source, columns=columns, target=target, delimiter=delimiter, header=header, exclude=exclude,
                       categories=categories, impute=impute)
    levels, impute_at, imputed = table.typed_columns
    backend = table._backend  # noqa: SLF001 - this module is the table's dask face, in the same package
    used = list(table._used)  # noqa: SLF001 - the columns read (before one-hot encoding and indicators)
    info = dict(names=table.names, feature_names=table.feature_names, target_name=table.target_name,
                format=table.format, n_rows=table.n_rows, notes=list(getattr(backend, "notes", [])),
                used_names=[table.names[j] for j in used], delimiter=delimiter, header=header,
                where=str(table.path), categories=levels, impute_at=impute_at, impute=imputed,
                indicator_ranges=table.indicator_ranges)
    if table.format == "npy" and not hasattr(backend, "members"):
        return dict(info, kind="array", used=used)
    members = getattr(backend, "members", None)
    from .file_sets import Member

    members = members if members is not None else [Member(os.path.abspath(os.fspath(source)))]
    partitions = getattr(backend, "partition_names", ())
    return dict(info, kind="pieces", pieces=_pieces(members, table, partitions, used, piece_bytes),
                partitions=tuple(partitions))


def _zarr_plan(path, columns, target, exclude=None, categories=None, impute=None):
    from .columns import select_features
    from .dask_files import open_zarr_array

    where = f"Zarr store '{path}'"
    for name, given in (("categories", categories), ("impute", impute)):  # as the local command line's Zarr reader
        if given:
            raise ValueError(f"'{name}' (--{name}) applies to data files (CSV, Parquet, .npy), not to {where}.")
    shape = open_zarr_array(path).shape
    names = [f"x{j}" for j in range(shape[1])]
    feats, t, _ = select_features(columns, target, names, where, exclude=exclude)
    return dict(kind="array", names=names, feature_names=[names[j] for j in feats],
                target_name=None if t is None else names[t], format="zarr", n_rows=int(shape[0]), notes=[],
                used=feats + ([] if t is None else [t]), used_names=None, impute_at={}, indicator_ranges={})


def _pieces(members, table, partitions, used, piece_bytes):
    """``(member, row groups or None, rows or None, first row)`` for every block."""
    width = max(1, len(used))
    out = []
    for m in members:
        if table.format != "parquet":
            out.append((m, None, None, 0))
            continue
        meta = _parquet_file(m).metadata
        group, rows, first, at = [], 0, 0, 0
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            if group and (rows + n) * width * 8 > piece_bytes:
                out.append((m, group, rows, first))
                group, rows, first = [], 0, at
            group.append(g)
            rows, at = rows + n, at + n
        if rows:
            out.append((m, group, rows, first))
    return out


def _parquet_file(member):
    import pyarrow.parquet as pq

    from .file_sets import open_input

    return pq.ParquetFile(open_input(member), pre_buffer=False, buffer_size=1 << 20, memory_map=False)


def _array_source(source, plan):
    """Zarr and ``.npy``: their own row-block readers, the selected columns taken inside each task."""
    from .dask_files import open_npy_array, open_zarr_array

    arr = open_zarr_array(source) if plan["format"] == "zarr" else open_npy_array(source)
    n_feats = len(plan["used"]) - (plan["target_name"] is not None)
    feats, rest = plan["used"][:n_feats], plan["used"][n_feats:]
    X = _reported(arr if feats == list(range(arr.shape[1])) else arr[:, feats])
    if plan["impute_at"]:  # each block completed, its indicators inserted, as the local reader's chunks
        X = X.map_blocks(impute_block, plan["impute_at"], chunks=(X.chunks[0], (len(plan["feature_names"]),)),
                         dtype=np.float64)
    y = None if not rest else arr[:, rest[0]]
    return X, y


def _reported(x):
    """``x`` with each block's row count logged for the client's progress (fused into the read)."""
    return x.map_blocks(_report_rows, dtype=x.dtype)


def _report_rows(block):
    try:
        from distributed import get_worker

        get_worker().log_event(PROGRESS_TOPIC, int(block.shape[0]))
    except (ImportError, ValueError):  # not on a distributed worker: nobody to tell
        pass
    return block


def _pieces_source(plan):
    import dask
    from dask.base import tokenize
    import dask.array as da

    k = len(plan["feature_names"])
    blocks = []
    for member, groups, rows, first in plan["pieces"]:
        part = dask.delayed(_read_piece)(member, groups, rows, first, plan,
                                         dask_key_name=PARSED_PREFIX + tokenize(member, groups, rows, first, plan))
        shape = (np.nan if rows is None else rows, k + (plan["target_name"] is not None))
        blocks.append(da.from_delayed(part, shape=shape, dtype=np.float64))
    if not blocks:
        raise ValueError(f"'{plan['where']}' has no data rows.")
    A = da.concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]
    if plan["target_name"] is None:
        return A, None
    return A[:, :k], A[:, k]


def _read_piece(member, groups, rows, first, plan):
    """One block: the selected columns of a run of row groups (Parquet) or of one whole file."""
    names = plan["used_names"]
    if groups is None:
        width = len(plan["feature_names"]) + (plan["target_name"] is not None)
        out = np.concatenate([b for _, b in _whole_file(member, plan)] or [np.empty((0, width))])
        return _report_rows(out)
    if plan["categories"] or plan["impute_at"]:
        return _report_rows(_typed_piece(member, groups, rows, first, plan))
    partitions = plan["partitions"]
    own = [n for n in names if n not in partitions]
    out = np.empty((rows, len(names)))
    for n in names:
        if n in partitions:
            out[:, names.index(n)] = member.partition[n]
    cols = [names.index(n) for n in own]
    if cols == list(range(len(cols))):
        cols = slice(0, len(cols))  # a plain slice: no temporary copy of the batch
    at = 0
    for start, block in checked(_batches(member, groups, own, first), member.where, [repr(n) for n in own],
                                lambda r: f"row {r} (0-based) of that file"):
        out[at:at + block.shape[0], cols] = block
        at += block.shape[0]
        del block
    if at != rows:
        raise ValueError(f"{member.where} has fewer rows than its footer says (was it rewritten while read?).")
    return _report_rows(out)


def _typed_piece(member, groups, rows, first, plan):
    """A block with declared categories one-hot encoded (a hive partition column's from its file's value) and
    declared values imputed with their indicators: the local reader's per-chunk transform, batch by batch."""
    from .file_sets import _with_partitions

    names, levels, at = plan["used_names"], plan["categories"], plan["impute_at"]
    own = [n for n in names if n not in plan["partitions"]]
    text = {n: levels[n] for n in own if n in levels}
    labels = [repr(n) for n in plan["feature_names"] + ([plan["target_name"]] if plan["target_name"] else [])]

    def encoded(batches):
        for start, batch in batches:
            block = one_hot_block(batch, own, text, _numeric_rows) if own else np.empty((batch.num_rows, 0))
            block = block if len(own) == len(names) else _with_partitions(block, names, own, levels,
                                                                          member.partition)
            yield start, impute_block(block, at) if at else block

    out, done = np.empty((rows, len(labels))), 0
    for _, block in checked(encoded(_arrow_batches(member, groups, own, first)), member.where, labels,
                            lambda r: f"row {r} (0-based) of that file"):
        out[done:done + block.shape[0]] = block
        done += block.shape[0]
    if done != rows:
        raise ValueError(f"{member.where} has fewer rows than its footer says (was it rewritten while read?).")
    return out


def _batches(member, groups, names, first):
    for start, batch in _arrow_batches(member, groups, names, first):
        yield start, _numeric_rows(batch, names) if names else np.empty((batch.num_rows, 0))


def _numeric_rows(batch, names):
    """The named columns of an Arrow batch as one row-major float64 block, a null as NaN."""
    import pyarrow as pa

    cols = [batch.column(n).cast(pa.float64(), safe=False) for n in names]
    return pa.RecordBatch.from_arrays(cols, names=names).to_tensor(null_to_nan=True, row_major=True).to_numpy()


def _arrow_batches(member, groups, names, first):
    import pyarrow as pa

    f = _parquet_file(member)
    start = first
    try:
        for batch in f.iter_batches(batch_size=_PIECE_BATCH_ROWS, row_groups=groups, columns=names or None):
            yield start, batch
            start += batch.num_rows
    except (pa.ArrowException, OSError):
        raise ValueError(f"{member.where}: damaged Parquet data after row {start}.") from None


def _whole_file(member, plan):
    from .tables import open_table

    table = open_table(member.path, columns=plan["used_names"], delimiter=plan["delimiter"], header=plan["header"],
                       categories=plan["categories"] or None, impute=plan["impute"] or None)
    return ((0, c) for c in table.chunks(_BATCH_ROWS))
