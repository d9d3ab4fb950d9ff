"""The command line says which relation holds, never the exact n under add-remove, and no false "secure" (issue 12)."""

import json

import numpy as np
import pytest

from .helpers import report

N = 500


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(N, 3)) / 2
    y = X @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.normal(size=N)
    np.save(d / "x.npy", X)
    (d / "xy.csv").write_text("a,b,c,y\n" + "\n".join(",".join(f"{v:.6f}" for v in (*r, t)) for r, t in zip(X, y)))
    return d


PRIVACY = ("--epsilon", "1", "--delta", "1e-6", "--row-norm", "3", "--seed", "0", "--no-fingerprint")


def test_help_lists_the_three_relations_with_their_meaning(run):
    res = run("covariance", "--help")
    text = " ".join(res.stdout.split())
    for phrase in ("replace-one (default): one row replaced by any other, n public",
                   "zero-out: one row replaced by the zero row, n public",
                   "add-remove: one row added or removed, n private", "--count-share"):
        assert phrase in text, phrase


def test_add_remove_report_and_console_never_state_the_exact_count(run, data, tmp_path):
    out = tmp_path / "cov"
    res = run("covariance", data / "x.npy", *PRIVACY, "--uncentred", "--neighbours", "add-remove", "--out", out, "--no-figures")
    assert res.returncode == 0, res.stderr
    rep = report(out)
    p, rel = rep["privacy"], rep["release"]
    n = rel["n"]
    assert n != N and rep["input"]["shape"] == [n, 3] and "noisy" in rep["input"]["shape_note"]
    assert p["neighbouring_relation"] == "add-remove" and "added or removed" in p["neighbouring_relation_meaning"]
    assert p["n_public"] is False and "noisy row count" in p["n_note"] and f"{N} rows" not in json.dumps(rep)
    assert rel["count"]["share"] == 0.05 and rel["count"]["noise_scale"] > 0
    assert p["guarantee"] == "(1, 1e-06)-DP"
    assert f"about {n} rows (noisy count)" in res.stdout and f"{N} rows" not in res.stdout
    assert "neighbouring_relation add-remove (one row added or removed" in res.stdout and "noisy count" in res.stdout


def test_count_share_flag(run, data, tmp_path):
    out = tmp_path / "cov"
    res = run("covariance", data / "x.npy", *PRIVACY, "--uncentred", "--neighbours", "add-remove", "--count-share", "0.2",
              "--out", out, "--no-figures", "-q")
    assert res.returncode == 0, res.stderr
    assert report(out)["release"]["count"]["share"] == 0.2
    bad = run("covariance", data / "x.npy", *PRIVACY, "--uncentred", "--count-share", "1", "--out", tmp_path / "x")
    assert bad.returncode == 2 and "--count-share" in bad.stderr


@pytest.mark.parametrize("neighbours", ["replace-one", "zero-out"])
def test_public_n_relations_say_so(run, data, tmp_path, neighbours):
    out = tmp_path / "pca"
    res = run("pca", data / "x.npy", *PRIVACY, "--neighbours", neighbours, "--n-components", "1", "--out", out,
              "--no-figures")
    assert res.returncode == 0, res.stderr
    p = report(out)["privacy"]
    assert p["neighbouring_relation"] == neighbours and p["n_public"] is True and f"n = {N} rows" in p["n_note"]
    assert f"neighbouring_relation {neighbours} (one row replaced by" in res.stdout


def test_regress_and_select_do_not_call_float_noise_secure(run, data, tmp_path):
    common = ("--target", "y", "--response-bound", "3", "--no-fingerprint")
    res = run("regress", data / "xy.csv", *common, "--epsilon", "1", "--delta", "1e-6", "--row-norm", "3",
              "--n-iter", "2", "--w-max", "5", "--out", tmp_path / "reg")
    assert res.returncode == 0, res.stderr
    p = report(tmp_path / "reg")["privacy"]
    assert p["randomness"] == "os-entropy" and p["secure_randomness"] is False
    assert p["neighbouring_relation"] == "replace-one" and p["n_public"] is True
    assert "randomness os-entropy (floating-point noise: private as stated" in res.stdout
    assert "--secure draws exact discrete noise" in res.stdout and "secure randomness" not in res.stdout
    assert "floating-point noise" in report(tmp_path / "reg")["privacy"]["randomness_note"]
    res = run("select", data / "xy.csv", *common, "--epsilon", "1", "--bounds", "2", "--R", "3",
              "--out", tmp_path / "sel")
    assert res.returncode == 0, res.stderr
    assert report(tmp_path / "sel")["privacy"]["secure_randomness"] is False
    assert "floating-point noise" in res.stdout and "neighbouring_relation replace-one (one row replaced" in res.stdout


def test_secure_noise_is_reported_secure(run, data, tmp_path):
    out = tmp_path / "sec"
    args = [a for a in PRIVACY if a not in ("--seed", "0")]
    res = run("covariance", data / "x.npy", *args, "--uncentred", "--secure", "--neighbours", "add-remove", "--out", out,
              "--no-figures", "-q")
    assert res.returncode == 0, res.stderr
    p = report(out)["privacy"]
    assert p["secure_randomness"] is True and p["n_public"] is False
    assert "exact discrete noise" in p["randomness_note"] and "floating-point" not in p["randomness_note"]


def test_demo_headline_is_the_composed_guarantee(run, tmp_path):
    out = tmp_path / "demo"
    res = run("demo", "--out", out, "--seed", "0", "--no-figures")
    assert res.returncode == 0, res.stderr
    p = report(out)["privacy"]
    # Not the second release's (0.8, 8e-07): both releases, composed.
    assert p["guarantee"] == "(1, 1e-06)-DP" and p["parts"] == {"mean": "(0.2, 2e-07)-DP",
                                                                "second_moment": "(0.8, 8e-07)-DP"}
    assert "privacy: (1, 1e-06)-DP in all" in res.stdout


@pytest.mark.parametrize("neighbours", ["zero-out", "add-remove"])
def test_audit_command_models_each_relation(run, tmp_path, neighbours):
    base = ["audit", "--epsilon", "1", "--delta", "1e-3", "--dim", "2", "--seed", "1", "--n-samples", "100000",
            "--neighbours", neighbours]
    res = run(*base, "--out", tmp_path / "a")
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert summary["neighbouring_relation"] == neighbours and summary["epsilon_lower_bound"] <= 1.0
    assert (summary["count_noise_scale"] is None) == (neighbours == "zero-out")
    assert run(*base, "--noise-factor", "0.5", "-q").returncode == 3  # the negative control is refuted


def test_audit_pair_must_be_zero_out_neighbours(run, tmp_path):
    A, B = np.eye(3), np.eye(3)
    B[0] = [0.0, 0.5, 0.0]  # replaced, not zeroed
    np.save(tmp_path / "a.npy", A), np.save(tmp_path / "b.npy", B)
    res = run("audit", "--epsilon", "1", "--delta", "1e-3", "--neighbours", "zero-out", "--pair", tmp_path / "a.npy",
              tmp_path / "b.npy")
    assert res.returncode == 2 and "not neighbours under zero-out" in res.stderr
