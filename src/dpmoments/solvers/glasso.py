"""Graphical lasso: the fast default solver and the λ path.

The fast solver combines

1. **exact screening** (Witten, Friedman & Simon 2011; Mazumder & Hastie 2012):
   the solution is block diagonal along the connected components of the graph
   ``{|S_ij| > alpha, i != j}``, for both penalty conventions (the KKT
   conditions between blocks read ``|S_ij| <= alpha``); isolated nodes have the
   closed form ``Θ_ii = 1 / (S_ii + alpha)`` (diagonal penalised) or ``1 / S_ii``;
2. on each block, **dual block-coordinate ascent** (the glasso of Friedman,
   Hastie & Tibshirani 2008) whose column lassos are solved exactly by an
   active-set (feature-sign) method in ``O(p k)`` per column
   (:mod:`dpmoments.solvers.glasso_bcd`);
3. a **duality-gap** stopping rule, so ``tol`` bounds the relative suboptimality;
4. **warm starts** (active sets, coefficients and the dual matrix) along a path, used
   without a Cholesky test: the run gives up as soon as a warm (or, for a large block,
   unchecked cold) start proves not positive definite and restarts from a checked one,
   and the certificate proves the returned pair positive definite;
5. small blocks **bundled** into one solve, and the column sweep and the certificate's
   traces in C (:mod:`dpmoments.solvers.glasso_bcd`).

The paper-faithful ADMM is :func:`dpmoments.solvers.graphical_lasso_admm`.
"""

import warnings

import numpy as np
from scipy import linalg
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from .._validation import _as_float_array, _check_finite, check_int, check_positive
from ._glasso_common import (NO_SOLUTION, GlassoInfeasibleError, GlassoResult, _objective, check_alpha,
                             check_cov, pd_inverse)
from .glasso_bcd import _EXACT_P, active_from_precision, empty_active, glasso_bcd_block

__all__ = ["graphical_lasso", "graphical_lasso_path", "iter_graphical_lasso_path", "glasso_blocks"]


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


def _chol_ok(A):
    try:
        linalg.cholesky(A, lower=True, check_finite=False)
        return True
    except linalg.LinAlgError:
        return False


def _feasible_start(S, alpha, diag, penalize_diagonal, max_proj):
    """A positive-definite dual-feasible ``W``: ``W_ii = diag_i``, ``|W_ij - S_ij| <= alpha``.

    Tries ``S`` with the dual diagonal, then ``S`` with soft-thresholded
    off-diagonals, then alternating projections between the box and
    ``{W >= eta I}``. Raises :class:`GlassoInfeasibleError` when none is found.
    """
    W = S.copy()
    np.fill_diagonal(W, diag)
    if _chol_ok(W):
        return W
    lo, hi = S - alpha, S + alpha
    np.fill_diagonal(lo, diag)
    np.fill_diagonal(hi, diag)
    W = np.sign(S) * np.maximum(np.abs(S) - alpha, 0.0)
    np.fill_diagonal(W, diag)
    if _chol_ok(W):
        return W
    eta = 1e-6 * float(np.mean(diag))
    certified = False
    for _ in range(max_proj):
        lam, Q = linalg.eigh(W, check_finite=False)
        neg = np.minimum(lam - eta, 0.0)
        # Y = -(W - P_cone W) is PSD; if <S, Y> + alpha*|Y|_1 < 0 the primal is unbounded along Y
        Y = (Q * -neg) @ Q.T
        l1 = np.abs(Y).sum() - (0.0 if penalize_diagonal else np.abs(np.diag(Y)).sum())
        if np.any(neg) and np.vdot(S, Y) + alpha * l1 < -1e-12 * np.abs(Y).sum():
            certified = True
            break
        W = np.clip((Q * np.maximum(lam, eta)) @ Q.T, lo, hi)
        W = 0.5 * (W + W.T)
        if _chol_ok(W):
            return W
    why = ("a positive-semidefinite direction along which it decreases without bound was found" if certified
           else "no positive-definite matrix within alpha of S (entrywise) was found")
    raise GlassoInfeasibleError(NO_SOLUTION.format(why=why))


def _warm(warm_start, p):
    if warm_start is None:
        return None, None
    if isinstance(warm_start, GlassoResult):
        return warm_start.precision, warm_start.covariance
    T = _as_float_array(warm_start, "warm_start")
    if T.shape != (p, p):
        raise ValueError(f"'warm_start' must be a GlassoResult or a (p, p) precision matrix; got shape {T.shape}.")
    _check_finite(T, "warm_start")
    T = 0.5 * (T + T.T)
    return T, pd_inverse(T)


def graphical_lasso(S, alpha, *, penalize_diagonal=True, tol=1e-7, max_iter=100, warm_start=None, screen=True):
    """Graphical lasso, fast: exact screening + exact dual block coordinate ascent.

    Solves

    .. math::

        \\hat\\Theta = \\operatorname*{arg\\,min}_{\\Theta \\succ 0}\\;
            -\\log\\det\\Theta + \\operatorname{tr}(S\\Theta) + \\alpha \\sum_{i,j} |\\Theta_{ij}|,

    the sum over all entries (``penalize_diagonal=True``, the papers') or over
    ``i != j`` (scikit-learn's). Its dual is
    ``max log det W`` s.t. ``|W_ij - S_ij| <= alpha`` (``i != j``) and
    ``W_ii = S_ii + alpha`` (or ``S_ii``); the solver stops when the duality
    gap is at most ``tol * max(1, |objective|)``, which bounds the relative
    suboptimality of ``precision``.

    Parameters
    ----------
    S : array_like, shape (p, p)
        Symmetric covariance. Asymmetries up to ``1e-8`` relative are averaged away.
    alpha : float
        Penalty, ``>= 0``.
    penalize_diagonal : bool, default True
    tol : float, default 1e-7
        Relative duality gap at which to stop.
    max_iter : int, default 100
        Maximum sweeps over the columns of each block.
    warm_start : GlassoResult or array_like of shape (p, p), optional
        A previous solution (e.g. at a nearby ``alpha``).
    screen : bool, default True
        Split into the exact blocks of :func:`glasso_blocks` first.

    Returns
    -------
    GlassoResult
        ``precision`` (sparse, symmetric, PD), ``covariance`` (the dual ``W``),
        ``duality_gap``, ``n_blocks``, ``n_iter`` (most sweeps on any block) and
        ``converged``.

    Raises
    ------
    ValueError
        On a non-square, non-finite or non-symmetric ``S``, or a negative ``alpha``.
    GlassoInfeasibleError
        (a ``ValueError``) when ``S`` is indefinite and no positive-definite
        matrix within ``alpha`` of it was found: the problem has no solution
        (it is unbounded below, ``docs/algorithms.md`` §0.5). Project
        ``S`` to the PSD cone first (``Release.project_psd``; this biases the
        estimate) or increase ``alpha``. Detection is by a Cholesky test of two
        dual-feasible candidates and then at most 30 alternating projections,
        so it always ends; a problem that is feasible only by a very thin
        margin may also be reported.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.solvers import graphical_lasso
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 5))
    >>> res = graphical_lasso(X.T @ X / 200, alpha=0.1)
    >>> res.converged, res.precision.shape
    (True, (5, 5))
    >>> bool(np.allclose(res.precision, res.precision.T))
    True
    """
    S = check_cov(S, "S")
    alpha = check_alpha(alpha)
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter")
    return _solve(S, alpha, bool(penalize_diagonal), tol, max_iter, _warm(warm_start, S.shape[0]), screen)


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


def _solve_block(S, alpha, diag, pen, tol, max_iter, T_warm, W_warm, parts=None):
    """One block (or bundle of blocks): from the warm (or unchecked) start first, then cold.

    A large block skips the dense Cholesky test of its start: the solver gives up as soon as the
    start proves not positive definite, and its certificate (a positive-definite primal, a gap
    bound that proves the dual positive definite) decides the result. A bundle starts cold from
    ``S`` restricted to its blocks (zero between them, where the solution's dual is zero too).
    """
    p = S.shape[0]
    big = p > _EXACT_P
    W = None
    if W_warm is None and parts is not None:
        W = np.where(parts[:, None] == parts[None, :], S, 0.0)
        np.fill_diagonal(W, diag)
        if not (big or _chol_ok(W)):
            W = None
    if W_warm is not None:  # no Cholesky test: the run gives up if it is not PD, the certificate decides
        W = W_warm.copy()
        np.fill_diagonal(W, diag)
    elif big and W is None:
        W = S.copy()
        np.fill_diagonal(W, diag)
    if W is not None or T_warm is not None:
        active = empty_active(p) if T_warm is None else active_from_precision(T_warm)
        warm = W is not None
        if W is None:
            W = _feasible_start(S, alpha, diag, pen, max_proj=30)
        res = glasso_bcd_block(S, alpha, diag, W, active, penalize_diagonal=pen, tol=tol, max_iter=max_iter,
                               warm=warm)
        if res[0] is not None and (res[3] or np.isfinite(res[4])):
            return res
    W = _feasible_start(S, alpha, diag, pen, max_proj=30)
    return glasso_bcd_block(S, alpha, diag, W, empty_active(p), penalize_diagonal=pen, tol=tol, max_iter=max_iter)


def _solve(S, alpha, pen, tol, max_iter, warm, screen, edges=None):
    """:func:`graphical_lasso` on checked inputs; ``warm`` is ``(Theta, W)`` or ``(None, None)``."""
    p = S.shape[0]
    diag = np.diag(S) + (alpha if pen else 0.0)
    if np.any(diag <= 0):
        i = int(np.argmin(diag))
        raise GlassoInfeasibleError(NO_SOLUTION.format(
            why=f"the dual needs W_ii = S_ii{' + alpha' if pen else ''} > 0 but it is {diag[i]:.3g} at i = {i}"))
    T_warm, W_warm = warm
    if screen:
        n_blocks, labels = _blocks(S, alpha, edges)
    else:
        n_blocks, labels = 1, np.zeros(p, dtype=int)
    single = np.bincount(labels, minlength=n_blocks) == 1
    iso = single[labels]
    Theta = W = None  # one block of all p: the block's own matrices are the result (no p x p copies)
    if n_blocks > 1 or p == 1:
        Theta, W = np.zeros((p, p)), np.zeros((p, p))
        Theta[iso, iso] = 1.0 / diag[iso]
        W[iso, iso] = diag[iso]
    d_iso = diag[iso]
    objective = float(np.sum(np.log(d_iso)) + np.sum(np.diag(S)[iso] / d_iso)
                      + (alpha * np.sum(1.0 / d_iso) if pen else 0.0))
    gap_total, n_iter, converged, rho = 0.0, 0, True, 0.0
    for idx, parts in _bundles(labels, n_blocks, single):
        whole = idx.size == p
        ix = np.ix_(idx, idx)
        Sb, db = (S, diag) if whole else (S[ix], diag[idx])
        Tb, Wb, it, conv, gap, prim, r = _solve_block(Sb, alpha, db, pen, tol, max_iter,
                                                     None if T_warm is None else (T_warm if whole else T_warm[ix]),
                                                     None if W_warm is None else (W_warm if whole else W_warm[ix]),
                                                     parts)
        if whole:
            Theta, W = Tb, Wb
        else:
            Theta[ix] = Tb
            W[ix] = Wb
        gap_total += gap
        objective += prim
        rho = np.nan if np.isnan(rho) or np.isnan(r) else max(rho, r)  # nan: unknown
        n_iter = max(n_iter, it)
        converged &= conv
    if not np.isfinite(objective):
        objective = _objective(S, Theta, alpha, pen)
    if not np.isfinite(objective):  # never return a non-PD or non-finite precision
        lam, Q = linalg.eigh(0.5 * (W + W.T), check_finite=False)
        lam = np.maximum(lam, 1e-12 * max(1.0, float(lam.max())))
        Theta = (Q / lam) @ Q.T
        Theta = 0.5 * (Theta + Theta.T)
        objective = _objective(S, Theta, alpha, pen)
        converged, rho = False, np.nan
    if converged:
        message = f"converged: duality gap {gap_total:.3g} after {n_iter} sweep(s) on {n_blocks} block(s)"
    else:
        message = f"did not reach tol={tol:g} in max_iter={max_iter} sweeps (duality gap {gap_total:.3g})"
        warnings.warn("graphical_lasso: " + message, RuntimeWarning, stacklevel=3)
    return GlassoResult(precision=Theta, covariance=W, objective=objective, n_iter=n_iter, converged=converged,
                        solver="bcd", alpha=alpha, penalize_diagonal=pen, duality_gap=gap_total,
                        n_blocks=int(n_blocks), message=message, info={"rho": rho})


def graphical_lasso_path(S, alphas, *, penalize_diagonal=True, tol=1e-7, max_iter=100, screen=True):
    """Graphical lasso along a path of penalties, with warm starts.

    The penalties are solved from the largest to the smallest, each warm
    started from the previous solution (active sets, coefficients and the
    dual matrix), which is much cheaper than independent solves.

    Parameters
    ----------
    S : array_like, shape (p, p)
    alphas : array_like of float, shape (n_alphas,)
        Penalties ``>= 0``, in any order.
    penalize_diagonal, tol, max_iter, screen
        As in :func:`graphical_lasso`.

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
    alphas = np.atleast_1d(_as_float_array(alphas, "alphas"))
    results = [None] * alphas.size
    for i, res in iter_graphical_lasso_path(S, alphas, penalize_diagonal=penalize_diagonal, tol=tol,
                                            max_iter=max_iter, screen=screen):
        results[i] = res
    return results


def iter_graphical_lasso_path(S, alphas, *, penalize_diagonal=True, tol=1e-7, max_iter=100, screen=True):
    """:func:`graphical_lasso_path` one penalty at a time, largest first: yields ``(index, GlassoResult)``.

    Only the previous solution is kept (as the warm start), so a long path at large ``p``
    needs the memory of two solutions, not of all of them.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.solvers import iter_graphical_lasso_path
    >>> S = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> [i for i, r in iter_graphical_lasso_path(S, [0.1, 0.6])]
    [1, 0]
    """
    S = check_cov(S, "S")
    alphas = np.atleast_1d(_as_float_array(alphas, "alphas"))
    if alphas.ndim != 1 or alphas.size == 0:
        raise ValueError(f"'alphas' must be a non-empty 1-D sequence; got shape {alphas.shape}.")
    for a in alphas:
        check_alpha(float(a))
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter")
    pen = bool(penalize_diagonal)
    prev = None
    edges = _edges(S, float(alphas.min())) if screen else None  # one pass over S for the whole path
    for i in np.argsort(-alphas, kind="stable"):
        warm = (None, None) if prev is None else (prev.precision, prev.covariance)
        prev = _solve(S, float(alphas[i]), pen, tol, max_iter, warm, screen, edges)
        yield int(i), prev
