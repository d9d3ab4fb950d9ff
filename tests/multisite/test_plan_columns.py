"""A plan that names its columns: every deployed site selects them by name, so none joins with them mixed up.

Without names a site could check only their number: a file whose columns were in another order joined and
its columns were summed with the other sites' wrong ones (hunt5 #5).
"""

import warnings

import numpy as np
import pytest

from dpmoments.exceptions import NotPrivateWarning
from dpmoments.multisite import InProcessTransport, Plan, deal_files, run_plan

from ..cli.helpers import assert_one_line_error, in_process

SIZES = {"north": 40, "south": 60}


def _plan(**kw):
    kw = {"n_features": 3, "row_norm": 100.0, "epsilon": 1.0, "delta": 1e-5, **kw}
    return Plan.build("cape", list(SIZES), list(SIZES.values()), **kw)


def test_the_names_travel_in_the_plan_and_a_plan_without_them_keeps_its_form():
    named = _plan(columns=["a", "b", "c"])
    again = Plan.from_json(named.to_json())
    assert again.columns == ("a", "b", "c") and again.response_column is None and again.digest == named.digest
    assert "columns" not in _plan().to_dict()  # plans dealt before keep their digest


@pytest.mark.parametrize("kw, words", [
    ({"columns": ["a", "b"]}, "names 2 column(s); the plan's sites give 3"),
    ({"columns": ["a", "a", "b"]}, "distinct"),
    ({"columns": ["a", "b", ""]}, "non-empty"),
    ({"columns": ["a", "b", "c"], "response_column": "y"}, "not taken"),
    ({"response_column": "y"}, "needs 'columns'"),
])
def test_the_plan_refuses_names_that_do_not_fit_it(kw, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        _plan(**kw)


def _files(tmp_path, headers):
    rng = np.random.default_rng(1)
    data = {s: rng.normal(size=(n, 3)) for s, n in SIZES.items()}
    for s, X in data.items():
        order = [("a", "b", "c").index(c) if c in "abc" else k for k, c in enumerate(headers[s].split(","))]
        np.savetxt(tmp_path / f"{s}.csv", X[:, order], delimiter=",", header=headers[s], comments="")
    return data


def _site(tmp_path, name, share, *more):
    from dpmoments.cli import build_parser
    from dpmoments.cli.site import _load

    args = build_parser("site").parse_args(["site", "--name", name, "--data", str(tmp_path / f"{name}.csv"),
                                            "--share", str(share), "--state", str(tmp_path / f"st-{name}"), *more])
    return _load(args)[0]


def test_a_site_whose_columns_are_in_another_order_gives_them_in_the_plans_order(tmp_path):
    data = _files(tmp_path, {"north": "c,a,b", "south": "a,b,c"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        plan = _plan(columns=["a", "b", "c"], epsilon=float("inf"))  # no noise: the sums can be compared exactly
    shares = deal_files(plan, tmp_path / "shares", rng=0)
    sites = [_site(tmp_path, s, shares[s]) for s in SIZES]
    result = run_plan(plan, InProcessTransport(sites), rng=0)
    rows = np.vstack(list(data.values()))
    np.testing.assert_allclose(result.releases[0].second_moment, rows.T @ rows / len(rows), rtol=1e-12, atol=1e-14)


def test_a_site_lacking_a_named_column_or_told_other_columns_is_refused_in_one_line(tmp_path, capsys):
    cli = in_process(capsys)  # refused before it serves: no subprocess needed
    _files(tmp_path, {"north": "a,b,d", "south": "a,c,b"})
    shares = deal_files(_plan(columns=["a", "b", "c"]), tmp_path / "shares", rng=0)
    base = ("site", "--share", shares["north"], "--superlink", "127.0.0.1:1", "--insecure")
    res = cli(*base, "--name", "north", "--data", tmp_path / "north.csv", "--state", tmp_path / "st")
    assert_one_line_error(res, "north.csv", "'c'")
    res = cli(*base, "--name", "north", "--data", tmp_path / "south.csv", "--state", tmp_path / "st",
              "--columns", "a,c,b")
    assert_one_line_error(res, "--columns differs from the columns the plan names (a,b,c)")


def test_the_noise_generator_writes_the_names_and_checks_them(tmp_path, capsys):
    cli = in_process(capsys)  # eight runs: in this process (a subprocess each cost 60 s on a loaded machine)
    sites = ",".join(f"{s}={n}" for s, n in SIZES.items())
    common = ("noise-generator", "--uncentred", "--sites", sites, "--epsilon", 1, "--delta", "1e-5", "--row-norm", 1)
    res = cli(*common, "--columns", "a,b,c", "--out", tmp_path / "named")
    assert res.returncode == 0, res.stderr
    assert Plan.from_json((tmp_path / "named" / "plan.json").read_text()).columns == ("a", "b", "c")
    res = cli(*common, "--n-features", 3, "--out", tmp_path / "unnamed")
    assert res.returncode == 0 and "not named, so each site can check only that it gives 3 columns" in res.stdout
    for more, words in [(("--columns", "a,b", "--n-features", 3), "--n-features 3 differs from the 2 names"),
                        (("--columns", "a,1,c"), "not positions"),
                        (("--columns", "a,b,c", "--analysis", "select"), "--target (the response column's name) is "
                                                                        "required"),
                        (("--columns", "a,b,c", "--target", "y"), "is not taken"),
                        (("--target", "y", "--n-features", 3), "give --columns too"),
                        ((), "--n-features (or --columns) is required")]:
        assert_one_line_error(cli(*common, *more, "--out", tmp_path / "x"), words)


def test_the_aggregators_outputs_use_the_plans_names():
    from dpmoments.cli._serverapp import plan_names

    assert plan_names(_plan(columns=["a", "b", "c"])) == ["a", "b", "c"]
    assert plan_names(_plan()) == ["x0", "x1", "x2"]
