"""``.npy`` arrays read one block of rows at a time, into reused buffers.

The header is read through a memory map; the rows are read from the file itself, so that a file
another program truncates mid-run comes up short (a one-line error) instead of killing the process
(SIGBUS at the first missing page of a map). Messages name the file, never a value.
"""

import numpy as np

from ._csv import _kind

__all__ = ["NpyFile"]


class NpyFile:
    """A ``.npy`` array's rows in blocks, read from the file (through its memory map only when Fortran-ordered)."""

    def __init__(self, path, where):
        try:
            with open(path, "rb") as f:
                magic = f.read(6)
        except OSError as exc:
            raise ValueError(f"Could not read {where} as a .npy array ({_kind(exc)}).") from None
        if magic != b"\x93NUMPY":  # numpy takes any other file for a pickle ("Python objects")
            raise ValueError(f"Could not read {where} as a .npy array (it does not start with a NumPy header; "
                                 "save it with numpy.save).")
        try:
            A = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as exc:
            pickled = "allow_pickle" in str(exc) or "Python objects" in str(exc)
            why = "it holds Python objects, which are never unpickled" if pickled else "bad header"
            raise ValueError(f"Could not read {where} as a .npy array ({why}).") from None
        except (OSError, EOFError) as exc:
            raise ValueError(f"Could not read {where} as a .npy array ({_kind(exc)}).") from None
        if not isinstance(A, np.ndarray) or A.dtype.kind not in "biuf":
            raise ValueError(f"{where} must hold an array of real numbers; got dtype {A.dtype}.")
        if A.ndim != 2:
            raise ValueError(f"{where} must hold a 2-D array (n_samples, n_features); got {A.ndim}-D shape {A.shape}.")
        self.n_rows, self.path, self.where = int(A.shape[0]), path, where
        self.names = [f"x{j}" for j in range(A.shape[1])]
        # Rows are read from the file, not through the memory map: a map of a file that another program
        # truncates kills the process (SIGBUS) at the first missing page; a read just comes up short.
        # A Fortran-ordered array's rows are not contiguous, so it alone is read through the map.
        self.fortran_map = A if A.flags.f_contiguous and not A.flags.c_contiguous else None
        self.offset, self.dtype, self.width = A.offset, A.dtype, A.shape[1]

    def blocks(self, used, chunk_size):
        everything, mapped = used == list(range(self.width)), self.fortran_map is not None
        for start, block in (self._mapped if mapped else self._read)(chunk_size):
            # A mapped block is copied out of the map; a block read is already this pass's own array.
            yield start, (np.array(block, dtype=np.float64, copy=True if mapped else None) if everything
                          else block[:, used].astype(np.float64))

    def _mapped(self, chunk_size):
        for start in range(0, self.n_rows, chunk_size):
            yield start, self.fortran_map[start:start + chunk_size]

    def _read(self, chunk_size):
        pool = _Buffers(min(chunk_size, max(self.n_rows, 1)) * self.width, self.dtype)
        with open(self.path, "rb", buffering=0) as f:
            f.seek(self.offset)
            for start in range(0, self.n_rows, chunk_size):
                rows = min(chunk_size, self.n_rows - start)
                block = pool.take()[:rows * self.width]
                if _read_into(f, block) != block.nbytes:
                    raise ValueError(f"{self.where} ended before the rows its header announces (was it cut "
                                     "short while being read?).")
                yield start, block.reshape(rows, self.width)
                del block


def _read_into(f, block):
    """Fill ``block`` from ``f``; the bytes read (fewer only at the file's end)."""
    view, done = memoryview(block).cast("B"), 0
    while done < view.nbytes:
        got = f.readinto(view[done:])
        if not got:
            break
        done += got
    return done


class _Buffers:
    """Chunk-sized arrays that a pass reads into again once nothing refers to them any more.

    A fresh array per chunk costs its pages (faulted in and zeroed by the system) on top of the read: about
    0.08 CPU-s per 800 MB, a third of a pass over a ``.npy`` in the page cache. A buffer is reused only when
    no array (a chunk, a view of one, a memoryview) refers to it: every view holds a reference to it, so
    its reference count shows that; a consumer that keeps a chunk keeps it as it was read, and the pass
    reads into a new buffer instead. At most two are usually alive: the consumer's chunk and the next.
    """

    def __init__(self, size, dtype):
        self.size, self.dtype, self.free = size, dtype, []

    def take(self):
        import sys

        for buf in self.free:
            if sys.getrefcount(buf) == 3:  # the list, the loop's name and getrefcount's argument: nobody else
                return buf
        buf = np.empty(self.size, dtype=self.dtype)
        if len(self.free) < 2:
            self.free.append(buf)
        return buf
