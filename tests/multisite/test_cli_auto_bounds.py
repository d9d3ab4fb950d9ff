"""``--row-norm auto`` across sites on the command line: ``simulate`` and ``noise-generator`` (issue 13).

The bound comes from the sites' noisy histograms (no site's raw norms, nothing pooled): it lands near the pooled
0.95-quantile at large n, the covariance error is near the oracle's (the exact quantile, given for free), and the
report lists the bound's share per site with the composed guarantee. Bad options are one-line errors, exit 2.
"""

import numpy as np
import pytest

from dpmoments.multisite import Plan
from dpmoments.privacy import calibrate_gaussian

from ..cli.helpers import assert_one_line_error, in_process, report

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

COV = np.diag([1.0, 4.0, 9.0])


@pytest.fixture
def run(capsys):
    return in_process(capsys)


def _files(tmp_path, n, seed=0):
    rng = np.random.default_rng(seed)
    parts = [rng.normal(size=(n, 3)) * [1.0, 2.0, 3.0] for _ in range(3)]
    paths = []
    for i, X in enumerate(parts):
        paths.append(tmp_path / f"site{i}.csv")
        np.savetxt(paths[-1], X, delimiter=",", header="a,b,c", comments="")
    return paths, parts


def _simulate(run, paths, out, *extra):
    return run("simulate", *paths, "--epsilon", 1, "--delta", "1e-5", "--seed", 2, "--out", out, "--no-figures",
               "--uncentred", *extra)  # the bound alone (the private centre: test_cli_private_center.py)


def test_simulate_auto_bound_near_the_pooled_quantile_and_error_near_the_oracle(run, tmp_path):
    paths, parts = _files(tmp_path, 10_000)
    q95 = float(np.quantile(np.linalg.norm(np.vstack(parts), axis=1), 0.95))
    res = _simulate(run, paths, tmp_path / "auto", "--row-norm", "auto")
    assert res.returncode == 0, res.stderr
    assert "row_norm: share 0.1" in res.stdout and "composed: (1, 1e-05)-DP" in res.stdout
    rep = report(tmp_path / "auto")
    bound = rep["private_choices"]["parts"][0]
    assert bound["label"] == "row_norm" and bound["share"] == 0.1
    q = float(bound["released"]["target"].split("-quantile")[0])  # quantile="auto": the highest the noise can place
    assert 0.95 <= q < 1.0
    qq = float(np.quantile(np.linalg.norm(np.vstack(parts), axis=1), q))
    assert qq * 0.97 <= bound["released"]["row_norm"] <= 1.42 * qq
    assert rep["private_choices"]["composed_guarantee"] == "(1, 1e-05)-DP"
    assert rep["privacy"]["guarantee"] == "(1, 1e-05)-DP"
    per_site = rep["protocol"]["parts"]["bound row_norm"]["sites"]
    assert [s["status"] for s in per_site] == ["ok"] * 3
    rho = calibrate_gaussian(1.0, 1e-5, 1.0, "zcdp")[1].rho  # a plan that chooses privately composes in zCDP
    assert all(s["joint_view"]["rho"] == pytest.approx(0.1 * rho, rel=1e-6) for s in per_site)
    assert rep["protocol"]["budget"]["round 0 (histogram of row_norm)"] == 0.1
    res = _simulate(run, paths, tmp_path / "oracle", "--row-norm", repr(q95))
    assert res.returncode == 0, res.stderr
    errors = [np.linalg.norm(np.load(tmp_path / name / "covariance.npy") - COV) for name in ("auto", "oracle")]
    assert errors[0] <= 1.3 * errors[1]


@pytest.mark.parametrize("extra, words", [
    (("--row-norm", "auto", "--bound-share", "0"), ("--bound-share",)),
    (("--row-norm", "auto", "--bound-share", "1.5"), ("--bound-share",)),
    (("--row-norm", "auto", "--search-range", "5,1"), ("--search-range", "empty")),
    (("--row-norm", "1", "--bound-share", "0.2"), ("--bound-share", "applies only")),
    (("--row-norm", "auto", "--epsilon", "inf"), ("--epsilon", "finite")),
    (("--row-norm", "auto",), ("too few rows",)),
], ids=["share-zero", "share-above-one", "empty-range", "share-without-auto", "epsilon-inf", "too-few"])
def test_simulate_refuses_bad_auto_options_in_one_line(run, tmp_path, extra, words):
    paths, _ = _files(tmp_path, 300)
    assert_one_line_error(_simulate(run, paths, tmp_path / "out", *extra), *words)
    assert not (tmp_path / "out").exists()


def test_simulate_refusal_names_an_epsilon_and_a_share_that_run(run, tmp_path):
    """The command's refusal says, in its own option names, from which --epsilon and at which --bound-share the
    run goes through (hunt4 #13: it named none); both do, and 0.9 of the epsilon is refused."""
    import re

    paths, _ = _files(tmp_path, 3000)
    res = _simulate(run, paths, tmp_path / "few", "--row-norm", "auto")
    assert_one_line_error(res, "too few rows", "runs from --epsilon")
    eps = re.search(r"runs from --epsilon ([0-9.e+-]+)", res.stderr).group(1)
    share = re.search(r"or at this epsilon from --bound-share ([0-9.e+-]+)", res.stderr).group(1)
    for k, extra in enumerate((("--epsilon", eps), ("--bound-share", share))):
        got = _simulate(run, paths, tmp_path / f"runs{k}", "--row-norm", "auto", *extra)
        assert got.returncode == 0, got.stderr
    assert_one_line_error(_simulate(run, paths, tmp_path / "below", "--row-norm", "auto", "--epsilon",
                                    repr(0.9 * float(eps))), "too few rows")


def test_noise_generator_plans_a_bound_step(run, tmp_path):
    base = ("noise-generator", "--uncentred", "--n-features", 3, "--epsilon", 1, "--delta", "1e-5", "--row-norm",
            "auto")
    res = run(*base, "--sites", "a=20000,b=20000,c=20000", "--bound-share", "0.2", "--search-range", "1e-3,1e3",
              "--seed", 1, "--out", tmp_path / "shares")
    assert res.returncode == 0, res.stderr
    assert "bound step first: row_norm" in res.stdout
    plan = Plan.from_json((tmp_path / "shares" / "plan.json").read_text())
    assert plan.auto.share == 0.2 and (plan.auto.low, plan.auto.high) == (1e-3, 1e3) and plan.steps == [0, 1]
    assert_one_line_error(run(*base, "--sites", "a=200,b=200", "--out", tmp_path / "few"), "too few rows")
    assert_one_line_error(run(*base[:-1], "1", "--sites", "a=200,b=200", "--bound-share", "0.2", "--out",
                              tmp_path / "x"), "--bound-share", "applies only")
