"""An empirical privacy auditor: a high-confidence lower bound on epsilon.

A mechanism ``M`` is (epsilon, delta)-differentially private when, for every
pair of neighbouring datasets ``D, D'`` and every event ``S``,

.. math::

    P[M(D) \\in S] \\le e^{\\varepsilon} P[M(D') \\in S] + \\delta .

The auditor samples ``M`` many times on one fixed neighbouring pair, reduces
each output to a real number (a *projection*), and looks at the threshold
events ``{out > t}`` and ``{out < t}`` in both directions. Clopper--Pearson
bounds on the two probabilities of each event turn an observed ratio into a
statement that holds with a stated confidence: every event ``S`` scanned
certifies

.. math::

    \\varepsilon \\ge \\ln \\frac{\\underline{p}_S - \\delta}{\\overline{q}_S},

where :math:`\\underline{p}_S` is a lower confidence bound on
:math:`P[M(D) \\in S]` and :math:`\\overline{q}_S` an upper one on
:math:`P[M(D') \\in S]`. All bounds hold *simultaneously* (a Bonferroni split
of ``1 - confidence`` over every one-sided bound computed), so with
probability at least ``confidence`` the mechanism's true epsilon at this delta
is at least the reported maximum. A correct mechanism therefore reports a
bound at or below its claim (except with probability ``1 - confidence``); a
mechanism with too little noise shows up as a bound above its claim.

A lower bound can only refute a claim, never prove one: passing an audit
means that this neighbouring pair, this projection and these events found no
violation. This is the threshold ("hockey-stick") test of StatDP (Ding et
al., CCS 2018) and DP-Auditorium (Kong et al., arXiv 2307.05608) in NumPy.
"""

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .._validation import check_delta, check_int, check_vector

__all__ = ["AuditResult", "epsilon_lower_bound"]

# The deepest threshold scanned has about this many pooled samples beyond it.
_MIN_TAIL_COUNT = 5


@dataclass(frozen=True)
class AuditResult:
    """The outcome of an empirical privacy audit.

    Attributes
    ----------
    epsilon_lower_bound : float
        With probability at least ``confidence``, the audited mechanism is
        not (epsilon, delta)-DP for any epsilon below this value. ``0.0`` when
        no event gives positive evidence.
    confidence : float
        Simultaneous confidence level of all the bounds behind the result.
    delta : float
        The delta at which epsilon is bounded.
    threshold : float
        The threshold ``t`` of the most informative event (``nan`` if none).
    event : str or None
        The most informative event: ``"A > t"`` is the event ``{out > t}``
        with the ``A`` samples (the first dataset) in the numerator,
        ``"B < t"`` the event ``{out < t}`` with ``B`` in the numerator.
        ``None`` when no event gives positive evidence.
    n_samples : tuple of (int, int)
        Numbers of samples of ``A`` and ``B`` the bound was computed on
        (pilot samples of :func:`audit` excluded).
    n_events : int
        Number of events scanned (thresholds x 2 tails x 2 directions).
    p_lower, q_upper : float
        Lower confidence bound on the numerator's probability and upper
        bound on the denominator's probability at the reported event
        (``nan`` if none).
    """

    epsilon_lower_bound: float
    confidence: float
    delta: float
    threshold: float
    event: str | None
    n_samples: tuple
    n_events: int
    p_lower: float = math.nan
    q_upper: float = math.nan

    def consistent_with(self, epsilon):
        """Return whether a claimed epsilon survives the audit.

        ``True`` when ``epsilon_lower_bound <= epsilon``: the samples give no
        significant evidence against an (epsilon, delta) claim.
        """
        epsilon = _check_claim(epsilon)
        return bool(self.epsilon_lower_bound <= epsilon)

    def check(self, epsilon):
        """Raise ``AssertionError`` if the audit refutes a claimed epsilon.

        For test suites, in the style of ``numpy.testing``: returns ``None``
        when :meth:`consistent_with` is true, else raises with the event,
        threshold and confidence bounds that refuted the claim.
        """
        if not self.consistent_with(epsilon):
            raise AssertionError(
                f"privacy audit refutes epsilon={epsilon} at delta={self.delta}: "
                f"epsilon >= {self.epsilon_lower_bound:.4f} with confidence "
                f"{self.confidence} (event {self.event!r}, t={self.threshold:.6g}, "
                f"p_lower={self.p_lower:.4g}, q_upper={self.q_upper:.4g}, "
                f"n_samples={self.n_samples})."
            )


def _check_claim(epsilon):
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise TypeError(f"'epsilon' must be a real number; got {type(epsilon).__name__} {epsilon!r}.")
    epsilon = float(epsilon)
    if math.isnan(epsilon) or epsilon < 0:
        raise ValueError(f"'epsilon' must be in [0, inf]; got {epsilon}.")
    return epsilon


def _check_confidence(confidence):
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real):
        raise TypeError(
            f"'confidence' must be a real number; got {type(confidence).__name__} {confidence!r}."
        )
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"'confidence' must be in (0, 1); got {confidence}.")
    return confidence


def _check_samples(samples, name):
    arr = check_vector(samples, name)
    if arr.shape[0] == 0:
        raise ValueError(f"'{name}' must hold at least 1 sample; got an empty array.")
    return arr


def _default_thresholds(pooled, n_thresholds):
    """Quantiles of ``pooled``, geometrically spaced in tail probability.

    Half of the levels lie in each tail, from about ``5 / len(pooled)`` up to
    the median, so that both the bulk (pure-DP evidence) and the far tails
    (where delta matters) are scanned.
    """
    p_min = min(0.5, _MIN_TAIL_COUNT / pooled.shape[0])
    low = np.geomspace(p_min, 0.5, (n_thresholds + 1) // 2)
    high = 1.0 - np.geomspace(p_min, 0.5, n_thresholds // 2)
    levels = np.unique(np.concatenate([low, high]))
    return np.unique(np.quantile(pooled, levels))


def _clopper_pearson(k, n, alpha):
    """One-sided Clopper--Pearson (lower, upper) bounds, each at level ``alpha``."""
    from scipy import stats  # here: every CLI command imports this module, few audit

    k = np.asarray(k, dtype=np.float64)
    lower = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), n - k + 1), 0.0)
    upper = np.where(k < n, stats.beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1)), 1.0)
    return lower, upper


def _tail_counts(sorted_samples, thresholds):
    """Counts of ``{out > t}`` and ``{out < t}`` for every threshold."""
    n = sorted_samples.shape[0]
    above = n - np.searchsorted(sorted_samples, thresholds, side="right")
    below = np.searchsorted(sorted_samples, thresholds, side="left")
    return np.concatenate([above, below])


def epsilon_lower_bound(
    samples_a, samples_b, *, delta=0.0, confidence=0.95, n_thresholds=64, thresholds=None
):
    """Lower-bound epsilon from samples of a mechanism on two neighbours.

    Parameters
    ----------
    samples_a, samples_b : array-like of shape (n_a,) and (n_b,)
        Real outputs (or projections of outputs) of the mechanism run
        independently on two neighbouring datasets ``A`` and ``B``.
    delta : float, default=0.0
        The delta of the (epsilon, delta) claim being audited, in [0, 1).
    confidence : float, default=0.95
        Simultaneous confidence of the bound, in (0, 1).
    n_thresholds : int, default=64
        Number of thresholds scanned when ``thresholds`` is None: quantiles
        of the pooled samples, geometrically spaced in tail probability
        (half in each tail).
    thresholds : array-like of shape (n_t,), optional
        Fixed thresholds to scan instead. Choose them before seeing the
        samples (e.g. from a separate pilot run, as :func:`audit` does) for a
        bound whose events do not depend on the data; the default quantiles
        depend on the samples only through the pooled order statistics, a
        slight departure from that which is standard in practice.

    Returns
    -------
    AuditResult
        The largest certified lower bound over the ``4 * n_t`` events
        ``{out > t}``, ``{out < t}`` in both directions (``A`` over ``B`` and
        ``B`` over ``A``).

    Notes
    -----
    For each event the number of outcomes in it gives a one-sided
    Clopper--Pearson lower bound ``p_lower`` on its probability under the
    numerator and an upper bound ``q_upper`` under the denominator; the event
    certifies ``ln((p_lower - delta) / q_upper)`` when ``p_lower > delta``.
    Each of the ``2 * n_events`` one-sided bounds is taken at level
    ``(1 - confidence) / (2 * n_events)`` (Bonferroni), so all hold at once
    with probability at least ``confidence``. Counts come from
    ``np.searchsorted`` on sorted samples: ``O(n log n)`` in all.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.testing import epsilon_lower_bound
    >>> rng = np.random.default_rng(0)
    >>> a = 1.0 + rng.laplace(scale=1.0, size=200_000)   # count 1, epsilon = 1
    >>> b = 0.0 + rng.laplace(scale=1.0, size=200_000)   # neighbour's count 0
    >>> result = epsilon_lower_bound(a, b)
    >>> 0.5 < result.epsilon_lower_bound <= 1.0
    True
    """
    a = np.sort(_check_samples(samples_a, "samples_a"))
    b = np.sort(_check_samples(samples_b, "samples_b"))
    delta = check_delta(delta)
    confidence = _check_confidence(confidence)
    if thresholds is None:
        n_thresholds = check_int(n_thresholds, "n_thresholds", minimum=1)
        thresholds = _default_thresholds(np.concatenate([a, b]), n_thresholds)
    else:
        thresholds = np.unique(_check_samples(thresholds, "thresholds"))
    n_t = thresholds.shape[0]
    n_events = 4 * n_t
    alpha = (1.0 - confidence) / (2 * n_events)
    low_a, high_a = _clopper_pearson(_tail_counts(a, thresholds), a.shape[0], alpha)
    low_b, high_b = _clopper_pearson(_tail_counts(b, thresholds), b.shape[0], alpha)
    p_lower = np.concatenate([low_a, low_b])
    q_upper = np.concatenate([high_b, high_a])
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(p_lower > delta, np.log((p_lower - delta) / q_upper), -np.inf)
    return _result(eps, p_lower, q_upper, thresholds, confidence, delta, (a.shape[0], b.shape[0]))


def _result(eps, p_lower, q_upper, thresholds, confidence, delta, n_samples):
    n_t = thresholds.shape[0]
    best = int(np.argmax(eps))
    if not eps[best] > 0:
        return AuditResult(0.0, confidence, delta, math.nan, None, n_samples, 4 * n_t)
    numerator = "A" if best < 2 * n_t else "B"
    tail = ">" if best % (2 * n_t) < n_t else "<"
    return AuditResult(
        epsilon_lower_bound=float(eps[best]),
        confidence=confidence,
        delta=delta,
        threshold=float(thresholds[best % n_t]),
        event=f"{numerator} {tail} t",
        n_samples=n_samples,
        n_events=4 * n_t,
        p_lower=float(p_lower[best]),
        q_upper=float(q_upper[best]),
    )
