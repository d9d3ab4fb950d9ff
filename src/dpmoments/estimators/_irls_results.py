"""What a :class:`~dpmoments.estimators.PrivateIRLS` fit records: its coefficients' error budget, its report, and
the fit of a multi-site run's releases (``fit_release``).

Post-processing of the iterations' releases (and the sampling releases): nothing here reads the rows
or draws noise, except the bootstrap draws of the error budget (``n_draws``), which redraw the
releases' own noise laws.
"""

import math
import warnings

import numpy as np

from .._rng import describe_randomness
from ..exceptions import NotPrivateWarning, UncertifiedPrivacyWarning
from ..mechanisms.laws import NONE, WISHART
from ..solvers.irls import auto_psd_floor
from ._column_map import release_map
from ._conventions import all_or_nothing, noise_entry, privacy_report, release_input, release_noise
from ._irls_error import irls_error_budget
from ._irls_sampling import sandwich_parts
from ._params import check_parameters
from .uncertainty import noise_law

__all__ = ["IRLSResultsMixin"]

#: How the report's noise list names a multi-site run's sampling releases, in their order.
_SAMPLING_NAMES = ("residual scale", "sandwich K", "sandwich V", "sign score")


def _sampling_parts(fit, d):
    """The sandwich's parts from a multi-site run's sampling releases (``fit.sampling``: the scale, ``K_h``, ``V``
    and LAD's score, which a plan written before it lacks), as :meth:`fit` makes them from its own
    (``_irls_sampling.sandwich_parts``, with the knot check's score); ``None`` for a run without them.
    Post-processing."""
    if not getattr(fit, "sampling", ()):
        return None
    scale, K, V, *sign = fit.sampling
    released = {"scale": float(scale.cross_moment[0]), "h": float(fit.bandwidth), "K": K.second_moment,
                "V": V.second_moment, "sign": sign[0].cross_moment if sign else None}
    scales = {"scale": scale.noise_scale, "K": K.noise_scale, "V": V.noise_scale}
    if sign:
        scales["sign"] = sign[0].noise_scale
    return sandwich_parts(released, scales, d, K.n, K.row_norm)


class IRLSResultsMixin:
    """``fit_release`` and the steps that set a fit's attributes, shared by ``fit`` and ``fit_release``."""

    @all_or_nothing
    def fit_release(self, fit):
        """The coefficients of an IRLS run across sites, with their noise: post-processing, no new cost.

        ``fit`` is what :func:`dpmoments.multisite.irls` (the ``"regress"`` analysis) returns.
        ``coef_`` are its coefficients and ``privacy_`` its guarantee (against the aggregator);
        ``coef_se_``, ``coef_interval_``, ``snr_`` and ``diagnostics_`` carry the noise of every
        iteration's releases, computed as :meth:`fit` computes them (``n_draws``, ``level``; the noise
        laws are the releases' own). A run with sampling rounds (``sampling_budget``: the residual
        scale and the LAD sandwich's matrices at the final iterate) gives, with ``target="population"``
        (the default), the sandwich's sampling part and the IRLS map's contraction, as :meth:`fit`
        does; a run without them passes each iteration's noise on undamped (conservative) and leaves
        sampling and the iterations not run out, which ``uncertainty_`` says. The sites' rows are taken as they sent
        them: ``fit_intercept`` is not applied; the run's own intercept (``fit.intercept_scale``: the
        sites appended that public constant to their clipped rows, as :meth:`fit` does) gives
        ``intercept_`` with its standard error and interval. A run whose sites mapped their rows by public ranges
        (``fit.ranges``, ``fit.response_range``) is mapped back as :meth:`fit` maps its own.

        Privacy: post-processing of the run's releases, so it spends nothing. ``privacy_`` is the
        run's guarantee against the aggregator, under the releases' neighbouring relation
        (``neighbours_``, replace-one across sites). The run clipped each site's rows to its public
        ``row_norm`` R and responses to ``response_bound`` r, with weights at most ``w_max``. Its
        sensitivities, ``2 w_max R r / N`` for A and ``sqrt(2) w_max R^2 / N`` for B, are those of
        :meth:`fit`, and ``privacy_report_["noise"]`` lists them.

        Parameters
        ----------
        fit : dpmoments.multisite.IRLSFit

        Returns
        -------
        self
        """
        if not (hasattr(fit, "releases") and len(fit.releases) >= 2):
            raise TypeError(f"'fit' must be the IRLSFit of a multi-site 'regress' run; got {type(fit).__name__}.")
        kappa = getattr(fit, "intercept_scale", None)
        self._intercept_column = kappa is not None  # the sites appended the constant kappa: theta[-1] * kappa
        check_parameters(self, "n_draws", "level", "target")  # the rest are the run's
        A, B = fit.releases[-2], fit.releases[-1]
        pairs = [(fit.releases[i].cross_moment, fit.releases[i + 1].second_moment)
                 for i in range(0, len(fit.releases) - 1, 2)]
        theta = np.array(fit.coef, dtype=float)
        self.coef_, self.intercept_, self.n_iter_ = theta, 0.0, int(fit.n_iter)
        self.budget_, self.privacy_, self.neighbours_ = None, fit.guarantee, B.neighbours
        self.n_psd_clipped_, self.privacy_parts_ = tuple(fit.n_psd_clipped), ()
        floor = auto_psd_floor(B.n_features, B.noise_scale)  # the floor the run solved with (multisite.analyses)
        back = release_map(getattr(fit, "ranges", None), getattr(fit, "response_range", None), theta.size, kappa)
        sampling = _sampling_parts(fit, theta.size) if self.target == "population" else None
        self._set_spread(pairs, floor, (noise_law(A), noise_law(B)), sampling, B.n, back)
        release_input(self, self.coef_.size)
        self.privacy_report_ = privacy_report(
            self, guarantee=self.privacy_, neighbours=self.neighbours_, randomness=B.randomness,
            fitted_by="fit_release", noise=release_noise("first moment A (final iteration)", A)
            + release_noise("second moment B (final iteration)", B)
            + [entry for name, rel in zip(_SAMPLING_NAMES, getattr(fit, "sampling", ()))
               for entry in release_noise(f"sampling release {name}", rel)], n_iter=self.n_iter_,
            postprocessing="coefficients from the final iteration's released B theta = A")
        return self

    def _set_spread(self, iterations, floor, laws, sampling, n, back):
        """The coefficients' error budget (``_irls_error``), mapped to the user's units by ``back = (T, offset)``."""
        fit = irls_error_budget(iterations, floor, laws, sampling, n, n_draws=self.n_draws, level=self.level,
                                rng=self.rng, owner="PrivateIRLS").mapped(*back)
        column = self._intercept_column
        cut = -1 if column else None
        se, interval, noise_se = fit.se(), fit.interval(self.level), fit.noise_se()
        self.coef_ = fit.theta[:cut].copy()
        self.intercept_ = float(fit.theta[-1]) if column else 0.0
        self.coef_cov_ = fit.cov
        self.coef_se_, self.coef_interval_, self.coef_noise_se_ = se[:cut], interval[:, :cut], noise_se[:cut]
        self.coef_biased_, self.intercept_biased_ = fit.biased[:cut], bool(column and fit.biased[-1])
        self.coef_unsampled_, self.intercept_unsampled_ = fit.unsampled[:cut], bool(column and fit.unsampled[-1])
        self.intercept_fitted_ = column
        self.intercept_se_ = float(se[-1]) if column else 0.0
        self.intercept_interval_ = interval[:, -1] if column else np.zeros(2)
        self.snr_, self.diagnostics_, self.uncertainty_ = fit.snr, fit.diagnostics, fit.summary
        summary = fit.summary
        if sampling is not None:
            summary["sampling"] = {"bandwidth": sampling["h"], "residual_scale": sampling["scale"]}

    def _warn(self, guarantee):
        if math.isinf(self.epsilon):
            warnings.warn("epsilon=inf: the exact IRLS fit is returned, with no privacy.", NotPrivateWarning,
                          stacklevel=3)
        elif not guarantee.certified:
            warnings.warn(f"PrivateIRLS: {guarantee}.", UncertifiedPrivacyWarning, stacklevel=3)

    def _set_fitted(self, clipped, budget, guarantee, sens, scales, laws):
        self.n_iter_ = int(self.n_iter)
        self.budget_ = budget
        self.privacy_ = guarantee
        self.neighbours_ = self.neighbours
        self.n_psd_clipped_ = clipped
        self.n_features_in_ = self._map.center.size
        releases = len(clipped)
        kind_a, kind_b = (k if scales[s] else NONE for k, s in zip(laws, ("A", "B")))
        norm_a = "l1" if kind_a.norm == "l1" else "l2"  # no noise (epsilon = inf) is listed at the L2 sensitivity
        norm_b = None if kind_b is WISHART else "l2"  # the paper's Wishart noise has no sensitivity
        self.privacy_report_ = privacy_report(
            self, guarantee=guarantee, neighbours=self.neighbours_, randomness=describe_randomness(self.rng),
            parts=self.privacy_parts_, budget=None if budget is None else budget.to_dict(), sensitivity=sens,
            noise=[noise_entry("first moment A", kind_a.name, scales["A"], releases=releases,
                               sensitivity=sens[f"A_{norm_a}"], sensitivity_norm=norm_a),
                   noise_entry("second moment B", kind_b.name, scales["B"], releases=releases,
                               sensitivity=None if norm_b is None else sens["B_l2"], sensitivity_norm=norm_b)]
            + getattr(self, "sampling_noise_", []))
