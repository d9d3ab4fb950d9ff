r"""The private mean's own clipping, made small and released, so that the centre's bias is bounded tightly.

Where the private location took one step (few rows) and the row bound ``R`` is private, the final private
mean clips each (standardised) row to :math:`\|z - m\| \le R_m` about its location ``m`` at ``R_m`` twice
``R`` (:func:`mean_bound`): the row bound is drawn to clip as many rows as balance the second moment's noise
(a third of them on 150 rows at :math:`\epsilon = 4`), too many for a mean, whose clipped rows all pull it
one way. (On more rows the bound clips few, and the final mean keeps it.) A clipped row pulls the mean short by
:math:`(z - m)(1 - R_m/\|z - m\|)`, a vector of norm :math:`o = \|z - m\| - R_m` (its *overflow*). The
sum of the overflows, each capped at ``K``,

.. math:: T = \sum_i \min\big((u(\|z_i - m\|) - R_m)_+,\ K\big), \qquad K = (2R + \|\delta\| - R_m)_+,

is released with noise (:func:`release_overflow`), ``u(r)`` the upper edge of the public grid's bin that
holds ``r`` (at most 3.3% above it on the default grid; ``inf`` beyond the top edge): ``T`` is at least
the capped sum of the true overflows. ``delta`` is the mean's released step (the centre ``c`` less ``m``),
so a row whose overflow exceeds ``K`` lies beyond ``2R`` about ``c``: where the clipping-excess release
counts the rows (:mod:`~dpmoments.moments.clipping_bias`) and the error budget judges them. ``T`` comes
from the bin counts of the norms about ``m`` that the row bound's pass already made: no row is read again.

What it is for (:mod:`dpmoments.estimators.centre_bias`): the clipped rows' weights
:math:`1 - R_m/\|z - m\| = o/(R_m + o) \le \min(o, K)/\min(K, R_m)` average at most
:math:`T/(n \min(K, R_m))`, and the centre's bias has norm at most :math:`T/n` plus what rows beyond
``2R`` about ``c`` pull beyond the cap.

Privacy
-------
Each row adds a value in ``[0, K]`` that depends on that row alone (the grid, ``R``, ``R_m``, ``m``,
``delta`` and the scales are public or outputs of earlier private steps), so ``T``'s sensitivity is ``K``
under replace-one, zero-out and add-remove alike. Gaussian noise of standard deviation
:math:`K/\sqrt{2\rho}` is :math:`\rho`-zCDP; Laplace noise of scale :math:`K/\epsilon` is
:math:`\epsilon`-DP (``K = 0``: every row adds 0 and nothing is added). The part is composed with the
others (:func:`dpmoments.privacy.compose`). Division by ``n`` (public, or the main release's noisy count
under add-remove) is post-processing.
"""

import math

import numpy as np

from .._rng import as_generator
from ..mechanisms import gaussian_noise, laplace_noise
from ..privacy import ZCDP, PureDP
from .private_bounds import NoisyClippedCount

__all__ = ["MEAN_BOUND_FACTOR", "OVERFLOW_FRACTION", "mean_bound", "overflow_sum", "release_overflow",
           "record_overflow"]

# The final mean clips at twice the row bound: its noise doubles, and its clipping bias (a third of 150 rows pulling
# one way at the row bound) all but vanishes; the bias bound then costs less than the noise it replaced (iris at
# epsilon = 4: width over the noise-only width 17.9 -> 6.9, benchmarks/coverage.py)
MEAN_BOUND_FACTOR = 2.0
# Of the final mean's share, for the overflow's release: the mean's noise grows by 1/sqrt(0.85) = 8%
OVERFLOW_FRACTION = 0.15


def mean_bound(row_norm, edges=None):
    """The final mean's bound: ``MEAN_BOUND_FACTOR`` times the row bound, raised to the next grid edge where the
    norms are binned on ``edges`` (the fused pass sums the rows per bin; at most the top edge). Public values only."""
    bound = MEAN_BOUND_FACTOR * float(row_norm)
    if edges is None:
        return bound
    k = int(np.searchsorted(edges, bound * (1.0 - 1e-12)))
    return float(edges[min(k, len(edges) - 1)])  # the top edge where twice the bound lies beyond the grid


def overflow_sum(counts, edges, bound, cap):
    """``T`` exactly (module docstring): ``counts`` (G + 1,) the rows per bin of the norms, ``edges`` (G,) the grid
    (bin ``b`` holds norms in ``(edges[b - 1], edges[b]]``, the last bin those beyond the top edge), ``bound`` the
    mean's, ``cap`` the most one row adds."""
    counts, edges = np.asarray(counts, dtype=float), np.asarray(edges, dtype=float)
    upper = np.append(edges, np.inf)
    each = np.minimum(np.maximum(upper - float(bound), 0.0), float(cap))
    return float(counts @ each)


def release_overflow(counts, edges, bound, cap, *, epsilon=None, rho=None, rng=None):
    """``T`` plus noise (sensitivity ``cap`` under every relation): Gaussian of sd ``cap / sqrt(2 rho)``
    (``rho``-zCDP) or Laplace of scale ``cap / epsilon`` (``epsilon``-DP). Only the noisy value is returned."""
    exact, gen, cap = overflow_sum(counts, edges, bound, cap), as_generator(rng), float(cap)
    guarantee = ZCDP(rho) if rho is not None else PureDP(epsilon)
    if cap == 0.0:  # every row adds 0: nothing to hide
        return NoisyClippedCount(exact, 0.0, guarantee)
    if rho is not None:
        sd = cap / math.sqrt(2.0 * rho)
        return NoisyClippedCount(exact + float(gaussian_noise(1, sd, gen)[0]), sd, guarantee)
    scale = cap / epsilon
    return NoisyClippedCount(exact + float(laplace_noise(1, scale, gen)[0]), math.sqrt(2.0) * scale, guarantee)


def record_overflow(budget, binned, bound, outer, step, share, rng):
    """Release ``T`` about the pass ``binned`` (a :class:`~dpmoments.moments.binned_sums.BinnedSums` of the norms
    about the mean's location) from ``share`` of ``budget`` and record it as the ``"mean overflow"`` part.

    ``bound``: the mean's; ``outer``: the clipping-excess release's outer bound about the centre; ``step``: the
    mean's released move from its location to the centre. The cap is ``(outer + ||step|| - bound)_+``."""
    cap = max(float(outer) + float(np.linalg.norm(step)) - float(bound), 0.0)
    noisy = release_overflow(binned.counts, binned.edges, bound, cap, rng=rng, **budget.count(share))
    budget.record("mean overflow", noisy.guarantee, share, overflow_sum=noisy.value, overflow_noise_sd=noisy.noise_sd,
                  row_norm=float(bound), cap=cap)
