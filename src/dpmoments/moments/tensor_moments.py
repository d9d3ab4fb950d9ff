r"""Releases of the moments a tensor decomposition needs, and their sensitivities.

See :mod:`dpmoments.estimators.tensor` for the models and the derivations. The releases live
here, below the estimators, so that the multi-site wing can produce the same
:class:`TensorMoments` an estimator fits from.
"""

import math
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._rng import spawn
from .._validation import check_data, check_delta, check_epsilon, check_int, check_nonnegative, check_option
from .._validation import check_positive
from ..exceptions import NotPrivateWarning
from ..mechanisms import symmetric_matrix_noise, symmetric_tensor_noise
from .accumulate import accumulate_moments
from .readers import iter_chunks
from .release import Release, randomness_of
from .sensitivity import moment_sensitivity
from .symmetry import symmetrise_matrix, symmetrise_tensor
from ..privacy import ApproxDP, PureDP, ZCDP, calibrate_gaussian
from ..privacy import zcdp_gaussian_sigma

__all__ = [
    "TensorBudget",
    "TensorMoments",
    "release_mog_moments",
    "release_topic_moments",
    "mog_third_sensitivity",
    "topic_sensitivity",
    "mean_correction",
]

MODELS = ("mog", "stm")
TENSOR_CALIBRATIONS = ("analytic", "zcdp")
_NEIGHBOURS = ("replace-one", "add-remove")


@dataclass(frozen=True)
class TensorBudget:
    """Shares of the budget given to the second- and third-moment releases.

    With ``calibration="analytic"`` the second moment gets
    ``(second * epsilon, second * delta)`` and the third
    ``(third * epsilon, third * delta)``; they compose (basic composition)
    to at most ``(epsilon, delta)``. With ``"zcdp"`` the shares split the
    largest ``rho`` whose conversion fits ``(epsilon, delta)``. Shares may
    sum to less than 1 (the rest is left unspent).
    """

    second: float = 0.5
    third: float = 0.5

    def __post_init__(self):
        for name in ("second", "third"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise ValueError(f"'{name}' must be a share in (0, 1]; got {v!r}.")
        if self.second + self.third > 1 + 1e-12:
            raise ValueError(f"'second' + 'third' must be <= 1; got {self.second} + {self.third}.")


@dataclass(frozen=True, eq=False)
class TensorMoments:
    """The two releases a tensor decomposition is fitted from.

    Attributes
    ----------
    model : {"mog", "stm"}
    second : Release
        MOG: noisy :math:`\\frac1n\\sum x x^\\top` (``sigma2 I`` is subtracted
        afterwards, free); STM: noisy :math:`\\mathrm{sym}\\frac1N\\sum x_1 x_2^\\top`.
    third : Release
        MOG: noisy :math:`\\frac1n\\sum[x^{\\otimes3} - \\sigma^2\\mathcal T(x)]`;
        STM: noisy :math:`\\mathrm{sym}\\frac1N\\sum x_1\\otimes x_2\\otimes x_3`.
    guarantee : PureDP, ApproxDP or ZCDP
        What the two releases compose to.
    sigma2 : float or None
        MOG's public noise variance.
    budget : TensorBudget
    """

    model: str
    second: Release
    third: Release
    guarantee: object
    sigma2: Optional[float]
    budget: TensorBudget

    @property
    def m2(self):
        """The noisy :math:`M_2` (MOG: minus :math:`\\sigma^2 I`)."""
        M = np.array(self.second.second_moment)
        if self.model == "mog":
            M -= self.sigma2 * np.eye(M.shape[0])
        return M

    @property
    def m3(self):
        """The noisy :math:`M_3`."""
        return np.array(self.third.third_moment)


def mean_correction(v):
    r""":math:`\mathcal T(v) = \sum_i (v\otimes e_i\otimes e_i + e_i\otimes v\otimes e_i + e_i\otimes e_i\otimes v)`.

    Examples
    --------
    >>> mean_correction(np.array([2.0]))
    array([[[6.]]])
    """
    v = np.asarray(v, dtype=np.float64)
    d = v.shape[0]
    T, idx = np.zeros((d, d, d)), np.arange(d)
    T[:, idx, idx] += v[:, None]
    T[idx, :, idx] += v[None, :]
    T[idx, idx, :] += v[None, :]
    return T


def mog_third_sensitivity(*, n_samples, n_features, row_norm, sigma2, neighbours="replace-one"):
    r"""L2 sensitivity of the MOG third-moment statistic on its orbit vector.

    :math:`(2R^3 + 2\sigma^2 R\sqrt{D+8})/n` (replace-one) or half of it
    (add-remove); derivation in the module docstring.
    """
    one = row_norm**3 + sigma2 * row_norm * math.sqrt(n_features + 8.0)
    return (2.0 if neighbours == "replace-one" else 1.0) * one / n_samples


def topic_sensitivity(*, n_docs, neighbours="replace-one"):
    r"""L2 sensitivity of the symmetrised STM moments: :math:`\sqrt2/N` or :math:`1/N`."""
    return (math.sqrt(2.0) if neighbours == "replace-one" else 1.0) / n_docs


# -- releases -------------------------------------------------------------------------------------------------
def check_tensor_arguments(epsilon, delta, neighbours, calibration, budget):
    epsilon = check_epsilon(epsilon)
    if not math.isinf(epsilon):
        if delta is None:
            raise ValueError("'delta' in (0, 1) is required for the Gaussian releases; got None.")
        delta = check_delta(delta, allow_zero=False)
    neighbours = check_option(neighbours, "neighbours", _NEIGHBOURS)
    calibration = check_option(calibration, "calibration", TENSOR_CALIBRATIONS)
    budget = TensorBudget() if budget is None else budget
    if not isinstance(budget, TensorBudget):
        raise TypeError(f"'budget' must be a TensorBudget or None; got {type(budget).__name__}.")
    return epsilon, delta, neighbours, calibration, budget


def planned_guarantees(epsilon, delta, calibration, budget):
    """The guarantees of the (second, third) releases and their composition, before any data."""
    if math.isinf(epsilon):
        return PureDP(math.inf), PureDP(math.inf), PureDP(math.inf)
    if calibration == "zcdp":
        rho = calibrate_gaussian(epsilon, delta, 1.0, calibration="zcdp")[1].rho
        parts = (ZCDP(budget.second * rho), ZCDP(budget.third * rho))
        return parts[0], parts[1], ZCDP(parts[0].rho + parts[1].rho)
    parts = tuple(calibrate_gaussian(s * epsilon, s * delta, 1.0)[1] for s in (budget.second, budget.third))
    total = ApproxDP(sum(p.epsilon for p in parts), sum(p.delta for p in parts), rho=sum(p.rho for p in parts))
    return parts[0], parts[1], total


def _sigma(guarantee, sensitivity, epsilon_delta):
    if isinstance(guarantee, ZCDP):
        return zcdp_gaussian_sigma(guarantee.rho, sensitivity)
    return calibrate_gaussian(*epsilon_delta, sensitivity)[0]


def _noisy_pair(S2, S3, sens2, sens3, n, row_norm, center, epsilon, delta, neighbours, calibration, budget,
                rng, model, sigma2):
    g2, g3, total = planned_guarantees(epsilon, delta, calibration, budget)
    common = dict(n=n, n_features=S2.shape[0], row_norm=row_norm, neighbours=neighbours, center=center,
                  randomness=randomness_of(rng, epsilon))
    if math.isinf(epsilon):
        warnings.warn("epsilon=inf: the exact moments are released, with no privacy.", NotPrivateWarning,
                      stacklevel=3)
        r2 = Release(second_moment=S2, mechanism="none", noise_scale=0.0, guarantee=g2, **common)
        r3 = Release(third_moment=S3, mechanism="none", noise_scale=0.0, guarantee=g3, **common)
        return TensorMoments(model, r2, r3, total, sigma2, budget)
    gen2, gen3 = spawn(rng, 2)
    s2 = _sigma(g2, sens2, (budget.second * epsilon, budget.second * delta))
    s3 = _sigma(g3, sens3, (budget.third * epsilon, budget.third * delta))
    d = S2.shape[0]
    extra = dict(mechanism="gaussian", sensitivity_norm="l2", calibration=calibration, **common)
    r2 = Release(second_moment=S2 + symmetric_matrix_noise(d, s2, gen2), noise_scale=s2, sensitivity=sens2,
                 guarantee=g2, **extra)
    r3 = Release(third_moment=S3 + symmetric_tensor_noise(d, s3, gen3), noise_scale=s3, sensitivity=sens3,
                 guarantee=g3, **extra)
    return TensorMoments(model, r2, r3, total, sigma2, budget)


def release_mog_moments(X, *, sigma2, epsilon, delta=None, row_norm, budget=None, neighbours="replace-one",
                        calibration="analytic", center=None, rng=None, chunk_size=65536):
    r"""Release the MOG moments :math:`E[xx^\top]` and :math:`E[x^{\otimes3} - \sigma^2\mathcal T(x)]`.

    One streaming pass (rows centred at a public ``center``, clipped to
    ``row_norm``), then symmetric Gaussian noise on each statistic.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or any ``iter_chunks`` source
    sigma2 : float >= 0
        The mixture's **public** noise variance (never estimated from the data).
    epsilon, delta : the total budget; ``epsilon=inf`` releases exact moments.
    row_norm : float > 0
    budget : TensorBudget, optional
    neighbours : {"replace-one", "add-remove"}
    calibration : {"analytic", "zcdp"}
    center : array-like of shape (n_features,), optional
    rng : None, int or numpy.random.Generator

    Returns
    -------
    TensorMoments

    Privacy
    -------
    Gaussian, L2 sensitivities :math:`\sqrt2R^2/n` and
    :func:`mog_third_sensitivity` on upper-triangle / orbit coordinates;
    the two releases compose to ``(epsilon, delta)`` (basic composition, or
    zCDP with ``calibration="zcdp"``).
    """
    epsilon, delta, neighbours, calibration, budget = check_tensor_arguments(epsilon, delta, neighbours, calibration, budget)
    sigma2 = check_nonnegative(sigma2, "sigma2")
    row_norm = check_positive(row_norm, "row_norm")
    center = None if center is None else np.asarray(center, dtype=np.float64)
    if isinstance(X, (np.ndarray, list)):
        X = check_data(X)
        source = (X, np.ones(X.shape[0]))  # sum x_i rides along as the cross moment with y = 1
    else:  # a path, a dask array or an iterable of chunks
        source = ((c, np.ones(c.shape[0])) for c in iter_chunks(X, chunk_size=chunk_size))
    sums = accumulate_moments(source, row_norm=row_norm, response_bound=1.0, third=True, center=center)
    n, d = sums.n, sums.n_features
    S2 = symmetrise_matrix(sums.xtx / n)
    S3 = symmetrise_tensor(sums.third / n - sigma2 * mean_correction(sums.xty / n))
    sens2 = moment_sensitivity("second", norm="l2", n_samples=n, n_features=d, neighbours=neighbours,
                               row_norm=row_norm)
    sens3 = mog_third_sensitivity(n_samples=n, n_features=d, row_norm=row_norm, sigma2=sigma2, neighbours=neighbours)
    return _noisy_pair(S2, S3, sens2, sens3, n, row_norm, center, epsilon, delta, neighbours, calibration,
                       budget, rng, "mog", sigma2)


def word_ids(docs, vocabulary_size=None):
    """Validate documents: integer ids of shape (n, 3), or one-hot of shape (n, 3, D). Returns (ids, D)."""
    arr = np.asarray(docs)
    if arr.ndim == 3:
        if arr.shape[1] != 3 or arr.shape[0] < 1:
            raise ValueError(f"one-hot documents must have shape (n_docs, 3, vocabulary_size); got {arr.shape}.")
        D = arr.shape[2]
        if vocabulary_size is not None and check_int(vocabulary_size, "vocabulary_size") != D:
            raise ValueError(f"'vocabulary_size'={vocabulary_size} disagrees with the one-hot width {D}.")
        if not (np.all((arr == 0) | (arr == 1)) and np.all(arr.sum(axis=2) == 1)):
            raise ValueError("one-hot documents must hold exactly one 1 per word (entries 0/1).")
        return np.argmax(arr, axis=2), D
    if arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] < 1:
        raise ValueError(f"documents must be word ids of shape (n_docs, 3) or one-hot (n_docs, 3, D); got shape "
                         f"{arr.shape}.")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"word ids must be integers; got dtype {arr.dtype}.")
    if vocabulary_size is None:
        raise ValueError("integer word ids need the public 'vocabulary_size' (never read from the data); got None.")
    D = check_int(vocabulary_size, "vocabulary_size")
    if arr.min() < 0 or arr.max() >= D:
        raise ValueError(f"word ids must be in [0, vocabulary_size={D}).")
    return arr.astype(np.int64), D


def release_topic_moments(docs, *, vocabulary_size=None, epsilon, delta=None, budget=None,
                          neighbours="replace-one", calibration="analytic", rng=None):
    r"""Release the symmetrised single-topic moments :math:`\mathrm{sym}E[x_1x_2^\top]`, :math:`\mathrm{sym}E[x_1\otimes x_2\otimes x_3]`.

    Parameters
    ----------
    docs : int array of shape (n_docs, 3) or one-hot array of shape (n_docs, 3, D)
    vocabulary_size : int, optional
        Required for integer ids (public ``D``).
    epsilon, delta, budget, neighbours, calibration, rng
        As in :func:`release_mog_moments`.

    Returns
    -------
    TensorMoments

    Privacy
    -------
    Gaussian, L2 sensitivity :func:`topic_sensitivity` (:math:`\sqrt2/N`
    replace-one) on both releases, measured on the symmetrised statistics'
    upper-triangle / orbit coordinates.
    """
    epsilon, delta, neighbours, calibration, budget = check_tensor_arguments(epsilon, delta, neighbours, calibration, budget)
    ids, D = word_ids(docs, vocabulary_size)
    N = ids.shape[0]
    a, b, c = ids[:, 0], ids[:, 1], ids[:, 2]
    S2 = symmetrise_matrix(np.bincount(a * D + b, minlength=D * D).reshape(D, D) / N)
    S3 = symmetrise_tensor(np.bincount((a * D + b) * D + c, minlength=D**3).reshape(D, D, D) / N)
    sens = topic_sensitivity(n_docs=N, neighbours=neighbours)
    return _noisy_pair(S2, S3, sens, sens, N, 1.0, None, epsilon, delta, neighbours, calibration, budget, rng,
                       "stm", None)


# -- the estimator --------------------------------------------------------------------------------------------
