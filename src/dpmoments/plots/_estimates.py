"""Estimates with their intervals: coefficients, mixture weights, any labelled numbers and their noise."""

import numpy as np

from ._style import GREY, POSITIVE, names, new_axes, set_labels


def plot_estimates(values, intervals, labels=None, *, level=None, reference=0.0, title=None, value_name="estimate",
                   ax=None):
    """Draw labelled estimates as points with horizontal interval bars, one row each.

    An estimate whose interval contains ``reference`` (by default 0) cannot be
    told from it at this noise: it is drawn hollow and grey, the others filled
    blue, and the legend says so.

    Parameters
    ----------
    values : array-like of shape (m,)
    intervals : array-like of shape (2, m)
        Lower and upper ends (e.g. ``PrivateIRLS.coef_interval_``).
    labels : sequence of str, optional
        Row names (default ``0 .. m-1``).
    level : float, optional
        The intervals' coverage, for the legend.
    reference : float or None, default=0.0
        A value drawn as a vertical line, against which "within the noise" is
        judged; ``None`` for neither.
    title : str, optional
    value_name : str, default="estimate"
        The x-axis label.
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    iv = np.asarray(intervals, dtype=np.float64)
    if iv.shape != (2, v.size):
        raise ValueError(f"'intervals' must have shape (2, {v.size}); got {iv.shape}.")
    labels = names(labels, v.size)
    ax = new_axes(ax, figsize=(6.4, float(np.clip(1.2 + 0.32 * v.size, 2.6, 12.0))))
    y = np.arange(v.size)[::-1]  # the first estimate on top
    noise = np.zeros(v.size, dtype=bool) if reference is None else (iv[0] <= reference) & (reference <= iv[1])
    what = "interval (noise)" if level is None else f"{100 * level:g}% interval (noise)"
    ax.hlines(y, iv[0], iv[1], colors=np.where(noise, GREY, POSITIVE), lw=2.0, label=what)
    if (~noise).any():
        ax.scatter(v[~noise], y[~noise], s=36, c=POSITIVE, zorder=3,
                   label="estimate" if reference is None else f"estimate (interval excludes {reference:g})")
    if noise.any():
        ax.scatter(v[noise], y[noise], s=36, facecolors="white", edgecolors=GREY, zorder=3,
                   label=f"within the noise (interval contains {reference:g})")
    if reference is not None:
        ax.axvline(reference, color="#333333", lw=0.8, ls=":")
    ax.set_yticks(y, labels, fontsize=float(np.clip(300 / max(v.size, 1), 6.0, 9.0)))
    ax.set_ylim(-0.7, v.size - 0.3)
    set_labels(ax, title or f"{v.size} estimates", xlabel=value_name)
    ax.legend(fontsize=8, loc="best")
    return ax
