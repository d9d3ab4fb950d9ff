r"""Private orthogonal tensor decomposition (Imtiaz & Sarwate's AGN, centralised; ``docs/algorithms.md`` §2.6).

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
released exactly, ``docs/algorithms.md`` §0.4).

Sensitivities
-------------
L2, on the coordinates the noise acts on: the upper triangle / one entry per
index orbit ``i <= j <= k``.

* MOG second: :math:`\sqrt2 R^2/n` (replace-one), :math:`R^2/n` (zero-out), :math:`R^2` for the
  sum (add-remove, where the noisy count divides it).
* MOG third: the orbit vector is linear and :math:`\|o(S)\| \le \|S\|_F`, so
  :math:`\|o(x^{\otimes3} - y^{\otimes3})\| \le 2R^3`; and
  :math:`o(\mathcal T(v))` has ``3 v_i`` on orbit ``(i,i,i)`` and ``v_j`` on
  each orbit ``{i,i,j}`` (``i != j``), so :math:`\|o(\mathcal T(v))\| = \sqrt{D+8}\,\|v\|`
  (the full Frobenius norm is :math:`\sqrt{3D+6}\|v\|`, §2.6). With
  :math:`\|x - y\| \le 2R`: :math:`\Delta_3 = (2R^3 + 2\sigma^2 R\sqrt{D+8})/n`
  (replace-one), :math:`(R^3 + \sigma^2 R \sqrt{D+8})/n` (zero-out), or that times ``n`` for the sum
  (add-remove).
* STM: a document's symmetrised contribution has orbit coordinates of norm
  1 (all words equal), 1/3 or 1/6 for the tensor and 1 or 1/2 for the matrix,
  so :math:`\sqrt2/N` (replace-one; two all-equal documents), :math:`1/N` (zero-out) or 1 (the sum,
  add-remove).
"""

from collections.abc import Sequence

import numpy as np

from .._rng import noise_source, spawn
from .._validation import check_nonnegative, check_positive
from ..data import as_source
from ..moments.auto_release import BoundBudget, as_bound_budget, is_auto
from ..moments.ranged_release import ranges_note
from ..moments.ranges import clipped_to_ranges, with_indicator_ranges
from ..moments.tensor_bound import release_mog_moments_auto, with_note
from ..privacy import Accountant, check_accountant
from ..solvers.tensor_power import robust_tensor_power, unwhiten, whiten, whiten_tensor
from ._conventions import (all_or_nothing, fit_input, labelled_attribute, name_of, privacy_report, release_input,
                           release_noise, require_for_fit)
from ._params import REQUIRED, check_parameters, integer, one_of, param, parameters, positive, value_only
from ._uncertainty_models import tensor_spread
from .component_summaries import tensor_summary
from .tensor_error import TARGETS
from .uncertainty import check_draws, check_level
from .noisy_tpm import NoisyTensorPowerResult, noisy_tensor_power_method
from ..moments.tensor_moments import (
    MODELS,
    TensorBudget,
    TensorMoments,
    mean_correction,
    mog_third_sensitivity,
    planned_guarantees,
    release_mog_moments,
    release_topic_moments,
    check_tensor_arguments,
    topic_sensitivity,
)

__all__ = [
    "TensorBudget",
    "TensorMoments",
    "TensorDecompositionFit",  # PrivateTensorDecomposition: it on scikit-learn's BaseEstimator (scikit_learn.py)
    "release_mog_moments",
    "release_topic_moments",
    "mog_third_sensitivity",
    "topic_sensitivity",
    "mean_correction",
    "NoisyTensorPowerResult",
    "noisy_tensor_power_method",
]


@parameters
class TensorDecompositionFit:
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
    epsilon : float in (0, inf] or None, default=None
        Required by ``fit``; ``fit_release`` uses the releases' privacy
        parameters and ignores these.
    delta : float in (0, 1) or None
    row_norm : "auto" or float, default="auto"
        ``"mog"``: the L2 bound on (centred) rows. ``"auto"`` (the default,
        as every estimator's and the command line's): a private
        0.95-quantile of the row norms paid from ``bound_budget``, the budget
        then split in zCDP (shares of rho, as ``calibration="zcdp"``); a
        number: a public bound, free. Unused by ``"stm"`` (one-hot words have
        norm 1).
    sigma2 : float >= 0, optional
        The mixture's public noise variance; required for ``"mog"``.
    vocabulary_size : int, optional
        ``"stm"`` with integer word ids: the public vocabulary size.
    budget : TensorBudget, optional
        Default ``TensorBudget(second=0.5, third=0.5)``.
    neighbours : {"replace-one", "zero-out", "add-remove"}, default="replace-one"
        Under add-remove the row (document) count is released with noise from
        ``count_share`` of the budget, and the moments are noisy sums over it.
    calibration : {"analytic", "zcdp"}, default="analytic"
    center : array-like of shape (n_features,), optional
        ``"mog"``: a public centre subtracted before clipping (added back to
        the means). There is no private centre: the method needs the ``K``
        means, seen from the centre, to be linearly independent, and seen
        from the data's own mean they are not (``sum_k w_k (mu_k - mean) =
        0``, so ``M_2`` has rank ``K - 1`` and the whitening divides by
        noise, even with no noise at all), so a private mean cannot serve as
        the centre. A public point away from the mean (a reference value,
        the origin of the units) can. ``"stm"`` has no centre: its moments
        are co-occurrence probabilities of one-hot words.
    eigenvalue_floor : float > 0, default=1e-6
        ``eta`` of the whitening.
    n_restarts, n_iter : int, default=10, 30
        ``L`` and ``N`` of the tensor power method.
    n_draws : int >= 0, default=0
        Parametric-bootstrap draws (0: the noise checks only). Each draw redraws both releases'
        noise and, for ``target="population"``, the rows' sampling deviation under the fitted
        model, and reruns the whitening and the power method; a mixture's intervals also take in
        the clipping bias the fitted model predicts (:mod:`dpmoments.estimators.tensor_error`); where
        the released second moment misfits the fitted model the intervals are withheld (``NaN``).
    target : {"population", "sample"}, default="population"
        What the intervals are about: the population's means and weights (sampling counted, as
        statsmodels' intervals), or the decomposition of these rows' exact, unclipped moments.
    level : float in (0, 1), default=0.9
    rng : None, int or numpy.random.Generator
        Noise and (an independent stream for) the power method's starts; the
        bootstrap draws from a third, separate stream.
    accountant : Accountant or None
    count_share : float in (0, 1), default=0.05
        Add-remove only: the share of the budget spent on the noisy count.
    bound_budget : float in (0, 1) or BoundBudget, default=0.1
        The share spent on ``row_norm="auto"``.
    ranges : dict, optional
        ``"mog"``: PUBLIC per-column ranges ``{column: (lower, upper)}`` (a name or a 0-based position),
        as every estimator's ``ranges=``: each value is clipped to its column's range, for free. The
        columns keep their units (the public ``sigma2`` is stated in them; there is no per-column
        scale). With every column ranged the box bounds the rows: ``row_norm="auto"`` is drawn on a
        grid that ends at the box's largest norm about the centre, or is that norm, free, where the
        rows are too few for the draw. The releases' last post-processing line names the ranged columns.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        MOG: the means; STM: topic word distributions (negatives clipped,
        rows renormalised to sum 1, ``docs/algorithms.md`` §2.6.1). In the order
        the power method found them (largest ``lambda`` first).
    weights_ : ndarray of shape (n_components,)
        ``1 / lambda_k^2`` (not renormalised).
    eigenvalues_ : ndarray of shape (n_components,)
        ``lambda_k`` of the whitened tensor (made >= 0 by the sign of theta).
    whitening_ : Whitening
    moments_ : TensorMoments
    privacy_ : guarantee
        What the two releases (and, under add-remove, the count; with
        ``row_norm="auto"``, the bound) compose to.
    privacy_parts_ : tuple of Part
        With ``row_norm="auto"``: the bound's share and the moments'.
    neighbours_ : str
        The relation ``privacy_`` holds under.
    weights_se_, components_se_ : ndarray or None
        With ``n_draws > 0``: bootstrap standard errors of the weights and of
        every entry of the components (redrawn components are matched to the
        fitted ones).
    weights_noise_se_, components_noise_se_ : ndarray or None
        The same from the releases' noise alone (how much of the error is the privacy's).
    weights_interval_, components_interval_ : ndarray or None
        Basic bootstrap ``level`` intervals, shapes ``(2, K)`` and ``(2, K, d)``, for ``target``;
        a mixture's the hull with the same interval moved by its clipping bias's effect; a weight's cut to
        [0, 1] (and to its estimate, where the noise put that outside).
    snr_ : float
        The ``K``-th eigenvalue of the released :math:`M_2` over the spectral
        norm of its noise; below 1 the whitening divides by noise.
    uncertainty_ : dict
        JSON-able summary (noise laws, weights and their sum, spreads).
    diagnostics_ : list of dict
        Failed checks (each also a ``NoiseDominatesWarning``): whitening
        failure, ``sigma2`` above the released spectrum (MOG), weights that
        are not proportions.

    n_features_in_ : int
        Columns seen in ``fit`` (MOG; STM: the vocabulary size ``D``. ``fit_release``: the releases' ``n_features``).
    feature_names_in_ : ndarray of str
        The column names, when ``fit`` was given a DataFrame whose column
        names are all strings (scikit-learn's rule); ``transform``,
        ``predict`` and ``score`` then check them.
    privacy_report_ : dict
        JSON-able, with the fields every estimator shares (``fitted_by``,
        ``spent``, ``guarantee``, ``neighbours``, ``parts``, ``noise``, ...;
        ``docs/privacy.md``), ``model`` and ``releases``: both releases' metadata.

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
    >>> from dpmoments.estimators import PrivateTensorDecomposition
    >>> m = make_mog(20000, 6, 2, sigma2=0.01, rng=0)
    >>> est = PrivateTensorDecomposition(n_components=2, model="mog", epsilon=float("inf"), row_norm=3.0,
    ...                                  sigma2=0.01, rng=0)
    >>> import warnings; warnings.simplefilter("ignore")
    >>> est.fit(m.X).components_.shape
    (2, 6)
    """

    _estimator = "PrivateTensorDecomposition"

    n_components: int = param(REQUIRED, check=integer(minimum=1))  # at most n_features: _decompose
    model: str = param(REQUIRED, check=one_of(*MODELS))
    epsilon: float | None = param(None)  # these five and the budgets: check_tensor_arguments, in _check_params
    delta: float | None = param(None)
    row_norm: float | str = param("auto")
    sigma2: float | None = param(None)  # required by model="mog": _check_params
    vocabulary_size: int | None = param(None)  # release_topic_moments'
    budget: TensorBudget | None = param(None)
    neighbours: str = param("replace-one")
    calibration: str = param("analytic")
    center: Sequence[float] | None = param(None)  # public only (a private one is refused): _check_params
    eigenvalue_floor: float = param(1e-6, check=positive)
    n_restarts: int = param(10, check=integer(minimum=1))
    n_iter: int = param(30, check=integer(minimum=1))
    n_draws: int = param(0, check=value_only(check_draws))
    level: float = param(0.9, check=value_only(check_level))
    rng: int | np.random.Generator | None = param(None)
    accountant: Accountant | None = param(None)
    count_share: float = param(0.05)
    bound_budget: float | BoundBudget = param(0.1)
    ranges: dict | None = param(None)
    target: str = param("population", check=one_of(*TARGETS))

    def _check_params(self):
        """The declared checks, then those that depend on the model or on each other."""
        check_parameters(self)
        model = self.model
        args = check_tensor_arguments(self.epsilon, self.delta, self.neighbours, self.calibration, self.budget,
                                      self.count_share)
        if model == "mog":
            if self.sigma2 is None:
                raise ValueError("model='mog' needs the public noise variance 'sigma2' (never estimated from the "
                                 "data without budget); got None.")
            check_nonnegative(self.sigma2, "sigma2")
            if is_auto(self.row_norm):
                as_bound_budget(self.bound_budget)
            else:
                check_positive(self.row_norm, "row_norm")
            if isinstance(self.center, str):
                raise ValueError(f"'center' must be a public centre (array-like) or None; got {self.center!r}: a "
                                 "private centre would be the data's mean, around which the mixture's means are "
                                 "linearly dependent and cannot be recovered.")
        elif self.center is not None or self.ranges is not None:
            raise ValueError("model='stm' takes no 'center' or 'ranges': its moments are co-occurrence "
                             "probabilities of one-hot words.")
        return model, args

    def _accountant(self):
        return check_accountant(self.accountant)

    @all_or_nothing
    def fit(self, X, y=None):
        """Release the two moments of ``X`` (rows for MOG, documents for STM) and decompose them.

        Parameters
        ----------
        X : array-like or DataFrame
            MOG: rows of shape (n_samples, n_features), a DataFrame's string
            column names becoming ``feature_names_in_``; STM: documents, integer
            word ids of shape (n_docs, 3) or one-hot words of shape (n_docs, 3, D).
        y : ignored

        Returns
        -------
        self
        """
        require_for_fit(self, "epsilon")
        X = as_source(X).data  # a Source is fitted as the input it holds
        if as_source(X).sparse:  # refused here, whatever the format (the moment passes would each fail differently)
            raise TypeError("'X' is a sparse matrix; sparse input is not supported by PrivateTensorDecomposition: "
                            "pass dense rows (MOG) or word ids (STM).")
        model, args = self._check_params()
        names = fit_input(self, X) if model == "mog" else None
        acct = self._accountant()
        planned = planned_guarantees(args).total
        source = noise_source(self.rng)  # where the noise starts: a second fit from the same seed is refused
        if acct is not None and not acct.can_spend(planned, neighbours=args.neighbours, noise_source=source):
            acct.spend(planned, neighbours=args.neighbours, noise_source=source)  # raises, naming why
        # The releases spawn streams 0 and 1 of ``rng``; the power method's starts use stream 2.
        common = dict(epsilon=args.epsilon, delta=args.delta, budget=args.budget, neighbours=args.neighbours,
                      calibration=args.calibration, rng=self.rng, count_share=args.count_share)
        self.privacy_parts_ = ()
        ranged = None
        ranges = with_indicator_ranges(self.ranges, X) if model == "mog" else None
        if ranges is not None:  # clipped to the public ranges (an opened table's 0/1 columns' too): a per-row map
            X, ranged, range_names, box = clipped_to_ranges(X, ranges, self.center)
        if model == "mog" and is_auto(self.row_norm):  # the bound's draw takes stream 3
            moments, self.privacy_parts_ = release_mog_moments_auto(
                X, sigma2=self.sigma2, center=self.center, bound_budget=self.bound_budget,
                box=None if ranged is None else box, **common)
        elif model == "mog":
            moments = release_mog_moments(X, sigma2=self.sigma2, row_norm=self.row_norm, center=self.center, **common)
        else:
            moments = release_topic_moments(X, vocabulary_size=self.vocabulary_size, **common)
        if ranged is not None:
            moments = _ranges_noted(moments, range_names, ranged)
        if acct is not None:
            acct.spend(moments.guarantee, label=name_of(self), neighbours=args.neighbours,
                       noise_source=source)
        return self._decompose(moments, spawn(self.rng, 3)[2], names, fitted_by="fit")

    @all_or_nothing
    def labelled(self, attribute="components_"):
        """A fitted attribute labelled by the input's columns: ``components_`` (and its ``_se_``) as a
        ``DataFrame`` with rows ``component1, component2, ...``, ``weights_`` as a ``Series`` over them,
        ``location_``-style vectors over the columns (``x0, x1, ...`` without names). Needs pandas."""
        rows = "component" if attribute.startswith(("components", "weights")) else None
        return labelled_attribute(self, attribute, rows=rows)

    def fit_release(self, moments):
        """Decompose releases already paid for (a :class:`TensorMoments`): no new privacy cost.

        No privacy parameter is needed: ``epsilon``, ``delta``, ``row_norm``,
        ``sigma2``, ``budget`` and ``neighbours`` are the releases'.
        """
        if not isinstance(moments, TensorMoments):
            raise TypeError(f"'moments' must be a TensorMoments; got {type(moments).__name__}.")
        check_parameters(self)
        model = self.model
        if moments.model != model:
            raise ValueError(f"the moments were released for model={moments.model!r}, not {model!r}.")
        self.privacy_parts_ = ()  # TensorMoments do not carry the parts of a private bound
        return self._decompose(moments, spawn(self.rng, 3)[2], None, fitted_by="fit_release")

    def summary(self, feature_names=None, data_name=None):
        """The fit's :class:`~.summary.Summary`: ``str(est.summary())`` is what ``dpmoments tensor`` prints.

        The command line's table for this fit: each weight and each mean's (topic's) leading coordinates with
        their noise, unless the decomposition failed; how much of it is noise, the composed guarantee and the
        private choices. Post-processing: no privacy cost. ``feature_names`` (mog) default to
        ``feature_names_in_`` (else x0, x1, ...; stm's words are w0, w1, ...); ``data_name`` names the data.
        """
        return tensor_summary(self, feature_names, data_name)

    def _decompose(self, moments, gen_tpm, names, fitted_by):
        K = int(self.n_components)
        d = moments.second.n_features
        if K > d:
            raise ValueError(f"'n_components' must be an integer in [1, n_features={d}]; got {K}.")
        comps, lam, W, tpm = self._solve(moments, K, gen_tpm)
        with np.errstate(divide="ignore"):
            self.weights_ = 1.0 / lam**2
        self.components_, self.eigenvalues_ = comps, lam
        self.whitening_, self.tensor_power_, self.moments_ = W, tpm, moments
        self.release_ = moments
        self.privacy_ = moments.guarantee
        self.neighbours_ = moments.second.neighbours
        release_input(self, d, names)
        # Under add-remove both releases divide by the same noisy count: it is listed once.
        noise = release_noise("second moment", moments.second) + release_noise("third moment", moments.third)[:1]
        self.privacy_report_ = privacy_report(
            self, guarantee=moments.guarantee, neighbours=self.neighbours_, randomness=moments.second.randomness,
            fitted_by=fitted_by, parts=self.privacy_parts_, noise=noise, model=moments.model,
            releases={"second_moment": moments.second.to_dict(), "third_moment": moments.third.to_dict()})

        def redecompose(draw, gen):
            c, lam_draw = self._solve(draw, K, gen)[:2]
            with np.errstate(divide="ignore"):
                return c, 1.0 / lam_draw**2

        vars(self).update(tensor_spread(moments, self, redecompose, self.n_draws, self.level, self.rng,
                                        name_of(self), self.target))
        return self

    def _solve(self, moments, K, gen_tpm):
        """Whiten, decompose, un-whiten: post-processing of the two releases."""
        W = whiten(moments.m2, K, float(self.eigenvalue_floor))
        tpm = robust_tensor_power(whiten_tensor(moments.m3, W.matrix), K, n_restarts=self.n_restarts,
                                  n_iter=self.n_iter, rng=gen_tpm)
        sign = np.where(tpm.eigenvalues < 0, -1.0, 1.0)  # (lam, theta) ~ (-lam, -theta)
        lam, theta = tpm.eigenvalues * sign, tpm.eigenvectors * sign[:, None]
        comps = lam[:, None] * unwhiten(W, theta)
        if moments.model == "stm":
            comps = _to_distributions(comps)
        elif moments.second.center is not None:
            comps = comps + moments.second.center
        return comps, lam, W, tpm


def _to_distributions(comps):
    comps = np.maximum(comps, 0.0)
    sums = comps.sum(axis=1, keepdims=True)
    uniform = np.full_like(comps, 1.0 / comps.shape[1])
    return np.where(sums > 0, comps / np.where(sums > 0, sums, 1.0), uniform)


def _ranges_noted(moments, names, ranged):
    """The moments with the line naming the columns clipped to public ranges (post-processing: a note)."""
    line = ranges_note(names, ranged, "clipped to their ranges in their own units (no scales: sigma2 is in them)",
                       "own units, unclipped, under the row bound")
    return with_note(moments, f"{line}; row bound {moments.second.row_norm:.4g}")

