"""Heat maps: a matrix, or a network too large to draw as a graph; block aggregates beyond MATRIX_MAX_CELLS rows."""

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.ticker import MaxNLocator

from ._style import DIVERGING, LABEL_MAX, MATRIX_MAX_CELLS, names, new_axes, set_labels, square


def plot_matrix(matrix, labels=None, *, title=None, ax=None, max_cells=MATRIX_MAX_CELLS, value_name=None):
    """Draw a square matrix as a heat map (diverging ``RdBu``, symmetric around 0, positive blue).

    The colour scale spans the off-diagonal entries: where the diagonal (e.g. the variances) is
    larger, it is drawn saturated, and the colour bar says so.

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
    A = square(matrix, "matrix")
    d = A.shape[0]
    labels = None if labels is None else names(labels, d)
    ax = new_axes(ax, figsize=(6.0, 5.2))
    B, b = _downsample(A, max_cells, "mean")
    # The colours span the off-diagonal cells, where the structure is; a larger diagonal (variances)
    # saturates, and the colour bar's arrows and label say so.
    off = B[~np.eye(B.shape[0], dtype=bool)]
    v = _signed_scale(off if off.size else B)
    diag = np.diag(B)
    extend = {(False, False): "neither", (True, False): "max", (False, True): "min", (True, True): "both"}[
        (bool(np.max(diag) > v), bool(np.min(diag) < -v))]
    im = _image(ax, B, d, b, cmap=DIVERGING, vmin=-v, vmax=v)
    bar = ax.figure.colorbar(im, ax=ax, shrink=0.85, extend=extend)
    bar.set_label((value_name or "") + ("" if extend == "neither" else "\n(the diagonal is off the scale)"))
    set_labels(ax, title or "matrix", *_ticks(ax, labels, d, b))
    return ax


def network_heatmap(W, ref, tol, labels, title, ax, weight_name):
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
    set_labels(ax, heading, *_ticks(ax, labels, d, b))
    return ax


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
