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
from typing import NamedTuple

import numpy as np
from scipy import linalg
from scipy.sparse import csr_matrix

from .._validation import as_float_array, check_finite, check_int, check_positive
from ._glasso_common import (NO_SOLUTION, GlassoInfeasibleError, GlassoResult, _objective, check_alpha,
                             check_cov, pd_inverse)
from .glasso_bcd import _EXACT_P, active_from_precision, empty_active, glasso_bcd_block
from .glasso_screening import _Pieces, _blocks, _globalise, _isolated_first, _restrict, glasso_blocks

__all__ = ["graphical_lasso", "glasso_blocks"]


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


class Warm(NamedTuple):
    """A warm start: the previous column-lasso coefficients and the dual starts to try.

    ``active`` is ``None`` or CSR arrays ``(indptr, indices, values)`` over all ``p`` variables (row ``j``:
    the coefficients of column ``j``'s lasso). ``starts`` are ``(W, owned)`` pairs tried in turn, none of
    them checked to be positive definite (a run gives up as soon as its start proves not to be);
    ``owned`` says the solver may overwrite ``W`` (else it copies it).
    """

    active: tuple = None
    starts: tuple = ()


def _warm(warm_start, p):
    if warm_start is None:
        return Warm()
    if isinstance(warm_start, GlassoResult):
        return Warm(active_from_precision(warm_start.precision), ((warm_start.covariance, False),))
    T = as_float_array(warm_start, "warm_start")
    if T.shape != (p, p):
        raise ValueError(f"'warm_start' must be a GlassoResult or a (p, p) precision matrix; got shape {T.shape}.")
    check_finite(T, "warm_start")
    T = 0.5 * (T + T.T)
    W = pd_inverse(T)
    return Warm(active_from_precision(T), () if W is None else ((W, True),))


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
    return _solve(S, alpha, bool(penalize_diagonal), tol, max_iter, _warm(warm_start, S.shape[0]), screen)[0]


def _solve_block(S, alpha, diag, pen, tol, max_iter, active, starts, parts=None, dense=True):
    """One block (or bundle of blocks): from the warm starts first, then an unchecked cold one, then checked.

    Warm and large-block starts skip the dense Cholesky test: the solver gives up as soon as the
    start proves not positive definite, and its certificate (a positive-definite primal, a gap
    bound that proves the dual positive definite) decides the result. A bundle starts cold from
    ``S`` restricted to its blocks (zero between them, where the solution's dual is zero too).
    """
    p = S.shape[0]
    active = empty_active(p) if active is None else active
    for W, owned in starts:
        W = W if owned else W.copy()
        np.fill_diagonal(W, diag)
        res = _run(S, alpha, diag, W, active, pen, tol, max_iter, warm=True, dense=dense)
        if res is not None:
            return res
    W = None
    if parts is not None:
        W = np.where(parts[:, None] == parts[None, :], S, 0.0)
        np.fill_diagonal(W, diag)
        if not (p > _EXACT_P or _chol_ok(W)):
            W = None
    elif p > _EXACT_P:
        W = S.copy()
        np.fill_diagonal(W, diag)
    if W is not None or active[0][-1] > 0:
        res = _run(S, alpha, diag, W if W is not None else _feasible_start(S, alpha, diag, pen, max_proj=30),
                   active, pen, tol, max_iter, warm=W is not None, dense=dense)
        if res is not None:
            return res
    W = _feasible_start(S, alpha, diag, pen, max_proj=30)
    return glasso_bcd_block(S, alpha, diag, W, empty_active(p), penalize_diagonal=pen, tol=tol, max_iter=max_iter,
                            dense=dense)


def _run(S, alpha, diag, W, active, pen, tol, max_iter, warm, dense=True):
    """A run from one start, or ``None`` when it gave up (the start was not positive definite)."""
    res = glasso_bcd_block(S, alpha, diag, W, active, penalize_diagonal=pen, tol=tol, max_iter=max_iter, warm=warm,
                           dense=dense)
    return res if res[0] is not None and (res[3] or np.isfinite(res[4])) else None


def _solve(S, alpha, pen, tol, max_iter, warm, screen, edges=None, blocks=None, sparse=False):
    """:func:`graphical_lasso` on checked inputs; ``warm`` a :class:`Warm`.

    ``blocks`` (``(n_blocks, labels)``, known along a path) skips the screening. ``sparse``: the
    precision is returned as a CSR matrix, never made dense. Returns the :class:`GlassoResult`
    and the final active sets (a global CSR, the next warm start's).
    """
    p = S.shape[0]
    diag = _feasible_diagonal(S, alpha, pen)
    if blocks is not None:
        n_blocks, labels = blocks
    elif screen:
        n_blocks, labels = _blocks(S, alpha, edges)
    else:
        n_blocks, labels = 1, np.zeros(p, dtype=int)
    if n_blocks == 1 and p > 1:  # the common case along a path: none of the blocks' bookkeeping
        # one block of all p: the block's own matrices are the result (no p x p copies)
        start = (None, None, 0.0, [(np.arange(p), None)], None, None)
    else:
        start = _isolated_first(S, diag, alpha, pen, n_blocks, labels, sparse)
    Theta, W, objective, gap_total, n_iter, converged, rho, pieces = _solve_bundles(
        S, diag, alpha, pen, tol, max_iter, warm, sparse, *start)
    active = pieces[0][1] if len(pieces) == 1 and pieces[0][0].size == p else _globalise(pieces, p)
    if isinstance(Theta, _Pieces):
        Theta = Theta.csr()
    if not np.isfinite(objective):
        objective = _objective(S, Theta if isinstance(Theta, np.ndarray) else Theta.toarray(), alpha, pen)
    if not np.isfinite(objective):  # never return a non-PD or non-finite precision
        Theta, objective = _inverse_of_covariance(S, W, alpha, pen)
        converged, rho, active = False, np.nan, None
    if sparse and isinstance(Theta, np.ndarray):
        Theta = csr_matrix(Theta)
    if converged:
        message = f"converged: duality gap {gap_total:.3g} after {n_iter} sweep(s) on {n_blocks} block(s)"
    else:
        message = f"did not reach tol={tol:g} in max_iter={max_iter} sweeps (duality gap {gap_total:.3g})"
        warnings.warn("graphical_lasso: " + message, RuntimeWarning, stacklevel=3)
    return GlassoResult(precision=Theta, covariance=W, objective=objective, n_iter=n_iter, converged=converged,
                        solver="bcd", alpha=alpha, penalize_diagonal=pen, duality_gap=gap_total,
                        n_blocks=int(n_blocks), message=message, info={"rho": rho}), active


def _solve_bundles(S, diag, alpha, pen, tol, max_iter, warm, sparse, Theta, W, objective, bundles, owner, where):
    """Each bundle of blocks solved from its warm start, written into ``Theta`` and ``W`` (or, for one bundle of
    all p variables, its own matrices returned): the objective and duality gap summed, the sweeps' maximum,
    whether all converged, the largest ``rho`` (nan: unknown) and each bundle's active set."""
    p = S.shape[0]
    gap_total, n_iter, converged, rho = 0.0, 0, True, 0.0
    pieces = []
    for idx, parts in bundles:
        whole = idx.size == p
        ix = None if whole else np.ix_(idx, idx)
        Sb, db = (S, diag) if whole else (S[ix], diag[idx])
        act = warm.active if whole or warm.active is None else _restrict(warm.active, idx, owner, where)
        starts = warm.starts if whole else ((Wf[ix], True) for Wf, _ in warm.starts)
        Tb, Wb, it, conv, gap, prim, r, act = _solve_block(Sb, alpha, db, pen, tol, max_iter, act, starts, parts,
                                                           dense=not sparse)
        if whole:
            Theta, W = Tb, Wb
        else:
            Theta[ix] = Tb
            W[ix] = Wb
        pieces.append((idx, act))
        gap_total += gap
        objective += prim
        rho = np.nan if np.isnan(rho) or np.isnan(r) else max(rho, r)  # nan: unknown
        n_iter = max(n_iter, it)
        converged &= conv
    return Theta, W, objective, gap_total, n_iter, converged, rho, pieces


def _feasible_diagonal(S, alpha, pen):
    """The dual's diagonal ``S_ii (+ alpha)``, refused in one line where it is not positive."""
    diag = np.diag(S) + (alpha if pen else 0.0)
    if np.any(diag <= 0):
        i = int(np.argmin(diag))
        raise GlassoInfeasibleError(NO_SOLUTION.format(
            why=f"the dual needs W_ii = S_ii{' + alpha' if pen else ''} > 0 but it is {diag[i]:.3g} at i = {i}"))
    return diag


def _inverse_of_covariance(S, W, alpha, pen):
    """A positive definite precision from the covariance iterate (eigenvalues floored) and its objective."""
    lam, Q = linalg.eigh(0.5 * (W + W.T), check_finite=False)
    lam = np.maximum(lam, 1e-12 * max(1.0, float(lam.max())))
    Theta = (Q / lam) @ Q.T
    Theta = 0.5 * (Theta + Theta.T)
    return Theta, _objective(S, Theta, alpha, pen)


