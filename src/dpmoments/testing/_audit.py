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

from .._rng import as_generator
from .._validation import check_delta, check_int, check_vector

__all__ = ["AuditResult", "audit", "epsilon_lower_bound"]

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


# --------------------------------------------------------------------------- sampling


def _draw(mechanism, data, n, batch, rng):
    """Yield outputs of ``mechanism`` on ``data`` in chunks, ``n`` in all.

    Each chunk is ``(raw, flat)``: the outputs as returned (stacked along a
    new axis 0 in per-sample mode) and a ``(k, n_outputs)`` float view.
    """
    done = 0
    while done < n:
        if batch is None:
            k, raw = 1, np.asarray(mechanism(data, rng))[np.newaxis]
        else:
            k = min(batch, n - done)
            raw = np.asarray(mechanism(data, rng, size=k))
            if raw.ndim == 0 or raw.shape[0] != k:
                raise ValueError(
                    f"'mechanism' called with size={k} must return {k} outputs along axis 0; "
                    f"got an array of shape {raw.shape}."
                )
        if raw.dtype.kind not in "biuf":
            raise TypeError(f"'mechanism' must return real numbers; got dtype {raw.dtype}.")
        flat = raw.reshape(k, -1).astype(np.float64, copy=False)
        if not np.all(np.isfinite(flat)):
            raise ValueError("'mechanism' returned NaN or infinite values.")
        done += k
        yield raw, flat


def _mean_difference(mechanism, dataset, neighbour, n, batch, rng):
    """The unit direction of ``E[M(A)] - E[M(B)]`` estimated from ``n`` draws each."""
    means = []
    for data in (dataset, neighbour):
        total = 0.0
        for _, flat in _draw(mechanism, data, n, batch, rng):
            total = total + flat.sum(axis=0)
        means.append(total / n)
    if means[0].shape != means[1].shape:
        raise ValueError(
            f"'mechanism' outputs on 'dataset' and 'neighbour' differ in size: "
            f"{means[0].size} and {means[1].size}."
        )
    direction = means[0] - means[1]
    norm = float(np.linalg.norm(direction))
    return direction / norm if norm > 0 else np.ones_like(direction) / math.sqrt(direction.size)


def _projector(projection, batch):
    """Map a chunk ``(raw, flat)`` to a 1-D float array of length k."""
    if callable(projection):
        if batch is None:
            return lambda raw, flat: np.array([float(projection(raw[0]))])
        return lambda raw, flat: _checked_batch_projection(projection(raw), flat.shape[0])
    if isinstance(projection, (str, bytes)):
        raise TypeError(f"'projection' must be None, a callable or an array; got {type(projection).__name__}.")
    vector = np.asarray(projection)
    if vector.dtype.kind not in "biuf" or vector.size == 0 or not np.all(np.isfinite(vector)):
        raise TypeError(
            "'projection' must be None, a callable or a finite non-empty real array; "
            f"got {type(projection).__name__} of dtype {vector.dtype} and shape {vector.shape}."
        )
    vector = vector.astype(np.float64).ravel()

    def project(raw, flat):
        if flat.shape[1] != vector.size:
            raise ValueError(
                f"'projection' has {vector.size} entries but each mechanism output has "
                f"{flat.shape[1]} (outputs are flattened)."
            )
        return flat @ vector

    return project


def _checked_batch_projection(values, k):
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (k,):
        raise ValueError(
            f"'projection' applied to a batch of {k} outputs must return shape ({k},); "
            f"got shape {values.shape}."
        )
    return values


def _projected(mechanism, data, n, batch, rng, project):
    if n == 0:
        return np.empty(0)
    return np.concatenate([project(raw, flat) for raw, flat in _draw(mechanism, data, n, batch, rng)])


# --------------------------------------------------------------------------- audit


def _check_mechanism_args(mechanism, n_samples, batch, pilot_fraction):
    if not callable(mechanism):
        raise TypeError(f"'mechanism' must be callable as mechanism(data, rng); got {type(mechanism).__name__}.")
    n_samples = check_int(n_samples, "n_samples", minimum=100)
    if batch is not None:
        batch = check_int(batch, "batch", minimum=1)
    if isinstance(pilot_fraction, bool) or not isinstance(pilot_fraction, numbers.Real):
        raise TypeError(
            f"'pilot_fraction' must be a real number; got {type(pilot_fraction).__name__} {pilot_fraction!r}."
        )
    if not 0.0 < pilot_fraction <= 0.5:
        raise ValueError(f"'pilot_fraction' must be in (0, 0.5]; got {pilot_fraction}.")
    return n_samples, batch, float(pilot_fraction)


def audit(
    mechanism,
    dataset,
    neighbour,
    *,
    delta=0.0,
    n_samples=100_000,
    projection=None,
    confidence=0.95,
    n_thresholds=64,
    pilot_fraction=0.1,
    batch=None,
    rng=None,
):
    """Audit a mechanism on one neighbouring pair: a lower bound on its epsilon.

    Runs ``mechanism`` ``n_samples`` times on ``dataset`` and on
    ``neighbour``, reduces every output to a real number, and returns
    :func:`epsilon_lower_bound` of the two samples. A *pilot* share of the
    draws (``pilot_fraction``) is set aside to fix the projection direction
    (when ``projection`` is None) and the thresholds; the bound is computed on
    the remaining draws only, so its events are chosen before the samples it
    counts are drawn and the stated confidence holds rigorously.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, rng)`` returns one output (a scalar or an array of
        any fixed shape), drawing its noise from the ``numpy.random.Generator``
        ``rng``. With ``batch`` set, it is called as
        ``mechanism(data, rng, size=k)`` (``k <= batch``) and must return
        ``k`` independent outputs stacked along axis 0: the fast path.
    dataset, neighbour : object
        The two neighbouring inputs, passed to ``mechanism`` unchanged. Pick
        a worst-case pair: one row on the boundary of the public bound,
        aligned with the noise geometry.
    delta : float, default=0.0
        The delta of the claim being audited, in [0, 1).
    n_samples : int, default=100_000
        Draws per dataset, pilot included; at least 100. About 1e5--1e6 are
        needed to resolve epsilon near 1.
    projection : None, callable or array-like, default=None
        How an output becomes a real number.

        - ``None``: the inner product of the flattened output with the unit
          direction of ``mean(M(dataset)) - mean(M(neighbour))``, estimated
          on half of the pilot draws (the best linear statistic for additive
          Gaussian noise). A scalar output is used as is.
        - an array: the inner product with the flattened output (e.g. a
          matrix ``V`` for a matrix release: ``<M, V>``); its size must
          equal the output's.
        - a callable: ``projection(output) -> float``; with ``batch`` set it
          receives a stacked chunk ``(k, *output_shape)`` and must return
          shape ``(k,)``.
    confidence : float, default=0.95
        Simultaneous confidence of the bound, in (0, 1).
    n_thresholds : int, default=64
        Thresholds scanned: quantiles of the pooled pilot projections,
        geometrically spaced in tail probability.
    pilot_fraction : float, default=0.1
        Share of ``n_samples`` used as a pilot, in (0, 0.5].
    batch : int, optional
        Largest number of outputs requested per call in vectorised mode
        (see ``mechanism``). ``None`` calls the mechanism once per output,
        which is simple but slow (a Python loop).
    rng : None, int or numpy.random.Generator
        Source of the mechanism's randomness; ``None`` draws OS entropy.

    Returns
    -------
    AuditResult
        ``result.epsilon_lower_bound`` with its event, threshold and
        bounds; ``n_samples`` counts the non-pilot draws.

    Notes
    -----
    A passing audit is evidence, not proof: it only bounds epsilon from
    below on this pair, this projection and these threshold events. Keep a
    negative control (the same mechanism with too little noise) beside every
    audit in a test suite, to show that the audit has the power to fail.

    For a second-moment release ``M = X^T X + noise`` with neighbours that
    differ in one row ``x`` against ``y``, project on ``V = x x^T - y y^T``
    (or let ``projection=None`` find it).

    Examples
    --------
    Audit the Laplace mechanism for a counting query (sensitivity 1) at
    epsilon = 1, and a version with half the noise:

    >>> import numpy as np
    >>> from dpmoments.testing import audit
    >>> def count(data, rng, size=None, epsilon=1.0):
    ...     return np.sum(data) + rng.laplace(scale=1.0 / epsilon, size=size)
    >>> result = audit(count, [1, 1, 0], [1, 1, 1], n_samples=200_000,
    ...                batch=100_000, rng=0)
    >>> result.consistent_with(1.0)
    True
    >>> leaky = audit(lambda d, rng, size: count(d, rng, size, epsilon=2.0),
    ...               [1, 1, 0], [1, 1, 1], n_samples=200_000,
    ...               batch=100_000, rng=0)
    >>> leaky.consistent_with(1.0)
    False
    """
    n_samples, batch, pilot_fraction = _check_mechanism_args(mechanism, n_samples, batch, pilot_fraction)
    delta = check_delta(delta)
    confidence = _check_confidence(confidence)
    n_thresholds = check_int(n_thresholds, "n_thresholds", minimum=1)
    gen = as_generator(rng)
    n_pilot = max(2, round(pilot_fraction * n_samples))
    n_threshold_pilot = n_pilot
    if projection is None:
        n_direction = n_pilot // 2
        n_threshold_pilot = n_pilot - n_direction
        projection = _mean_difference(mechanism, dataset, neighbour, n_direction, batch, gen)
    project = _projector(projection, batch)
    pilot = [_projected(mechanism, d, n_threshold_pilot, batch, gen, project) for d in (dataset, neighbour)]
    thresholds = _default_thresholds(np.concatenate(pilot), n_thresholds)
    main = [_projected(mechanism, d, n_samples - n_pilot, batch, gen, project) for d in (dataset, neighbour)]
    return epsilon_lower_bound(main[0], main[1], delta=delta, confidence=confidence, thresholds=thresholds)
