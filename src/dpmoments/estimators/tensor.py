r"""Private orthogonal tensor decomposition (Imtiaz & Sarwate's AGN, centralised; ``algorithms.md`` §2.6).

Two Gaussian releases -- a second moment for whitening and a third moment to
decompose -- split the budget by a typed :class:`TensorBudget`; everything
after them is post-processing: whitening with an eigenvalue floor, the robust
tensor power method, un-whitening.

Models
------
``"mog"`` (spherical Gaussian mixture, common **public** variance ``sigma2``):

.. math::

    M_2 = E[xx^\top] - \sigma^2 I, \qquad
    M_3 = E\Big[x^{\otimes 3} - \sigma^2 \mathcal T(x)\Big], \quad
    \mathcal T(v) = \sum_i (v\otimes e_i\otimes e_i + e_i\otimes v\otimes e_i + e_i\otimes e_i\otimes v)

``E[T(x)] = T(mu)``, so the mean-correction term is folded into one
statistic and no separate first-moment release is needed.

``"stm"`` (single topic model, three one-hot words per document):
:math:`M_2 = \mathrm{sym}\,E[x_1 x_2^\top]`, :math:`M_3 = \mathrm{sym}\,E[x_1\otimes x_2\otimes x_3]`,
symmetrised *before* the symmetric noise (otherwise the antisymmetric part is
released exactly, ``algorithms.md`` §0.4).

Sensitivities (L2, on the coordinates the noise acts on: the upper triangle /
one entry per index orbit ``i <= j <= k``)
---------------------------------------------------------------------------
* MOG second: :math:`\sqrt2 R^2/n` (replace-one), :math:`R^2/n` (add-remove).
* MOG third: the orbit vector is linear and :math:`\|o(S)\| \le \|S\|_F`, so
  :math:`\|o(x^{\otimes3} - y^{\otimes3})\| \le 2R^3`; and
  :math:`o(\mathcal T(v))` has ``3 v_i`` on orbit ``(i,i,i)`` and ``v_j`` on
  each orbit ``{i,i,j}`` (``i != j``), so :math:`\|o(\mathcal T(v))\| = \sqrt{D+8}\,\|v\|`
  (the full Frobenius norm is :math:`\sqrt{3D+6}\|v\|`, §2.6). With
  :math:`\|x - y\| \le 2R`: :math:`\Delta_3 = (2R^3 + 2\sigma^2 R\sqrt{D+8})/n`
  (replace-one) or :math:`(R^3 + \sigma^2 R \sqrt{D+8})/n` (add-remove).
* STM: a document's symmetrised contribution has orbit coordinates of norm
  1 (all words equal), 1/3 or 1/6 for the tensor and 1 or 1/2 for the matrix,
  so :math:`\sqrt2/N` (replace-one; two all-equal documents) or :math:`1/N`.
"""

import math
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np
from sklearn.base import BaseEstimator

from .._rng import as_generator, spawn
from .._validation import check_data, check_delta, check_epsilon, check_int, check_nonnegative, check_option
from .._validation import check_positive
from ..exceptions import NotPrivateWarning
from ..mechanisms import symmetric_matrix_noise, symmetric_tensor_noise
from ..moments import Release, accumulate_moments, iter_chunks, moment_sensitivity
from ..moments import symmetrise_matrix, symmetrise_tensor
from ..moments.release import randomness_of
from ..privacy import Accountant, ApproxDP, PureDP, ZCDP, calibrate_gaussian, classic_gaussian_sigma
from ..privacy import zcdp_gaussian_sigma, zcdp_to_approx_dp
from ..solvers.tensor_power import robust_tensor_power, tensor_apply, unwhiten, whiten, whiten_tensor

__all__ = [
    "TensorBudget",
    "TensorMoments",
    "PrivateTensorDecomposition",
    "release_mog_moments",
    "release_topic_moments",
    "mog_third_sensitivity",
    "topic_sensitivity",
    "mean_correction",
    "NoisyTensorPowerResult",
    "noisy_tensor_power_method",
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
def _check_common(epsilon, delta, neighbours, calibration, budget):
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
    epsilon, delta, neighbours, calibration, budget = _check_common(epsilon, delta, neighbours, calibration, budget)
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
    epsilon, delta, neighbours, calibration, budget = _check_common(epsilon, delta, neighbours, calibration, budget)
    ids, D = word_ids(docs, vocabulary_size)
    N = ids.shape[0]
    a, b, c = ids[:, 0], ids[:, 1], ids[:, 2]
    S2 = symmetrise_matrix(np.bincount(a * D + b, minlength=D * D).reshape(D, D) / N)
    S3 = symmetrise_tensor(np.bincount((a * D + b) * D + c, minlength=D**3).reshape(D, D, D) / N)
    sens = topic_sensitivity(n_docs=N, neighbours=neighbours)
    return _noisy_pair(S2, S3, sens, sens, N, 1.0, None, epsilon, delta, neighbours, calibration, budget, rng,
                       "stm", None)


# -- the estimator --------------------------------------------------------------------------------------------
class PrivateTensorDecomposition(BaseEstimator):
    r"""Differentially private orthogonal tensor decomposition (method of moments).

    Release :math:`\hat M_2, \hat M_3` (two Gaussian releases sharing the
    budget by ``budget``), whiten with :math:`W = U_K\max(\Sigma_K,\eta)^{-1/2}`,
    decompose :math:`\hat M_3(W,W,W)` by the robust tensor power method and
    un-whiten: :math:`\mu_k = \lambda_k U_K\Sigma_K^{1/2}\theta_k`,
    :math:`w_k = 1/\lambda_k^2`.

    Parameters
    ----------
    n_components : int >= 1
        ``K``.
    model : {"mog", "stm"}
    epsilon : float in (0, inf]
    delta : float in (0, 1) or None
    row_norm : float, optional
        Public L2 bound on (centred) rows; required for ``"mog"`` (one-hot
        words have norm 1).
    sigma2 : float >= 0, optional
        The mixture's public noise variance; required for ``"mog"``.
    vocabulary_size : int, optional
        ``"stm"`` with integer word ids: the public vocabulary size.
    budget : TensorBudget, optional
        Default ``TensorBudget(second=0.5, third=0.5)``.
    neighbours : {"replace-one", "add-remove"}, default="replace-one"
    calibration : {"analytic", "zcdp"}, default="analytic"
    center : array-like of shape (n_features,), optional
        ``"mog"``: a public centre subtracted before clipping (added back to
        the means).
    eigenvalue_floor : float > 0, default=1e-6
        ``eta`` of the whitening.
    n_restarts, n_iter : int, default=10, 30
        ``L`` and ``N`` of the tensor power method.
    rng : None, int or numpy.random.Generator
        Noise and (an independent stream for) the power method's starts.
    accountant : Accountant or None

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        MOG: the means; STM: topic word distributions (negatives clipped,
        rows renormalised to sum 1, ``algorithms.md`` §2.6.1). In the order
        the power method found them (largest ``lambda`` first).
    weights_ : ndarray of shape (n_components,)
        ``1 / lambda_k^2`` (not renormalised).
    eigenvalues_ : ndarray of shape (n_components,)
        ``lambda_k`` of the whitened tensor (made >= 0 by the sign of theta).
    whitening_ : Whitening
    moments_ : TensorMoments
    privacy_ : guarantee

    Privacy
    -------
    The composition of the two releases (:func:`release_mog_moments`,
    :func:`release_topic_moments`): (epsilon, delta)-DP by basic composition
    of analytic Gaussian releases (or zCDP), replace-one by default, with the
    sensitivities derived in this module's docstring. Whitening, the power
    method and un-whitening are post-processing.

    Examples
    --------
    >>> from dpmoments.datasets.mixtures import make_mog
    >>> m = make_mog(20000, 6, 2, sigma2=0.01, rng=0)
    >>> est = PrivateTensorDecomposition(n_components=2, model="mog", epsilon=float("inf"), row_norm=3.0,
    ...                                  sigma2=0.01, rng=0)
    >>> import warnings; warnings.simplefilter("ignore")
    >>> est.fit(m.X).components_.shape
    (2, 6)
    """

    def __init__(self, *, n_components, model, epsilon, delta=None, row_norm=None, sigma2=None,
                 vocabulary_size=None, budget=None, neighbours="replace-one", calibration="analytic", center=None,
                 eigenvalue_floor=1e-6, n_restarts=10, n_iter=30, rng=None, accountant=None):
        self.n_components = n_components
        self.model = model
        self.epsilon = epsilon
        self.delta = delta
        self.row_norm = row_norm
        self.sigma2 = sigma2
        self.vocabulary_size = vocabulary_size
        self.budget = budget
        self.neighbours = neighbours
        self.calibration = calibration
        self.center = center
        self.eigenvalue_floor = eigenvalue_floor
        self.n_restarts = n_restarts
        self.n_iter = n_iter
        self.rng = rng
        self.accountant = accountant

    def _check_params(self):
        model = check_option(self.model, "model", MODELS)
        check_int(self.n_components, "n_components", minimum=1)
        check_positive(self.eigenvalue_floor, "eigenvalue_floor")
        check_int(self.n_restarts, "n_restarts", minimum=1)
        check_int(self.n_iter, "n_iter", minimum=1)
        eps, delta, _, calibration, budget = _check_common(self.epsilon, self.delta, self.neighbours,
                                                           self.calibration, self.budget)
        if model == "mog":
            if self.sigma2 is None:
                raise ValueError("model='mog' needs the public noise variance 'sigma2' (never estimated from the "
                                 "data without budget); got None.")
            check_nonnegative(self.sigma2, "sigma2")
            check_positive(self.row_norm, "row_norm")
        return model, eps, delta, calibration, budget

    def _accountant(self):
        acct = self.accountant
        if acct is not None and not isinstance(acct, Accountant):
            raise TypeError(f"'accountant' must be an Accountant or None; got {type(acct).__name__}.")
        return acct

    def fit(self, X, y=None):
        """Release the two moments of ``X`` (rows for MOG, documents for STM) and decompose them."""
        model, eps, delta, calibration, budget = self._check_params()
        acct = self._accountant()
        planned = planned_guarantees(eps, delta, calibration, budget)[2]
        if acct is not None and not acct.can_spend(planned):
            acct.spend(planned)  # raises, naming spent / requested / total; nothing changes
        # The releases spawn streams 0 and 1 of ``rng``; the power method's starts use stream 2.
        common = dict(epsilon=eps, delta=delta, budget=budget, neighbours=self.neighbours,
                      calibration=calibration, rng=self.rng)
        if model == "mog":
            moments = release_mog_moments(X, sigma2=self.sigma2, row_norm=self.row_norm, center=self.center, **common)
        else:
            moments = release_topic_moments(X, vocabulary_size=self.vocabulary_size, **common)
        if acct is not None:
            acct.spend(moments.guarantee, label=type(self).__name__)
        return self._decompose(moments, spawn(self.rng, 3)[2])

    def fit_release(self, moments):
        """Decompose releases already paid for (a :class:`TensorMoments`): no new privacy cost."""
        if not isinstance(moments, TensorMoments):
            raise TypeError(f"'moments' must be a TensorMoments; got {type(moments).__name__}.")
        model = check_option(self.model, "model", MODELS)
        if moments.model != model:
            raise ValueError(f"the moments were released for model={moments.model!r}, not {model!r}.")
        return self._decompose(moments, spawn(self.rng, 3)[2])

    def _decompose(self, moments, gen_tpm):
        K = check_int(self.n_components, "n_components", minimum=1)
        d = moments.second.n_features
        if K > d:
            raise ValueError(f"'n_components' must be an integer in [1, n_features={d}]; got {K}.")
        W = whiten(moments.m2, K, check_positive(self.eigenvalue_floor, "eigenvalue_floor"))
        tpm = robust_tensor_power(whiten_tensor(moments.m3, W.matrix), K, n_restarts=self.n_restarts,
                                  n_iter=self.n_iter, rng=gen_tpm)
        sign = np.where(tpm.eigenvalues < 0, -1.0, 1.0)  # (lam, theta) ~ (-lam, -theta)
        lam, theta = tpm.eigenvalues * sign, tpm.eigenvectors * sign[:, None]
        comps = lam[:, None] * unwhiten(W, theta)
        if moments.model == "stm":
            comps = _to_distributions(comps)
        elif moments.second.center is not None:
            comps = comps + moments.second.center
        with np.errstate(divide="ignore"):
            self.weights_ = 1.0 / lam**2
        self.components_, self.eigenvalues_ = comps, lam
        self.whitening_, self.tensor_power_, self.moments_ = W, tpm, moments
        self.release_ = moments
        self.privacy_ = moments.guarantee
        self.n_features_in_ = d
        return self


def _to_distributions(comps):
    comps = np.maximum(comps, 0.0)
    sums = comps.sum(axis=1, keepdims=True)
    uniform = np.full_like(comps, 1.0 / comps.shape[1])
    return np.where(sums > 0, comps / np.where(sums > 0, sums, 1.0), uniform)


# -- the Wang & Anandkumar (2016) baseline -------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class NoisyTensorPowerResult:
    """Output of :func:`noisy_tensor_power_method`.

    Attributes
    ----------
    eigenvalues : ndarray of shape (n_components,)
        Noisy ``lambda_k``.
    eigenvectors : ndarray of shape (n_components, K)
    noise_scale : float
        ``nu``; each step's noise is ``nu ||u||_inf^2`` (vector) or
        ``nu ||u||_inf^3`` (eigenvalue).
    step_epsilon, step_delta : float
        The paper's per-step ``(epsilon', delta')``.
    n_steps : int
        ``K L (R + 1)`` Gaussian steps.
    claimed : ApproxDP
        The paper's ``(epsilon, delta)``.
    guarantee : ApproxDP
        What the ``n_steps`` Gaussian steps really compose to (zCDP, exact
        per-step ``rho``), at the same ``delta``.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    noise_scale: float
    step_epsilon: float
    step_delta: float
    n_steps: int
    claimed: ApproxDP
    guarantee: ApproxDP


def noisy_tensor_power_method(T, n_components, *, epsilon, delta, sensitivity_l1, n_restarts=10, n_iter=30,
                              rng=None):
    r"""Wang & Anandkumar's (2016) differentially private tensor power method (a baseline).

    Each step releases :math:`T(I,u,u) + \nu\|u\|_\infty^2 z` and each
    restart's eigenvalue :math:`T(u,u,u) + \nu\|u\|_\infty^3 z'`, with
    :math:`\epsilon' = \epsilon/\sqrt{K L (R+1)(4 + \ln(2/\delta))}`,
    :math:`\delta' = \delta/(2KL(R+1))` and
    :math:`\nu = (s/\epsilon')\sqrt{2\ln(1.25/\delta')}` (``algorithms.md``
    §2.6; ``s = 2`` reproduces the reference code). The restart with the
    largest noisy eigenvalue is kept and deflated.

    Parameters
    ----------
    T : array-like of shape (K, K, K)
    n_components : int
    epsilon : float in (0, inf)
    delta : float in (0, 1)
    sensitivity_l1 : float > 0
        ``s``: a bound on the entrywise L1 norm :math:`\sum|T - T'|` over
        neighbouring inputs. Then :math:`\|(T-T')(I,u,u)\|_2 \le s\|u\|_\infty^2`
        and :math:`|(T-T')(u,u,u)| \le s\|u\|_\infty^3`, so every step is a
        Gaussian mechanism with sensitivity-to-noise ratio ``s / nu``.
    n_restarts, n_iter : int
        ``L`` and ``R``.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    NoisyTensorPowerResult
        ``claimed`` is the paper's (epsilon, delta); ``guarantee`` the
        (epsilon, delta) that zCDP composition of the steps certifies.
    """
    T = np.array(T, dtype=np.float64)
    if T.ndim != 3 or len(set(T.shape)) != 1:
        raise ValueError(f"'T' must be a cubic 3-tensor of shape (K, K, K); got shape {T.shape}.")
    K = T.shape[0]
    r = check_int(n_components, "n_components", minimum=1)
    if r > K:
        raise ValueError(f"'n_components' must be an integer in [1, {K}]; got {r}.")
    epsilon = check_epsilon(epsilon, allow_inf=False)
    delta = check_delta(delta, allow_zero=False)
    s = check_positive(sensitivity_l1, "sensitivity_l1")
    L, R = check_int(n_restarts, "n_restarts"), check_int(n_iter, "n_iter")
    m = r * L * (R + 1)
    eps_step = epsilon / math.sqrt(m * (4.0 + math.log(2.0 / delta)))
    delta_step = delta / (2.0 * m)
    nu = classic_gaussian_sigma(eps_step, delta_step, s, allow_large_epsilon=True)
    gen = as_generator(rng)
    lams, vecs = np.empty(r), np.empty((r, K))
    for k in range(r):
        u = gen.standard_normal((L, K))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        for _ in range(R):
            scale = nu * np.max(np.abs(u), axis=1, keepdims=True) ** 2
            u = tensor_apply(T, u) + scale * gen.standard_normal((L, K))
            u /= np.linalg.norm(u, axis=1, keepdims=True)
        noisy = np.einsum("li,li->l", tensor_apply(T, u), u) + nu * np.max(np.abs(u), axis=1) ** 3 * gen.standard_normal(L)
        best = int(np.argmax(noisy))
        lams[k], vecs[k] = noisy[best], u[best]
        T -= lams[k] * np.einsum("i,j,k->ijk", vecs[k], vecs[k], vecs[k])
    rho = m * (s / nu) ** 2 / 2.0
    holds = ApproxDP(zcdp_to_approx_dp(rho, delta), delta, rho=rho)
    return NoisyTensorPowerResult(eigenvalues=lams, eigenvectors=vecs, noise_scale=nu, step_epsilon=eps_step,
                                  step_delta=delta_step, n_steps=m, claimed=ApproxDP(epsilon, delta), guarantee=holds)
