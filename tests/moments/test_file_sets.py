"""Several files as one table: a hive-partitioned Parquet directory, a glob, a list, a URL (fsspec memory://)."""

import os

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from dpmoments.data import iter_chunks  # noqa: E402
from dpmoments.moments import accumulate_moments  # noqa: E402
from dpmoments.data import open_table  # noqa: E402

ROWS = [(2020, "north", 40), (2021, "north", 35), (2021, "south", 25)]


@pytest.fixture
def lake(tmp_path):
    """A hive-partitioned directory year=/region=, three files of columns a, b, c (row groups of 10 rows)."""
    X = np.random.default_rng(0).normal(size=(100, 3))
    at = 0
    for year, region, n in ROWS:
        folder = tmp_path / "lake" / f"year={year}" / f"region={region}"
        folder.mkdir(parents=True)
        part = X[at:at + n]
        pq.write_table(pa.table({"a": part[:, 0], "b": part[:, 1], "c": part[:, 2]}), folder / "part-0.parquet",
                       row_group_size=10)
        at += n
    return tmp_path / "lake", X


def test_directory_reads_every_file_in_order_and_leaves_partitions_out(lake):
    root, X = lake
    table = open_table(root)
    assert table.names == ["a", "b", "c", "year", "region"] and table.feature_names == ["a", "b", "c"]
    assert table.n_rows == 100
    assert np.array_equal(np.concatenate(list(table.chunks(16))), X)
    (note,) = table._backend.notes
    assert "'year', 'region'" in note and "left out" in note


def test_a_numeric_partition_column_may_be_chosen_a_text_one_is_refused_by_name(lake):
    root, X = lake
    A = np.concatenate(list(open_table(root, columns=["a", "year"]).chunks(7)))
    assert np.array_equal(A[:, 0], X[:, 0]) and set(A[:, 1]) == {2020.0, 2021.0}
    with pytest.raises(ValueError, match="partition column 'region' is not numeric") as err:
        open_table(root, columns=["a", "region"])
    assert "north" not in str(err.value)


def test_a_partition_column_with_declared_categories_is_one_hot_encoded(lake):
    """Its levels from the user (a level missing from the data is fine, an unlisted value sets all to 0)."""
    root, X = lake
    table = open_table(root, categories={"region": ["south", "east"]})
    assert table.feature_names == ["a", "b", "c", "region=south", "region=east"]
    (note,) = table._backend.notes
    assert "'year'" in note and "region" not in note
    A = np.concatenate(list(table.chunks(16)))
    assert np.array_equal(A[:, :3], X) and A[:, 3].tolist() == [0.0] * 75 + [1.0] * 25 and not A[:, 4].any()
    B = np.concatenate(list(open_table(root, columns=["region", "year"], categories={"region": ["north"]}).chunks(9)))
    assert B[:, 0].tolist() == [1.0] * 75 + [0.0] * 25 and set(B[:, 1]) == {2020.0, 2021.0}


def test_glob_list_and_tuple_of_paths_are_files_never_data(lake):
    root, X = lake
    files = sorted(str(p) for p in root.rglob("*.parquet"))
    for source in (files, tuple(files), str(root / "*" / "*" / "*.parquet")):
        s = accumulate_moments(source, row_norm=10.0)
        assert s.n == 100 and np.allclose(s.xtx, accumulate_moments(X, row_norm=10.0).xtx)
    two = files[:2]  # a tuple of two paths is files, not an (X, y) pair
    assert sum(c.shape[0] for c in iter_chunks(tuple(two))) == 75
    with pytest.raises(ValueError, match="listed twice"):  # its rows would count twice
        accumulate_moments([files[0], *files], row_norm=10.0)


def test_files_split_by_an_option_on_the_command_line_say_how_to_give_several_files(lake, capsys):
    """The moment commands take several files as one input, given together; a file after an option is refused
    in one line that says so (the shell-expanded list itself is tests/cli/test_input_lists.py's)."""
    from dpmoments.cli import main

    first, *rest = sorted(str(p) for p in lake[0].rglob("*.parquet"))
    with pytest.raises(SystemExit) as info:
        main(["covariance", first, "--epsilon", "1", *rest, "--delta", "1e-6", "--out", str(lake[0].parent / "out")])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and len(err.splitlines()) == 1 and "given together, not split by options" in err


def test_a_bad_value_is_named_by_its_file_and_row_never_its_value(tmp_path):
    for k in range(2):
        col = np.arange(5.0) + 10 * k
        if k == 1:
            col[3] = np.nan
        pq.write_table(pa.table({"a": col}), tmp_path / f"p{k}.parquet")
    with pytest.raises(ValueError, match=r"p1\.parquet.*'a'.*row 3 \(0-based\) of that file"):
        list(iter_chunks(str(tmp_path / "*.parquet")))


def test_files_with_other_columns_or_formats_are_refused(tmp_path):
    pq.write_table(pa.table({"a": [1.0, 2.0]}), tmp_path / "p0.parquet")
    pq.write_table(pa.table({"b": [1.0, 2.0]}), tmp_path / "p1.parquet")
    with pytest.raises(ValueError, match="other columns"):
        open_table(str(tmp_path / "*.parquet"))
    np.save(tmp_path / "x.npy", np.ones((2, 1)))
    with pytest.raises(ValueError, match="mixes file formats"):
        open_table([str(tmp_path / "p0.parquet"), str(tmp_path / "x.npy")])
    with pytest.raises(FileNotFoundError, match="No files match"):
        open_table(str(tmp_path / "*.csv"))
    with pytest.raises(FileNotFoundError, match="in the list of files"):
        open_table([str(tmp_path / "p0.parquet"), str(tmp_path / "missing.parquet")])


def test_urls_keep_both_slashes_and_name_the_package_they_need():
    for url, package in (("http://example.org/x.parquet", "aiohttp"), ("s3://bucket/x.parquet", "s3fs"),
                         ("gs://bucket/x.parquet", "gcsfs")):
        try:
            __import__(package)
        except ImportError:
            with pytest.raises(ImportError, match=f"'{url}' needs {package}: pip install \"dpmoments\\[cloud\\]\""):
                open_table(url)


def test_an_fsspec_url_is_read_like_a_local_directory(lake):
    fsspec = pytest.importorskip("fsspec")
    root, X = lake
    fs = fsspec.filesystem("memory")
    for path in root.rglob("*.parquet"):
        fs.pipe(f"/lake-{os.getpid()}/{path.relative_to(root).as_posix()}", path.read_bytes())
    try:
        table = open_table(f"memory://lake-{os.getpid()}")
        assert table.feature_names == ["a", "b", "c"]
        assert np.array_equal(np.concatenate(list(table.chunks(50))), X)
    finally:
        fs.rm(f"/lake-{os.getpid()}", recursive=True)


def test_reading_a_file_set_holds_about_one_batch(tmp_path):
    """Memory: 20 files of 4 MiB of numbers each, read in 8192-row chunks, peak well under one file."""
    import tracemalloc

    rng = np.random.default_rng(1)
    for k in range(20):
        pq.write_table(pa.table({f"c{j}": rng.normal(size=65536) for j in range(8)}), tmp_path / f"p{k:02d}.parquet",
                       row_group_size=16384)
    tracemalloc.start()
    n = sum(c.shape[0] for c in iter_chunks(str(tmp_path), chunk_size=8192))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert n == 20 * 65536
    assert peak < 2 * (16384 * 8 * 8), peak  # under 2x one row group's numbers (1 MiB here)


def test_a_cluster_piece_costs_about_its_numbers(tmp_path):
    """A dask block of row groups is read batch by batch into the block: peak under 1.2x the block's numbers.

    tracemalloc sees numpy's memory; pyarrow's own pool holds one 8192-row batch besides (0.6 MB here)."""
    import tracemalloc

    pytest.importorskip("dask")
    from dpmoments.data.dask_tables import _plan, _read_piece

    rng = np.random.default_rng(2)
    pq.write_table(pa.table({f"c{j}": rng.normal(size=200_000) for j in range(10)}), tmp_path / "big.parquet",
                   row_group_size=50_000)
    plan = _plan(str(tmp_path / "big.parquet"), None, None, None, True, piece_bytes=1 << 40)
    (piece,) = plan["pieces"]  # every row group in one block: 16 MB of numbers
    _read_piece(*piece, plan)  # once before measuring: first-use imports and caches are not the read's
    tracemalloc.start()
    block = _read_piece(*piece, plan)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert block.shape == (200_000, 10) and block.nbytes == 16_000_000
    assert peak < 1.2 * block.nbytes, peak / block.nbytes
