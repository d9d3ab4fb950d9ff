"""Every command reads through the one reader, with the run's --delimiter and --no-header."""

import numpy as np

from .helpers import assert_one_line_error, report

X = np.random.default_rng(2).normal(size=(300, 3)) / 2


def _text(path, rows, header="a,b,c", sep=","):
    body = "\n".join(sep.join(f"{v:.6f}" for v in r) for r in rows) + "\n"
    path.write_text((header.replace(",", sep) + "\n" if header else "") + body)
    return path


def test_audit_pairs_follow_the_same_header_rule(run, tmp_path):
    A = np.zeros((50, 2))
    B = A.copy()
    B[0] = [0.6, 0.0]
    base = ["audit", "--epsilon", "1", "--delta", "1e-5", "--n-samples", "20000", "--seed", "0", "--row-norm", "1"]
    with_header = [_text(tmp_path / f"{k}.csv", M, "u,v") for k, M in (("a", A), ("b", B))]
    assert run(*base, "--pair", *with_header).returncode == 0
    bare = [_text(tmp_path / f"bare-{k}.csv", M, None) for k, M in (("a", A), ("b", B))]
    assert_one_line_error(run(*base, "--pair", *bare), "--no-header")
    assert run(*base, "--no-header", "--pair", *bare).returncode == 0


def test_simulate_reads_every_site_with_the_run_options(run, tmp_path):
    sites = [_text(tmp_path / f"s{k}.tsv", X[k * 150:(k + 1) * 150], None, "\t") for k in range(2)]
    res = run("simulate", "--uncentred", *sites, "--no-header", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "2", "--seed",
              "0", "--no-figures", "--out", tmp_path / "sim")
    assert res.returncode == 0, res.stderr
    assert report(tmp_path / "sim")["release"]["n"] == 300


def test_regress_target_by_name_in_a_semicolon_file(run, tmp_path):
    path = _text(tmp_path / "eu.csv", np.c_[X, X @ [1.0, 0.0, -1.0]], "a,b,c,y", ";")
    res = run("regress", path, "--delimiter", ";", "--target", "y", "--epsilon", "1", "--delta", "1e-6",
              "--row-norm", "2", "--response-bound", "2", "--n-iter", "2", "--w-max", "10", "--seed", "0",
              "--out", tmp_path / "fit")
    assert res.returncode == 0, res.stderr
    assert report(tmp_path / "fit")["input"]["delimiter"] == ";"
    assert_one_line_error(run("regress", path, "--target", "y", "--epsilon", "1", "--delta", "1e-6", "--row-norm",
                              "2", "--response-bound", "2", "--n-iter", "2", "--w-max", "10", "--out",
                              tmp_path / "x"), "--delimiter ';'")
