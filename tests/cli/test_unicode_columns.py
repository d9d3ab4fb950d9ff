"""A header written in NFD and --columns / --target typed in NFC print identically: they are the same name."""

import unicodedata

import numpy as np

from dpmoments.data._chunking import resolve_columns
from dpmoments.data.tables import open_table

NFD, NFC = unicodedata.normalize("NFD", "café"), unicodedata.normalize("NFC", "café")


def _csv(path):
    X = np.random.default_rng(0).normal(size=(60, 3)) / 3
    path.write_text(f"{NFD},bmi,y\n" + "\n".join(",".join(f"{v:.6f}" for v in row) for row in X) + "\n")
    return path


def test_the_library_matches_names_in_either_form(tmp_path):
    assert NFD != NFC and NFD.encode() != NFC.encode()
    table = open_table(_csv(tmp_path / "d.csv"))
    assert resolve_columns([NFC, "bmi"], "y", table.names, len(table.names), "d.csv") == ([0, 1], 2)
    assert resolve_columns(None, NFC, table.names, len(table.names), "d.csv") == ([1, 2], 0)


def test_the_command_line_matches_names_in_either_form(run, tmp_path):
    data = _csv(tmp_path / "d.csv")
    common = ["--epsilon", "1", "--delta", "1e-6", "--row-norm", "2", "--seed", "0", "--no-figures", "--uncentred"]
    res = run("covariance", data, "--columns", f"{NFC},bmi", *common, "--out", tmp_path / "a")
    assert res.returncode == 0, res.stderr
    res = run("regress", data, "--target", NFC, "--response-bound", "2", "--n-iter", "2", "--w-max", "5",
              "--epsilon", "1", "--delta", "1e-6", "--row-norm", "2", "--seed", "0", "--no-figures",
              "--out", tmp_path / "b")
    assert res.returncode == 0, res.stderr
