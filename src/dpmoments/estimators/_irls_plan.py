"""The privacy plan of :class:`~dpmoments.estimators.PrivateIRLS`: shares, sensitivities, noise scales.

Everything here reads public values and the bounds in use (public, or drawn privately for
``"auto"``), never the rows: the plan is made, and checked against an accountant, before the data
are read. The shares of the budget (zCDP accounting: shares of the ``rho`` that fits
``(epsilon, delta)``): the private bounds (``bound_budget``), the sampling releases behind the
population intervals (``sampling_budget``, :mod:`dpmoments.estimators._irls_sampling`), and the
iterations (the rest).
"""

import math

from ..moments.auto_release import as_bound_budget, is_auto
from ..moments.release import Part
from ..privacy import ZCDP, PureDP, analytic_gaussian_sigma, classic_gaussian_sigma, compose
from ..privacy import calibrate_gaussian, zcdp_gaussian_sigma, zcdp_to_approx_dp
from .._validation import check_sensitivity
from ._budget import irls_budget, moment_laws
from ._irls_sampling import sampling_scales
from .model_defaults import INTERCEPT_SCALE, W_MAX_AUTO

__all__ = ["IRLSPlanMixin"]

class IRLSPlanMixin:
    """The plan's methods, shared by the estimator's ``fit`` and the command line's epsilon grid."""

    def _autos(self):
        """The bounds drawn privately: "auto" ones that the public ranges do not give for free."""
        cmap = getattr(self, "_map", None)
        free = {"row_norm": cmap is not None and cmap.all_ranged,
                "response_bound": cmap is not None and cmap.y_range is not None}
        return {name: stat for name, stat in (("row_norm", "row-norm"), ("response_bound", "abs-response"))
                if is_auto(getattr(self, name)) and not free[name]}

    def _sampling_on(self):
        """The sampling releases are made: population target, LAD (p = 1), zCDP accounting or epsilon = inf."""
        return (self.target == "population" and self.p == 1.0 and self.sampling_budget > 0
                and (self.accounting == "zcdp" or math.isinf(self.epsilon)))

    def _sampling_share(self):
        return float(self.sampling_budget) if self._sampling_on() and math.isfinite(self.epsilon) else 0.0

    def _bound_share(self):
        return as_bound_budget(self.bound_budget).share if self._autos() else 0.0

    def _zcdp_shares(self):
        """The shares are of rho (zCDP accounting, finite epsilon, some share taken), else of epsilon."""
        return (self.accounting == "zcdp" and math.isfinite(self.epsilon)
                and bool(self._autos() or self._sampling_share()))

    def _epsilon_main(self):
        """The epsilon left to the iterations after the private bounds and the sampling releases (at which
        ``irls_budget`` finds ``(1 - shares) rho`` under zCDP shares)."""
        if not (self._autos() or self._sampling_share()):
            return self.epsilon
        if self._zcdp_shares():
            return zcdp_to_approx_dp((1.0 - self._bound_share() - self._sampling_share()) * self._rho(), self.delta)
        return self.epsilon * (1.0 - self._bound_share())

    def _w_max(self):
        """``w_max`` in use: public, or for ``"auto"`` ``W_MAX_AUTO`` over the response bound in use."""
        if self.w_max == "auto":
            return W_MAX_AUTO / self._bound("response_bound")
        return float(self.w_max)

    def _rho(self):
        return calibrate_gaussian(self.epsilon, self.delta, 1.0, calibration="zcdp")[1].rho

    def _plan(self, n, d):
        """Budget split, guarantee, sensitivities and noise scales, from the bounds in ``row_norm_`` and
        ``response_bound_``; reads no data."""
        R, r, w = self._row_bound(), self._bound("response_bound"), self._w_max()
        sens = {"A_l2": 2 * w * R * r / n, "A_l1": 2 * w * math.sqrt(d) * R * r / n,
                "B_l2": math.sqrt(2.0) * w * R * R / n}
        cause = f"'row_norm' = {self._bound('row_norm'):g}, 'response_bound' = {r:g} and 'w_max' = {w:g}"
        for value in sens.values():
            check_sensitivity(value, cause)
        if math.isinf(self.epsilon):
            return None, PureDP(math.inf), sens, {"A": 0.0, "B": 0.0}
        budget = irls_budget(self._epsilon_main(), self.delta, self.n_iter, accounting=self.accounting,
                             first_moment=self.first_moment, second_moment=self.second_moment,
                             split=self.split, delta_slack=self.delta_slack)
        first, second = moment_laws(self.first_moment, self.second_moment)
        scales = {"A": self._scale(budget.first_moment, first, sens["A_l2"], sens["A_l1"]),
                  "B": self._scale(budget.second_moment, second, sens["B_l2"], None, n, R)}
        return budget, budget.total, sens, scales

    def _scale(self, g, kind, l2, l1, n=None, R=None):
        if kind.norm == "l1":  # Laplace: pure epsilon at the L1 sensitivity
            return l1 / g.epsilon
        if not kind.additive:  # Wishart: the paper's scale (for its claimed epsilon), with R^2 for a general row bound
            return self._w_max() * R * R / (2.0 * g.claim.epsilon * n)
        if self.accounting == "zcdp":
            return zcdp_gaussian_sigma(g.rho_or_none, l2)
        claim = g.claim.as_approx()
        if self.accounting == "cdp-paper":
            return classic_gaussian_sigma(claim.epsilon, claim.delta, l2, allow_large_epsilon=True)
        return analytic_gaussian_sigma(claim.epsilon, claim.delta, l2)

    def _bound(self, name):
        """The bound in use: the one set for this fit (drawn for "auto"), else the public parameter."""
        value = getattr(self, name + "_", None)
        return float(getattr(self, name)) if value is None else value

    def _row_bound(self):
        R = self._bound("row_norm")
        if not self.fit_intercept:
            return R
        return math.sqrt(R**2 + self._kappa() ** 2)

    def _kappa(self):
        """The intercept column's public constant: ``intercept_scale``, or ``INTERCEPT_SCALE`` times the row bound."""
        if self.intercept_scale is None:
            return INTERCEPT_SCALE * self._bound("row_norm")
        return float(self.intercept_scale)

    def _with_parts(self, budget, guarantee):
        """The total with the private bounds' draws and the sampling releases composed in, and the parts
        (planned: no data). Under zCDP shares everything is one rho, composed in zCDP; otherwise the
        bounds' draws are shares of epsilon, composed basic."""
        autos, sampling = self._autos(), self._sampling_share()
        if not (autos or sampling):
            return guarantee, []
        share, k = self._bound_share(), max(len(autos), 1)
        if self._zcdp_shares():
            parts = [Part(name, ZCDP(share * self._rho() / k), share / k) for name in autos]
            if sampling:
                parts.append(Part("sampling (error budget)", ZCDP(sampling * self._rho()), sampling))
            parts.append(Part("IRLS iterations", guarantee, 1.0 - share - sampling))
            releases = [p.guarantee for p in parts[:-1]] + list(budget.releases())
            return compose(releases, composition="zcdp", delta=self.delta), parts
        parts = [Part(name, PureDP(self.epsilon * share / k), share / k) for name in autos]
        parts.append(Part("IRLS iterations", guarantee, 1.0 - share))
        return compose([p.guarantee for p in parts]), parts

    def _unit_noise_norm(self, scales, n, d):
        """The norm of one iteration's noise on ``A`` (the score's units) at ``n = 1`` and a unit row bound,
        ``sd_A n sqrt(d) / R`` (public: the plan's scale, made before the bounds are drawn)."""
        first = moment_laws(self.first_moment, self.second_moment)[0]
        return first.sd(scales["A"]) * n * math.sqrt(d) / self._row_bound()

    def _sampling_rho(self):
        return math.inf if math.isinf(self.epsilon) else self._sampling_share() * self._rho()

    def _sampling_scales(self, n):
        return sampling_scales(self._sampling_rho(), n, self._row_bound(), self._bound("response_bound"))
