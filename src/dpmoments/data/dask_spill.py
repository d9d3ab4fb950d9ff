"""A dask array's blocks read once on a cluster: each worker keeps the blocks it parsed on its own disk.

The private choices read the rows two or three times before the release's pass (docs/bounds.md). On one
machine a parsed file's later passes replay an unnamed temporary file (:mod:`~dpmoments.data.spill`); on a
``distributed`` cluster every pass read and parsed every file again, and made three scheduler tasks a
block. :func:`parsed_once` gives the passes of one release a dask array whose blocks are each read once,
by a task that writes the float64 block to an unnamed temporary file on the worker that read it and keeps
only a handle (:class:`SpilledBlock`, a few bytes in the worker's memory). Every later pass makes one task a
worker, which reads the blocks that worker holds back from their files one at a time (the page cache, as a
``.npy`` file is read) and sums each, and one task that merges the blocks' sums in the graph's order
(:func:`merged_where_held`): same values, same blocks, same merges, so every sum and release is bit-for-bit what
re-reading gives; a worker reads one block at a time, and the merge task holds every block's partial sums at once,
so where those would pass :data:`HELD_MERGE_BYTES` together (wide rows) the pass keeps its graph's merge tree.
The handles are released when the release's passes end, and each file with its handle (on Linux/POSIX it has no name
in any directory; the system reclaims it when the worker process ends, however it ends).

Only where it pays and is safe: a dask array of blocks parsed from files (:func:`~.dask_tables.open_dask_table`'s
Parquet and text pieces; Zarr's and ``.npy``'s raw reads, a DataFrame and other collections are read as before), a
``distributed`` client that is dask's active scheduler (the threaded scheduler reads the files each pass, as
before), and every worker on Linux/POSIX (positioned reads and writes, ``os.preadv``/``os.pwrite``) with its
temporary directory on disk (tmpfs would make the "spill" memory again); elsewhere every pass reads the files.

Privacy: nothing leaves a worker but what the passes sent before (their sums); the files are unnamed and
hold the rows only while the release runs.
"""

import os
import sys
import tempfile
from contextlib import contextmanager

import numpy as np

from .spill import _in_memory

__all__ = ["parsed_once", "replayed_blocks", "merged_where_held", "merge_levels", "SpilledBlock"]

# The arrays parsed_once yields (by dask name) -> their handles, each a block a task can take as it is.
_REPLAYS = {}


@contextmanager
def parsed_once(X):
    """``X`` (a dask array on a ``distributed`` cluster) with its blocks read once and replayed from each worker's
    disk for the duration of the ``with`` block; anything else is yielded as it is (module docstring), but for
    text files' blocks, which are counted (as the local reader counts its rows) by one more read where not spilled."""
    parsed = _is_dask_array(X) and X.ndim == 2 and _parsed(X)
    client = _active_client() if parsed else None
    if client is None or not all(client.run(_disk_for_spills).values()):
        # text files' blocks have unknown lengths: counted by a pass, as the local reader counts its rows
        yield X.compute_chunk_sizes() if parsed and _uncounted(X) else X
        return
    import dask
    import dask.array as da

    x = X.rechunk({1: -1}) if X.numblocks[1] > 1 else X  # a row's clipping needs the whole row in one task
    spill = dask.delayed(_spilled, pure=False)  # one command's handles: never shared with another's
    futures = client.compute([spill(b) for b in x.to_delayed().ravel()])
    name = None
    try:
        rows = x.chunks[0]
        if _uncounted(x):  # text files' blocks: their lengths, from the handles (the local reader counts its rows too)
            rows = tuple(client.gather(client.map(_row_count, futures, pure=False)))
        replay = dask.delayed(_replayed, pure=True)  # for a pass that does not take the handles (x / scale, say)
        parts = [da.from_delayed(replay(f), shape=(n, x.shape[1]), dtype=x.dtype)
                 for f, n in zip(futures, rows)]
        replayed = da.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]
        name = replayed.name
        _REPLAYS[name] = futures
        yield replayed
    finally:
        _REPLAYS.pop(name, None)
        client.cancel(futures)  # the workers drop the handles; each file goes with its handle


def replayed_blocks(x):
    """The blocks of an array :func:`parsed_once` yielded, as its handles (a pass's task takes one and reads the rows
    with ``np.asarray``: one task a block, run where the block is), or None for any other collection."""
    return _REPLAYS.get(getattr(x, "name", None))


# The most that every block's partial sums may take together in the one merge task of merged_where_held: beyond it
# (wide rows: a d x d partial is 800 MB at d = 10 000) a pass keeps its graph, whose merge tree of fan-in
# split_every holds a few partials at a time and frees them as it goes.
HELD_MERGE_BYTES = 256 * 2**20


def held_merge_fits(n_blocks, partial_bytes):
    """Whether :func:`merged_where_held`'s merge task may hold ``n_blocks`` partial sums of ``partial_bytes`` each."""
    return n_blocks * partial_bytes <= HELD_MERGE_BYTES


def merged_where_held(handles, per_block, merge, split_every, starts=None):
    """One pass over the blocks :func:`replayed_blocks` gave: ``per_block(block, k, start)`` for every block ``k``,
    merged by ``merge`` in the tree a pass's graph makes (fan-in ``split_every``, blocks in order), in
    ``1 + workers`` tasks instead of one a block and one a merge. Each worker's task sums the blocks it holds (their
    partial sums go out, never their rows); one task merges them in the order the graph would, so the result is
    the graph's, bit for bit. Per pass the scheduler, the workers and the client handled about twenty tasks and a
    graph for a few milliseconds of sums a block: that overhead was most of a spilled pass's cost."""
    from distributed import wait

    client = _active_client()
    starts = [None] * len(handles) if starts is None else starts
    wait(handles)  # where each block is held (a handle still being written has no holder yet)
    holders = client.who_has(handles)
    groups = {}
    for k, handle in enumerate(handles):
        groups.setdefault((holders.get(handle.key) or (None,))[0], []).append(k)
    parts = [client.submit(_held_blocks_sums, per_block, ks, [starts[k] for k in ks], [handles[k] for k in ks],
                           workers=None if where is None else [where], allow_other_workers=True, pure=False)
             for where, ks in groups.items()]
    order = [k for ks in groups.values() for k in ks]
    return client.submit(_tree_merged, merge, order, split_every, *parts, pure=False).result()


def _held_blocks_sums(per_block, ks, starts, blocks):
    """The partial sums of the blocks one worker holds (runs there), in the order given."""
    return [per_block(block, k, start) for block, k, start in zip(blocks, ks, starts)]


def _tree_merged(merge, order, split_every, *groups):
    """The partial sums (``order``: their block numbers) merged as the pass's graph merges them
    (:func:`merge_levels`)."""
    parts = [None] * len(order)
    for k, part in zip(order, (p for g in groups for p in g)):
        parts[k] = part
    return merge_levels(parts, merge, split_every)[0]


def merge_levels(parts, merge, split_every):
    """``parts`` merged as every pass merges its blocks' sums, on a graph or here: in order, ``split_every`` at a
    time, level by level; one rule, so that every path's sums are the same bit for bit. A list of at most one."""
    while len(parts) > 1:
        parts = [merge(*parts[i:i + split_every]) for i in range(0, len(parts), split_every)]
    return parts


class SpilledBlock:
    """One block's rows in an unnamed temporary file of the worker that read them; ``rows()`` reads them back.

    Where the write fails (a full disk) the handle holds the rows in memory instead and reports their size
    to the worker (``__sizeof__``), whose memory manager may then move them to its own spill. Sent to another
    process (a task moved off this worker), it carries the rows, read back from the file, not the file.
    """

    def __init__(self, rows):
        rows = np.ascontiguousarray(rows)
        self.shape, self.dtype, self.file, self.held = rows.shape, rows.dtype, None, None
        try:
            self.file = tempfile.TemporaryFile()
            _write_all(self.file.fileno(), memoryview(rows).cast("B") if rows.size else b"")
        except OSError:
            if self.file is not None:
                self.file.close()
            self.file, self.held = None, rows

    def rows(self):
        if self.held is not None:
            return self.held
        out = np.empty(self.shape, self.dtype)
        _read_all(self.file.fileno(), memoryview(out).cast("B") if out.size else memoryview(b""))
        return out

    def __array__(self, dtype=None, copy=None):
        rows = self.rows()
        return rows if dtype is None else rows.astype(dtype, copy=False)

    def __sizeof__(self):
        return object.__sizeof__(self) + (0 if self.held is None else self.held.nbytes)

    def __reduce__(self):
        return _held, (self.rows(),)


def _held(rows):
    block = SpilledBlock.__new__(SpilledBlock)
    block.shape, block.dtype, block.file, block.held = rows.shape, rows.dtype, None, rows
    return block


def _spilled(block):
    return SpilledBlock(np.asarray(block))


def _row_count(handle):
    return int(handle.shape[0])


def _uncounted(X):
    """Whether some of ``X``'s blocks have unknown lengths (a CSV or ``.npz`` file's: its rows are known once parsed).

    The private choices plan their draws on the row count where it is public (choice_budget.public_rows): the local
    reader counts a file's rows, so the cluster's blocks must be counted too, or the same seeded run differs."""
    return any(np.isnan(r) for r in X.chunks[0])


def _replayed(handle):
    return handle.rows()


def _write_all(fd, data):
    done = 0
    while done < len(data):
        done += os.pwrite(fd, data[done:], done)


def _read_all(fd, out):
    """Positioned reads (no shared file offset: two tasks of one worker may read the same block at once)."""
    done = 0
    while done < len(out):
        got = os.preadv(fd, [out[done:]], done)
        if got <= 0:
            raise OSError("a spilled block's file is shorter than the block (was the worker's disk changed?).")
        done += got


def _disk_for_spills():
    """Whether this process can spill: a POSIX system with positioned reads and writes (Windows has neither, and
    its temporary files are named) and a temporary directory on disk (runs on each worker)."""
    positioned = os.name == "posix" and hasattr(os, "preadv") and hasattr(os, "pwrite")
    return positioned and not _in_memory(tempfile.gettempdir())


def _parsed(X):
    """Whether ``X``'s blocks are parsed from files (:func:`~.dask_tables.open_dask_table`'s Parquet and text
    pieces). A Zarr store's or a ``.npy`` file's blocks are raw reads that cost what reading a spill costs: the
    spill's write and its extra tasks would only add (measured: 2.6x -> 3.4x the public run on Zarr)."""
    from .dask_tables import PARSED_PREFIX

    layers = getattr(X.__dask_graph__(), "layers", {})
    return any(str(name).startswith(PARSED_PREFIX) for name in layers)


def _is_dask_array(X):
    try:
        import dask.array as da
    except ImportError:
        return False
    return isinstance(X, da.Array)


def _active_client():
    """The ``distributed`` client that runs dask's computations now, or None (threaded or synchronous dask)."""
    if "distributed" not in sys.modules:  # no client without it (and not imported here for nothing)
        return None
    try:
        import dask.base
        from distributed import default_client
        client = default_client()
    except (ImportError, ValueError):
        return None
    return client if dask.base.get_scheduler() == client.get else None
