"""Chunked readers: the same data through every format give identical moments."""

import sys

import numpy as np
import pytest

from dpmoments.moments.accumulate import accumulate_moments
from dpmoments.data.readers import iter_chunks

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

NAMES = ["a", "b", "c", "t"]


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    return rng.normal(size=(257, 4))


def _write_csv(path, data, names=NAMES):
    np.savetxt(path, data, delimiter=",", header=",".join(names), comments="", fmt="%.17g")
    return path


def _write_parquet(path, data, names=NAMES, row_group_size=50):
    table = pa.table({n: data[:, j] for j, n in enumerate(names)})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


@pytest.fixture
def files(tmp_path, data):
    np.save(tmp_path / "d.npy", data)
    return {
        "npy": tmp_path / "d.npy",
        "csv": _write_csv(tmp_path / "d.csv", data),
        "parquet": _write_parquet(tmp_path / "d.parquet", data),
    }


@pytest.fixture
def no_pyarrow(monkeypatch):
    for name in ("pyarrow", "pyarrow.csv", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, name, None)


def _moments(source, **kwargs):
    return accumulate_moments(iter_chunks(source, chunk_size=40, **kwargs), row_norm=1.5,
                              response_bound=1.0, third=True)


def _same(a, b):
    # Equal up to rounding: BLAS summation order can depend on memory alignment.
    assert a.n == b.n and a.n_features == b.n_features
    for name in ("xtx", "xty", "yty", "third"):
        if getattr(b, name) is None:
            assert getattr(a, name) is None
        else:
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-13, atol=1e-13)


def _contiguous_pair(data):
    return np.ascontiguousarray(data[:, :3]), data[:, 3].copy()


def test_round_trip_identical_moments(files, data):
    ref = _moments(_contiguous_pair(data))
    _same(_moments(str(files["npy"]), target=3), ref)
    _same(_moments(files["csv"], target="t"), ref)
    _same(_moments(files["parquet"], target="t"), ref)
    _same(_moments(data, target=3), ref)


def test_parquet_without_pyarrow_names_the_package(files, no_pyarrow):
    with pytest.raises(ImportError, match=r"pip install pyarrow"):
        iter_chunks(files["parquet"])


@pytest.mark.parametrize("kind", ["npy", "csv", "parquet", "array"])
@pytest.mark.parametrize("chunk_size", [1, 7, 40, 1000])
def test_chunk_size_bounds_rows(files, data, kind, chunk_size):
    source = data if kind == "array" else files[kind]
    sizes = [c.shape[0] for c in iter_chunks(source, chunk_size=chunk_size)]
    assert sum(sizes) == data.shape[0]
    assert all(s == chunk_size for s in sizes[:-1]) and 0 < sizes[-1] <= chunk_size


@pytest.mark.parametrize("kind", ["npy", "csv", "parquet"])
def test_file_chunks_are_fresh_float64_arrays(files, data, kind):
    chunks = list(iter_chunks(files[kind], chunk_size=100))
    for c in chunks:
        assert type(c) is np.ndarray and c.dtype == np.float64 and c.flags.writeable
    np.testing.assert_array_equal(np.concatenate(chunks), data)


def test_columns_and_target_selection(files, data):
    expect_X, expect_y = data[:, [2, 0]], data[:, 1]
    for source, cols, tgt in [(files["csv"], ["c", "a"], "b"), (files["parquet"], ["c", "a"], "b"),
                              (files["npy"], [2, 0], 1), (data, [2, -4], 1)]:
        pairs = list(iter_chunks(source, chunk_size=100, columns=cols, target=tgt))
        np.testing.assert_array_equal(np.concatenate([p[0] for p in pairs]), expect_X)
        np.testing.assert_array_equal(np.concatenate([p[1] for p in pairs]), expect_y)
    # target alone: every other column is a feature
    X, y = next(iter_chunks(files["csv"], target="a", chunk_size=500))
    np.testing.assert_array_equal(X, data[:, 1:])
    np.testing.assert_array_equal(y, data[:, 0])
    # positions work for CSV too
    X = next(iter_chunks(files["csv"], columns=[3], chunk_size=500))
    np.testing.assert_array_equal(X, data[:, [3]])


def test_dataframe_columns_by_name(data):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(data, columns=NAMES)
    X, y = next(iter_chunks(df, columns=["b"], target="t", chunk_size=500))
    np.testing.assert_array_equal(X, data[:, [1]])
    np.testing.assert_array_equal(y, data[:, 3])


def test_pairs_and_iterables(data):
    X, y = data[:, :3], data[:, 3]
    pairs = list(iter_chunks((X, y), chunk_size=100))
    assert [p[0].shape[0] for p in pairs] == [100, 100, 57]
    np.testing.assert_array_equal(np.concatenate([p[1] for p in pairs]), y)
    chunks = [X[:10], X[10:]]
    assert list(iter_chunks(chunks)) == chunks  # passed through


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_text_cell(tmp_path):
    path = _write(tmp_path, "bad.csv", "a,b,c\n1,2,3\n4,5,6\n7,oops,9\n")
    with pytest.raises(ValueError, match=r"bad\.csv': the value in column 'b' at line 4 is not a number") as err:
        list(iter_chunks(path))
    assert "oops" not in str(err.value)


def test_csv_text_cell_in_unused_column_is_fine(tmp_path):
    path = _write(tmp_path, "notes.csv", "a,note\n1,hello\n2,world\n")
    np.testing.assert_array_equal(next(iter_chunks(path, columns=["a"])), [[1.0], [2.0]])


def test_csv_missing_column(tmp_path):
    path = _write(tmp_path, "d.csv", "a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"d\.csv.*no column named 'zz'.*\['a', 'b'\]"):
        iter_chunks(path, columns=["a", "zz"])
    with pytest.raises(ValueError, match=r"d\.csv.*no column named 'y'"):
        iter_chunks(path, target="y")


def test_csv_unnamed_header_column(tmp_path):
    path = _write(tmp_path, "d.csv", "a,,c\n1,2,3\n")
    with pytest.raises(ValueError, match=r"d\.csv': column 1 .* has no name"):
        iter_chunks(path)
    np.testing.assert_array_equal(next(iter_chunks(path, columns=["c"])), [[3.0]])


def test_csv_empty_and_header_only(tmp_path):
    with pytest.raises(ValueError, match=r"empty\.csv' is empty"):
        iter_chunks(_write(tmp_path, "empty.csv", ""))
    with pytest.raises(ValueError, match=r"head\.csv' has no data rows"):
        list(iter_chunks(_write(tmp_path, "head.csv", "a,b\n")))


def test_csv_ragged_row(tmp_path):
    path = _write(tmp_path, "r.csv", "a,b,c\n1,2,3\n7,8\n")
    with pytest.raises(ValueError, match=r"r\.csv': line 3 has 2 field\(s\) but the header has 3"):
        list(iter_chunks(path))


@pytest.mark.parametrize("cell", ["nan", "", "NA", "inf", "-inf"])
def test_csv_missing_or_nonfinite_value(tmp_path, cell):
    path = _write(tmp_path, "n.csv", f"a,b\n1,2\n3,{cell}\n")
    with pytest.raises(ValueError, match=r"n\.csv': missing or non-finite value .* column 'b' at data row 2"):
        list(iter_chunks(path))


def test_csv_header_names_a_column_twice(tmp_path):
    path = _write(tmp_path, "dup.csv", "a,a\n1,2\n")
    with pytest.raises(ValueError, match=r"dup\.csv.*more than once"):
        iter_chunks(path)


def test_npy_errors(tmp_path):
    np.save(tmp_path / "cube.npy", np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match=r"cube\.npy' must hold a 2-D array"):
        iter_chunks(tmp_path / "cube.npy")
    np.save(tmp_path / "text.npy", np.array([["a"]]))
    with pytest.raises(ValueError, match=r"text\.npy' must hold an array of real numbers"):
        iter_chunks(tmp_path / "text.npy")
    (tmp_path / "junk.npy").write_bytes(b"not an npy file at all")
    with pytest.raises(ValueError, match=r"junk\.npy"):
        iter_chunks(tmp_path / "junk.npy")
    (tmp_path / "zero.npy").write_bytes(b"")
    with pytest.raises(ValueError, match=r"zero\.npy"):
        iter_chunks(tmp_path / "zero.npy")
    np.save(tmp_path / "none.npy", np.ones((0, 3)))
    with pytest.raises(ValueError, match=r"none\.npy' has no data rows"):
        list(iter_chunks(tmp_path / "none.npy"))


def test_nan_inside_files(tmp_path, data):
    bad = data.copy()
    bad[100, 2] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    with pytest.raises(ValueError, match=r"nan\.npy': missing or non-finite value in column 'x2' at row 100"):
        list(iter_chunks(tmp_path / "nan.npy", chunk_size=30))
    _write_parquet(tmp_path / "nan.parquet", bad)
    with pytest.raises(ValueError, match=r"nan\.parquet': missing or non-finite value in column 'c' at row 100"):
        list(iter_chunks(tmp_path / "nan.parquet", chunk_size=30))
    _write_csv(tmp_path / "nan.csv", bad)
    with pytest.raises(ValueError, match=r"nan\.csv': missing or non-finite value in column 'c' at data row 101"):
        accumulate_moments(iter_chunks(tmp_path / "nan.csv", chunk_size=30), row_norm=1.0)


def test_a_file_whose_sums_overflow_is_read_and_infinities_that_cancel_are_refused(tmp_path):
    huge = np.full((40, 2), 1e308)  # the finiteness check sums each block: an overflowing sum is checked entry by entry
    np.save(tmp_path / "huge.npy", huge)
    assert np.array_equal(np.vstack(list(iter_chunks(tmp_path / "huge.npy"))), huge)
    cancel = huge.copy()
    cancel[7], cancel[9] = (np.inf, 0.0), (-np.inf, 0.0)  # inf - inf: a NaN sum, never a finite one
    np.save(tmp_path / "cancel.npy", cancel)
    with pytest.raises(ValueError, match=r"cancel\.npy': missing or non-finite value in column 'x0' at row 7"):
        list(iter_chunks(tmp_path / "cancel.npy"))


def test_parquet_errors(tmp_path):
    pq.write_table(pa.table({"a": [1.0, 2.0], "s": ["x", "y"]}), tmp_path / "s.parquet")
    with pytest.raises(ValueError, match=r"s\.parquet': column 's' has type string"):
        iter_chunks(tmp_path / "s.parquet", columns=["a", "s"])  # named: refused; by default left out (below)
    np.testing.assert_array_equal(next(iter_chunks(tmp_path / "s.parquet")), [[1.0], [2.0]])
    np.testing.assert_array_equal(next(iter_chunks(tmp_path / "s.parquet", columns=["a"])), [[1.0], [2.0]])
    pq.write_table(pa.table({"a": pa.array([1, None, 3], type=pa.int64())}), tmp_path / "null.parquet")
    with pytest.raises(ValueError, match=r"null\.parquet': missing .* column 'a' at row 1"):
        list(iter_chunks(tmp_path / "null.parquet"))
    (tmp_path / "fake.parquet").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"fake\.parquet' as Parquet"):
        iter_chunks(tmp_path / "fake.parquet")
    with pytest.raises(ValueError, match=r"s\.parquet' has no column named 'q'"):
        iter_chunks(tmp_path / "s.parquet", columns=["q"])


def test_path_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"missing\.csv"):
        iter_chunks(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match=r"unknown extension '\.txt'.*\.npy"):
        iter_chunks(_write(tmp_path, "d.txt", "a\n1\n"))
    with pytest.raises(ValueError, match=r"is a directory holding a file that is not Parquet \('.*d\.txt'\)"):
        iter_chunks(tmp_path)


def test_argument_errors(data):
    with pytest.raises(ValueError, match="'chunk_size'"):
        iter_chunks(data, chunk_size=0)
    with pytest.raises(TypeError, match="'chunk_size'"):
        iter_chunks(data, chunk_size=1.5)
    with pytest.raises(ValueError, match="2-D"):
        iter_chunks(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="never parses strings"):
        iter_chunks(np.array([["a"]]))
    with pytest.raises(TypeError, match="'source'"):
        iter_chunks(5)
    with pytest.raises(ValueError, match="one entry per row"):
        iter_chunks((data, np.ones(3)))
    with pytest.raises(ValueError, match="'y' must be 1-D"):
        iter_chunks((data, data))
    with pytest.raises(ValueError, match="already an \\(X, y\\) pair"):
        iter_chunks((data, data[:, 0]), target=0)
    with pytest.raises(ValueError, match="iterable of chunks"):
        iter_chunks([data], columns=[0])
    with pytest.raises(TypeError, match="no column names"):
        iter_chunks(data, columns=["a"])
    with pytest.raises(TypeError, match="'columns' must be a list"):
        iter_chunks(data, columns="a")
    with pytest.raises(ValueError, match=r"positions must be in \[0, 4\)"):
        iter_chunks(data, columns=[4])
    with pytest.raises(ValueError, match="more than once"):
        iter_chunks(data, columns=[0, 0])
    with pytest.raises(ValueError, match="also listed in 'columns'"):
        iter_chunks(data, columns=[0, 1], target=1)
    with pytest.raises(ValueError, match="No feature columns"):
        iter_chunks(data[:, :1], target=0)


def test_dask_array_blocks(data):
    da = pytest.importorskip("dask.array")
    x = da.from_array(data, chunks=(60, 2))
    chunks = list(iter_chunks(x, chunk_size=50))
    assert max(c.shape[0] for c in chunks) <= 50
    np.testing.assert_array_equal(np.concatenate(chunks), data)
    pairs = list(iter_chunks((x[:, :3], da.from_array(data[:, 3], chunks=33)), chunk_size=1000))
    np.testing.assert_array_equal(np.concatenate([p[1] for p in pairs]), data[:, 3])
    _same(accumulate_moments(x[:, :3], row_norm=1.5, third=True),
          accumulate_moments(data[:, :3], row_norm=1.5, third=True))


def test_parquet_integers_beyond_2_53_read_like_numpy(tmp_path):
    """An int64 (or uint64) column with values beyond 2^53 is read as its nearest doubles, as a .npy of the same
    integers is; a safe cast refused it with an error whose message quoted the value (so it was withheld)."""
    big = [2**60 + 1, -(2**62) - 3, 7]
    pq.write_table(pa.table({"a": pa.array(big, pa.int64()), "b": pa.array([2**64 - 1, 0, 1], pa.uint64())}),
                   tmp_path / "big.parquet")
    got = np.concatenate(list(iter_chunks(tmp_path / "big.parquet")))
    np.testing.assert_array_equal(got, np.array([big, [2**64 - 1, 0, 1]], dtype=np.float64).T)
