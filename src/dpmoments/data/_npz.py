"""Sparse matrices saved by ``scipy.sparse.save_npz``, read in blocks of rows.

A CSR archive holds ``indptr``, ``indices`` and ``data`` as three ``.npy``
members; they are read side by side, one block of rows at a time, straight
from the (possibly compressed) archive, so memory is one block whatever the
file size. Other formats (CSC, COO, ...) cannot be cut into rows without
reading them whole: they are loaded and converted (memory ~ the non-zeros).
Every structural fact (monotone ``indptr``, column indices inside the shape,
member lengths) is checked; messages never quote a value.
"""

import zipfile

import numpy as np

__all__ = ["open_sparse", "MAX_COLUMNS"]

#: The widest sparse matrix read (2^20 columns: its d x d second moment would already take 8 TiB).
MAX_COLUMNS = 1 << 20


def open_sparse(path, where):
    """A reader of the sparse matrix in ``path``: ``.shape`` and ``.row_blocks(rows)``."""
    try:
        with zipfile.ZipFile(path) as archive:
            return _open(archive, path, where)
    except (zipfile.BadZipFile, OSError, EOFError):
        raise ValueError(f"Could not read {where} as a .npz archive (not a zip file, or damaged).") from None


def _open(archive, path, where):
    members = set(archive.namelist())
    if not {"format.npy", "shape.npy", "data.npy"} <= members:
        raise ValueError(f"{where} holds no scipy.sparse matrix (one written by scipy.sparse.save_npz); "
                         "save a dense array as .npy instead.")
    fmt = _small(archive, "format.npy").item()
    fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
    shape = tuple(int(v) for v in _small(archive, "shape.npy").ravel())
    if len(shape) != 2 or min(shape) < 0:
        raise ValueError(f"{where} must hold a 2-D sparse matrix; got shape {shape}.")
    if shape[1] > MAX_COLUMNS:  # the shape costs nothing to write: a tiny file must not claim a vast width
        raise ValueError(f"{where} claims {shape[1]} columns; at most {MAX_COLUMNS} are supported (a second "
                         "moment of that width would not fit in memory).")
    if fmt == "csr" and {"indices.npy", "indptr.npy"} <= members:
        return _CsrStream(path, shape, where)
    return _InMemory(path, shape, where)


def _small(archive, name):
    with archive.open(name) as fp:
        try:
            return np.lib.format.read_array(fp, allow_pickle=False)
        except ValueError:
            raise OSError("bad member") from None


class _Member:
    """One ``.npy`` member of the archive, read sequentially ``count`` items at a time."""

    def __init__(self, fp, name, kinds, where):
        self.fp, self.name, self.where = fp, name, where
        try:
            version = np.lib.format.read_magic(fp)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(fp)
        except ValueError:
            raise ValueError(f"{where}: the member {name} is not a valid .npy array.") from None
        if dtype.hasobject or dtype.kind not in kinds or len(shape) != 1:
            raise ValueError(f"{where}: the member {name} must be a 1-D array of {_KIND_TEXT[kinds]}; "
                             f"got dtype {dtype}, shape {shape}.")
        self.dtype, self.count, self.done = dtype, int(shape[0]), 0

    def read(self, k):
        if self.done + k > self.count:
            raise ValueError(f"{self.where}: the sparse matrix is inconsistent ({self.name} is too short).")
        raw = self.fp.read(k * self.dtype.itemsize)
        if len(raw) != k * self.dtype.itemsize:
            raise ValueError(f"{self.where}: the archive is truncated ({self.name}).")
        self.done += k
        return np.frombuffer(raw, dtype=self.dtype)


_KIND_TEXT = {"iu": "integers", "biuf": "real numbers"}


class _CsrStream:
    def __init__(self, path, shape, where):
        self.path, self.shape, self.where = path, shape, where

    def row_blocks(self, rows):
        from scipy import sparse

        n, d = self.shape
        where = self.where
        with (zipfile.ZipFile(self.path) as a, a.open("indptr.npy") as fp_ptr, a.open("indices.npy") as fp_idx,
              a.open("data.npy") as fp_val):
            ptr, idx = _Member(fp_ptr, "indptr", "iu", where), _Member(fp_idx, "indices", "iu", where)
            val = _Member(fp_val, "data", "biuf", where)
            if ptr.count != n + 1 or idx.count != val.count:
                raise ValueError(f"{where}: the sparse matrix is inconsistent (member lengths do not match its shape).")
            prev = int(ptr.read(1)[0])
            if prev != 0:
                raise ValueError(f"{where}: the sparse matrix is inconsistent (indptr does not start at 0).")
            for start in range(0, n, rows):
                k = min(rows, n - start)
                local = np.concatenate(([0], ptr.read(k).astype(np.int64) - prev))
                if np.any(np.diff(local) < 0):
                    raise ValueError(f"{where}: the sparse matrix is inconsistent (indptr decreases near row {start}).")
                m = int(local[-1])
                cols = idx.read(m).astype(np.int64)
                if m and (cols.min() < 0 or cols.max() >= d):
                    raise ValueError(f"{where}: the sparse matrix is inconsistent (a column index outside its "
                                     f"{d} columns near row {start}).")
                values = val.read(m).astype(np.float64)
                yield start, sparse.csr_array((values, cols, local), shape=(k, d))
                prev += m
            if prev != val.count:
                raise ValueError(f"{where}: the sparse matrix is inconsistent (indptr ends before the data).")


class _InMemory:
    def __init__(self, path, shape, where):
        from scipy import sparse

        try:
            matrix = sparse.load_npz(path)
        except Exception:  # scipy's errors vary; its text is not shown (it may quote the archive)
            raise ValueError(f"Could not read {where} as a scipy.sparse matrix.") from None
        if matrix.dtype.kind not in "biuf":
            raise ValueError(f"{where} must hold real numbers; got dtype {matrix.dtype}.")
        self.matrix, self.shape = sparse.csr_array(matrix), shape

    def row_blocks(self, rows):
        for start in range(0, self.shape[0], rows):
            yield start, self.matrix[start:start + rows].astype(np.float64)
