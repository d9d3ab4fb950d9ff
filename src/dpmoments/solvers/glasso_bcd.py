"""Block coordinate ascent on the graphical-lasso dual with exact column lassos.

This is the glasso of Friedman, Hastie & Tibshirani (2008), as analysed by
Mazumder & Hastie (2012): the dual

.. math::

    \\max_{W \\succ 0} \\log\\det W \\quad\\text{s.t.}\\quad |W_{ij} - S_{ij}| \\le \\alpha
    \\ (i \\ne j), \\qquad W_{ii} = S_{ii} + \\alpha\\,[\\text{diagonal penalised}],

is maximised one row/column at a time. Updating column ``j`` is the lasso

.. math::

    \\min_\\beta \\tfrac12 \\beta^T W_{-j,-j} \\beta - s_{-j,j}^T \\beta + \\alpha \\|\\beta\\|_1,
    \\qquad w_{-j,j} \\leftarrow W_{-j,-j}\\,\\beta,

which we solve *exactly* with the feature-sign active-set method (Lee, Battle,
Raina & Ng 2007): a small dense linear solve on the active set per step, one
``O(p k)`` gradient to check the zero coordinates. The per-column work is
``O(p k)`` for ``k`` non-zeros, so a sweep costs ``O(p^2 k)`` plus Python
overhead per column, instead of the ``O(p^3)`` sweep of scikit-learn's
implementation, which copies ``W_{-j,-j}`` for each column.

Because every column lasso is solved to machine precision, ``W`` stays
dual-feasible and positive definite, and the primal matrix assembled from the
lasso coefficients gives a duality gap: a certificate of accuracy, used as
the stopping rule.

Internal module: the public entry point is :func:`dpmoments.solvers.graphical_lasso`.
"""

import numpy as np
from scipy import linalg
from scipy.linalg import lapack

_posv = lapack.dposv

__all__ = []


def _logdet_pd(A):
    """``log det A`` via Cholesky, or ``None`` if ``A`` is not positive definite."""
    try:
        L = linalg.cholesky(A, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return None
    d = np.diag(L)
    if not np.all(d > 0) or not np.all(np.isfinite(d)):
        return None
    return 2.0 * float(np.sum(np.log(d)))


def _column_lasso(W, b, alpha, j, A, x, thr, max_steps):
    """Exact lasso ``min ½ xᵀ W_{-j,-j} x − bᵀx + α|x|₁`` by feature-sign search.

    ``A`` (int array) and ``x`` (its non-zero values) are the warm start; ``b``
    is the full column ``S[:, j]`` (entry ``j`` is ignored). Returns
    ``(A, x, w, ok)`` with ``w = W[:, A] @ x`` (length p) and ``ok`` False
    when the step cap was hit.
    """
    steps = 0
    sgn = np.sign(x)
    while True:
        # ---- optimise over the active set with the current sign pattern ----
        while A.size and steps < max_steps:
            steps += 1
            V = W[A[:, None], A]
            bA = b[A]
            _, xn, info = _posv(V, bA - alpha * sgn, lower=1, overwrite_a=1, overwrite_b=0)
            if info != 0:
                return A, x, _matvec(W, A, x), False
            if not (np.sign(xn) != sgn).any():
                x = xn
                break
            # discrete line search on the segment x -> xn: at xn and at each sign crossing
            idx = np.flatnonzero((np.sign(xn) != sgn) & (x != 0))
            ts = x[idx] / (x[idx] - xn[idx])
            inside = (ts > 0) & (ts < 1)
            idx, ts = idx[inside], ts[inside]
            Z = x[:, None] + (xn - x)[:, None] * np.append(ts, 1.0)[None, :]
            Z[idx, np.arange(idx.size)] = 0.0  # the coordinate that crosses zero at each t
            V = W[A[:, None], A]
            f = 0.5 * np.einsum("ic,ic->c", Z, V @ Z) - bA @ Z + alpha * np.abs(Z).sum(axis=0)
            x = Z[:, int(np.argmin(f))]
            keep = x != 0
            A, x = A[keep], x[keep]
            sgn = np.sign(x)
        # ---- check the zero coordinates ----
        w = _matvec(W, A, x)
        if steps >= max_steps:
            return A, x, w, False
        viol = np.abs(w - b)
        viol[j] = 0.0
        viol[A] = 0.0
        bad = np.flatnonzero(viol > thr)
        if not bad.size:
            return A, x, w, True
        if bad.size > 8:  # add the worst few at once (cold starts)
            bad = bad[np.argpartition(-viol[bad], 8)[:8]]
        A = np.concatenate([A, bad])
        x = np.concatenate([x, np.zeros(bad.size)])
        sgn = np.concatenate([sgn, np.sign(b[bad] - w[bad])])
        steps += 1


def _matvec(W, A, x):
    """``W[:, A] @ x`` through contiguous rows (``W`` is symmetric)."""
    return x @ W[A] if A.size else np.zeros(W.shape[0])


def glasso_bcd_block(S, alpha, diag, W, B_idx, B_val, *, penalize_diagonal, tol, max_iter, check_every=1):
    """Run the dual block-coordinate ascent on one (connected) block.

    Parameters
    ----------
    S : ndarray, shape (p, p)
    alpha : float
    diag : ndarray, shape (p,)
        The fixed dual diagonal ``S_ii + alpha`` or ``S_ii``.
    W : ndarray, shape (p, p)
        Positive-definite start with ``diag`` on its diagonal; updated in place.
    B_idx, B_val : list of ndarray
        Warm-start active sets and coefficients, one per column.
    tol : float
        Stop when the duality gap is at most ``tol * max(1, |primal|)``.

    Returns
    -------
    Theta, W, n_iter, converged, gap, primal
    """
    p = S.shape[0]
    thr = alpha + 1e-12 * (alpha + float(np.mean(np.abs(diag))))
    max_steps = 50 + 4 * p
    Theta = np.zeros((p, p))
    gap, primal, converged = np.inf, np.inf, False
    it = 0
    for it in range(1, max_iter + 1):
        all_ok = True
        for j in range(p):
            A, x, w, ok = _column_lasso(W, S[j], alpha, j, B_idx[j], B_val[j], thr, max_steps)
            all_ok &= ok
            B_idx[j], B_val[j] = A, x
            w[j] = diag[j]
            W[:, j] = w
            W[j, :] = w
            t22 = 1.0 / max(diag[j] - float(w[A] @ x), 1e-300)
            row = Theta[j]
            row[:] = 0.0
            row[A] = -x * t22
            row[j] = t22
        if it % check_every and it != max_iter:
            continue
        T = 0.5 * (Theta + Theta.T)
        ld_t = _logdet_pd(T)
        ld_w = _logdet_pd(W)
        if ld_t is None or ld_w is None:
            continue
        off = np.abs(T).sum() - (0.0 if penalize_diagonal else np.abs(np.diag(T)).sum())
        primal = -ld_t + float(np.vdot(S, T)) + alpha * off
        dual = ld_w + p
        gap = primal - dual
        if all_ok and gap <= tol * max(1.0, abs(primal)):
            converged = True
            Theta = T
            break
    else:
        Theta = 0.5 * (Theta + Theta.T)
    return Theta, W, it, converged, gap, primal

