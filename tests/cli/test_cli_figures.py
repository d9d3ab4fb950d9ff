"""The figures the commands draw: titles that name what is shown, and the large-d paths.

Each run is in process, with ``ResultsDir.save_figure`` recording the axes it is handed before
writing them as usual, so the tests read titles and images from the figure itself.
"""

import numpy as np
import pytest

from dpmoments.cli import _output
from dpmoments.cli.present.precision import _threshold_roc
from dpmoments.metrics import roc_curve

PRIVACY = ["--epsilon", "1", "--delta", "1e-6", "--seed", "0", "--no-fingerprint", "--quiet"]


@pytest.fixture
def drawn(monkeypatch):
    """{stem: axes} of every figure a command saves."""
    seen = {}
    save = _output.ResultsDir.save_figure

    def record(self, stem, ax):
        seen[stem] = ax
        save(self, stem, ax)

    monkeypatch.setattr(_output.ResultsDir, "save_figure", record)
    return seen


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("figures")
    X = np.random.default_rng(0).normal(size=(2000, 4)) / 2 + 3.0  # far from the origin: centring matters
    np.save(d / "x.npy", X)
    return d / "x.npy"


def test_uncentred_second_moment_is_not_called_a_covariance(run, drawn, small, tmp_path):
    res = run("covariance", small, *PRIVACY, "--row-norm", "8", "--uncentred", "--out", tmp_path / "a")
    assert res.returncode == 0, res.stderr
    title = drawn["covariance"].get_title()
    assert "second moment about the origin (uncentred)" in title and "covariance" not in title
    assert "(1, 1e-06)-DP" in title.replace("\n", " ")


def test_centred_release_is_titled_a_covariance(run, drawn, small, tmp_path):
    res = run("covariance", small, *PRIVACY, "--row-norm", "3", "--center", "3", "--out", tmp_path / "b")
    assert res.returncode == 0, res.stderr
    assert "covariance about the centre" in drawn["covariance"].get_title()
    assert "second moment" not in drawn["covariance"].get_title()


def test_wide_covariance_figure_shows_block_means(run, drawn, tmp_path):
    X = np.random.default_rng(1).normal(size=(1200, 600)) / 30
    np.save(tmp_path / "wide.npy", X)
    res = run("covariance", tmp_path / "wide.npy", *PRIVACY, "--row-norm", "1", "--uncentred", "--out", tmp_path / "c")
    assert res.returncode == 0, res.stderr
    ax = drawn["covariance"]
    assert ax.images[0].get_array().shape == (300, 300) and "block of 2 x 2" in ax.get_xlabel()
    assert (tmp_path / "c" / "covariance.png").stat().st_size > 10_000


def test_ridge_network_beyond_the_threshold_is_a_heatmap_with_its_roc(run, drawn, tmp_path):
    d = 70
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, d))
    X[:, 1:] += 0.5 * X[:, :-1]  # a chain
    truth = np.zeros((d, d))
    k = np.arange(d - 1)
    truth[k, k + 1] = truth[k + 1, k] = 1.0
    np.save(tmp_path / "chain.npy", X / 12)
    np.save(tmp_path / "truth.npy", truth)
    # epsilon 4: at 1 no entry of the released matrix stands out of the noise, and the graph is withheld
    res = run("precision", tmp_path / "chain.npy", *PRIVACY, "--epsilon", "4", "--row-norm", "1", "--method", "ridge",
              "--alpha", "0.01", "--truth", tmp_path / "truth.npy", "--out", tmp_path / "p")
    assert res.returncode == 0, res.stderr
    net, roc = drawn["network"], drawn["roc"]
    assert net.images and "lower triangle" in net.get_title()
    assert "AUC" in roc.get_title() and roc.lines[0].get_label() == "threshold path"


def test_threshold_roc_is_the_roc_of_every_thresholded_graph():
    rng = np.random.default_rng(3)
    for d in (5, 12, 25):
        P = np.round(rng.normal(size=(d, d)), 1)  # ties, which must enter together
        P = (P + P.T) / 2
        truth = rng.random((d, d)) < 0.2
        truth = truth | truth.T
        np.fill_diagonal(truth, False)
        A = np.abs(P)
        reference = roc_curve([A > t for t in np.unique(A[np.triu_indices(d, 1)])], truth)
        assert set(zip(*np.round(_threshold_roc(P, truth), 12))) == set(zip(*np.round(reference, 12)))


def test_the_svg_reuses_the_png_layout(tmp_path):
    """save_figure lays the figure out once (for the PNG) and freezes it: the SVG keeps those
    positions, the ones a fresh constrained layout gives, not matplotlib's unlaid defaults."""
    from dpmoments import plots

    A = np.random.default_rng(0).normal(size=(12, 12))  # 12 labels move the layout as 50 did (by 0.075)
    names = [f"column_{j}" for j in range(12)]

    def draw():
        return plots.plot_matrix(A + A.T, names, title="a labelled heat map", value_name="covariance")

    ax = draw()
    unlaid = ax.get_position().bounds
    with _output.ResultsDir(tmp_path / "res", figure_formats=("png", "svg")) as res:
        res.save_figure("m", ax)
    reference = draw()
    reference.figure.draw_without_rendering()  # one constrained layout, as for the PNG
    assert ax.figure.get_layout_engine().__class__.__name__ == "PlaceHolderLayoutEngine"
    assert np.allclose(ax.get_position().bounds, reference.get_position().bounds, atol=0.01)
    assert not np.allclose(ax.get_position().bounds, unlaid, atol=0.01)
    assert (tmp_path / "res" / "m.svg").stat().st_size > 0 and (tmp_path / "res" / "m.png").stat().st_size > 0


# "pdf": one format, and not the default png; "svg,png": several, in any order, and not pdf. Together they write
# every format (a third case, all three at once, took the same path).
@pytest.mark.parametrize("formats", ["pdf", "svg,png"])
def test_figures_are_written_in_the_formats_asked_for(tmp_path, formats):
    from dpmoments.cli import main

    data = tmp_path / "d.csv"
    np.savetxt(data, np.random.default_rng(0).normal(size=(200, 3)), delimiter=",", header="a,b,c", comments="")
    out = tmp_path / "out"
    assert main(["-q", "covariance", str(data), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "3",
                 "--center", "0", "--out", str(out), "--figure-format", formats]) == 0
    figures = [p for p in out.glob("covariance.*") if p.suffix in (".png", ".svg", ".pdf")]
    assert {p.suffix[1:] for p in figures} == set(formats.split(","))
    assert all(p.stat().st_size > 1000 for p in figures)


def test_the_figure_is_drawn_after_the_result_is_published(run, small, tmp_path, monkeypatch):
    # A figure that fails (a full disk; Ctrl-C takes the same path) leaves the result, its report and marker whole
    import errno
    import json

    def full_disk(self, stem, ax):
        assert (tmp_path / "r" / "covariance.npy").exists() and (tmp_path / "r" / "privacy_report.json").exists()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_output.ResultsDir, "save_figure", _output._writing(full_disk))
    res = run("covariance", small, *PRIVACY, "--row-norm", "3", "--center", "3", "--out", tmp_path / "r")
    assert res.returncode == 2 and "published before it, without the figures" in res.stderr, res.stderr
    marker = json.loads((tmp_path / "r" / _output.MARKER).read_text())
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == sorted(marker["files"] + [_output.MARKER])
    assert "covariance.png" not in marker["files"] and not list(tmp_path.glob(".dpmoments-tmp*"))
