"""One input, asked once what it is: :func:`as_source` and :class:`Source`.

Every release, private pass and estimator accepts the same inputs: a 2-D
array (or anything with ``__array__``, a pandas DataFrame), a
``scipy.sparse`` matrix, a dask array or DataFrame, a path to a data file, a
list of chunks, or an iterable that yields chunks (a generator, once; the
command line's files, afresh on every iteration). :func:`as_source` tells
which, once; the code above asks the :class:`Source` (its ``kind``, whether
it is in memory or can be read again, its width and names) instead of
probing the input again.

Everything a ``Source`` says without reading rows (``kind``, ``n_features``
of an array or a dask collection, ``feature_names``, ``total_rows``) is a
public fact of the input's shape or schema, never of its values. Where the
width is only known from the data (a file, a stream), :attr:`Source.n_features`
reads the first row, as the release would.
"""

import hashlib
import os
import sys
from pathlib import Path

import numpy as np

from .._validation import check_data
from .file_sets import is_file_set
from .readers import iter_chunks

__all__ = ["Source", "as_source", "is_dask_collection", "KINDS"]

#: What an input can be; ``"pair"`` is an ``(X, y)`` tuple, ``"chunks"`` a list of chunks.
KINDS = ("array", "frame", "sparse", "dask", "file", "chunks", "stream", "pair")
_IN_MEMORY = ("array", "frame", "sparse")


def is_dask_collection(obj):
    """True for a dask array, DataFrame or Series (checked without importing dask)."""
    if not type(obj).__module__.startswith("dask"):
        return False
    try:
        import dask
    except ImportError:  # pragma: no cover
        return False
    return dask.is_dask_collection(obj)


def _is_sparse(obj):
    # A sparse matrix exists only once scipy.sparse is imported: asking no earlier keeps its import
    # (0.2-0.3 s) out of every command that reads dense data.
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(obj)


def _kind(X):
    if isinstance(X, Source):
        return X.kind
    if isinstance(X, (str, os.PathLike)) or is_file_set(X):  # one file, or a directory, glob, list, URL
        return "file"
    if is_dask_collection(X):
        return "dask"
    if _is_sparse(X):
        return "sparse"
    if isinstance(X, tuple) and len(X) == 2:
        return "pair"
    if hasattr(X, "__array__") or any(hasattr(X, a) for a in ("shape", "columns", "__dataframe__")):
        return "frame" if hasattr(X, "columns") else "array"
    if isinstance(X, (list, tuple)):
        return "chunks"
    return "stream" if hasattr(X, "__iter__") else "array"  # not data at all: check_data says why


class Source:
    """An input and what it is; made by :func:`as_source`.

    Attributes
    ----------
    data : object
        The input as given (an array, a DataFrame, a dask collection, a path, ...); a pair's ``(X, y)``.
    kind : str
        One of :data:`KINDS`.
    """

    __slots__ = ("data", "kind", "_width")

    def __init__(self, data, kind):
        self.data, self.kind, self._width = data, kind, None

    def __repr__(self):
        return f"Source(kind={self.kind!r})"

    @property
    def x(self):
        """The features: the input itself, or a pair's ``X``."""
        return self.data[0] if self.kind == "pair" else self.data

    @property
    def in_memory(self):
        """An array, a DataFrame or a sparse matrix (a pair: its ``X``)."""
        return (_kind(self.x) if self.kind == "pair" else self.kind) in _IN_MEMORY

    @property
    def dask(self):
        """A dask collection (a pair: its ``X``): summed per block inside its own tasks."""
        return self.kind == "dask" or (self.kind == "pair" and is_dask_collection(self.data[0]))

    @property
    def sparse(self):
        """A ``scipy.sparse`` matrix (a pair: its ``X``): summed from its non-zeros."""
        return self.kind == "sparse" or (self.kind == "pair" and _is_sparse(self.data[0]))

    @property
    def out_of_core(self):
        """A dask collection or a file: released by streaming, never loaded whole."""
        return self.kind in ("dask", "file")

    @property
    def rereadable(self):
        """Whether every pass can read the rows afresh (not a one-shot iterator)."""
        return self.kind != "stream" or iter(self.data) is not self.data

    @property
    def named(self):
        """A table with columns (a DataFrame, a dask DataFrame): its names are checked and kept."""
        return self.kind in ("frame", "dask") and hasattr(self.x, "columns")

    def checked(self):
        """The input as a release reads it: a dask collection, a path or a stream that can be read again (an
        opened table) as it is (streamed, never loaded here), anything else checked into a float64 array
        (``check_data``)."""
        streamed = self.out_of_core or self.kind == "stream" and self.rereadable
        return self.data if streamed else check_data(self.data)

    @property
    def n_features(self):
        """Columns, without materialising the input (dask collections and paths included).

        In-memory input is validated as by ``check_data``; a file or a stream reads its first row.
        """
        if self._width is None:
            self._width = self._features()
        return self._width

    def _features(self):
        X = self.x
        if self.kind == "dask":
            if getattr(X, "ndim", 2) != 2:
                raise ValueError(f"'X' must be 2-D with shape (n_samples, n_features); got {X.ndim}-D.")
            return len(X.columns) if hasattr(X, "columns") else int(X.shape[1])
        if isinstance(getattr(X, "n_features", None), int) and self.kind == "stream":  # an opened table: its schema
            return X.n_features
        if self.kind == "file" or (self.kind == "stream" and self.rereadable):
            first = next(iter(iter_chunks(X, chunk_size=1)))
            return (first[0] if isinstance(first, tuple) else first).shape[1]
        return (X if isinstance(X, np.ndarray) and X.ndim == 2 else check_data(X)).shape[1]

    @property
    def feature_names(self):
        """The columns' names where the input has them as strings (a DataFrame's, a dask frame's, a file's
        header, an opened table's ``feature_names``), else None."""
        X = self.x
        if self.kind == "file":
            from .tables import open_table

            return list(open_table(X).feature_names)
        if self.kind == "stream":  # an opened table, or a stream of chunks, may name its columns (one-hot levels included)
            columns = list(getattr(X, "feature_names", None) or ())
            return columns if columns and all(isinstance(c, str) for c in columns) else None
        columns = list(getattr(X, "columns", ())) if self.kind in ("frame", "dask") else []
        # Names only: labels that are strings (a pyarrow Table's "columns" are its data, never to be printed).
        return columns if columns and all(isinstance(c, str) for c in columns) else None

    @property
    def total_rows(self):
        """The number of rows where the input's shape says it (an array, a dask frame, a ``.npy`` or Parquet
        file), else None (a text file, a stream, a dask array of unknown chunk sizes)."""
        X = self.x
        n = getattr(X, "shape", (None,))[0]
        if isinstance(n, (int, np.integer)):
            return int(n)
        if self.kind == "dask":
            try:
                return int(len(X))
            except (TypeError, ValueError):
                return None
        if self.kind == "file":
            from .tables import open_table

            return open_table(X).n_rows
        return None

    def chunks(self, rows=65536):
        """The input as float64 row blocks of at most ``rows`` rows (:func:`~dpmoments.data.iter_chunks`)."""
        return iter_chunks(self.data, chunk_size=rows)

    def recut(self, nbytes, rows=65536):
        """The input in blocks of about ``nbytes`` of float64 (at most ``rows`` rows), for a pass whose result does
        not depend on how its rows are cut: a file read afresh at that size, a re-readable stream that offers
        ``recut(rows)`` (the command line's file) asked for it, anything else as :meth:`chunks` gives it in
        ``rows`` (an array's views, a stream's own chunks). Reading a file in cache-sized blocks lets each block
        be checked and used while it is in the cache, instead of copying chunks of tens of MB to memory and
        reading them back twice."""
        offers = self.kind == "stream" and callable(getattr(self.data, "recut", None))
        if self.kind != "file" and not offers:
            return self.chunks(rows)
        small = min(rows, max(nbytes // (8 * max(self.n_features, 1)), 1))
        return iter_chunks(self.data, chunk_size=small) if self.kind == "file" else iter(self.data.recut(small))

    def fingerprint(self, progress=None):
        """SHA-256 of the input: a file's bytes (a directory's files, each after its relative path, as a Zarr
        store), or an in-memory array's shape and float64 values.

        Opt-in and not private: it tells apart two inputs that differ in one row, so it belongs in
        no release or report unless the user asks for it. A dask collection or a stream has none
        here (computing it would read all of it once more): ``ValueError``. ``progress``, if given,
        has ``update(n_bytes)`` called as the bytes are read.
        """
        digest = hashlib.sha256()
        if self.kind == "file" and is_file_set(self.x):
            from .tables import open_table

            members = open_table(self.x)._backend.members
            if any(m.filesystem is not None for m in members):
                raise ValueError("a fingerprint is computed for local files, not for a URL's.")
            for m in members:
                digest.update(m.path.encode() + b"\0")
                with open(m.path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
                        if progress is not None:
                            progress.update(len(block))
        elif self.kind == "file":
            root = Path(self.x)
            for file in (sorted(f for f in root.rglob("*") if f.is_file()) if root.is_dir() else [root]):
                if root.is_dir():
                    digest.update(str(file.relative_to(root)).encode() + b"\0")
                with open(file, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
                        if progress is not None:
                            progress.update(len(block))
        elif self.kind in ("array", "frame"):
            A = np.ascontiguousarray(check_data(self.x), dtype=np.float64)
            digest.update(repr(A.shape).encode())
            digest.update(A.tobytes())
        else:
            raise ValueError(f"a fingerprint is computed for a file or an in-memory array, not for {self.kind!r} "
                             "input.")
        return digest.hexdigest()


def as_source(X):
    """``X`` as a :class:`Source` (a ``Source`` is returned as it is).

    Parameters
    ----------
    X : array-like, DataFrame, scipy.sparse matrix, dask collection, path, (X, y) tuple or iterable of chunks

    Returns
    -------
    Source

    Examples
    --------
    >>> import numpy as np
    >>> src = as_source(np.ones((5, 3)))
    >>> src.kind, src.n_features, src.total_rows, src.in_memory
    ('array', 3, 5, True)
    >>> [c.shape for c in src.chunks(2)]
    [(2, 3), (2, 3), (1, 3)]
    """
    return X if isinstance(X, Source) else Source(X, _kind(X))
