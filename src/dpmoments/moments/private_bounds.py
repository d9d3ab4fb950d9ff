r"""Private quantiles: bounds, centres and scales chosen from a share of the budget, never from raw data.

A clipping bound, a centre or a column scale computed from the data would be
an unprivatised statistic of them. Here each is the output of the
exponential mechanism over a **public** grid (:class:`SearchRange`), fed by
one streaming pass that only counts how many rows fall in each grid bin.

The mechanism
-------------
For a non-negative statistic ``s_i`` of each row (a row norm, ``|x_ij - c_j|``,
``|y_i|``) or a signed one (``x_ij``, for a median), the grid's edges
``t_0 < t_1 < ... < t_{G-1}`` cut the line into ``G + 1`` bins
``(t_{k-1}, t_k]`` (the first and last are open-ended). With
``L_k = #{s_i <= t_{k-1}}``, ``U_k = #{s_i <= t_k}`` and a target rank ``T``
(``q n`` for the ``q``-quantile, or ``n - m`` to clip about ``m`` rows), bin
``k`` scores

.. math::

    u_k = -\max(0,\; L_k - T,\; T - U_k),

zero for the bin holding the target rank and minus the number of rows that
separate any other bin from it. The exponential mechanism draws bin ``k``
with probability proportional to :math:`\exp(\varepsilon u_k / 2)` and
returns its upper edge ``t_k`` (the top edge for the last bin): a bound that
covers the chosen quantile, within one grid step. An atom (all rows equal, a
constant column) falls in one bin, which scores 0 while every other bin
scores about ``-n/2``: the answer stays finite and next to the atom. For
``|x_j - c_j|`` (a column's scale) the rows exactly at the centre are set
apart and the quantile is taken among the others, so a column tied at its median
(binary, counts) still gets the spread of its other values: with ``Z`` rows
tied, the target is ``T = Z + q (n - Z)``. A row entering or leaving the
tie moves ``T`` by ``1 - q`` and the counts below by 1 in the same
direction, so the sensitivity stays ``max(q, 1 - q) <= 1``. A column tied
everywhere has ``T = n``, which every bin above the tie misses by one row
only; so the lowest bin gets a fixed, data-independent base measure of
``(G + 1) e^5`` (the exponential mechanism stays epsilon-DP under any fixed
base measure), which wins then and is outweighed whenever the draw is
reliable at all (``epsilon q (n - Z) / 2 > ln(G + 1) + 5``).

Privacy
-------
Under every relation of :data:`~dpmoments.moments.NEIGHBOURS`, one row moves
each ``L_k`` and ``U_k`` by at most 1 (and, under add-remove, ``T`` by at
most 1 in the same direction as the counts or by ``q <= 1`` alone), so every
``u_k`` has sensitivity 1 and one draw is ``epsilon``-DP (McSherry & Talwar
2007). The draw is also ``epsilon``-bounded-range, hence
``epsilon^2 / 8``-zCDP (Cesar & Rogers 2021), which is how ``k`` draws for
``k`` columns are composed when that beats adding their epsilons
(:func:`exponential_budget`). The grid is public and fixed before the data
are read; nothing else leaves the pass.

The optional clipping diagnostic releases the number of rows whose statistic
exceeds the chosen bound plus Laplace noise of scale ``1 / epsilon``
(sensitivity 1: one row is either clipped or not), ``epsilon``-DP. The exact
count is never returned, printed or stored.

Accuracy at our sizes
---------------------
The exponential mechanism's rank error is about ``2 (ln G + t) / epsilon``
rows with probability ``1 - e^-t``, whatever ``n``: 150 rows for
``G = 1000``, ``epsilon = 0.1``, ``t = 3`` -- 1.5% of the rows at
``n = 10^4``. A noisy histogram of the same grid (the histogram route of
Dong, Liang & Yi 2022) pays for every bin it adds up: its error at a
quantile grows with the square root of the number of bins summed, and of
``d`` when ``d`` columns share the budget. Measured at n = 10^4 and equal
zCDP (``benchmarks/results/bounds.md``), its median rank error was 5 to 15
times the exponential mechanism's for d = 1 to 50. Hence the exponential
mechanism. Its weakness is small ``n epsilon``:
the bins far outside the data all score about ``-n/2`` and, being many, can
win when ``n epsilon / 4`` is not well above ``ln G``; then the chosen bound
lands at an end of the range, which is reported by a :class:`BoundWarning`.
"""

import math
from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from .._validation import check_epsilon, check_int, check_option
from ..exceptions import TooFewRowsError
from ..mechanisms import exponential_mechanism, gaussian_noise, laplace_noise
from ..privacy import ZCDP, ApproxDP, PureDP, calibrate_gaussian
from .quantile_grid import STATISTICS, BinCounts, SearchRange, as_search_range, quantile_pass
from .sensitivity import NEIGHBOURS

TIE_PRIOR = 5.0  # the lowest bin's base measure for tied statistics is (G + 1) e^5 (module docstring)

__all__ = ["SearchRange", "BinCounts", "PrivateQuantiles", "NoisyClippedCount", "STATISTICS", "private_quantiles",
           "exponential_budget", "quantile_pass"]



@dataclass(frozen=True)
class NoisyClippedCount:
    """A count released with noise: ``value`` (noisy), its noise standard deviation and its guarantee."""

    value: float
    noise_sd: float
    guarantee: object


@dataclass(frozen=True)
class PrivateQuantiles:
    """Private quantiles of one statistic: one value per row statistic, or one per column.

    Attributes
    ----------
    values : ndarray of shape (k,)
        The chosen grid edges (k = 1 for a row statistic, d for a column one).
    statistic : str
    target : str
        What was aimed at, e.g. ``"0.95-quantile"`` or ``"clip about 120 rows"``.
    guarantee : PureDP or ApproxDP
        Of all ``k`` draws together (``ApproxDP`` with ``rho`` when the
        draws are composed in zCDP).
    epsilon_each : float
        The epsilon of each draw.
    outside : ndarray of bool, shape (k,)
        The draw fell in an end bin: the quantile may lie outside the range.
    search : SearchRange
    """

    values: np.ndarray
    statistic: str
    target: str
    guarantee: object
    epsilon_each: float
    outside: np.ndarray
    search: SearchRange


def exponential_budget(epsilon, delta, k):
    """Per-draw epsilon of ``k`` exponential-mechanism draws that compose to (epsilon, delta).

    Basic composition gives ``epsilon / k`` each (pure). With ``delta > 0``,
    each draw is ``e^2/8``-zCDP, so ``e = sqrt(8 rho / k)`` where ``rho`` is the
    largest zCDP parameter whose conversion fits (epsilon, delta); the larger
    of the two is used.

    Returns
    -------
    (float, PureDP or ApproxDP)
        The per-draw epsilon and the guarantee of the ``k`` draws together.

    Examples
    --------
    >>> e, g = exponential_budget(0.1, 1e-7, 1); round(e, 3), str(g)
    (0.1, '0.1-DP')
    >>> e, g = exponential_budget(0.1, 1e-7, 50); e > 0.1 / 50
    True
    """
    epsilon = check_epsilon(epsilon)
    k = check_int(k, "k", minimum=1)
    if math.isinf(epsilon):  # exact draws (the best bin), not private
        return math.inf, PureDP(math.inf)
    basic = epsilon / k
    if delta:
        rho = calibrate_gaussian(epsilon, delta, 1.0, calibration="zcdp")[1].rho
        each = math.sqrt(8.0 * rho / k)
        if each > basic:
            return each, ApproxDP(epsilon, delta, rho=k * each * each / 8.0)
    return basic, PureDP(epsilon)


# -- the pass --------------------------------------------------------------------

def _scores(counts, target):
    """Utility of each bin: minus the rows between it and the target rank (0 for the bin holding it)."""
    upper = np.cumsum(counts)
    lower = upper - counts
    return -np.maximum(0.0, np.maximum(lower - target, target - upper))


def least_epsilon_each(margin, n_bins):
    """The least epsilon per draw that runs a draw ``margin`` rows from the data's nearer end among ``n_bins`` bins
    (:func:`check_margin`'s rule: ``epsilon * margin / 2 >= ln(n_bins) + 5``)."""
    return 2.0 * (math.log(n_bins) + TIE_PRIOR) / max(margin, 1e-300)


def check_margin(n, target, epsilon_each, n_bins, what, best_margin=None):
    """Refuse a draw whose target is too close to an end of the data for its epsilon (``what`` names it).

    Every bin outside the data scores minus the rows between the target and
    that end (``min(T, n - T)``); the ``n_bins`` of them together outweigh the
    right bin unless ``epsilon * min(T, n - T) / 2 >= ln(n_bins) + 5``, and a
    draw that fails lands anywhere in the search range. Raised before
    anything is drawn or released, as a :class:`~dpmoments.exceptions.TooFewRowsError`
    that carries the smallest epsilon per draw that would run: from ``n``,
    the grid and ``best_margin`` (the margin the target reaches when epsilon
    grows; ``n / 2`` for a target that leaves at least the rank error above
    it), public quantities only. Only call it where ``n`` is public.
    """
    margin = min(target, n - target)
    if math.isfinite(epsilon_each) and epsilon_each < least_epsilon_each(margin, n_bins) * (1 - 1e-9):
        needed = least_epsilon_each(margin if best_margin is None else best_margin, n_bins)
        raise TooFewRowsError(
            f"{what}: too few rows for a private draw with epsilon {epsilon_each:.3g} among {n_bins} bins (it would "
            f"land anywhere in the search range; it runs from epsilon {needed:.3g} per draw); give a larger budget "
            "share or epsilon, a narrower search range, or a public value.", what=what, epsilon_each=epsilon_each,
            needed_each=needed)


def target_rank(n, quantile=None, clipped_rows=None, min_clipped=None, lowest=0.5):
    """The rank a draw aims at: ``quantile * n``, or ``n - clipped_rows``; never fewer than ``min_clipped`` above.

    ``clipped_rows = m`` aims at leaving about ``m`` rows above the bound,
    never more than half (``max(n - m, n / 2)``). ``min_clipped = f`` lowers
    a quantile's rank so that at least ``f`` rows lie above it, never below
    ``lowest * n``: at small ``n`` a fixed 0.95-quantile leaves fewer rows
    above it than the draw's own rank error, and the many empty bins above
    the data would win. Each form moves by at most 1 when one row is added or
    removed, in the direction of the counts, so the scores keep sensitivity 1.
    """
    if clipped_rows is not None:
        return max(n - clipped_rows, 0.5 * n)
    rank = quantile * n
    return rank if not min_clipped else min(rank, max(n - min_clipped, lowest * n))


def select_quantiles(bins, edges, *, epsilon_each, quantile=None, clipped_rows=None, rng=None, what=None,
                     min_clipped=None, lowest=0.5):
    """One exponential-mechanism draw per row of ``bins.counts``; returns (values, outside).

    The target rank is :func:`target_rank` of ``n``. With ``ties`` (rows
    exactly at the centre, ``Z`` of them) it is ``Z + quantile (n - Z)``:
    the quantile of the other rows. Sensitivity 1 per draw (module
    docstring). With ``what`` (only where ``n`` is public), a draw too weak
    for the rows is refused first (:func:`check_margin`).
    """
    gen = as_generator(rng)
    counts = bins.counts
    values, outside = np.empty(counts.shape[0]), np.zeros(counts.shape[0], dtype=bool)
    for j, row in enumerate(counts):
        n = row.sum()
        ties = 0 if bins.ties is None else bins.ties[j]
        public_target = target_rank(n, quantile, clipped_rows, min_clipped, lowest)
        if what is not None:  # from n alone: the tie count is private
            best = 0.5 * n if clipped_rows is not None else \
                (1.0 - lowest) * n if min_clipped and quantile >= lowest else None
            check_margin(n, public_target, epsilon_each, row.size, what, best_margin=best)
        target = public_target if (clipped_rows is not None or bins.ties is None) else ties + quantile * (n - ties)
        scores = _scores(row, target)
        if bins.ties is not None and math.isfinite(epsilon_each):
            # a data-independent base measure on the lowest bin: a column tied at its centre everywhere gets
            # the lowest edge, not a draw among the bins above it (each only one row away from the top rank)
            scores[0] += 2.0 * (math.log(scores.size) + TIE_PRIOR) / epsilon_each
        k = exponential_mechanism(scores, epsilon_each, 1.0, rng=gen, minimise=False)
        values[j] = edges[min(k, edges.size - 1)]
        outside[j] = k in (0, edges.size)
    return values, outside


def noisy_clipped_count(counts, edges, bound, *, epsilon=None, rho=None, rng=None):
    """Rows whose statistic exceeds ``bound`` (a grid edge), plus noise; only the noisy value is returned.

    Sensitivity 1 under every relation (a row is beyond the bound or not).
    ``epsilon``: Laplace noise of scale ``1/epsilon``, epsilon-DP; ``rho``:
    Gaussian noise of standard deviation ``1/sqrt(2 rho)``, rho-zCDP.
    """
    k = int(np.searchsorted(edges, bound, side="left"))
    exact = counts.counts[0, k + 1:].sum()
    gen = as_generator(rng)
    if rho is not None:
        sd = 1.0 / math.sqrt(2.0 * rho)
        return NoisyClippedCount(float(exact + gaussian_noise(1, sd, gen)[0]), sd, ZCDP(rho))
    scale = 1.0 / epsilon
    return NoisyClippedCount(float(exact + laplace_noise(1, scale, gen)[0]), math.sqrt(2.0) * scale, PureDP(epsilon))


def _check_target(quantile, clipped_rows):
    if clipped_rows is not None:
        if quantile is not None:
            raise ValueError("give either 'quantile' or 'clipped_rows', not both.")
        if isinstance(clipped_rows, bool) or not isinstance(clipped_rows, (int, float)) or not clipped_rows >= 0:
            raise ValueError(f"'clipped_rows' must be a number >= 0; got {clipped_rows!r}.")
        return None, float(clipped_rows), f"clip about {clipped_rows:.4g} rows"
    q = 0.95 if quantile is None else quantile
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q < 1:
        raise ValueError(f"'quantile' must be in (0, 1); got {q!r}.")
    return float(q), None, f"{q:g}-quantile"


def private_quantiles(X, y=None, *, statistic="row-norm", epsilon, delta=None, quantile=None, clipped_rows=None,
                      center=None, scale=None, search=None, neighbours="replace-one", rng=None, chunk_size=65536):
    r"""A private quantile of a statistic of the rows, on a public grid, in one streaming pass.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), iterable of chunks, path or dask array
    y : array-like of shape (n_samples,), optional
        Needed for ``statistic="abs-response"``.
    statistic : {"row-norm", "max-abs-entry", "abs-response", "abs-column", "column"}, default="row-norm"
        ``||(x - c)/s||_2``, ``max_j |x_j - c_j|/s_j``, ``|y|``, ``|x_j - c_j|`` per column
        (rows at the centre left out), or ``x_j - c_j`` per column (signed: a
        median is ``quantile=0.5``).
    epsilon : float in (0, inf]
        For all the draws together (one per column for the column statistics).
        ``inf`` returns the exact best bin (not private).
    delta : float in [0, 1), optional
        Lets ``d`` column draws compose in zCDP when that is better
        (:func:`exponential_budget`); unused for one draw.
    quantile : float in (0, 1), default 0.95
    clipped_rows : float >= 0, optional
        Instead of ``quantile``: aim at leaving about this many rows above
        the bound (the ``max(n - m, n/2)``-th smallest value).
    center, scale : array-like of shape (n_features,), optional
        Public (or privately released) centre and positive column scales.
    search : SearchRange or (low, high), default SearchRange()
        The public grid, 1e-6 to 1e8 in 1000 log-spaced steps.
    neighbours : {"replace-one", "add-remove"}, default="replace-one"
        Recorded for the caller; the draws have sensitivity 1 under each.
    rng : None, int or numpy.random.Generator
    chunk_size : int, default=65536

    Returns
    -------
    PrivateQuantiles

    Privacy
    -------
    Each draw is the exponential mechanism with a sensitivity-1 utility:
    ``epsilon_each``-DP, ``epsilon_each^2/8``-zCDP, under replace-one and
    add-remove (module docstring). The ``k`` draws compose to ``guarantee``.
    Only grid edges leave the function.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(20000, 3))
    >>> r = private_quantiles(X, epsilon=0.1, quantile=0.5, rng=1)
    >>> bool(1.4 < r.values[0] < 1.7), str(r.guarantee)
    (True, '0.1-DP')
    """
    epsilon = check_epsilon(epsilon)
    check_option(neighbours, "neighbours", NEIGHBOURS)
    check_option(statistic, "statistic", tuple(STATISTICS))
    quantile, clipped_rows, target = _check_target(quantile, clipped_rows)
    search = as_search_range(search)
    source = X if y is None else (X, y)
    (counts,), _ = quantile_pass(source, [(statistic, center, scale)], search=search, chunk_size=chunk_size)
    each, guarantee = exponential_budget(epsilon, delta, counts.counts.shape[0])
    edges = search.edges(signed=STATISTICS[statistic][1])
    values, outside = select_quantiles(counts, edges, epsilon_each=each, quantile=quantile,
                                       clipped_rows=clipped_rows, rng=rng)
    return PrivateQuantiles(values, statistic, target, guarantee, each, outside, search)
