"""A file read by the private choices: a .npy read again for each pass, a parsed file parsed once.

A private centre, bound and mean take one pass over the rows (two where the centre needs a
refinement step, docs/bounds.md) before the release's own; a CSV or Parquet file is parsed once and its
float64 rows replayed from an unnamed temporary file, so memory stays one chunk plus the sums whatever
the file's size (tests/moments/test_reader_memory.py measures it).
"""

import numpy as np
import pytest

from dpmoments.cli import _io, main


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


@pytest.mark.parametrize("fmt, shift, passes", [("csv", 0.0, 2), ("parquet", 2.0, 3), ("npy", 2.0, 3)])
def test_the_default_private_choices_read_the_rows_once_or_twice_before_the_release(monkeypatch, data_files,
                                                                                     tmp_path, fmt, shift, passes):
    reads, chunks = [], _io.DataSource.chunks

    def counted(self, *args, **kwargs):  # the passes that read the file to its end (not a peek at its width)
        yield from chunks(self, *args, **kwargs)
        reads.append(1)

    path = tmp_path / f"x.{fmt}"
    X = np.load(data_files / "x.npy") - 2.0 + shift  # rows about the origin, or 4 (two sd of a row) off it
    _write(path, X)
    monkeypatch.setattr(_io.DataSource, "chunks", counted)
    assert main(["-q", "covariance", str(path), "--epsilon", "1", "--delta", "1e-6", "--seed", "3",
                 "--chunk-size", "500", "--no-figures", "--out", str(tmp_path / "out")]) == 0
    # the choices' passes (about the origin; about the first step's centre where that one moved it), the release:
    # a .npy is read for each, a parsed file parsed once (the later passes read its spill, data/spill.py)
    assert len(reads) == (passes if fmt == "npy" else 1)


def _write(path, X):
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    table = pa.table({f"x{j}": X[:, j] for j in range(X.shape[1])})
    if path.suffix == ".npy":
        np.save(path, X)
    elif path.suffix == ".csv":
        pacsv.write_csv(table, path)
    else:
        pq.write_table(table, path)


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
