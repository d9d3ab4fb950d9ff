"""The empirical privacy auditor: a mechanism sampled on a neighbouring pair, then bounded.

:func:`audit` draws the mechanism's outputs on both datasets (in batches when it is vectorised),
reduces each output to a real number (a projection: given, or the direction of the mean difference
estimated from a pilot share of the draws) and hands the samples to
:func:`~dpmoments.testing.epsilon_lower_bound` (its module, ``_bound.py``, says what the bound holds).
"""

import math
import numbers

import numpy as np

from .._rng import as_generator
from .._validation import check_delta, check_int
from ._bound import _check_confidence, _default_thresholds, epsilon_lower_bound

__all__ = ["audit"]


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
