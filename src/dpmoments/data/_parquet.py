"""The Parquet reader (a file, or a URL's opened input) of :func:`~dpmoments.data.open_table`, and its record batches.

Also the reader of an in-memory DataFrame (:mod:`.frame_table`), which is read as Arrow record batches too.
"""

from .columns import one_hot_block

__all__ = ["_Parquet", "numeric_type"]


def _pandas_index(schema):
    """The columns pandas stored a DataFrame's index in (``__index_level_0__``, or its name), from its metadata."""
    try:
        meta = schema.pandas_metadata or {}
    except ValueError:  # metadata that is not JSON: no index known
        return set()
    index = meta.get("index_columns") if isinstance(meta, dict) else None
    # a RangeIndex is stored as a dict, not a column
    return {name for name in index if isinstance(name, str)} if isinstance(index, list) else set()


def numeric_type(kind):
    """A Parquet column of numbers (a dictionary of numbers too), as opposed to text, dates, ..."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind) \
        or pa.types.is_decimal(kind)


class _Parquet:
    def __init__(self, path, where, source=None):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise ImportError(f"Reading {where} needs pyarrow: pip install pyarrow") from exc
        try:
            # No pre-buffering and 1 MiB read buffers: memory stays about one batch whatever the row groups.
            self.file = pq.ParquetFile(path if source is None else source, pre_buffer=False, buffer_size=1 << 20,
                                       memory_map=False)
        except (pa.ArrowException, OSError):
            raise ValueError(f"Could not read {where} as Parquet (not a Parquet file, or damaged).") from None
        schema = self.file.schema_arrow
        index = _pandas_index(schema)  # a DataFrame's index (row labels, patient ids) is not one of its columns
        self.names = [name for name in schema.names if name not in index]
        self.n_rows, self.where = self.file.metadata.num_rows, where
        self.types = {name: schema.field(name).type for name in self.names}
        self.text_columns = {j for j, name in enumerate(self.names) if not numeric_type(self.types[name])}
        self.notes = [f"{where}: its pandas index ({', '.join(sorted(index))}) is row labels, left out"] \
            if index else []

    def check(self, used):
        for name in (self.names[j] for j in used):
            if not numeric_type(self.types[name]):
                raise ValueError(f"{self.where}: column {name!r} has type {self.types[name]}; expected numbers.")

    def blocks(self, used, chunk_size, categorical=None):
        import pyarrow as pa

        names = [self.names[j] for j in used]
        text = {self.names[j]: levels for j, levels in (categorical or {}).items()}
        start, batches = 0, self.file.iter_batches(batch_size=chunk_size, columns=names)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except (pa.ArrowException, OSError):
                raise ValueError(f"{self.where}: damaged Parquet data after row {start}.") from None
            # unsafe: an int64 beyond 2^53 becomes its nearest double, as numpy converts one (a safe cast refused it)
            columns = [batch.column(name) if name in text else batch.column(name).cast(pa.float64(), safe=False)
                       for name in names]
            # One row-major float64 block, a null as NaN (refused downstream as missing). Not Array.to_numpy:
            # pyarrow imports pandas for it when pandas is installed, 1.3-1.8 s of a command's start.
            batch = pa.RecordBatch.from_arrays(columns, names=names)
            yield start, one_hot_block(batch, names, text, _tensor) if text else _tensor(batch, names)
            start += batch.num_rows


def _tensor(batch, names):
    return batch.to_tensor(null_to_nan=True, row_major=True).to_numpy()
