"""Redraw the command line's figures shown in the docs (``docs/images/``) from the real commands.

    python docs/make_figures.py            # needs dpmoments installed (or PYTHONPATH=src)

Each figure is written by the same ``dpmoments`` command a user runs, on public synthetic data
(or the bundled Sachs data for the demo), with ``--seed`` so that the pictures are reproducible.
A seeded run is not a secure release; these are illustrations. Run it again whenever a figure's
code changes, look at every PNG at its written size, and commit them: the gallery
(``docs/gallery.md``) shows whatever this folder holds.
"""

import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from dpmoments.datasets import make_precision_data

IMAGES = pathlib.Path(__file__).resolve().parent / "images"
EPSILON_GRID = "0.1,0.3,1,3,10"


def _run(*args):
    subprocess.run([sys.executable, "-m", "dpmoments", *args, "--quiet"], check=True)


def _keep(results, name, target):
    shutil.copyfile(results / f"{name}.png", IMAGES / f"{target}.png")
    print(f"docs/images/{target}.png")


def _precision(tmp):
    # Su et al.'s Model 3 (AR(2)), p = 15; rows clipped to a public radius fixed from the model.
    # Its second moment is also the covariance figure's matrix.
    X, theta = make_precision_data(3, 20_000, 15, row_norm=6.0, rng=0)
    np.save(tmp / "ar2.npy", X)
    np.save(tmp / "ar2_truth.npy", (np.abs(theta) > 0).astype(float))
    out = tmp / "precision"
    _run("precision", str(tmp / "ar2.npy"), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "6",
         "--truth", str(tmp / "ar2_truth.npy"), "--seed", "0", "--out", str(out))
    _keep(out, "network", "cli_precision_network")
    _keep(out, "roc", "cli_precision_roc")
    out = tmp / "covariance"
    _run("covariance", str(tmp / "ar2.npy"), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "6",
         "--seed", "0", "--out", str(out))
    _keep(out, "covariance", "cli_covariance")


def _large(tmp):
    # The same model at p = 50 (a network with radial labels), p = 200 (beyond 60 nodes the network is a
    # heat map) and p = 600 (a covariance heat map of 2 x 2 block means); columns named like a gene panel.
    for p, n, radius in ((50, 20_000, 11.0), (200, 50_000, 22.0)):
        X, theta = make_precision_data(3, n, p, row_norm=radius, rng=0)
        data, truth = tmp / f"ar2_{p}.csv", tmp / f"ar2_{p}_truth.npy"
        header = ",".join(f"gene_{k:03d}" for k in range(p))
        np.savetxt(data, X, delimiter=",", header=header, comments="", fmt="%.6g")
        np.save(truth, (np.abs(theta) > 0).astype(float))
        out = tmp / f"precision_{p}"
        _run("precision", str(data), "--epsilon", "1", "--delta", "1e-6", "--row-norm", str(radius),
             "--truth", str(truth), "--seed", "0", "--out", str(out))
        _keep(out, "network", f"cli_precision_network_{p}")
    X, _ = make_precision_data(3, 40_000, 600, row_norm=35.0, rng=0)
    np.save(tmp / "ar2_600.npy", X)
    out = tmp / "covariance_600"
    _run("covariance", str(tmp / "ar2_600.npy"), "--center", "0", "--epsilon", "1", "--delta", "1e-6",
         "--row-norm", "35", "--seed", "0", "--out", str(out))
    _keep(out, "covariance", "cli_covariance_600")


def _pca(tmp):
    # Three strong directions in 30 dimensions, then the rest at noise level.
    rng = np.random.default_rng(0)
    scales = np.r_[3.0, 2.0, 1.5, np.full(27, 0.3)]
    X = rng.standard_normal((20_000, 30)) * scales
    np.save(tmp / "spiked.npy", X)
    out = tmp / "pca"
    _run("pca", str(tmp / "spiked.npy"), "--n-components", "3", "--epsilon", "1", "--delta", "1e-6",
         "--row-norm", "8", "--epsilon-grid", EPSILON_GRID, "--seed", "0", "--out", str(out))
    _keep(out, "spectrum", "cli_pca_spectrum")
    _keep(out, "privacy_utility", "cli_pca_privacy_utility")


def _demo(tmp):
    out = tmp / "demo"
    _run("demo", "--seed", "0", "--out", str(out))
    _keep(out, "network", "demo_network")


def main():
    IMAGES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = pathlib.Path(name)
        _demo(tmp)
        _precision(tmp)
        _large(tmp)
        _pca(tmp)


if __name__ == "__main__":
    main()
