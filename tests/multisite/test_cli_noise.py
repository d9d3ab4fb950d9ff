"""The multi-site commands follow the single-site noise rule (principle 4): every number with its noise.

``dpmoments simulate`` (and ``aggregate``, through the same ``fit_analysis``) used to write a bare
covariance, a graph and a mixture with no standard error, no signal-to-noise and no failed check
in the report; at epsilon 0.01 the console printed nothing but the guarantee beside pure noise.
"""

import json

import numpy as np
import pytest

from ..cli.helpers import in_process


@pytest.fixture
def run(capsys):
    return in_process(capsys)


@pytest.fixture
def sites(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for name, n in (("a", 400), ("b", 500)):
        X = rng.normal(size=(n, 3))
        y = X[:, 0] + 0.1 * rng.normal(size=n)
        np.savetxt(tmp_path / f"{name}.csv", np.c_[X, y], delimiter=",", header="p,q,r,y", comments="")
        paths.append(tmp_path / f"{name}.csv")
    return paths


def _simulate(run, sites, out, *extra, epsilon=0.01):
    res = run("simulate", *sites, "--epsilon", epsilon, "--delta", "1e-6", "--row-norm", 3, "--out", out,
              "--no-figures", "--seed", 0, *extra)
    assert res.returncode == 0, res.stderr
    return res, json.loads((out / "privacy_report.json").read_text())["analysis"]


def test_covariance_across_sites_says_it_is_noise(run, sites, tmp_path):
    res, analysis = _simulate(run, sites, tmp_path / "o", "--columns", "p,q,r", "--center", "0")
    assert analysis["noise_dominates"] and analysis["signal_to_noise"] is not None
    assert {d["code"] for d in analysis["diagnostics"]} & {"noise-dominates", "variance-below-noise"}
    assert analysis["standard_errors"] == "covariance_se.npy" and (tmp_path / "o" / "covariance_se.npy").exists()
    assert "NOISE [" in res.stdout and "se" in res.stdout and "90% interval" in res.stdout


def test_a_graph_of_noise_is_withheld_and_not_drawn_across_sites(run, sites, tmp_path):
    out = tmp_path / "o"
    res = run("simulate", *sites, "--epsilon", 0.01, "--delta", "1e-6", "--row-norm", 3, "--out", out, "--seed", 0,
              "--columns", "p,q,r", "--center", "0", "--analysis", "precision", "--draws", 0)
    assert res.returncode == 0, res.stderr
    analysis = json.loads((out / "privacy_report.json").read_text())["analysis"]
    assert analysis["n_edges"] is None and analysis["withheld"] and not (out / "network.png").exists()
    assert "the graph withheld (noise)" in res.stdout and "edges.csv for inspection only" in res.stdout


def test_ridge_across_sites_counts_every_part_as_one_machine(run, sites, tmp_path):
    # the same fit as 'dpmoments precision --method ridge' (present/precision.fit_precision): draws with sampling
    res, analysis = _simulate(run, sites, tmp_path / "o", "--columns", "p,q,r", "--center", "0", "--analysis",
                              "ridge", "--alpha", "0.1", "--draws", 20, epsilon=20)
    u = analysis["uncertainty"]
    assert u["method"] == "parametric bootstrap" and u["n_draws"] == 20 and "sampling" in u["covers"]
    assert u["error_draws"]["target"] == "population" and "heavy tails" in u["not_covered"]
    lower, upper = (np.load(tmp_path / "o" / f"partial_correlation_{e}.npy") for e in ("lower", "upper"))
    assert np.all(lower[~np.isnan(lower)] <= upper[~np.isnan(upper)]) and "90% interval" in res.stdout


def test_a_strong_covariance_across_sites_is_not_flagged(run, sites, tmp_path):
    res, analysis = _simulate(run, sites, tmp_path / "o", "--columns", "p,q,r", "--center", "0", epsilon=50)
    assert not analysis["noise_dominates"] and analysis["signal_to_noise"] > 1 and "NOISE [" not in res.stdout


def test_regress_across_sites_gives_standard_errors(run, sites, tmp_path):
    res, analysis = _simulate(run, sites, tmp_path / "o", "--analysis", "regress", "--target", "y", "--n-iter", 2,
                              "--w-max", 5, "--response-bound", 3, epsilon=5)
    se = analysis["coefficients_se"]
    assert set(se) == {"p", "q", "r", "(intercept)"} and all(v > 0 for v in se.values())  # the default intercept
    assert analysis["uncertainty"]["method"] == "closed-form (first order)" and analysis["signal_to_noise"] > 0
    assert (tmp_path / "o" / "coefficients_se.npy").exists() and "90% interval" in res.stdout
    # the sites' sampling releases by default (--sampling-share 0.1, as 'regress'): every printed interval says in
    # its own line what it covers and leaves out (issue 25; without them, 'noise only': test_irls_sampling.py)
    assert analysis["intervals_leave_out"] is None and "sampling" not in analysis["uncertainty"]["not_covered"]
    shown = [line for line in res.stdout.splitlines() if line.lstrip().startswith(("p ", "q ", "r "))]
    said = ("covers: noise + sampling; not clipping bias", "noise only: not sampling", "withheld")  # (K_h floored)
    assert shown and all(any(words in line for words in said) for line in shown)


def test_a_model_choice_of_noise_across_sites_is_withheld(run, sites, tmp_path):
    res, analysis = _simulate(run, sites, tmp_path / "o", "--analysis", "select", "--target", "y", "--R", 3)
    assert analysis["selected"] is None and analysis["withheld"] and analysis["selection_probability"] < 0.5
    assert "the choice withheld (noise)" in res.stdout and "redrawn" in res.stdout


def test_a_clear_model_choice_across_sites_is_shown(run, sites, tmp_path):
    # no --R: the radius is drawn from the sites' release (post-processing), as 'select' draws it by default
    res, analysis = _simulate(run, sites, tmp_path / "o", "--analysis", "select", "--target", "y",
                              "--phi", 20, epsilon=1e4)
    assert analysis["selected"] == ["p"] and analysis["selection_probability"] == 1.0 and not analysis["withheld"]
    assert analysis["R_source"].startswith("the release's full-model fit") and 0.5 < analysis["R"] < 1.5


@pytest.mark.parametrize("extra, option", [(("--analysis", "covariance", "--draws", 5), "--draws"),
                                           (("--analysis", "select", "--target", "y", "--intervals-for", "sample"),
                                            "--intervals-for"),
                                           (("--analysis", "covariance", "--n-components", 2), "--n-components"),
                                           (("--analysis", "pca", "--n-components", 2, "--target", "y"), "--target"),
                                           (("--analysis", "select", "--target", "y", "--p=1"), "--p")])
def test_an_uncertainty_option_the_analysis_ignores_is_refused(run, sites, tmp_path, extra, option):
    res = run("simulate", *sites, "--epsilon", 1, "--delta", "1e-6", "--out", tmp_path / "o", *extra)
    assert res.returncode == 2 and f"{option} has no use with --analysis" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
