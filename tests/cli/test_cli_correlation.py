"""``dpmoments correlation`` and ``--analysis correlation`` across sites: files, report, console and refusals."""

import numpy as np
import pytest

from .helpers import assert_one_line_error, in_process, report

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def run(capsys):
    return in_process(capsys)


def _csv(path, n=6000, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.multivariate_normal([0, 0, 0], [[1, 0.7, 0], [0.7, 1, -0.3], [0, -0.3, 1]], size=n)
    np.savetxt(path, Z * [2.0, 50.0, 0.5] + [10, 100, 0], delimiter=",", header="age,income,score", comments="")
    return path


def test_correlation_writes_every_pair_with_its_interval(run, tmp_path):
    data, out = _csv(tmp_path / "d.csv"), tmp_path / "cor"
    res = run("correlation", data, "--epsilon", 2, "--delta", "1e-6", "--scale", "private", "--seed", 0,
              "--out", out, "--no-figures")
    assert res.returncode == 0, res.stderr
    for name in ("correlation", "correlation_se", "correlation_lower", "correlation_upper", "covariance"):
        assert (out / f"{name}.npy").is_file() and (out / f"{name}.csv").is_file(), name
    r, lo, hi = (np.load(out / f"{n}.npy") for n in ("correlation", "correlation_lower", "correlation_upper"))
    assert np.all((lo <= r + 1e-12) & (r <= hi + 1e-12)) and np.all((-1 <= lo) & (hi <= 1))
    assert r[0, 1] == pytest.approx(0.7, abs=0.1)
    rep = report(out)
    assert rep["analysis"]["estimator"] == "PrivateCorrelation" and rep["analysis"]["estimate"] == "correlation.npy"
    assert "sampling" in rep["analysis"]["uncertainty"]["covers"]
    assert "age x income" in res.stdout and "largest correlations" in res.stdout


def test_correlation_has_no_uncentred_option(run, tmp_path):
    res = run("correlation", _csv(tmp_path / "d.csv"), "--epsilon", 1, "--delta", "1e-6", "--uncentred",
              "--out", tmp_path / "o")
    assert res.returncode == 2 and "--uncentred" in res.stderr


def test_correlation_across_sites_in_one_process(run, tmp_path):
    files = [_csv(tmp_path / f"s{i}.csv", n=4000, seed=i) for i in range(3)]
    out = tmp_path / "sim"
    res = run("simulate", *files, "--analysis", "correlation", "--protocol", "cape", "--epsilon", 2, "--delta",
              "1e-6", "--row-norm", 200, "--center", "private", "--seed", 1, "--out", out, "--no-figures")
    assert res.returncode == 0, res.stderr
    r = np.load(out / "correlation.npy")
    assert r.shape == (3, 3) and report(out)["analysis"]["estimator"] == "PrivateCorrelation"


def test_correlation_across_sites_without_a_centre_is_refused_naming_the_option(run, tmp_path):
    files = [_csv(tmp_path / f"s{i}.csv", n=500, seed=i) for i in range(2)]
    res = run("simulate", *files, "--analysis", "correlation", "--protocol", "cape", "--epsilon", 2, "--delta",
              "1e-6", "--row-norm", 200, "--uncentred", "--out", tmp_path / "sim")
    assert_one_line_error(res, "--analysis correlation", "--uncentred")
