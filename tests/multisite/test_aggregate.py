"""``dpmoments aggregate`` writes atomically (issue 16): an aborted run exits non-zero with its reason and leaves
the earlier result intact; a path with a quote and a space works; no temporary is left anywhere.

Driven in process over gRPC (the sites are threads dialling the command's port), through the same
``aggregate_plan`` the Flower ServerApp runs.
"""

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("grpc", reason="grpcio is not installed")

from dpmoments.multisite import deal_files, deploy, read_bundle  # noqa: E402
from dpmoments.multisite.analyses import plan_analysis  # noqa: E402
from dpmoments.multisite.grpc_transport import GrpcSite  # noqa: E402
from dpmoments.multisite.site import Site  # noqa: E402

from dpmoments.cli._output import MARKER  # noqa: E402

from ..cli.helpers import assert_one_line_error, in_process  # noqa: E402

SIZES = {"north": 200, "south": 300, "east": 250}


@pytest.fixture
def run(capsys):
    return in_process(capsys)


def _sites(tmp_path, plan_key, budget=None):
    rng = np.random.default_rng(0)
    sites = []
    for s, n in SIZES.items():
        site = Site(s, rng.normal(size=(n, 3)) / 3, budget=budget)
        site.accept(read_bundle(tmp_path / plan_key / f"{s}.npz", s), rng=1)
        sites.append(site)
    return sites


def _serve(sites, port):
    links = [GrpcSite(s.handle, f"127.0.0.1:{port}", s.name, insecure=True, retry_s=0.05).start() for s in sites]
    return lambda: [link.stop() for link in links]


def _deal(tmp_path, key, epsilon=1.0):
    plan = plan_analysis("covariance", "cape", list(SIZES), list(SIZES.values()), n_features=3, row_norm=1.0,
                         epsilon=epsilon, delta=1e-5)
    return deal_files(plan, tmp_path / key, rng=0)["plan"]


def test_aborted_run_keeps_the_old_result_and_says_why(run, tmp_path):
    out = tmp_path / "o'brien result"
    litter = set(Path(tempfile.gettempdir()).glob("dpmoments-flwr-*"))  # other programs' are not ours to judge
    good = _deal(tmp_path, "A")
    port = deploy.free_port()
    stop = _serve(_sites(tmp_path, "A"), port)
    try:
        res = run("aggregate", "--transport", "grpc", "--listen", f"127.0.0.1:{port}", "--insecure", "--plan", good,
                  "--out", out, "--wait", 20, "--timeout", 20)
    finally:
        stop()
    assert res.returncode == 0, res.stderr
    assert "against the aggregator" in res.stdout and (out / "covariance.npy").is_file()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = _deal(tmp_path, "B")
    port = deploy.free_port()
    stop = _serve(_sites(tmp_path, "B", budget=(0.5, 1e-6)), port)  # every site refuses: beyond its budget
    try:
        res = run("aggregate", "--transport", "grpc", "--listen", f"127.0.0.1:{port}", "--insecure", "--plan", bad,
                  "--out", out, "--force", "--wait", 20, "--timeout", 20)
    finally:
        stop()
    assert_one_line_error(res, "run aborted, no release", "min_sites")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".dpmoments-tmp-")]
    assert set(Path(tempfile.gettempdir()).glob("dpmoments-flwr-*")) <= litter
    report = json.loads((out / "privacy_report.json").read_text())
    assert report["plan"]["run_id"] and report["run_nonce"]


def test_a_run_that_could_only_abort_is_refused_before_it_starts(run, tmp_path):
    out = tmp_path / "res"
    out.mkdir()
    (out / "old.txt").write_text("an earlier result")
    (out / MARKER).write_text('{"written_by": "dpmoments", "files": ["old.txt"]}')  # an earlier result --force may replace
    res = run("aggregate", "--transport", "grpc", "--listen", "127.0.0.1:0", "--insecure", "--plan",
              _deal(tmp_path, "A"), "--out", out, "--force", "--min-sites", 4)
    assert_one_line_error(res, "--min-sites 4 exceeds the plan's 3 sites")
    assert (out / "old.txt").read_text() == "an earlier result"


def test_a_plan_that_is_not_a_plan_is_one_line(run, tmp_path):
    junk = tmp_path / "plan.json"
    junk.write_text('{"sites": ["a"]}')
    res = run("aggregate", "--transport", "grpc", "--listen", "127.0.0.1:0", "--insecure", "--plan", junk,
              "--out", tmp_path / "o")
    assert_one_line_error(res, "is not a dpmoments plan")


def test_register_failures_are_one_line(run, tmp_path):
    res = run("aggregate", "--superlink", "127.0.0.1:1", "--insecure", "--register", tmp_path / "missing.pub")
    assert_one_line_error(res, "no such public key file")




def test_an_option_the_plans_analysis_does_not_take_is_refused(run, tmp_path):
    """A fit option of another analysis (``--n-components`` against a covariance plan) was dropped silently."""
    flower = ("aggregate", "--superlink", "127.0.0.1:1", "--insecure", "--plan", _deal(tmp_path, "C"), "--out",
              tmp_path / "cov")
    for option, value in (("--n-components", 3), ("--sigma2", 1), ("--alpha", 0.1)):
        assert_one_line_error(run(*flower, option, value), f"{option} has no use with the plan's --analysis covariance")
    assert not (tmp_path / "cov").exists()


def test_a_multi_step_analysis_over_the_network_command(run, tmp_path):
    """IRLS's J steps and its sampling steps over gRPC from the command line: the plan carries the analysis,
    aggregate fits it. An option the plan fixes, typed with the plan's value, runs; with another, it is refused
    before the aggregator listens (naming it, the value typed and the plan's), never silently replaced."""
    rng = np.random.default_rng(2)
    plan = plan_analysis("regress", "cape", list(SIZES), list(SIZES.values()), n_features=3, row_norm=1.0,
                         epsilon=8.0, delta=1e-6, response_bound=1.0,
                         options={"n_iter": 2, "w_max": 5.0, "sampling_budget": 0.1})
    paths = deal_files(plan, tmp_path / "R", rng=0)
    flower = ("aggregate", "--superlink", "127.0.0.1:1", "--insecure", "--plan", paths["plan"], "--out",
              tmp_path / "irls")  # the default transport: refused before flwr is started
    assert_one_line_error(run(*flower, "--sampling-share", 0.3), "--sampling-share 0.3 contradicts the plan (0.1)")
    assert_one_line_error(run(*flower, "--n-iter=5"), "--n-iter 5 contradicts the plan (2)")
    assert_one_line_error(run(*flower, "--no-fit-intercept", "--analysis", "covariance"),
                          "--analysis covariance contradicts the plan (regress)")
    assert_one_line_error(run(*flower, "--fit-intercept"), "--fit-intercept contradicts the plan (--no-fit-intercept)")
    sites = []
    for s, n in SIZES.items():
        X = rng.normal(size=(n, 3)) / 4
        site = Site(s, X, X @ np.array([1.0, -1.0, 0.5]) + 0.05 * rng.normal(size=n))
        site.accept(read_bundle(tmp_path / "R" / f"{s}.npz", s), rng=1)
        sites.append(site)
    port = deploy.free_port()
    stop = _serve(sites, port)
    try:
        res = run("aggregate", "--transport", "grpc", "--listen", f"127.0.0.1:{port}", "--insecure", "--plan",
                  paths["plan"], "--out", tmp_path / "irls", "--wait", 20, "--timeout", 20, "--n-iter", 2,
                  "--sampling-share", 0.1, "--analysis", "regress", "--no-fit-intercept")  # the plan's own values
    finally:
        stop()
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "irls" / "coefficients.csv").read_text().startswith("feature,coefficient")
    report = json.loads((tmp_path / "irls" / "privacy_report.json").read_text())
    assert report["protocol"]["analysis"] == "regress" and len(report["protocol"]["parts"]) == 8  # A0 B0 A1 B1 + 4
    assert "sampling variability of the rows" in report["analysis"]["uncertainty"]["covers"]
    assert report["privacy"]["guarantee_detail"]["epsilon"] == pytest.approx(8.0, rel=1e-6)


@pytest.mark.parametrize("analysis, options, fit, estimate", [
    ("pca", {}, ["--n-components", 2, "--draws", 5, "--level", 0.8], "components.npy"),
    ("select", {}, ["--R", 3, "--phi", 50], "selected.csv"),
    ("tensor-mog", {"sigma2": 0.01}, ["--n-components", 2], "components.npy"),
    ("tensor-stm", {"vocabulary_size": 6}, ["--n-components", 2], "components.npy"),
])
def test_every_analysis_runs_over_the_network_command(run, tmp_path, analysis, options, fit, estimate):
    """The deployed commands accept every analysis: the plan names it, aggregate fits it (issue 15)."""
    rng = np.random.default_rng(3)
    plan = plan_analysis(analysis, "cape", list(SIZES), list(SIZES.values()), n_features=3, row_norm=1.0,
                         epsilon=1.0, delta=1e-6, options=options)
    paths = deal_files(plan, tmp_path / "P", rng=0)
    sites = []
    for s, n in SIZES.items():
        X = rng.integers(0, 6, size=(n, 3)) if analysis == "tensor-stm" else rng.normal(size=(n, 3)) / 3
        y = X @ np.array([1.0, 0.0, -0.5]) if analysis == "select" else None
        site = Site(s, X, y)
        site.accept(read_bundle(tmp_path / "P" / f"{s}.npz", s), rng=1)
        sites.append(site)
    port = deploy.free_port()
    stop = _serve(sites, port)
    try:
        res = run("aggregate", "--transport", "grpc", "--listen", f"127.0.0.1:{port}", "--insecure", "--plan",
                  paths["plan"], "--out", tmp_path / "out", "--wait", 20, "--timeout", 20, "--no-figures", *fit)
    finally:
        stop()
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / estimate).is_file()
    report = json.loads((tmp_path / "out" / "privacy_report.json").read_text())
    assert report["analysis"]["transport"] == "grpc" and report["protocol"]["protocol"] == "cape"
    assert report["privacy"]["guarantee_detail"]["epsilon"] == pytest.approx(1.0, rel=1e-6)
    if analysis == "pca":  # the fit's uncertainty options reach the aggregator's fit (as on the Flower request)
        assert report["analysis"]["uncertainty"]["n_draws"] == 5 and report["analysis"]["uncertainty"]["level"] == 0.8

