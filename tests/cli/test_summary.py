"""A fitted estimator presents itself: ``str(est.summary())`` is what the command prints for the same seeded fit."""

import numpy as np
import pytest

from dpmoments.estimators import PrivateCovariance, PrivateGraphicalLasso, PrivatePCA, PrivateRidgePrecision
from dpmoments.estimators.summary import Summary

PRIVACY = dict(epsilon=1.0, delta=1e-6, row_norm=6.0, rng=3)
CLI = ["--uncentred", "--row-norm", "6", "--epsilon", "1", "--delta", "1e-6", "--seed", "3"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 4))
    X[:, 1] += X[:, 0]
    path = tmp_path_factory.mktemp("summary") / "x.npy"
    np.save(path, X)
    return X, path


def _printed(run, *argv):
    """The command's console lines before its last one (``results in ...``, which names the directory)."""
    res = run(*argv)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1].startswith("results in ")
    return lines[:-1]


@pytest.mark.parametrize("command, options, est", [
    ("covariance", [], PrivateCovariance(center=None, **PRIVACY)),
    ("pca", ["--n-components", "2", "--draws", "0"], PrivatePCA(n_components=2, center=None, **PRIVACY)),
    ("precision", ["--alpha", "0.05", "--draws", "0"], PrivateGraphicalLasso(alpha=0.05, center=None, **PRIVACY)),
    ("precision", ["--method", "ridge", "--alpha", "0.05", "--draws", "0"],
     PrivateRidgePrecision(alpha=0.05, center=None, **PRIVACY)),
])
def test_summary_is_what_the_command_prints(run, data, tmp_path, command, options, est):
    X, path = data
    printed = _printed(run, command, path, *options, *CLI, "--out", tmp_path / "o")
    summary = est.fit(X).summary(data_name="x.npy")
    assert isinstance(summary, Summary)
    assert str(summary).splitlines() == printed
    assert printed[0] == summary.title and len(printed) > 3


def test_summary_names_and_notebook_display(data):
    X, _ = data
    est = PrivateCovariance(center=None, **PRIVACY).fit(X)
    named = est.summary(["a", "b", "c", "d"])
    assert named.title == "uncentred second moment of 2000 rows x 4 columns"
    assert any(line.startswith("  a ") for line in named.lines) and not any("x0" in line for line in named.lines)
    assert "guarantee (1, 1e-06)-DP" in str(named)
    html = named._repr_html_()
    assert html.startswith("<pre") and "a x b" in html and "&lt;" not in str(named) and repr(named) == str(named)


def test_a_withheld_graph_is_said_in_the_summary():
    X = np.random.default_rng(1).standard_normal((300, 5))  # no edges, and little data: all noise
    est = PrivateGraphicalLasso(alpha="ebic", center=None, n_draws=0, **PRIVACY).fit(X)
    text = str(est.summary())
    assert "the graph withheld (noise)" in est.summary().title
    assert "NOISE [no-edge-above-noise]" in text and "feature_a" not in text


def test_the_defaults_agree_private_choices_included(run, data, tmp_path):
    """With nothing but the budget (a private centre and row bound), the library and the command line make the
    same release and say the same, each private choice's line included."""
    X, path = data
    printed = _printed(run, "covariance", path, "--epsilon", "1", "--delta", "1e-6", "--seed", "3",
                       "--out", tmp_path / "o")
    summary = PrivateCovariance(epsilon=1.0, delta=1e-6, rng=3).fit(X).summary(data_name="x.npy")
    assert str(summary).splitlines() == printed
    assert any(line.startswith("private choices") for line in summary.lines)


def test_a_correlation_summary_is_what_the_command_prints(run, data, tmp_path):
    from dpmoments.estimators import PrivateCorrelation

    X, path = data
    printed = _printed(run, "correlation", path, "--center", "0", "--row-norm", "6", "--epsilon", "1", "--delta",
                       "1e-6", "--seed", "3", "--out", tmp_path / "o")
    est = PrivateCorrelation(epsilon=1.0, delta=1e-6, row_norm=6.0, center=[0.0] * 4, rng=3).fit(X)
    assert str(est.summary(data_name="x.npy")).splitlines() == printed
    assert printed[0] == "correlation of 2000 rows x 4 columns of x.npy"


def test_a_tensor_summary_is_what_the_command_prints(run, tmp_path):
    from dpmoments.estimators import PrivateTensorDecomposition

    rng = np.random.default_rng(5)
    X = np.concatenate([rng.normal(m, 0.1, (1500, 3)) for m in np.eye(3)])
    np.save(tmp_path / "mix.npy", X)
    printed = _printed(run, "tensor", tmp_path / "mix.npy", "--model", "mog", "--sigma2", "0.01", "--n-components", "3",
                       "--row-norm", "2", "--draws", "0", "--epsilon", "1", "--delta", "1e-6", "--seed", "3",
                       "--out", tmp_path / "o")
    est = PrivateTensorDecomposition(n_components=3, model="mog", sigma2=0.01, row_norm=2.0, epsilon=1.0, delta=1e-6,
                                     rng=3).fit(X)
    assert str(est.summary(data_name="mix.npy")).splitlines() == printed
    assert printed[0] == "mog: 3 means from 4500 rows of mix.npy" and "withheld" not in printed[1]
