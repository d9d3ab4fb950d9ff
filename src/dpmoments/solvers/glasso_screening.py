"""Graphical lasso, exact screening: the solution's blocks, solved apart and joined again.

The solution is block diagonal along the connected components of ``{|S_ij| > alpha, i != j}``
(Witten, Friedman & Simon 2011; Mazumder & Hastie 2012). Here are the blocks (:func:`glasso_blocks`),
the isolated variables' closed form, the small blocks bundled into one solve, a warm start's active
sets restricted to a block and the blocks' results joined into one precision (dense or sparse).
The solve of one block is :mod:`dpmoments.solvers.glasso`'s.
"""

import numpy as np
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components

from ._glasso_common import check_alpha, check_cov

__all__ = ["glasso_blocks"]


def glasso_blocks(S, alpha):
    """Exact screening: the blocks of the graphical-lasso solution.

    Parameters
    ----------
    S : array_like, shape (p, p)
    alpha : float

    Returns
    -------
    n_blocks : int
    labels : ndarray of int, shape (p,)
        Block label of each variable: the connected components of
        ``{(i, j): i != j, |S_ij| > alpha}``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.solvers import glasso_blocks
    >>> glasso_blocks(np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.05], [0.0, 0.05, 1.0]]), 0.1)[0]
    2
    """
    S = check_cov(S, "S")
    return _blocks(S, check_alpha(alpha))


def _blocks(S, alpha, edges=None):
    """Connected components of ``{|S_ij| > alpha}``; ``edges`` (from :func:`_edges` at a penalty
    ``<= alpha``) saves the pass over ``S`` along a path."""
    i, j, v = _edges(S, alpha) if edges is None else edges
    keep = v > alpha
    p = S.shape[0]
    adj = csr_matrix((np.ones(int(keep.sum()), dtype=np.int8), (i[keep], j[keep])), shape=(p, p))
    return connected_components(adj, directed=False)


def _edges(S, alpha):
    """The pairs ``i < j`` with ``|S_ij| > alpha`` and their ``|S_ij|``, found in row blocks (no p x p temporary)."""
    p = S.shape[0]
    step = max(1, (1 << 20) // max(p, 1))
    parts = []
    for lo in range(0, p, step):
        A = np.abs(S[lo:lo + step])
        r, c = np.nonzero(A > alpha)
        upper = c > r + lo
        parts.append((r[upper] + lo, c[upper], A[r[upper], c[upper]]))
    return tuple(np.concatenate([part[k] for part in parts]) for k in range(3))


_BUNDLE = 256  # small blocks are solved together, up to this many variables at a time


def _bundles(labels, n_blocks, single):
    """The non-singleton blocks, the small ones packed together: ``(indices, part labels)`` per bundle.

    The graphical lasso of a union of blocks is the union of their solutions (screening holds for it
    as a whole: no ``|S_ij| > alpha`` joins two of them), so a bundle of small blocks is one solve
    and one C sweep per pass instead of one Python round trip per block.
    """
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(n_blocks + 1))
    blocks = [order[bounds[b]:bounds[b + 1]] for b in np.flatnonzero(~single)]
    blocks.sort(key=len)
    bundle, size = [], 0
    for block in blocks:
        if size + block.size > _BUNDLE and bundle:
            yield _bundle(bundle)
            bundle, size = [], 0
        bundle.append(block)
        size += block.size
    if bundle:
        yield _bundle(bundle)


def _bundle(blocks):
    if len(blocks) == 1:
        return blocks[0], None
    return np.concatenate(blocks), np.repeat(np.arange(len(blocks)), [b.size for b in blocks])


def _restrict(active, idx, owner, where):
    """The rows ``idx`` of a global active-set CSR, in the local numbering ``where`` of their block.

    Entries whose column lies outside the block (``owner`` differs) are dropped.
    """
    indptr, ind, val = active
    counts = indptr[idx + 1] - indptr[idx]
    total = int(counts.sum())
    if total == 0:
        return None
    first = np.repeat(indptr[idx] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    take = first + np.arange(total)
    rows = np.repeat(np.arange(idx.size), counts)
    cols = ind[take]
    keep = owner[cols] == owner[idx[0]]
    local = np.zeros(idx.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=idx.size), out=local[1:])
    return local, where[cols[keep]].astype(np.int64), val[take][keep]


def _globalise(pieces, p):
    """One active-set CSR over all ``p`` variables from ``(idx, local CSR)`` per block."""
    rows, cols, vals = [], [], []
    for idx, (indptr, ind, val) in pieces:
        n = int(indptr[-1])
        rows.append(idx[np.repeat(np.arange(idx.size), np.diff(indptr))])
        cols.append(idx[ind[:n]])
        vals.append(val[:n])
    if not rows:
        return None
    rows, cols, vals = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(p + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=p), out=indptr[1:])
    return indptr, cols[order].astype(np.int64), vals[order]


def _isolated_first(S, diag, alpha, pen, n_blocks, labels, sparse):
    """Several blocks: the isolated variables solved in closed form, the others bundled for the block solver.

    Returns the p x p precision (or its sparse pieces) and covariance holding the isolated entries, their
    objective, the bundles, and each variable's bundle and position in it (to restrict warm active sets).
    """
    p = S.shape[0]
    single = np.bincount(labels, minlength=n_blocks) == 1
    iso = single[labels]
    Theta, W = _Pieces(p) if sparse else np.zeros((p, p)), np.zeros((p, p))
    Theta[iso, iso] = 1.0 / diag[iso]
    W[iso, iso] = diag[iso]
    d_iso = diag[iso]
    objective = float(np.sum(np.log(d_iso)) + np.sum(np.diag(S)[iso] / d_iso)
                      + (alpha * np.sum(1.0 / d_iso) if pen else 0.0))
    bundles = list(_bundles(labels, n_blocks, single))
    owner, where = np.full(p, -1), np.zeros(p, dtype=np.int64)
    for b, (idx, _) in enumerate(bundles):
        owner[idx], where[idx] = b, np.arange(idx.size)
    return Theta, W, objective, bundles, owner, where


class _Pieces:
    """A sparse precision assembled block by block (``T[ix] = block``, as into a dense array), then CSR."""

    def __init__(self, p):
        self.p, self.rows, self.cols, self.vals = p, [], [], []

    def __setitem__(self, index, block):
        rows, cols = index
        if isinstance(rows, np.ndarray) and rows.ndim == 1 and rows.dtype == bool:  # the isolated diagonal
            ar = np.flatnonzero(rows)
            rows, cols, block = ar, ar, np.broadcast_to(block, ar.shape)
            self._add(rows, cols, np.asarray(block, dtype=float))
            return
        coo = coo_matrix(block)
        idx_r, idx_c = np.ravel(rows), np.ravel(cols)
        self._add(idx_r[coo.row], idx_c[coo.col], coo.data)

    def _add(self, r, c, v):
        self.rows.append(r)
        self.cols.append(c)
        self.vals.append(v)

    def csr(self):
        cat = lambda parts, dtype: np.concatenate(parts) if parts else np.zeros(0, dtype)  # noqa: E731
        return csr_matrix((cat(self.vals, float), (cat(self.rows, np.int64), cat(self.cols, np.int64))),
                          shape=(self.p, self.p))
