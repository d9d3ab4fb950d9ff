"""Bounds, centres and scales chosen privately on the command line (--row-norm auto, --center private, ...)."""

import numpy as np
import pytest

from .helpers import assert_one_line_error, report

GAUSS = ["--epsilon", "1", "--delta", "1e-6", "--seed", "0", "--no-figures"]
UNITS = np.array([1.0, 10.0, 1000.0])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("bounds")
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(20_000, 3))
    Z[:, 1] += 0.7 * Z[:, 0]
    X = Z * UNITS + [5.0, -40.0, 3000.0]  # columns in different units, far from the origin
    np.save(d / "mixed.npy", X)
    y = X[:, 0] - 0.1 * X[:, 1] + rng.normal(size=len(X))
    np.save(d / "xy.npy", np.c_[X[:, :2], y])
    return d, X


def _parts(rep):
    return {p["label"]: p for p in rep["private_choices"]["parts"]}


def test_covariance_needs_no_bound_and_shows_every_share(run, data, tmp_path):
    d, X = data
    out = tmp_path / "cov"
    res = run("covariance", d / "mixed.npy", *GAUSS, "--out", out)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("covariance about a private mean of 20000 rows")
    # the second step finds the centre settled (it moves it by under a tenth of its bound): the two steps not
    # taken leave their means' shares to the final mean and their draws' to the second moment (docs/bounds.md)
    for words in ("private choices", "location: share 0.0125", "location mean: share 0.01", "mean: share 0.18",
                  "location refinement 1 mean: share 0.01", "settled True", "row_norm: share 0.09",
                  "clipping excess: share 0.1", "second moment: share 0.575", "composed: (1, 1e-06)-DP",
                  "clipped rows (noisy):"):
        assert words in res.stdout, words
    rep = report(out)
    parts = _parts(rep)
    steps = ["location refinement 1", "location refinement 1 mean"]
    assert list(parts) == ["location", "location mean", *steps, "row_norm", "mean", "clipping excess", "clipped rows",
                           "second moment"]
    assert sum(p["share"] for p in parts.values()) == pytest.approx(1.0)
    assert rep["private_choices"]["composed_guarantee"] == rep["privacy"]["guarantee"] == "(1, 1e-06)-DP"
    assert rep["privacy"]["row_norm"] == parts["row_norm"]["released"]["row_norm"]  # the drawn bound, a private output
    assert rep["private_choices"]["clipped_fraction"]["value"] < 0.1
    assert rep["analysis"]["statistic"] == "covariance about a private mean"
    assert rep["private_choices"]["bound_budget"]["search"] == {"low": 1e-6, "high": 1e8, "steps": 1000}
    C, truth = np.load(out / "covariance.npy"), np.cov(X, rowvar=False, bias=True)
    assert np.linalg.norm(C - truth) / np.linalg.norm(truth) < 0.2


def test_uncentred_is_named_the_second_moment(run, data, tmp_path):
    d, _ = data
    out = tmp_path / "raw"
    res = run("covariance", d / "mixed.npy", *GAUSS, "--uncentred", "--row-norm", "5000", "--out", out)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("uncentred second moment of") and "private choices" not in res.stdout
    rep = report(out)
    assert rep["analysis"]["statistic"] == "uncentred second moment" and "private_choices" not in rep


def test_public_centre_with_auto_bound(run, data, tmp_path):
    d, _ = data
    res = run("covariance", d / "mixed.npy", *GAUSS, "--center", "5,-40,3000", "--bound-share", "0.2", "--out",
              tmp_path / "c")
    assert res.returncode == 0, res.stderr
    rep = report(tmp_path / "c")
    assert rep["analysis"]["statistic"] == "covariance about a public centre"
    assert list(_parts(rep)) == ["row_norm", "clipping excess", "clipped rows", "second moment"]
    assert _parts(rep)["second moment"]["share"] == pytest.approx(0.7)


def test_private_scales_give_every_column_its_variance(run, data, tmp_path):
    d, X = data
    out = tmp_path / "scaled"
    res = run("covariance", d / "mixed.npy", *GAUSS[:-1], "--scale", "private", "--out", out, "--epsilon-grid", "0.5,1")
    assert res.returncode == 0, res.stderr
    assert "column scales: share" in res.stdout
    C = np.load(out / "covariance.npy")
    ratio = np.diag(C) / X.var(axis=0)
    assert np.all(np.abs(ratio - 1) < 0.3), ratio  # each column, not only the largest
    assert (out / "privacy_utility.png").is_file()


def test_too_many_clipped_rows_are_warned_about(run, data, tmp_path):
    d, _ = data
    res = run("covariance", d / "mixed.npy", *GAUSS, "--center", "5,-40,3000", "--search-range", "1e-6,1",
              "--out", tmp_path / "w")
    assert res.returncode == 0, res.stderr
    assert "MORE THAN 10%" in res.stdout
    # the bound fell at the end of the narrow range: the advice is the CLI's --search-range, not the API's
    assert "rows were clipped" in res.stderr and "--search-range" in res.stderr and "BoundBudget" not in res.stderr
    assert report(tmp_path / "w")["private_choices"]["clipped_fraction"]["warned"] is True


@pytest.mark.parametrize("command, extra", [
    ("precision", ["--center", "private", "--scale", "private", "--edges", "2"]),
    ("pca", ["--center", "private", "--n-components", "1"]),
])
def test_moment_commands_choose_privately(run, data, tmp_path, command, extra):
    d, _ = data
    out = tmp_path / command
    res = run(command, d / "mixed.npy", *GAUSS, "--row-norm", "auto", *extra, "--out", out)
    assert res.returncode == 0, res.stderr
    assert "private choices" in res.stdout and "composed: (1, 1e-06)-DP" in res.stdout
    assert report(out)["private_choices"]["composed_guarantee"] == "(1, 1e-06)-DP"


def test_regress_auto_bounds(run, data, tmp_path):
    d, _ = data
    out = tmp_path / "fit"
    res = run("regress", d / "xy.npy", "--target", "x2", "--row-norm", "auto", "--response-bound", "auto",
              "--n-iter", "3", "--w-max", "10", *GAUSS, "--out", out)
    assert res.returncode == 0, res.stderr
    rep = report(out)
    assert list(_parts(rep)) == ["row_norm", "response_bound", "sampling (error budget)", "IRLS iterations"]
    assert rep["privacy"]["row_norm"] == _parts(rep)["row_norm"]["released"]["row_norm"]
    assert "response_bound: share 0.05" in res.stdout


def test_select_auto_bounds(run, data, tmp_path):
    d, _ = data
    out = tmp_path / "sel"
    res = run("select", d / "xy.npy", "--target", "x2", "--bounds", "auto", "--response-bound", "auto", "--R", "2",
              "--epsilon", "1", "--bound-share", "0.2", "--seed", "0", "--no-figures", "--out", out)
    assert res.returncode == 0, res.stderr
    rep = report(out)
    assert [p["share"] for p in rep["private_choices"]["parts"]] == pytest.approx([0.1, 0.1, 0.8])
    assert rep["private_choices"]["composed_guarantee"] == "1-DP"


def test_tensor_auto_bound_and_no_private_centre(run, data, tmp_path):
    d, _ = data
    common = ["tensor", d / "mixed.npy", "--sigma2", "1", "--n-components", "1", *GAUSS, "--row-norm", "auto"]
    res = run(*common, "--center", "5,-40,3000", "--out", tmp_path / "t")
    assert res.returncode == 0, res.stderr
    assert list(_parts(report(tmp_path / "t"))) == ["row_norm", "moments"]
    assert_one_line_error(run(*common, "--center", "private", "--out", tmp_path / "u"), "--center private")


def test_small_data_are_refused_with_the_options_that_help(run, tmp_path):
    np.save(tmp_path / "small.npy", np.random.default_rng(0).normal(size=(100, 3)))  # 150: one draw runs them
    res = run("covariance", tmp_path / "small.npy", *GAUSS, "--out", tmp_path / "o")
    assert_one_line_error(res, "too few rows", "--location-share", "--uncentred")
    assert not (tmp_path / "o").exists()


def test_help_says_how_to_choose_a_bound(run):
    text = " ".join(run("covariance", "--help").stdout.split())
    for words in ("How to choose a bound", "--bound-share", "default 0.1", "--search-range", "--uncentred",
                  "(default auto)"):
        assert words in text, words
    assert "R|auto" in run("precision", "--help").stdout


@pytest.mark.parametrize("mechanism, delta", [("gaussian", 1e-6), ("laplace", None)])
def test_the_epsilon_grid_prices_only_the_second_moments_share(data, mechanism, delta):
    from dpmoments.cli._release import noise_sd
    from dpmoments.estimators import PrivateCovariance

    est = PrivateCovariance(epsilon=1.0, delta=delta, mechanism=mechanism, scale="private", rng=0).fit(data[1])
    # At the run's own epsilon the curve gives the noise the release carries (it priced the whole budget before).
    sd = est.release_.noise_scale * (np.sqrt(2) if mechanism == "laplace" else 1)  # Laplace: scale b, sd sqrt(2) b
    assert noise_sd(est.release_, 1.0, delta) == pytest.approx(sd, rel=1e-6)
