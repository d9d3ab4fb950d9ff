r"""Private robust regression by iteratively reweighted least squares (Park & Welling 2016)."""

import math

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from .._rng import as_generator, noise_source, spawn
from ..moments import clip_responses
from ..moments.auto_release import BoundBudget, as_bound_budget, choose_bounds, is_auto, sampling_quantile
from ..moments.counts import warn_if_delta_large
from ..privacy import Accountant, check_accountant
from ..privacy.relations import check_neighbours
from ..solvers.irls import check_p
from ._conventions import all_or_nothing, check_input, clone_sharing_tally, noise_entry
from ._irls_error import irls_laws
from ._irls_iterations import clipped_design, private_iterations, psd_floor_in_use
from ._irls_plan import IRLSPlanMixin
from ._irls_results import IRLSResultsMixin
from ._budget import moment_laws
from .model_defaults import N_ITER
from ._params import (REQUIRED, check_parameters, nonnegative, optional, or_else, param, parameters, positive,
                      positive_or_inf, value_only)
from ._irls_sampling import release_sampling, sandwich_parts
from ._column_map import LabelledCoefficients, check_one_response_bound, supervised_rows
from .error_budget import check_target as check_error_target
from .uncertainty import check_draws, check_level

__all__ = ["PrivateIRLS"]


def _n_iter(n_iter, name):
    if isinstance(n_iter, bool) or not isinstance(n_iter, (int, np.integer)) or n_iter < 1:
        raise ValueError(f"'{name}' must be an integer >= 1; got {n_iter!r}.")


def _replace_one(neighbours, name):
    check_neighbours(neighbours, ("replace-one",), "the weighted moments are analysed for replace-one with N public, "
                     "which also covers zero-out pairs")


@parameters
class PrivateIRLS(IRLSPlanMixin, IRLSResultsMixin, LabelledCoefficients, RegressorMixin, BaseEstimator):
    r"""Differentially private Lp regression (least absolute deviations by default) by IRLS.

    Each of ``n_iter`` iterations (``docs/algorithms.md`` §3.4) computes weights
    :math:`s_i = 1/\max(1/w_{\max}, |y_i - x_i^\top\theta|^{2-p})` from the
    previous *private* iterate, releases the weighted moments

    .. math::

        \tilde A = \frac1N\sum_i s_i x_i y_i + \text{noise}, \qquad
        \tilde B = \frac1N\sum_i s_i x_i x_i^\top + \text{noise},

    and sets :math:`\theta = \tilde B_+^{-1}\tilde A`, where :math:`\tilde B_+`
    has its eigenvalues floored at ``psd_floor`` (post-processing).

    Parameters
    ----------
    epsilon : float in (0, inf]
        Total budget of the ``2 n_iter`` releases; ``inf`` gives the exact
        (non-private) thresholded IRLS, with a ``NotPrivateWarning``.
    delta : float in [0, 1)
        Total delta (> 0 whenever a release is Gaussian or for ``"zcdp"``).
    row_norm : float > 0 or "auto", default="auto"
        Public bound ``R``: rows are clipped to ``||x||_2 <= R``. ``"auto"``:
        a private quantile of ``||x||`` paid from ``bound_budget`` (free, the
        box's ``sqrt(d)``, when ``ranges`` covers every column).
    response_bound : float > 0 or "auto", default="auto"
        Public bound ``r``: responses are clipped to ``|y| <= r``. ``"auto"``:
        a private quantile of ``|y|``, likewise (free, 1, with ``response_range``).
    n_iter : int >= 1, default=10
        ``J``, the number of iterations (each costs two releases; docs/regression.md
        says why 10).
    w_max : float > 0 or "auto", default="auto"
        The largest IRLS weight (Park & Welling's "δ", renamed). The
        sensitivities grow linearly in it; residuals below ``1/w_max`` are
        treated as ``1/w_max``. ``"auto"``: ``5 / response_bound_`` (in the
        units of ``y``, whichever bound is in use).
    p : float in [1, 2], default=1.0
        The loss :math:`\sum|r_i|^p`; ``p = 1`` is median (LAD) regression.
    first_moment : {"gaussian", "laplace"}, default="gaussian"
    second_moment : {"gaussian", "wishart"}, default="gaussian"
        ``"gaussian"``: symmetric Gaussian on the upper triangle, certified.
        ``"wishart"``: the paper's :math:`W_d(d+1, w_{\max}R^2/(2\varepsilon' N) I)`,
        reported ``Uncertified`` with an ``UncertifiedPrivacyWarning``.
    accounting : {"zcdp", "basic", "advanced", "cdp-paper"}, default="zcdp"
        How the budget is split over the releases (see
        :func:`dpmoments.estimators._budget.irls_budget`). ``"cdp-paper"``
        reproduces the paper's arithmetic and is reported ``Uncertified``.
    split : float in (0, 1), default=0.5
        Share of each iteration's budget spent on the first moment.
    delta_slack : float, optional
        Slack of ``"advanced"`` composition (default ``delta / 2``).
    psd_floor : float >= 0, "auto" or None, default="auto"
        Eigenvalue floor of :math:`\tilde B` before solving; ``"auto"`` uses
        ``2 sqrt(d)`` times the noise standard deviation of ``B`` (about the
        spectral norm of the noise; public, data-free). ``None``: no
        projection, as in the other estimators: each iterate solves with
        :math:`\tilde B` as released (its pseudo-inverse, negative
        eigenvalues kept), which noise can make unstable.
    fit_intercept : bool, default=True
        Append the public constant column ``intercept_scale`` to the clipped
        rows. The augmented rows have norm at most
        ``sqrt(R^2 + intercept_scale^2)``, which the sensitivities use.
    intercept_scale : float > 0, optional
        The constant of the intercept column (default ``row_norm / 2``: the
        sensitivities grow with ``R^2 + intercept_scale^2``; half of ``R`` cut
        the withheld coefficients of the Laplace simulation at epsilon = 4 from
        27% to 11%, docs/regression.md).
    accountant : Accountant, optional
        Spent check-then-commit: the total guarantee is checked with
        ``can_spend`` before the data are read and spent after the fit.
    n_draws : int >= 0, default=0
        Parametric-bootstrap draws of the final iteration's noise (0: the
        first-order closed form). Each draw costs one ``d x d`` solve.
    level : float in (0, 1), default=0.9
        Coverage of ``coef_interval_``.
    rng : None, int or numpy.random.Generator, default=None
        The releases' noise; the bootstrap draws from a separate stream of it.
    neighbours : {"replace-one"}, default="replace-one"
        The relation of the guarantee; the others are refused (the weighted
        moments are normalised by the exact N).
    target : {"population", "sample"}, default="population"
        What the intervals are about: the population coefficients (sampling
        counted, from the ``sampling_budget`` releases; LAD, ``p = 1``, zCDP
        accounting) or the coefficients of these rows (noise only).
    sampling_budget : float in [0, 1), default=0.1
        The share (of ``rho`` under zCDP accounting) of three releases at the
        final iterate behind the sampling part
        (:mod:`dpmoments.estimators._irls_sampling`); listed as the part
        ``"sampling (error budget)"``.
    ranges : dict, optional
        Public per-column ranges ``{column name or position: (lower, upper)}``:
        each ranged column is clipped, centred at its midpoint and scaled by its
        half-width (a fixed map of each row, no cost); the coefficients come back
        in the original units (:mod:`dpmoments.estimators._column_map`).
    response_range : (float, float), optional
        The public range of ``y``, likewise.
    bound_budget : float in (0, 1) or BoundBudget, default=0.1
        With an ``"auto"`` bound: the share of the budget spent on the private
        0.95-quantiles (:func:`dpmoments.moments.auto_release.choose_bounds`,
        lowered at small ``n`` to leave at least the draw's rank error above);
        the iterations get the rest and the whole ``delta``. With
        ``accounting="zcdp"`` it is a share of ``rho``, the zCDP parameter
        that fits ``(epsilon, delta)``, like the iterations' split (each draw
        is ``e^2/8``-zCDP: at ``(1, 1e-6)`` a draw gets 1.85 times the epsilon
        a share of epsilon would give it); otherwise a share of ``epsilon``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    row_norm_, response_bound_ : float
        The bounds used (public, or drawn privately for ``"auto"``).
    intercept_ : float
        ``intercept_scale * theta[-1]`` when ``fit_intercept``, else ``0.0``.
    n_iter_ : int
    budget_ : IRLSBudget
        The per-release split and its composition.
    privacy_ : ApproxDP, PureDP or Uncertified
        The guarantee the fit consumed (with ``"auto"`` bounds: the
        composition of the draws and the iterations, in zCDP under
        ``accounting="zcdp"``, basic otherwise).
    privacy_parts_ : tuple of Part
        Each share spent (empty without ``"auto"`` bounds).
    neighbours_ : str
        The relation ``privacy_`` holds under: ``"replace-one"``.
    n_psd_clipped_ : tuple of int
        Eigenvalues of :math:`\tilde B` raised to the floor, per iteration.
    coef_se_, coef_interval_ : ndarray
        Standard errors, shape ``(n_features,)``, and ``level`` intervals,
        shape ``(2, n_features)``, of the coefficients: the noise of every
        iteration propagated through the weights, the iterations not run, and
        sampling (``target="population"``); not the clipping bias
        (``uncertainty_["not_covered"]``). NaN where ``coef_biased_``.
    coef_noise_se_ : ndarray of shape (n_features,)
        The iterations' noise alone.
    coef_cov_ : ndarray
        The covariance behind ``coef_se_``, the intercept last when fitted.
    coef_biased_ : ndarray of bool
        Coefficients along directions where the final ``B~``'s eigenvalues were
        raised to the floor: shrunk by an unknown factor, interval withheld.
    coef_unsampled_ : ndarray of bool
        Coefficients along directions where the sampling release ``K_h / h`` is at
        or below its noise floor (not all of them): sampling unmeasured there, so
        their se and interval are the noise-only ones (``sampling-floored``).
    intercept_se_, intercept_interval_, intercept_biased_, intercept_unsampled_ : float, ndarray, bool, bool
        The same for ``intercept_`` (0 and ``False`` without an intercept).
    intercept_fitted_ : bool
        Whether an intercept was fitted (``fit_release`` takes the sites' rows as sent).
    w_max_ : float
        The ``w_max`` used.
    ranges_ : dict
        The public ranges as applied, and the columns without one.
    snr_ : float
        ``||theta|| / sqrt(sum of the coefficients' noise variances)``.
    uncertainty_ : dict
        JSON-able: noise laws, level, what is covered.
    diagnostics_ : list of dict
        Failed noise checks (also ``NoiseDominatesWarning``): the
        coefficients within their noise.

    n_features_in_ : int
        Columns seen in ``fit`` (without the intercept column).
    feature_names_in_ : ndarray of str
        The column names, when ``fit`` was given a DataFrame whose column
        names are all strings (scikit-learn's rule); ``transform``,
        ``predict`` and ``score`` then check them.
    privacy_report_ : dict
        JSON-able, with the fields every estimator shares (``fitted_by``,
        ``spent``, ``guarantee``, ``neighbours``, ``parts``, ``noise``, ...;
        ``docs/privacy.md``), then ``budget`` (the split) and ``sensitivity``.

    Privacy
    -------
    Replace-one neighbours, ``N`` public. After clipping, each record has
    ``||x|| <= R``, ``|y| <= r`` and weight ``s <= w_max``, and its weight
    depends only on itself and the previous private iterate, so per iteration
    the L2 sensitivity of ``A`` is ``2 w_max R r / N`` (L1: ``2 w_max sqrt(d)
    R r / N``) and that of the upper triangle of ``B`` is ``sqrt(2) w_max
    R^2 / N``. By default every release is Gaussian and accounted in zCDP
    (``rho = Delta^2 / (2 sigma^2)``, composition adds rho, then the optimal
    conversion to ``(epsilon, delta)``). Reference: Park & Welling, "A note
    on privacy preserving iteratively reweighted least squares" (arXiv
    1605.07511), corrected as in ``docs/algorithms.md`` §3.6.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.estimators.irls import PrivateIRLS
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20_000, 3)) / 4
    >>> y = X @ np.array([1.0, -1.0, 0.5]) + 0.05 * rng.standard_t(2, size=20_000)
    >>> est = PrivateIRLS(epsilon=1.0, delta=1e-6, row_norm=1.0, response_bound=1.0,
    ...                   n_iter=5, w_max=10.0, fit_intercept=False, rng=0).fit(X, y)
    >>> bool(np.abs(est.coef_ - [1.0, -1.0, 0.5]).max() < 0.2)
    True
    >>> str(est.privacy_)
    '(1, 1e-06)-DP'
    """

    __sklearn_clone__ = clone_sharing_tally  # clones count their fits with this one's

    epsilon: float = param(REQUIRED, check=positive_or_inf)
    delta: float = param(REQUIRED)  # the plan's (irls_budget)
    row_norm: float | str = param("auto", check=or_else(("auto",), positive))
    response_bound: float | str = param("auto", check=or_else(("auto",), positive))
    n_iter: int = param(N_ITER, check=_n_iter)
    w_max: float | str = param("auto", check=or_else(("auto",), positive))
    p: float = param(1.0, check=value_only(check_p))
    first_moment: str = param("gaussian")  # these four: the plan's (irls_budget)
    second_moment: str = param("gaussian")
    accounting: str = param("zcdp")
    split: float = param(0.5)
    delta_slack: float | None = param(None)
    psd_floor: float | str | None = param("auto", check=or_else(("auto", None), nonnegative))
    fit_intercept: bool = param(True)
    intercept_scale: float | None = param(None, check=optional(positive))
    accountant: Accountant | None = param(None, check=value_only(check_accountant))
    n_draws: int = param(0, check=value_only(check_draws))
    level: float = param(0.9, check=value_only(check_level))
    rng: int | np.random.Generator | None = param(None)
    neighbours: str = param("replace-one", check=_replace_one)
    bound_budget: float | BoundBudget = param(0.1)  # where a bound is "auto": _validate
    target: str = param("population", check=value_only(check_error_target))
    sampling_budget: float = param(0.1)  # with bound_budget: _validate
    ranges: dict | None = param(None)  # the column map's (_column_map.py)
    response_range: tuple[float, float] | None = param(None)

    # -- fit ------------------------------------------------------------------------
    def _validate(self):
        """The declared checks, then those of parameters taken together."""
        check_parameters(self)
        check_one_response_bound(self.response_bound, self.response_range)
        if self._autos():
            as_bound_budget(self.bound_budget)
        if not (isinstance(self.sampling_budget, (int, float, np.floating)) and 0 <= self.sampling_budget < 1
                and self._bound_share() + self.sampling_budget < 1):
            raise ValueError("'sampling_budget' must be a share in [0, 1) that leaves the iterations some of the "
                             f"budget with 'bound_budget'; got {self.sampling_budget!r}.")

    @all_or_nothing
    def fit(self, X, y=None):
        """Clip, run ``n_iter`` private iterations, and set ``coef_``, ``intercept_``, ``privacy_``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features), an opened table, or a path
            A table (``open_table(path_or_frame, target="y", categories=...)``) with a target column gives
            the response itself; its one-hot and ``:missing`` columns get the range 0 to 1.
        y : array-like or Series of shape (n_samples,), optional
            Required unless ``X`` is a table opened with a target; its name (``y.name``) may key the
            response's range in ``ranges``.

        Returns
        -------
        self
        """
        self._map = None
        self._validate()
        self._intercept_column = bool(self.fit_intercept)
        # an opened table (its target, or y), a DataFrame or an array, read into memory
        X, y, names, self._map = supervised_rows(self, X, y, self._intercept_column)
        X, y = self._map.rows(X), self._map.response(y)  # a fixed map of each row: public ranges, no cost
        n, d = X.shape[0], X.shape[1] + bool(self.fit_intercept)
        self.row_norm_, self.response_bound_ = (self._free_bound(k) or (1.0 if is_auto(v) else float(v)) for k, v in
                                                (("row_norm", self.row_norm), ("response_bound", self.response_bound)))
        budget, guarantee, _, planned = self._plan(n, d)  # at unit bounds where they are "auto"
        first, second = moment_laws(self.first_moment, self.second_moment)
        guarantee, parts = self._with_parts(budget, guarantee)
        source = noise_source(self.rng)  # where the noise starts: a second fit from the same seed is refused
        if self.accountant is not None and not self.accountant.can_spend(guarantee, neighbours="replace-one",
                                                                         noise_source=source):
            self.accountant.spend(guarantee, label="PrivateIRLS", neighbours="replace-one",
                                  noise_source=source)  # raises, with why
        self._warn(guarantee)
        if first.needs_delta or second.needs_delta:
            warn_if_delta_large(self.delta, n, noisy=False, stacklevel=2)
        rng = as_generator(self.rng)
        autos = self._autos()
        if autos:  # the draws get their own stream; without them a seed gives the same noise as before
            gen_bounds, rng = spawn(rng, 2)
            chosen, parts[:len(autos)] = choose_bounds((X, y), self._autos(), epsilon=self.epsilon,
                                               budget=as_bound_budget(self.bound_budget),
                                               share=as_bound_budget(self.bound_budget).share, rng=gen_bounds,
                                               delta=self.delta, zcdp=self._zcdp_shares(),
                                               quantile=sampling_quantile(n, as_bound_budget(self.bound_budget),
                                                                          self._unit_noise_norm(planned, n, d)))
            self.row_norm_ = chosen.get("row_norm", self.row_norm_)
            self.response_bound_ = chosen.get("response_bound", self.response_bound_)
        budget, _, sens, scales = self._plan(n, d)
        self.w_max_ = self._w_max()
        Z = clipped_design(X, self.row_norm_, self._kappa() if self.fit_intercept else None)
        yc = clip_responses(y, self.response_bound_)
        floor = psd_floor_in_use(self.psd_floor, second, scales["B"], d)
        theta, clipped, iterations = private_iterations(Z, yc, n_iter=self.n_iter, w_max=self.w_max_, p=self.p,
                                                        floor=floor, scales=scales, first_moment=first,
                                                        second_moment=second, rng=rng)
        self.sampling_noise_ = []
        sampling = self._sampling(Z, yc, theta, n, rng) if self._sampling_on() else None
        if self.accountant is not None:
            self.accountant.spend(guarantee, label="PrivateIRLS", neighbours="replace-one", noise_source=source)
        self.privacy_parts_ = tuple(parts)
        self._set_fitted(clipped, budget, guarantee, sens, scales, (first, second))
        self._set_spread(iterations, floor, irls_laws(first, second, scales, theta.size),
                         sampling, n, self._map.back(self._kappa(), self._intercept_column))
        self.ranges_ = self._map.to_dict(names)
        return self

    def _free_bound(self, name):
        """A bound the public ranges give for free where it is "auto": the box's ``sqrt(d)``, or 1 for ``y``."""
        if not is_auto(getattr(self, name)):
            return None
        if name == "row_norm" and self._map.all_ranged:
            return math.sqrt(self._map.center.size)
        return 1.0 if name == "response_bound" and self._map.y_range is not None else None

    def _sampling(self, Z, y, theta, n, rng):
        """The sampling releases at the final iterate and the sandwich's parts (``_irls_sampling``)."""
        scales, sens = self._sampling_scales(n)
        released = release_sampling(Z, y, theta, w_max=self._w_max(), response_bound=self.response_bound_,
                                    scales=scales, rng=rng)
        self.sampling_noise_ = [noise_entry(f"sampling release {k}", "gaussian" if scales[k] else "none", scales[k],
                                            sensitivity=sens[k], sensitivity_norm="l2") for k in scales]
        return sandwich_parts(released, scales, Z.shape[1], n, self._row_bound())

    def predict(self, X):
        """Linear predictions ``X @ coef_ + intercept_`` (rows are not clipped).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        if not hasattr(self, "coef_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("This PrivateIRLS instance is not fitted yet; call 'fit' first.")
        return check_input(self, X) @ self.coef_ + self.intercept_

