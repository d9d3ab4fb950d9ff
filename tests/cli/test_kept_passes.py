"""A parsed file is parsed once for all the passes of the private choices, under a fixed memory cap.

A private centre reads the rows up to six times (refinement steps, the row bound and mean, the
release); a CSV or Parquet file was parsed again for each. ``KeptPasses`` keeps the parsed chunks of
a complete pass while they total at most ``KEEP_PARSED_BYTES`` and replays them; above the cap every
pass reads the file, as before. Either way the release is bit-for-bit the same.
"""

import numpy as np
import pytest

import dpmoments.data.readers as readers
from dpmoments.cli import _io, main
from dpmoments.data.readers import KeptPasses


def _source(n_chunks=3, rows=4):
    reads = []

    def read():
        reads.append(1)
        return (np.full((rows, 2), float(i)) for i in range(n_chunks))

    return read, reads


def test_a_pass_under_the_cap_is_kept_and_replayed_read_only():
    read, reads = _source()
    passes = KeptPasses(read, cap=10_000)
    first, second, third = list(passes), list(passes), list(passes)
    assert len(reads) == 1
    assert all(a is b is c for a, b, c in zip(first, second, third))
    with pytest.raises(ValueError, match="read-only"):
        second[0][0, 0] = 1.0  # a pass that wrote into its chunk would change the next pass's rows


def test_above_the_cap_every_pass_reads_again_and_nothing_is_kept():
    read, reads = _source()
    passes = KeptPasses(read, cap=3 * 4 * 2 * 8 - 1)  # one byte short of the three chunks
    for _ in range(3):
        assert [float(c[0, 0]) for c in passes] == [0.0, 1.0, 2.0]
    assert len(reads) == 3 and passes.kept is None and passes.too_large


def test_a_pass_abandoned_half_way_keeps_nothing():
    read, reads = _source()
    passes = KeptPasses(read, cap=10_000)
    next(iter(passes))  # e.g. a peek at the width
    assert passes.kept is None
    assert len(list(passes)) == 3 and len(list(passes)) == 3 and len(reads) == 2


def test_tuples_of_arrays_are_kept_whole():
    chunks = [(np.ones((2, 2)), np.ones(2))]
    passes = KeptPasses(lambda: iter(chunks), cap=10_000)
    list(passes)
    assert passes.kept == chunks and not chunks[0][1].flags.writeable


def test_the_default_cap_is_read_when_a_pass_starts(monkeypatch):
    read, reads = _source()
    monkeypatch.setattr(readers, "KEEP_PARSED_BYTES", 0)
    passes = KeptPasses(read)
    list(passes), list(passes)
    assert len(reads) == 2


@pytest.fixture(scope="module")
def data_files(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    tmp = tmp_path_factory.mktemp("kept")
    X = np.round(np.random.default_rng(1).standard_normal((3000, 4)) + 2.0, 4)
    table = pa.table({f"x{j}": X[:, j] for j in range(4)})
    pacsv.write_csv(table, tmp / "x.csv")
    pq.write_table(table, tmp / "x.parquet")
    np.save(tmp / "x.npy", X)
    return tmp


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_default_private_choices_parse_the_file_once_with_the_same_release(monkeypatch, data_files, tmp_path, fmt):
    reads, chunks = [], _io.DataSource.chunks

    def counted(self, *args, **kwargs):
        reads.append(1)
        return chunks(self, *args, **kwargs)

    monkeypatch.setattr(_io.DataSource, "chunks", counted)
    released = {}
    for cap in (readers.KEEP_PARSED_BYTES, 1):  # the default (1 GiB), then a cap that no chunk fits under
        monkeypatch.setattr(readers, "KEEP_PARSED_BYTES", cap)
        reads.clear()
        out = tmp_path / f"cap{cap}"
        assert main(["-q", "covariance", str(data_files / f"x.{fmt}"), "--epsilon", "1", "--delta", "1e-6",
                     "--seed", "3", "--chunk-size", "500", "--no-figures", "--out", str(out)]) == 0
        released[cap] = [np.load(out / f"covariance{s}.npy") for s in ("", "_se", "_lower", "_upper")]
        if cap == 1:
            assert len(reads) >= 5  # the refinement steps, the bound and mean, the release: each parsed the file
        else:
            assert len(reads) == 2  # one peek at the first chunk (the width), one complete pass kept for the rest
    for kept, reread in zip(*released.values()):
        assert np.array_equal(kept, reread)
        assert kept.tobytes() == reread.tobytes()


def test_a_memory_mapped_npy_is_never_copied_into_memory(monkeypatch, data_files, tmp_path):
    from dpmoments.cli import _release

    made = []
    monkeypatch.setattr(_release, "KeptPasses", lambda read, cap=None: made.append(cap) or KeptPasses(read, cap))
    assert main(["-q", "covariance", str(data_files / "x.npy"), "--epsilon", "1", "--delta", "1e-6", "--seed", "3",
                 "--no-figures", "--out", str(tmp_path / "npy")]) == 0
    assert made == [0]


def test_the_figures_are_imported_once_while_the_file_is_parsed_ahead(data_files):
    calls = []
    source = _io.DataSource(str(data_files / "x.csv"), meanwhile=lambda: calls.append(source.n_rows))
    first = source.chunks(500)
    next(first)
    first.close()  # a peek at the first chunk does not start the work
    assert calls == []
    assert sum(c.shape[0] for c in source.chunks(500)) == 3000
    assert calls == [500]  # once, after the first chunk
    assert len(list(source.chunks(500))) == 6 and calls == [500]


def test_figures_ahead_only_when_figures_are_drawn():
    from types import SimpleNamespace

    from dpmoments.cli._output import figures_ahead

    assert figures_ahead(SimpleNamespace(no_figures=True)) is None and figures_ahead(SimpleNamespace()) is None
    assert callable(figures_ahead(SimpleNamespace(no_figures=False)))


@pytest.mark.parametrize("change", ["append", "truncate", "replace", "delete"])
def test_a_file_that_changes_while_it_is_read_is_refused(tmp_path, change):
    """Passes over a file that another program writes would mix two data sets (and, cut mid-row, read as a bad
    value): the source compares the file's identity, size and time with those it had when opened."""
    path = tmp_path / "x.csv"
    path.write_text("a,b\n" + "1.5,2.5\n" * 5000)
    source = _io.DataSource(path)
    stream = source.chunks(1024)
    next(stream)
    if change == "append":
        with open(path, "a") as f:
            f.write("9,9\n")
    elif change == "truncate":
        with open(path, "r+") as f:
            f.truncate(3000)
    elif change == "replace":
        (tmp_path / "y.csv").write_text("a,b\n" + "1.5,2.5\n" * 5000)
        (tmp_path / "y.csv").replace(path)
    else:
        path.unlink()
    with pytest.raises(ValueError, match="'.*x.csv' changed while it was being read") as info:
        list(stream)
    assert "\n" not in str(info.value)


def test_an_unchanged_file_reads_in_every_pass(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n" + "1.5,2.5\n" * 3000)
    source = _io.DataSource(path)
    assert [sum(c.shape[0] for c in source.chunks(1024)) for _ in range(2)] == [3000, 3000]


def test_a_tiny_chunk_size_does_not_queue_the_file_ahead(monkeypatch, tmp_path):
    """(review7) The depth was 128 MiB over the chunk's numbers alone: at --chunk-size 1 every row was a queued
    chunk of ~300 bytes of objects (a 3 MiB column kept 120 MiB while the pass was busy), growing with the file."""
    import dpmoments.data.tables as tables

    depths, read_ahead = [], tables.read_ahead
    monkeypatch.setattr(tables, "read_ahead", lambda items, depth: depths.append(depth) or read_ahead(items, depth))
    path = tmp_path / "x.csv"
    path.write_text("a\n" + "1.5\n" * 300)
    assert sum(c.shape[0] for c in _io.DataSource(path).chunks(1)) == 300
    assert depths == [_io.READ_AHEAD_CHUNKS]
