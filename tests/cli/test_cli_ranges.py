"""--ranges / --ranges-file on the moment commands, and tables as pandas writes them (index, text columns)."""

import warnings

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


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    """A table with a text column (two of its three levels declared) and a column with missing values, as a
    CSV written by pandas with its index and as the DataFrame itself."""
    g = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"age": g.uniform(18, 90, n), "firm": g.choice(["GM", "IBM", "Ford"], n),
                       "income": np.where(g.random(n) < 0.1, np.nan, g.gamma(2, 2, n))})
    df["y"] = 0.1 * df.age + 2 * (df.firm == "GM") + df.income.fillna(0) + g.normal(size=n)
    path = tmp_path_factory.mktemp("typed") / "t.csv"
    df.to_csv(path)
    return path, df


def _estimator(name, **kw):
    from dpmoments import estimators

    return getattr(estimators, name)(rng=0, **kw)


_R, _PRIV = {"age": (0, 120), "income": (0, 40)}, dict(epsilon=1, delta=1e-6)
_BOTH = [("covariance", lambda t: _estimator("PrivateCovariance", ranges=_R, **_PRIV).fit(t).covariance_,
          ["covariance"], "covariance.npy"),
         ("glasso", lambda t: _estimator("PrivateGraphicalLasso", ranges=_R, alpha=0.5, **_PRIV).fit(t).precision_,
          ["precision", "--alpha", "0.5"], "precision.npy"),
         ("ridge", lambda t: _estimator("PrivateRidgePrecision", ranges=_R, alpha=0.5, **_PRIV).fit(t).precision_,
          ["precision", "--method", "ridge", "--alpha", "0.5"], "precision.npy"),
         ("pca", lambda t: _estimator("PrivatePCA", ranges=_R, n_components=2, **_PRIV).fit(t).components_,
          ["pca", "--n-components", "2"], "components.npy"),
         ("tensor", lambda t: _estimator("PrivateTensorDecomposition", model="mog", n_components=2, sigma2=1.0,
                                         ranges=_R, **_PRIV).fit(t).weights_,
          ["tensor", "--n-components", "2", "--sigma2", "1"], "weights.csv"),
         ("regress", lambda t: (lambda e: np.r_[e.coef_, e.intercept_])(_estimator(
             "PrivateIRLS", ranges={**_R, "y": (-10, 60)}, **_PRIV).fit(t)), ["regress"], "coefficients.npy"),
         ("select", lambda t: np.array(_estimator("PrivateModelSelection", ranges={**_R, "y": (-10, 60)}, epsilon=1,
                                                  max_size=2).fit(t).selected_), ["select", "--max-size", "2"],
          "selected.csv")]


@pytest.mark.parametrize("name, fit, command, output", _BOTH, ids=[c[0] for c in _BOTH])
def test_a_typed_table_is_one_release_through_the_library_and_the_command_line(run, typed, tmp_path, name, fit,
                                                                                 command, output):
    """Every estimator given ``open_table(file)``, ``open_table(DataFrame)`` (declared categories, an imputed
    column) and the command line (``--bounds``, the issue's spelling of ``--ranges``) gets the same 0:1 ranges
    for the one-hot and ``:missing`` columns, without their being stated, and the same seeded result."""
    from dpmoments.data import open_table

    path, df = typed
    target = "y" if name in ("regress", "select") else None
    opened = dict(categories={"firm": ["GM", "IBM"]}, impute={"income": 0.0}, target=target,
                  exclude=None if target else ["y"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_file, from_frame = fit(open_table(path, **opened)), fit(open_table(df, **opened))
    np.testing.assert_array_equal(from_file, from_frame)
    spans = "age=0:120,income=0:40" + (",y=-10:60" if target else "")
    declared = ["--bounds", spans, "--categories", "firm=GM,IBM"]
    if name == "covariance":  # the ranges and the categories from a JSON file, --ranges-file spelt --bounds-file
        (tmp_path / "r.json").write_text('{"age": [0, 120], "income": [0, 40], "categories": {"firm": ["GM", "IBM"]}}')
        declared = ["--bounds-file", tmp_path / "r.json"]
    res = run(*command[:1], path, *command[1:], *(["--target", "y"] if target else ["--exclude", "y"]),
              "--epsilon", "1", *([] if name == "select" else ["--delta", "1e-6"]), "--seed", "0", "--no-figures",
              *declared, "--impute", "income=0", "--out", tmp_path / "o")
    assert res.returncode == 0, res.stderr
    assert "pandas index" in res.stderr and "column(s) firm" not in res.stderr  # declared: encoded, not left out
    out = tmp_path / "o" / output
    cli = np.load(out) if output.endswith(".npy") else pd.read_csv(out).iloc[:, 1].to_numpy()
    np.testing.assert_array_equal(from_file, cli)
    indicators = {"firm=GM": [0.0, 1.0], "firm=IBM": [0.0, 1.0], "income:missing": [0.0, 1.0]}
    given = report(tmp_path / "o").get("ranges", {}).get("given") or report(tmp_path / "o")["privacy"].get(
        "ranges", {}).get("features") if name != "select" else indicators
    assert indicators.items() <= given.items()


@pytest.mark.parametrize("release", ["release_second_moment", "release_public_second_moment"])
def test_a_release_function_adds_a_typed_tables_indicator_ranges(typed, release):
    """The release functions given an opened table add its 0/1 columns' ranges: the release of the completed
    array with those ranges stated, byte for byte; another range for one of them is refused."""
    from dpmoments import release_second_moment
    from dpmoments.data import open_table
    from dpmoments.moments.releases import release_public_second_moment

    f = {"release_second_moment": release_second_moment,
         "release_public_second_moment": release_public_second_moment}[release]
    kw = {} if f is release_second_moment else dict(row_norm=None, center=None)
    table = open_table(typed[1], categories={"firm": ["GM", "IBM"]}, impute={"income": 0.0}, exclude=["y"])
    completed = pd.DataFrame(np.vstack(list(table)), columns=table.feature_names)
    stated = {**_R, "firm=GM": (0, 1), "firm=IBM": (0, 1), "income:missing": (0, 1)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = f(table, ranges=_R, rng=0, **_PRIV, **kw)
        theirs = f(completed, ranges=stated, rng=0, **_PRIV, **kw)
    np.testing.assert_array_equal(ours.second_moment, theirs.second_moment)
    with pytest.raises(ValueError, match="'firm=GM' the range 0:2; it is a 0/1 column the table makes"):
        f(table, ranges={**_R, "firm=GM": (0, 2)}, rng=0, **_PRIV, **kw)
    with pytest.raises(ValueError, match="takes a table opened without target="):  # its rows are (X, y) pairs
        _estimator("PrivateCovariance", **_PRIV).fit(open_table(typed[1], target="y", exclude=["firm"],
                                                                impute={"income": 0.0}))


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


def test_missing_values_are_refused_with_a_pointer_to_impute(run, tmp_path):
    """(The completed table, --impute with its indicator's range, is the typed-table test's above.)"""
    pd.DataFrame({"age": [20.0, 30.0, 40.0], "income": [1.0, np.nan, 2.0]}).to_csv(tmp_path / "m.csv", index=False)
    res = run("covariance", tmp_path / "m.csv", "--epsilon", "1", "--delta", "1e-6", "--out", tmp_path / "o")
    assert_one_line_error(res, "missing or non-finite value in column 'income'", "--impute COL=VALUE")


@pytest.mark.parametrize("command, args, words", [
    ("select", ["--bounds", "2,age=0:120"], ["argument --bounds: '2,age=0:120' mixes a number with COL=LOW:HIGH"]),
    ("select", ["--bounds", "2", "--bounds", "3"], ["--bounds gives the entrywise bound", "twice"]),
    ("select", ["--bounds", "age=0:120", "--ranges", "age=0:120"], ["--ranges and --bounds are one option"]),
    ("covariance", ["--bounds-file", "r.csv", "--ranges-file", "r.csv"], ["--ranges-file and --bounds-file"]),
    ("covariance", ["--bounds", "age=0-120"], ["--bounds takes COLUMN=LOWER:UPPER"]),
])
def test_bounds_is_ranges_spelt_otherwise_and_select_tells_its_two_apart(run, tmp_path, command, args, words):
    target = ["--target", "y"] if command == "select" else []
    res = run(command, tmp_path / "none.csv", *target, "--epsilon", "1", *args, "--out", tmp_path / "o")
    assert_one_line_error(res, *words)