"""Curves: ROC, spectrum against a noise floor, utility against epsilon."""

import numpy as np
from matplotlib.ticker import MaxNLocator, NullFormatter

from ._style import GREY, NEGATIVE, new_axes, set_labels


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
    ax = new_axes(ax, figsize=(5.0, 5.0))
    for label, (fpr, tpr) in curves.items():
        fpr, tpr = _thin(np.asarray(fpr, dtype=np.float64), np.asarray(tpr, dtype=np.float64))
        ax.plot(fpr, tpr, marker="." if fpr.size <= 60 else None, label=label)
    for label, (fpr, tpr) in (points or {}).items():
        ax.plot([fpr], [tpr], marker="o", ms=8, ls="none", label=label)
    ax.plot([0, 1], [0, 1], color=GREY, lw=0.8, ls=":")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    set_labels(ax, title or "support recovery", xlabel="false-positive rate", ylabel="true-positive rate")
    ax.legend(fontsize=8, loc="lower right")
    return ax


def _thin(x, y, steps=2000):
    """A monotone curve through at most ~``steps`` of its points.

    A point is kept each time x + y (0 to 2) enters a new bin of width 2 / ``steps``, so a drawn segment
    skips less than a pixel of the curve at the sizes drawn here (a threshold ROC at d = 5000 has 12.5
    million points, which take minutes to render and hundreds of MB of SVG)."""
    if x.size <= steps:
        return x, y
    progress = np.floor((x + y) * (steps / 2.0))
    keep = np.union1d(np.unique(progress, return_index=True)[1], [x.size - 1])
    return x[keep], y[keep]


def plot_spectrum(eigenvalues, noise_floor, *, reference=None, title=None, ax=None):
    """Draw eigenvalues (largest first) against a noise floor; the band below it is shaded.

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
    ax = new_axes(ax, figsize=(6.4, 4.2))
    w = np.sort(np.asarray(eigenvalues, dtype=np.float64))[::-1]
    k = np.arange(1, w.size + 1)
    marker = w.size <= 60  # beyond, markers merge into a band
    ax.plot(k, w, marker="o" if marker else None, ms=4, label="released")
    if reference is not None:
        ax.plot(k, np.sort(np.asarray(reference, dtype=np.float64))[::-1], marker="x" if marker else None, ls="--",
                label="reference")
    floor = float(noise_floor)
    ax.axhline(floor, color=NEGATIVE, ls=":", label="noise floor")
    low = min(ax.get_ylim()[0], floor)
    ax.axhspan(low, floor, color=GREY, alpha=0.2, lw=0, label="not distinguishable from noise")
    ax.set_ylim(bottom=low)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    set_labels(ax, title or "spectrum", xlabel="component", ylabel="eigenvalue")
    ax.legend(fontsize=8)
    return ax


def plot_privacy_utility(epsilons, values, *, label="error", chosen=None, title=None, ax=None):
    """Draw a utility (or error) against epsilon on a log axis (log-log when the values span a decade).

    Parameters
    ----------
    epsilons : array-like of shape (m,)
    values : array-like of shape (m,), or dict of str -> array-like of shape (m,)
        One curve, or one curve per label.
    label : str, default="error"
        The y-axis label (wrapped to the axes' height).
    chosen : float, optional
        The epsilon actually spent, marked by a vertical line.
    title : str, optional
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    ax = new_axes(ax, figsize=(6.4, 4.4))
    eps = np.asarray(epsilons, dtype=np.float64)
    curves = values if isinstance(values, dict) else {label: values}
    arrays = {name: np.asarray(v, dtype=np.float64) for name, v in curves.items()}
    for name, v in arrays.items():  # one curve is named by the y label alone
        ax.plot(eps, v, marker="o", label=name if len(arrays) > 1 else None)
    if chosen is not None:
        ax.axvline(float(chosen), color=GREY, ls=":", label=f"epsilon spent = {chosen:g}")
    ax.set_xscale("log")
    if eps.size <= 8:  # label the epsilons computed, not decades between them
        ax.set_xticks(eps, [f"{e:g}" for e in eps])
        ax.xaxis.set_minor_formatter(NullFormatter())
    every = np.concatenate(list(arrays.values()))
    if every.size and np.all(every > 0) and every.max() >= 10 * every.min():
        ax.set_yscale("log")
    set_labels(ax, title or "privacy-utility", xlabel="epsilon", ylabel=label)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="best")
    return ax
