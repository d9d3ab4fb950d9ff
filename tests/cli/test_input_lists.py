"""Several data files as one input: the list a shell makes of an unquoted glob (``covariance part-*.parquet``).

The list is read as the library reads a list of paths (one format, the same columns, in the order given): with
the same seed it gives the directory's and the quoted glob's release, and a bad list is refused in one line that
names the file.
"""

import numpy as np
import pytest

from .helpers import assert_one_line_error, report

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

PUBLIC = ["--epsilon", "1", "--delta", "1e-6", "--row-norm", "5", "--center", "0", "--seed", "3", "--no-figures",
          "--quiet", "--force"]


@pytest.fixture
def parts(tmp_path):
    """Three Parquet files of columns a, b, c (40 rows each) in one directory, and the same rows as CSV files."""
    X = np.random.default_rng(0).normal(size=(120, 3))
    (tmp_path / "lake").mkdir()
    for k in range(3):
        part = X[40 * k:40 * (k + 1)]
        pq.write_table(pa.table({c: part[:, j] for j, c in enumerate("abc")}), tmp_path / "lake" / f"part-{k}.parquet")
        np.savetxt(tmp_path / f"part-{k}.csv", part, delimiter=",", header="a,b,c", comments="")
    return tmp_path, sorted(str(p) for p in (tmp_path / "lake").glob("*.parquet"))


def test_a_list_of_files_is_the_directory_and_the_quoted_glob(run, parts):
    tmp, files = parts
    inputs = {"list": files, "directory": [tmp / "lake"], "glob": [str(tmp / "lake" / "*.parquet")]}
    for name, given in inputs.items():
        assert run("covariance", *given, *PUBLIC, "--out", tmp / name).returncode == 0
    released = [np.load(tmp / name / "covariance.npy") for name in inputs]
    assert np.array_equal(released[0], released[1]) and np.array_equal(released[0], released[2])
    assert report(tmp / "list")["input"]["path"] == files  # every file, as typed


def test_a_list_of_csv_files_is_their_glob(run, parts):
    """(A set of CSV files crashed in the reader, glob or list alike, before this was tested.)"""
    tmp, _ = parts
    csvs = sorted(str(p) for p in tmp.glob("part-*.csv"))
    assert run("covariance", *csvs, *PUBLIC, "--out", tmp / "list").returncode == 0
    assert run("covariance", str(tmp / "part-*.csv"), *PUBLIC, "--out", tmp / "glob").returncode == 0
    assert np.array_equal(np.load(tmp / "list" / "covariance.npy"), np.load(tmp / "glob" / "covariance.npy"))


def test_a_bad_list_is_refused_in_one_line_naming_the_file(run, parts):
    tmp, files = parts
    pq.write_table(pa.table({"a": [1.0], "z": [2.0], "c": [3.0]}), tmp / "other.parquet")
    res = run("covariance", *files, tmp / "other.parquet", *PUBLIC, "--out", tmp / "o")
    assert_one_line_error(res, "other.parquet", "other columns")
    assert_one_line_error(run("covariance", files[0], tmp / "part-1.csv", *PUBLIC, "--out", tmp / "o"),
                          "mixes file formats")
    assert_one_line_error(run("covariance", files[0], tmp / "gone.parquet", *PUBLIC, "--out", tmp / "o"),
                          "gone.parquet")
    assert_one_line_error(run("covariance", files[0], tmp / "lake", *PUBLIC, "--out", tmp / "o"), "is a directory")
    # the same file twice (a glob and one of its files) would count its rows twice: refused, not read twice
    assert_one_line_error(run("covariance", *files, files[1], *PUBLIC, "--out", tmp / "o"), "listed twice")
    assert not (tmp / "o").exists()
