"""--ranges / --ranges-file on the moment commands, and tables as pandas writes them (index, text columns)."""

import numpy as np
import pytest

from .helpers import assert_one_line_error, report

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """An index, a text column, an indicator and two measurements: written by pandas with its index."""
    g = np.random.default_rng(0)
    n = 3000
    age = np.clip(g.normal(45, 12, n), 18, 90)
    df = pd.DataFrame({"site": ["north", "south", "east"] * (n // 3), "age": age,
                       "smoker": (g.random(n) < 0.2).astype(int), "score": np.clip(g.normal(5, 1.5, n), 0, 10)})
    path = tmp_path_factory.mktemp("ranges") / "t.csv"
    df.to_csv(path)
    return path


@pytest.mark.parametrize("command, extra", [("covariance", []), ("precision", ["--edges", "2"]),
                                            ("pca", ["--n-components", "1"])])
def test_ranges_on_every_moment_command(run, table, tmp_path, command, extra):
    res = run(command, table, "--epsilon", "1", "--delta", "1e-6", "--seed", "0", "--no-figures",
              "--ranges", "age=0:120,smoker=0:1,score=0:10", "--out", tmp_path / "o", *extra)
    assert res.returncode == 0, res.stderr
    assert "note: file" in res.stderr and "pandas index" in res.stderr and "column(s) site" in res.stderr
    assert "ranges: public ranges for age, smoker, score (each value clipped to its range)" in res.stdout
    block = report(tmp_path / "o")["ranges"]
    assert block["given"] == {"age": [0.0, 120.0], "smoker": [0.0, 1.0], "score": [0.0, 10.0]}


def test_ranges_file_and_a_mixed_table(run, table, tmp_path):
    (tmp_path / "r.csv").write_text("column,lower,upper\nsmoker,0,1\n")
    res = run("covariance", table, "--epsilon", "2", "--delta", "1e-6", "--seed", "0", "--no-figures",
              "--ranges-file", tmp_path / "r.csv", "--out", tmp_path / "o")
    assert res.returncode == 0, res.stderr
    assert "for smoker (each value clipped to its range); private location and scale for age, score" in res.stdout
    C = np.load(tmp_path / "o" / "covariance.npy")
    assert abs(C[1, 1] / 0.16 - 1) < 0.2  # smoker's variance p (1 - p), p = 0.2


@pytest.mark.parametrize("args, words", [
    (["--ranges", "age=0-120"], ["--ranges takes COLUMN=LOWER:UPPER"]),
    (["--ranges", "agee=0:120"], ["'agee'", "not a feature column"]),
    (["--ranges", "age=5:5"], ["lower < upper"]),
    (["--ranges", "age=0:120", "--ranges-file", "RFILE"], ["both give column 'age'"]),
    (["--ranges-file", "missing.csv"], ["could not read the ranges file"]),
    (["--exclude", "nope"], ["no column named 'nope'"]),
])
def test_bad_ranges_are_one_line_errors(run, tmp_path, args, words):
    table = tmp_path / "clean.csv"
    pd.DataFrame({"age": [30.0, 40.0, 50.0], "smoker": [0, 1, 0]}).to_csv(table, index=False)
    (tmp_path / "r.json").write_text('{"age": [0, 100]}')
    args = [str(tmp_path / "r.json") if a == "RFILE" else a for a in args]
    res = run("covariance", table, "--epsilon", "1", "--delta", "1e-6", "--out", tmp_path / "o", *args)
    assert_one_line_error(res, *words)


def test_declared_categories_are_one_hot_columns_with_range_0_1(run, table, tmp_path):
    (tmp_path / "r.json").write_text('{"ranges": {"age": [0, 120]}, "categories": {"site": ["north", "south"]}}')
    res = run("covariance", table, "--epsilon", "2", "--delta", "1e-6", "--seed", "0", "--no-figures",
              "--ranges-file", tmp_path / "r.json", "--out", tmp_path / "o")
    assert res.returncode == 0, res.stderr
    assert "column(s) site" not in res.stderr  # declared: encoded, not left out
    assert "public ranges for site=north, site=south, age (each value clipped to its range)" in res.stdout
    C = np.load(tmp_path / "o" / "covariance.npy")
    assert C.shape == (5, 5)  # two indicators (east is neither), age, smoker, score
    assert abs(C[0, 0] / (2 / 9) - 1) < 0.3  # an indicator of a third of the rows: variance 2/9


@pytest.mark.parametrize("args, words", [
    (["--categories", "site"], ["--categories takes COLUMN=LEVEL,LEVEL"]),
    (["--categories", "site=a,a"], ["distinct, non-empty levels"]),
    (["--categories", "site=a", "--categories", "site=b"], ["gives column 'site' twice"]),
])
def test_bad_categories_are_one_line_errors(run, tmp_path, args, words):
    table = tmp_path / "clean.csv"
    pd.DataFrame({"age": [30.0, 40.0, 50.0], "site": ["a", "b", "a"]}).to_csv(table, index=False)
    res = run("covariance", table, "--epsilon", "1", "--delta", "1e-6", "--out", tmp_path / "o", *args)
    assert_one_line_error(res, *words)


def test_impute_completes_missing_values_with_an_indicator(run, tmp_path):
    g = np.random.default_rng(0)
    n = 4000
    df = pd.DataFrame({"age": g.uniform(20, 80, n), "income": g.lognormal(10, 0.5, n)})
    df.loc[g.random(n) < 0.1, "income"] = np.nan
    df.to_csv(tmp_path / "m.csv", index=False)
    res = run("covariance", tmp_path / "m.csv", "--epsilon", "1", "--delta", "1e-6", "--out", tmp_path / "o")
    assert_one_line_error(res, "missing or non-finite value in column 'income'", "--impute COL=VALUE")
    res = run("covariance", tmp_path / "m.csv", "--epsilon", "2", "--delta", "1e-6", "--seed", "0", "--no-figures",
              "--impute", "income=0", "--ranges", "age=0:120", "--out", tmp_path / "o")
    assert res.returncode == 0, res.stderr
    assert "public ranges for age, income:missing" in res.stdout
    assert report(tmp_path / "o")["input"]["columns"] == ["age", "income", "income:missing"]


def test_select_bounds_given_as_ranges_points_to_ranges(run, tmp_path):
    res = run("select", tmp_path / "none.csv", "--target", "y", "--epsilon", "1", "--bounds", "age=0:120",
              "--out", tmp_path / "o")
    assert_one_line_error(res, "got 'age=0:120'", "per-column ranges COL=LOW:HIGH are --ranges")
