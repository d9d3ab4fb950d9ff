"""``--center private`` across sites on the command line: ``simulate`` and ``noise-generator`` (issue 13).

The centre comes from the sites' noisy per-column histograms (location steps) and a noisy mean; the covariance
is as close to the truth as with the true mean given as a public centre, and nothing like the second moment
about the origin. The report lists each share with the composed guarantee. Bad options are one-line errors, exit 2.
"""

import numpy as np
import pytest

from dpmoments.multisite import Plan
from dpmoments.privacy import calibrate_gaussian

from ..cli.helpers import assert_one_line_error, in_process, report

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MEAN = np.array([100.0, 0.0, -5.0])
COV = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 2.0]])


@pytest.fixture
def run(capsys):
    return in_process(capsys)


def _files(tmp_path, n, seed=0):
    rng = np.random.default_rng(seed)
    L = np.linalg.cholesky(COV)
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"site{i}.csv")
        np.savetxt(paths[-1], rng.normal(size=(n, 3)) @ L.T + MEAN, delimiter=",", header="a,b,c", comments="")
    return paths


def _simulate(run, paths, out, *extra):
    return run("simulate", *paths, "--epsilon", 1, "--delta", "1e-6", "--seed", 2, "--out", out, "--no-figures",
               "--row-norm", "auto", *extra)


def test_simulate_private_centre_gives_the_covariance_and_reports_every_share(run, tmp_path):
    paths = _files(tmp_path, 12_000)
    res = _simulate(run, paths, tmp_path / "private", "--center", "private")
    assert res.returncode == 0, res.stderr
    assert "covariance about the private mean" in res.stdout and "composed: (1, 1e-06)-DP" in res.stdout
    rep = report(tmp_path / "private")
    parts = rep["private_choices"]["parts"]
    steps = [f"location (step {k} of 4)" for k in (1, 2, 3, 4)]  # as many as 36,000 rows allow
    assert [p["label"] for p in parts] == steps + ["row_norm", "second moment", "clipping excess", "mean"]
    assert [p["share"] for p in parts] == pytest.approx([0.025] * 4 + [0.1, 0.5, 0.1, 0.2])
    assert rep["private_choices"]["composed_guarantee"] == "(1, 1e-06)-DP" == rep["privacy"]["guarantee"]
    rho = calibrate_gaussian(1.0, 1e-6, 1.0, "zcdp")[1].rho  # a plan that chooses privately composes in zCDP
    for k in (1, 2, 3, 4):  # each site's own noise: the per-site guarantee holds against the aggregator
        sites = rep["protocol"]["parts"][f"location {k}"]["sites"]
        assert all(s["joint_view"]["rho"] == pytest.approx(0.025 * rho, rel=1e-6) for s in sites)
    assert rep["analysis"]["statistic"] == "covariance about the private mean"
    res = _simulate(run, paths, tmp_path / "public", "--center", "100,0,-5")
    assert res.returncode == 0, res.stderr
    res = _simulate(run, paths, tmp_path / "origin", "--uncentred")
    assert res.returncode == 0 and "second moment about the origin" in res.stdout, res.stderr
    res = _simulate(run, paths, tmp_path / "default")  # the private centre, as on one machine
    assert res.returncode == 0 and "covariance about the private mean" in res.stdout, res.stderr
    res = _simulate(run, paths, tmp_path / "pooled", "--protocol", "pooled")  # its like-for-like reference
    assert res.returncode == 0 and "covariance about the private mean" in res.stdout, res.stderr
    assert [p["label"] for p in report(tmp_path / "pooled")["release"]["parts"]][-1] == "second moment"
    names = ("private", "public", "origin", "default", "pooled")
    err = {k: np.linalg.norm(np.load(tmp_path / k / "covariance.npy") - COV) for k in names}
    assert err["private"] <= 2.5 * err["public"] and err["private"] < 0.5 and err["origin"] > 1000
    assert err["default"] < 0.5 and err["pooled"] < 0.5


@pytest.mark.parametrize("extra, words", [
    (("--center", "private", "--analysis", "tensor-mog", "--sigma2", "1", "--n-components", "2"),
     ("--center private", "tensor-mog")),
    (("--center", "private", "--analysis", "pca", "--n-components", "1", "--protocol", "dpdispca"), ("dpdispca",)),
    (("--center-share", "0.2", "--uncentred"), ("--center-share", "applies only")),
    (("--center", "private", "--center-share", "0.5", "--location-share", "0.45"), ("add up to 1",)),
    (("--center", "private", "--location-share", "0"), ("--location-share",)),
    (("--center", "private",), ("too few rows",)),
    (("--center", "private", "--epsilon", "inf"), ("finite",)),
], ids=["tensor", "dpdispca", "share-without-private", "shares-sum", "share-zero", "too-few", "inf"])
def test_simulate_refuses_bad_private_centre_options_in_one_line(run, tmp_path, extra, words):
    paths = _files(tmp_path, 300)
    assert_one_line_error(_simulate(run, paths, tmp_path / "out", *extra), *words)
    assert not (tmp_path / "out").exists()


def test_noise_generator_plans_location_steps(run, tmp_path):
    base = ("noise-generator", "--n-features", 3, "--epsilon", 1, "--delta", "1e-6", "--row-norm", "auto")
    res = run(*base, "--sites", "a=20000,b=20000,c=20000", "--center", "private", "--center-share", "0.25",
              "--seed", 1, "--out", tmp_path / "shares")
    assert res.returncode == 0, res.stderr
    assert "location steps first" in res.stdout and "bound step next" in res.stdout
    plan = Plan.from_json((tmp_path / "shares" / "plan.json").read_text())
    assert (plan.location.share, plan.location.mean, plan.location.steps) == (0.1, 0.25, 4)
    assert plan.steps == [0, 1, 2, 3, 4, 5] and plan.bound_step == 4
    assert_one_line_error(run(*base, "--sites", "a=300,b=300", "--center", "private", "--out", tmp_path / "few"),
                          "too few rows")
    assert_one_line_error(run(*base, "--sites", "a=20000,b=20000", "--center", "private", "--analysis", "select",
                              "--out", tmp_path / "sel"), "--center private", "select")
