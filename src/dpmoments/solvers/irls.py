r"""Iteratively reweighted least squares for the Lp loss, 1 <= p <= 2 (non-private numerics).

IRLS minimises :math:`\sum_i |y_i - x_i^\top\theta|^p` by repeating
(``docs/algorithms.md`` §3.1)

.. math::

    s_i = \frac{1}{\max(1/w_{\max},\ |r_i|^{2-p})}, \qquad
    \theta \leftarrow B^{-1} A, \quad
    A = \frac1N \sum_i s_i x_i y_i, \quad B = \frac1N \sum_i s_i x_i x_i^\top ,

where :math:`r_i = y_i - x_i^\top\theta` are the residuals of the previous
iterate. Park & Welling (2016, eq. 2) threshold the weights at their "δ",
renamed ``w_max`` here (it is not the delta of differential privacy), so
that :math:`0 < s_i \le w_{\max}` -- the bound their sensitivity needs. For
``p = 1`` (least absolute deviations) the fixed point is the Huber-type
regression with threshold ``1/w_max``, which tends to the LAD (median
regression) fit as ``w_max`` grows.

These functions are pure numerics: the private estimator
(``estimators/irls.py``) forms the same moments, adds noise and solves.
"""

import math
from dataclasses import dataclass

import numpy as np

from .._validation import check_data, check_int, check_nonnegative, check_positive, check_vector

__all__ = ["check_p", "irls_weights", "weighted_moments", "auto_psd_floor", "solve_weighted", "irls", "IRLSResult"]


def check_p(p):
    """The exponent ``p`` of the IRLS loss ``|r|^p``: a number in [1, 2]."""
    p = check_positive(p, "p")
    if not 1.0 <= p <= 2.0:
        raise ValueError(f"'p' must be in [1, 2]; got {p}.")
    return p


def irls_weights(residuals, w_max, p=1.0):
    r"""Thresholded IRLS weights :math:`s_i = 1/\max(1/w_{\max}, |r_i|^{2-p})`.

    Parameters
    ----------
    residuals : array-like of shape (n_samples,)
    w_max : float > 0
        The largest weight (Park & Welling's "δ").
    p : float in [1, 2], default=1.0
        The exponent of the loss; ``p = 1`` is least absolute deviations.

    Returns
    -------
    weights : ndarray of shape (n_samples,)
        Every weight lies in ``(0, w_max]``.

    Examples
    --------
    >>> irls_weights([0.0, 0.5, -4.0], w_max=10.0)
    array([10.  ,  2.  ,  0.25])
    """
    r = check_vector(residuals, "residuals")
    w_max = check_positive(w_max, "w_max")
    p = check_p(p)
    return _weights(r, w_max, p)


def _weights(r, w_max, p):
    mag = np.abs(r) if p == 1.0 else np.abs(r) ** (2.0 - p)
    # min(w_max, 1/|r|) rather than 1/max(1/w_max, |r|): 1/(1/w_max) can exceed w_max by an ulp.
    # Zero or subnormal residuals give 1/|r| = inf, which the minimum turns into w_max.
    with np.errstate(divide="ignore", over="ignore"):
        return np.minimum(w_max, 1.0 / mag)


def weighted_moments(X, y, weights):
    r"""The weighted moments :math:`A = \frac1N\sum s_i x_i y_i` and :math:`B = \frac1N\sum s_i x_i x_i^\top`.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    weights : ndarray of shape (n_samples,)

    Returns
    -------
    A : ndarray of shape (n_features,)
    B : ndarray of shape (n_features, n_features)
        Exactly symmetric.
    """
    n = X.shape[0]
    Xs = X * weights[:, None]
    A = Xs.T @ y / n
    B = Xs.T @ X / n
    return A, 0.5 * (B + B.T)


def auto_psd_floor(d, sigma):
    """``psd_floor="auto"``: the eigenvalue floor of a ``d x d`` ``B`` released with Gaussian noise of sd ``sigma``.

    The noise's typical spectral norm, ``2 sigma sqrt(d)`` for a symmetric Gaussian matrix: an
    eigenvalue below it is mostly noise, and solving with it would amplify that noise.
    """
    return 2.0 * math.sqrt(d) * sigma


def solve_weighted(B, A, floor=0.0):
    r"""Solve :math:`B\theta = A` after flooring the eigenvalues of ``B`` at ``floor``.

    A noisy ``B`` may be indefinite or singular; flooring (post-processing)
    makes it positive definite when ``floor > 0``. With ``floor = 0`` and a
    singular ``B`` the minimum-norm least-squares solution is returned.
    ``floor=None`` solves with ``B`` as given: its pseudo-inverse, negative
    eigenvalues kept (no projection).

    Parameters
    ----------
    B : ndarray of shape (d, d), symmetric
    A : ndarray of shape (d,)
    floor : float >= 0 or None, default=0.0

    Returns
    -------
    theta : ndarray of shape (d,)
    n_clipped : int
        How many eigenvalues were below ``floor``.

    Examples
    --------
    >>> import numpy as np
    >>> theta, n_clipped = solve_weighted(np.diag([2.0, -1.0]), np.array([2.0, 1.0]), floor=0.5)
    >>> theta, n_clipped
    (array([1., 2.]), 1)
    """
    B = 0.5 * (np.asarray(B, dtype=np.float64) + np.asarray(B, dtype=np.float64).T)
    eigvals, Q = np.linalg.eigh(B)
    if floor is None:  # no projection: drop only the numerically zero eigenvalues, whatever their sign
        low, lam = np.zeros(eigvals.shape, dtype=bool), eigvals
        keep = np.abs(lam) > 1e-14 * max(1.0, np.abs(lam).max())
    else:
        floor = check_nonnegative(floor, "floor")
        low = eigvals < floor
        lam = np.where(low, floor, eigvals)
        keep = lam > 1e-14 * max(1.0, np.abs(lam).max())
    inv = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
    return Q @ (inv * (Q.T @ np.asarray(A, dtype=np.float64))), int(low.sum())


@dataclass(frozen=True)
class IRLSResult:
    """The result of :func:`irls`: ``coef``, ``n_iter``, ``converged``."""

    coef: np.ndarray
    n_iter: int
    converged: bool


def irls(X, y, *, w_max, p=1.0, n_iter=100, tol=0.0, theta0=None):
    r"""Non-private thresholded IRLS for the Lp loss (the reference for the private version).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    w_max : float > 0
        Weight threshold (weights lie in ``(0, w_max]``).
    p : float in [1, 2], default=1.0
    n_iter : int, default=100
        Largest number of iterations.
    tol : float, default=0.0
        Stop when :math:`\lVert\theta_t - \theta_{t-1}\rVert_\infty \le` ``tol``;
        ``0`` runs all ``n_iter`` iterations.
    theta0 : array-like of shape (n_features,), optional
        Starting point (zeros by default).

    Returns
    -------
    IRLSResult

    Examples
    --------
    >>> import numpy as np
    >>> X = np.c_[np.ones(5), np.arange(5.0)]
    >>> y = np.array([0.0, 1.0, 2.0, 3.0, 40.0])       # one gross outlier
    >>> irls(X, y, w_max=1e8, n_iter=200).coef.round(4) + 0.0
    array([0., 1.])
    """
    X = check_data(X)
    y = check_vector(y, "y", length=X.shape[0])
    w_max = check_positive(w_max, "w_max")
    p = check_p(p)
    n_iter = check_int(n_iter, "n_iter", minimum=1)
    tol = check_nonnegative(tol, "tol")
    theta = np.zeros(X.shape[1]) if theta0 is None else check_vector(theta0, "theta0", length=X.shape[1])
    for t in range(1, n_iter + 1):
        A, B = weighted_moments(X, y, _weights(y - X @ theta, w_max, p))
        new, _ = solve_weighted(B, A)
        step = np.max(np.abs(new - theta))
        theta = new
        if tol > 0 and step <= tol:
            return IRLSResult(theta, t, True)
    return IRLSResult(theta, n_iter, tol > 0 and step <= tol)
