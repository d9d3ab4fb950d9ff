"""Reading inputs for the command line: streamed chunks, column names, a fingerprint.

The data themselves are streamed by :func:`dpmoments.moments.iter_chunks`
(CSV and Parquet in record batches, ``.npy`` memory-mapped, Zarr through a
dask array when dask and zarr are installed), so a file larger than memory is
never loaded whole. The fingerprint is a SHA-256 of the file's bytes, read in
1 MiB blocks.
"""

import csv
import hashlib
import os
from pathlib import Path

import numpy as np

from ..moments import iter_chunks
from ._args import CliError, parse_columns, parse_target

__all__ = ["DataSource", "read_truth"]

_KINDS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".npy": "npy", ".zarr": "zarr"}


class DataSource:
    """A data file, the columns used, and how to stream it.

    Parameters
    ----------
    path : str
    columns : str or None
        The ``--columns`` text (names, or 0-based positions).
    target : str or None
        The ``--target`` text.
    """

    def __init__(self, path, columns=None, target=None):
        self.path = Path(path)
        if not self.path.exists():
            raise CliError(f"no such data file: '{path}'")
        self.kind = _kind(self.path)
        self.columns, self.target = parse_columns(columns), parse_target(target)
        self._zarr = _open_zarr(self.path) if self.kind == "zarr" else None
        # Opening validates the header/schema and the column selection now, before any work.
        iter_chunks(self._source(), chunk_size=1, columns=self.columns, target=self.target)
        self.all_names, self.total_rows = self._inspect()
        self.feature_names = self._selected_names()
        self.n_rows = None

    def _source(self):
        return self._zarr if self._zarr is not None else str(self.path)

    def _inspect(self):
        if self.kind == "csv":
            with open(self.path, newline="", encoding="utf-8-sig") as f:
                return next(csv.reader(f)), None
        if self.kind == "parquet":
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(self.path).metadata
            return list(pq.read_schema(self.path).names), meta.num_rows
        shape = np.load(self.path, mmap_mode="r").shape if self.kind == "npy" else self._zarr.shape
        return [f"x{j}" for j in range(shape[1])], int(shape[0])

    def _selected_names(self):
        names = self.all_names
        pick = lambda c: names[c] if isinstance(c, int) else c  # noqa: E731
        t = None if self.target is None else pick(self.target)
        if self.columns is None:
            return [c for c in names if c != t]
        return [pick(c) for c in self.columns]

    @property
    def n_features(self):
        return len(self.feature_names)

    def chunks(self, chunk_size, progress=None):
        """The streamed ``X`` (or ``(X, y)``) chunks; counts rows into ``self.n_rows``."""
        self.n_rows = 0
        stream = iter_chunks(self._source(), chunk_size=chunk_size, columns=self.columns, target=self.target)
        for chunk in stream:
            rows = (chunk[0] if isinstance(chunk, tuple) else chunk).shape[0]
            self.n_rows += rows
            yield chunk
            if progress is not None:
                progress.update(rows)

    def fingerprint(self, progress=None):
        """SHA-256 of the file's bytes (of every file, by relative path, for a Zarr directory)."""
        digest, size = hashlib.sha256(), 0
        for file in _files(self.path):
            if self.path.is_dir():
                digest.update(str(file.relative_to(self.path)).encode() + b"\0")
            with open(file, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
                    size += len(block)
                    if progress is not None:
                        progress.update(len(block))
        return {"sha256": digest.hexdigest(), "bytes": size}

    def nbytes(self):
        return sum(f.stat().st_size for f in _files(self.path))

    def describe(self):
        return {"path": str(self.path.resolve()), "format": self.kind, "columns": self.feature_names,
                "target": None if self.target is None else str(self.target)}


def _files(path):
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file())
    return [path]


def _kind(path):
    if path.is_dir():
        if path.suffix.lower() == ".zarr" or (path / ".zarray").exists() or (path / "zarr.json").exists():
            return "zarr"
        raise CliError(f"'{path}' is a directory but not a Zarr array; give a .csv, .parquet, .npy or .zarr")
    kind = _KINDS.get(path.suffix.lower())
    if kind is None or kind == "zarr":
        raise CliError(f"cannot read '{path}': unknown extension {path.suffix!r}; "
                       "supported: .csv, .parquet/.pq, .npy, and Zarr directories")
    return kind


def _open_zarr(path):
    try:
        import dask.array as da
    except ImportError:
        raise CliError(f"reading the Zarr array '{path}' needs dask and zarr: "
                       "pip install 'dpmoments[dask]' zarr") from None
    try:
        arr = da.from_zarr(str(path))
    except ImportError:
        raise CliError(f"reading the Zarr array '{path}' needs zarr: pip install zarr") from None
    except Exception as exc:  # zarr's errors vary across versions
        raise CliError(f"could not open '{path}' as a Zarr array: {exc}") from None
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
        except (ValueError, OSError) as exc:
            raise CliError(f"could not read the truth file '{path}': {exc}") from None
    else:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = [r for r in csv.reader(f) if r]
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


def ensure_parent(path):
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise CliError(f"the parent directory of '{path}' does not exist: {parent}")
    if not os.access(parent, os.W_OK):
        raise CliError(f"cannot write into '{parent}' (permission denied)")
    return parent
