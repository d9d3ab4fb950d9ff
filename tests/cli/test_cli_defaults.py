"""Every single-site analysis runs on real data in raw units with no bound, centre or scale of the user's own.

Breast-cancer data (scikit-learn, 569 rows, columns from ~0.05 to ~4000): each
command chooses what it needs privately by default and reports every share
it spent; explicit public values are used as given and spend nothing.
"""

import numpy as np
import pytest

from .helpers import assert_one_line_error, report

COLUMNS = "mean_radius,mean_texture,mean_smoothness,worst_area"
SEEDED = ["--seed", "0", "--no-figures", "--draws", "0"]
GAUSS = ["--epsilon", "8", "--delta", "1e-6", *SEEDED]
# regress and select split --bound-share over two 0.95-quantile draws: at 569 rows each needs epsilon ~0.9
WIDE = ["--bound-share", "0.3"]
# covariance, PCA and precision count the clipping bias in their intervals from a release of what clipping removed
COUNTED_PARTS = ["location", "location mean", "row_norm", "mean", "clipping excess", "clipped rows", "second moment"]


def _steps_folded(parts):
    """The labels, less the location's refinement steps (how many depends on n and epsilon: docs/bounds.md)."""
    return [p["label"] for p in parts if not p["label"].startswith("location refinement")]

DEFAULTS = {
    "precision": (["--edges", "3", *GAUSS], COUNTED_PARTS),
    "pca": (["--n-components", "1", *GAUSS], COUNTED_PARTS),
    "tensor": (["--model", "mog", "--sigma2", "1", "--n-components", "1", *GAUSS], ["row_norm", "moments"]),
    "regress": (["--target", "target", "--n-iter", "2", "--w-max", "10", *GAUSS, *WIDE],
                ["row_norm", "response_bound", "sampling (error budget)", "IRLS iterations"]),
    "select": (["--target", "target", "--R", "2", "--epsilon", "8", *SEEDED[:3], *WIDE],
               ["bounds", "response_bound", "selection"]),
}
PUBLIC = {
    "precision": ["--row-norm", "3000", "--uncentred"],
    "pca": ["--row-norm", "3000", "--center", "15,20,0.1,900,17"],
    "tensor": ["--row-norm", "3000"],
    "regress": ["--row-norm", "3000", "--response-bound", "1", "--sampling-share", "0"],  # sampling is a spend
    "select": ["--bounds", "3000", "--response-bound", "1"],
}


@pytest.fixture(scope="module")
def cancer(tmp_path_factory):
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    frame.columns = [c.replace(" ", "_") for c in frame.columns]
    path = tmp_path_factory.mktemp("cancer") / "cancer.csv"
    frame.to_csv(path, index=False)
    return path


def _columns(command):
    return COLUMNS if command in ("regress", "select") else COLUMNS + ",worst_radius"


@pytest.mark.parametrize("command", list(DEFAULTS))
def test_raw_units_need_nothing_and_every_share_is_reported(run, cancer, tmp_path, command):
    extra, parts = DEFAULTS[command]
    out = tmp_path / command
    res = run(command, cancer, "--columns", _columns(command), *extra, "--out", out)
    assert res.returncode == 0, res.stderr
    assert "private choices" in res.stdout and "composed: " in res.stdout
    choices = report(out)["private_choices"]
    assert _steps_folded(choices["parts"]) == parts
    assert sum(p["share"] for p in choices["parts"]) == pytest.approx(1.0)
    assert all(p["guarantee"] for p in choices["parts"])
    assert choices["composed_guarantee"] == ("8-DP" if command == "select" else "(8, 1e-06)-DP")


@pytest.mark.parametrize("command", list(PUBLIC))
def test_explicit_public_values_spend_nothing(run, cancer, tmp_path, command):
    extra = [a for a in DEFAULTS[command][0] if a not in WIDE]
    out = tmp_path / command
    res = run(command, cancer, "--columns", _columns(command), *extra, *PUBLIC[command], "--out", out)
    assert res.returncode == 0, res.stderr
    rep = report(out)
    assert "private_choices" not in rep and "private choices" not in res.stdout
    assert rep["privacy"]["entry_bound" if command == "select" else "row_norm"] == 3000


def test_public_bound_is_reproducible(run, cancer, tmp_path):
    """A fully public run is the old run: the same seed gives the same matrix, with no share drawn first."""
    args = ["precision", cancer, "--columns", _columns("precision"), *GAUSS, *PUBLIC["precision"]]
    assert run(*args, "--out", tmp_path / "a").returncode == 0
    assert run(*args, "--out", tmp_path / "b").returncode == 0
    assert np.array_equal(np.load(tmp_path / "a" / "precision.npy"), np.load(tmp_path / "b" / "precision.npy"))
    assert report(tmp_path / "a")["privacy"]["guarantee"] == "(8, 1e-06)-DP"


@pytest.mark.parametrize("command", ["precision", "pca"])
def test_a_public_bound_alone_still_centres_privately(run, cancer, tmp_path, command):
    extra, _ = DEFAULTS[command]
    out = tmp_path / command
    res = run(command, cancer, "--columns", _columns(command), *extra, "--row-norm", "3000", "--out", out)
    assert res.returncode == 0, res.stderr
    assert _steps_folded(report(out)["private_choices"]["parts"]) == ["location", "location mean", "mean",
                                                                      "second moment"]


@pytest.mark.parametrize("command", ["precision", "pca"])
def test_uncentred_and_a_centre_are_refused_together(run, cancer, tmp_path, command):
    extra, _ = DEFAULTS[command]
    res = run(command, cancer, *extra, "--uncentred", "--center", "0", "--out", tmp_path / "o")
    assert_one_line_error(res, "--center", "--uncentred")
    assert not (tmp_path / "o").exists()


def test_stm_still_refuses_a_row_bound(run, tmp_path):
    np.save(tmp_path / "docs.npy", np.zeros((50, 3)))
    res = run("tensor", tmp_path / "docs.npy", "--model", "stm", "--vocabulary-size", "4", "--n-components", "1",
              *GAUSS, "--row-norm", "auto", "--out", tmp_path / "o")
    assert_one_line_error(res, "--model stm takes no --row-norm")


@pytest.mark.parametrize("command", list(DEFAULTS))
def test_help_says_the_bound_defaults_to_auto(run, command):
    text = " ".join(run(command, "--help").stdout.split())
    assert "(default auto)" in text
    assert "required: --row-norm" not in text and "--row-norm is required" not in text
