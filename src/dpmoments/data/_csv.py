"""Delimited text (CSV, TSV, gzip or bzip2 compressed) streamed through pyarrow's CSV reader.

The header is read with the standard library (one record: quoting, a BOM and
the encoding are checked there, with the file named); the data are parsed by
``pyarrow.csv.open_csv`` in blocks, converted to float64 column by column.

Memory: pyarrow's streaming reader reads up to ~32 blocks ahead of the
consumer, so the block size bounds memory, not the file size. Blocks are
256 KiB (more for rows longer than a few KiB): about 30 MiB in flight, and
as fast as 1 MiB blocks. When pyarrow refuses a block, its message is never
shown (it quotes the offending cell or row); the file is re-read with the
standard library to name the line and column instead.

A column whose first value is ``True`` or ``False`` (any case, spaces trimmed, exactly those
words) is read as 1/0, as Parquet's and pandas' bool columns are: every other
value of it must be one of them or missing.
"""

import bz2
import csv
import gzip
import io

import numpy as np

from .columns import one_hot_block

__all__ = ["CsvFile", "COMPRESSIONS"]

COMPRESSIONS = {".gz": gzip.open, ".bz2": bz2.open}
_MIN_BLOCK = 1 << 18
# pyarrow's default CSV null tokens: they become NaN and are then refused as missing values.
_NULL_TOKENS = frozenset(
    ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
     "1.#QNAN", "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null"]
)
_OTHER_DELIMITERS = {";": "';'", "\t": "tab", "|": "'|'"}
_BOOL_WORDS = ("true", "false")


def _text(path, compression):
    opener = COMPRESSIONS.get(compression)
    if opener is None:
        return open(path, newline="", encoding="utf-8-sig")
    return io.TextIOWrapper(opener(path, "rb"), newline="", encoding="utf-8-sig")


class CsvFile:
    """The header (or generated names) of a delimited file, and its data as float64 blocks."""

    def __init__(self, path, where, *, delimiter, header, compression):
        self.path, self.where, self.delimiter, self.header = path, where, delimiter, header
        self.compression = compression
        (first, second), longest = self._first_records()
        if first is None:
            raise ValueError(f"{where} is empty: expected " + ("a header row naming the columns." if header
                                                                  else "rows of numbers."))
        if header and len(first) == 1 and delimiter == ",":
            for sep, name in _OTHER_DELIMITERS.items():
                if sep in first[0]:
                    raise ValueError(f"{where} has a single column whose name contains {name}: is it separated by "
                                     f"{name}? Give the delimiter (--delimiter {name}; delimiter= in the API).")
        # pandas' to_csv writes its index as an unnamed first column: row labels, not data (dropped, noted)
        self.skip = int(bool(header) and len(first) > 1 and first[0].strip() == "")
        self.notes = [f"{where}: its unnamed first column is a pandas index (row labels), left out"] \
            if self.skip else []
        self.names = list(first[self.skip:]) if header else [f"x{j}" for j in range(len(first))]
        data = second if header else first
        # A column's type is the file's schema, read from its first data row (docs/cli.md, "Typed columns")
        self.bool_columns, self.text_columns, self.integer_columns = _column_kinds((data or [])[self.skip:])
        self.block_size = max(_MIN_BLOCK, 8 * longest)

    def _first_records(self):
        """The first two records and the longest of the first lines (in characters), read with the file named."""
        try:
            with _text(self.path, self.compression) as f:
                reader = csv.reader(f, delimiter=self.delimiter)
                first = next((r for r in reader if r), None)
                second = next((r for r in reader if r), None)
                longest = max((len(line) for _, line in zip(range(64), f)), default=0)
        except UnicodeDecodeError:
            raise ValueError(f"{self.where} is not UTF-8 text (in its first lines); save it as UTF-8.") from None
        except (OSError, EOFError, csv.Error) as exc:
            raise ValueError(f"{self.where} could not be read as delimited text ({_kind(exc)}).") from None
        return (first, second), max(longest, sum(len(c) + 1 for c in first or []))

    def blocks(self, used, chunk_size=None, categorical=None):
        """``(start_row, block)`` of the ``used`` column positions, in that order (blocks of pyarrow's size).

        ``categorical``: ``{position: levels}`` of columns read as text and one-hot encoded
        (:func:`~dpmoments.data.columns.one_hot_block`)."""
        import pyarrow as pa
        import pyarrow.csv as pacsv

        keys = [f"f{j + self.skip}" for j in used]
        text = {f"f{j + self.skip}": levels for j, levels in (categorical or {}).items()}
        flags = [f"f{j + self.skip}" for j in used if j in self.bool_columns and f"f{j + self.skip}" not in text]
        kinds = {k: pa.string() if k in text or k in flags else pa.float64() for k in keys}
        options = dict(
            read_options=pacsv.ReadOptions(block_size=self.block_size, skip_rows=1 if self.header else 0,
                                           autogenerate_column_names=True),
            parse_options=pacsv.ParseOptions(delimiter=self.delimiter),
            convert_options=pacsv.ConvertOptions(column_types=kinds, include_columns=keys),
        )
        reader, start = None, 0
        while True:
            try:
                if reader is None:
                    reader = pacsv.open_csv(str(self.path), **options)
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except (pa.ArrowInvalid, pa.ArrowKeyError, pa.ArrowTypeError):
                raise self.locate(used, categorical) from None
            except OSError as exc:
                raise ValueError(f"{self.where} could not be read ({_kind(exc)}).") from None
            batch = _flags_as_numbers(batch, flags) if flags else batch
            if batch is None:  # a word other than True or False in a bool column
                raise self.locate(used, categorical)
            yield start, one_hot_block(batch, keys, text, _rows) if text else _rows(batch, keys)
            start += batch.num_rows

    def locate(self, used, categorical=None):
        """The precise error for a block pyarrow refused: line and column, never the cell."""
        n, reader = len(self.names) + self.skip, None
        line = lambda: reader.line_num if reader is not None else 1  # noqa: E731
        try:
            with _text(self.path, self.compression) as f:
                reader = csv.reader(f, delimiter=self.delimiter)
                if self.header:
                    next(reader, None)
                rows = 0
                for row in reader:
                    if not row:
                        continue
                    rows += 1
                    if len(row) != n:
                        what = "the header has" if self.header else "the first line has"
                        return ValueError(f"{self.where}: line {reader.line_num} has {len(row)} field(s) but {what} "
                                          f"{n}; check the delimiter and the quoting.")
                    for j in (j for j in used if j not in (categorical or {})):
                        cell = row[j + self.skip]
                        if j in self.bool_columns and not (cell.strip() in _NULL_TOKENS
                                                           or cell.strip().lower() in _BOOL_WORDS):
                            return ValueError(f"{self.where}: the value in column {self.names[j]!r} at line "
                                              f"{reader.line_num} is not True or False (the column is read as "
                                              "1/0 from its first value).")
                        if j not in self.bool_columns and not _numeric(cell):
                            return ValueError(f"{self.where}: the value in column {self.names[j]!r} at line "
                                              f"{reader.line_num} is not a number.")
        except UnicodeDecodeError:
            return ValueError(f"{self.where} is not UTF-8 text (after line {line()}); save it as UTF-8.")
        except csv.Error:
            return ValueError(f"{self.where}: line {line()} is not valid delimited text (quoting?).")
        if rows == 0:
            return ValueError(f"{self.where} has no data rows.")
        return ValueError(f"{self.where} could not be parsed as numbers; check the delimiter, the quoting and the "
                          "decimal point ('.').")


def _rows(batch, keys):
    """A batch of float64 columns as one C-ordered float64 block; nulls become NaN (refused later as missing).

    One call into pyarrow per batch (``to_tensor``, pyarrow >= 15) instead of one per column: at 50
    columns the per-column loop cost a fifth of the time pyarrow took to parse the file.
    """
    try:
        return np.asarray(batch.to_tensor(null_to_nan=True, row_major=True))
    except TypeError:  # pragma: no cover  (pyarrow < 15 has no row_major)
        block = np.empty((batch.num_rows, len(keys)))
        for j, key in enumerate(keys):
            block[:, j] = batch.column(key).to_numpy(zero_copy_only=False)
        return block


def _column_kinds(first_values):
    """The positions of the bool (True/False), text and whole-number columns, from the first data row's cells."""
    bools = {j for j, cell in enumerate(first_values) if cell.strip().lower() in _BOOL_WORDS}
    text = {j for j, cell in enumerate(first_values) if not _numeric(cell)} - bools
    # the first data row's whole numbers (a header of positions or years above them could be that row's kin)
    whole = {j for j, cell in enumerate(first_values) if cell.strip().lstrip("+-").isdigit()}
    return bools, text, whole


def _flags_as_numbers(batch, flags):
    """A batch whose bool columns ``flags`` (read as text) are float64 1/0, any case, spaces trimmed as a number's
    are; a missing value (a null token) is NaN, refused later as missing. ``None`` if another word is there."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for key in batch.schema.names:
        if key not in flags:
            columns.append(batch.column(key))
            continue
        trimmed = pc.utf8_trim_whitespace(batch.column(key))
        word = pc.utf8_lower(trimmed)
        missing = pc.is_in(trimmed, value_set=pa.array(sorted(_NULL_TOKENS)))
        value = pc.if_else(pc.equal(word, "true"), 1.0, pc.if_else(pc.equal(word, "false"), 0.0,
                                                                   pc.if_else(missing, float("nan"), None)))
        if value.null_count:
            return None
        columns.append(value)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _numeric(cell):
    cell = cell.strip()
    if cell in _NULL_TOKENS:
        return True
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _kind(exc):
    """An OS error's reason, without any text a library may have quoted from the file."""
    reason = getattr(exc, "strerror", None)
    return reason or type(exc).__name__
