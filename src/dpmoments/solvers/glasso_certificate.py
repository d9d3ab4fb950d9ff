"""The graphical lasso's accuracy certificate: the primal matrix, its objective, the duality gap.

The block-coordinate ascent keeps the dual ``W`` and, per column, the lasso
coefficients ``β_j`` and the Schur-complement inverse ``t_j``; the primal matrix
``Θ`` (column ``j``: ``Θ_jj = t_j``, ``Θ_{-j,j} = -β_j t_j``) is assembled from them
only to check the gap. Small blocks compute the gap with two dense Cholesky
factorisations; large ones never factorise a dense ``p × p`` matrix:

* the gap is bounded from ``tr(ΘW)`` and ``‖ΘW - I‖_F²`` (:func:`gap_bound`), computed
  from the rows of ``Θ W`` one block at a time, so no ``p × p`` temporary is made and the
  cost is one sparse-dense product (about one sweep);
* ``log det Θ`` (the primal objective) and the proof that ``Θ`` is positive definite
  come from a sparse LU factorisation of ``Θ`` with a symmetric fill-reducing
  ordering (:func:`logdet_pd`), whose cost is its fill, not ``p³``.

Internal module: the public entry point is :func:`dpmoments.solvers.graphical_lasso`.
"""

import os

import numpy as np
from scipy.linalg import lapack
from scipy.sparse import csc_matrix, csr_matrix
from scipy.sparse.linalg import splu

from .._lazy import matching_extension

# The version of ``_glasso_sweep.c``'s calls made here and in glasso_bcd.py (its ``DPM_GLASSO_SWEEP_ABI``): an
# extension built from another version is not used.
GLASSO_SWEEP_ABI = 1
try:  # the compiled residual; absent where the package was installed without a C compiler
    from . import _glasso_sweep as _compiled
except ImportError:  # pragma: no cover
    _compiled = None
_compiled = matching_extension(_compiled, GLASSO_SWEEP_ABI)
if os.environ.get("DPMOMENTS_PURE_NUMPY", "") not in ("", "0"):
    _compiled = None

__all__ = []

_potrf = lapack.dpotrf

# Row block of Θ W products (NumPy fallback): about 4 Mi doubles (32 MiB) per temporary.
_BLOCK_ELEMENTS = 1 << 22
# Sparse LU for log det Θ only while Θ is at most this dense; denser Θ is factorised densely.
_SPARSE_LU_DENSITY = 0.05


def logdet_dense(A):
    """``log det A`` via Cholesky, or ``None`` if ``A`` is not positive definite.

    LAPACK's ``potrf`` directly: ``scipy.linalg.cholesky``'s checks and wrapping were about a quarter
    of the call at p = 100 in our runs, where a warm path certifies every penalty with two of these.
    ``A`` is symmetric, so ``A.T`` (Fortran-ordered, the layout LAPACK reads) is the same matrix.
    """
    L, info = _potrf(A.T, lower=1, clean=0, overwrite_a=0)
    if info != 0:
        return None
    d = np.diag(L)
    if not np.all(d > 0) or not np.all(np.isfinite(d)):
        return None
    return 2.0 * float(np.sum(np.log(d)))


def logdet_pd(T):
    """``log det T`` of a sparse symmetric ``T``, or ``None`` if it is not positive definite.

    An LU factorisation restricted to diagonal pivots under a symmetric permutation is
    ``P T Pᵀ = L D Lᵀ``: ``T`` is positive definite exactly when every pivot is positive.
    If SuperLU had to pivot off the diagonal (row and column permutations differ) or
    ``T`` is dense, a dense Cholesky decides instead.
    """
    p = T.shape[0]
    if T.nnz > _SPARSE_LU_DENSITY * p * p:
        return logdet_dense(T.toarray())
    T = _csr(T)
    try:  # a symmetric CSR matrix is its own CSC transpose: no conversion
        lu = splu(csc_matrix((T.data, T.indices, T.indptr), shape=T.shape), permc_spec="MMD_AT_PLUS_A",
                  diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    except RuntimeError:  # exactly singular
        return None
    if not np.array_equal(lu.perm_r, lu.perm_c):
        return logdet_dense(T.toarray())
    d = lu.U.diagonal()
    if not (np.all(d > 0) and np.all(np.isfinite(d))):
        return None
    return float(np.sum(np.log(d)))


def assemble(p, active, t22, sparse=False):
    """The symmetrised primal matrix from the active sets ``(indptr, indices, values)`` and ``t22``."""
    indptr, idx, val = active
    counts = np.diff(indptr)
    ar = np.arange(p)
    rows = np.concatenate([np.repeat(ar, counts), ar])
    cols = np.concatenate([idx[:indptr[-1]], ar])
    vals = np.concatenate([val[:indptr[-1]] * -np.repeat(t22, counts), t22])
    if sparse:  # (T + Tᵀ)/2 in one construction: duplicates are summed
        half = 0.5 * vals[:-p]
        return csr_matrix((np.concatenate([half, half, vals[-p:]]),
                           (np.concatenate([rows[:-p], cols[:-p], ar]), np.concatenate([cols[:-p], rows[:-p], ar]))),
                          shape=(p, p))
    Theta = np.zeros((p, p))
    Theta[rows, cols] = vals
    Theta += Theta.T
    Theta *= 0.5
    return Theta


def gap_bound(S, W, T, alpha, penalize_diagonal):
    """An upper bound on the duality gap from the sparse primal ``T`` and the dual ``W``, or ``inf``.

    ``T W`` is similar to ``W^½ T W^½``, so ``E = T W - I`` has real eigenvalues ``e_i``, and
    ``Σ e_i² <= ‖E‖_F²`` (Schur's inequality). With ``ρ = ‖E‖_F < 1`` every ``|e_i| <= ρ`` and
    ``log(1 + e) >= e - e² / (2(1 - ρ))``, so
    ``gap = tr(S T) + α|T|₁ - p - log det(T W)`` is at most the value returned. The
    Frobenius norm costs one sparse-dense product where ``tr E²`` costs two, and near the
    solution ``E`` is nearly symmetric, so it is nearly as tight (within 20% in our runs).
    Valid once ``T`` (or ``W``) is known to be positive definite. Returns ``(bound, ρ)``;
    the eigenvalues of ``W^½ T W^½`` lie in ``[1 - ρ, 1 + ρ]``.
    """
    T = _csr(T)
    trP, fro = _residual(W, T)
    rho = np.sqrt(max(fro, 0.0))
    if not rho < 0.5:
        return np.inf, rho
    return _linear(S, T, alpha, penalize_diagonal) - trP + fro / (2.0 * (1.0 - rho)), rho


def _csr(T):
    return T if isinstance(T, csr_matrix) else csr_matrix(T)


def _linear(S, T, alpha, penalize_diagonal):
    """``tr(S T) + alpha |T|_1`` (off the diagonal only when it is not penalised) for a CSR ``T``."""
    rows = np.repeat(np.arange(T.shape[0]), np.diff(T.indptr))
    l1 = np.abs(T.data)
    if not penalize_diagonal:
        l1 = l1[rows != T.indices]
    return float(S[rows, T.indices] @ T.data) + alpha * float(l1.sum())


def _residual(W, T):
    """``tr(T W)`` and ``‖T W - I‖_F²``: in C where it is built, else in row blocks of ``T W``."""
    if _compiled is not None and W.flags.c_contiguous and W.dtype == np.float64:
        return _compiled.residual(W, T.indptr.astype(np.int64), T.indices.astype(np.int64),
                                  np.ascontiguousarray(T.data, dtype=np.float64))
    p = W.shape[0]
    tr = fro = 0.0
    step = max(1, _BLOCK_ELEMENTS // p)
    for lo in range(0, p, step):
        rows = np.asarray(T[lo:lo + step] @ W)  # (T W)[lo:lo+step, :], a fresh array
        ar = np.arange(rows.shape[0])
        tr += float(rows[ar, lo + ar].sum())
        rows[ar, lo + ar] -= 1.0  # subtract I before squaring: no cancellation
        fro += float(np.vdot(rows, rows))
    return tr, fro


def primal_objective(S, T, alpha, penalize_diagonal):
    """The graphical-lasso objective at a sparse ``T``, or ``None`` if ``T`` is not positive definite."""
    T = _csr(T)
    ld = logdet_pd(T)
    if ld is None:
        return None
    return -ld + _linear(S, T, alpha, penalize_diagonal)
