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
``O(p k)`` gradient to check the zero coordinates, so a sweep costs ``O(p^2 k)``
for ``k`` non-zeros per column instead of the ``O(p^3)`` of scikit-learn's
implementation, which copies ``W_{-j,-j}`` for each column.

The sweep runs in C (``_glasso_sweep.c``, built by ``pip install``) where it was
compiled, else in NumPy (:func:`_sweep_numpy`, the same steps; at small ``p`` its
per-call overhead of a few microseconds per array operation dominates). Both keep
the active sets as CSR arrays ``(indptr, indices, values)``, one row per column.

Because every column lasso is solved to machine precision, ``W`` stays
dual-feasible, and the primal matrix assembled from the lasso coefficients gives a
duality gap: a certificate of accuracy, used as the stopping rule
(:mod:`~dpmoments.solvers.glasso_certificate`).

Internal module: the public entry point is :func:`dpmoments.solvers.graphical_lasso`.
"""

import os

import numpy as np
from scipy.linalg import lapack

from .glasso_certificate import GLASSO_SWEEP_ABI, assemble, gap_bound, logdet_dense, primal_objective

try:  # the compiled sweep; absent where the package was installed without a C compiler
    from . import _glasso_sweep
except ImportError:  # pragma: no cover - exercised by the fallback test through the switch below
    _glasso_sweep = None
if _glasso_sweep is not None and getattr(_glasso_sweep, "ABI", None) != GLASSO_SWEEP_ABI:
    _glasso_sweep = None  # a stale build: glasso_certificate.py, which imports it first, has warned

_posv = lapack.dposv

__all__ = []

# DPMOMENTS_PURE_NUMPY=1 runs the NumPy sweep even where the C one is built (tests, comparisons).
USE_COMPILED = _glasso_sweep is not None and os.environ.get("DPMOMENTS_PURE_NUMPY", "") in ("", "0")

_EXACT_P = 64  # blocks up to this size start cold from a Cholesky-checked dual (larger: unchecked)
# Blocks up to this size check the gap with two dense Cholesky factorisations: below it they cost less
# than the sparse bound's fixed overhead (a sparse assembly and LU, ~0.5 ms at p = 100-200 in our runs),
# which along a warm path, one certificate per penalty, was most of the time per penalty.
_DENSE_CERT_P = 200
_EXACT_GAP_P = 1500
_MOVING = 10.0  # larger blocks skip the dense log det W that only sharpens the gap bound


def empty_active(p):
    """No active coefficients in any column."""
    return np.zeros(p + 1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)


def active_from_precision(T):
    """Warm-start active sets from a precision matrix: ``β_j = Θ_{-j,j} / -Θ_jj`` where ``Θ_jj > 0``."""
    p = T.shape[0]
    td = np.diag(T).copy()
    mask = T != 0
    np.fill_diagonal(mask, False)
    mask[td <= 0] = False
    rows, cols = np.nonzero(mask)
    indptr = np.zeros(p + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=p), out=indptr[1:])
    return indptr, cols.astype(np.int64), T[rows, cols] / -td[rows]


def _column_lasso(W, b, alpha, j, A, x, thr, max_steps, max_add):
    """Exact lasso ``min ½ xᵀ W_{-j,-j} x − bᵀx + α|x|₁`` by feature-sign search (NumPy).

    ``A`` (int array) and ``x`` (its non-zero values) are the warm start; ``b``
    is the full column ``S[:, j]`` (entry ``j`` is ignored). Returns
    ``(A, x, w, status)`` with ``w = W[:, A] @ x`` (length p) and ``status``
    0 (solved), 1 (step cap hit) or 2 (``W_AA`` not positive definite: ``W``
    has lost definiteness, ``w`` is ``None``).
    """
    steps = 0
    sgn = np.sign(x)
    WA = None  # W[A] for the current A
    while True:
        # ---- optimise over the active set with the current sign pattern ----
        while A.size and steps < max_steps:
            steps += 1
            WA = W[A]
            bA = b[A]
            _, xn, info = _posv(WA[:, A], bA - alpha * sgn, lower=1, overwrite_a=1, overwrite_b=1)
            if info != 0:
                return A, x, None, 2
            sn = np.sign(xn)
            if (sn == sgn).all():
                x = xn
                break
            # discrete line search on the segment x -> xn: at xn and at each sign crossing
            idx = np.flatnonzero((sn != sgn) & (x != 0))
            ts = x[idx] / (x[idx] - xn[idx])
            inside = (ts > 0) & (ts < 1)
            idx, ts = idx[inside], ts[inside]
            Z = x[:, None] + (xn - x)[:, None] * np.append(ts, 1.0)[None, :]
            Z[idx, np.arange(idx.size)] = 0.0  # the coordinate that crosses zero at each t
            f = 0.5 * np.einsum("ic,ic->c", Z, WA[:, A] @ Z) - bA @ Z + alpha * np.abs(Z).sum(axis=0)
            x = Z[:, int(np.argmin(f))]
            keep = x != 0
            A, x = A[keep], x[keep]
            sgn = np.sign(x)
            WA = None
        # ---- check the zero coordinates ----
        if not A.size:
            w = np.zeros(W.shape[0])
        else:
            if WA is None:
                WA = W[A]
            w = x @ WA
        if steps >= max_steps:
            return A, x, w, 1
        r = w - b
        r[j] = 0.0
        r[A] = 0.0
        np.abs(r, out=r)
        if r.max() <= thr:
            return A, x, w, 0
        bad = np.flatnonzero(r > thr)
        if bad.size > max_add:  # add the worst few at once
            bad = bad[np.argpartition(-r[bad], max_add)[:max_add]]
        A = np.concatenate([A, bad])
        x = np.concatenate([x, np.zeros(bad.size)])
        sgn = np.concatenate([sgn, np.sign(b[bad] - w[bad])])
        WA = None
        steps += 1


def _sweep_numpy(W, S, diag, alpha, thr, max_steps, max_add, active, t22, stop_on_fail):
    """One sweep over the columns in NumPy. Returns ``(active, capped, failed, stopped, change)``.

    ``change`` is the largest change of an entry of ``W`` in the sweep.
    """
    p = S.shape[0]
    indptr, idx, val = active
    new_idx, new_val = [], []
    capped = failed = 0
    change = 0.0
    for j in range(p):
        A0, x0 = idx[indptr[j]:indptr[j + 1]], val[indptr[j]:indptr[j + 1]]
        A, x, w, st = _column_lasso(W, S[j], alpha, j, A0, x0, thr, max_steps, max_add)
        if st == 2:
            failed += 1
            if stop_on_fail:
                return active, capped, failed, True, change
            new_idx.append(A0)
            new_val.append(x0)
            continue
        capped += st == 1
        new_idx.append(A)
        new_val.append(x)
        w[j] = diag[j]
        change = max(change, float(np.abs(w - W[j]).max()))
        W[j] = w
        W[:, j] = w
        schur = diag[j] - float(w[A] @ x)
        if not schur > 1e-14 * diag[j]:
            failed += 1
            if stop_on_fail:
                return active, capped, failed, True, change
            schur = max(schur, 1e-300)
        t22[j] = 1.0 / schur
    counts = np.fromiter((a.size for a in new_idx), dtype=np.int64, count=p)
    out_ptr = np.zeros(p + 1, dtype=np.int64)
    np.cumsum(counts, out=out_ptr[1:])
    out_idx = np.concatenate(new_idx).astype(np.int64) if p else np.zeros(0, dtype=np.int64)
    out_val = np.concatenate(new_val).astype(float) if p else np.zeros(0)
    return (out_ptr, out_idx, out_val), capped, failed, False, change


def _sweep_compiled(W, S, diag, alpha, thr, max_steps, max_add, active, t22, stop_on_fail):
    """One sweep over the columns in C; the same contract as :func:`_sweep_numpy`."""
    p = S.shape[0]
    indptr, idx, val = active
    cap = max(2 * int(indptr[-1]), 4 * p) + p
    out_ptr = np.zeros(p + 1, dtype=np.int64)
    out_idx, out_val = np.empty(cap, dtype=np.int64), np.empty(cap)
    j = capped = failed = 0
    change = 0.0
    while True:
        j, c, f, stopped, dw = _glasso_sweep.sweep(W, S, diag, alpha, thr, max_steps, max_add, indptr, idx, val,
                                                   out_ptr, out_idx, out_val, t22, j, stop_on_fail)
        capped, failed, change = capped + c, failed + f, max(change, dw)
        if stopped:
            return active, capped, failed, True, change
        if j >= p:
            return (out_ptr, out_idx, out_val), capped, failed, False, change
        cap *= 2  # out of room: grow and resume at column j
        out_idx = np.concatenate([out_idx, np.empty(cap - out_idx.size, dtype=np.int64)])
        out_val = np.concatenate([out_val, np.empty(cap - out_val.size)])


def _sweep(*args):
    return (_sweep_compiled if USE_COMPILED else _sweep_numpy)(*args)


def glasso_bcd_block(S, alpha, diag, W, active, *, penalize_diagonal, tol, max_iter, warm=False, max_add=None,
                     dense=True):
    """Run the dual block-coordinate ascent on one (connected) block.

    Parameters
    ----------
    S : ndarray, shape (p, p), C-contiguous
    alpha : float
    diag : ndarray, shape (p,)
        The fixed dual diagonal ``S_ii + alpha`` or ``S_ii``.
    W : ndarray, shape (p, p), C-contiguous
        Dual start with ``diag`` on its diagonal; updated in place.
    active : tuple of ndarray
        Warm-start active sets ``(indptr, indices, values)`` (:func:`empty_active`,
        :func:`active_from_precision`).
    tol : float
        Stop when the duality gap is at most ``tol * max(1, |primal|)``.
    warm : bool
        ``W`` is not known to be positive definite: give up (``gap = nan``) as soon
        as it proves not to be, so the caller can restart from a checked start.
    dense : bool
        Return ``Theta`` as a dense array; else as the certificate built it (a CSR matrix
        above ``_DENSE_CERT_P``, dense below): a path that keeps sparse precisions never
        allocates a dense ``p x p`` one.

    Returns
    -------
    Theta, W, n_iter, converged, gap, primal, rho, active
        ``Theta`` is ``None`` when a warm run gave up. ``rho`` (``nan`` unless the
        sparse bound certified convergence): the eigenvalues of ``W^½ Θ W^½`` lie in
        ``[1 - rho, 1 + rho]``. ``active``: the final column-lasso coefficients (CSR
        arrays, as the argument), the warm start of a next solve along a path.
    """
    p = S.shape[0]
    S = np.ascontiguousarray(S)
    diag = np.ascontiguousarray(diag, dtype=float)
    scale = float(np.mean(np.abs(diag)))
    thr = alpha + 1e-12 * (alpha + scale)
    max_steps = 50 + 4 * p
    max_add = min(max_add or 2, max(p, 1))
    t22 = np.empty(p)
    rho, gap, primal, converged, T = np.nan, np.inf, None, False, None
    f_est = p + float(np.abs(np.log(diag)).sum())  # a rough |objective|, only to decide when to certify
    # A sweep that still moves W by more than this is not near tol: skip its certificate (the gap
    # fell roughly as the square of the change in our runs). A warm start's first sweep moves W by
    # the change of alpha and is often already converged: it is always checked.
    moving = _MOVING * np.sqrt(tol) * scale
    first_warm = active[0][-1] > 0
    it = 0
    for it in range(1, max_iter + 1):
        active, capped, failed, stopped, change = _sweep(W, S, diag, alpha, thr, max_steps, max_add, active, t22,
                                                         warm)
        if stopped:
            return None, W, it, False, np.nan, np.nan, np.nan, active
        all_ok = capped == 0 and failed == 0
        T = primal = None
        if (not all_ok or change > moving and not (first_warm and it == 1)) and it < max_iter:
            continue
        T, primal, gap, rho, f_est, certified = _certificate(S, W, active, t22, alpha, penalize_diagonal, tol,
                                                             f_est, last=it == max_iter)
        if certified and all_ok and gap <= tol * max(1.0, abs(primal)):
            converged = True
            break
    if T is None:
        T = assemble(p, active, t22)
        primal = _dense_primal(S, T, alpha, penalize_diagonal)
    elif dense and not isinstance(T, np.ndarray):
        T = T.toarray()
    return T, W, it, converged, gap, (np.nan if primal is None else primal), (rho if converged else np.nan), active


def _certificate(S, W, active, t22, alpha, penalize_diagonal, tol, f_est, last):
    """The precision the active sets give and its duality gap: ``(T, primal, gap, rho, f_est, certified)``.

    ``certified`` is False where the caller must sweep again: a precision not positive definite, or (sparse
    bound) a gap still far above ``tol`` before the ``last`` sweep. ``rho`` is the sparse bound's (nan for
    the dense certificate); ``f_est`` the |objective| the next decision uses.
    """
    p = S.shape[0]
    if p <= _DENSE_CERT_P:  # small: two dense Cholesky factorisations cost less than the sparse bound
        T = assemble(p, active, t22)
        primal, ld_w = _dense_primal(S, T, alpha, penalize_diagonal), logdet_dense(W)
        if primal is None or ld_w is None:
            return T, primal, np.inf, np.nan, f_est, False
        return T, primal, primal - ld_w - p, np.nan, f_est, True
    T = assemble(p, active, t22, sparse=True)
    gap, rho = gap_bound(S, W, T, alpha, penalize_diagonal)
    if gap > 10.0 * tol * max(1.0, f_est) and not last:
        return T, None, gap, rho, f_est, False
    primal = primal_objective(S, T, alpha, penalize_diagonal)  # also proves T positive definite
    if primal is None:
        return T, None, np.inf, rho, f_est, False
    f_est = abs(primal)
    lim = tol * max(1.0, f_est)
    if (lim < gap <= 10.0 * lim and p <= _EXACT_GAP_P) or last:
        ld_w = logdet_dense(W)  # the exact gap, where the bound's slack matters
        if ld_w is not None:
            gap = min(gap, primal - ld_w - p)
    return T, primal, gap, rho, f_est, True


def _dense_primal(S, Theta, alpha, penalize_diagonal):
    ld_t = logdet_dense(Theta)
    if ld_t is None:
        return None
    off = np.abs(Theta).sum() - (0.0 if penalize_diagonal else np.abs(np.diag(Theta)).sum())
    return -ld_t + float(np.vdot(S, Theta)) + alpha * off
