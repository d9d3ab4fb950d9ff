"""Private ridge precision (ROPE; Su et al. 2019): a dense precision matrix from one released second moment.

The logic and the parameters are :class:`RidgePrecisionFit`, which imports no scikit-learn (the
command line fits it); ``PrivateRidgePrecision`` is the same class on scikit-learn's
``BaseEstimator`` (``scikit_learn.py``). What it shares with the graphical lasso (the release, the
PSD floor, the draws, the summary and the score) is ``precision._PrecisionBase``.
"""

import numpy as np

from .._validation import check_positive
from ..solvers import ridge_precision
from ._conventions import all_or_nothing
from ._params import nonnegative, optional, param, parameters
from .precision import _PrecisionBase, _in_original_units
from .error_budget import covariance_error_budget
from .noise_entries import EntrySpread, LazyEntries
from .structure_bounds import hold_zero, ridge_jensen_range, ridge_range, within

__all__ = ["RidgePrecisionFit"]  # PrivateRidgePrecision: this class on BaseEstimator (scikit_learn.py)


def _ridge_alpha(alpha, name):
    if alpha is None or isinstance(alpha, str):
        raise ValueError(f"PrivateRidgePrecision needs a numeric alpha > 0 (e.g. alpha=0.01); got {alpha!r} "
                         "('ebic' and 'edges' choose the graphical lasso's penalty).")
    check_positive(alpha, name)


@parameters
class RidgePrecisionFit(_PrecisionBase):
    r"""Differentially private ridge precision (ROPE; Su et al. 2019, DP-RP).

    .. math::

        \hat\Theta = \arg\min_{\Theta \succ 0} -\log\det\Theta + \mathrm{tr}(\tilde S\Theta)
        + \alpha \|\Theta\|_F^2 = 2\big[\tilde S + (\tilde S^2 + 8\alpha I)^{1/2}\big]^{-1}

    positive definite for any symmetric released :math:`\tilde S`, so no
    projection is needed (``psd_floor=None`` by default).

    Parameters
    ----------
    alpha : float > 0
        Required, as ``--method ridge`` requires ``--alpha`` (``"ebic"`` is the graphical lasso's).
    epsilon, delta, row_norm, mechanism, neighbours, calibration, center, center_budget, scale, ranges, bound_budget, rng, accountant, count_share
        As in :class:`PrivateGraphicalLasso`.
    psd_floor : float or None, default=None
    n_draws : int >= 0, default=0
        Draws carrying every part of the error, as in
        :class:`PrivateGraphicalLasso`, for ``precision_se_``,
        ``precision_interval_`` and the partial correlations' (0: the noise
        checks only). Each draw costs one ROPE solve (an eigendecomposition).
    level : float in (0, 1), default=0.9
    target : {"population", "sample"}, default="population"
        As in :class:`PrivateGraphicalLasso`.

    Attributes
    ----------
    precision_, covariance_, release_, privacy_, neighbours_
    precision_se_, precision_interval_ : ndarray or None
        With ``n_draws > 0``: the standard error and basic ``level`` interval
        of each entry of ``precision_`` over the draws (NaN where clipping's
        loss is not all seen).
    partial_correlation_, partial_correlation_interval_
        As in :class:`PrivateGraphicalLasso`.
    snr_, uncertainty_, diagnostics_
        As in :class:`PrivateGraphicalLasso`.

    n_features_in_ : int
        Columns seen in ``fit`` (``fit_release``: the release's ``n_features``).
    feature_names_in_ : ndarray of str
        The column names, when ``fit`` was given a DataFrame whose column
        names are all strings (scikit-learn's rule); ``transform``,
        ``predict`` and ``score`` then check them.
    privacy_report_ : dict
        JSON-able, with the fields every estimator shares (``fitted_by``,
        ``spent``, ``guarantee``, ``neighbours``, ``parts``, ``noise``, ...;
        ``docs/privacy.md``), and ``release``: the release's metadata.

    Privacy
    -------
    That of the second-moment release; ROPE is post-processing.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.estimators import PrivateRidgePrecision
    >>> X = np.random.default_rng(0).normal(size=(2000, 3)) / 3
    >>> est = PrivateRidgePrecision(alpha=0.1, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0).fit(X)
    >>> bool(np.all(np.linalg.eigvalsh(est.precision_) > 0))
    True
    """

    _estimator = "PrivateRidgePrecision"

    alpha: float | None = param(None, check=_ridge_alpha)
    psd_floor: float | None = param(None, check=optional(nonnegative))

    @all_or_nothing
    def fit_release(self, release):
        """Fit from a release already paid for: no new privacy cost, and no privacy parameter needed."""
        raw = self._check_release(release)
        release = self._noisy_S(raw)
        alpha = float(self.alpha)
        self._record_release(release)
        self._finish(ridge_precision(release.second_moment, alpha), release)
        self._spread(raw, lambda S_draw: ridge_precision(S_draw, alpha))
        self._within_ridge_range(release, alpha)
        return self

    def _within_ridge_range(self, release, alpha):
        """Cut the draws' intervals to the range any ridge precision of a covariance takes (structure_bounds.py).

        Where the noise's negative eigenvalues exceed twice the penalty, ridge mostly inverts noise directions,
        and a draw (twice the noise) pushes them further: on breast cancer, diabetes, wine and macrodata in raw
        units (ratios 5 to 71) 91-100% of the entries whose basic interval excluded 0 missed the full-data ridge;
        on RAND HIE and simulations (0.4-1.5), 0-38% (benchmarks/results/coverage-structure.md). There, and
        where a diagonal entry's interval lies at or below 0 (Grunfeld at epsilon 4: the undetected clipping
        loss at its upper end), every interval is stretched to hold 0 before the cut: the draws are beyond
        first order and no sign is claimed (they were withheld, and printed nothing).
        """
        if self.precision_interval_ is None:
            return
        below = np.diagonal(self.precision_interval_[1]) <= 0
        beyond = bool(np.linalg.eigvalsh(release.second_moment)[0] < -2.0 * alpha or below.any())
        lower, upper = (_in_original_units(release, end) for end in ridge_range(alpha, release.n_features))
        if beyond:
            hold_zero(self.precision_interval_, True)
            hold_zero(self.partial_correlation_interval_, ~np.eye(release.n_features, dtype=bool))
        withheld = np.isnan(self.precision_interval_)
        # Draws withheld (clipping's loss beyond the outer bound unseen): the range the covariance's own intervals
        # allow instead. Not used where the draws are printed: there it was 1.9-2.5x wider on the t3 simulation
        # (population coverage 0.96 -> 0.98-1.00), and on mixed units as wide as the range
        if withheld.any():
            jensen = np.stack([_in_original_units(release, end) for end in self._jensen_range(release, alpha)])
            self.precision_interval_ = np.where(withheld, jensen, self.precision_interval_)
            self.uncertainty_["covers"] += ("; the precision's withheld intervals are instead the range ridge "
                                            "takes given the covariance's intervals (Jensen's operator "
                                            "inequality), the partial correlations' stay withheld")
        self.precision_interval_ = within(self.precision_interval_, lower, upper)
        whole = (self.precision_interval_[0] <= lower) & (self.precision_interval_[1] >= upper)
        self.uncertainty_["range"] = {
            "rule": ("every interval is cut to the range ridge takes on any covariance, diagonal [0, c], off it "
                     "[-c/2, c/2], c = 1/sqrt(2 alpha) in the release's units"),
            "entries_at_whole_range": int(np.count_nonzero(np.triu(whole))),
            "meaning": "an interval that is the whole range says nothing of its entry at this budget and alpha"}
        if beyond:  # a diagonal Jensen's range gave lies above 0: ridge's diagonal is positive for any covariance
            which = ("every off-diagonal interval holds 0, and every diagonal one not from Jensen's range"
                     if np.diagonal(withheld).any() else "every interval holds 0")
            self.uncertainty_["covers"] += (" -- beyond first order: the released matrix has eigenvalues below "
                                            "-2 alpha, or a diagonal entry's interval lies below 0, so ridge "
                                            f"inverts noise; {which} (no sign is claimed)")

    def _jensen_range(self, release, alpha):
        """Where ridge of the target covariance lies (structure_bounds.ridge_jensen_range), in the release's units,
        from the covariance's intervals with every part counted (error_budget.py, post-processing of the same
        release). An off-diagonal entry reads three of them (two variances, the entry), so each is asked at
        ``1 - (1 - level) / 3``: the range then holds at ``level`` (a union bound)."""
        at = 1.0 - (1.0 - float(self.level)) / 3.0
        spread = EntrySpread(release, at)
        budget = covariance_error_budget(release, LazyEntries(spread, "se", standardised=True),
                                         LazyEntries(spread, "interval", standardised=True), at, self.target)
        interval = np.array(budget["interval"], dtype=float)
        interval[:, budget["biased"]] = np.nan  # an entry the budget cannot bound: unknown
        return ridge_jensen_range(alpha, interval)
