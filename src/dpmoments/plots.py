"""Figures (layer 4): each function takes arrays and returns a matplotlib ``Axes``.

Nothing here touches data or spends privacy: the functions draw matrices,
curves and spectra that were already computed (and, for anything shown in
public, already released). They use matplotlib's non-interactive Agg backend
unless a backend was chosen before, and are never imported by the package
root (``import dpmoments`` does not import matplotlib). New figures are made
as ``matplotlib.figure.Figure`` objects with constrained layout, not through
``pyplot``: they render with the Agg canvas (PNG, SVG) whatever the
interactive backend, leave no global state behind, and are freed when
dropped. Pass ``ax=`` to draw into a figure of your own (e.g. in a notebook).

* :func:`plot_network`: signed edge weights (partial correlations) as a graph
  on a circle (no networkx), optionally against a reference graph; a heat map
  beyond :data:`NETWORK_MAX_NODES` nodes;
* :func:`plot_roc`: ROC curves of support recovery;
* :func:`plot_spectrum`: eigenvalues against a noise floor;
* :func:`plot_privacy_utility`: error (or any utility) against epsilon;
* :func:`plot_matrix`: a heat map of a square matrix.

Conventions (the same in every figure)
--------------------------------------
* **Colour.** Lines and markers use the Okabe & Ito (2008) palette
  (:data:`OKABE_ITO`), chosen to stay distinct under the common colour-vision
  deficiencies; signed matrices use ColorBrewer's diverging ``RdBu``, rated
  safe for colour-blind readers. Positive is blue and negative is red
  (vermillion) everywhere.
* **Sign and strength of an edge.** Edges are coloured by the sign of their
  weight (for a precision matrix pass the partial correlations
  ``-theta_ij / sqrt(theta_ii theta_jj)``, whose sign is the opposite of the
  precision entry's); the line width grows with ``|weight|`` (absolute, so
  two panels compare). The legend states both.
* **Against a reference graph** (``truth=``): solid = also in the reference,
  dashed = not in it, dotted grey = in the reference only (missed).
* **Size.** Up to 12 nodes the labels are horizontal; up to
  :data:`NETWORK_MAX_NODES` (60) they run radially outside the circle in a
  font that shrinks with the number of nodes, so they do not overlap (tested
  from 3 to 60 nodes; names longer than 20 characters are shortened in the
  middle). Beyond, the network is drawn as a heat map of the weights
  (the upper triangle the estimate, the lower the reference). A heat map of
  more than :data:`MATRIX_MAX_CELLS` (500) rows shows block aggregates (the
  mean of each block for a matrix, the signed entry of largest magnitude for
  edge weights, so that an isolated edge survives), and is labelled by
  variable index instead of by name beyond :data:`LABEL_MAX` (60) rows. This
  keeps a figure of a 5000-variable matrix readable and quick to write.
* **Text.** Long titles and axis labels are wrapped to the width of their
  axes; nothing is cut off at the written size. The caller names what is
  shown (an uncentred second moment is not a "covariance"); the defaults are
  neutral.

>>> import numpy as np
>>> from dpmoments.plots import plot_network
>>> partial = np.array([[1.0, 0.4, -0.2], [0.4, 1.0, 0.0], [-0.2, 0.0, 1.0]])
>>> ax = plot_network(partial, labels=["a", "b", "c"])
>>> ax.get_title()
'2 edges'
>>> [t.get_text() for t in ax.get_legend().get_texts()]
['positive', 'negative']
"""

import re
import textwrap

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator, NullFormatter

__all__ = ["plot_network", "plot_roc", "plot_spectrum", "plot_privacy_utility", "plot_matrix", "new_axes", "new_figure",
           "OKABE_ITO", "NETWORK_MAX_NODES", "MATRIX_MAX_CELLS", "LABEL_MAX"]

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
_HORIZONTAL_MAX = 12  # networks up to this size keep their labels horizontal (beyond, neighbours would touch)
_LABEL_CHARS = 20  # longer node names are shortened in the middle (the edge table keeps them whole)


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


def _fit(text, inches, fontsize):
    """``text`` wrapped into lines about ``inches`` wide at ``fontsize`` points (a glyph is ~0.52 em).

    Never inside parentheses: "(1, 1e-06)-DP" stays on one line.
    """
    width = max(16, int(inches * 72 / (0.52 * fontsize)))
    keep = re.sub(r"\([^()]*\)", lambda m: m.group(0).replace(" ", "\u00a0"), text)
    return "\n".join(textwrap.fill(line, width) for line in keep.split("\n")).replace("\u00a0", " ")


def _inches(ax):
    """The width and height of ``ax`` in inches, as placed before layout."""
    return ax.bbox.width / ax.figure.dpi, ax.bbox.height / ax.figure.dpi


def _label(ax, title=None, xlabel=None, ylabel=None):
    """Set the title and axis labels, wrapped to the axes so that none is cut off."""
    width, height = _inches(ax)
    if title is not None:
        ax.set_title(_fit(title, 1.2 * width, 11), fontsize=11)
    if xlabel is not None:
        ax.set_xlabel(_fit(xlabel, width, 10), fontsize=10)
    if ylabel is not None:
        ax.set_ylabel(_fit(ylabel, height, 10), fontsize=10)


def _square(A, name):
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"'{name}' must be a non-empty square matrix; got shape {A.shape}.")
    return A


def _labels(labels, d):
    labels = [str(k) for k in range(d)] if labels is None else [str(s) for s in labels]
    if len(labels) != d:
        raise ValueError(f"'labels' must have {d} entries; got {len(labels)}.")
    return labels


def _symmetric_edges(W, tol):
    """Each pair's weight: the larger in magnitude of W_ij and W_ji; zero at most ``tol`` and on the diagonal."""
    V = np.where(np.abs(W) >= np.abs(W.T), W, W.T)
    V[np.abs(V) <= tol] = 0.0
    np.fill_diagonal(V, 0.0)
    return V


def plot_network(weights, labels=None, *, truth=None, tol=1e-8, title=None, ax=None,
                 max_nodes=NETWORK_MAX_NODES, weight_name="partial correlation"):
    """Draw the non-zero off-diagonal entries of ``weights`` as a graph on a circle.

    Parameters
    ----------
    weights : array-like of shape (d, d)
        Signed edge weights, zero where there is no edge: typically the
        partial correlations of a precision matrix, masked to its edges. The
        sign of ``weights[i, j]`` colours the edge (blue positive, vermillion
        negative) and ``|weights[i, j]|`` sets its width; the diagonal is
        ignored.
    labels : sequence of str, optional
        Node names (default ``0 .. d-1``).
    truth : array-like of shape (d, d), optional
        A reference graph (adjacency or precision). Edges it has are drawn
        solid, edges it lacks dashed, and its edges that were missed dotted
        grey.
    tol : float, default=1e-8
        Entries with absolute value at most ``tol`` are not edges.
    title : str, optional
        Default: the number of edges.
    ax : matplotlib Axes, optional
    max_nodes : int, default=NETWORK_MAX_NODES
        With more nodes, the weights are drawn as a heat map instead: the
        upper triangle the estimate, the lower the reference graph (if any);
        beyond ``MATRIX_MAX_CELLS`` rows, each cell is the signed entry of
        largest magnitude of its block.
    weight_name : str, default="partial correlation"
        What the weights are, for the legend.

    Returns
    -------
    ax : matplotlib Axes
    """
    W = _square(weights, "weights")
    d = W.shape[0]
    labels = _labels(labels, d)
    ref = None if truth is None else _square(truth, "truth")
    if ref is not None and ref.shape != W.shape:
        raise ValueError(f"'truth' must have the shape of 'weights' {W.shape}; got {ref.shape}.")
    if d > max_nodes:
        return _network_heatmap(W, ref, tol, labels, title, ax, weight_name)
    V = _symmetric_edges(W, tol)
    R = None if ref is None else _symmetric_edges(ref, 0.0) != 0
    side = float(np.clip(4.5 + 0.07 * d, 5.0, 8.5))
    own = ax is None
    ax = new_axes(ax, figsize=(side, side + 0.6))
    angle = np.pi / 2 - 2 * np.pi * np.arange(d) / d
    xy = np.column_stack([np.cos(angle), np.sin(angle)])
    i, j = np.nonzero(np.triu(V, 1))
    _draw_edges(ax, xy, i, j, V[i, j], None if R is None else R[i, j])
    if R is not None:
        mi, mj = np.nonzero(np.triu(R & (V == 0), 1))
        ax.add_collection(LineCollection(np.stack([xy[mi], xy[mj]], axis=1), colors=GREY, linewidths=0.9,
                                         linestyles=":", zorder=0))
    ax.scatter(*xy.T, s=float(np.clip(900 / d, 10, 60)), c="#333333", zorder=3)
    reach = _node_labels(ax, xy, angle, labels)
    # Room for the labels inside the axes, so that the title and legend (placed at the axes) clear them:
    # a label reaching r inches out needs the limit L with 1.1 + r * 2L / S = L on an axes S inches wide.
    room = 2.0 * reach / min(_inches(ax))
    xlim, ylim = 1.1 / np.maximum(1.0 - room, 0.5)
    ax.set_xlim(-xlim, xlim)
    ax.set_ylim(-ylim, ylim)
    ax.set_box_aspect(ylim / xlim)  # a circle, in a box shape that constrained layout can plan for
    if own:  # the figure takes the box's shape, plus the title and legend
        ax.figure.set_size_inches(side, side * ylim / xlim + 0.6 + 0.15 * (R is not None))
    ax.axis("off")
    _label(ax, title or f"{i.size} edges")
    _network_legend(ax, R is not None, weight_name)
    return ax


def _draw_edges(ax, xy, i, j, w, in_ref):
    """One collection, weakest first so strong edges lie on top; colour = sign, dashed = not in the reference."""
    order = np.argsort(np.abs(w), kind="stable")
    i, j, w = i[order], j[order], w[order]
    styles = "-" if in_ref is None else ["-" if r else (0, (4, 2)) for r in in_ref[order]]
    ax.add_collection(LineCollection(
        np.stack([xy[i], xy[j]], axis=1), colors=np.where(w > 0, POSITIVE, NEGATIVE),
        linewidths=0.6 + 3.0 * np.abs(w) / max(1.0, float(np.max(np.abs(w), initial=0.0))),
        linestyles=styles, alpha=0.9, zorder=1))


def _node_labels(ax, xy, angle, labels):
    """Names outside the circle: horizontal for few nodes, radial (and smaller) for many.

    Returns how far they reach beyond the circle, (across, up) in inches (a glyph is at most ~0.62 em).
    """
    d = len(labels)
    labels = [_short(name) for name in labels]
    longest = max(map(len, labels)) * 0.62 / 72.0
    if d <= _HORIZONTAL_MAX:
        for (x, y), name in zip(xy, labels):
            # Never centred: neighbours at the top and bottom then grow apart, not into each other.
            ha = "left" if x > -1e-9 else "right"
            va = "bottom" if y > 0.5 else "top" if y < -0.5 else "center"
            ax.annotate(name, (x, y), xytext=(6 * x, 6 * y), textcoords="offset points", ha=ha, va=va, fontsize=9)
        return np.array([9.0 * longest, 9.0 * 1.4 / 72.0]) + 6.0 / 72.0
    size = float(np.clip(9.0 - 0.07 * (d - _HORIZONTAL_MAX), 5.5, 8.5))
    for (x, y), a, name in zip(xy, angle, labels):
        right = x > -1e-9  # right half reads outwards, left half is turned round to read left to right
        deg = np.degrees(a) if right else np.degrees(a) + 180.0
        ax.annotate(name, (x, y), xytext=(5 * x, 5 * y), textcoords="offset points", rotation=deg % 360,
                    rotation_mode="anchor", ha="left" if right else "right", va="center", fontsize=size)
    return np.array([size * longest, size * longest]) + 5.0 / 72.0


def _short(name, chars=_LABEL_CHARS):
    """``name``, or its start and end around an ellipsis: names often differ only in their ends."""
    if len(name) <= chars:
        return name
    head = (chars - 1) // 2
    return name[:head] + "\u2026" + name[len(name) - (chars - 1 - head):]


def _network_legend(ax, with_reference, weight_name):
    handles = [Line2D([], [], color=POSITIVE, lw=2, label="positive"),
               Line2D([], [], color=NEGATIVE, lw=2, label="negative")]
    if with_reference:
        handles += [Line2D([], [], color="#333333", lw=1.5, label="in the reference"),
                    Line2D([], [], color="#333333", lw=1.5, ls=(0, (4, 2)), label="not in the reference"),
                    Line2D([], [], color=GREY, lw=1.2, ls=":", label="missed (reference only)")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=min(len(handles), 3),
              fontsize=8, frameon=False, title=f"sign of the {weight_name}; width grows with its size",
              title_fontsize=8)


def _downsample(A, cells, how):
    """(B, b): A itself (b = 1), or its b x b blocks reduced to at most ``cells`` a side.

    ``how="mean"`` averages a block; ``"extreme"`` keeps its entry of largest magnitude, sign included;
    ``"any"`` (boolean A) says whether it holds a true entry. The last row and column of blocks may be
    narrower.
    """
    d = A.shape[0]
    b = -(-d // cells)
    if b == 1:
        return A, 1
    if how == "any":
        return _reduce_blocks(A, b, np.logical_or), b
    if how == "mean":
        sizes = np.minimum(b, d - np.arange(0, d, b)).astype(np.float64)
        return _reduce_blocks(A, b, np.add) / np.outer(sizes, sizes), b
    hi, lo = _reduce_blocks(A, b, np.maximum), _reduce_blocks(A, b, np.minimum)
    return np.where(-lo > hi, lo, hi), b


def _reduce_blocks(A, b, ufunc):
    """``ufunc``-reduce every b x b block of A.

    Through reshapes of whole rows, not ``ufunc.reduceat`` along axis 0, which strides through memory
    and takes ten times as long at d = 5000.
    """
    def down(X):  # blocks of b rows -> one row each
        full = X.shape[0] // b * b
        parts = [ufunc.reduce(X[:full].reshape(-1, b, X.shape[1]), axis=1)]
        if full < X.shape[0]:
            parts.append(ufunc.reduce(X[full:], axis=0, keepdims=True))
        return np.concatenate(parts)

    return down(np.ascontiguousarray(down(A).T)).T


def _image(ax, B, d, b, **kw):
    """Draw block matrix B over variable indices 0 .. d-1 (the last block may be partial)."""
    edge = B.shape[0] * b - 0.5
    im = ax.imshow(B, extent=(-0.5, edge, edge, -0.5), interpolation="nearest", **kw)
    ax.set_xlim(-0.5, d - 0.5)
    ax.set_ylim(d - 0.5, -0.5)
    return im


def _ticks(ax, labels, d, b):
    """Names on both axes up to LABEL_MAX rows, else indices; returns the axis labels (x says what a cell is)."""
    if labels is not None and b == 1 and d <= LABEL_MAX:
        size = float(np.clip(300 / d, 5.0, 8.0))
        ax.set_xticks(np.arange(d), labels, rotation=90, fontsize=size)
        ax.set_yticks(np.arange(d), labels, fontsize=size)
        return None, None
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    return "variable index" + (f" (a cell: the block of {b} x {b} entries)" if b > 1 else ""), "variable index"


def _signed_scale(B):
    v = float(np.max(np.abs(np.ma.filled(B, 0.0)), initial=0.0))
    return v if v > 0 else 1.0


def plot_matrix(matrix, labels=None, *, title=None, ax=None, max_cells=MATRIX_MAX_CELLS, value_name=None):
    """Draw a square matrix as a heat map (diverging ``RdBu``, symmetric around 0, positive blue).

    Parameters
    ----------
    matrix : array-like of shape (d, d)
    labels : sequence of str, optional
        Row and column names, shown up to ``LABEL_MAX`` rows (indices beyond).
    title : str, optional
        What the matrix is (default "matrix"): the caller knows, e.g.
        whether a second moment was centred.
    ax : matplotlib Axes, optional
    max_cells : int, default=MATRIX_MAX_CELLS
        With more rows, each cell shows the mean of a block of entries
        (the axis label says how large).
    value_name : str, optional
        The colour bar's label.

    Returns
    -------
    ax : matplotlib Axes
    """
    A = _square(matrix, "matrix")
    d = A.shape[0]
    labels = None if labels is None else _labels(labels, d)
    ax = new_axes(ax, figsize=(6.0, 5.2))
    B, b = _downsample(A, max_cells, "mean")
    v = _signed_scale(B)
    im = _image(ax, B, d, b, cmap=DIVERGING, vmin=-v, vmax=v)
    bar = ax.figure.colorbar(im, ax=ax, shrink=0.85)
    if value_name:
        bar.set_label(value_name)
    _label(ax, title or "matrix", *_ticks(ax, labels, d, b))
    return ax


def _network_heatmap(W, ref, tol, labels, title, ax, weight_name):
    """The network as a matrix: the weights (upper triangle), the reference's edges (lower triangle, dark).

    Works on block aggregates only, without a d x d temporary: at d = 5000 one such copy is 200 MB.
    """
    d = W.shape[0]
    ax = new_axes(ax, figsize=(6.4, 5.8))
    B, b = _downsample(W, MATRIX_MAX_CELLS, "extreme")
    B = np.array(B)  # never the caller's array
    for k, start in enumerate(range(0, d, b)):  # the diagonal is no edge: aggregate diagonal blocks without it
        block = W[start:start + b, start:start + b].copy()
        np.fill_diagonal(block, 0.0)
        B[k, k] = block.flat[np.argmax(np.abs(block))]
    B = np.where(np.abs(B.T) > np.abs(B), B.T, B)  # each pair's larger weight, as the network draws it
    B[np.abs(B) <= tol] = 0.0
    v = _signed_scale(B)
    if ref is not None:
        lower = np.tril(np.ones(B.shape, dtype=bool), -1)
        hit, _ = _downsample(ref != 0, MATRIX_MAX_CELLS, "any")
        _image(ax, np.ma.masked_where(~lower | ~(hit | hit.T), np.ones(B.shape)), d, b,
               cmap=ListedColormap(["#333333"]))
        B[lower] = 0.0
    im = _image(ax, np.ma.masked_where(B == 0, B), d, b, cmap=DIVERGING, vmin=-v, vmax=v)
    ax.figure.colorbar(im, ax=ax, shrink=0.85).set_label(weight_name)
    big = (W > tol) | (W < -tol)  # no d x d float temporary
    np.fill_diagonal(big, False)
    heading = title or f"{np.count_nonzero(big | big.T) // 2} edges"
    if ref is not None:
        heading += "\nupper triangle: the estimate; lower triangle (dark): the reference's edges"
    _label(ax, heading, *_ticks(ax, labels, d, b))
    return ax


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
        fpr = np.asarray(fpr)
        ax.plot(fpr, np.asarray(tpr), marker="." if fpr.size <= 60 else None, label=label)
    for label, (fpr, tpr) in (points or {}).items():
        ax.plot([fpr], [tpr], marker="o", ms=8, ls="none", label=label)
    ax.plot([0, 1], [0, 1], color=GREY, lw=0.8, ls=":")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    _label(ax, title or "support recovery", xlabel="false-positive rate", ylabel="true-positive rate")
    ax.legend(fontsize=8, loc="lower right")
    return ax


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
    _label(ax, title or "spectrum", xlabel="component", ylabel="eigenvalue")
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
    _label(ax, title or "privacy-utility", xlabel="epsilon", ylabel=label)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="best")
    return ax
