r"""Top-k eigenpairs of a symmetric matrix, with a deterministic sign convention.

Private PCA and whitening need only the ``k`` largest (algebraic) eigenvalues
of a ``d x d`` noisy moment matrix. Which LAPACK/ARPACK route is fastest was
measured (one BLAS thread; the table below):

=====  =====  ==============  =====================  ==============
d      k      full ``eigh``   ``eigh(subset_...)``   ``eigsh`` (LA)
=====  =====  ==============  =====================  ==============
200    10     7.4 ms          3.9 ms                 13 ms
800    10     275 ms          95 ms                  115 ms
1500   10     1.32 s          0.32 s                 0.38 s
2000   10     1.16 s          0.42 s                 0.019 s (gapped)
=====  =====  ==============  =====================  ==============

A subset ``eigh`` (LAPACK ``syevr``) is never slower than the full
decomposition; ARPACK's ``eigsh`` wins only for large ``d`` and ``k << d``
(and most when the top eigenvalues are separated from the bulk, as a
covariance plus noise usually is). ``method="auto"`` therefore uses
``eigsh`` when ``d >= 1000`` and ``k <= d // 100`` and the subset ``eigh``
otherwise, falling back to it if ARPACK does not converge.

Signs: eigenvectors are defined up to sign. Each returned vector is flipped
so that its entry of largest absolute value is positive (the first such
entry on ties) -- the convention of scikit-learn's ``svd_flip`` for PCA
components -- so results are deterministic and comparable across solvers.
"""

from dataclasses import dataclass

import numpy as np

from .._validation import check_data, check_int, check_option

__all__ = ["EigenResult", "top_eigenpairs", "flip_signs", "EIGEN_METHODS"]

EIGEN_METHODS = ("auto", "eigh", "eigsh")
_EIGSH_MIN_DIM = 1000
_EIGSH_MAX_FRACTION = 100


@dataclass(frozen=True, eq=False)
class EigenResult:
    """The ``k`` largest eigenpairs of a symmetric matrix.

    Attributes
    ----------
    eigenvalues : ndarray of shape (k,)
        In decreasing order.
    eigenvectors : ndarray of shape (d, k)
        Orthonormal columns, ``A @ V[:, j] = eigenvalues[j] V[:, j]``, each
        with its largest-magnitude entry positive.
    method : str
        ``"eigh"`` or ``"eigsh"``: the solver that produced them.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    method: str


def flip_signs(V):
    """Flip each column of ``V`` so that its largest-magnitude entry is positive.

    Parameters
    ----------
    V : ndarray of shape (d, k)

    Returns
    -------
    ndarray of shape (d, k)
        A new array.

    Examples
    --------
    >>> flip_signs(np.array([[0.6], [-0.8]]))
    array([[-0.6],
           [ 0.8]])
    """
    V = np.array(V, dtype=np.float64)
    if V.ndim != 2:
        raise ValueError(f"'V' must be 2-D of shape (d, k); got shape {V.shape}.")
    if V.size == 0:
        return V
    idx = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[idx, np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return V * signs


def _choose(method, d, k):
    if method != "auto":
        return method
    return "eigsh" if d >= _EIGSH_MIN_DIM and k <= d // _EIGSH_MAX_FRACTION else "eigh"


def _eigh(A, k):
    from scipy import linalg  # here, as in every function that needs it: scipy.linalg's import costs a
    # command about 0.4 CPU-s, and a covariance command needs no eigenpairs

    d = A.shape[0]
    w, V = linalg.eigh(A, subset_by_index=[d - k, d - 1], check_finite=False)
    return w[::-1], V[:, ::-1]


def _eigsh(A, k):
    from scipy.sparse import linalg as sparse_linalg

    d = A.shape[0]
    # A fixed start vector makes ARPACK deterministic (this is numerics, not noise).
    v0 = np.random.default_rng(0).standard_normal(d)
    w, V = sparse_linalg.eigsh(A, k=k, which="LA", v0=v0, tol=0.0)
    order = np.argsort(w)[::-1]
    return w[order], V[:, order]


def top_eigenpairs(A, n_components, *, method="auto"):
    r"""The ``n_components`` largest eigenvalues of a symmetric matrix and their eigenvectors.

    .. math::

        A = \sum_j \lambda_j v_j v_j^\top, \quad
        \lambda_1 \ge \dots \ge \lambda_k \text{ returned with } v_1, \dots, v_k

    Parameters
    ----------
    A : array-like of shape (d, d)
        Symmetric (only this is assumed; the lower triangle is read by
        ``eigh``). A noisy moment may be indefinite: eigenvalues are
        ranked by value, not magnitude.
    n_components : int in [1, d]
    method : {"auto", "eigh", "eigsh"}, default="auto"
        ``"eigh"``: LAPACK with ``subset_by_index``; ``"eigsh"``: ARPACK
        Lanczos (requires ``n_components < d``); ``"auto"``: by measured
        speed (module docstring).

    Returns
    -------
    EigenResult

    Examples
    --------
    >>> r = top_eigenpairs(np.diag([1.0, 3.0, 2.0]), 2)
    >>> r.eigenvalues
    array([3., 2.])
    >>> r.eigenvectors[:, 0]
    array([0., 1., 0.])
    """
    A = check_data(A, name="A")
    d = A.shape[0]
    if A.shape[1] != d:
        raise ValueError(f"'A' must be a square matrix of shape (d, d); got shape {A.shape}.")
    k = check_int(n_components, "n_components", minimum=1)
    if k > d:
        raise ValueError(f"'n_components' must be an integer in [1, {d}] (the matrix dimension); got {k}.")
    method = check_option(method, "method", EIGEN_METHODS)
    chosen = _choose(method, d, k)
    if chosen == "eigsh" and k >= d:
        raise ValueError(f"method='eigsh' needs n_components < d = {d}; got {k}. Use method='eigh'.")
    if chosen == "eigsh":
        from scipy.sparse.linalg import ArpackNoConvergence

        try:
            w, V = _eigsh(A, k)
        except ArpackNoConvergence:
            chosen = "eigh"
    if chosen == "eigh":
        w, V = _eigh(A, k)
    return EigenResult(eigenvalues=np.ascontiguousarray(w), eigenvectors=flip_signs(V), method=chosen)
