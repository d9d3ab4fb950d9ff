"""A pandas DataFrame opened as a table: declared categories, imputation and ``exclude``, as a file's.

``open_table(df, categories={"firm": [...]}, impute={"income": 0})`` reads an
in-memory DataFrame by the rules a CSV or Parquet file is read by
(:mod:`dpmoments.data.columns`): text and categorical columns are left out of
the default selection with a note, declared levels are one-hot encoded into
``firm=GM, ...`` columns with the range 0 to 1, a missing value is refused or
imputed with its ``:missing`` indicator. The frame's index is row labels, not
a column. The levels are the ones declared: a pandas ``category`` column's own
categories (which ``astype("category")`` reads from the data) are never used.

The frame is converted once to an Arrow table (pyarrow, the readers' own
dependency) and read in record batches, as a Parquet file is.
"""

from ._parquet import _Parquet, numeric_type

__all__ = ["FrameBackend"]


class _Batches:
    """What :class:`_Parquet` reads from a ``ParquetFile``: record batches of the chosen columns."""

    def __init__(self, table):
        self.table = table

    def iter_batches(self, batch_size, columns):
        return iter(self.table.select(columns).to_batches(max_chunksize=batch_size))


class FrameBackend(_Parquet):
    """The reader of a DataFrame: names, types and row blocks, as :class:`~.tables._Parquet`'s."""

    def __init__(self, frame, delimiter=None, header=True, where="the DataFrame"):  # no ParquetFile: not _Parquet's
        import pyarrow as pa

        if delimiter is not None or not header:
            raise ValueError(f"a delimiter and header=False (--delimiter, --no-header) apply to text files, not to "
                             f"{where}.")

        names = [str(c) for c in frame.columns]
        if len(set(names)) != len(names):
            repeated = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"{where} names column {repeated!r} more than once.")
        try:
            table = pa.Table.from_pandas(frame, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError):
            raise ValueError(f"{where} could not be read as a table (a column mixing numbers and text, or of "
                             "Python objects?); give each column one type.") from None
        self.file, self.names, self.where = _Batches(table), list(table.schema.names), where
        self.n_rows, self.notes = table.num_rows, []
        self.types = {name: table.schema.field(name).type for name in self.names}
        self.text_columns = {j for j, name in enumerate(self.names) if not numeric_type(self.types[name])}
