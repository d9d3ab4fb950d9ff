"""One reader for every data file: column names, selection, and float64 chunks in bounded memory.

:func:`open_table` opens a file, checks its header (or schema) and the column
selection without reading the data, and returns a :class:`Table` whose
:meth:`Table.chunks` streams it. Every command of the command line, the
estimators given a path and :func:`~dpmoments.data.iter_chunks` read
files through it, so they share one set of rules:

========================  ===================================================================
format                    how it is read (memory does not grow with the file)
========================  ===================================================================
``.csv``, ``.tsv``        pyarrow's streaming CSV reader in 256 KiB blocks; ``.gz``/``.bz2``
                          compressed files too. A header row names the columns unless
                          ``header=False`` (then they are named ``x0, x1, ...``).
``.parquet``, ``.pq``     record batches, column chunks read in 1 MiB buffers (no pre-buffering)
``.npy``                  read one block of rows at a time (the header through a memory map)
``.npz``                  a ``scipy.sparse.save_npz`` matrix: CSR streamed from the archive,
                          other sparse formats converted in memory (memory ~ the non-zeros)
========================  ===================================================================

Files without column names (``.npy``, ``.npz``, headerless text) name their
columns ``x0, x1, ...``; columns may always be chosen by 0-based position.
A header whose names parse as numbers is refused: it is almost certainly the
first data row, and names are written into results and reports.
"""

import collections
import contextlib
import os
import stat
import threading
from pathlib import Path

from ._chunking import checked, read_ahead, rebatch, split
from .columns import (MISSING_SUFFIX, check_categories, check_impute, check_unique_names, impute_block,
                      one_hot_names, select_features)
from ._csv import COMPRESSIONS, CsvFile
from ._npy import NpyFile
from ._parquet import _Parquet

__all__ = ["open_table", "Table", "EXTENSIONS", "same_file_version"]

EXTENSIONS = (".csv", ".tsv", ".parquet", ".pq", ".npy", ".npz")
_TEXT = {"csv": ",", "tsv": "\t"}
# Dense rows of a sparse block: about 64 MiB of float64 at most.
_DENSE_ELEMENTS = 1 << 23


def open_table(path, *, columns=None, target=None, delimiter=None, header=True, exclude=None, categories=None,
               impute=None):
    """Open a data file and check its columns (nothing but the header or schema is read).

    Parameters
    ----------
    path : str, os.PathLike or pandas.DataFrame
        A ``.csv``/``.tsv`` (optionally ``.gz`` or ``.bz2``), ``.parquet``/``.pq``, ``.npy`` or ``.npz``
        (``scipy.sparse.save_npz``) file, or a DataFrame read by the same rules (:mod:`.frame_table`).
    columns : sequence of str or int, optional
        The feature columns, in order: names or 0-based positions. Default:
        every column but ``target``.
    target : str or int, optional
        The response column; the chunks are then ``(X, y)`` pairs.
    delimiter : str, optional
        One character separating the fields of a text file (default ``,``
        for ``.csv``, tab for ``.tsv``).
    header : bool, default=True
        Whether a text file's first row names the columns.
    exclude : sequence of str or int, optional
        Columns left out of the default selection (with ``columns=None``).
        Text and categorical columns are left out of it too, and a pandas
        index (an unnamed first CSV column, a Parquet index) is not a column;
        ``Table.notes`` says so in one line each (:mod:`dpmoments.data.columns`).
    categories : dict, optional
        ``{column: [level, ...]}``: PUBLIC levels of text columns (CSV or
        Parquet), each column read as text and replaced by one 0/1 column per
        level, named ``column=level`` (:mod:`dpmoments.data.columns`: a row
        changes at most two of them).
    impute : dict, optional
        ``{column: value}``: a missing value of a feature column is replaced by
        that PUBLIC value and an indicator column ``column:missing`` follows it
        (:mod:`dpmoments.data.columns`). Without it, missing values are refused.

    Returns
    -------
    Table

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not a regular file, an unknown extension, a malformed header, a header
        of numbers, a bad column selection; messages name the file, never a value.

    Privacy
    -------
    Reads private data but releases nothing: a :class:`Table` yields exact rows, to be passed to a
    ``release_*`` function or a private estimator. No neighbouring relation or sensitivity applies
    here; error messages name the file, line and column of a problem, never a value read from it.
    """
    from .file_sets import is_file_set

    if hasattr(path, "columns") and hasattr(path, "dtypes"):  # a DataFrame, read as a file is
        from .frame_table import FrameBackend
        return Table(None, "frame", FrameBackend(path, delimiter, header), columns, target, exclude, categories, impute)
    if is_file_set(path):
        return _open_file_set(path, columns, target, delimiter, header, exclude, categories, impute)
    path = Path(path)
    where = f"file '{path}'"
    kind, compression = _format(path)
    try:
        backend = _backend(path, where, kind, compression, delimiter, header)
    except ValueError:  # a later pass of one fit, on a file cut short since the first: say what really happened
        pinned = (getattr(_VERSIONS, "stamps", None) or {}).get(os.path.abspath(path))
        if pinned is not None and _stamp(path) != pinned:
            raise ValueError(_changed(path)) from None
        raise
    if categories and kind not in ("csv", "tsv", "parquet"):
        raise ValueError(f"'categories' (--categories) apply to CSV and Parquet files; {where} is {kind}.")
    return Table(path, kind, backend, columns, target, exclude, categories, impute)


def _backend(path, where, kind, compression, delimiter, header, source=None):
    """The reader of one file of a known format (``source``: a remote Parquet file's opened input)."""
    if delimiter is not None and kind not in _TEXT:
        raise ValueError(f"a delimiter (--delimiter; delimiter=) applies to .csv/.tsv files; {where} is {kind}.")
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\r\n\""):
        raise ValueError(f"'delimiter' must be one character (not a quote or a line break); got {delimiter!r}.")
    if kind in _TEXT:
        backend = CsvFile(path, where, delimiter=delimiter or _TEXT[kind], header=bool(header),
                          compression=compression)
        _refuse_numeric_names(backend, where, header)
    elif not header:
        raise ValueError(f"reading without a header (--no-header; header=False) applies to .csv/.tsv files; {where} "
                         f"is {kind}.")
    elif source is not None:
        if kind != "parquet":
            raise ValueError(f"{where}: only Parquet is read from a URL; got {kind}.")
        backend = _Parquet(path, where, source)
    else:
        backend = {"npy": NpyFile, "parquet": _Parquet, "npz": _Npz}[kind](path, where)
    return backend


def _open_file_set(source, columns, target, delimiter, header, exclude, categories, impute):
    """A directory, glob, list of files or URL as one :class:`Table` (:mod:`.file_sets`); hive partition
    columns are left out of the default selection, with a note."""
    from .file_sets import FileSet, describe, open_input
    from .formats import format_of

    def open_member(member):
        kind, compression = format_of(member.path, member.where)
        remote = None if member.filesystem is None else open_input(member)
        return _backend(member.path, member.where, kind, compression, delimiter, header, remote)

    files = FileSet(source, open_member=open_member)
    files.impute = bool(impute)
    files.header = header  # text files: how Table.chunks names a row (it crashed on a set of CSV files without it)
    if columns is None and files.partition_names:
        declared = {getattr(k, "text", k) if getattr(k, "text", k) in files.names else
                    files.names[k] if isinstance(k, int) and 0 <= k < len(files.names) else k
                    for k in (categories or ())}  # by name or position
        files.default_columns(None, declared)  # its note
        exclude = list(exclude or []) + [n for n in files.partition_names if n not in (exclude or [])
                                         and n not in declared]
    return Table(describe(source), files.format, files, columns, target, exclude, categories, impute)


def _format(path):
    """``(format, compression)`` from the extension, after checking the path is a readable file."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"No such data file: '{path}'.") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"'{path}' is a Zarr store; read it with dask (open_zarr_array) or the command line.")
    if not stat.S_ISREG(mode):
        raise ValueError(f"'{path}' is not a regular file (a named pipe, socket or device?): it is read more than "
                         "once (checked, then streamed), so save the data to a file first.")
    suffixes = [s.lower() for s in path.suffixes] or [""]
    compression = suffixes[-1] if suffixes[-1] in COMPRESSIONS else None
    ext = (suffixes[-2] if len(suffixes) > 1 else "") if compression else suffixes[-1]
    if ext not in EXTENSIONS or (compression and ext not in (".csv", ".tsv")):
        raise ValueError(f"Cannot read '{path}': unknown extension {''.join(path.suffixes[-2:])!r}; supported: "
                         f"{', '.join(EXTENSIONS)} (.csv and .tsv also compressed as .gz or .bz2).")
    return {".pq": "parquet"}.get(ext, ext[1:]), compression


def _refuse_numeric_names(backend, where, header):
    names = backend.names
    numeric = [j for j, name in enumerate(names) if _looks_numeric(name)]
    if header and numeric and _counting([names[j] for j in numeric]) \
            and not set(numeric) & getattr(backend, "integer_columns", set(numeric)):
        # pandas names a frame made from an array 0, 1, 2, ...; a table by year counts too. Integers one apart
        # above values that are not whole numbers are names, not the first row of the same columns
        backend.notes.append(f"{where}: its header's names that are numbers count one by one above values that "
                             "are not whole numbers (as pandas names the columns of a frame made from an array, or "
                             "years): read as column names; if that row is data, read the file with --no-header "
                             "(header=False)")
        return
    if header and numeric:
        shown = ", ".join(map(str, numeric[:5])) + (", ..." if len(numeric) > 5 else "")
        raise ValueError(f"{where}: the header row has column names that are numbers (columns {shown}, 0-based), "
                         "so it is probably a data row; if the file has no header, read it without one "
                         "(--no-header; header=False), which names the columns x0, x1, ...; if it is the header, "
                         "give those columns names that are not numbers (or save the table as Parquet)")


def _counting(names):
    """Three or more whole numbers one apart, in the order of the columns (0, 1, 2, ...; 1960, 1961, ...)."""
    if len(names) < 3 or not all(name.strip().isdigit() for name in names):
        return False
    values = [int(name) for name in names]
    return all(b - a == 1 for a, b in zip(values, values[1:]))


def _looks_numeric(name):
    try:
        float(name)
    except ValueError:
        return False
    return any(ch.isdigit() for ch in name)


class Table:
    """An opened data file: its column names, the selection, and its rows as float64 chunks.

    Attributes
    ----------
    path : pathlib.Path
    format : str
        ``"csv"``, ``"tsv"``, ``"parquet"``, ``"npy"`` or ``"npz"``.
    names : list of str
        Every column's name (``x0, x1, ...`` where the file has none).
    feature_names : list of str
        The selected feature columns, in order.
    target_name : str or None
    n_rows : int or None
        The number of rows when known without reading the data (not for text files).
    indicator_ranges : dict
        ``{name: (0.0, 1.0)}`` for the one-hot and ``:missing`` columns it makes (public by construction).

    A table is an input like its path: every estimator and release function reads it (``fit(table)``), with
    its ``exclude``, ``categories`` and ``impute`` applied and its columns named by ``feature_names``.
    """

    def __init__(self, path, kind, backend, columns, target, exclude=None, categories=None, impute=None):
        self.path, self.format, self._backend = path, kind, backend
        pinned, now = getattr(_VERSIONS, "stamps", None), _stamp(path)
        # Within one fit every pass compares the file with the version its first pass opened.
        self._stamp = now if pinned is None or path is None else pinned.setdefault(os.path.abspath(path), now)
        self.names = list(backend.names)
        where = backend.where if path is None else f"file '{path}'"  # None: a DataFrame (frame_table.py)
        self._categorical = check_categories(categories, self.names, where)
        text = set(getattr(backend, "text_columns", ())) - set(self._categorical)
        feats, t, notes = select_features(columns, target, self.names, where, exclude=exclude, text_columns=text)
        self._check_categorical(feats, t, where)
        self.notes = list(getattr(backend, "notes", [])) + notes
        self._used = feats + ([] if t is None else [t])
        self._check_names_used(where)
        if hasattr(backend, "check"):
            backend.check([j for j in self._used if j not in self._categorical])
        self._impute = check_impute(impute, self.names, feats, where)
        bad = set(self._impute) & set(self._categorical)
        if bad:
            raise ValueError(f"{where}: column {self.names[bad.pop()]!r} is categorical; a missing level already "
                             "sets its indicators to 0, so it takes no 'impute'.")
        self._columns = [self._expanded(j) for j in self._used]  # the block's column names, one-hot expanded
        self.feature_names = check_unique_names([name for j in feats for name in self._expanded(j)], where)
        self._n_feats, self._has_y = len(self.feature_names), t is not None
        self.target_name = None if t is None else self.names[t]
        self.n_rows = getattr(backend, "n_rows", None)
        self.indicator_ranges = self._indicator_ranges(feats)

    def _check_categorical(self, feats, t, where):
        """A categorical column must be a selected feature, never the target."""
        if t in self._categorical:
            raise ValueError(f"{where}: the target {self.names[t]!r} cannot be a categorical column.")
        missing = [self.names[j] for j in self._categorical if j not in feats]
        if missing:
            raise ValueError(f"{where}: 'categories' names column {missing[0]!r}, which is not a selected feature.")

    def _check_names_used(self, where):
        """Every column read has a name, and no other column has it."""
        counts = collections.Counter(self.names)  # once: a count per column was quadratic in the width
        for j in self._used:
            if self.names[j] == "":
                raise ValueError(f"{where}: column {j} (0-based) of the header has no name; name it or select columns.")
            if counts[self.names[j]] > 1:
                raise ValueError(f"{where}: the header names column {self.names[j]!r} more than once.")

    def _indicator_ranges(self, feats):
        """The 0/1 columns this table makes (one-hot levels, missing-value indicators): their range is public by
        construction, for an estimator's ranges= ({**table.indicator_ranges, "age": (0, 120)}), as --categories
        and --impute give them on the command line."""
        return {name: (0.0, 1.0) for j in feats for name in self._expanded(j)
                if j in self._categorical or j in self._impute and name != self.names[j]}

    def _expanded(self, j):
        levels = self._categorical.get(j)
        if levels is not None:
            return one_hot_names(self.names[j], levels)
        return [self.names[j]] + ([self.names[j] + MISSING_SUFFIX] if j in self._impute else [])

    @property
    def typed_columns(self):
        """``({name: levels} one-hot, {block position: value} imputed, {name: value} imputed)``: the public per-chunk
        transform (positions in a block of the used columns, one-hot expanded) that a cluster's reader applies too."""
        at, where = {}, 0
        for j in self._used:
            if j in self._impute:
                at[where] = self._impute[j]
            where += len(self._categorical.get(j, [None]))
        return ({self.names[j]: levels for j, levels in self._categorical.items()}, at,
                {self.names[j]: value for j, value in self._impute.items()})

    @property
    def n_features(self):
        return self._n_feats

    def chunks(self, chunk_size=65536, ahead=0):
        """Yield ``X`` (or ``(X, y)``) float64 chunks of at most ``chunk_size`` rows; NaN and inf are refused.

        ``ahead > 0`` parses up to that many chunks ahead in a background thread (:func:`read_ahead`),
        so that the caller's work on a chunk overlaps the parsing of the next.
        """
        where = self._backend.where if self.path is None else f"file '{self.path}'"
        labels = [repr(name) for names in self._columns for name in names]
        text = self.format in _TEXT
        row_text = (lambda r: f"data row {r + 1} (1-based, header excluded)") if text and self._backend.header \
            else (lambda r: f"row {r + 1} (1-based)") if text else (lambda r: f"row {r} (0-based)")
        blocks = self._backend.blocks(self._used, chunk_size, categorical=self._categorical) if self._categorical \
            else self._backend.blocks(self._used, chunk_size)
        at = self.typed_columns[1]  # each imputed column completed and its indicator inserted after it
        blocks = checked(((s, impute_block(b, at)) for s, b in blocks) if at else blocks, where, labels, row_text)
        chunks = rebatch(blocks, chunk_size)
        return self._unchanged(split(read_ahead(chunks, ahead) if ahead > 0 else chunks, list(range(self._n_feats)),
                                     self._n_feats if self._has_y else None))

    def __iter__(self):
        """The rows as :meth:`chunks` does, afresh on every call: a table is an input like its path, with its
        ``exclude``, ``categories`` and ``impute`` applied, that every release and estimator reads (a stream that
        can be read again, named by ``feature_names``)."""
        return iter(self.chunks())

    def _unchanged(self, stream):
        """``stream``, refused if the file changed since it was opened: passes over it would mix two data sets."""
        try:
            yield from stream
        except Exception:  # a file cut short mid-row reads as a bad value: say what really happened
            self._check_unchanged()
            raise
        self._check_unchanged()

    def _check_unchanged(self):
        if _stamp(self.path) != self._stamp:
            raise ValueError(_changed(self.path)) from None


_VERSIONS = threading.local()  # the files' stamps at their first opening within same_file_version


@contextlib.contextmanager
def same_file_version():
    """Within it (one fit, one release with private bounds), every pass over a file reads the version the first read.

    Each pass opens the file anew (:func:`open_table`); alone, each would only check that the file did not
    change during that pass, and an append between two passes (the bound's, then the release's) would mix
    two data sets. Nested uses share the outermost's versions.
    """
    outer = getattr(_VERSIONS, "stamps", None) is None
    if outer:
        _VERSIONS.stamps = {}
    try:
        yield
    finally:
        if outer:
            _VERSIONS.stamps = None


def _changed(path):
    return (f"file '{path}' changed while it was being read (another program is writing it?); run again on a file "
            "nobody writes to, or on a copy.")


def _stamp(path):
    """What changes when a file is written or replaced: its device, inode, size and modification time."""
    try:
        st = Path(path).stat()
    except (OSError, TypeError):  # deleted (or moved away) since it was opened; None: a DataFrame
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class _Npz:
    """A ``scipy.sparse.save_npz`` matrix; CSR is streamed from the archive in dense row blocks."""

    def __init__(self, path, where):
        from ._npz import open_sparse

        self.sparse = open_sparse(path, where)
        self.n_rows, d = self.sparse.shape
        self.names = [f"x{j}" for j in range(d)]

    def blocks(self, used, chunk_size):
        d = len(self.names)
        rows = max(1, min(chunk_size, _DENSE_ELEMENTS // max(d, 1)))
        everything = used == list(range(d))
        for start, part in self.sparse.row_blocks(rows):
            yield start, part.toarray() if everything else part[:, used].toarray()
