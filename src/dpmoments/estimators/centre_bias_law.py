r"""The private centre's noise and its own clipping bias as one law: worst-case quantiles over the bias's box.

About the centre :math:`c`, :math:`\bar x - c = \beta - e` (:mod:`.centre_bias`), so each entry of the second
moment about ``c`` carries :math:`(e_i - \beta_i)(e_j - \beta_j)` beside the normal parts
:math:`N \sim N(0, v)`, with :math:`e \sim N(0, s^2 I)` (the mean is a Gaussian release) independent of ``N``
and :math:`\beta` unknown but :math:`|\beta_j| \le B_j` (and, where the norm bound holds,
:math:`\beta_i^2 + \beta_j^2 \le N_\beta^2`). Adding :math:`E (B_i + B_j) + B_i B_j` (``E`` the noise's quantile)
to the quantile of :math:`N + e_i e_j` adds the worst cases of three terms as if they came together; here the
worst case is taken of their sum's law, which holds at its level for every :math:`\beta` in the box:

- **on the diagonal** :math:`(e_j - \beta_j)^2 = s^2 \chi'^2_1(\beta_j^2 / s^2)`, a noncentral chi-square,
  stochastically increasing in :math:`|\beta_j|`: :math:`P(N + (e_j - \beta_j)^2 > t)` is largest at
  :math:`|\beta_j| = B_j` and the lower quantile lowest at :math:`\beta_j = 0`. The truth's lower end is
  :math:`r - q_{hi}(B_j)`; its upper end, :math:`r - q_{lo}(0)`, does not move at all (:func:`diagonal_increment`);
- **off the diagonal** (polarisation): with :math:`p = \beta_i + \beta_j`, :math:`m = \beta_i - \beta_j`,
  :math:`U = e_i + e_j - p` and :math:`V = e_i - e_j - m`, :math:`(e_i - \beta_i)(e_j - \beta_j) = (U^2 - V^2)/4`,
  and ``U`` and ``V`` are independent (equal variances :math:`2 s^2`): :math:`U^2 / 2s^2` is a noncentral
  chi-square of noncentrality :math:`p^2 / 2s^2`, :math:`V^2 / 2s^2` of :math:`m^2 / 2s^2`. The upper tail of
  :math:`N + (U^2 - V^2)/4` grows with :math:`|p|` and falls with :math:`|m|` (a coupling: each is stochastically
  monotone and the three are independent), and over the box :math:`|p| \le P = B_i + B_j` (and
  :math:`|p| \le \sqrt 2 N_\beta` under the norm bound, :math:`p^2 \le 2(\beta_i^2 + \beta_j^2)`), :math:`|m| \ge 0`:
  so every :math:`\beta` in the box has an upper tail at most that of :math:`\beta_i = \beta_j = P/2`. The lower
  tail is its mirror (:math:`p = 0`, :math:`|m| = P`: the law of :math:`-W`), so the symmetric half-width at which
  that law's upper tail is :math:`\alpha/2` holds at level :math:`1 - \alpha` for every :math:`\beta`
  (:func:`off_diagonal_increments`). Given :math:`e_i`, :math:`N + (e_i - P/2)(e_j - P/2)` is normal, so the
  tail is one expectation over a standard normal (Gauss-Hermite nodes), as in :mod:`.centre_law`.

The error budget takes, entry by entry, the smaller of this and the sum it replaces (both are fixed numbers given
the public scales and the bias bound, each holding at the level: the smaller does too). Gaussian noise and one
machine's centre only (across sites the centre's law differs: the sum is kept). Public scales only: no data.
"""

import functools

import numpy as np

from .._lazy import lazy_module
from .centre_law import KNOTS
from .uncertainty import row_blocks

special = lazy_module("scipy.special")  # imported when an interval is first computed

__all__ = ["diagonal_increment", "off_diagonal_increments", "BIAS_KNOTS", "LAW_TEXT"]

LAW_TEXT = ("; with Gaussian noise on one machine, where that sum adds 5% or more to some entry's half-width, each "
            "entry takes instead, where smaller, the worst case over |beta| <= B of the law of "
            "(e_i - beta_i)(e_j - beta_j) with the normal parts (a noncentral chi-square on the diagonal, whose upper "
            "end then does not move; off it the polarisation ((e_i + e_j - p)^2 - (e_i - e_j - m)^2) / 4 of two "
            "independent terms)")

_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(96)  # E f(Z) = sum w f(x) / sqrt(2 pi)
_WEIGHTS = _WEIGHTS / np.sqrt(2.0 * np.pi)
_STEPS = 22  # bisection steps: the bracket shrinks by 2^-22 (about 1e-5 of a quantile; its upper end is taken)
BIAS_KNOTS = 9  # shifts a = P / 2s at which the table is solved
RATIO_KNOTS = 24  # ratios sqrt(v) / s^2 at which it is solved
EDGE_STEPS = 3  # pieces of the box's edge, few entries


def diagonal_increment(v, s, bound, alpha):
    """``q_hi(B) - q_hi(0)`` (d,): how much further down the truth's lower end goes when the centre's bias
    :math:`|\\beta_j| \\le B_j` is counted in the law of :math:`N(0, v_j) + (e_j - \\beta_j)^2` (module docstring);
    its upper end does not move."""
    v = np.asarray(v, dtype=float)
    s2 = float(s) ** 2
    if s2 == 0.0:
        return np.asarray(bound, dtype=float) ** 2  # a public centre's bias: beta_j^2 at most B_j^2, no noise
    a = np.asarray(bound, dtype=float) / float(s)
    both = _diagonal_upper(np.concatenate([v, v]), s, np.concatenate([a, np.zeros_like(a)]), alpha)
    return np.maximum(both[:a.size] - both[a.size:], 0.0)  # against the unbiased law solved the same way


def _diagonal_upper(v, s, a, alpha):
    """``t`` with ``P(N(0, v) + s^2 (Z - a)^2 > t) = alpha / 2`` (:func:`~.centre_law.diagonal_quantiles`' ``q_hi``
    at ``a = 0``): given ``Z`` at the nodes where the normal is wide, given ``N`` where it is sharp."""
    sd, s2 = np.sqrt(np.maximum(v, 0.0)), float(s) ** 2
    z = float(special.ndtri(1 - alpha / 2))
    low = np.zeros_like(sd)
    high = (z + 1.0) * sd + s2 * (z + 1.0 + a) ** 2 * 4.0 + 1e-300
    out = np.empty_like(sd)
    wide = sd >= 0.6 * s2
    if wide.any():
        w, shifted = sd[wide][:, None], s2 * (_NODES[None, :] - a[wide][:, None]) ** 2
        out[wide] = _bisect(lambda t: special.ndtr((shifted - t[:, None]) / w) @ _WEIGHTS - alpha / 2,
                            low[wide], high[wide])
    if (~wide).any():  # P((Z - a)^2 > x) = P(Z > a + sqrt x) + P(Z < a - sqrt x), given N at the nodes
        w, b = sd[~wide][:, None], a[~wide][:, None]

        def above(t):
            root = np.sqrt(np.maximum((t[:, None] - w * _NODES) / s2, 0.0))
            return (special.ndtr(-(b + root)) + special.ndtr(b - root)) @ _WEIGHTS - alpha / 2

        out[~wide] = _bisect(above, low[~wide], high[~wide])
    return out


def _bisect(tail, low, high):
    for _ in range(_STEPS):
        mid = (low + high) / 2
        above = tail(mid) > 0
        low, high = np.where(above, mid, low), np.where(above, high, mid)
    return high  # the upper end of the bracket: never below the root


def _off_diagonal_solved(r2, a, alpha, c=None):
    """``t`` with ``P(N(0, r2) + (Z_1 - a)(Z_2 - c) > t) = alpha / 2``, elementwise (``r2``, ``a``, ``c`` arrays of one
    shape; ``c = a`` unless given): given ``Z_1``, the law is normal of mean ``-(Z_1 - a) c`` and variance
    ``r2 + (Z_1 - a)^2``."""
    c = a if c is None else c
    gap = _NODES - a[..., None]
    sd = np.sqrt(np.maximum(r2[..., None] + gap**2, 1e-300))
    shift = gap * c[..., None]

    def tail(t):
        return special.ndtr(-(t[..., None] + shift) / sd) @ _WEIGHTS - alpha / 2

    z = float(special.ndtri(1 - alpha / 2))
    high = (np.sqrt(r2) + 40.0 + np.abs(a) + np.abs(c)) * (z + 1.0) + 2.0 * np.abs(a * c)
    return _bisect(tail, np.zeros_like(r2), high)


def off_diagonal_increments(v, s, shift_bound, alpha, smaller=None):
    """A function of a block of rows (a slice) returning, for each entry of those rows (rows, d), how much the
    half-width of :math:`N(0, v_{ij}) + (e_i - \\beta_i)(e_j - \\beta_j)` at level ``1 - alpha`` exceeds that of
    :math:`N(0, v_{ij}) + e_i e_j`, the worst case over the box (module docstring). ``shift_bound(rows)`` (rows, d):
    ``P``, the bound on :math:`|\\beta_i + \\beta_j|`. The diagonal's values are meaningless (:func:`diagonal_increment`
    has them).

    Up to ``KNOTS`` distinct entries each is solved itself, along the box's edge (:func:`_solved_each`;
    ``smaller(rows)``: ``min(B_i, B_j)``, where unequal bounds make the point ``P / 2`` loose); beyond, at that point,
    on a table of ``RATIO_KNOTS`` ratios :math:`\\sqrt v / s^2` spanning the entries' (their log) by ``BIAS_KNOTS``
    shifts :math:`a = P / 2s` from 0 to the largest, interpolated linearly in both (the quantile is convex in ``a``,
    even and growing like :math:`a^2`, so the chord lies above it; ``tests/estimators/test_centre_bias_law.py`` checks
    the table against each entry solved)."""
    s2, d = float(s) ** 2, v.shape[0]
    if d * (d - 1) // 2 <= KNOTS:
        return _solved_each(v, s2, float(s), shift_bound, alpha, smaller)
    lowest, highest, a_max = np.inf, -np.inf, 0.0
    for rows in row_blocks(d):
        block = v[rows]
        lowest, highest = min(lowest, float(block.min())), max(highest, float(block.max()))
        a_max = max(a_max, float(shift_bound(rows).max()) / (2.0 * float(s)))
    if not (np.isfinite(lowest) and np.isfinite(highest) and np.isfinite(a_max)):  # no table spans them: the sum
        return lambda rows: np.full((rows.stop - rows.start, d), np.nan)
    ratio = np.sqrt(np.maximum([lowest, highest], 0.0)) / s2
    low = max(min(ratio[0], 1.0), 1e-4)
    log_knots, shifts, table = _table(low, max(ratio[1], 1.0, low * 1.01), max(a_max, 1e-6), float(alpha))
    step = shifts[1]

    def increments(rows):
        at = np.interp(np.log(np.maximum(np.sqrt(np.maximum(v[rows], 0.0)) / s2, 1e-4)), log_knots,
                       np.arange(log_knots.size, dtype=float))
        i = np.minimum(at.astype(np.intp), log_knots.size - 2)
        w = at - i
        along = np.minimum(shift_bound(rows) / (2.0 * float(s)) / step, shifts.size - 1.0)
        j = np.minimum(along.astype(np.intp), shifts.size - 2)
        u = along - j
        out = (1 - w) * ((1 - u) * table[i, j] + u * table[i, j + 1])
        out += w * ((1 - u) * table[i + 1, j] + u * table[i + 1, j + 1])
        return s2 * out

    return increments


@functools.lru_cache(maxsize=8)
def _table(low, high, a_max, alpha):
    """``(log knots, shifts, increments)``: the increment over the unbiased law at each ratio knot and shift (the
    same span and level asked twice, for the interval and for which entries exclude 0, is solved once)."""
    knots = np.geomspace(low, high, RATIO_KNOTS)
    shifts = np.linspace(0.0, a_max, BIAS_KNOTS)
    table = _off_diagonal_solved(np.repeat(knots[:, None] ** 2, shifts.size, 1),
                                 np.repeat(shifts[None, :], knots.size, 0), alpha)
    table = table - table[:, :1]
    table.setflags(write=False)
    return np.log(knots), shifts, table


def _solved_each(v, s2, s, shift_bound, alpha, smaller=None):
    """Few entries (a small table): each entry's increment solved itself, on the edge of the box where the worst case
    lies (module docstring: for a given ``p`` the smallest ``|m|`` is ``max(0, p - 2 min(B_i, B_j))``, so the
    supremum is over ``p`` from ``2 min(B_i, B_j)`` to ``P``). On each of ``EDGE_STEPS`` pieces ``[p_k, p_k+1]`` of
    it the tail is at most the law's at ``p_k+1`` with ``|m|`` at ``p_k``'s smallest (it grows with ``p`` and falls
    with ``|m|``); the largest of those quantiles holds over the whole box. ``smaller(rows)``: ``min(B_i, B_j)``;
    without it, the one point ``beta_i = beta_j = P / 2``."""
    d = v.shape[0]
    upper = np.triu(np.ones((d, d), dtype=bool), 1)
    values = np.zeros((d, d))
    if not upper.any():
        return lambda rows: values[rows]
    r2 = (np.maximum(v, 0.0) / s2**2)[upper]
    P = shift_bound(slice(0, d))[upper] / s
    low = np.minimum(2.0 * smaller(slice(0, d))[upper] / s, P) if smaller is not None else P
    worst = np.zeros_like(r2)
    steps = EDGE_STEPS if smaller is not None else 1
    for k in range(steps):
        p = low + (P - low) * (k + 1) / steps
        m = np.maximum(low + (P - low) * k / steps - low, 0.0)  # the smallest |m| at p_k: p_k - 2 min(B_i, B_j)
        worst = np.maximum(worst, _off_diagonal_solved(r2, (p + m) / 2, alpha, (p - m) / 2))
    each = s2 * (worst - _off_diagonal_solved(r2, np.zeros_like(r2), alpha))
    values[upper] = each
    values.T[upper] = each
    return lambda rows: values[rows]
