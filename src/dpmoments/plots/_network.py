"""The network figure: signed edges on a circle, labels that do not collide; a heat map when large."""

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D

from ._matrix import network_heatmap
from ._style import (GREY, HORIZONTAL_MAX, LABEL_CHARS, NEGATIVE, NETWORK_MAX_NODES, POSITIVE, inches, names, new_axes,
                     set_labels, square)


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
    W = square(weights, "weights")
    d = W.shape[0]
    labels = names(labels, d)
    ref = None if truth is None else square(truth, "truth")
    if ref is not None and ref.shape != W.shape:
        raise ValueError(f"'truth' must have the shape of 'weights' {W.shape}; got {ref.shape}.")
    if d > max_nodes:
        return network_heatmap(W, ref, tol, labels, title, ax, weight_name)
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
    room = 2.0 * reach / min(inches(ax))
    xlim, ylim = 1.1 / np.maximum(1.0 - room, 0.5)
    ax.set_xlim(-xlim, xlim)
    ax.set_ylim(-ylim, ylim)
    ax.set_box_aspect(ylim / xlim)  # a circle, in a box shape that constrained layout can plan for
    if own:  # the figure takes the box's shape, plus the title and legend
        ax.figure.set_size_inches(side, side * ylim / xlim + 0.6 + 0.15 * (R is not None))
    ax.axis("off")
    set_labels(ax, title or f"{i.size} edges")
    _network_legend(ax, R is not None, weight_name)
    return ax


def _symmetric_edges(W, tol):
    """Each pair's weight: the larger in magnitude of W_ij and W_ji; zero at most ``tol`` and on the diagonal."""
    V = np.where(np.abs(W) >= np.abs(W.T), W, W.T)
    V[np.abs(V) <= tol] = 0.0
    np.fill_diagonal(V, 0.0)
    return V


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
    if d <= HORIZONTAL_MAX:
        for (x, y), name in zip(xy, labels):
            # Never centred: neighbours at the top and bottom then grow apart, not into each other.
            ha = "left" if x > -1e-9 else "right"
            va = "bottom" if y > 0.5 else "top" if y < -0.5 else "center"
            ax.annotate(name, (x, y), xytext=(6 * x, 6 * y), textcoords="offset points", ha=ha, va=va, fontsize=9)
        return np.array([9.0 * longest, 9.0 * 1.4 / 72.0]) + 6.0 / 72.0
    size = float(np.clip(9.0 - 0.07 * (d - HORIZONTAL_MAX), 5.5, 8.5))
    for (x, y), a, name in zip(xy, angle, labels):
        right = x > -1e-9  # right half reads outwards, left half is turned round to read left to right
        deg = np.degrees(a) if right else np.degrees(a) + 180.0
        ax.annotate(name, (x, y), xytext=(5 * x, 5 * y), textcoords="offset points", rotation=deg % 360,
                    rotation_mode="anchor", ha="left" if right else "right", va="center", fontsize=size)
    return np.array([size * longest, size * longest]) + 5.0 / 72.0


def _short(name, chars=LABEL_CHARS):
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
