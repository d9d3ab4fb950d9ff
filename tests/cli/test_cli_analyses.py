"""The analysis subcommands end to end, in process: pca, tensor, regress, select, simulate (the real subprocess
runs, entry point and exit status, are in tests/cli/test_cli.py)."""

import math

import numpy as np
import pytest

from dpmoments.cli import _output, main

from .helpers import assert_one_line_error, no_debris, report

GAUSS = ["--epsilon", "1", "--delta", "1e-6", "--seed", "0"]
BETA = np.array([1.0, -1.0, 0.5, 0.0])


def write_csv(path, header, rows, fmt="{:.6f}"):
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(fmt.format(v) for v in r) for r in rows) + "\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("analyses")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)) / 2
    X[:, 1] += 0.6 * X[:, 0]
    y = X @ BETA + 0.05 * rng.standard_t(3, size=3000)
    np.save(d / "x.npy", X)
    write_csv(d / "xy.csv", ["a", "b", "c", "d", "y"], np.c_[X, y])
    for s in range(3):
        write_csv(d / f"site{s}.csv", ["a", "b", "c", "d"], X[s * 1000:(s + 1) * 1000])
    (d / "bad_site.csv").write_text("a,b,c,d\n0.1,0.2,0.3,0.4\n0.1,oops,0.3,0.4\n")
    write_csv(d / "other_cols.csv", ["a", "b", "c", "e"], X[:100])
    from dpmoments.datasets.mixtures import make_mog

    mog = make_mog(20000, 5, 2, sigma2=0.01, rng=0)
    np.save(d / "mog.npy", mog.X)
    np.save(d / "mog_means.npy", mog.components)
    topics = rng.dirichlet(np.full(8, 0.3), size=2)
    z = rng.integers(0, 2, size=4000)
    docs = np.array([rng.choice(8, size=3, p=topics[k]) for k in z], dtype=np.int64)
    np.save(d / "docs.npy", docs)
    np.save(d / "docs_float.npy", docs + 0.5)
    return d


def str_guarantee(d):
    return f"({d['epsilon']:g}, {d['delta']:g})-DP"


def figure(out, stem):
    return (out / f"{stem}.png").is_file()


# -- pca ------------------------------------------------------------------------------------------------------
def test_pca_spectrum_and_noise_floor(run, data, tmp_path):
    # in process: the pca subprocess (entry point, exit status) is tests/cli/test_cli.py's
    # test_no_bound_in_a_subprocess_chooses_privately
    out = tmp_path / "pca"
    res = run("pca", data / "x.npy", "--n-components", 2, *GAUSS, "--row-norm", 3, "--out", out,
              "--epsilon-grid", "0.3,1,3")
    assert res.returncode == 0, res.stderr
    assert "noise floor" in res.stdout and "(1, 1e-06)-DP" in res.stdout
    V = np.load(out / "components.npy")
    assert V.shape == (2, 4) and np.allclose(V @ V.T, np.eye(2), atol=1e-10)
    assert (out / "components.csv").read_text().splitlines()[0] == "component,x0,x1,x2,x3"
    assert len((out / "explained_variance.csv").read_text().splitlines()) == 3
    assert figure(out, "spectrum") and figure(out, "privacy_utility")
    rep = report(out)
    p, a = rep["privacy"], rep["analysis"]
    assert p["guarantee"] == "(1, 1e-06)-DP" and p["sensitivity"] == pytest.approx(math.sqrt(2) * 9 / 3000)
    assert a["noise_floor"] == pytest.approx(2 * p["noise_scale"] * math.sqrt(4))  # from the calibration
    assert a["n_components"] == 2 and len(a["explained_variance"]) == 2
    assert rep["input"]["shape"] == [3000, 4] and rep["input"]["fingerprint"] is None  # opt-in
    # the leading direction of the data (x0, x1 correlated) is found
    assert abs(V[0, 1]) > 0.6 and abs(V[0, 0]) > 0.4
    assert no_debris(tmp_path)


def test_pca_laplace_floor_and_columns(run, data, tmp_path):
    out = tmp_path / "pca"
    res = run("pca", data / "xy.csv", "--columns", "a,b,c", "--n-components", 1, "--mechanism", "laplace",
              "--epsilon", "1", "--row-norm", "3", "--out", out, "--no-figures", "-q")
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    rep = report(out)
    assert rep["privacy"]["mechanism"] == "laplace"
    assert rep["analysis"]["noise_floor"] == pytest.approx(2 * math.sqrt(2) * rep["privacy"]["noise_scale"] * math.sqrt(3))
    assert (out / "components.csv").read_text().splitlines()[0] == "component,a,b,c"
    assert not (out / "spectrum.png").exists()


# -- tensor ---------------------------------------------------------------------------------------------------
def test_tensor_mog_composes_both_releases(run, data, tmp_path):
    out = tmp_path / "mog"
    res = run("tensor", data / "mog.npy", "--model", "mog", "--sigma2", "0.01", "--n-components", 2, *GAUSS,
              "--row-norm", 1.5, "--out", out, "--epsilon-grid", "0.5,1,2")
    assert res.returncode == 0, res.stderr
    assert "second-moment release" in res.stdout and "third-moment release" in res.stdout
    M = np.load(out / "components.npy")
    assert M.shape == (2, 5)
    truth = np.load(data / "mog_means.npy")
    err = max(min(np.linalg.norm(m - t) for m in M) for t in truth)
    assert err < 0.25, (M, truth)
    assert len((out / "weights.csv").read_text().splitlines()) == 3
    assert figure(out, "privacy_utility")
    rep = report(out)
    p = rep["privacy"]
    assert p["guarantee"] == "(1, 1e-06)-DP" and p["composition"].startswith("basic")
    assert set(p["sensitivity"]) == {"second", "third"} and set(p["noise_scale"]) == {"second", "third"}
    assert rep["release"]["second"]["guarantee"]["epsilon"] == pytest.approx(0.5)
    assert rep["release"]["third"]["guarantee"]["epsilon"] == pytest.approx(0.5)
    assert rep["release"]["composed"]["guarantee"] == "(1, 1e-06)-DP"
    assert p["sensitivity"]["second"] == pytest.approx(math.sqrt(2) * 1.5**2 / 20000)


def test_tensor_stm_from_word_ids(run, data, tmp_path):
    out = tmp_path / "stm"
    res = run("tensor", data / "docs.npy", "--model", "stm", "--vocabulary-size", 8, "--n-components", 2, *GAUSS,
              "--out", out)
    assert res.returncode == 0, res.stderr
    T = np.load(out / "components.npy")
    assert T.shape == (2, 8) and np.allclose(T.sum(axis=1), 1.0) and np.all(T >= 0)
    rep = report(out)
    assert rep["privacy"]["row_norm"] is None and "one-hot" in rep["privacy"]["clipping"]
    assert rep["privacy"]["sensitivity"]["third"] == pytest.approx(math.sqrt(2) / 4000)
    assert rep["analysis"]["loaded_into_memory"] is True


@pytest.mark.parametrize("extra, words", [
    (["--model", "stm", "--n-components", "2", "--vocabulary-size", "8", "--row-norm", "auto"], ["no --row-norm"]),
    (["--model", "mog", "--n-components", "2", "--row-norm", "1"], ["--sigma2"]),
    (["--model", "stm", "--n-components", "2", "--vocabulary-size", "8", "--row-norm", "1"], ["no --row-norm"]),
    (["--model", "stm", "--n-components", "2"], ["--vocabulary-size"]),
])
def test_tensor_refusals(run, data, tmp_path, extra, words):
    out = tmp_path / "t"
    src = data / ("docs.npy" if "stm" in extra else "mog.npy")
    assert_one_line_error(run("tensor", src, *extra, *GAUSS, "--out", out), *words)
    assert not out.exists() and no_debris(tmp_path)


def test_tensor_stm_non_integer_ids(run, data, tmp_path):
    out = tmp_path / "t"
    res = run("tensor", data / "docs_float.npy", "--model", "stm", "--vocabulary-size", 9, "--n-components", 2,
              *GAUSS, "--out", out)
    assert_one_line_error(res, "integer word ids")
    assert not out.exists()


# -- regress --------------------------------------------------------------------------------------------------
def test_regress_coefficients_and_budget(run, data, tmp_path):
    out = tmp_path / "reg"
    res = run("regress", data / "xy.csv", "--target", "y", "--epsilon", "50", "--delta", "1e-6", "--seed", "0",
              "--row-norm", 3, "--response-bound", 3, "--n-iter", 5, "--w-max", 10, "--no-fit-intercept",
              "--out", out, "--epsilon-grid", "1,10,50")
    assert res.returncode == 0, res.stderr
    lines = (out / "coefficients.csv").read_text().splitlines()
    assert lines[0] == "feature,coefficient,se,lower,upper"
    assert [r.split(",")[0] for r in lines[1:]] == ["a", "b", "c", "d"]
    coef = np.load(out / "coefficients.npy")
    assert np.abs(coef - BETA).max() < 0.15, coef
    assert figure(out, "privacy_utility")
    rep = report(out)
    assert rep["privacy"]["guarantee"] == "(50, 1e-06)-DP"
    split = rep["analysis"]["budget_split"]
    assert split["accounting"] == "zcdp" and split["n_iter"] == 5
    assert split["first_moment_per_iteration"]["rho"] == pytest.approx(split["second_moment_per_iteration"]["rho"])
    assert rep["analysis"]["loaded_into_memory"] is True
    assert rep["privacy"]["sensitivity"]["B_l2"] == pytest.approx(math.sqrt(2) * 10 * 9 / 3000)
    assert rep["input"]["target"] == "y" and rep["input"]["columns"] == ["a", "b", "c", "d"]
    seed_at = rep["arguments"].index("--seed")  # the seed would let anyone redraw the noise: withheld
    assert rep["arguments"][seed_at + 1] == "<withheld>"


def test_regress_intercept_and_max_rows(run, data, tmp_path):
    out = tmp_path / "reg"
    args = ["regress", data / "xy.csv", "--target", "4", "--columns", "0,1", "--epsilon", "1", "--delta", "1e-6",
            "--row-norm", 3, "--response-bound", 3, "--n-iter", 3, "--w-max", 5, "--fit-intercept", "--out", out]
    res = run(*args, "--max-rows", 100)
    assert_one_line_error(res, "--max-rows 100", "memory")
    assert not out.exists() and no_debris(tmp_path)
    res = run(*args, "-q")
    assert res.returncode == 0, res.stderr
    rows = (out / "coefficients.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["feature", "a", "b", "(intercept)"]


def test_regress_and_select_run_on_epsilon_and_the_ranges_alone(run, data, tmp_path):
    # No --n-iter, --w-max or --R: the defaults; every column's range given, so no bound is drawn
    ranges = "a=-2:2,b=-2:2,c=-2:2,d=-2:2,y=-8:8"
    res = run("regress", data / "xy.csv", "--target", "y", "--epsilon", "4", "--delta", "1e-6", "--seed", "0",
              "--ranges", ranges, "--out", tmp_path / "reg", "--no-figures")
    assert res.returncode == 0, res.stderr
    rep = report(tmp_path / "reg")
    assert rep["privacy"]["ranges"]["response"] == [-8.0, 8.0] and rep["privacy"]["row_norm"] == 2.0
    assert [p["label"] for p in rep["private_choices"]["parts"]] == ["sampling (error budget)", "IRLS iterations"]
    assert [r.split(",")[0] for r in (tmp_path / "reg" / "coefficients.csv").read_text().splitlines()][-1] == \
        "(intercept)"
    res = run("select", data / "xy.csv", "--target", "y", "--epsilon", "20", "--seed", "0", "--ranges", ranges,
              "--out", tmp_path / "sel")
    assert res.returncode == 0, res.stderr
    assert "l1_radius" in res.stdout and "(private)" in res.stdout and "entry_bound 1," in res.stdout


# -- select ---------------------------------------------------------------------------------------------------
def test_select_finds_the_support(run, data, tmp_path):
    """With the default penalty (Lei et al.'s theorem's): a phi of 5 against noise of scale 8 is a coin toss."""
    out = tmp_path / "sel"
    res = run("select", data / "xy.csv", "--target", "y", "--epsilon", "20", "--bounds", 2, "--response-bound", 3,
              "--R", 3, "--seed", "0", "--out", out, "--epsilon-grid", "1,5,20")
    assert res.returncode == 0, res.stderr
    assert "a, b, c" in res.stdout
    rows = (out / "selected.csv").read_text().splitlines()
    assert rows == ["feature,index", "a,0", "b,1", "c,2"]
    assert figure(out, "privacy_utility")
    rep = report(out)
    p = rep["privacy"]
    # The sensitivity of the exact minimum, plus the solver's certified gap (1e-6 of it by default).
    assert p["guarantee"] == "20-DP" and p["sensitivity"] == pytest.approx((3 + 2 * 3) ** 2 * (1 + 1e-6), rel=1e-12)
    assert p["noise_scale"] == pytest.approx(2 * 81 * (1 + 1e-6) / 20, rel=1e-12)
    assert p["mechanism"] == "laplace report-noisy-min"
    assert rep["analysis"]["selected"] == ["a", "b", "c"] and rep["analysis"]["n_candidates"] == 15


def test_select_exponential_nested(run, data, tmp_path):
    out = tmp_path / "sel"
    res = run("select", data / "xy.csv", "--target", "y", "--epsilon", "1", "--bounds", 2, "--response-bound", 3,
              "--R", 3, "--mechanism", "exponential", "--candidates", "nested", "--out", out, "-q")
    assert res.returncode == 0, res.stderr
    rep = report(out)
    assert rep["analysis"]["n_candidates"] == 4 and rep["privacy"]["mechanism"] == "exponential"
    # Unseeded, but float noise from numpy: not secure (only exact discrete noise from the OS CSPRNG is).
    assert rep["privacy"]["randomness"] == "os-entropy" and rep["privacy"]["secure_randomness"] is False


# -- simulate -------------------------------------------------------------------------------------------------
def test_simulate_cape_reports_both_guarantees(run, data, tmp_path):
    """Issue 12: --epsilon 1 gave (1.245, 1e-6) against the aggregator; now the budget holds there."""
    out = tmp_path / "sim"
    sites = [data / f"site{s}.csv" for s in range(3)]
    res = run("simulate", "--uncentred", *sites, "--protocol", "cape", "--analysis", "covariance", "--epsilon", 1, "--delta", "1e-6",
              "--row-norm", 3, "--seed", 0, "--out", out, "--fingerprint")
    assert res.returncode == 0, res.stderr
    assert "guarantee against the aggregator" in res.stdout and "per-site claim" in res.stdout
    C = np.load(out / "covariance.npy")
    assert C.shape == (4, 4) and np.allclose(C, C.T)
    assert figure(out, "covariance")
    rep = report(out)
    proto = rep["protocol"]
    assert proto["protocol"] == "cape" and len(proto["sites"]) == 3 and proto["target"] == "aggregator"
    assert proto["guarantee"]["epsilon"] == pytest.approx(1.0, abs=1e-6) and proto["guarantee"]["epsilon"] <= 1.0
    assert proto["claimed"]["epsilon"] < 1.0  # each message alone carries more noise than the paper's claim needs
    assert rep["privacy"]["guarantee_detail"]["epsilon"] == pytest.approx(1.0, abs=1e-6)
    assert rep["privacy"]["per_site_claim"] == str_guarantee(proto["claimed"])
    assert [s["name"] for s in rep["input"]["sites"]] == ["site0", "site1", "site2"]
    assert all(len(s["fingerprint"]["sha256"]) == 64 and s["rows"] == 1000 for s in rep["input"]["sites"])
    assert rep["input"]["shape"] == [3000, 4]
    what = "second moment about the origin (uncentred)"  # named as `dpmoments covariance --uncentred` names it
    assert what in res.stdout and rep["analysis"]["statistic"] == what  # not called a covariance


def test_simulate_covariance_about_a_public_centre_is_named_so(run, data, tmp_path):
    out = tmp_path / "sim"
    res = run("simulate", *[data / f"site{s}.csv" for s in range(3)], "--analysis", "covariance", "--center", 0,
              "--epsilon", 1, "--delta", "1e-6", "--row-norm", 3, "--seed", 0, "--out", out, "--no-figures")
    assert res.returncode == 0, res.stderr
    assert report(out)["analysis"]["statistic"] == "covariance about the centre"


@pytest.mark.parametrize("protocol, analysis", [("conventional", "pca"), ("secure-aggregation", "precision"),
                                                ("local", "covariance"), ("pooled", "pca"), ("dpdispca", "pca")])
def test_simulate_protocols_and_analyses(run, data, tmp_path, protocol, analysis):
    out = tmp_path / "sim"
    extra = ["--n-components", "2"] if analysis == "pca" else []
    res = run("simulate", "--uncentred", *[data / f"site{s}.csv" for s in range(3)], "--protocol", protocol, "--analysis", analysis,
              *extra, "--epsilon", 1, "--delta", "1e-5", "--row-norm", 3, "--seed", 0, "--out", out, "--no-figures",
              "--draws", 0)  # the protocols, not the draws (tests/multisite/test_cli_noise.py has those)
    assert res.returncode == 0, res.stderr
    rep = report(out)
    assert rep["protocol"]["protocol"] == protocol and rep["analysis"]["protocol"] == protocol
    assert (out / {"pca": "components.npy", "precision": "precision.npy", "covariance": "covariance.npy"}[analysis]).is_file()
    assert len(rep["input"]["sites"]) == (1 if protocol == "local" else 3)
    assert rep["protocol"]["guarantee"]["epsilon"] == pytest.approx(1.0, rel=1e-6)


def test_simulate_per_site_calibration_reproduces_the_papers_claim(run, data, tmp_path):
    out = tmp_path / "sim"
    res = run("simulate", "--uncentred", *[data / f"site{s}.csv" for s in range(3)], "--calibrate-to", "per-site", "--epsilon", 1,
              "--delta", "1e-6", "--row-norm", 3, "--seed", 0, "--out", out, "--no-figures")
    assert res.returncode == 0, res.stderr
    proto = report(out)["protocol"]
    assert proto["claimed"]["epsilon"] == pytest.approx(1.0) and proto["guarantee"]["epsilon"] == pytest.approx(
        1.245, abs=1e-3)


@pytest.mark.parametrize("analysis, extra, estimate", [
    ("ridge", ["--alpha", "0.1", "--draws", "0"], "precision.npy"),
    ("select", ["--target", "y", "--R", "3", "--phi", "50"], "selected.csv"),
    ("regress", ["--target", "y", "--n-iter", "3", "--w-max", "5", "--response-bound", "3"], "coefficients.csv"),
    ("tensor-mog", ["--sigma2", "0.01", "--n-components", "2"], "components.npy"),
    ("tensor-stm", ["--vocabulary-size", "8", "--n-components", "2"], "components.npy"),
])
def test_simulate_runs_every_analysis(run, data, tmp_path, analysis, extra, estimate):
    out = tmp_path / "sim"
    if analysis == "tensor-stm":
        files = []
        for k, part in enumerate(np.array_split(np.load(data / "docs.npy"), 3)):
            np.save(tmp_path / f"docs{k}.npy", part)
            files.append(tmp_path / f"docs{k}.npy")
    elif analysis == "tensor-mog":
        files = []
        for k, part in enumerate(np.array_split(np.load(data / "mog.npy"), 3)):
            np.save(tmp_path / f"mog{k}.npy", part)
            files.append(tmp_path / f"mog{k}.npy")
    else:
        X = np.loadtxt(data / "xy.csv", delimiter=",", skiprows=1)
        files = []
        for k, part in enumerate(np.array_split(X, 3)):
            write_csv(tmp_path / f"xy{k}.csv", ["a", "b", "c", "d", "y"], part)
            files.append(tmp_path / f"xy{k}.csv")
    res = run("simulate", "--uncentred", *files, "--analysis", analysis, *extra, "--epsilon", 1, "--delta", "1e-6", "--row-norm",
              3, "--seed", 0, "--out", out, "--no-figures")
    assert res.returncode == 0, res.stderr
    assert (out / estimate).is_file()
    rep = report(out)
    assert rep["privacy"]["guarantee_detail"]["epsilon"] == pytest.approx(1.0, rel=1e-6)
    assert rep["analysis"]["protocol"] == "cape"


def test_simulate_refuses_one_file_twice_by_path_or_content(run, data, tmp_path):
    """Issue 16: two sites holding the same people break every guarantee that assumes disjoint sites."""
    args = ["--epsilon", 1, "--delta", "1e-6", "--row-norm", 3, "--out", tmp_path / "o"]
    twin = tmp_path / "copy.csv"
    twin.write_bytes((data / "site0.csv").read_bytes())
    for files in ([data / "site0.csv", f"{data}/./site0.csv", data / "site1.csv"], [data / "site0.csv", twin]):
        assert_one_line_error(run("simulate", *files, *args), "same")


# -- refusals: exit 2, one line, nothing written --------------------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["pca", "{d}/x.npy", "--n-components", "2", "--epsilon", "1", "--delta", "1e-6", "--uncentred", "--center", "0"],
     ["not both"]),
    (["pca", "{d}/x.npy", "--n-components", "9", *GAUSS, "--row-norm", "1"], ["--n-components must be in [1, 4]"]),
    (["regress", "{d}/xy.csv", *GAUSS, "--row-norm", "3", "--response-bound", "3", "--n-iter", "3", "--w-max", "5"],
     ["--target is required"]),
    (["regress", "{d}/xy.csv", "--target", "y", *GAUSS, "--response-bound", "3", "--n-iter", "3", "--w-max", "5",
      "--search-range", "10,1"], ["--search-range"]),
    (["select", "{d}/xy.csv", "--epsilon", "1", "--bounds", "1", "--response-bound", "3", "--R", "2"],
     ["--target is required"]),
    (["select", "{d}/xy.csv", "--target", "y", "--epsilon", "1", "--response-bound", "3", "--R", "2",
      "--bound-share", "0.5", "--search-range", "1,1"], ["--search-range"]),
    (["select", "{d}/xy.csv", "--target", "nope", "--epsilon", "1", "--bounds", "1", "--response-bound", "3", "--R", "2"],
     ["nope"]),
    (["simulate", "{d}/site0.csv", "{d}/site1.csv", "--protocol", "carrier-pigeon", *GAUSS, "--row-norm", "3"],
     ["unknown --protocol", "cape"]),
    (["simulate", "{d}/site0.csv", "{d}/bad_site.csv", *GAUSS, "--row-norm", "3"], ["bad_site.csv", "line 3"]),
    (["simulate", "{d}/site0.csv", "{d}/other_cols.csv", *GAUSS, "--row-norm", "3"], ["same columns"]),
    (["simulate", "{d}/site0.csv", "{d}/site1.csv", *GAUSS, "--protocol", "dpdispca", "--analysis", "pca",
      "--n-components", "1"], ["--center private (the default)", "--uncentred"]),
    (["simulate", "{d}/site0.csv", "{d}/site1.csv", *GAUSS, "--center", "0", "--uncentred"], ["--uncentred"]),
    (["simulate", "{d}/site0.csv", "--protocol", "cape", *GAUSS, "--row-norm", "3"], ["at least 2 site files"]),
])
def test_refusals_are_one_line_exit_2(run, data, tmp_path, args, words):
    out = tmp_path / "out"
    res = run(*[a.format(d=data) for a in args], "--out", out)
    assert_one_line_error(res, *words)
    assert not out.exists() and no_debris(tmp_path)


@pytest.mark.parametrize("command", ["pca", "select"])
def test_interrupted_write_leaves_nothing(data, tmp_path, monkeypatch, capsys, command):
    out = tmp_path / "res"
    monkeypatch.setattr(_output.ResultsDir, "save_json",
                        lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    args = {"pca": ["pca", data / "x.npy", "--n-components", 2, *GAUSS, "--row-norm", 3],
            "select": ["select", data / "xy.csv", "--target", "y", "--epsilon", 1, "--bounds", 1,
                       "--response-bound", 3, "--R", 2]}[command]
    assert main([str(a) for a in args] + ["--out", str(out)]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert not out.exists() and no_debris(tmp_path)


def test_help_lists_the_new_commands(run):
    res = run("--help")
    assert res.returncode == 0
    for name in ("pca", "tensor", "regress", "select", "simulate"):
        assert name in res.stdout
        sub = run(name, "--help")
        assert sub.returncode == 0 and "examples:" in sub.stdout


def test_secure_flag_gives_exact_discrete_noise(tmp_path):
    import json

    from dpmoments.cli import main

    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(0).normal(size=(200, 3)) / 3)
    out = tmp_path / "out"
    assert main(["covariance", str(data), "--uncentred", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--secure",
                 "--out", str(out), "--no-figures", "--quiet"]) == 0
    report = json.loads((out / "privacy_report.json").read_text())
    assert report["release"]["mechanism"] == "discrete-gaussian" and report["release"]["secure"] is True
    assert main(["covariance", str(data), "--uncentred", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--secure",
                 "--seed", "3", "--out", str(tmp_path / "o2"), "--quiet"]) == 2
