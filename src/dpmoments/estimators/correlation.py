r"""PrivateCorrelation: a differentially private correlation matrix, with intervals for every pair.

The correlation :math:`r_{ij} = M_{ij} / \sqrt{M_{ii} M_{jj}}` of the released covariance ``M`` is
post-processing of the private covariance (:class:`~dpmoments.estimators.covariance.CovarianceFit`):
it costs nothing beyond that release and reads no data. What it adds is the uncertainty of each :math:`r_{ij}`, on
Fisher's :math:`z = \operatorname{atanh} r` scale, where an interval stays inside
:math:`(-1, 1)`:

* the added noise, to first order (the delta method) from the release's own noise law:
  :math:`\operatorname{Var} r_{ij} \approx \sigma^2 / (M_{ii} M_{jj})
  + (r_{ij}^2 / 4)\,\sigma_d^2 (1/M_{ii}^2 + 1/M_{jj}^2)` for off-diagonal noise
  :math:`\sigma`, diagonal noise :math:`\sigma_d` and released variances :math:`M_{ii}`
  (in the release's own, possibly standardised, units: a correlation does not depend on them);
* with ``target="population"`` (the default, as statsmodels), the sampling of the rows:
  :math:`1 / (n - 3)` on the :math:`z` scale (normal theory);
* the error budget the covariance counts (the private centre's noise, clipping), through the
  covariance's own per-entry intervals where they are wider than the noise alone: a correlation is
  flagged ``biased`` where either of its variances or the covariance is.

A pair one of whose variances is within three of its noise sd has no correlation to report: its
entry is ``nan`` (withheld), and ``correlation_withheld_`` says so (in mixed units under one row
bound that is most columns: give them private scales or public ranges).
"""

import numpy as np

from ._conventions import all_or_nothing
from .covariance import CovarianceFit
from .summaries import correlation_summary
from .uncertainty import noise_law, z_value

__all__ = ["CorrelationFit"]  # PrivateCorrelation: this class on scikit-learn's BaseEstimator (scikit_learn.py)

#: A variance must stand this many of its noise sd above 0 for its column's correlations to be computed.
VARIANCE_ABOVE_NOISE = 3.0


def _require_centre(center):
    if center is None:
        raise ValueError("PrivateCorrelation needs a covariance about a centre; got center=None (the uncentred "
                         "second moment): use center='private' (the default) or a public centre.")


class CorrelationFit(CovarianceFit):
    r"""Differentially private correlation matrix (post-processing of a private covariance).

    Takes every parameter of :class:`~dpmoments.estimators.PrivateCovariance` and makes the
    same release, so its privacy is that release's; ``fit_release`` reuses one at no new cost.
    ``center=None`` is refused: a correlation is about the mean.

    Attributes
    ----------
    correlation_ : ndarray of shape (n_features, n_features)
        :math:`M_{ij} / \sqrt{M_{ii} M_{jj}}` of the released matrix ``M`` before the PSD
        projection (its noise's mean removed), clipped to ``[-1, 1]``: each entry is then centred
        for its interval (the projection would move entries by more than their noise where the
        noise is large); ones on the diagonal; ``nan`` where a column's released variance is
        within three of its noise sd. Not necessarily positive semi-definite: ``covariance_`` is.
    correlation_se_ : ndarray of shape (n_features, n_features)
        Standard error of each correlation (delta method from the ``z`` scale): the noise and,
        with ``target="population"``, the sampling of the rows.
    correlation_interval_ : ndarray of shape (2, n_features, n_features)
        ``level`` intervals, ``tanh(z +- q se_z)``: inside ``[-1, 1]``; ``nan`` where withheld.
    correlation_withheld_ : ndarray of bool, shape (n_features, n_features)
        The pairs whose correlation is not computed (a variance within its noise).
    covariance_, covariance_se_, covariance_interval_, release_, privacy_, ... :
        As :class:`~dpmoments.estimators.PrivateCovariance`.

    Privacy
    -------
    Exactly that of :class:`~dpmoments.estimators.PrivateCovariance` with the same parameters
    (one release of the second moment about a private mean, plus the private choices' shares);
    the correlation and its intervals are post-processing of that release and public values.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.estimators import PrivateCorrelation
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([0, 0, 0], [[1, .8, 0], [.8, 1, 0], [0, 0, 1]], size=50_000) * [1, 10, 100]
    >>> est = PrivateCorrelation(epsilon=1.0, delta=1e-6, scale="private", rng=0).fit(X)
    >>> bool(abs(est.correlation_[0, 1] - 0.8) < 0.05), str(est.privacy_)
    (True, '(1, 1e-06)-DP')
    >>> lo, hi = est.correlation_interval_[:, 0, 1]
    >>> bool(lo < est.correlation_[0, 1] < hi)
    True
    """

    _estimator = "PrivateCorrelation"

    def fit(self, X, y=None):
        """Release the covariance of ``X`` (as :class:`PrivateCovariance`) and set the correlation attributes."""
        _require_centre(self.center)
        return super().fit(X, y)

    @all_or_nothing
    def fit_release(self, release):
        """Use a release already paid for: the covariance, then its correlation (no new cost)."""
        raw = self._check_release(release)
        _require_centre(raw.center)
        super().fit_release(raw)
        self._correlate(raw)
        return self

    def summary(self, feature_names=None, data_name=None):
        """The fit's :class:`~.summary.Summary`: ``str(est.summary())`` is what ``dpmoments correlation`` prints.

        The command line's table for this fit: the pairs largest against their standard error, each with its
        interval and note; how much of it is noise, the guarantee and the private choices. Post-processing: no
        privacy cost. ``feature_names`` default to ``feature_names_in_`` (else x0, x1, ...); ``data_name``
        names the data in the title.
        """
        return correlation_summary(self, feature_names, data_name)

    def _correlate(self, raw):
        """Set the correlation attributes from the fitted covariance and the raw release's noise law."""
        law, d = noise_law(raw), raw.n_features
        M = raw.second_moment - law.diagonal_mean * np.eye(d)  # unbiased for the exact (clipped) matrix
        var = np.diag(M).copy()  # the released variances, in the release's own (standardised) units
        withheld_col = ~(var > VARIANCE_ABOVE_NOISE * law.diagonal_sd)
        withheld = withheld_col[:, None] | withheld_col[None, :]
        safe = np.where(withheld_col, np.nan, var)
        r = np.clip(M / np.sqrt(np.outer(safe, safe)), -1.0, 1.0)
        np.fill_diagonal(r, np.where(withheld_col, np.nan, 1.0))
        noise_var = (law.sd**2 / np.outer(safe, safe)
                     + r**2 / 4 * law.diagonal_sd**2 * (1 / safe[:, None] ** 2 + 1 / safe[None, :] ** 2))
        widen = self._covariance_widening(d)
        rz = np.clip(r, -1 + 1e-12, 1 - 1e-12)
        var_z = noise_var * widen**2 / (1 - rz**2) ** 2
        population = self.target == "population"
        if population:
            var_z = var_z + 1.0 / max(float(raw.n) - 3.0, 1.0)
        se_z = np.sqrt(var_z)
        q = z_value(self.level)
        z = np.arctanh(rz)
        lower, upper = np.tanh(z - q * se_z), np.tanh(z + q * se_z)
        idx = np.diag_indices(d)
        se_z[idx], lower[idx], upper[idx] = 0.0, r[idx], r[idx]
        self.correlation_ = r
        self.correlation_se_ = se_z * (1 - rz**2)
        self.correlation_interval_ = np.stack([lower, upper])
        self.correlation_withheld_ = withheld
        self.correlation_biased_ = self._biased_pairs(withheld)
        self.uncertainty_ = self._summary(population)

    def _summary(self, population):
        """``uncertainty_``: what the correlation's intervals hold (the covariance's own summary under 'covariance')."""
        counted = "the added noise (delta method on Fisher's z)" + (
            " and the sampling of the rows (normal theory, 1/(n-3) on the z scale)" if population else "")
        left = ("clipping bias where the covariance cannot estimate it (entries marked 'biased'), and heavier "
                "tails than the normal's in the sampling part" if population else
                "clipping bias where the covariance cannot estimate it (entries marked 'biased')")
        return {**{k: v for k, v in self.uncertainty_.items() if k in ("noise", "signal_to_noise",
                                                                      "signal_to_noise_definition")},
                "method": "closed-form", "level": self.level, "n_draws": 0,
                "target": "population" if population else "sample",
                "scope": ("the population correlation: noise and sampling" if population
                          else "these rows' correlation without privacy: the noise"),
                "covers": counted, "not_covered": left, "covariance": self.uncertainty_}

    def _covariance_widening(self, d):
        """How much wider than the noise alone the covariance's own intervals are (the error budget's other parts).

        Where the covariance's standard errors count more than the added noise (the private centre's
        noise, clipping), the correlation's noise part is widened by the same factor, at least 1; the
        covariance's sampling part is left out (it is added on the z scale).
        """
        noise_se = self.covariance_noise_se_
        ratio = np.divide(self.covariance_sample_se_, noise_se, out=np.ones((d, d)), where=noise_se > 0)
        return np.maximum(ratio, 1.0)

    def _biased_pairs(self, withheld):
        """Pairs the covariance marks as biased (clipping it cannot bound), or withheld."""
        biased = self.covariance_biased_
        cols = np.diag(biased)
        return (biased | cols[:, None] | cols[None, :]) & ~withheld
