"""Parsing ahead in a background thread changes nothing but the time: same chunks, same errors, no thread left."""

import threading

import numpy as np
import pytest

from dpmoments.data._chunking import read_ahead
from dpmoments.data.tables import open_table


def _threads():
    return [t for t in threading.enumerate() if t.name == "dpmoments-read-ahead"]


def test_the_items_and_their_order_are_the_source_s():
    assert list(read_ahead(iter(range(100)), 3)) == list(range(100))
    assert list(read_ahead(iter([]), 1)) == []
    assert not _threads()


def test_a_failure_in_the_thread_is_raised_in_its_place():
    def source():
        yield from range(5)
        raise ValueError("file 'x.csv': missing or non-finite value in column 'a' at data row 6")

    seen = []
    with pytest.raises(ValueError, match="data row 6"):
        for item in read_ahead(source(), 2):
            seen.append(item)
    assert seen == list(range(5)) and not _threads()


def test_stopping_early_stops_the_thread_and_closes_the_source():
    closed = threading.Event()

    def source():
        try:
            yield from range(10_000)
        finally:
            closed.set()

    stream = read_ahead(source(), 2)
    assert [next(stream) for _ in range(3)] == [0, 1, 2]
    stream.close()
    assert closed.is_set() and not _threads()


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_file_read_ahead_gives_the_same_chunks(tmp_path, suffix):
    X = np.random.default_rng(0).normal(size=(5000, 4)).round(4)
    path = tmp_path / f"d.{suffix}"
    if suffix == "csv":
        np.savetxt(path, X, delimiter=",", header="a,b,c,y", comments="", fmt="%.4f")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({k: X[:, j] for j, k in enumerate("abcy")}), path, row_group_size=700)
    table = open_table(path, target="y")
    plain, ahead = list(table.chunks(512)), list(table.chunks(512, ahead=3))
    assert len(plain) == len(ahead) == 10
    for (x0, y0), (x1, y1) in zip(plain, ahead):
        np.testing.assert_array_equal(x0, x1)
        np.testing.assert_array_equal(y0, y1)


def test_a_bad_row_far_into_a_file_is_named_the_same_way(tmp_path):
    path = tmp_path / "d.csv"
    rows = ["a,b"] + [f"{k},{k}" for k in range(3000)]
    rows[2500] = "1,"
    path.write_text("\n".join(rows) + "\n")
    messages = []
    for ahead in (0, 2):
        with pytest.raises(ValueError) as exc:
            list(open_table(path).chunks(256, ahead=ahead))
        messages.append(str(exc.value))
    assert messages[0] == messages[1] and "data row 2500" in messages[0] and not _threads()
