"""Many files read as one table: a Parquet directory (hive partitions), a glob, a list of files, a URL.

:func:`dpmoments.data.open_table` hands a source here when it is not one local file:

* a directory: every Parquet file under it (files starting with ``.`` or ``_`` skipped), in
  sorted order; ``key=value`` directories are hive partitions;
* a glob (``data/*.csv``): the files it matches, sorted; any one format :func:`open_table` reads;
* a list or tuple of paths: those files, in the order given; one format;
* a URL (``s3://``, ``gs://``, ``https://``): Parquet read through fsspec
  (``pip install "dpmoments[cloud]"`` brings s3fs and gcsfs); a URL may be a file, a directory or
  a glob.

Every file must have the same columns. A hive partition column (``year=2024/``) is a column of
the table, but it is left out of the numbers unless chosen by ``columns``: its value is a
property of the file, not a measurement (:attr:`FileSet.notes` says which were left out).
Files are read one after another, each in record batches of at most the chunk size, so memory
is one batch whatever the number or size of the files. Messages name the file (and the
partition column), never a value.
"""

import glob as _glob
import os
import re

import numpy as np

from ._chunking import checked
from .formats import check_parquet_type, format_of

__all__ = ["is_file_set", "FileSet", "is_url", "Member"]

_GLOB_CHARS = "*?["
_PARQUET = (".parquet", ".pq")


def is_url(text):
    """``s3://...``, ``https://...`` and the like (not ``file://``, nor a Windows drive)."""
    return isinstance(text, str) and re.match(r"[A-Za-z][A-Za-z0-9+.-]+://", text) is not None \
        and not text.lower().startswith("file://")


def is_file_set(source):
    """Whether ``source`` names several files or a remote one (not one local file)."""
    if isinstance(source, (list, tuple)):
        return bool(source) and all(isinstance(p, (str, os.PathLike)) for p in source)
    if not isinstance(source, (str, os.PathLike)):
        return False
    text = os.fspath(source)
    if is_url(text) or any(ch in text for ch in _GLOB_CHARS) and not os.path.exists(text):
        return True
    return os.path.isdir(text) and not _is_zarr(text)


def _is_zarr(path):
    return path.rstrip("/").lower().endswith(".zarr") or any(
        os.path.exists(os.path.join(path, m)) for m in (".zarray", "zarr.json", ".zgroup"))


class Member:
    """One file of a set: where it is (``filesystem`` None for a local path) and its partition values."""

    def __init__(self, path, filesystem=None, partition=None):
        self.path, self.filesystem, self.partition = path, filesystem, dict(partition or {})

    @property
    def where(self):
        return f"file '{self.path}'"

    def __reduce__(self):  # sent to cluster workers: the fsspec filesystem pickles, pyarrow's wrapper too
        return Member, (self.path, self.filesystem, self.partition)


def describe(source):
    """The source as messages and reports name it (the text as given; never a resolved path)."""
    if isinstance(source, (list, tuple)):
        first = os.fspath(source[0])
        return first if len(source) == 1 else f"{first} and {len(source) - 1} more file(s)"
    return os.fspath(source)


class FileSet:
    """The files of ``source`` and their shared columns; the backend :class:`~.tables.Table` streams.

    Attributes: ``members`` (list of :class:`Member`), ``names`` (every column, partition columns
    last), ``partition_names``, ``n_rows`` (when every file's footer says it), ``format``, ``notes``.
    """

    def __init__(self, source, *, open_member):
        self.where = f"'{describe(source)}'"
        self._open = open_member
        self.members, self.partition_names, kinds = _members(source, self.where)
        self.format = kinds.pop() if len(kinds) == 1 else None
        if self.format is None:
            raise ValueError(f"{self.where} mixes file formats ({', '.join(sorted(kinds))}); give files of one format.")
        first = self._backend(self.members[0])
        data_names = [n for n in first.names if n not in self.partition_names]
        self.names = data_names + list(self.partition_names)
        self.types = dict(getattr(first, "types", {}))
        # The files' own text columns (left out of the default selection by the Table); partition columns are
        # left out as such (one note), and a text one chosen by name is refused by check().
        self.text_columns = set(getattr(first, "text_columns", ()))
        self.n_rows = 0
        for m in self.members:
            b = first if m is self.members[0] else self._backend(m)
            if [n for n in b.names if n not in self.partition_names] != data_names:
                raise ValueError(f"{m.where} has other columns than {self.members[0].where}; every file of "
                                 f"{self.where} must have the same columns.")
            rows = getattr(b, "n_rows", None)
            self.n_rows = None if rows is None or self.n_rows is None else self.n_rows + rows
        self.notes, self.impute = [], False

    def _backend(self, member):
        return self._open(member)

    def default_columns(self, target_name, declared=()):
        """Every column but the target and the partition columns, with a one-line note naming those left out.

        A partition column in ``declared`` (its categories given by the user) stays: it is one-hot encoded.
        """
        left_out = [n for n in self.partition_names if n not in declared]
        if left_out:
            self.notes.append(f"the partition column(s) {', '.join(map(repr, left_out))} of "
                              f"{self.where} are left out of the numbers (choose them with --columns / columns=, or "
                              "declare their categories)")
        return [n for n in self.names if n not in left_out and n != target_name]

    def check(self, used):
        types = self.types
        for j in used:
            name = self.names[j]
            if name in self.partition_names:
                values = {m.partition.get(name) for m in self.members}
                if not all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
                    raise ValueError(f"{self.where}: the partition column {name!r} is not numeric; leave it out "
                                     "of the columns.")
            elif name in types:
                check_parquet_type(name, types[name], self.where)

    def blocks(self, used, chunk_size, categorical=None):
        """``(start, block)`` over every file in turn; a file's own problems are named with its path and row.

        ``categorical``: ``{position: levels}``; a partition column's indicators are its file's value's (public
        levels, as for a file's column: a value that is none of them sets all to 0).
        """
        names = [self.names[j] for j in used]
        start = 0
        for m in self.members:
            for _, block in self.member_blocks(m, names, chunk_size, categorical):
                yield start, block
                start += block.shape[0]

    def member_blocks(self, member, names, chunk_size, categorical=None):
        """One file's ``(start, block)`` of the named columns (partition columns filled with its values)."""
        backend = self._backend(member)
        levels = {self.names[j]: v for j, v in (categorical or {}).items()}
        own = [n for n in names if n not in self.partition_names]
        index = [backend.names.index(n) for n in own]
        own_levels = {backend.names.index(n): levels[n] for n in own if n in levels}
        labels = [repr(n) for n in own]
        row_text = lambda r: f"row {r} (0-based) of that file"  # noqa: E731
        if not own:
            stream = _row_counts(backend, chunk_size)
        elif own_levels:  # one-hot columns: the Table names its own problems (the levels are public)
            stream = backend.blocks(index, chunk_size, categorical=own_levels)
        elif self.impute:  # missing values are the Table's to fill before it checks
            stream = backend.blocks(index, chunk_size)
        else:
            stream = checked(backend.blocks(index, chunk_size), member.where, labels, row_text)
        for s, block in stream:
            if len(own) != len(names):
                block = _with_partitions(block, names, own, levels, member.partition)
            yield s, block


def _with_partitions(block, names, own, levels, partition):
    """The block of ``names``: the file's own columns (one-hot expanded) and its partition values, in order."""
    width = {n: len(levels.get(n, [None])) for n in names}
    parts, at = [], 0
    for n in names:
        if n in own:
            parts.append(block[:, at:at + width[n]])
            at += width[n]
        elif n in levels:  # a categorical partition column: its file's value as public levels' indicators
            value = partition[n]  # None: the partition's default (missing) value, none of the levels
            hot = np.array([value is not None and str(value) == level for level in levels[n]], dtype=np.float64)
            parts.append(np.broadcast_to(hot, (block.shape[0], hot.size)))
        else:
            parts.append(np.full((block.shape[0], 1), partition[n], dtype=np.float64))
    return np.ascontiguousarray(np.hstack(parts)) if parts else block


def _row_counts(backend, chunk_size):
    """Blocks of no columns with the file's row counts (only partition columns chosen)."""
    for s, block in backend.blocks([0], chunk_size):
        yield s, block[:, :0]


def _members(source, where):
    """``(members, partition column names, set of formats)`` of a source."""
    if isinstance(source, (list, tuple)):
        return _listed_members([os.fspath(p) for p in source], where)
    text = os.fspath(source)
    fs = None
    if is_url(text):
        fs, text = _remote(text, where)
    if any(ch in text for ch in _GLOB_CHARS) and not _exists(fs, text):
        return _globbed_members(fs, text, where)
    if fs is not None and not fs.isdir(text):
        if not fs.exists(text):
            raise FileNotFoundError(f"No such data file: {where}.")
        return [Member(text, fs)], (), {_kind(text, where)}
    return _hive(text, fs, where)


def _listed_members(paths, where):
    """The members of a list of files (local, or all URLs): each must exist; no partitions."""
    if any(is_url(p) for p in paths):
        fs_paths = [_remote(p, where) for p in paths]
        return [Member(p, fs) for fs, p in fs_paths], (), {_kind(p, where) for p in paths}
    missing = next((p for p in paths if not os.path.isfile(p)), None)
    if missing is not None and os.path.isdir(missing):
        raise ValueError(f"'{missing}' in the list of files is a directory; give its files, or the directory alone.")
    if missing is not None:
        raise FileNotFoundError(f"No such data file: '{missing}' (in the list of files).")
    _refuse_twice(paths)
    return [Member(p) for p in paths], (), {_kind(p, where) for p in paths}


def _refuse_twice(paths):
    """A file listed twice would be read twice: its rows counted twice, which the row-level guarantee does not cover."""
    seen = {}
    for p in paths:
        real = os.path.realpath(p)
        if real in seen:
            also = "" if seen[real] == p else f" (also as '{seen[real]}')"
            raise ValueError(f"'{p}' is listed twice in the list of files{also}; its rows would count twice, which "
                             "the privacy guarantee does not cover: list each file once.")
        seen[real] = p


def _globbed_members(fs, pattern, where):
    """The files a glob matches (``**`` recursive), in sorted order; none is an error."""
    found = sorted(fs.glob(pattern) if fs is not None else _glob.glob(pattern, recursive=True))
    found = [p for p in found if _isfile(fs, p)]
    if not found:
        raise FileNotFoundError(f"No files match {where}.")
    return [Member(p, fs) for p in found], (), {_kind(p, where) for p in found}


def _hive(root, fs, where):
    """The Parquet files under a directory, and their hive partitions (``key=value`` directories)."""
    import pyarrow.dataset as pads

    other = next((f for f in _listed(root, fs) if not f.lower().endswith(_PARQUET)), None)
    if other is not None:
        raise ValueError(f"{where} is a directory holding a file that is not Parquet ('{other}'); a directory is read "
                         "as Parquet files (hive partitions): give a glob ('dir/*.csv') for other files.")
    try:
        data = pads.dataset(root, format="parquet", partitioning="hive", filesystem=_arrow_fs(fs),
                            exclude_invalid_files=False)
    except Exception as exc:  # pyarrow's discovery errors vary; their text may hold a path, never data
        raise ValueError(f"Could not read {where} as a directory of Parquet files ({type(exc).__name__}).") from None
    members, names = [], []
    for frag in sorted(data.get_fragments(), key=lambda f: f.path):
        keys = pads.get_partition_keys(frag.partition_expression)
        in_path = [seg.split("=", 1)[0] for seg in frag.path.split("/") if seg.split("=", 1)[0] in keys]
        names += [k for k in in_path if k not in names]  # in the directories' order, outermost first
        members.append(Member(frag.path, fs, keys))
    if not members:
        raise ValueError(f"{where} is a directory without Parquet files; give a .parquet directory, a glob or files.")
    for m in members:
        if set(m.partition) != set(names):
            raise ValueError(f"{m.where} lacks the partition column(s) other files of {where} have.")
    return members, tuple(names), {"parquet"}


def _listed(root, fs):
    """The data files under ``root`` (names starting with '.' or '_', and folders so named, are skipped)."""
    if fs is not None:
        found = fs.find(root)
    else:
        found = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            found += [os.path.join(folder, f) for f in sorted(files)]
    return [f for f in found if not os.path.basename(f).startswith((".", "_"))]


def _kind(path, where):
    return format_of(path, where)[0]


def _exists(fs, path):
    return fs.exists(path) if fs is not None else os.path.exists(path)


def _isfile(fs, path):
    return fs.isfile(path) if fs is not None else os.path.isfile(path)


#: fsspec protocols and the package each needs (all brought by ``dpmoments[cloud]``).
PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "http": "aiohttp", "https": "aiohttp",
            "az": "adlfs", "abfs": "adlfs"}


def _remote(url, where):
    """``(fsspec filesystem, path within it)`` for a URL; a missing package is named."""
    protocol = url.split("://", 1)[0].lower()
    try:
        import fsspec

        fs, path = fsspec.core.url_to_fs(url)
    except ImportError:
        package = PACKAGES.get(protocol, f"the fsspec filesystem for '{protocol}://'")
        raise ImportError(f"Reading {where} needs {package}: pip install \"dpmoments[cloud]\"") from None
    except ValueError:
        raise ValueError(f"{where}: unknown URL protocol '{protocol}://'; supported: s3://, gs://, https://, "
                         "or any other fsspec knows.") from None
    return fs, (url if protocol in ("http", "https") else path)


def _arrow_fs(fs):
    if fs is None:
        return None
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    return PyFileSystem(FSSpecHandler(fs))


def open_input(member):
    """A member's bytes for pyarrow: its path when local, else an input file through its filesystem."""
    if member.filesystem is None:
        return member.path
    return _arrow_fs(member.filesystem).open_input_file(member.path)
