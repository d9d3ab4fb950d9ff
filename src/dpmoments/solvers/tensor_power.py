r"""Whitening and the robust tensor power method (orthogonal tensor decomposition).

Method of moments for latent-variable models (Anandkumar, Ge, Hsu, Kakade &
Telgarsky, JMLR 2014; ``docs/algorithms.md`` §2.6--2.6.1):

1. **Whiten** with the second moment: ``W = U_K Sigma_K^{-1/2}`` from the
   ``K`` largest eigenpairs of ``M2``, so ``W^T M2 W = I_K``. A noisy
   ``M2`` can have small or negative top eigenvalues; they are floored at a
   positive ``eta`` first (``docs/algorithms.md`` §2.8.6).
2. Project the third moment: ``T = M3(W, W, W)``, a ``K x K x K`` tensor
   that is (approximately) orthogonally decomposable,
   ``T = sum_k lambda_k theta_k^{(3)}`` with ``lambda_k = 1/sqrt(w_k)``.
3. **Robust tensor power method**: for each component, ``L`` random starts
   on the sphere, ``N`` iterations :math:`\theta \leftarrow T(I,\theta,\theta)/\|\cdot\|`
   each (all ``L`` starts advanced together as one batch, a matrix product),
   keep the start with the largest :math:`T(\theta,\theta,\theta)`, run ``N``
   more iterations, set :math:`\lambda = T(\theta,\theta,\theta)` and deflate
   :math:`T \leftarrow T - \lambda\,\theta^{\otimes 3}`.
4. **Un-whiten**: ``mu_k = lambda_k (W^T)^+ theta_k`` with
   ``(W^T)^+ = U_K Sigma_K^{1/2}``, weights ``w_k = 1/lambda_k^2``.

Pure numerics (layer 2): no privacy here. The random starts come from the
``rng`` passed in; they are not privacy noise.
"""

from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from .._validation import check_data, check_int, check_positive
from .eigen import top_eigenpairs

__all__ = [
    "TensorPowerResult",
    "Whitening",
    "robust_tensor_power",
    "tensor_apply",
    "whiten",
    "whiten_tensor",
    "unwhiten",
]


@dataclass(frozen=True, eq=False)
class TensorPowerResult:
    """Eigenpairs found by the robust tensor power method, in the order found.

    Attributes
    ----------
    eigenvalues : ndarray of shape (n_components,)
        ``lambda_k = T(theta_k, theta_k, theta_k)`` of the deflated tensor.
    eigenvectors : ndarray of shape (n_components, K)
        Unit rows ``theta_k`` (one component per row, as scikit-learn's
        ``components_``).
    n_restarts, n_iter : int
        ``L`` and ``N`` used.
    residual_norm : float
        Frobenius norm of the tensor after the last deflation.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    n_restarts: int
    n_iter: int
    residual_norm: float


@dataclass(frozen=True, eq=False)
class Whitening:
    """A whitening map from the top eigenpairs of a (noisy) second moment.

    Attributes
    ----------
    matrix : ndarray of shape (d, K)
        ``W = U_K diag(eigenvalues)^{-1/2}``; ``W^T M2 W = I`` when nothing
        was floored.
    eigenvalues : ndarray of shape (K,)
        The top-``K`` eigenvalues after flooring (all ``>= floor``).
    eigenvectors : ndarray of shape (d, K)
        ``U_K``.
    floor : float
    n_floored : int
        How many eigenvalues were raised to ``floor``.
    """

    matrix: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    floor: float
    n_floored: int

    @property
    def pseudo_inverse(self):
        """``(W^T)^+ = U_K diag(eigenvalues)^{1/2}``, shape (d, K)."""
        return self.eigenvectors * np.sqrt(self.eigenvalues)


def _check_cubic(T, name="T"):
    arr = np.asarray(T)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"'{name}' must hold real numbers; got dtype {arr.dtype}.")
    if arr.ndim != 3 or not (arr.shape[0] == arr.shape[1] == arr.shape[2]) or arr.shape[0] < 1:
        raise ValueError(f"'{name}' must be a cubic 3-tensor of shape (K, K, K) with K >= 1; got shape {arr.shape}.")
    arr = np.array(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"'{name}' contains NaN or infinite values.")
    return arr


def tensor_apply(T, thetas):
    r"""Batched :math:`T(I, \theta, \theta)`: ``out[l, i] = sum_jk T[i, j, k] theta[l, j] theta[l, k]``.

    Parameters
    ----------
    T : ndarray of shape (K, K, K)
    thetas : ndarray of shape (L, K)

    Returns
    -------
    ndarray of shape (L, K)

    Examples
    --------
    >>> T = np.zeros((2, 2, 2)); T[0, 0, 0] = 2.0
    >>> tensor_apply(T, np.array([[1.0, 0.0], [0.0, 1.0]]))
    array([[2., 0.],
           [0., 0.]])
    """
    K = T.shape[0]
    outer = (thetas[:, :, None] * thetas[:, None, :]).reshape(thetas.shape[0], K * K)
    return outer @ T.reshape(K, K * K).T


def _iterate(T, thetas, n_iter):
    for _ in range(n_iter):
        nxt = tensor_apply(T, thetas)
        norms = np.linalg.norm(nxt, axis=1, keepdims=True)
        # A start that maps to zero (e.g. on a zero tensor) stays where it is.
        thetas = np.where(norms > 0, nxt / np.where(norms > 0, norms, 1.0), thetas)
    return thetas


def _one_component(T, n_restarts, n_iter, gen):
    K = T.shape[0]
    starts = gen.standard_normal((n_restarts, K))
    starts /= np.linalg.norm(starts, axis=1, keepdims=True)
    thetas = _iterate(T, starts, n_iter)
    scores = np.einsum("li,li->l", tensor_apply(T, thetas), thetas)
    best = _iterate(T, thetas[np.argmax(scores)][None, :], n_iter)[0]
    lam = float(tensor_apply(T, best[None, :])[0] @ best)
    return lam, best


def robust_tensor_power(T, n_components, *, n_restarts=10, n_iter=30, rng=None):
    r"""Orthogonal decomposition of a symmetric tensor by the robust tensor power method.

    .. math::

        T \approx \sum_{k=1}^{r} \lambda_k\, \theta_k \otimes \theta_k \otimes \theta_k,
        \qquad \theta_{t+1} = \frac{T(I, \theta_t, \theta_t)}{\|T(I, \theta_t, \theta_t)\|}

    Anandkumar et al. (2014), Algorithm 1: ``L`` random starts (uniform on
    the sphere), ``N`` iterations each, the start with the largest
    :math:`T(\theta,\theta,\theta)` refined by ``N`` more iterations,
    :math:`\lambda = T(\theta,\theta,\theta)`, deflation. The ``L`` starts
    are iterated together: one ``(L, K^2) @ (K^2, K)`` product per step.

    Parameters
    ----------
    T : array-like of shape (K, K, K)
        Symmetric (the method reads mode 1 as the free mode).
    n_components : int in [1, K]
    n_restarts : int >= 1, default=10
        ``L``.
    n_iter : int >= 1, default=30
        ``N`` (per phase).
    rng : None, int or numpy.random.Generator
        Source of the random starts.

    Returns
    -------
    TensorPowerResult

    Examples
    --------
    >>> V = np.eye(3)[:2]
    >>> T = 2.0 * np.einsum("i,j,k->ijk", V[0], V[0], V[0]) + np.einsum("i,j,k->ijk", V[1], V[1], V[1])
    >>> res = robust_tensor_power(T, 2, rng=0)
    >>> np.round(res.eigenvalues, 6), np.round(np.abs(res.eigenvectors), 6)
    (array([2., 1.]), array([[1., 0., 0.],
           [0., 1., 0.]]))
    """
    T = _check_cubic(T)
    K = T.shape[0]
    r = check_int(n_components, "n_components", minimum=1)
    if r > K:
        raise ValueError(f"'n_components' must be an integer in [1, {K}] (the tensor dimension); got {r}.")
    L = check_int(n_restarts, "n_restarts", minimum=1)
    N = check_int(n_iter, "n_iter", minimum=1)
    gen = as_generator(rng)
    lams, vecs = np.empty(r), np.empty((r, K))
    for k in range(r):
        lams[k], vecs[k] = _one_component(T, L, N, gen)
        T -= lams[k] * np.einsum("i,j,k->ijk", vecs[k], vecs[k], vecs[k])
    return TensorPowerResult(eigenvalues=lams, eigenvectors=vecs, n_restarts=L, n_iter=N,
                             residual_norm=float(np.linalg.norm(T)))


def whiten(M2, n_components, floor, *, method="auto"):
    r"""The whitening matrix :math:`W = U_K \max(\Sigma_K, \eta)^{-1/2}` of a symmetric matrix.

    Parameters
    ----------
    M2 : array-like of shape (d, d)
        Symmetric (possibly noisy and indefinite).
    n_components : int in [1, d]
        ``K``.
    floor : float > 0
        ``eta``: the top-``K`` eigenvalues are raised to at least this value
        before the inverse square root (free post-processing of a release).
    method : {"auto", "eigh", "eigsh"}
        Eigensolver (:func:`dpmoments.solvers.eigen.top_eigenpairs`).

    Returns
    -------
    Whitening

    Examples
    --------
    >>> w = whiten(np.diag([4.0, 1.0, -0.5]), 2, floor=1e-6)
    >>> np.round(w.matrix.T @ np.diag([4.0, 1.0, -0.5]) @ w.matrix, 12)
    array([[1., 0.],
           [0., 1.]])
    """
    floor = check_positive(floor, "floor")
    eig = top_eigenpairs(M2, n_components, method=method)
    lam = np.maximum(eig.eigenvalues, floor)
    n_floored = int(np.count_nonzero(eig.eigenvalues < floor))
    U = eig.eigenvectors
    return Whitening(matrix=U / np.sqrt(lam), eigenvalues=lam, eigenvectors=U, floor=floor, n_floored=n_floored)


def whiten_tensor(T, W):
    r"""The multilinear map :math:`T(W, W, W)_{abc} = \sum_{ijk} T_{ijk} W_{ia} W_{jb} W_{kc}`.

    Parameters
    ----------
    T : array-like of shape (d, d, d)
    W : array-like of shape (d, K)

    Returns
    -------
    ndarray of shape (K, K, K)

    Examples
    --------
    >>> T = np.zeros((2, 2, 2)); T[1, 1, 1] = 8.0
    >>> whiten_tensor(T, np.array([[0.0], [0.5]]))
    array([[[1.]]])
    """
    T = _check_cubic(T)
    W = check_data(W, name="W")
    d, K = W.shape
    if d != T.shape[0]:
        raise ValueError(f"'W' must have shape (d, K) with d = {T.shape[0]} rows; got shape {W.shape}.")
    A = (T.reshape(d * d, d) @ W).reshape(d, d, K)            # contract mode 3
    A = np.einsum("ijc,jb->ibc", A, W, optimize=True)          # mode 2
    return np.tensordot(W, A, axes=([0], [0]))                 # mode 1 -> (K, K, K)


def unwhiten(whitening, thetas):
    r"""Map whitened unit vectors back: :math:`(W^\top)^+ \theta = U_K \Sigma_K^{1/2} \theta`.

    Parameters
    ----------
    whitening : Whitening
    thetas : array-like of shape (r, K)
        One whitened vector per row.

    Returns
    -------
    ndarray of shape (r, d)
        Multiply row ``k`` by ``lambda_k`` to get the component ``mu_k``.
    """
    if not isinstance(whitening, Whitening):
        raise TypeError(f"'whitening' must be a Whitening; got {type(whitening).__name__}.")
    thetas = check_data(thetas, name="thetas")
    K = whitening.matrix.shape[1]
    if thetas.shape[1] != K:
        raise ValueError(f"'thetas' must have shape (r, {K}); got shape {thetas.shape}.")
    return thetas @ whitening.pseudo_inverse.T
