"""The command line's intervals count the error budget (issue 25): randhie's mdvis, --intervals-for."""

import numpy as np
import pytest

from .helpers import report

SEEDED = ["--epsilon", "1", "--delta", "1e-6", "--seed", "0", "--no-figures"]


@pytest.fixture(scope="module")
def randhie(tmp_path_factory):
    sm = pytest.importorskip("statsmodels.api")
    path = tmp_path_factory.mktemp("randhie") / "randhie.csv"
    sm.datasets.randhie.load_pandas().data.to_csv(path, index=False)
    return path


def test_covariance_interval_holds_the_heavy_tailed_variance_or_withholds_it_and_says_why(run, randhie, tmp_path):
    """0.4% of rows clipped, a quarter of mdvis's variance lost: [15.3, 16.2] had missed the full-data 20.29.

    The loss up to twice the bound is released and counted; rows beyond it are hidden in their count's noise
    (sd 45 rows at epsilon 1) and lose an unbounded share of mdvis's variance: withheld, 'biased' on its line."""
    out = tmp_path / "cov"
    res = run("covariance", randhie, *SEEDED, "--out", out)
    assert res.returncode == 0, res.stderr
    line = next(r for r in res.stdout.splitlines() if r.strip().startswith("mdvis "))
    lo = np.load(out / "covariance_lower.npy")[0, 0]
    hi = np.load(out / "covariance_upper.npy")[0, 0]
    if "biased" in line:  # its far rows not ruled out: withheld, and the warning says why
        assert np.isnan([lo, hi]).all() and "not ruled out" in res.stderr
    else:  # its loss counted up to twice the bound
        assert "clipped" in line and lo <= 20.29 <= hi
    u = report(out)["analysis"]["uncertainty"]
    assert u["error_budget"]["target"] == "population" and "population" in u["covers"]
    # the loss is noted on mdvis's line ('clipped' or 'biased' above); the check fires where it surely exceeds the
    # variance's half-width (at epsilon 1 its lower end at the check's level is within it: no warning needed)
    codes = [d["code"] for d in report(out)["analysis"]["diagnostics"]]
    assert "clipping-bias" in codes or ("clipped" in line and lo <= 20.29 <= hi)
    assert "for the population covariance" in res.stdout


def test_intervals_for_sample_drops_sampling(run, randhie, tmp_path):
    res = run("covariance", randhie, *SEEDED, "--intervals-for", "sample", "--out", tmp_path / "s")
    assert res.returncode == 0, res.stderr
    u = report(tmp_path / "s")["analysis"]["uncertainty"]
    assert u["error_budget"]["target"] == "sample" and "for the full-data covariance" in res.stdout
    bad = run("covariance", randhie, *SEEDED, "--intervals-for", "rows", "--out", tmp_path / "b")
    assert bad.returncode == 2 and "--intervals-for" in bad.stderr
