"""Shared pieces of the graphical-lasso solvers: input checks, objective, result type."""

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg

from .._validation import as_float_array, check_finite, check_nonnegative

__all__ = ["GlassoResult", "GlassoInfeasibleError", "glasso_objective"]

NO_SOLUTION = (
    "the noisy S has no graphical-lasso solution at this alpha: {why} (the objective is unbounded below, "
    "docs/algorithms.md §0.5); project S to the PSD cone first (Release.project_psd) or increase alpha"
)


class GlassoInfeasibleError(ValueError):
    """The graphical lasso has no solution for this (indefinite) ``S`` and ``alpha``.

    The dual ``max log det W`` s.t. ``|W - S| <= alpha`` entrywise has no
    positive-definite feasible point, so the primal is unbounded below.
    Subclasses ``ValueError``.
    """


@dataclass(frozen=True)
class GlassoResult:
    """The outcome of one graphical-lasso solve.

    Attributes
    ----------
    precision : ndarray or scipy.sparse.csr_matrix, shape (p, p)
        The sparse, symmetric, positive-definite estimate of the precision matrix
        (a CSR matrix from a path solved with ``sparse=True``, else dense).
    covariance : ndarray, shape (p, p), or None
        The matching covariance: the dual matrix ``W`` (fast solver; equal to
        ``inv(precision)`` up to the tolerance) or ``inv(precision)`` (ADMM);
        ``None`` from a path solved with ``sparse=True``.
    objective : float
        :func:`glasso_objective` at ``precision``.
    n_iter : int
        Sweeps (fast solver, the largest over blocks) or ADMM iterations.
    converged : bool
        Whether the stopping rule was met within ``max_iter``.
    solver : str
        ``"bcd"`` (fast solver) or ``"admm"``.
    alpha : float
    penalize_diagonal : bool
    duality_gap : float
        Primal minus dual objective (an upper bound on the suboptimality) for
        the fast solver; ``nan`` for ADMM.
    n_blocks : int
        Connected components of ``{|S_ij| > alpha}`` solved separately (1 without screening).
    message : str
        A human-readable status.
    info : dict
        Solver-specific extras (ADMM: final ``rho``, residuals).
    """

    precision: np.ndarray
    covariance: np.ndarray
    objective: float
    n_iter: int
    converged: bool
    solver: str
    alpha: float
    penalize_diagonal: bool
    duality_gap: float = math.nan
    n_blocks: int = 1
    message: str = ""
    info: dict = field(default_factory=dict)


def check_cov(S, name="S"):
    """A finite, square, symmetric float matrix (tiny asymmetries are averaged away)."""
    arr = as_float_array(S, name)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 1:
        raise ValueError(f"'{name}' must be a square 2-D matrix of shape (p, p); got shape {arr.shape}.")
    check_finite(arr, name)
    scale = max(float(arr.max()), -float(arr.min()), np.finfo(float).tiny)
    asym = _asymmetry(arr)
    if asym > 1e-8 * scale:
        raise ValueError(
            f"'{name}' must be symmetric; the largest |S_ij - S_ji| is {asym:.3g} "
            f"(relative {asym / scale:.3g}, allowed 1e-8)."
        )
    return arr if asym == 0 else 0.5 * (arr + arr.T)  # an exactly symmetric S is used as it is: no p x p copy


def _asymmetry(arr):
    """``max |A_ij - A_ji|`` in row blocks, without a ``p x p`` temporary."""
    p = arr.shape[0]
    step = max(1, (1 << 20) // p)
    return max(float(np.max(np.abs(arr[lo:lo + step] - arr[:, lo:lo + step].T))) for lo in range(0, p, step))


def check_alpha(alpha):
    return check_nonnegative(alpha, "alpha")


def glasso_objective(S, Theta, alpha, penalize_diagonal=True):
    """The graphical-lasso objective.

    .. math::

        f(\\Theta) = -\\log\\det\\Theta + \\operatorname{tr}(S\\Theta)
                     + \\alpha \\sum_{i, j} |\\Theta_{ij}|,

    where the sum runs over all entries (``penalize_diagonal=True``, the
    papers' and Boyd et al.'s convention) or over ``i != j`` only
    (scikit-learn's convention).

    Parameters
    ----------
    S : array_like, shape (p, p)
        Symmetric (sample or noisy) covariance.
    Theta : array_like, shape (p, p)
        Symmetric candidate precision matrix.
    alpha : float
        Penalty, ``>= 0``.
    penalize_diagonal : bool, default True

    Returns
    -------
    float
        The objective; ``inf`` when ``Theta`` is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.solvers import glasso_objective
    >>> round(glasso_objective(np.eye(2), np.eye(2), 0.1), 6)
    2.2
    """
    S = check_cov(S, "S")
    Theta = check_cov(Theta, "Theta")
    if Theta.shape != S.shape:
        raise ValueError(f"'Theta' must have the shape of 'S' {S.shape}; got {Theta.shape}.")
    alpha = check_alpha(alpha)
    return _objective(S, Theta, alpha, penalize_diagonal)


def _objective(S, Theta, alpha, penalize_diagonal):
    try:
        L = linalg.cholesky(Theta, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return math.inf
    d = np.diag(L)
    if not np.all(d > 0):
        return math.inf
    l1 = float(np.abs(Theta).sum())
    if not penalize_diagonal:
        l1 -= float(np.abs(np.diag(Theta)).sum())
    return -2.0 * float(np.sum(np.log(d))) + float(np.vdot(S, Theta)) + alpha * l1


def pd_inverse(A):
    """``inv(A)`` via Cholesky for a positive-definite ``A``, or ``None``."""
    try:
        c, low = linalg.cho_factor(A, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return None
    if not np.all(np.diag(c) > 0):
        return None
    inv = linalg.cho_solve((c, low), np.eye(A.shape[0]), check_finite=False)
    return 0.5 * (inv + inv.T)
