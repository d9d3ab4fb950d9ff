"""Private selection: report-noisy-min/max and the exponential mechanism.

Lei et al. (JRSS-A 2018) select a model by report-noisy-min over scores with
sensitivity Delta, adding Laplace noise of scale ``2 Delta / epsilon``; the
exponential mechanism is the alternative with the same epsilon (docs/algorithms.md
§4.2). These functions take the noise scale or (epsilon, sensitivity) as given
and return an index; they record no guarantee.
"""

import math

import numpy as np

from .._rng import as_generator
from .._validation import check_epsilon, check_nonnegative, check_positive, check_vector

__all__ = [
    "report_noisy_min",
    "report_noisy_max",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
]


def _check_scores(scores):
    scores = check_vector(scores, "scores")
    if scores.size == 0:
        raise ValueError("'scores' must hold at least one candidate; got an empty array.")
    return scores


def _check_minimise(minimise):
    if not isinstance(minimise, (bool, np.bool_)):
        raise TypeError(f"'minimise' must be a bool; got {type(minimise).__name__} {minimise!r}.")
    return bool(minimise)


def report_noisy_min(scores, scale, rng=None, return_gap=False):
    """Index of the smallest score after adding i.i.d. Laplace noise (and, optionally, the noisy gap).

    .. math::

        \\hat\\imath = \\arg\\min_i \\; (s_i + b W_i), \\quad W_i \\overset{iid}{\\sim} \\mathrm{Laplace}(0, 1)

    Parameters
    ----------
    scores : array_like of shape (n_candidates,)
        Finite scores, at least one.
    scale : float
        Laplace scale :math:`b` >= 0; for an epsilon-DP selection over scores
        of sensitivity :math:`\\Delta` the caller passes :math:`2\\Delta/\\varepsilon`.
        ``0`` returns the exact argmin (first index on ties).
    rng : None, int, SeedSequence or numpy.random.Generator, default=None
        Source of randomness; ``None`` draws fresh OS entropy.
    return_gap : bool, default=False
        Also return the gap between the second-smallest and the smallest
        noisy score (``inf`` for one candidate). Releasing it costs nothing
        more: report-noisy-max with Laplace noise of scale
        :math:`2\\Delta/\\varepsilon` and its noisy gap together are still
        epsilon-DP (Ding, Wang, Zhang & Kifer, "Free gap information from the
        differentially private sparse vector and noisy max mechanisms",
        PVLDB 13(3), 2019; idealised real arithmetic, like every float draw).

    Returns
    -------
    index : int
    gap : float
        Only with ``return_gap=True``.

    Examples
    --------
    >>> report_noisy_min([3.0, 0.0, 5.0], scale=0.01, rng=0)
    1
    """
    scores = _check_scores(scores)
    scale = check_nonnegative(scale, "scale")
    if scale == 0:
        noisy = scores
    else:
        noise = as_generator(rng).laplace(0.0, scale, size=scores.size)
        # Shift so the best score is 0: huge score ranges then overflow only for
        # hopeless candidates (to +inf), never tying the contenders at -inf.
        with np.errstate(over="ignore"):
            noisy = (scores - scores.min()) + noise
    index = int(np.argmin(noisy))
    if not return_gap:
        return index
    two = np.partition(noisy, 1)[:2] if noisy.size > 1 else np.array([noisy[0], np.inf])
    return index, float(two[1] - two[0])


def report_noisy_max(scores, scale, rng=None):
    """Index of the largest score after adding i.i.d. Laplace noise.

    Same as :func:`report_noisy_min` on ``-scores`` (the Laplace law is
    symmetric).

    Parameters
    ----------
    scores : array_like of shape (n_candidates,)
        Finite scores, at least one.
    scale : float
        Laplace scale >= 0; ``0`` returns the exact argmax.
    rng : None, int, SeedSequence or numpy.random.Generator, default=None
        Source of randomness; ``None`` draws fresh OS entropy.

    Returns
    -------
    index : int

    Examples
    --------
    >>> report_noisy_max([3.0, 0.0, 5.0], scale=0.01, rng=0)
    2
    """
    return report_noisy_min(-_check_scores(scores), scale, rng)


def _log_weights(scores, epsilon, sensitivity, minimise):
    # Shift by the best score before scaling: the best candidate gets log-weight
    # 0 and the rest are <= 0, so nothing overflows to +inf; a difference that
    # overflows to inf gives log-weight -inf, i.e. probability 0 (its true value
    # underflows anyway).
    factor = epsilon / (2.0 * sensitivity)
    if factor == 0.0:  # epsilon / sensitivity underflowed: uniform is the limit
        return np.zeros_like(scores)
    with np.errstate(over="ignore"):
        gaps = scores - scores.min() if minimise else scores.max() - scores
        return -factor * gaps


def exponential_mechanism_probabilities(scores, epsilon, sensitivity, minimise=True):
    """Selection probabilities of :func:`exponential_mechanism`.

    .. math::

        P(i) = \\frac{\\exp(\\mp \\varepsilon s_i / (2\\Delta))}
                     {\\sum_j \\exp(\\mp \\varepsilon s_j / (2\\Delta))}

    (minus sign when minimising). ``epsilon=inf`` puts all mass on the first
    best index.

    Parameters
    ----------
    scores : array_like of shape (n_candidates,)
        Finite scores, at least one.
    epsilon : float
        In (0, inf].
    sensitivity : float
        Sensitivity :math:`\\Delta` of the scores, finite, > 0.
    minimise : bool, default=True
        Favour small scores (``True``) or large ones (``False``).

    Returns
    -------
    probabilities : ndarray of shape (n_candidates,)

    Examples
    --------
    >>> exponential_mechanism_probabilities([0.0, 2.0], epsilon=1.0, sensitivity=1.0).round(3)
    array([0.731, 0.269])
    """
    scores = _check_scores(scores)
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    minimise = _check_minimise(minimise)
    if math.isinf(epsilon):
        probabilities = np.zeros(scores.size)
        probabilities[_exact_best(scores, minimise)] = 1.0
        return probabilities
    weights = np.exp(_log_weights(scores, epsilon, sensitivity, minimise))
    return weights / weights.sum()


def _exact_best(scores, minimise):
    return int(np.argmin(scores) if minimise else np.argmax(scores))


def exponential_mechanism(scores, epsilon, sensitivity, rng=None, minimise=True):
    """Sample an index with probability proportional to ``exp(-eps * s / (2 Delta))``.

    Sampling uses the Gumbel-max trick on the shifted log-weights, so score
    ranges of any size neither overflow nor lose the best candidates.

    Parameters
    ----------
    scores : array_like of shape (n_candidates,)
        Finite scores, at least one.
    epsilon : float
        In (0, inf]; ``inf`` returns the exact argmin/argmax (first on ties).
    sensitivity : float
        Sensitivity :math:`\\Delta` of the scores, finite, > 0.
    rng : None, int, SeedSequence or numpy.random.Generator, default=None
        Source of randomness; ``None`` draws fresh OS entropy.
    minimise : bool, default=True
        Favour small scores (``True``) or large ones (``False``).

    Returns
    -------
    index : int
        Distributed as :func:`exponential_mechanism_probabilities`.

    Examples
    --------
    >>> exponential_mechanism([0.0, 1e6, 1e300], epsilon=1.0, sensitivity=1.0, rng=0)
    0
    """
    scores = _check_scores(scores)
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    minimise = _check_minimise(minimise)
    if math.isinf(epsilon):
        return _exact_best(scores, minimise)
    log_weights = _log_weights(scores, epsilon, sensitivity, minimise)
    gumbel = as_generator(rng).gumbel(size=scores.size)
    return int(np.argmax(log_weights + gumbel))
