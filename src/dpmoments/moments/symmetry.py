"""Symmetrisation of matrices and 3-tensors before symmetric noise is added.

Why this matters (``docs/algorithms.md`` §0.4): the mechanisms draw *symmetric*
noise (one value per upper-triangle entry, or per index orbit of a tensor,
copied to every permutation). If the statistic ``M`` is not symmetric, the
noise cancels from its antisymmetric part::

    (M + E) - (M + E)^T = M - M^T

so ``M - M^T`` is released exactly, with no noise at all. Imtiaz & Sarwate's
cross moments ``(1/N) sum x1 x2^T`` are of this kind. Projecting the
statistic onto the symmetric matrices (tensors) first removes that part.

The projection is the average over index permutations. It is an orthogonal
projection, so it is non-expansive: ``||sym(M)||_F <= ||M||_F`` and
``||sym(M) - sym(M')||_F <= ||M - M'||_F``. Symmetrising a statistic
therefore never increases its sensitivity, and can be applied before the
mechanism at no cost.
"""

import numpy as np

from .._validation import check_data

__all__ = ["symmetrise_matrix", "symmetrise_tensor"]

# The six permutations of three indices.
_PERMUTATIONS = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))


def symmetrise_matrix(M):
    r"""Project a square matrix onto the symmetric matrices.

    .. math::

        \operatorname{sym}(M) = \tfrac{1}{2}(M + M^\top)

    Parameters
    ----------
    M : array-like of shape (d, d)
        A finite square matrix.

    Returns
    -------
    M_sym : ndarray of shape (d, d), float64
        A new, exactly symmetric array. A symmetric ``M`` is returned
        unchanged (as a copy), so the function is idempotent.

    Notes
    -----
    Symmetric noise added to a non-symmetric statistic leaks the statistic's
    antisymmetric part exactly (``docs/algorithms.md`` §0.4); symmetrise first.
    The map is an orthogonal projection, hence non-expansive in the Frobenius
    norm: it never increases a sensitivity.

    Examples
    --------
    >>> import numpy as np
    >>> symmetrise_matrix(np.array([[1.0, 2.0], [0.0, 3.0]]))
    array([[1., 1.],
           [1., 3.]])
    """
    M = check_data(M, name="M")
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"'M' must be a square matrix of shape (d, d); got shape {M.shape}.")
    out = M + M.T
    out /= 2.0  # in place: one d x d array, the same bits as (M + M.T) / 2.0
    return out


def symmetrise_tensor(T):
    r"""Project a cubic 3-tensor onto the symmetric tensors.

    .. math::

        \operatorname{sym}(T)_{ijk} = \frac{1}{6} \sum_{\pi \in S_3} T_{\pi(i,j,k)}

    Parameters
    ----------
    T : array-like of shape (d, d, d)
        A finite cubic tensor.

    Returns
    -------
    T_sym : ndarray of shape (d, d, d), float64
        A new tensor, exactly equal on all permutations of an index triple.
        A symmetric ``T`` is returned unchanged (as a copy), so the function
        is idempotent.

    Notes
    -----
    As for matrices (``docs/algorithms.md`` §0.4), noise drawn once per index orbit
    and copied to every permutation leaves the non-symmetric part of ``T``
    un-noised; symmetrise first. The map is an orthogonal projection, hence
    non-expansive in the Frobenius norm.

    Examples
    --------
    >>> import numpy as np
    >>> T = np.zeros((2, 2, 2)); T[0, 0, 1] = 3.0
    >>> float(symmetrise_tensor(T)[1, 0, 0])
    1.0
    """
    T = _check_cubic(T)
    if _is_symmetric_tensor(T):
        return T.copy()
    total = sum(T.transpose(p) for p in _PERMUTATIONS)
    mean = total / 6.0
    # Rounding in the sum depends on the order of its terms; read every entry
    # from its sorted index triple so the result is exactly symmetric.
    idx = np.sort(np.indices(T.shape), axis=0)
    return mean[idx[0], idx[1], idx[2]]


def _is_symmetric_tensor(T):
    # Two transpositions generate all six permutations.
    return np.array_equal(T, T.transpose(1, 0, 2)) and np.array_equal(T, T.transpose(0, 2, 1))


def _check_cubic(T):
    if isinstance(T, (str, bytes)) or T is None:
        raise TypeError(f"'T' must be an array of numbers; got {type(T).__name__}.")
    try:
        arr = np.asarray(T)
    except Exception as exc:  # ragged nested lists
        raise TypeError(f"'T' must be an array of numbers; could not convert it: {exc}") from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"'T' must hold real numbers; got dtype {arr.dtype}.")
    if arr.ndim != 3 or not (arr.shape[0] == arr.shape[1] == arr.shape[2]) or arr.shape[0] < 1:
        raise ValueError(f"'T' must be a cubic 3-tensor of shape (d, d, d) with d >= 1; got shape {arr.shape}.")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError("'T' contains NaN or infinite values; a statistic to be released must be finite.")
    return arr
