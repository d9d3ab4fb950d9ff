r"""Private model selection by penalised, L1-constrained least squares (Lei et al. 2018)."""

import dataclasses
import math
import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator

from .._rng import as_generator, describe_randomness, noise_source, spawn
from .._validation import check_sensitivity
from ..exceptions import NotPrivateWarning
from ..mechanisms import exponential_mechanism, laplace_noise, report_noisy_min
from ..moments import accumulate_moments
from ..moments.auto_release import BoundBudget, as_bound_budget, choose_bounds, is_auto
from ..moments.release import Part
from ..privacy import Accountant, PureDP, check_accountant, compose
from ..solvers.l1_ball import l1_ball_least_squares
from ..solvers.l1_ball_certified import certified_objectives
from ._column_map import LabelledCoefficients, supervised_rows
from ._conventions import all_or_nothing, clone_sharing_tally, noise_entry, privacy_report
from ._selection_plan import MECHANISMS, R_SHARE, SelectionPlanMixin, candidate_family  # noqa: F401 (public here)
from ._selection_plan import check_gap_tolerance, check_phi, check_R_range, check_replace_one
from ._params import REQUIRED, integer, or_else, param, parameters, positive, value_only
from ._selection_parts import SelectionPartsMixin
from ._selection_release import SelectionReleaseMixin
from ._selection_share import widened_basis
from ._uncertainty_models import selection_margin

__all__ = ["PrivateModelSelection", "candidate_family"]


@parameters
class PrivateModelSelection(SelectionPlanMixin, SelectionPartsMixin, SelectionReleaseMixin, LabelledCoefficients,
                            BaseEstimator):
    r"""epsilon-DP linear model selection by a noisy penalised L1-constrained criterion.

    For every model :math:`M` of a candidate family fixed before seeing the
    data (``docs/algorithms.md`` §4.2),

    .. math::

        Q_R(M, D) = \min_{\operatorname{supp}\beta \subseteq M,\ \lVert\beta\rVert_1 \le R}
                    \sum_i (y_i - x_i^\top\beta)^2 ,

    is computed from the sufficient statistics :math:`X^\top X, X^\top y,
    y^\top y` (one pass over the data, then one small QP per model), and

    .. math::

        \hat M = \arg\min_M \; Q_R(M, D) + \varphi_n |M| + \frac{2\Delta}{\varepsilon} W_M,
        \qquad W_M \overset{iid}{\sim} \mathrm{Laplace}(0, 1),

    with :math:`\Delta = (r + bR)^2` (``b`` = ``bounds``), or, with
    ``mechanism="exponential"``, :math:`P(M) \propto \exp(-\varepsilon(Q_R +
    \varphi_n|M|)/(2\Delta))`.

    Parameters
    ----------
    epsilon : float in (0, inf]
        Budget of the selection step (``inf``: exact argmin, not private).
    bounds : float > 0 or "auto", default="auto"
        Public entrywise bound: ``X_ij`` is clipped to ``[-bounds, bounds]``
        (Lei et al. use 1). ``"auto"``: a private 0.95-quantile of
        ``max_j |x_ij|`` paid from ``bound_budget``.
    response_bound : float > 0 or "auto", default="auto"
        Public ``r``: ``y`` is clipped to ``[-r, r]``. Clipping is silent:
        how many responses were clipped is private and never reported.
        ``"auto"``: a private 0.95-quantile of ``|y|``, likewise.
    R : float > 0 or "private", default="private"
        The L1 radius. ``"private"``: estimated as the L1 norm of the
        full-model least-squares fit to Laplace-noised moments, clamped to
        ``R_range``, with ``R_SHARE`` (0.1) of ``epsilon`` (the part ``"R"``), or
        with its own ``R_epsilon`` on top when given.
    candidates : "all", "nested" or list of index tuples, default="all"
        ``"all"``: every non-empty subset of at most ``max_size`` columns;
        ``"nested"``: ``{0}, {0, 1}, ...`` in column order; or the user's
        list (which may include the empty model ``()``). Never data-driven.
    max_size : int, optional
        Largest model size for ``"all"`` / ``"nested"``.
    phi : float >= 0, "theorem" or "bic", default="theorem"
        Penalty per variable, in units of ``y**2`` (the criterion's units).
        ``"theorem"``: ``8 log|M| Delta / epsilon``, the scale of Lei et al.'s
        consistency theorem: ``4 log|M|`` times the selection noise's scale
        ``2 Delta / epsilon``, so a model adding a variable that explains
        nothing loses to the true one with probability about
        ``1 - |M|^-3`` (``selection_probability_``); with ``"auto"`` bounds
        ``epsilon`` is the selection's, less ``bound_budget``. At ``epsilon=inf`` (no
        selection noise) it is the BIC ``sigma^2 log n`` with the exact
        residual variance ``Q_R(full)/n``. On Lei et al.'s simulation
        (``beta = (1,1,1,0,0,0)``, ``R = 3``, ``r = 4``, epsilon = 1) it
        selects the true model every time from n = 1e4. ``"bic"``:
        ``sigma2 * log(n)``; at small epsilon it is far below the selection
        noise and picks supersets of the true model (benchmarks/results/lei.md).
    sigma2 : float > 0 or "private", default=1.0
        Noise variance of ``y`` (units of ``y**2``) for ``phi="bic"``. ``"private"``: ``Q_R(full)/n`` plus
        Laplace noise of scale ``Delta / (n sigma2_epsilon)``, clamped to
        ``[1e-12, r^2]``.
    mechanism : {"noisy-min", "exponential"}, default="noisy-min"
    R_epsilon, sigma2_epsilon : float, optional
        Budgets of the private ``R`` and ``sigma2`` (required when private).
    R_range : (float, float), default=(1e-6, inf)
        Public clamp for the private ``R``.
    refit_epsilon : float, optional
        If given, ``coef_`` is refitted on the selected model from
        Laplace-noised moments restricted to it, with this extra budget.
    gap_tolerance : float in [1e-9, 1), default=1e-6
        Every ``Q_R`` is within ``gap_tolerance * Delta`` of the exact
        minimum, for every input (no refusal), and the noise is calibrated to
        ``Delta (1 + gap_tolerance)`` (see Privacy). The solver's steps grow
        as ``|M|^2 log(n / gap_tolerance)`` (``docs/algorithms.md`` §4.2).
    qp_iterations : int, default=300
        Projected-gradient iterations per model of the fast path, always run
        in full (the solver's work does not depend on the data; see Notes).
    release_scores : bool, default=False
        Store the noisy criteria of *all* models in ``scores_``. Report-noisy-min
        is epsilon-DP only when the argmin alone is released; releasing all
        ``|M|`` noisy scores costs ``epsilon |M| / 2`` (a Laplace vector with L1
        sensitivity ``|M| Delta``), which ``privacy_`` then records.
    accountant : Accountant, optional
        Checked with ``can_spend`` before the data are read; spent after.
    rng : None, int or numpy.random.Generator
    bound_budget : float in (0, 1) or BoundBudget, default=0.1
        With an ``"auto"`` bound: the share of ``epsilon`` spent on the private
        quantiles (:func:`dpmoments.moments.auto_release.choose_bounds`); the
        selection gets the rest. At its default value, on a table too small for
        the draws at 0.1, the least share (at most 0.7) that runs them is taken
        instead (:mod:`._selection_share`); any other value is kept as given.
        Reported as the part ``"bounds"``.
    neighbours : {"replace-one"}, default="replace-one"
        The relation of the guarantee; the others are refused (the BIC
        penalty and the private ``sigma2`` divide by the exact n).
    ranges : dict, optional
        Public per-column ranges ``{column: (lower, upper)}``: ranged columns
        clipped and mapped to [-1, 1] about their midpoints for free (all of
        them ranged: ``bounds`` is 1, no draw); the criterion is computed on
        the mapped columns, the refit comes back in the original units.
    response_range : (float, float), optional
        The public range of ``y``, likewise (``response_bound`` 1, no draw).

    Attributes
    ----------
    selected_ : tuple of int
        The selected column indices.
    candidates_ : tuple of tuple of int
    scores_ : ndarray of shape (n_candidates,) or None
        Noisy criteria (only with ``release_scores=True``).
    R_, sigma2_, phi_ : float
        The radius, variance and penalty used (public or privately estimated);
        ``phi_`` in units of ``y**2``.
    bounds_, response_bound_ : float
        The bounds used (public, or drawn privately for ``"auto"``).
    selection_probability_ : float
        A lower bound on the probability that the noisy choice is the exact
        argmin when every rival trails it by at least ``phi_`` (a superset
        adding a variable that explains nothing): computed from ``phi_``, the
        selection noise's scale ``2 Delta / epsilon`` and ``|M|`` alone.
    selection_gap_ : float or None
        The gap between the two smallest noisy criteria (units of ``y**2``):
        released for free with report-noisy-min (Ding, Wang, Zhang & Kifer,
        PVLDB 2019: noisy max with its gap is epsilon-DP at the same noise),
        read from ``scores_`` when they are released, ``None`` for the
        exponential mechanism. Exact at ``epsilon=inf``.
    tie_probability_ : float or None
        How often two equally good models would be separated by a noisy gap
        at least ``selection_gap_``; above 0.05 the choice is not
        distinguishable from its runner-up.
    snr_ : float
        ``phi_ / (2 Delta / epsilon)``: the penalty in units of the noise.
    uncertainty_ : dict
        JSON-able summary of the above.
    diagnostics_ : list of dict
        Failed noise checks (also ``NoiseDominatesWarning``): the selection
        margin within the noise (``selection_probability_ < 0.5`` or
        ``tie_probability_ > 0.05``).
    coef_ : ndarray of shape (n_features,) or None
        The private refit (``None`` without ``refit_epsilon``).
    coef_se_ : ndarray of shape (n_features,) or None
        First-order standard errors of the refit from its Laplace noise (0
        off the selected model; the L1 constraint is ignored, so they are
        exact to first order only where it is inactive).
    privacy_ : PureDP
        Everything the fit released, composed sequentially.
    privacy_parts_ : tuple of Part
        Each part of ``privacy_``: the private bounds' draws (shares of
        ``epsilon``), the selection, and the private ``R``, ``sigma2`` and
        refit when used (their own epsilons).
    neighbours_ : str
        The relation ``privacy_`` holds under: ``"replace-one"``.

    n_features_in_ : int
        Columns seen in ``fit`` (``X``'s).
    feature_names_in_ : ndarray of str
        The column names, when ``fit`` was given a DataFrame whose column
        names are all strings (scikit-learn's rule); ``transform``,
        ``predict`` and ``score`` then check them.
    privacy_report_ : dict
        JSON-able, with the fields every estimator shares (``fitted_by``,
        ``spent``, ``guarantee``, ``neighbours``, ``parts``, ``noise``, ...;
        ``docs/privacy.md``), then ``budget_parts``, the sensitivities, ``selection_noise_scale``, ``bounds``.

    Privacy
    -------
    Replace-one neighbours, ``n`` public, pure epsilon-DP. After clipping,
    ``|x_i^T beta| <= bounds * ||beta||_1 <= bounds * R`` (Hölder), so every
    squared residual lies in ``[0, (r + bounds R)^2]`` and the exact minimum
    ``Q_R(M, .)`` changes by at most ``Delta = (r + bounds R)^2`` for every
    ``M``. The released scores use the solver's value ``q(M, D) = f(beta)``
    at a feasible ``beta`` (so ``Q_R <= q``) with ``q <= Q_R + tau``, ``tau =
    gap_tolerance * Delta``, for **every** data set: either a Frank--Wolfe
    gap at most ``tau`` certifies it, or it is no worse than the best centre
    of the ellipsoid method run for a number of steps fixed by ``|M|``,
    ``n`` and ``gap_tolerance``, whose bound ``f - Q_R < tau`` holds whatever
    the data (``f`` varies by at most ``n Delta`` on the ball;
    :mod:`dpmoments.solvers.l1_ball_ellipsoid`). Hence ``q(M, D) - q(M, D')
    <= Q_R(M, D) + tau - Q_R(M, D') <= Delta + tau`` (and symmetrically):
    ``q`` has sensitivity ``Delta' = Delta + tau``, to which report-noisy-min
    (Laplace scale ``2 Delta' / epsilon``) and the exponential mechanism are
    calibrated, and no data set is refused; both are then
    epsilon-DP; report-noisy-min's noisy gap to the runner-up (``selection_gap_``)
    comes at no extra cost (Ding, Wang, Zhang & Kifer, PVLDB 13(3), 2019). (Floating-point rounding of the sums and of ``f``, relative
    ~1e-16, is outside this model, as for every float release.) Private ``R``: the upper triangle
    of ``X^T X / n`` and ``X^T y / n`` with L1 sensitivity ``(b^2 d (d+1) +
    2 b d r) / n``. Private ``sigma2``: ``Q_R(full)/n`` with sensitivity
    ``Delta' / n``. Refit: the same moments restricted to the ``k`` selected
    columns, ``(b^2 k (k+1) + 2 b k r) / n``. Budgets add (basic
    composition). Reference: Lei, Charest, Slavković, Smith & Fienberg,
    JRSS-A 181(3), 2018.

    Notes
    -----
    Timing: the scores are computed by
    :func:`dpmoments.solvers.l1_ball_certified.certified_objectives`, which
    runs the same operations on arrays of the same shapes for every data set
    (no closed-form shortcut, no early exit, no refusal); what still varies
    with the data is listed there.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.estimators.model_selection import PrivateModelSelection
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20_000, 4))
    >>> y = X @ np.array([1.0, 1.0, 0.0, 0.0]) + rng.normal(size=20_000)
    >>> sel = PrivateModelSelection(epsilon=1.0, bounds=1.0, response_bound=4.0, R=2.0,
    ...                             phi=500.0, rng=0).fit(X, y)
    >>> sel.selected_
    (0, 1)
    >>> str(sel.privacy_)
    '1-DP'
    """

    __sklearn_clone__ = clone_sharing_tally  # clones count their fits with this one's

    epsilon: float = param(REQUIRED)  # the plan's
    bounds: float | str = param("auto", check=or_else(("auto",), positive))
    response_bound: float | str = param("auto", check=or_else(("auto",), positive))
    R: float | str = param("private", check=or_else(("private",), positive))
    candidates: str | Sequence[Sequence[int]] = param("all")  # candidate_family's
    max_size: int | None = param(None)
    phi: float | str = param("theorem", check=check_phi)
    sigma2: float | str = param(1.0, check=or_else(("private",), positive))
    mechanism: str = param("noisy-min")
    R_epsilon: float | None = param(None)  # these three: shares of the plan's
    sigma2_epsilon: float | None = param(None)
    R_range: tuple[float, float] = param((1e-6, math.inf), check=check_R_range)
    refit_epsilon: float | None = param(None)
    release_scores: bool = param(False)
    gap_tolerance: float = param(1e-6, check=check_gap_tolerance)
    qp_iterations: int = param(300, check=integer(minimum=1))
    accountant: Accountant | None = param(None, check=value_only(check_accountant))
    rng: int | np.random.Generator | None = param(None)
    neighbours: str = param("replace-one", check=check_replace_one)
    bound_budget: float | BoundBudget = param(0.1)
    ranges: dict | None = param(None)  # the column map's (_column_map.py)
    response_range: tuple[float, float] | None = param(None)

    # -- fit ------------------------------------------------------------------------
    @all_or_nothing
    def fit(self, X, y=None):
        """Select a model privately (and optionally refit it).

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
        X, y, names, self._map = supervised_rows(self, X, y, True)  # a table (its target or y), a frame, an array
        X, y = self._map.rows(X), self._map.response(y)  # a fixed map of each row: public ranges, no cost
        n, d = X.shape
        self._rows = n  # public (replace-one): the bounds' share on a small table (_selection_share.py)
        family = candidate_family(self.candidates, self.max_size, d)
        parts = self._budget_parts(len(family))
        guarantee = compose([PureDP(e) for e in parts.values()])
        source = noise_source(self.rng)  # where the noise starts: a second fit from the same seed is refused
        if self.accountant is not None and not self.accountant.can_spend(guarantee, neighbours="replace-one",
                                                                         noise_source=source):
            self.accountant.spend(guarantee, label="PrivateModelSelection", neighbours="replace-one",
                                  noise_source=source)  # raises
        if not guarantee.is_private:
            warnings.warn("epsilon=inf: the exact model choice is released, with no privacy.", NotPrivateWarning,
                          stacklevel=2)
        rng = as_generator(self.rng)
        gen_bounds = None
        if self._autos():  # the draws get their own stream; without them a seed gives the same noise as before
            gen_bounds, rng = spawn(rng, 2)
        self._choose_bounds(X, y, gen_bounds)
        sums = accumulate_moments((X, y), entry_bound=self.bounds_, response_bound=self.response_bound_)
        G, b, c = np.array(sums.xtx), np.array(sums.xty), float(sums.yty)
        self.R_ = self._radius(G, b, n, rng)
        reach = self.response_bound_ + self.bounds_ * self.R_
        exact = check_sensitivity(reach * reach, f"'response_bound' = {self.response_bound_:g}, 'bounds' = "
                                  f"{self.bounds_:g} and R = {self.R_:g}")  # sensitivity of the exact minimum Q_R
        tau = self.gap_tolerance * exact  # every Q_R below is certified to within tau of its exact minimum
        delta_q = exact + tau
        spread = n * exact  # every squared residual on the ball lies in [0, exact]: f varies by at most n * exact
        if not math.isfinite(spread):  # public values only: the criterion itself would overflow
            raise ValueError(f"'response_bound' = {self.response_bound_:g}, 'bounds' = {self.bounds_:g}, R = "
                             f"{self.R_:g} and n = {n} give a criterion beyond the float range; restate the data in "
                             "other units.")
        self.sigma2_ = self._sigma2(G, b, c, n, delta_q, tau, spread, rng)
        self.phi_ = self._penalty(G, b, c, n, len(family), delta_q)
        q = self._certified(G, b, c, family, tau, spread)
        index = self._select(q + self.phi_ * np.array([len(m) for m in family]), delta_q, rng)
        self._set_margin(delta_q, len(family))
        self.selected_ = family[index]
        self.candidates_ = family
        self.coef_se_ = None if self.refit_epsilon is None else np.zeros(d)
        self.coef_ = self._refit(G, b, c, n, rng) if self.refit_epsilon is not None else None
        if self.coef_se_ is not None:
            self.uncertainty_["refit_coef_se"] = self.coef_se_.tolist()
        if self.accountant is not None:
            self.accountant.spend(guarantee, label="PrivateModelSelection", neighbours="replace-one",
                                  noise_source=source)
        self.privacy_ = guarantee
        self.neighbours_ = self.neighbours
        # The bounds' draws are shares of epsilon; the other parts' epsilons are their own (in each guarantee).
        self.privacy_parts_ = self.bound_parts_ + tuple(Part(k, PureDP(e)) for k, e in parts.items() if k != "bounds")
        self.privacy_report_ = self._report(parts, delta_q, exact, tau, n)
        return self

    def _choose_bounds(self, X, y, rng):
        """Set ``bounds_`` and ``response_bound_``: public, or private quantiles (the part ``"bounds"``)."""
        autos = self._autos()
        free = {"bounds": self._map.all_ranged, "response_bound": self._map.y_range is not None}
        self.bounds_, self.response_bound_ = (None if k in autos else 1.0 if free[k] and is_auto(getattr(self, k))
                                              else float(getattr(self, k)) for k in ("bounds", "response_bound"))
        self.bound_parts_ = ()
        if autos:
            given = as_bound_budget(self.bound_budget)
            budget = dataclasses.replace(given, share=self._bounds_share())
            basis = widened_basis(given.share, budget.share)
            chosen, drawn = choose_bounds((X, y), autos, epsilon=float(self.epsilon), budget=budget,
                                          share=budget.share, rng=rng, basis=basis)
            self.bounds_ = chosen.get("bounds", self.bounds_)
            self.response_bound_ = chosen.get("response_bound", self.response_bound_)
            self.bound_parts_ = tuple(drawn)

    def _penalty(self, G, b, c, n, n_candidates, delta_q):
        if self.phi == "bic":
            return self.sigma2_ * math.log(n)
        if self.phi != "theorem":
            return float(self.phi)
        eps = self._selection_epsilon()
        if math.isinf(eps):  # no selection noise, nothing private: the BIC with the exact residual variance
            return l1_ball_least_squares(G, b, c, self.R_).objective / n * math.log(n)
        return 8.0 * math.log(n_candidates) * delta_q / eps

    def _set_margin(self, delta_q, n_candidates):
        eps = self._selection_epsilon()
        scale = 0.0 if math.isinf(eps) else 2.0 * delta_q / eps
        prob, tie, snr, diagnostics, summary = selection_margin(self.phi_, scale, n_candidates, self.mechanism,
                                                                self.selection_gap_)
        self.selection_probability_, self.tie_probability_ = prob, tie
        self.snr_, self.diagnostics_, self.uncertainty_ = snr, diagnostics, {**summary, "phi": self.phi_,
                                                                             "phi_units": "y^2"}

    def _certified(self, G, b, c, family, tau, spread):
        """Q_R of every model, each within tau of its exact minimum for every input (work fixed by public values)."""
        return certified_objectives(G, b, c, self.R_, family, tolerance=tau, spread=spread,
                                    n_iter=self.qp_iterations)[0]

    def _select(self, scores, delta_q, rng):
        eps = self._selection_epsilon()
        self.scores_, self.selection_gap_ = None, None
        if math.isinf(eps):
            index, self.selection_gap_ = report_noisy_min(scores, 0.0, return_gap=True)
            return index
        if self.mechanism == "exponential":
            return exponential_mechanism(scores, eps, delta_q, rng)
        scale = 2.0 * delta_q / eps
        if not self.release_scores:
            # The noisy gap to the runner-up comes free with report-noisy-min (Ding et al. 2019).
            index, self.selection_gap_ = report_noisy_min(scores, scale, rng, return_gap=True)
            return index
        self.scores_ = scores + laplace_noise(scores.size, scale, rng)
        two = np.sort(self.scores_)[:2]
        self.selection_gap_ = float(two[1] - two[0]) if two.size > 1 else math.inf
        return int(np.argmin(self.scores_))

    def _report(self, parts, delta_q, exact, tau, n):
        return privacy_report(
            self, guarantee=self.privacy_, neighbours=self.neighbours_, randomness=describe_randomness(self.rng),
            parts=self.privacy_parts_, noise=self._noise(parts, delta_q, n),
            budget_parts=parts, composition="basic", mechanism=self.mechanism, sensitivity_Q=delta_q,
            sensitivity_Q_exact_minimum=exact, certified_gap=tau, qp_iterations=int(self.qp_iterations),
            selection_noise_scale=None if math.isinf(self._selection_epsilon())
            else 2.0 * delta_q / self._selection_epsilon(),
            bounds=[p.to_dict() for p in self.bound_parts_],
            n_candidates=len(self.candidates_),
            scores_released=bool(self.release_scores))

    def _noise(self, parts, delta_q, n):
        """The report's ``noise`` lines: the selection, then the private R, sigma2 and refit when used."""
        eps = self._selection_epsilon()
        mechanism = "none" if math.isinf(eps) else "laplace" if self.mechanism == "noisy-min" else "exponential"
        lines = [noise_entry("selection criteria Q_R(M) + phi |M|", mechanism,
                             None if math.isinf(eps) or mechanism == "exponential" else 2.0 * delta_q / eps,
                             sensitivity=delta_q, sensitivity_norm="each criterion")]
        return lines + self._parts_noise(parts, delta_q, n)
