"""The graphical lasso along a path of penalties: warm starts that make each penalty about one sweep.

The penalties are solved from the largest to the smallest. Each solve starts from

* the previous penalty's **column-lasso coefficients** (the active sets, as the solver left
  them: no pass over a dense precision matrix to rebuild them);
* a **dual start extrapolated** from the two previous duals, ``W_k + r (W_k - W_{k-1})`` with
  ``r`` the ratio of the penalty steps, clipped into the new dual box
  ``|W_ij - S_ij| <= alpha``. The solution moves smoothly with the penalty between changes
  of its support, so this start is second-order close where the previous dual is only
  first-order close: in our runs one sweep then meets ``tol`` where two were needed (counts
  in ``benchmarks/results/glasso.md``). If it proves not positive definite the previous
  dual is tried, then a cold start, so the result never depends on the extrapolation
  being good, only the time does;
* the previous **screening**: the blocks only merge as the penalty falls, so once the
  solution is one block the connected components are not recomputed.

With ``sparse=True`` each precision comes back as a CSR matrix and the duals stay inside the
path, which then recycles them: the extrapolated start is written over the dual it no longer
needs, so no penalty allocates a fresh dense ``p x p`` array. On the shared virtual machines
we measure on, the first touch of a fresh 32 MB array cost more than a whole sweep at p = 2000.

Every result is certified to ``tol`` as a single solve is.
"""

import dataclasses
from typing import NamedTuple

import numpy as np

from .._validation import as_float_array, check_int, check_positive
from ._glasso_common import check_alpha, check_cov
from .glasso import Warm, _solve
from .glasso_bcd import USE_COMPILED, _glasso_sweep
from .glasso_screening import _edges

__all__ = ["graphical_lasso_path", "iter_graphical_lasso_path"]

# Extrapolate only over steps at most this many times the previous one (farther, the start is worse).
_MAX_STEP_RATIO = 2.0
_ROWS_BYTES = 1 << 20  # row blocks of the extrapolation: about 1 MiB per temporary


def graphical_lasso_path(S, alphas, *, penalize_diagonal=True, tol=1e-7, max_iter=100, screen=True, sparse=False):
    """Graphical lasso along a path of penalties, with warm starts.

    The penalties are solved from the largest to the smallest, each warm
    started from the previous solutions (active sets, coefficients and a
    dual matrix extrapolated from the two previous ones), which is much
    cheaper than independent solves. Every solution meets ``tol`` as
    :func:`graphical_lasso` does (its ``duality_gap`` says by how much).

    Parameters
    ----------
    S : array_like, shape (p, p)
    alphas : array_like of float, shape (n_alphas,)
        Penalties ``>= 0``, in any order.
    penalize_diagonal, tol, max_iter, screen
        As in :func:`graphical_lasso`.
    sparse : bool, default False
        Return each ``precision`` as a ``scipy.sparse`` CSR matrix (``.toarray()`` for a dense
        one) and no dual (``covariance`` is ``None``): memory ``O(nnz)`` per penalty instead
        of two dense ``p x p`` matrices, and no fresh ``p x p`` allocation along the path.

    Returns
    -------
    list of GlassoResult
        One per entry of ``alphas``, in the order given.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.solvers import graphical_lasso_path
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 6))
    >>> path = graphical_lasso_path(X.T @ X / 200, [0.3, 0.1, 0.03])
    >>> [int((np.abs(r.precision) > 0).sum()) >= 6 for r in path]
    [True, True, True]
    """
    alphas = np.atleast_1d(as_float_array(alphas, "alphas"))
    results = [None] * alphas.size
    for i, res in iter_graphical_lasso_path(S, alphas, penalize_diagonal=penalize_diagonal, tol=tol,
                                            max_iter=max_iter, screen=screen, sparse=sparse):
        results[i] = res
    return results


def iter_graphical_lasso_path(S, alphas, *, penalize_diagonal=True, tol=1e-7, max_iter=100, screen=True,
                              sparse=False):
    """:func:`graphical_lasso_path` one penalty at a time, largest first: yields ``(index, GlassoResult)``.

    Only the two previous duals are kept (for the next warm start), not their precisions, so a
    caller that drops each result as it goes needs about three ``p x p`` matrices beyond ``S``
    (the previous dual, and the new dual and precision), not one pair per penalty; with
    ``sparse=True`` (sparse precisions, no dual in the results) about two, reused from one
    penalty to the next.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.solvers import iter_graphical_lasso_path
    >>> S = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> [i for i, r in iter_graphical_lasso_path(S, [0.1, 0.6])]
    [1, 0]
    """
    S = check_cov(S, "S")
    alphas = np.atleast_1d(as_float_array(alphas, "alphas"))
    if alphas.ndim != 1 or alphas.size == 0:
        raise ValueError(f"'alphas' must be a non-empty 1-D sequence; got shape {alphas.shape}.")
    for a in alphas:
        check_alpha(float(a))
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter")
    pen = bool(penalize_diagonal)
    p = S.shape[0]
    prev = older = active = None
    edges = _edges(S, float(alphas.min())) if screen else None  # one pass over S for the whole path
    for i in np.argsort(-alphas, kind="stable"):
        alpha = float(alphas[i])
        starts = () if prev is None else ((prev.covariance, False),)
        if older is not None and older.converged and prev.converged and older.alpha > prev.alpha > alpha:
            r = (prev.alpha - alpha) / (older.alpha - prev.alpha)
            if r <= _MAX_STEP_RATIO:
                # Sparse results hold no dual, so the older one is the path's own: overwrite it.
                out = older.covariance if sparse else None
                starts = ((_extrapolate(S, prev.covariance, older.covariance, r, alpha, out), True),) + starts
        older = None  # its dual is no longer needed: let it go before the solve allocates
        one_block = screen and prev is not None and prev.n_blocks == 1 and alpha <= prev.alpha
        res, active = _solve(S, alpha, pen, tol, max_iter, Warm(active, starts), screen, edges,
                             (1, np.zeros(p, dtype=int)) if one_block else None, sparse=sparse)
        # Keep only what the next starts need (not the precisions): a caller that drops each result
        # holds about three p x p matrices at a time, not six.
        older, prev = prev, _Dual(res.alpha, res.converged, res.n_blocks, res.covariance)
        yield int(i), dataclasses.replace(res, covariance=None) if sparse else res
        del res  # not held through the next solve


class _Dual(NamedTuple):
    """What the next penalty's starts need from a solution."""

    alpha: float
    converged: bool
    n_blocks: int
    covariance: np.ndarray


def _extrapolate(S, W1, W0, r, alpha, out=None):
    """``clip(W1 + r (W1 - W0), S - alpha, S + alpha)``, in row blocks (no temporary beyond the result).

    The clip puts the start inside the new dual box; the solver sets the diagonal. ``out`` may be
    ``W0`` itself (every entry is read before it is written).
    """
    p = S.shape[0]
    out = np.empty((p, p)) if out is None else out
    if USE_COMPILED and all(a.flags.c_contiguous and a.dtype == np.float64 for a in (S, W1, W0)):
        _glasso_sweep.extrapolate(out, W1, W0, S, r, alpha)  # one pass instead of five
        return out
    step = max(1, _ROWS_BYTES // (8 * p))
    for lo in range(0, p, step):
        o, s = out[lo:lo + step], S[lo:lo + step]
        np.subtract(W1[lo:lo + step], W0[lo:lo + step], out=o)
        o *= r
        o += W1[lo:lo + step]
        o -= s
        np.clip(o, -alpha, alpha, out=o)
        o += s
    return out
