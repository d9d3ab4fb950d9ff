"""What every figure shares: the palette, the size thresholds, new figures, and text that fits."""

import re
import textwrap

import numpy as np
from matplotlib.figure import Figure

#: Okabe & Ito (2008), in the order lines take them.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
POSITIVE, NEGATIVE, GREY = "#0072B2", "#D55E00", "#999999"
DIVERGING = "RdBu"  # low = red, high = blue: positive is blue, as in the networks
#: Networks with more nodes are drawn as heat maps.
NETWORK_MAX_NODES = 60
#: Heat maps with more rows show block aggregates (at most this many cells a side).
MATRIX_MAX_CELLS = 500
#: Heat maps with more rows are labelled by index, not by name.
LABEL_MAX = 60
HORIZONTAL_MAX = 12  # networks up to this size keep their labels horizontal (beyond, neighbours would touch)
LABEL_CHARS = 20  # longer node names are shortened in the middle (the edge table keeps them whole)


def new_figure(figsize):
    """A constrained-layout figure with 6-point margins.

    matplotlib's default 3-point margins can leave a title or an outside legend a few pixels past
    the edge when the figure is saved at another resolution than it was laid out at.
    """
    fig = Figure(figsize=figsize, layout="constrained")
    fig.get_layout_engine().set(w_pad=6 / 72, h_pad=6 / 72)
    return fig


def new_axes(ax=None, figsize=(5.0, 5.0)):
    """``ax`` itself, or the axes of a new figure (:func:`new_figure`) of size ``figsize``."""
    if ax is not None:
        return ax
    ax = new_figure(figsize).subplots()
    ax.set_prop_cycle(color=OKABE_ITO)
    return ax


def fit_text(text, inches, fontsize):
    """``text`` wrapped into lines about ``inches`` wide at ``fontsize`` points (a glyph is ~0.52 em).

    Never inside parentheses: "(1, 1e-06)-DP" stays on one line.
    """
    width = max(16, int(inches * 72 / (0.52 * fontsize)))
    keep = re.sub(r"\([^()]*\)", lambda m: m.group(0).replace(" ", "\u00a0"), text)
    return "\n".join(textwrap.fill(line, width) for line in keep.split("\n")).replace("\u00a0", " ")


def inches(ax):
    """The width and height of ``ax`` in inches, as placed before layout."""
    return ax.bbox.width / ax.figure.dpi, ax.bbox.height / ax.figure.dpi


def set_labels(ax, title=None, xlabel=None, ylabel=None):
    """Set the title and axis labels, wrapped to the axes so that none is cut off."""
    width, height = inches(ax)
    if title is not None:
        ax.set_title(fit_text(title, 1.2 * width, 11), fontsize=11)
    if xlabel is not None:
        ax.set_xlabel(fit_text(xlabel, width, 10), fontsize=10)
    if ylabel is not None:
        ax.set_ylabel(fit_text(ylabel, height, 10), fontsize=10)


def square(A, name):
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"'{name}' must be a non-empty square matrix; got shape {A.shape}.")
    return A


def names(labels, d):
    labels = [str(k) for k in range(d)] if labels is None else [str(s) for s in labels]
    if len(labels) != d:
        raise ValueError(f"'labels' must have {d} entries; got {len(labels)}.")
    return labels
