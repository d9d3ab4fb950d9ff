"""Every figure renders, keeps its text inside the picture, and shows what its conventions promise.

Rendered with the Agg canvas at the resolution the command line writes (150 dpi). "Cut off" is
tested on the pixels: a figure whose title, label or legend runs past the edge leaves ink on the
outermost rows or columns. Label overlap in the network is tested on the rotated boxes of the
rendered labels, not on their axis-aligned hulls (which overlap for any two tilted neighbours).
"""

import io

import matplotlib.image
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.colors import to_hex
from matplotlib.path import Path
from matplotlib.transforms import Affine2D

from dpmoments import plots

DPI = 150


def _png(ax):
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _svg(ax):
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="svg")
    return buf.getvalue()


def _ink_on_border(png, width=2):
    img = matplotlib.image.imread(io.BytesIO(png))[..., :3]
    border = np.concatenate([img[:width].reshape(-1, 3), img[-width:].reshape(-1, 3),
                             img[:, :width].reshape(-1, 3), img[:, -width:].reshape(-1, 3)])
    return int(np.sum(np.any(border < 0.8, axis=1)))


def _chain(d, rng, signs=True):
    """A ring of edges with random signs and strengths, plus a few chords: a partial-correlation pattern."""
    W = np.zeros((d, d))
    k = np.arange(d)
    W[k, (k + 1) % d] = (rng.choice([-1.0, 1.0], d) if signs else 1.0) * rng.uniform(0.05, 0.6, d)
    chords = rng.integers(0, d, size=(max(d // 4, 1), 2))
    W[chords[:, 0], chords[:, 1]] = rng.uniform(-0.4, 0.4, len(chords))
    W = W + W.T
    np.fill_diagonal(W, 1.0)
    return W


def _eig(rng):
    return np.r_[5.0, 2.0, rng.normal(0.1, 0.05, 8)]


NAMES = [f"protein_{k}" for k in range(11)]
FIGURES = {
    "network": lambda rng: plots.plot_network(_chain(11, rng), NAMES, title="a network"),
    "network+truth": lambda rng: plots.plot_network(_chain(11, rng), NAMES, truth=np.abs(_chain(11, rng)) > 0.3),
    "matrix": lambda rng: plots.plot_matrix(np.cov(rng.normal(size=(5, 200))), list("abcde"), title="a matrix",
                                            value_name="covariance"),
    "roc": lambda rng: plots.plot_roc({"path": ([0, 0.1, 0.5, 1], [0, 0.6, 0.9, 1])}, points={"chosen": (0.1, 0.6)}),
    "spectrum": lambda rng: plots.plot_spectrum(_eig(rng), 0.3, reference=_eig(rng), title="spectrum and noise floor"),
    "utility": lambda rng: plots.plot_privacy_utility(
        [0.1, 0.3, 1, 3, 10], [2.0, 0.7, 0.2, 0.07, 0.02], chosen=1.0,
        label="expected relative Frobenius error of the released matrix (from the calibration)",
        title="noise against epsilon, from the calibration alone, with no further access to the data"),
    "utility, two curves": lambda rng: plots.plot_privacy_utility([0.5, 1, 2], {"a": [3, 2, 1], "b": [2, 1, 0.5]}),
}


@pytest.mark.parametrize("name", list(FIGURES))
def test_each_figure_is_written_nonempty_and_nothing_is_cut_off(name):
    ax = FIGURES[name](np.random.default_rng(0))
    png, svg = _png(ax), _svg(ax)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
    assert svg.lstrip().startswith(b"<?xml") and len(svg) > 5_000
    assert _ink_on_border(png) == 0, f"{name}: text or lines reach the edge of the picture"


def _label_boxes(ax):
    """The rendered label of every node as a closed path in pixels: its box, rotated as drawn."""
    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = []
    for text in ax.texts:
        angle = text.get_rotation()
        text.set_rotation(0)
        box = text.get_window_extent(renderer)
        text.set_rotation(angle)
        corners = np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1], [box.x0, box.y0]])
        pivot = _pivot(text, box)
        boxes.append(Path(Affine2D().rotate_deg_around(*pivot, angle).transform(corners), closed=True))
    return boxes, ax.figure.bbox


def _pivot(text, box):
    """The point a label turns about with rotation_mode="anchor": its alignment point."""
    x = {"left": box.x0, "right": box.x1, "center": (box.x0 + box.x1) / 2}[text.get_horizontalalignment()]
    y = {"bottom": box.y0, "top": box.y1, "center": (box.y0 + box.y1) / 2,
         "baseline": box.y0, "center_baseline": (box.y0 + box.y1) / 2}[text.get_verticalalignment()]
    return x, y


@pytest.mark.parametrize("d", [3, 8, 12, 13, 30, 50, 60])
def test_network_labels_do_not_overlap_and_stay_in_the_figure(d):
    rng = np.random.default_rng(d)
    names = [f"gene_{k:03d}_expression_level" if k % 3 else f"g{k}" for k in range(d)]
    ax = plots.plot_network(_chain(d, rng), names, truth=np.abs(_chain(d, rng)) > 0.3, title=f"{d} genes")
    boxes, frame = _label_boxes(ax)
    assert len(boxes) == d
    for k, a in enumerate(boxes):
        corners = a.vertices[:4]
        assert np.all(corners >= frame.p0 - 1) and np.all(corners <= frame.p1 + 1), f"label {k} leaves the figure"
        for m in range(k + 1, d):
            assert not a.intersects_path(boxes[m], filled=True), f"labels {k} and {m} overlap at d = {d}"
    assert _ink_on_border(_png(ax)) == 0


def test_network_labels_clear_the_title_and_the_legend():
    d = 50
    ax = plots.plot_network(_chain(d, np.random.default_rng(1)), [f"variable_{k}" for k in range(d)],
                            truth=np.eye(d), title="fifty variables")
    boxes, _ = _label_boxes(ax)
    renderer = FigureCanvasAgg(ax.figure).get_renderer()
    for other in (ax.title, ax.get_legend()):
        box = other.get_window_extent(renderer)
        rect = Path([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1], [box.x0, box.y0]])
        assert not any(b.intersects_path(rect, filled=True) for b in boxes)


def test_network_edges_show_their_sign_in_colour_and_the_legend_says_so():
    W = np.zeros((4, 4))
    W[0, 1] = W[1, 0] = 0.5
    W[2, 3] = W[3, 2] = -0.2
    ax = plots.plot_network(W)
    (edges,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    colours = {to_hex(c) for c in edges.get_colors()}
    assert colours == {plots.POSITIVE.lower(), plots.NEGATIVE.lower()}
    widths = edges.get_linewidths()  # drawn weakest first: the -0.2 edge, then the 0.5 edge
    assert widths[0] < widths[1]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["positive", "negative"]
    assert "partial correlation" in ax.get_legend().get_title().get_text()


def test_network_against_a_reference_marks_false_and_missed_edges():
    W = np.zeros((4, 4))
    W[0, 1] = W[1, 0] = 0.5  # in the reference
    W[2, 3] = W[3, 2] = 0.3  # not in it
    truth = np.zeros((4, 4), dtype=bool)
    truth[0, 1] = truth[1, 0] = truth[0, 2] = truth[2, 0] = True  # 0-2 is missed
    ax = plots.plot_network(W, truth=truth)
    found, missed = sorted((c for c in ax.collections if isinstance(c, LineCollection)),
                           key=lambda c: len(c.get_segments()), reverse=True)[:2]
    assert len(found.get_segments()) == 2 and len(missed.get_segments()) == 1
    styles = [s[1] for s in found.get_linestyles()]
    assert sum(s is None for s in styles) == 1  # one solid (in the reference), one dashed
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"in the reference", "not in the reference", "missed (reference only)"} <= set(labels)


def test_network_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="'labels' must have 3 entries"):
        plots.plot_network(np.eye(3), ["a"])
    with pytest.raises(ValueError, match="'truth' must have the shape"):
        plots.plot_network(np.eye(3), truth=np.eye(4))
    with pytest.raises(ValueError, match="'weights' must be a non-empty square matrix"):
        plots.plot_network(np.ones((2, 3)))


# -- large d ------------------------------------------------------------------------------------------------
def test_network_beyond_the_threshold_is_a_heatmap_with_the_reference_below():
    d = plots.NETWORK_MAX_NODES + 1
    W = _chain(d, np.random.default_rng(2))
    ax = plots.plot_network(W, truth=np.abs(W) > 0.3)
    assert not [c for c in ax.collections if isinstance(c, LineCollection)] and len(ax.images) == 2
    assert "lower triangle" in ax.get_title()
    assert _ink_on_border(_png(ax)) == 0


def test_large_network_keeps_an_isolated_edge_and_its_sign_when_downsampled():
    d = 1201  # blocks of 3, the last one of a single row
    W = np.eye(d)  # the diagonal is no edge, even when it shares a block with one
    W[10, 1150] = W[1150, 10] = -0.05
    W[1200, 0] = 0.9  # given on one side only: still an edge, drawn on the upper side
    ax = plots.plot_network(W, truth=W != 0)
    estimate = ax.images[-1].get_array()
    assert estimate.shape == (401, 401)
    assert estimate[10 // 3, 1150 // 3] == pytest.approx(-0.05)
    assert estimate[0, 400] == pytest.approx(0.9)
    assert estimate.count() == 2  # nothing else, not the diagonal
    assert ax.get_title().startswith("2 edges")
    assert "block of 3 x 3" in ax.get_xlabel()
    assert _ink_on_border(_png(ax)) == 0


def test_large_matrix_shows_block_means_and_indices():
    d = 1001
    A = np.random.default_rng(3).normal(size=(d, d))
    ax = plots.plot_matrix(A, [f"v{k}" for k in range(d)], title="a large matrix")
    image = ax.images[0].get_array()
    assert image.shape == (334, 334)
    assert image[0, 0] == pytest.approx(A[:3, :3].mean()) and image[-1, -1] == pytest.approx(A[-2:, -2:].mean())
    assert len(ax.get_xticklabels()) <= 10 and ax.get_xlabel().startswith("variable index")
    assert _ink_on_border(_png(ax)) == 0


def test_small_matrix_is_labelled_by_name():
    ax = plots.plot_matrix(np.eye(3), ["a", "b", "c"])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert ax.images[0].get_array().shape == (3, 3)


def test_long_spectrum_drops_markers():
    ax = plots.plot_spectrum(np.linspace(5, -1, 2000), 0.5)
    assert ax.lines[0].get_marker() in (None, "None", "")
    assert plots.plot_spectrum(np.arange(5.0), 0.5).lines[0].get_marker() == "o"


def test_utility_spanning_decades_is_drawn_log_log():
    assert plots.plot_privacy_utility([0.1, 1, 10], [10.0, 1.0, 0.1]).get_yscale() == "log"
    assert plots.plot_privacy_utility([0.1, 1, 10], [0.5, 0.4, 0.3]).get_yscale() == "linear"


def test_titles_do_not_break_inside_parentheses():
    ax = plots.plot_matrix(np.eye(2), title="private second moment about the origin (uncentred), (1, 1e-06)-DP")
    assert all("(1," not in line or "1e-06)" in line for line in ax.get_title().split("\n"))
