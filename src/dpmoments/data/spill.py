"""Passes over a parsed file that parse it once: the rows wait on disk, in an unnamed file, not in memory.

The private choices read the rows two or three times (docs/bounds.md). Parsing a CSV or Parquet file
again for each costs far more than the pass; keeping the parsed rows in memory made memory grow with the
file. :class:`SpilledPasses` writes the float64 chunks of the first complete pass to an unnamed temporary
file (``tempfile.TemporaryFile``: on Linux it has no name in any directory and the system reclaims it when
the process ends, however it ends) and replays them from it through the page cache, as a ``.npy`` file
is read: the process's own memory stays one chunk plus the sums. Where the temporary directory is held
in memory (tmpfs, as ``/tmp`` is on some systems) nothing is spilled and every pass reads the source
again: set ``TMPDIR`` to a directory on disk for the one parse.
"""

import os
import tempfile

import numpy as np

__all__ = ["SpilledPasses"]


class SpilledPasses:
    """Chunks that can be iterated again: the first complete pass is written to an unnamed file and replayed.

    ``read()`` returns a fresh iterator over the chunks (arrays, or tuples of arrays). A pass abandoned
    half-way (a peek at the width) keeps nothing; one whose writes fail (a full disk) keeps nothing and
    every later pass reads the source again, as before. Replayed chunks are read-only views of the file, the
    same values in the same order, so every result is bit-for-bit what re-reading gives. Nothing derived
    from the rows leaves the process: the file has no name and lives only while this object does.
    """

    def __init__(self, read):
        self.read, self.spill = read, None  # (file, layout) of a complete pass

    def __iter__(self):
        return self._replay() if self.spill is not None else self._reading()

    def _reading(self):
        if _in_memory(tempfile.gettempdir()):  # a spill there would be memory again: read the source each pass
            yield from self.read()
            return
        out, layout, complete = tempfile.TemporaryFile(), [], False
        try:
            for chunk in self.read():
                if out is not None:
                    try:
                        layout.append(_write(out, chunk))
                    except OSError:  # no room: later passes read the source again
                        out.close()
                        out = None
                yield chunk
            complete = out is not None
        finally:
            if complete:
                out.flush()
                self.spill = (out, layout)
            elif out is not None:
                out.close()

    def _replay(self):
        out, layout = self.spill
        if not layout:
            return
        data = np.memmap(out, dtype=np.uint8, mode="r")
        for arrays, is_tuple in layout:
            views = tuple(np.ndarray(shape, dtype, buffer=data, offset=offset) for offset, shape, dtype in arrays)
            yield views if is_tuple else views[0]

    def close(self):
        if self.spill is not None:
            self.spill[0].close()
            self.spill = None


def _in_memory(directory):
    """Whether ``directory`` is on a file system held in memory (tmpfs, ramfs), from /proc/self/mounts."""
    try:
        with open("/proc/self/mounts") as f:
            mounts = [line.split()[1:3] for line in f if len(line.split()) > 2]
    except OSError:
        return False
    path = os.path.realpath(directory)
    inside = [(point, kind) for point, kind in mounts
              if path == point or path.startswith(point.rstrip("/") + "/")]
    return bool(inside) and max(inside, key=lambda m: len(m[0]))[1] in ("tmpfs", "ramfs")


def _write(out, chunk):
    """Append ``chunk``'s arrays to ``out``: ``([(offset, shape, dtype), ...], is_tuple)``."""
    is_tuple = isinstance(chunk, tuple)
    placed = []
    for a in (chunk if is_tuple else (chunk,)):
        a = np.ascontiguousarray(a)
        offset = out.tell()
        out.write(memoryview(a).cast("B") if a.size else b"")
        placed.append((offset, a.shape, a.dtype))
    return placed, is_tuple
