"""Figures (layer 4): each function takes arrays and returns a matplotlib ``Axes``.

Nothing here touches data or spends privacy: the functions draw matrices,
curves and spectra that were already computed (and, for anything shown in
public, already released). They use matplotlib's non-interactive Agg backend
unless a backend was chosen before, and are never imported by the package
root (``import dpmoments`` does not import matplotlib). New figures are made
as ``matplotlib.figure.Figure`` objects, not through ``pyplot``: they render
with the Agg canvas (PNG, SVG) whatever the interactive backend, leave no
global state behind, and are freed when dropped. Pass ``ax=`` to draw into a
figure of your own (e.g. in a notebook).

* :func:`plot_network`: the support of a precision matrix as a graph on a
  circle (no networkx), optionally coloured against a truth graph;
* :func:`plot_roc`: ROC curves of support recovery;
* :func:`plot_spectrum`: eigenvalues against a noise floor;
* :func:`plot_privacy_utility`: error (or any utility) against epsilon;
* :func:`plot_matrix`: a heat map of a square matrix.

>>> import numpy as np
>>> from dpmoments.plots import plot_network
>>> theta = np.array([[1.0, 0.4, 0.0], [0.4, 1.0, 0.0], [0.0, 0.0, 1.0]])
>>> ax = plot_network(theta, labels=["a", "b", "c"])
>>> len(ax.lines)
1
"""

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

__all__ = ["plot_network", "plot_roc", "plot_spectrum", "plot_privacy_utility", "plot_matrix", "new_axes"]

_COLOURS = {"true": "#1b7837", "false": "#d6604d", "missed": "#bababa", "edge": "#2166ac"}


def new_axes(ax=None, figsize=(5.0, 5.0)):
    """``ax`` itself, or the axes of a new figure of size ``figsize``."""
    if ax is not None:
        return ax
    return Figure(figsize=figsize, layout="constrained").subplots()


def _square(A, name):
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"'{name}' must be a non-empty square matrix; got shape {A.shape}.")
    return A


def _edges(A, tol):
    """Unordered pairs i < j with |A_ij| or |A_ji| above ``tol``."""
    big = np.abs(A) > tol
    i, j = np.triu_indices(A.shape[0], k=1)
    keep = big[i, j] | big[j, i]
    return list(zip(i[keep].tolist(), j[keep].tolist()))


def plot_network(precision, labels=None, *, truth=None, tol=1e-8, title=None, ax=None):
    """Draw the off-diagonal support of ``precision`` as a graph on a circle.

    Parameters
    ----------
    precision : array-like of shape (d, d)
        A precision matrix (or any matrix whose non-zeros are edges).
    labels : sequence of str, optional
        Node names (default ``0 .. d-1``).
    truth : array-like of shape (d, d), optional
        A reference graph (adjacency or precision). Recovered edges in it are
        drawn green, edges not in it red, and its edges that were missed as
        dashed grey.
    tol : float, default=1e-8
        Entries with absolute value at most ``tol`` are not edges.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    A = _square(precision, "precision")
    d = A.shape[0]
    labels = [str(k) for k in range(d)] if labels is None else [str(s) for s in labels]
    if len(labels) != d:
        raise ValueError(f"'labels' must have {d} entries; got {len(labels)}.")
    ax = new_axes(ax)
    angle = np.pi / 2 - 2 * np.pi * np.arange(d) / d
    xy = np.column_stack([np.cos(angle), np.sin(angle)])
    found = set(_edges(A, tol))
    true = None if truth is None else set(_edges(_square(truth, "truth"), 0.0))
    width = 1.0 + 3.0 * _strength(A, found)
    for (i, j), w in zip(sorted(found), width):
        colour = _COLOURS["edge"] if true is None else _COLOURS["true" if (i, j) in true else "false"]
        ax.plot(*xy[[i, j]].T, color=colour, lw=w, alpha=0.85, zorder=1)
    for i, j in sorted((true or set()) - found):
        ax.plot(*xy[[i, j]].T, color=_COLOURS["missed"], lw=1.0, ls="--", zorder=0)
    ax.scatter(*xy.T, s=500, c="white", edgecolors="black", zorder=2)
    for (x, y), name in zip(xy, labels):
        ax.annotate(name, (1.18 * x, 1.18 * y), ha="center", va="center", fontsize=9)
    ax.set_xlim(-1.45, 1.45)
    ax.set_ylim(-1.45, 1.45)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title or f"{len(found)} edges")
    if true is not None:
        _network_legend(ax)
    return ax


def _strength(A, edges):
    """Edge weights in [0, 1]: absolute partial correlations, scaled by the largest."""
    if not edges:
        return np.zeros(0)
    diag = np.sqrt(np.abs(np.diag(A)))
    diag[diag == 0] = 1.0
    w = np.array([abs(A[i, j]) / (diag[i] * diag[j]) for i, j in sorted(edges)])
    return w / w.max() if w.max() > 0 else w


def _network_legend(ax):
    handles = [Line2D([], [], color=_COLOURS["true"], lw=2, label="in the reference"),
               Line2D([], [], color=_COLOURS["false"], lw=2, label="not in the reference"),
               Line2D([], [], color=_COLOURS["missed"], lw=1, ls="--", label="missed")]
    ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize=7, frameon=False)


def plot_roc(curves, *, points=None, title=None, ax=None):
    """Draw ROC curves (false- against true-positive rate).

    Parameters
    ----------
    curves : dict of str -> (fpr, tpr)
        One curve per label, each a pair of arrays sorted by ``fpr``.
    points : dict of str -> (fpr, tpr), optional
        Single operating points (e.g. the chosen penalty) drawn as markers.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    ax = new_axes(ax)
    for label, (fpr, tpr) in curves.items():
        ax.plot(np.asarray(fpr), np.asarray(tpr), marker=".", label=label)
    for label, (fpr, tpr) in (points or {}).items():
        ax.plot([fpr], [tpr], marker="o", ms=8, ls="none", label=label)
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("false-positive rate")
    ax.set_ylabel("true-positive rate")
    ax.set_title(title or "support recovery")
    ax.legend(fontsize=8, loc="lower right")
    return ax


def plot_spectrum(eigenvalues, noise_floor, *, reference=None, title=None, ax=None):
    """Draw eigenvalues (largest first) against a noise floor.

    Parameters
    ----------
    eigenvalues : array-like of shape (d,)
        Eigenvalues of the released matrix.
    noise_floor : float
        The level below which eigenvalues cannot be told from noise (e.g. the
        expected spectral norm of the noise matrix).
    reference : array-like of shape (d,), optional
        Another spectrum to draw beside it (e.g. the non-private one).
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    ax = new_axes(ax, figsize=(6.0, 4.0))
    w = np.sort(np.asarray(eigenvalues, dtype=np.float64))[::-1]
    k = np.arange(1, w.size + 1)
    ax.plot(k, w, marker="o", label="released")
    if reference is not None:
        ax.plot(k, np.sort(np.asarray(reference, dtype=np.float64))[::-1], marker="x", ls="--", label="reference")
    ax.axhline(float(noise_floor), color="#d6604d", ls=":", label="noise floor")
    ax.set_xlabel("component")
    ax.set_ylabel("eigenvalue")
    ax.set_title(title or "spectrum")
    ax.legend(fontsize=8)
    return ax


def plot_privacy_utility(epsilons, values, *, label="error", chosen=None, title=None, ax=None):
    """Draw a utility (or error) against epsilon on a log axis.

    Parameters
    ----------
    epsilons : array-like of shape (m,)
    values : array-like of shape (m,), or dict of str -> array-like of shape (m,)
        One curve, or one curve per label.
    label : str, default="error"
        The y-axis label.
    chosen : float, optional
        The epsilon actually spent, marked by a vertical line.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    ax = new_axes(ax, figsize=(6.0, 4.0))
    eps = np.asarray(epsilons, dtype=np.float64)
    curves = values if isinstance(values, dict) else {label: values}
    for name, v in curves.items():
        ax.plot(eps, np.asarray(v, dtype=np.float64), marker="o", label=name)
    if chosen is not None:
        ax.axvline(float(chosen), color="grey", ls=":", label=f"epsilon = {chosen:g}")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel(label)
    ax.set_title(title or "privacy-utility")
    ax.legend(fontsize=8)
    return ax


def plot_matrix(matrix, labels=None, *, title=None, ax=None):
    """Draw a square matrix as a heat map (symmetric colour scale around 0)."""
    A = _square(matrix, "matrix")
    ax = new_axes(ax, figsize=(5.5, 5.0))
    v = float(np.max(np.abs(A))) or 1.0
    im = ax.imshow(A, cmap="RdBu_r", vmin=-v, vmax=v)
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    if labels is not None:
        ticks = np.arange(A.shape[0])
        ax.set_xticks(ticks, [str(s) for s in labels], rotation=90, fontsize=7)
        ax.set_yticks(ticks, [str(s) for s in labels], fontsize=7)
    ax.set_title(title or "matrix")
    return ax
