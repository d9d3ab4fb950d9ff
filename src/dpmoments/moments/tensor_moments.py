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
from .._validation import check_positive, check_sensitivity, check_vector
from ..exceptions import NotPrivateWarning
from ..mechanisms import gaussian_noise, symmetric_matrix_noise, symmetric_tensor_noise
from ..mechanisms.laws import GAUSSIAN
from .accumulate import accumulate_moments
from .counts import COUNT_SHARE, NoisyCount, check_count_share, published_count, warn_if_delta_large
from ..data import as_source, iter_chunks
from .dask_moments import dask_moment_sums, row_ones
from .release import Release, randomness_of
from .release_noise import bounded_sensitivity
from .statistics import SECOND
from .symmetry import symmetrise_matrix, symmetrise_tensor
from ..privacy import PureDP, ZCDP, calibrate_gaussian, compose
from ..privacy import zcdp_gaussian_sigma
from ..privacy.relations import NEIGHBOURS

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


def _relation_factor(neighbours, n, replace_one):
    """Replace-one moves ``replace_one`` rows' worth of the mean, zero-out one; add-remove one row of the sum."""
    if neighbours == "add-remove":
        if n is not None:
            raise ValueError("under neighbours='add-remove' n is private and the noise goes on the sums: pass "
                             "n_samples=None (dividing by the exact n is the 'zero-out' relation).")
        return 1.0
    return (replace_one if neighbours == "replace-one" else 1.0) / n


def mog_third_sensitivity(*, n_samples, n_features, row_norm, sigma2, neighbours="replace-one"):
    r"""L2 sensitivity of the MOG third-moment statistic on its orbit vector.

    :math:`(2R^3 + 2\sigma^2 R\sqrt{D+8})/n` (replace-one), half of it
    (zero-out), or :math:`R^3 + \sigma^2 R\sqrt{D+8}` for the sum
    (add-remove; ``n_samples=None``); derivation in the module docstring.
    """
    one = row_norm**3 + sigma2 * row_norm * math.sqrt(n_features + 8.0)
    return _relation_factor(neighbours, n_samples, 2.0) * one


def topic_sensitivity(*, n_docs, neighbours="replace-one"):
    r"""L2 sensitivity of the symmetrised STM moments.

    :math:`\sqrt2/N` (replace-one), :math:`1/N` (zero-out) or 1 for the sums
    (add-remove, ``n_docs=None``).
    """
    return _relation_factor(neighbours, n_docs, math.sqrt(2.0))


# -- releases -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TensorArguments:
    """The checked privacy arguments of a tensor release."""

    epsilon: float
    delta: Optional[float]
    neighbours: str
    calibration: str
    budget: TensorBudget
    count_share: float


def check_tensor_arguments(epsilon, delta, neighbours, calibration, budget, count_share=COUNT_SHARE):
    epsilon = check_epsilon(epsilon)
    if not math.isinf(epsilon):
        if delta is None:
            raise ValueError("'delta' in (0, 1) is required for the Gaussian releases; got None.")
        delta = check_delta(delta, allow_zero=False)
    neighbours = check_option(neighbours, "neighbours", NEIGHBOURS)
    calibration = check_option(calibration, "calibration", TENSOR_CALIBRATIONS)
    budget = TensorBudget() if budget is None else budget
    if not isinstance(budget, TensorBudget):
        raise TypeError(f"'budget' must be a TensorBudget or None; got {type(budget).__name__}.")
    return TensorArguments(epsilon, delta, neighbours, calibration, budget, check_count_share(count_share, neighbours))


@dataclass(frozen=True)
class PlannedPart:
    """One Gaussian release of a plan: its guarantee and the (epsilon, delta) it is calibrated to."""

    guarantee: object
    epsilon: Optional[float] = None
    delta: Optional[float] = None

    def sigma(self, sensitivity):
        if self.epsilon is None:  # a zCDP part: calibrated to its rho
            return zcdp_gaussian_sigma(self.guarantee.rho_or_none, sensitivity)
        return calibrate_gaussian(self.epsilon, self.delta, sensitivity)[0]


@dataclass(frozen=True)
class TensorPlan:
    """The releases' guarantees before any data: the count (add-remove only), M2, M3 and their composition."""

    count: Optional[PlannedPart]
    second: PlannedPart
    third: PlannedPart
    total: object


def planned_guarantees(args):
    """The :class:`TensorPlan` of checked :class:`TensorArguments`.

    Under add-remove the count takes ``count_share`` of the budget first and
    the moments split the rest by the :class:`TensorBudget`.
    """
    eps, delta, budget = args.epsilon, args.delta, args.budget
    if math.isinf(eps):
        none = PlannedPart(PureDP(math.inf))
        return TensorPlan(None, none, none, PureDP(math.inf))
    share = args.count_share if args.neighbours == "add-remove" else 0.0
    shares = {"count": share, "second": (1 - share) * budget.second, "third": (1 - share) * budget.third}
    if args.calibration == "zcdp":
        rho = calibrate_gaussian(eps, delta, 1.0, calibration="zcdp")[1].rho
        parts = {k: PlannedPart(ZCDP(v * rho)) for k, v in shares.items() if v > 0}
    else:
        parts = {k: PlannedPart(calibrate_gaussian(v * eps, v * delta, 1.0)[1], v * eps, v * delta)
                 for k, v in shares.items() if v > 0}
    total = compose([p.guarantee for p in parts.values()])
    return TensorPlan(parts.get("count"), parts["second"], parts["third"], total)


def _noisy_pair(stat2, stat3, sens2, sens3, n, d, row_norm, center, args, rng, model, sigma2):
    """Noisy M2 and M3 from ``stat(k)`` = the exact statistic's sum divided by ``k``.

    Replace-one / zero-out: noise on the means (``k = n``). Add-remove: a
    noisy count drawn first, noise on the sums (``k = 1``), both divided by
    the noisy count.
    """
    plan = planned_guarantees(args)
    common = dict(n=n, n_features=d, row_norm=row_norm, neighbours=args.neighbours, center=center,
                  randomness=randomness_of(rng, args.epsilon))
    if math.isinf(args.epsilon):
        warnings.warn("epsilon=inf: the exact moments are released, with no privacy.", NotPrivateWarning,
                      stacklevel=3)
        r2 = Release(second_moment=stat2(n), mechanism="none", noise_scale=0.0, guarantee=PureDP(math.inf), **common)
        r3 = Release(third_moment=stat3(n), mechanism="none", noise_scale=0.0, guarantee=PureDP(math.inf), **common)
        return TensorMoments(model, r2, r3, plan.total, sigma2, args.budget)
    gen2, gen3 = spawn(rng, 2)
    count = None
    if plan.count is not None:  # drawn first, from the second moment's stream
        scale = plan.count.sigma(1.0)
        count = NoisyCount(published_count(n + float(gaussian_noise(1, scale, gen2)[0])), scale, args.count_share,
                           plan.count.guarantee)
    k = n if count is None else 1
    S2, S3 = stat2(k), stat3(k)
    s2, s3 = plan.second.sigma(sens2), plan.third.sigma(sens3)
    noisy2 = S2 + symmetric_matrix_noise(d, s2, gen2)
    noisy3 = S3 + symmetric_tensor_noise(d, s3, gen3)
    common.update(mechanism=GAUSSIAN.name, sensitivity_norm=GAUSSIAN.norm, calibration=args.calibration)
    r2 = _tensor_release("second_moment", noisy2, s2, sens2, plan.second.guarantee, count, common)
    r3 = _tensor_release("third_moment", noisy3, s3, sens3, plan.third.guarantee, count, common)
    warn_if_delta_large(args.delta, r2.n, noisy=count is not None, stacklevel=3)
    return TensorMoments(model, r2, r3, plan.total, sigma2, args.budget)


def _tensor_release(field, noisy, scale, sens, guarantee, count, common):
    if count is None:
        return Release(**{field: noisy}, noise_scale=scale, sensitivity=sens, guarantee=guarantee, **common)
    # Each release carries the count it divides by: its guarantee includes the count's.
    return Release(**{field: noisy / count.value}, **{**common, "n": count.value}, noise_scale=scale / count.value,
                   sum_noise_scale=scale, sensitivity=sens, guarantee=compose([count.guarantee, guarantee]),
                   count_noise_scale=count.noise_scale, count_share=count.share, count_guarantee=count.guarantee)


def release_mog_moments(X, *, sigma2, epsilon, delta=None, row_norm, budget=None, neighbours="replace-one",
                        calibration="analytic", center=None, rng=None, chunk_size=65536, count_share=COUNT_SHARE):
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
    neighbours : {"replace-one", "zero-out", "add-remove"}
        Under add-remove the row count is released with noise from
        ``count_share`` of the budget and both moments are noisy sums divided
        by it (see :func:`dpmoments.release_second_moment`).
    calibration : {"analytic", "zcdp"}
    center : array-like of shape (n_features,), optional
    rng : None, int or numpy.random.Generator
    count_share : float in (0, 1), default=0.05
        Add-remove only.

    Returns
    -------
    TensorMoments

    Privacy
    -------
    Gaussian, L2 sensitivities :math:`\sqrt2R^2/n` and
    :func:`mog_third_sensitivity` on upper-triangle / orbit coordinates
    (replace-one; one row's term over n under zero-out, over 1 for the sums
    under add-remove); the releases (and, under add-remove, the count)
    compose to ``(epsilon, delta)`` (basic composition, or zCDP with
    ``calibration="zcdp"``).
    """
    args = check_tensor_arguments(epsilon, delta, neighbours, calibration, budget, count_share)
    sigma2 = check_nonnegative(sigma2, "sigma2")
    row_norm = check_positive(row_norm, "row_norm")
    center = None if center is None else check_vector(center, "center")
    kind = as_source(X).kind
    if kind == "dask":  # partial sums inside the blocks' tasks (on a cluster: on the workers)
        sums = dask_moment_sums(X, row_ones(X), row_norm=row_norm, response_bound=1.0, third=True, center=center)
    else:
        if isinstance(X, (np.ndarray, list)) and kind != "file":
            X = check_data(X)
            source = (X, np.ones(X.shape[0]))  # sum x_i rides along as the cross moment with y = 1
        else:  # a path, a set of files or an iterable of chunks
            source = ((c, np.ones(c.shape[0])) for c in iter_chunks(X, chunk_size=chunk_size))
        sums = accumulate_moments(source, row_norm=row_norm, response_bound=1.0, third=True, center=center)
    n, d = sums.n, sums.n_features
    n_public = None if args.neighbours == "add-remove" else n  # add-remove: the sums' sensitivities
    stat2 = lambda k: symmetrise_matrix(sums.xtx / k)  # noqa: E731
    stat3 = lambda k: symmetrise_tensor(sums.third / k - sigma2 * mean_correction(sums.xty / k))  # noqa: E731
    sens2 = bounded_sensitivity(SECOND, norm="l2", n_samples=n_public, n_features=d, neighbours=args.neighbours,
                                row_norm=row_norm)
    try:
        sens3 = mog_third_sensitivity(n_samples=n_public, n_features=d, row_norm=row_norm, sigma2=sigma2,
                                      neighbours=args.neighbours)
    except OverflowError:
        sens3 = math.inf
    sens3 = check_sensitivity(sens3, f"'row_norm' = {row_norm:g} with 'sigma2' = {sigma2:g}")
    return _noisy_pair(stat2, stat3, sens2, sens3, n, d, row_norm, center, args, rng, "mog", sigma2)


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
                          neighbours="replace-one", calibration="analytic", rng=None, count_share=COUNT_SHARE):
    r"""Release the symmetrised single-topic moments :math:`\mathrm{sym}E[x_1x_2^\top]`, :math:`\mathrm{sym}E[x_1\otimes x_2\otimes x_3]`.

    Parameters
    ----------
    docs : int array of shape (n_docs, 3) or one-hot array of shape (n_docs, 3, D)
    vocabulary_size : int, optional
        Required for integer ids (public ``D``).
    epsilon, delta, budget, neighbours, calibration, rng, count_share
        As in :func:`release_mog_moments`.

    Returns
    -------
    TensorMoments

    Privacy
    -------
    Gaussian, L2 sensitivity :func:`topic_sensitivity` (:math:`\sqrt2/N`
    replace-one, :math:`1/N` zero-out, 1 for the sums under add-remove) on
    both releases, measured on the symmetrised statistics' upper-triangle /
    orbit coordinates.
    """
    args = check_tensor_arguments(epsilon, delta, neighbours, calibration, budget, count_share)
    ids, D = word_ids(docs, vocabulary_size)
    N = ids.shape[0]
    a, b, c = ids[:, 0], ids[:, 1], ids[:, 2]
    pairs = np.bincount(a * D + b, minlength=D * D).reshape(D, D)
    triples = np.bincount((a * D + b) * D + c, minlength=D**3).reshape(D, D, D)
    sens = topic_sensitivity(n_docs=None if args.neighbours == "add-remove" else N, neighbours=args.neighbours)
    return _noisy_pair(lambda k: symmetrise_matrix(pairs / k), lambda k: symmetrise_tensor(triples / k), sens, sens,
                       N, D, 1.0, None, args, rng, "stm", None)


# -- the estimator --------------------------------------------------------------------------------------------
