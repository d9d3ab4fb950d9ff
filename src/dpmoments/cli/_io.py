"""Reading inputs for the command line: one reader, column names, an optional fingerprint.

Every command reads its data through :class:`DataSource`, a thin layer over
:func:`dpmoments.data.open_table` (CSV/TSV, compressed or not,
Parquet, ``.npy``, sparse ``.npz``), plus Zarr stores through dask. The
text-file options ``--delimiter`` and ``--no-header`` apply to every file a
run reads; :func:`use_file_options` takes them from the parsed arguments.

The fingerprint (``--fingerprint``) is a SHA-256 and the byte size of the
input, read in 1 MiB blocks. It is opt-in: it is not private, since it tells
apart two inputs that differ in one row.
"""

import csv
import hashlib
import sys
import unicodedata
from pathlib import Path

import numpy as np

from ..data import is_file_set, iter_chunks, open_table
from ._args import CliError, parse_columns, parse_target
from ._ranges import categories_of, impute_of
from ._output import check_destination, figures_ahead
from ._progress import Progress

__all__ = ["DataSource", "read_truth", "use_file_options", "chunk_rows", "open_input", "fingerprint", "read_in_memory",
           "require_target"]

_FILE_OPTIONS = {"delimiter": None, "header": True, "exclude": None, "categories": None, "impute": None}
_NOTED = set()  # each note once per run, though a command may open a file twice
_DELIMITERS = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "space": " ", "pipe": "|"}


def _option(name, by_name):
    """A typed-column option of the run (``--categories``, ``--impute``), parsed now; none for a plan's site."""
    parse = _FILE_OPTIONS[name]
    return None if by_name or parse is None else parse()


def use_file_options(args):
    """The run's ``--delimiter`` and ``--no-header``, applied to every data file it opens."""
    text = getattr(args, "delimiter", None)
    _FILE_OPTIONS.update(delimiter=None if text is None else _DELIMITERS.get(text.lower(), text),
                         header=not getattr(args, "no_header", False), exclude=getattr(args, "exclude", None),
                         categories=lambda: categories_of(args) or None,  # parsed in the run (its errors exit 2)
                         impute=lambda: impute_of(args) or None)
    _NOTED.clear()


#: A CSV or Parquet file is parsed at most this many bytes of chunks ahead of the pass (128 MiB),
#: and at most READ_AHEAD_CHUNKS chunks: each queued chunk also holds about 300 bytes of Python objects,
#: which at a tiny --chunk-size outweigh its numbers (--chunk-size 1 kept 120 MiB for a 3 MiB column).
READ_AHEAD_BYTES, READ_AHEAD_CHUNKS = 1 << 27, 64


def chunk_rows(requested, n_features):
    """``--chunk-size``, or by default rows worth about 64 MiB of float64 (1024 to 65536 rows)."""
    if requested is not None:
        return requested
    return int(min(65536, max(1024, (1 << 23) // max(n_features, 1))))


class DataSource:
    """A data file, the columns used, and how to stream it.

    Parameters
    ----------
    path : str or list of str
        One input (a file, a directory, a glob, a URL), or several files read as one table (a shell-expanded
        glob: one format, the same columns, in the order given).
    columns : str or None
        The ``--columns`` text (names, or 0-based positions).
    target : str or None
        The ``--target`` text.
    delimiter, header : optional
        Text files: the field separator and whether a header row names the
        columns (default: the run's ``--delimiter`` and ``--no-header``).
    by_name : bool
        ``columns`` (a list) and ``target`` are names as they are (a plan's), never
        positions: a column named ``3`` is the column of that name.
    meanwhile : callable, optional
        Work to do once the first chunk is in, while the file is parsed ahead (:meth:`chunks`).
    """

    def __init__(self, path, columns=None, target=None, *, delimiter=None, header=None, by_name=False,
                 meanwhile=None):
        listed = isinstance(path, (list, tuple))  # several files given one by one (a shell-expanded glob)
        self.given = [str(p) for p in path] if listed else str(path)
        self.path, self.meanwhile = Path(self.given[0] if listed else path), meanwhile
        self.name, self.shown = source_names(self.given)
        self.several = is_file_set(self.given)  # a Parquet directory, a glob, a list or a URL: the reader's file sets
        if not self.several and not self.path.exists():
            raise CliError(f"no such data file: '{path}'")
        self.columns, self.target = ((columns, target) if by_name else (parse_columns(columns), parse_target(target)))
        self.delimiter = _FILE_OPTIONS["delimiter"] if delimiter is None else delimiter
        self.header = _FILE_OPTIONS["header"] if header is None else header
        if self.path.is_dir() and not self.several:
            self.kind, self._table, self._zarr = "zarr", None, _open_zarr(self.path)
            names = [f"x{j}" for j in range(self._zarr.shape[1])]
            # Checks the column selection now, before any work.
            iter_chunks(self._zarr, chunk_size=1, columns=self.columns, target=self.target)
            self.all_names, self.total_rows = names, int(self._zarr.shape[0])
            self.feature_names = _selected(names, self.columns, self.target)
        else:
            self._zarr = None
            try:
                self._table = open_table(self.given if self.several else self.path, columns=self.columns,
                                         target=self.target, delimiter=self.delimiter, header=self.header,
                                         exclude=None if by_name else parse_columns(_FILE_OPTIONS["exclude"], "--exclude"),
                                         categories=_option("categories", by_name), impute=_option("impute", by_name))
            except (FileNotFoundError, ImportError) as exc:
                raise CliError(str(exc)) from None
            for note in [n for n in self._table.notes if n not in _NOTED]:  # what was left out, by name (the schema, public)
                _NOTED.add(note)
                print(f"dpmoments: note: {note}", file=sys.stderr)
            self.kind, self.all_names, self.total_rows = self._table.format, self._table.names, self._table.n_rows
            self.feature_names = self._table.feature_names
        self.n_rows = None

    @property
    def _text(self):  # a list's files share one format, the first's
        return any(s.lower() in (".csv", ".tsv") for s in self.path.suffixes[-2:])

    @property
    def n_features(self):
        return len(self.feature_names)

    def chunks(self, chunk_size=None, progress=None):
        """The streamed ``X`` (or ``(X, y)``) chunks; counts rows into ``self.n_rows``.

        A CSV or Parquet file is parsed ahead, up to :data:`READ_AHEAD_BYTES` in at most
        :data:`READ_AHEAD_CHUNKS` chunks, in a background thread (its parsing holds no GIL). After the
        first chunk, ``self.meanwhile()`` (if set) runs once, here, while that thread parses on: the
        figures' imports cost nothing where they overlap.
        """
        self.n_rows = 0
        rows = chunk_rows(chunk_size, self.n_features)
        if self._zarr is not None:
            stream = iter_chunks(self._zarr, chunk_size=rows, columns=self.columns, target=self.target)
        else:
            stream = self._table.chunks(rows, ahead=self._chunks_ahead(rows))
        for chunk in stream:
            n = (chunk[0] if isinstance(chunk, tuple) else chunk).shape[0]
            self.n_rows += n
            yield chunk
            if self.meanwhile is not None:
                self.meanwhile, work = None, self.meanwhile
                work()
            if progress is not None:
                progress.update(n)

    def _chunks_ahead(self, rows):
        """How many chunks of ``rows`` rows to parse ahead: none for a .npy (a plain read, nothing to parse)."""
        if self.kind == "npy":
            return 0
        width = self.n_features + (self._table.target_name is not None)
        return max(1, min(READ_AHEAD_CHUNKS, READ_AHEAD_BYTES // (8 * rows * width)))

    def _files(self):
        if not self.several:
            return _files(self.path)
        members = self._table._backend.members  # noqa: SLF001 - the file set the one reader resolved
        if any(m.filesystem is not None for m in members):
            raise CliError("--fingerprint reads local files only; fingerprint a URL's files where they are stored")
        return [Path(m.path) for m in members]

    def fingerprint(self, progress=None):
        """SHA-256 of the file's bytes (of every file, by relative path, for a Zarr directory or a file set)."""
        digest, size = hashlib.sha256(), 0
        for file in self._files():
            if self.path.is_dir() or self.several:
                named = file.relative_to(self.path) if self.path.is_dir() else file
                digest.update(str(named).encode() + b"\0")
            with open(file, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
                    size += len(block)
                    if progress is not None:
                        progress.update(len(block))
        return {"sha256": digest.hexdigest(), "bytes": size}

    def nbytes(self):
        return sum(f.stat().st_size for f in self._files())

    def describe(self):
        """The input as the report states it: the path as given (never resolved), format and columns."""
        info = {"path": self.given, "format": self.kind, "columns": self.feature_names,
                "target": None if self.target is None else str(self.target)}
        if self._text:
            info.update(delimiter=self.delimiter or ("\t" if self.kind == "tsv" else ","), header=self.header)
        return info


def source_names(given):
    """``(name, shown)`` of an input as messages and progress lines give it: a file's name and its path as
    typed; several files' first and how many more (their paths are in the report)."""
    if isinstance(given, list):
        more = f" and {len(given) - 1} more file(s)"
        return Path(given[0]).name + more, given[0] + more
    return Path(given).name, str(Path(given))


def _selected(names, columns, target):
    pick = lambda c: names[c] if isinstance(c, int) else c  # noqa: E731
    t = None if target is None else pick(target)
    if columns is None:  # the target as typed may be another Unicode form of its header name (NFC and NFD)
        return [c for c in names if t is None or unicodedata.normalize("NFC", c) != unicodedata.normalize("NFC", t)]
    return [pick(c) for c in columns]


def _files(path):
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file())
    return [path]


def _open_zarr(path):
    if not (path.suffix.lower() == ".zarr" or (path / ".zarray").exists() or (path / "zarr.json").exists()):
        raise CliError(f"'{path}' is a directory but not a Zarr array; give a .csv, .tsv, .parquet, .npy, .npz "
                       "or .zarr")
    try:
        import dask.array as da
    except ImportError:
        raise CliError(f"reading the Zarr array '{path}' needs dask and zarr: "
                       "pip install 'dpmoments[dask]' zarr") from None
    try:
        arr = da.from_zarr(str(path))
    except ImportError:
        raise CliError(f"reading the Zarr array '{path}' needs zarr: pip install zarr") from None
    except Exception as exc:  # zarr's errors vary across versions; their text is not shown
        raise CliError(f"could not open '{path}' as a Zarr array ({type(exc).__name__})") from None
    if arr.ndim != 2:
        raise CliError(f"the Zarr array '{path}' must be 2-D (n_samples, n_features); got shape {arr.shape}")
    return arr


def read_truth(path, feature_names):
    """A reference graph for ROC curves: a (d, d) matrix (.npy/.csv) or a CSV edge list of names."""
    path = Path(path)
    if not path.is_file():
        raise CliError(f"no such truth file: '{path}'")
    d = len(feature_names)
    if path.suffix.lower() == ".npy":
        try:
            A = np.load(path, allow_pickle=False)
        except (ValueError, OSError):
            raise CliError(f"could not read the truth file '{path}' as a .npy array") from None
    else:
        try:
            with open(path, newline="", encoding="utf-8-sig") as f:
                rows = [r for r in csv.reader(f) if r]
        except (UnicodeDecodeError, csv.Error):
            raise CliError(f"the truth file '{path}' is not UTF-8 comma-separated text") from None
        A = _edge_list(rows, feature_names, path) if rows and len(rows[0]) == 2 and d != 2 else _numeric(rows, path)
    A = np.asarray(A, dtype=np.float64)
    if A.shape != (d, d):
        raise CliError(f"the truth graph in '{path}' must be a {d}x{d} matrix (one row and column per feature); "
                       f"got shape {A.shape}")
    return np.abs(A) + np.abs(A.T) > 0


def _numeric(rows, path):
    try:
        return [[float(c) for c in r] for r in rows]
    except ValueError:
        pass
    try:  # a header row
        return [[float(c) for c in r] for r in rows[1:]]
    except ValueError:
        raise CliError(f"the truth file '{path}' must hold a numeric matrix or an edge list 'name_a,name_b'") from None


def _edge_list(rows, names, path):
    index = {n: k for k, n in enumerate(names)}
    A = np.zeros((len(names), len(names)))
    for a, b in rows:
        if a.strip() not in index or b.strip() not in index:
            if rows.index([a, b]) == 0:
                continue  # a header row
            raise CliError(f"the truth edge list '{path}' names {a!r}-{b!r}; the features are {names}")
        A[index[a.strip()], index[b.strip()]] = 1
    return A


# -- shared helpers (also used by select, tensor and simulate) -------------------------------------


def open_input(args, path=None, target=None):
    """Check the destination, open the file and validate the column selection (no data read yet)."""
    if getattr(args, "out", None) is not None:
        check_destination(args.out, args.force)
    return DataSource(path or args.data, args.columns, target, meanwhile=figures_ahead(args))


def fingerprint(source, args):
    """The input's SHA-256 and size, only with ``--fingerprint`` (it is not private)."""
    if not getattr(args, "fingerprint", False):
        return None
    with Progress("fingerprint", total=source.nbytes(), unit="bytes", enabled=not args.quiet) as bar:
        return source.fingerprint(bar)


def read_in_memory(source, args):
    """Read the selected columns (and target) chunk by chunk into arrays; at most ``args.max_rows`` rows."""
    limit = args.max_rows
    if source.total_rows is not None and source.total_rows > limit:
        raise CliError(f"'{source.name}' has {source.total_rows} rows, more than --max-rows {limit}; this "
                       "analysis loads the selected columns into memory: raise --max-rows if they fit")
    Xs, ys, n = [], [], 0
    with Progress(f"reading {source.name}", total=source.total_rows, enabled=not args.quiet) as bar:
        for chunk in source.chunks(args.chunk_size, bar):
            X, y = chunk if isinstance(chunk, tuple) else (chunk, None)
            n += X.shape[0]
            if n > limit:
                raise CliError(f"'{source.name}' has more than --max-rows {limit} rows; this analysis loads "
                               "the selected columns into memory: raise --max-rows if they fit")
            Xs.append(np.asarray(X, dtype=np.float64))
            ys.append(y)
    if not Xs:
        raise CliError(f"'{source.name}' has no data rows")
    X = np.concatenate(Xs, axis=0)
    y = None if ys[0] is None else np.concatenate([np.asarray(v, dtype=np.float64) for v in ys])
    return X, y


def require_target(args):
    if args.target is None:
        raise CliError(f"--target is required: the response column (a name or a 0-based position) of "
                       f"'{source_names(args.data)[1]}'")
