r"""A printed variance's clipping loss, bounded given that it was printed: the truncated normal's upper end.

Where rows beyond the clipping-excess release's outer bound are not ruled out, a clipped column's variance is
*withheld* when its released band loss :math:`\hat\ell_j = D_j + \nu_j`, :math:`\nu_j \sim N(0, \tau^2)`, stands out
(:func:`~dpmoments.estimators.error_budget.unseen_loss_columns`): it is printed only when :math:`\hat\ell_j \le t_j`,
the threshold a public function of the level, the column count and the far rows' noisy count (a release whose
noise is independent of :math:`\nu_j`). The upper end :math:`\hat\ell_j + z\tau` then holds :math:`D_j` less often
than its level among the *printed* variances: a large loss is printed only when its noise drew low. On grunfeld
(220 rows, epsilon 4, 100 fits) the variance of ``value`` was withheld in 97 fits and printed in the 3 whose band
loss had drawn 1.2-2.4 noise sd low; 2 of the 3 missed the full-data value.

Given the printing, :math:`\hat\ell_j` is :math:`N(D_j, \tau^2)` truncated to :math:`(-\infty, t_j]`, a family
with a monotone likelihood ratio in :math:`D_j`, so

.. math:: U_j = \text{the } D \text{ solving } \Phi((\hat\ell_j - D)/\tau) = \alpha\,\Phi((t_j - D)/\tau)

is an upper end of :math:`D_j` at one-sided level :math:`1 - \alpha` *conditionally on the printing*, and so
among the printed variances (Lehmann & Romano, ch. 3: the conditional test of a one-parameter exponential family).
:math:`U_j \ge \hat\ell_j + z\tau` (:math:`\alpha = \Phi(-z)`), equal where :math:`t_j = \infty` (no withholding,
nothing to correct); it grows without bound as :math:`\hat\ell_j \to t_j`, and is taken at most the loss cap
(:func:`~dpmoments.estimators.error_budget.loss_cap`, a sure bound from the released variance). The excess
:math:`U_j - (\hat\ell_j^+ + z\tau)` is added to the variance's upper end outright, beside the normal margin kept in
quadrature (so never narrower than the quadrature of the whole margin). Released values and public thresholds
only: post-processing.
"""

import numpy as np

from .._lazy import lazy_module

special = lazy_module("scipy.special")

__all__ = ["SelectiveLoss", "truncated_upper"]

_STEPS = 80  # bisection steps: the bracket (a few hundred noise sd at most) shrinks below 1e-20 of itself


def _log_cdf(x, laplace):
    """The log of the noise's cdf at ``x`` (sd units): the normal's, or the Laplace law's of sd 1."""
    if not laplace:
        return special.log_ndtr(x)
    y = np.sqrt(2.0) * x  # the Laplace scale is sd / sqrt(2)
    return np.where(y < 0, np.log(0.5) + np.minimum(y, 0.0), np.log1p(-0.5 * np.exp(-np.maximum(y, 0.0))))


def truncated_upper(observed, threshold, z, laplace=False):
    r"""The upper end ``U`` (noise-sd units, arrays) of a location from ``observed`` drawn given ``observed <=
    threshold``, at one-sided ``1 - Phi(-z)`` (module docstring): ``observed + z`` where ``threshold`` is infinite.
    ``laplace``: the noise is Laplace (log-concave, so its location family has a monotone likelihood ratio too); its
    ratio of cdfs tends to ``exp(-sqrt(2) (t - l))``, not 0, so where that is ``alpha`` or more no finite end exists:
    ``inf`` (the loss cap then bounds it). Never below ``observed + z``."""
    observed = np.asarray(observed, dtype=float)
    threshold = np.broadcast_to(np.asarray(threshold, dtype=float), observed.shape)
    z = np.broadcast_to(np.asarray(z, dtype=float), observed.shape)
    log_alpha = special.log_ndtr(-z)
    finite = np.isfinite(threshold) & (threshold > observed)
    gap = np.where(finite, threshold - observed, 1.0)
    lo = observed + z  # the untruncated end: the answer where f(lo) < 0
    if laplace:  # f(m) = log F(l - m) - log F(t - m) - log alpha is constant beyond t: -sqrt(2) gap - log alpha
        unbounded = finite & (-np.sqrt(2.0) * gap - log_alpha >= 0)
        hi = np.maximum(threshold, lo) + 1.0
    else:  # f(m) <= 0 beyond (l + t) / 2 + log(1 / alpha) / (t - l), and t
        unbounded = np.zeros(observed.shape, dtype=bool)
        hi = np.maximum(threshold, (observed + threshold) / 2.0 - log_alpha / gap) + z + 1.0
    hi = np.where(finite, hi, lo)
    for _ in range(_STEPS):
        mid = (lo + hi) / 2.0
        above = _log_cdf(observed - mid, laplace) - _log_cdf(threshold - mid, laplace) - log_alpha > 0
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(unbounded, np.inf, np.where(finite, hi, observed + z))


class SelectiveLoss:
    """The excess of each printed variance's loss bound over ``lost+ + z sd`` at any ``z`` (module docstring).

    ``lost`` (d,), ``sd``: the band losses and their noise sd; ``threshold`` (d,): the printing's threshold on
    ``lost`` (``inf``: none, or a column whose variance is not read); ``cap`` (d,): the sure bound on the loss;
    ``factor``: the tail factor the loss's end is scaled by; ``laplace``: the loss's noise is Laplace; ``fixed_z`` (d,): a detected column's own one-sided
    quantile (its loss's end is taken there whatever the interval's level), NaN elsewhere. Released values only."""

    def __init__(self, lost, sd, threshold, cap, factor, fixed_z=None, laplace=False):
        self.lost, self.sd, self.threshold = np.asarray(lost, float), float(sd), np.asarray(threshold, float)
        self.laplace = laplace  # the loss release's noise law (the release's own)
        self.cap, self.factor = np.asarray(cap, float), float(factor)
        self.fixed_z = np.full(self.lost.shape, np.nan) if fixed_z is None else np.asarray(fixed_z, float)
        self.active = np.isfinite(self.threshold) & (self.sd > 0)
        self._at = {}

    def excess(self, z):
        """(d,): what the diagonal's upper end gains at ``z``, times the tail factor; 0 where nothing is truncated."""
        if not self.active.any():
            return np.zeros(self.lost.shape)
        if z not in self._at:
            l, t = self.lost / self.sd, np.where(self.active, self.threshold / self.sd, np.inf)
            at = np.where(np.isnan(self.fixed_z), z, self.fixed_z)
            bound = np.minimum(truncated_upper(l, t, at, self.laplace), self.cap / self.sd)
            self._at[z] = self.factor * self.sd * np.maximum(bound - (np.maximum(l, 0.0) + at), 0.0)
        return self._at[z]
