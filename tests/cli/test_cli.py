"""The command line end to end: subprocess runs of ``python -m dpmoments`` and in-process failures."""

import json

import numpy as np
import pytest

from dpmoments import ApproxDP
from dpmoments.cli import main
from dpmoments.cli import _output

from .helpers import assert_one_line_error, cli, no_debris, report

PRIVACY = ["--epsilon", "1", "--delta", "1e-6", "--row-norm", "3", "--seed", "0"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)) / 2
    X[:, 1] += 0.6 * X[:, 0]
    np.save(d / "x.npy", X)
    header = "a,b,c,d\n"
    (d / "x.csv").write_text(header + "\n".join(",".join(f"{v:.6f}" for v in row) for row in X) + "\n")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({k: X[:, j] for j, k in enumerate("abcd")}), d / "x.parquet")
    (d / "truth.csv").write_text("a,b\n")
    return d


def test_demo_writes_figure_and_report(run, tmp_path):
    # in process: the entry point and exit status of a real subprocess are checked by the pca and --help runs below
    res = run("demo", "--out", tmp_path / "demo", "--seed", "0")
    assert res.returncode == 0, res.stderr
    assert "consensus" in res.stdout and "TPR" in res.stdout and "non-private" in res.stdout
    out = tmp_path / "demo"
    for name in ("network.png", "edges.csv", "precision_private.npy", "privacy_report.json"):
        assert (out / name).is_file(), name
    rep = report(out)
    assert rep["accountant"]["spent"] is not None
    # Old: the headline was the second release's (0.8, 8e-07) although (1, 1e-06) was spent.
    assert rep["privacy"]["guarantee"] == "(1, 1e-06)-DP" == str(ApproxDP(**{
        k: v for k, v in rep["accountant"]["spent"].items() if k in ("epsilon", "delta")}))
    assert {s["neighbours"] for s in rep["accountant"]["spends"]} == {"replace-one"}
    assert rep["privacy"]["randomness"] == "seeded" and rep["privacy"]["secure_randomness"] is False
    assert rep["analysis"]["private"]["n_edges"] <= rep["analysis"]["consensus_edges"]


@pytest.mark.parametrize("name", ["x.csv", "x.npy", "x.parquet"])
def test_covariance_on_every_format(run, data, tmp_path, name):
    out = tmp_path / "cov"
    fingerprint = ["--fingerprint"] if name == "x.npy" else []
    # in process (the covariance subprocess: tests/cli/test_conventions.py); the figures, which do not depend on the
    # input's format, drawn once, for the CSV
    figures = ["--epsilon-grid", "0.3,1,3"] if name == "x.csv" else ["--no-figures"]
    res = run("covariance", data / name, *PRIVACY, "--uncentred", "--out", out, *figures, *fingerprint)
    assert res.returncode == 0, res.stderr
    C = np.load(out / "covariance.npy")
    assert C.shape == (4, 4) and np.allclose(C, C.T)
    assert np.min(np.linalg.eigvalsh(C)) >= -1e-10
    assert (out / "covariance.csv").read_text().count("\n") == 5
    for fig in ("covariance", "privacy_utility"):
        if name == "x.csv":
            assert (out / f"{fig}.png").is_file() and not (out / f"{fig}.svg").exists()  # PNG only by default
        else:
            assert not (out / f"{fig}.png").exists()
    rep = report(out)
    p = rep["privacy"]
    assert p["guarantee"] == "(1, 1e-06)-DP" and p["neighbouring_relation"] == "replace-one"
    assert p["mechanism"] == "gaussian" and p["calibration"] == "analytic"
    assert p["sensitivity"] == pytest.approx(np.sqrt(2) * 9 / 3000)
    assert rep["dpmoments_version"] and rep["input"]["shape"] == [3000, 4]
    assert rep["input"]["path"] == str(data / name)  # as given
    if fingerprint:
        assert len(rep["input"]["fingerprint"]["sha256"]) == 64
        assert rep["input"]["fingerprint"]["bytes"] == (data / name).stat().st_size
    else:  # opt-in: it tells neighbouring inputs apart
        assert rep["input"]["fingerprint"] is None
    assert no_debris(tmp_path)


def test_covariance_columns_and_laplace(run, data, tmp_path):
    out = tmp_path / "cov"
    res = run("covariance", data / "x.csv", "--columns", "a,c", "--mechanism", "laplace", "--epsilon", "1",
              "--row-norm", "3", "--out", out, "--no-figures", "--quiet")
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    assert np.load(out / "covariance.npy").shape == (2, 2)
    rep = report(out)
    assert rep["privacy"]["guarantee"] == "1-DP" or "delta" not in rep["privacy"]["guarantee"]
    assert rep["privacy"]["mechanism"] == "laplace" and rep["input"]["fingerprint"] is None
    assert rep["input"]["columns"] == ["a", "c"]
    assert not (out / "covariance.png").exists()


def test_precision_glasso_with_truth(run, data, tmp_path):
    out = tmp_path / "net"
    res = run("precision", data / "x.parquet", *PRIVACY, "--edges", "1", "--truth", data / "truth.csv", "--out", out)
    assert res.returncode == 0, res.stderr
    for name in ("precision.npy", "precision.csv", "edges.csv", "network.png", "roc.png"):
        assert (out / name).is_file(), name
    rep = report(out)
    assert rep["analysis"]["n_edges"] == 1 and rep["analysis"]["tpr"] == 1.0 and rep["analysis"]["fpr"] == 0.0
    assert "a,b" in (out / "edges.csv").read_text()


def test_precision_ebic_floor_on_the_scale_it_fits(run, data, tmp_path):
    from dpmoments import release_second_moment
    from dpmoments.estimators.graph import standardized
    from dpmoments.estimators import noise_floor

    X = np.load(data / "x.npy")
    rel = release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=3.0, rng=0, center=None)
    scaled = standardized(rel)
    s = np.sqrt(np.diag(rel.second_moment))
    inverse = 1.0 / np.outer(s, s)
    np.testing.assert_allclose(scaled.second_moment, rel.second_moment * inverse)
    # the scaled matrix's largest off-diagonal noise std: what the eBIC floor must read
    assert scaled.noise_scale == pytest.approx(rel.noise_scale * inverse[~np.eye(4, dtype=bool)].max())
    assert noise_floor(scaled) > noise_floor(rel)

    floors = {}
    for floor in ("noise", "0"):
        out = tmp_path / f"net-{floor}"
        res = run("precision", data / "x.npy", *PRIVACY, "--standardize", "--alpha-floor", floor, "--out", out)
        assert res.returncode == 0, res.stderr
        floors[floor] = report(out)["analysis"]
    assert floors["0"]["alpha_floor"] == 0.0 and floors["noise"]["alpha_floor"] > 0.0
    assert floors["noise"]["alpha"] >= floors["noise"]["alpha_floor"]
    assert_one_line_error(run("precision", data / "x.npy", *PRIVACY, "--alpha-floor", "-1", "--out", tmp_path / "x"),
                          "--alpha-floor")


def test_precision_ridge(run, data, tmp_path):
    out = tmp_path / "net"
    res = run("precision", data / "x.npy", *PRIVACY, "--method", "ridge", "--alpha", "0.01", "--out", out)
    assert res.returncode == 0, res.stderr
    P = np.load(out / "precision.npy")
    assert np.all(np.linalg.eigvalsh(P) > 0)
    assert report(out)["analysis"]["method"] == "ridge"


@pytest.mark.parametrize("args, words", [
    (["precision", "{d}/x.csv", "--epsilon", "1", "--delta", "1e-6", "--uncentred", "--center", "0"],
     ["--center", "--uncentred", "not both"]),
    (["covariance", "{d}/bad.csv", *PRIVACY, "--uncentred"], ["is not a number", "'b'", "line 3"]),
    (["covariance", "{d}/ragged.csv", *PRIVACY, "--uncentred"], ["ragged.csv"]),
    (["covariance", "{d}/x.csv", "--columns", "a,zz", *PRIVACY, "--uncentred"], ["no column named 'zz'"]),
    (["covariance", "{d}/missing.csv", *PRIVACY, "--uncentred"], ["no such data file"]),
    (["covariance", "{d}/x.csv", "--epsilon", "0", "--delta", "1e-6", "--row-norm", "1"], ["--epsilon", "> 0"]),
    (["covariance", "{d}/x.csv", "--epsilon", "-1", "--delta", "1e-6", "--row-norm", "1"], ["--epsilon"]),
    (["covariance", "{d}/x.txt", *PRIVACY, "--uncentred"], ["unknown extension"]),
    (["precision", "{d}/x.npy", *PRIVACY, "--method", "ridge"], ["numeric --alpha"]),
    (["covariance", "{d}/x.csv", "--epsilon", "1", "--row-norm", "1"], ["--delta is required"]),
])
def test_bad_input_is_one_line_exit_2(run, data, tmp_path, args, words):
    (data / "bad.csv").write_text("a,b\n1,2\n3,x\n")
    (data / "ragged.csv").write_text("a,b\n1,2\n3\n")
    (data / "x.txt").write_text("1,2\n")
    out = tmp_path / "out"
    res = run(*[a.format(d=data) for a in args], "--out", out)
    assert_one_line_error(res, *words)
    assert not out.exists() and no_debris(tmp_path)


def test_existing_output_refused_then_forced(run, data, tmp_path):
    out = tmp_path / "cov"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    res = run("covariance", data / "x.npy", *PRIVACY, "--uncentred", "--out", out, "--no-figures")
    assert_one_line_error(res, "not empty", "--force")
    # --force replaces only what dpmoments wrote: a directory of one's own files is never deleted
    res = run("covariance", data / "x.npy", *PRIVACY, "--uncentred", "--out", out, "--no-figures", "--force")
    assert_one_line_error(res, "not written by dpmoments", ".dpmoments-results")
    assert (out / "keep.txt").read_text() == "mine"
    (out / "keep.txt").unlink()
    assert run("covariance", data / "x.npy", *PRIVACY, "--uncentred", "--out", out, "--no-figures").returncode == 0
    first = np.load(out / "covariance.npy")
    res = run("covariance", data / "x.npy", *PRIVACY[:-2], "--uncentred", "--out", out, "--no-figures", "--force")
    assert res.returncode == 0, res.stderr
    assert not np.array_equal(np.load(out / "covariance.npy"), first)  # fresh noise, new result
    assert no_debris(tmp_path)


@pytest.mark.parametrize("exc, status", [(KeyboardInterrupt, 130), (OSError("No space left on device"), 2)])
def test_interrupted_write_leaves_nothing(data, tmp_path, monkeypatch, capsys, exc, status):
    def boom(self, *a, **k):
        raise exc

    monkeypatch.setattr(_output.ResultsDir, "save_json", boom)
    out = tmp_path / "cov"
    code = main(["--quiet", "covariance", str(data / "x.npy"), *PRIVACY, "--uncentred", "--out", str(out)])
    assert code == status
    assert not out.exists()
    assert no_debris(tmp_path)
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_interrupted_force_keeps_the_old_result(data, tmp_path, monkeypatch):
    out = tmp_path / "cov"
    out.mkdir()
    (out / "old.txt").write_text("old")
    (out / _output.MARKER).write_text('{"written_by": "dpmoments", "files": ["old.txt"]}')
    monkeypatch.setattr(_output.ResultsDir, "save_json", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    assert main(["-q", "covariance", str(data / "x.npy"), *PRIVACY, "--uncentred", "--out", str(out), "--force"]) == 130
    assert (out / "old.txt").read_text() == "old" and no_debris(tmp_path)


def test_audit_consistent_and_negative_control(run, tmp_path):
    base = ["audit", "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--dim", "2", "--seed", "1",
            "--n-samples", "100000"]
    res = run(*base, "--out", tmp_path / "a")
    assert res.returncode == 0, res.stderr
    assert "empirical lower bound" in res.stdout and "consistent" in res.stdout
    summary = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert summary["epsilon_lower_bound"] <= 1.0
    assert main(["-q", *base, "--noise-factor", "0.4"]) == 3


def test_audit_needs_delta_for_gaussian(run):
    assert_one_line_error(run("audit", "--epsilon", "1", "--dim", "2"), "--delta is required")


def test_no_bound_in_a_subprocess_chooses_privately(data, tmp_path):
    out = tmp_path / "out"
    res = cli("pca", data / "x.csv", "--n-components", "1", "--epsilon", "1", "--delta", "1e-6", "--no-figures",
              "--out", out)
    assert res.returncode == 0, res.stderr
    assert "private choices" in res.stdout and "row_norm: share 0.09" in res.stdout and "\n  mean: share " in res.stdout
    assert "location mean: share" in res.stdout and "settled True" in res.stdout  # the location's first step
    # found the rows about the origin, so its pass also drew the bound and the mean (docs/bounds.md)


def test_help_and_reproduce_list(run):
    res = cli("--help")
    assert res.returncode == 0 and "examples:" in res.stdout
    for name in ("demo", "covariance", "precision", "audit", "reproduce"):
        assert name in res.stdout
    res = run("covariance", "--help")
    assert "examples:" in res.stdout and "--row-norm" in res.stdout and "PUBLIC" in res.stdout
    res = run("reproduce", "--list")
    assert res.returncode == 0 and "park_welling" in res.stdout
    assert_one_line_error(run("reproduce", "no_such_paper"), "no reproduction named")


def test_unknown_subcommand_is_one_line(run):
    res = run("frobnicate")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_zarr_without_dask_is_a_clear_error(run, tmp_path):
    pytest.importorskip("numpy")
    try:
        import dask.array  # noqa: F401  (only whether it imports)
        pytest.skip("dask is installed: the Zarr path reads the array instead")
    except ImportError:
        pass
    store = tmp_path / "x.zarr"
    store.mkdir()
    (store / ".zarray").write_text("{}")
    res = run("covariance", store, *PRIVACY, "--uncentred", "--out", tmp_path / "out")
    assert_one_line_error(res, "needs dask")


def test_progress_line_only_on_a_terminal():
    import io

    from dpmoments.cli._progress import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        with Progress("reading", total=10, stream=stream) as bar:
            bar.update(10)
    assert "100.0%" in tty.getvalue() and pipe.getvalue() == ""
    quiet = Tty()
    with Progress("reading", total=10, stream=quiet, enabled=False) as bar:
        bar.update(10)
    assert quiet.getvalue() == ""


def test_covariance_reads_a_zarr_store(run, data, tmp_path):
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("dask.array")
    X = np.load(data / "x.npy")
    store = tmp_path / "x.zarr"
    z = zarr.create_array(str(store), shape=X.shape, chunks=(500, X.shape[1]), dtype="f8")
    z[:] = X
    out_zarr, out_npy = tmp_path / "from_zarr", tmp_path / "from_npy"
    common = ["--epsilon", "1", "--delta", "1e-6", "--row-norm", "2", "--seed", "4", "--no-figures", "--quiet"]
    result = run("covariance", store, "--out", out_zarr, *common)
    assert result.returncode == 0, result.stderr
    result = run("covariance", data / "x.npy", "--out", out_npy, *common)
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(np.load(out_zarr / "covariance.npy"), np.load(out_npy / "covariance.npy"),
                               rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- no wasted work in `precision`


@pytest.fixture
def solver_calls(monkeypatch):
    """Counts graphical-lasso solves (one per penalty; a path counts its penalties) and PSD projections."""
    import dpmoments.solvers as solvers
    from dpmoments.estimators import precision as est_module
    from dpmoments.moments import release as release_module
    calls = {"solves": 0, "paths": 0, "projections": 0}
    solve, path, walk = solvers.graphical_lasso, solvers.graphical_lasso_path, solvers.iter_graphical_lasso_path

    def counted_solve(*a, **k):
        calls["solves"] += 1
        return solve(*a, **k)

    def counted(function):
        def counted_path(S, alphas, **k):
            calls["paths"] += 1
            calls["solves"] += len(alphas)
            return function(S, alphas, **k)
        return counted_path

    monkeypatch.setattr(est_module, "graphical_lasso", counted_solve)
    monkeypatch.setattr(est_module, "iter_graphical_lasso_path", counted(walk))  # the estimator's path
    monkeypatch.setattr(solvers, "graphical_lasso_path", counted(path))  # the ROC's own, where it needs one
    project = release_module.Release.project_psd

    def counted_project(self, *a, **k):
        calls["projections"] += 1
        return project(self, *a, **k)

    monkeypatch.setattr(release_module.Release, "project_psd", counted_project)
    return calls


@pytest.mark.parametrize("draws", [0, 3])
def test_precision_fixed_alpha_solves_once(run, data, tmp_path, solver_calls, draws):
    """A fixed --alpha was 21 solves and 22 PSD projections: now one of each, plus one per bootstrap draw.

    The draws were a second fit that solved the estimate again (2 + B solves); the fit now draws them itself.
    """
    res = run("precision", data / "x.npy", *PRIVACY, "--alpha", "0.05", "--draws", str(draws), "--out", tmp_path / "a")
    assert res.returncode == 0, res.stderr
    assert solver_calls == {"solves": 1 + draws, "paths": 0, "projections": 1 + draws}


@pytest.mark.parametrize("extra", [[], ["--truth", "{d}/truth.csv"], ["--edges", "1", "--truth", "{d}/truth.csv"]])
def test_precision_path_is_solved_once(run, data, tmp_path, solver_calls, extra):
    """eBIC (and --edges) solve the grid once, as one path; the ROC figure reads the same path; each bootstrap
    draw is one solve at the chosen penalty."""
    extra = [str(e).format(d=data) for e in extra]
    res = run("precision", data / "x.parquet", *PRIVACY, "--alpha-floor", "0", "--draws", "2", *extra,
              "--out", tmp_path / "e")
    assert res.returncode == 0, res.stderr
    assert solver_calls["paths"] == 1 and solver_calls["solves"] == 20 + 2 and solver_calls["projections"] == 1 + 2


def test_audit_names_the_worst_case_pair_in_words(run):
    # (hunt3) it read "x = R e1 vs x' = R e2 99 zero rows"
    res = run("audit", "--epsilon", "1", "--delta", "1e-5", "--n-samples", "1000", "--seed", "0")
    assert res.returncode == 0 and "vs x' = R e2, beside 99 zero rows" in res.stdout, res.stdout
