r"""Ridge precision (ROPE): the closed form of Kuismin, Kemppainen & Sillanpää.

The ridge-penalised Gaussian likelihood

.. math::

    \hat\Theta = \arg\min_{\Theta \succ 0}
        -\log\det\Theta + \operatorname{tr}(S\Theta) + \alpha \lVert\Theta\rVert_F^2

has the closed form (Kuismin et al. 2017, eq. 3.1; ``docs/algorithms.md`` §5.2)

.. math::

    \hat\Theta = M \operatorname{diag}\!\left(
        \frac{2}{\varphi_i + \sqrt{\varphi_i^2 + 8\alpha}}\right) M^\top,
    \qquad S = M \operatorname{diag}(\varphi) M^\top .

Every eigenvalue of :math:`\hat\Theta` is positive whatever the sign of
:math:`\varphi_i`, so the estimate is positive definite for any symmetric
``S`` -- including a noisy, indefinite second-moment matrix -- and needs no
PSD projection. Pure numerics: no privacy is spent here.
"""

import numpy as np

from .._validation import check_positive

__all__ = ["ridge_precision", "ridge_precision_objective"]


def _check_square(S, name):
    if isinstance(S, (str, bytes)) or S is None:
        raise TypeError(f"'{name}' must be a square array of numbers; got {type(S).__name__}.")
    try:
        arr = np.asarray(S)
    except Exception as exc:  # ragged lists and similar
        raise TypeError(f"'{name}' must be a square array of numbers; could not convert it: {exc}") from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"'{name}' must hold real numbers; got dtype {arr.dtype}.")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 1:
        raise ValueError(f"'{name}' must be a square 2-D array of shape (p, p) with p >= 1; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"'{name}' contains {bad} NaN or infinite value(s); it must be finite.")
    return arr


def _rope_eigenvalues(phi, alpha):
    """``2 / (phi + sqrt(phi^2 + 8 alpha))`` without cancellation for either sign of ``phi``."""
    root = np.hypot(phi, np.sqrt(8.0 * alpha))
    out = np.empty_like(phi)
    pos = phi >= 0
    out[pos] = 2.0 / (phi[pos] + root[pos])
    # For phi < 0 the denominator cancels; use the conjugate form instead.
    out[~pos] = (root[~pos] - phi[~pos]) / (4.0 * alpha)
    return out


def ridge_precision(S, alpha):
    r"""Ridge-penalised precision matrix (ROPE) in closed form.

    .. math::

        \hat\Theta = \arg\min_{\Theta \succ 0}
            -\log\det\Theta + \operatorname{tr}(S\Theta) + \alpha \lVert\Theta\rVert_F^2
        = M \operatorname{diag}\!\left(\frac{2}{\varphi_i + \sqrt{\varphi_i^2 + 8\alpha}}\right) M^\top

    where :math:`(S + S^\top)/2 = M \operatorname{diag}(\varphi) M^\top`.
    For :math:`\varphi_i < 0` the eigenvalue is computed as
    :math:`(\sqrt{\varphi_i^2 + 8\alpha} - \varphi_i)/(4\alpha)`, which avoids
    cancellation. The result satisfies the stationarity condition
    :math:`-\hat\Theta^{-1} + S + 2\alpha\hat\Theta = 0`.

    Parameters
    ----------
    S : array-like of shape (n_features, n_features)
        A finite square matrix (a second-moment or covariance matrix, possibly
        with symmetric noise added). It is symmetrised as ``(S + S.T) / 2``;
        it need not be positive semidefinite.
    alpha : float
        The ridge penalty ``alpha > 0`` (``lambda`` in the papers).

    Returns
    -------
    Theta : ndarray of shape (n_features, n_features)
        The symmetric positive-definite ridge precision estimate.

    Privacy
    -------
    Post-processing only: if ``S`` is a differentially private release, so
    is ``Theta``, with the same guarantee (Su, Guo & Zhang, DP-RP,
    ``docs/algorithms.md`` §5.3).

    References
    ----------
    M. Kuismin, J. Kemppainen and M. Sillanpää, "Precision matrix estimation
    with ROPE", J. Comput. Graph. Statist. 26(3):682-694, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> Theta = ridge_precision(-np.eye(2), alpha=1.0)   # negative definite S is fine
    >>> np.round(Theta, 6)
    array([[1., 0.],
           [0., 1.]])
    >>> bool(np.all(np.linalg.eigvalsh(ridge_precision([[0.0, 2.0], [2.0, 0.0]], 1e-3)) > 0))
    True
    """
    S = _check_square(S, "S")
    alpha = check_positive(alpha, "alpha")
    phi, M = np.linalg.eigh((S + S.T) / 2.0)
    theta = _rope_eigenvalues(phi, alpha)
    Theta = (M * theta) @ M.T
    return (Theta + Theta.T) / 2.0


def ridge_precision_objective(S, Theta, alpha):
    r"""The ROPE objective at ``Theta``.

    .. math::

        f(\Theta) = -\log\det\Theta + \operatorname{tr}(S\Theta) + \alpha \lVert\Theta\rVert_F^2

    Parameters
    ----------
    S : array-like of shape (n_features, n_features)
        A finite square matrix.
    Theta : array-like of shape (n_features, n_features)
        A finite symmetric matrix. If it is not positive definite the
        objective is ``+inf``.
    alpha : float
        The ridge penalty ``alpha > 0``.

    Returns
    -------
    value : float
        ``f(Theta)``; ``inf`` when ``Theta`` is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> float(ridge_precision_objective(np.eye(2), np.eye(2), alpha=1.0))
    4.0
    """
    S = _check_square(S, "S")
    Theta = _check_square(Theta, "Theta")
    if Theta.shape != S.shape:
        raise ValueError(f"'Theta' must have the shape of 'S' {S.shape}; got {Theta.shape}.")
    alpha = check_positive(alpha, "alpha")
    try:
        L = np.linalg.cholesky((Theta + Theta.T) / 2.0)
    except np.linalg.LinAlgError:
        return float("inf")
    logdet = 2.0 * np.sum(np.log(np.diag(L)))
    return float(-logdet + np.sum(S.T * Theta) + alpha * np.sum(Theta * Theta))
