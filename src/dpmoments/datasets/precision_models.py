r"""Synthetic Gaussian graphical models: the precision matrices of Su, Guo & Zhang.

Models 1--4 of Su, Guo & Zhang (arXiv 1909.02750, §5; ``docs/algorithms.md`` §5.6),
a sampler for :math:`N(0, \Theta^{-1})` that never forms the covariance, and
a data maker that clips the rows to a **public** bound.

The papers instead divide the data by its own largest row norm;
:func:`max_norm_scale` does that for reproductions only, and warns that the
scale is a data-dependent (unprivatised) statistic (``docs/algorithms.md`` §0.6).
"""

import numbers
import warnings

import numpy as np
from scipy.linalg import solve_triangular

from .._rng import as_generator
from .._validation import check_data, check_int, check_positive
from ..exceptions import PrivacyLeakWarning
from ..moments import clip_rows

__all__ = [
    "su_model",
    "ar_precision",
    "cai_precision",
    "sample_gaussian",
    "make_precision_data",
    "max_norm_scale",
]

#: Number of columns of ``W`` in Su et al.'s Model 1.
M1_COLUMNS = 10_000
_CHUNK = 2_000


def _wishart_precision(n_features, rng):
    r"""Model 1: :math:`\Theta = W W^\top / n'` with ``W`` of shape (p, n'), n' = 10000."""
    if n_features >= M1_COLUMNS:
        raise ValueError(
            f"'n_features' must be < {M1_COLUMNS} for Model 1 (W W^T / n' is singular otherwise); got {n_features}."
        )
    Theta = np.zeros((n_features, n_features))
    for start in range(0, M1_COLUMNS, _CHUNK):  # bounded memory for large p
        W = rng.standard_normal((n_features, min(_CHUNK, M1_COLUMNS - start)))
        Theta += W @ W.T
    Theta /= M1_COLUMNS
    return (Theta + Theta.T) / 2.0


def _compound_symmetry(n_features):
    """Model 2: unit diagonal, 0.5 off the diagonal."""
    Theta = np.full((n_features, n_features), 0.5)
    np.fill_diagonal(Theta, 1.0)
    return Theta


def ar_precision(n_features, coefficients=(0.5, 0.25)):
    r"""Banded (autoregressive) precision matrix with unit diagonal.

    .. math::

        \theta_{ii} = 1, \qquad \theta_{i, i \pm k} = c_k \ (k = 1, \dots, K),
        \qquad \theta_{ij} = 0 \text{ otherwise.}

    The default ``(0.5, 0.25)`` is Su et al.'s Model 3, the AR(2) precision
    matrix of Yuan (2010) and Cai, Liu & Luo (2011). (Su et al. print
    :math:`\theta_{ii} = 0`, a typo: that matrix is not positive definite;
    ``docs/algorithms.md`` §5.6.)

    Parameters
    ----------
    n_features : int
        Dimension ``p >= 1``.
    coefficients : sequence of float, default=(0.5, 0.25)
        The band values ``c_1, ..., c_K``; bands beyond ``p - 1`` are dropped.

    Returns
    -------
    Theta : ndarray of shape (n_features, n_features)
        Symmetric positive definite.

    Raises
    ------
    ValueError
        If the coefficients give a matrix that is not positive definite.

    Examples
    --------
    >>> ar_precision(4)
    array([[1.  , 0.5 , 0.25, 0.  ],
           [0.5 , 1.  , 0.5 , 0.25],
           [0.25, 0.5 , 1.  , 0.5 ],
           [0.  , 0.25, 0.5 , 1.  ]])
    """
    n_features = check_int(n_features, "n_features")
    coefs = np.asarray(coefficients)
    if coefs.ndim != 1 or coefs.dtype.kind not in "iuf":
        raise TypeError(f"'coefficients' must be a 1-D sequence of real numbers; got {coefficients!r}.")
    if not np.all(np.isfinite(coefs)):
        raise ValueError(f"'coefficients' must be finite; got {coefficients!r}.")
    Theta = np.eye(n_features)
    for k, c in enumerate(coefs[: n_features - 1], start=1):
        Theta += float(c) * (np.eye(n_features, k=k) + np.eye(n_features, k=-k))
    if np.linalg.eigvalsh(Theta)[0] <= 0:
        raise ValueError(
            f"'coefficients' {tuple(coefs.tolist())} give a banded matrix of size {n_features} "
            "that is not positive definite."
        )
    return Theta


def _cai_raw(n_features, rng, value=0.5, probability=0.1):
    """Unstandardised Cai-Liu-Luo matrix A + alpha I with cond = p (A != 0)."""
    upper = np.triu(rng.random((n_features, n_features)) < probability, k=1)
    A = value * (upper | upper.T)
    eig = np.linalg.eigvalsh(A)
    lam_min, lam_max = eig[0], eig[-1]
    if lam_max - lam_min <= 0:  # no edge drawn: cond(A + alpha I) = 1 for every alpha
        return None
    alpha = (lam_max - n_features * lam_min) / (n_features - 1)
    return A + alpha * np.eye(n_features)


def cai_precision(n_features, rng=None, *, standardise=True):
    r"""Random sparse precision matrix of Cai, Liu & Luo (2011), Su et al.'s Model 4.

    Off-diagonal entries of a symmetric ``A`` are i.i.d. 0.5 with probability
    0.1 and 0 otherwise (upper triangle drawn, mirrored). Then

    .. math::

        \Theta_0 = A + \alpha I, \qquad
        \alpha = \frac{\lambda_{\max}(A) - p\,\lambda_{\min}(A)}{p - 1}
        \quad\Longrightarrow\quad \operatorname{cond}(\Theta_0) = p,

    and :math:`\Theta = D^{-1/2} \Theta_0 D^{-1/2}` with
    :math:`D = \operatorname{diag}(\Theta_0)` has unit diagonal. If no edge is
    drawn (likely only for small ``p``) ``A`` is redrawn, so the model is
    conditioned on ``A != 0``.

    Parameters
    ----------
    n_features : int
        Dimension ``p >= 2``.
    rng : None, int or numpy.random.Generator, default=None
    standardise : bool, default=True
        If ``False`` return :math:`\Theta_0` (condition number exactly ``p``).

    Returns
    -------
    Theta : ndarray of shape (n_features, n_features)
        Symmetric positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> Theta0 = cai_precision(30, rng=0, standardise=False)
    >>> round(float(np.linalg.cond(Theta0)), 6)
    30.0
    >>> np.allclose(np.diag(cai_precision(30, rng=0)), 1.0)
    True
    """
    n_features = check_int(n_features, "n_features", minimum=2)
    if not isinstance(standardise, (bool, np.bool_)):
        raise TypeError(f"'standardise' must be a bool; got {type(standardise).__name__} {standardise!r}.")
    gen = as_generator(rng)
    Theta0 = None
    while Theta0 is None:
        Theta0 = _cai_raw(n_features, gen)
    if not standardise:
        return Theta0
    d = 1.0 / np.sqrt(np.diag(Theta0))
    Theta = Theta0 * d[:, None] * d[None, :]
    return (Theta + Theta.T) / 2.0


def su_model(k, n_features, rng=None):
    r"""Precision matrix of Su, Guo & Zhang's Model ``k`` (1--4).

    * Model 1: :math:`\Theta = W W^\top / n'`, ``W`` of shape (p, n') with
      i.i.d. N(0, 1) entries and n' = 10000 (dense, unstructured).
    * Model 2: :math:`\theta_{ii} = 1`, :math:`\theta_{ij} = 0.5` (compound symmetry).
    * Model 3: AR(2), :math:`\theta_{ii} = 1`, :math:`\theta_{i,i\pm1} = 0.5`,
      :math:`\theta_{i,i\pm2} = 0.25` (the paper's :math:`\theta_{ii} = 0` is a
      typo; see :func:`ar_precision`).
    * Model 4: Cai, Liu & Luo (2011); see :func:`cai_precision`.

    Parameters
    ----------
    k : int
        Model number in {1, 2, 3, 4}.
    n_features : int
        Dimension ``p`` (``p >= 2`` for Model 4, ``p < 10000`` for Model 1).
    rng : None, int or numpy.random.Generator, default=None
        Used by Models 1 and 4 only.

    Returns
    -------
    Theta : ndarray of shape (n_features, n_features)
        Symmetric positive definite.

    Examples
    --------
    >>> su_model(2, 3)
    array([[1. , 0.5, 0.5],
           [0.5, 1. , 0.5],
           [0.5, 0.5, 1. ]])
    """
    k = check_int(k, "k")
    if k > 4:
        raise ValueError(f"'k' must be a model number in {{1, 2, 3, 4}}; got {k}.")
    n_features = check_int(n_features, "n_features")
    if k == 1:
        return _wishart_precision(n_features, as_generator(rng))
    if k == 2:
        return _compound_symmetry(n_features)
    if k == 3:
        return ar_precision(n_features)
    return cai_precision(n_features, rng)


def sample_gaussian(precision, n_samples, rng=None):
    r"""Draw rows i.i.d. from :math:`N(0, \Theta^{-1})` without inverting :math:`\Theta`.

    With the Cholesky factor :math:`\Theta = L L^\top` and
    :math:`z \sim N(0, I)`, the vector :math:`x = L^{-\top} z` has covariance
    :math:`L^{-\top} L^{-1} = \Theta^{-1}`; it is computed by one triangular
    solve.

    Parameters
    ----------
    precision : array-like of shape (n_features, n_features)
        Symmetric positive-definite precision matrix.
    n_samples : int
        Number of rows ``n >= 1``.
    rng : None, int or numpy.random.Generator, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> X = sample_gaussian(np.diag([4.0, 0.25]), 100_000, rng=0)
    >>> np.round(X.std(axis=0), 1)
    array([0.5, 2. ])
    """
    Theta = check_data(precision, name="precision")
    if Theta.shape[0] != Theta.shape[1]:
        raise ValueError(f"'precision' must be square; got shape {Theta.shape}.")
    if not np.allclose(Theta, Theta.T, rtol=1e-10, atol=1e-12 * np.abs(Theta).max()):
        raise ValueError("'precision' must be symmetric.")
    n_samples = check_int(n_samples, "n_samples")
    try:
        L = np.linalg.cholesky((Theta + Theta.T) / 2.0)
    except np.linalg.LinAlgError:
        raise ValueError("'precision' must be positive definite; its Cholesky factorisation failed.") from None
    Z = as_generator(rng).standard_normal((n_samples, Theta.shape[0]))
    return solve_triangular(L, Z.T, lower=True, trans="T").T


def make_precision_data(model, n_samples, n_features, *, row_norm, rng=None):
    r"""Gaussian data from a Su et al. model, clipped to a public row bound.

    Draws :math:`\Theta` = ``su_model(model, n_features)``, then ``n_samples``
    rows from :math:`N(0, \Theta^{-1})`, and clips each row into the L2 ball
    of the **public** radius ``row_norm``:
    :math:`x_i \mapsto x_i \min(1, R / \lVert x_i \rVert_2)`.

    Parameters
    ----------
    model : int
        Su et al.'s model number in {1, 2, 3, 4}.
    n_samples : int
    n_features : int
    row_norm : float
        The public clipping radius ``R > 0`` (keyword-only, required). Rows
        of :math:`N(0, \Theta^{-1})` have norm about
        :math:`\sqrt{\operatorname{tr}\Theta^{-1}}`; a radius far below it
        clips almost every row.
    rng : None, int or numpy.random.Generator, default=None
        One generator draws the model (Models 1 and 4) and then the rows.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Clipped data: every row has norm at most ``row_norm``.
    Theta : ndarray of shape (n_features, n_features)
        The true precision matrix.

    Privacy
    -------
    The bound is chosen before the data are seen, so the sensitivities of
    ``docs/algorithms.md`` §0.2 hold with ``R = row_norm``. Contrast
    :func:`max_norm_scale`, the papers' data-dependent scaling.

    Examples
    --------
    >>> import numpy as np
    >>> X, Theta = make_precision_data(3, 500, 10, row_norm=2.0, rng=0)
    >>> X.shape, Theta.shape
    ((500, 10), (10, 10))
    >>> bool(np.linalg.norm(X, axis=1).max() <= 2.0 + 1e-12)
    True
    """
    if isinstance(model, bool) or not isinstance(model, numbers.Integral):
        raise TypeError(f"'model' must be an integer model number in {{1, 2, 3, 4}}; got {model!r}.")
    if not 1 <= model <= 4:
        raise ValueError(f"'model' must be a model number in {{1, 2, 3, 4}}; got {model}.")
    row_norm = check_positive(row_norm, "row_norm")
    gen = as_generator(rng)
    Theta = su_model(int(model), n_features, gen)
    X = sample_gaussian(Theta, n_samples, gen)
    return clip_rows(X, row_norm), Theta


def max_norm_scale(X):
    r"""Divide the data by its largest row norm (papers' normalisation; leaks privacy).

    .. math::

        X \mapsto X / \max_i \lVert x_i \rVert_2

    Su et al. (§5.1), Park & Welling and Imtiaz & Sarwate normalise this way
    and then treat :math:`\lVert x_i \rVert \le 1` as a public bound. The
    scale is a data-dependent, unprivatised statistic, so the stated
    sensitivities do not hold (``docs/algorithms.md`` §0.6). Use only to reproduce
    a paper; use :func:`dpmoments.moments.clip_rows` with a public radius
    otherwise.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    X_scaled : ndarray of shape (n_samples, n_features)
        A new array whose largest row norm is 1 (unchanged if all rows are 0).

    Warns
    -----
    PrivacyLeakWarning
        On every call.

    Privacy
    -------
    None: the output depends on the most extreme record through an
    unprivatised maximum.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     max_norm_scale(np.array([[3.0, 4.0], [0.0, 1.0]]))
    array([[0.6, 0.8],
           [0. , 0.2]])
    """
    X = check_data(X, name="X")
    warnings.warn(
        "max_norm_scale: the scale max_i ||x_i|| is a data-dependent statistic that is not privatised; "
        "only paper reproductions use this. Clip to a public row_norm instead.",
        PrivacyLeakWarning,
        stacklevel=2,
    )
    scale = np.sqrt(np.einsum("ij,ij->i", X, X).max())
    return X / scale if scale > 0 else X.copy()
