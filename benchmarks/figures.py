"""Time to write each command-line figure at large d, against writing the matrix itself as ``.npy``.

Every figure is timed as the command line writes it: built by ``dpmoments.plots``, then saved as
PNG (150 dpi) and SVG. The reference, timed in the same run, is ``np.save`` of the d x d matrix the
figure shows: the floor a command pays anyway to hand the result over. Beyond 60 nodes the network
is a heat map, and beyond 500 rows every heat map shows block aggregates; the threshold ROC (ridge
precision with ``--truth``) is built from one sort of the d(d-1)/2 pairs and drawn through at most
~2000 of its points. Target (issue 18): seconds, not minutes, at d = 5000.
"""

import tempfile
import time
from pathlib import Path

import numpy as np

from dpmoments import plots
from dpmoments.cli.present.precision import _threshold_roc

from .timing import Table, log, ratio


def _matrices(d, rng):
    """A dense covariance (40 factors), a sparse signed graph (a chain and 4d chords) and its truth."""
    F = rng.standard_normal((d, 40))
    C = F @ F.T / 40 + np.eye(d)
    W = np.zeros((d, d))
    k = np.arange(d - 1)
    W[k, k + 1] = -0.4
    i, j = rng.integers(0, d, (2, 4 * d))
    W[i, j] = rng.uniform(-0.3, 0.3, 4 * d)
    W = W + W.T
    truth = np.zeros((d, d), dtype=bool)
    truth[k, k + 1] = truth[k + 1, k] = True
    return C, W, truth


def _write(ax, folder, stem):
    ax.figure.savefig(folder / f"{stem}.png", dpi=150)
    ax.figure.savefig(folder / f"{stem}.svg")


def _seconds(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(quick=False):
    """Seconds to build and write each figure at d = 200, 1000, 5000 (quick: 200, 1000)."""
    sizes = (200, 1000) if quick else (200, 1000, 5000)
    table = Table("figures written as the command line writes them (PNG at 150 dpi + SVG)",
                  ["d", "figure", "seconds", "vs np.save of the matrix", "PNG + SVG size"])
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for d in sizes:
            log(f"d = {d}")
            C, W, truth = _matrices(d, rng)
            floor = _seconds(lambda: np.save(folder / "matrix.npy", C))
            names = [f"v{k}" for k in range(d)]
            eig = np.linalg.eigvalsh(C[:2000, :2000])[::-1]
            figures = {
                "covariance": lambda: plots.plot_matrix(C, names, title="covariance"),
                "network": lambda: plots.plot_network(W, names, title="network"),
                "network, --truth": lambda: plots.plot_network(W, names, truth=truth, title="network"),
                "threshold ROC, --truth": lambda: plots.plot_roc({"threshold path": _threshold_roc(W, truth)}),
                "spectrum": lambda: plots.plot_spectrum(eig, 1.0, title="spectrum"),
            }
            for stem, make in figures.items():
                seconds = _seconds(lambda: _write(make(), folder, "figure"))
                size = sum((folder / f"figure.{ext}").stat().st_size for ext in ("png", "svg"))
                table.rows.append([d, stem, f"{seconds:.2f}", ratio(seconds, floor), f"{size / 1e3:.0f} kB"])
    table.notes.append("One timing per cell (a figure is written once per run); np.save of the float64 d x d "
                       "matrix is the reference, timed once in the same run.")
    table.notes.append("The spectrum shows at most 2000 eigenvalues, as `dpmoments pca` does beyond d = 2000.")
    return [table]
