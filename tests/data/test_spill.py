"""SpilledPasses: a parsed file's first complete pass is replayed from an unnamed file, the same rows."""

import numpy as np
import pytest

import dpmoments.data.spill as spill
from dpmoments.data import SpilledPasses


def _source(chunks):
    reads = []

    def read():
        reads.append(1)
        return iter(chunks)

    return read, reads


def test_a_complete_pass_is_replayed_from_the_file_bit_for_bit_and_read_only():
    rng = np.random.default_rng(0)
    chunks = [rng.standard_normal((5, 3)), (rng.standard_normal((4, 3)), rng.standard_normal(4)), np.zeros((0, 3))]
    read, reads = _source(chunks)
    passes = SpilledPasses(read)
    first, second, third = list(passes), list(passes), list(passes)
    assert len(reads) == 1
    for a, b, c in zip(first, second, third):
        for x, y, z in zip(*(t if isinstance(t, tuple) else (t,) for t in (a, b, c))):
            assert x.tobytes() == y.tobytes() == z.tobytes() and x.shape == y.shape
            assert not y.flags.writeable
    assert isinstance(second[1], tuple) and not isinstance(second[0], tuple)


def test_a_pass_abandoned_half_way_keeps_nothing():
    read, reads = _source([np.ones((2, 2)), np.ones((2, 2))])
    passes = SpilledPasses(read)
    it = iter(passes)
    next(it)
    it.close()  # e.g. a peek at the width
    assert passes.spill is None
    assert len(list(passes)) == 2 and len(list(passes)) == 2 and len(reads) == 2


def test_a_full_disk_reads_the_source_again(monkeypatch):
    def full(out, chunk):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(spill, "_write", full)
    read, reads = _source([np.ones((2, 2))])
    passes = SpilledPasses(read)
    assert [c.shape for c in passes] == [(2, 2)] and [c.shape for c in passes] == [(2, 2)]
    assert len(reads) == 2 and passes.spill is None


def test_an_empty_source_replays_empty():
    read, reads = _source([])
    passes = SpilledPasses(read)
    assert list(passes) == [] and list(passes) == [] and len(reads) == 1
    passes.close()
    with pytest.raises(StopIteration):
        next(iter(SpilledPasses(lambda: iter([]))))


def test_a_temporary_directory_in_memory_is_not_spilled_to(monkeypatch):
    monkeypatch.setattr(spill, "_in_memory", lambda directory: True)  # tmpfs: a spill would be memory again
    read, reads = _source([np.ones((2, 2))])
    passes = SpilledPasses(read)
    assert len(list(passes)) == 1 and len(list(passes)) == 1 and len(reads) == 2 and passes.spill is None
    assert isinstance(spill._in_memory("/"), bool)  # reads /proc/self/mounts (or finds none) without failing


def test_a_cluster_block_handle_reads_back_bit_for_bit_and_travels_with_its_rows(monkeypatch):
    """data/dask_spill.py: the rows a worker parsed, from its unnamed file; sent elsewhere, the rows themselves;
    a failed write (a full disk) keeps them in memory, counted in the handle's size; no client: X as given."""
    import pickle
    import tempfile

    from dpmoments.data.dask_spill import SpilledBlock, parsed_once

    rows = np.random.default_rng(1).standard_normal((7, 3))
    block = SpilledBlock(rows)
    assert block.held is None and np.asarray(block).tobytes() == rows.tobytes()
    assert np.asarray(pickle.loads(pickle.dumps(block)), dtype=np.float32).dtype == np.float32
    assert pickle.loads(pickle.dumps(block)).rows().tobytes() == rows.tobytes()

    def full(*args, **kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    held = SpilledBlock(rows)
    assert held.file is None and held.rows().tobytes() == rows.tobytes() and held.__sizeof__() >= rows.nbytes
    with parsed_once(rows) as same:
        assert same is rows


def test_a_worker_without_positioned_reads_and_writes_reads_the_files_every_pass(monkeypatch):
    """data/dask_spill.py: Windows (no os.preadv / os.pwrite, named temporary files) does not spill: X as given."""
    import os

    da = pytest.importorskip("dask.array")
    import dpmoments.data.dask_spill as dask_spill

    class Client:  # client.run: each worker's answer
        def run(self, f):
            return {"worker": f()}

    monkeypatch.delattr(os, "preadv", raising=False)
    assert dask_spill._disk_for_spills() is False
    monkeypatch.setattr(dask_spill, "_parsed", lambda X: True)
    monkeypatch.setattr(dask_spill, "_active_client", Client)
    X = da.ones((4, 2), chunks=2)
    with dask_spill.parsed_once(X) as same:
        assert same is X


def test_one_merge_task_holds_every_block_s_sums_only_while_they_are_small():
    # wide rows keep the graph's merge tree: one d x d partial is 800 MB at d = 10 000
    from dpmoments.data.dask_spill import HELD_MERGE_BYTES, held_merge_fits

    assert held_merge_fits(16, 8 * 40 * 40)
    assert not held_merge_fits(16, 8 * 10_000 * 10_000)
    assert held_merge_fits(1, HELD_MERGE_BYTES) and not held_merge_fits(2, HELD_MERGE_BYTES)
