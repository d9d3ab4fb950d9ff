r"""Quantiles of a released covariance entry's error when it is centred at a private mean.

About a private centre :math:`\hat m = \bar x + e`, :math:`e \sim N(0, s^2 I)` (the ``"mean"``
part's noise), the second moment is the one about :math:`\bar x` plus :math:`e e^\top`. Beside
a normal part :math:`N \sim N(0, v)` (the added noise, and sampling where counted) an entry's
error is therefore

- off the diagonal, :math:`N + s^2 Z_1 Z_2`: given :math:`Z_1` it is :math:`N(0, v + s^4 Z_1^2)`,
  so :math:`P(|N + s^2 Z_1 Z_2| > t) = E\,2\bar\Phi(t / \sqrt{v + s^4 Z_1^2})`;
- on the diagonal, :math:`N + s^2 Z^2`: given :math:`Z` it is :math:`N(s^2 Z^2, v)`, so
  :math:`P(N + s^2 Z^2 \le t) = E\,\Phi((t - s^2 Z^2)/\sqrt v)`.

Both expectations are over one standard normal (Gauss-Hermite nodes), so the quantiles are exact for
Gaussian noise up to the quadrature (:func:`diagonal_quantiles` says where it conditions on :math:`N`).
A normal approximation with the product's variance (:math:`s^4`, :math:`2 s^4`) is far too short at
the levels a false-coverage-rate adjustment asks for (0.999 and beyond: the product of two normals
and :math:`\chi^2_1` have much heavier tails).
Post-processing of public scales only: no data.
"""

import numpy as np

from .._lazy import lazy_module

special = lazy_module("scipy.special")  # imported when an interval is first computed

__all__ = ["off_diagonal_half_width", "off_diagonal_ratio", "off_diagonal_table", "diagonal_quantiles", "KNOTS",
           "centre_norm_bound"]

_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(96)  # E f(Z) = sum w f(x) / sqrt(2 pi)
_WEIGHTS = _WEIGHTS / np.sqrt(2.0 * np.pi)
KNOTS = _KNOTS = 64  # ratios sqrt(v) / s^2 at which the off-diagonal quantile is solved, then interpolated
_STEPS = 36  # bisection steps: the bracket shrinks by 2^-36
_SHARP = 0.6  # below this sqrt(v) / s^2 the diagonal's law given Z is too sharp for the nodes: given N instead


def _bisect(tail, low, high):
    """The root of the decreasing ``tail(t) - 0`` in ``[low, high]``, elementwise (arrays)."""
    for _ in range(_STEPS):
        mid = (low + high) / 2
        above = tail(mid) > 0
        low, high = np.where(above, mid, low), np.where(above, high, mid)
    return (low + high) / 2


def off_diagonal_half_width(v, s, alpha, table=None):
    """``t`` with ``P(|N(0, v) + s^2 Z_1 Z_2| > t) = alpha`` (``v`` an array, ``s`` and ``alpha`` numbers).

    ``t = s^2 h(sqrt(v) / s^2)``: ``h`` is solved at each ratio, or, for more than ``_KNOTS`` entries, at
    ``_KNOTS`` ratios spanning those asked for and interpolated in the log of the ratio (smooth there; a
    d = 100 matrix asks for 4950 entries). ``table``: :func:`off_diagonal_table` of the span of a larger set
    of entries than ``v`` (one block of them at a time: the same values as all at once).
    """
    v = np.asarray(v, dtype=float)
    s2 = float(s) ** 2
    if s2 == 0.0:
        return np.sqrt(v) * special.ndtri(1 - alpha / 2)
    ratio = np.sqrt(np.maximum(v, 0.0)) / s2
    if table is None and ratio.size <= _KNOTS:  # few entries: each solved itself
        return s2 * _off_diagonal_solved(np.maximum(ratio, 1e-4) ** 2, alpha)
    log_knots, h = off_diagonal_table(float(ratio.min(initial=1.0)), float(ratio.max(initial=1.0)), alpha) \
        if table is None else table
    return s2 * np.interp(np.log(np.maximum(ratio, 1e-4)), log_knots, h)


def off_diagonal_table(smallest, largest, alpha):
    """``(log knots, h)``: :func:`off_diagonal_half_width`'s quantiles over ratios ``sqrt(v) / s^2`` from ``smallest``
    to ``largest`` (each taken with 1 and floored at ``1e-4``, as there)."""
    low, high = max(min(smallest, 1.0), 1e-4), max(max(largest, 1.0), 1e-4)
    knots = np.unique(np.geomspace(low, high, _KNOTS) if high > low * 1.0001 else np.array([low]))
    return np.log(knots), _off_diagonal_solved(knots**2, alpha)


def off_diagonal_ratio(v, s):
    """The ratio ``sqrt(v) / s^2`` of :func:`off_diagonal_half_width` (monotone in ``v``: its extremes are those of
    the extremes of ``v``, bit for bit)."""
    return float(np.sqrt(max(float(v), 0.0)) / float(s) ** 2)


def _off_diagonal_solved(v, alpha):
    """``t`` with ``P(|N(0, v) + Z_1 Z_2| > t) = alpha`` by bisection, elementwise."""
    var = np.maximum(v[..., None] + _NODES**2, 1e-300)  # given Z_1 at each node

    def tail(t):
        return (2.0 * special.ndtr(-t[..., None] / np.sqrt(var))) @ _WEIGHTS - alpha

    high = (np.sqrt(v) + 40.0) * (special.ndtri(1 - alpha / 2) + 1.0)
    return _bisect(tail, np.zeros_like(v), high)


def diagonal_quantiles(v, s, alpha):
    """``(q_lo, q_hi)`` with ``P(N(0, v) + s^2 Z^2 < q_lo) <= alpha / 2`` and ``P(N(0, v) + s^2 Z^2 > q_hi)``
    equal to ``alpha / 2``.

    Where ``sqrt(v) >= 0.6 s^2`` both are exact, given ``Z`` at the nodes. Below, the law given ``Z`` is
    too sharp for them: ``q_hi`` is computed given ``N`` instead (the chi-square's distribution function is
    smooth over the range of ``N`` that far up), and ``q_lo`` is the normal's own, which is lower than the
    exact one (``s^2 Z^2 >= 0``), hence conservative.
    """
    v = np.asarray(v, dtype=float)
    sd, s2 = np.sqrt(np.maximum(v, 0.0)), float(s) ** 2
    z = float(special.ndtri(1 - alpha / 2))
    q_lo, q_hi = -z * sd, z * sd
    if s2 == 0.0:
        return q_lo, q_hi
    wide = sd >= _SHARP * s2
    low, high = -(z + 1.0) * sd - 1e-300, (z + 1.0) * sd + s2 * (z + 1.0) ** 2 * 4.0 + 1e-300
    if wide.any():  # P(N + s^2 Z^2 > t), given Z at the nodes
        w = sd[wide][:, None]

        def above_z(t):
            return special.ndtr((s2 * _NODES**2 - t[:, None]) / w) @ _WEIGHTS

        q_hi[wide] = _bisect(lambda t: above_z(t) - alpha / 2, low[wide], high[wide])
        q_lo[wide] = _bisect(lambda t: above_z(t) - (1 - alpha / 2), low[wide], high[wide])
    if (~wide).any():  # given N at the nodes: P(Z^2 > x) = erfc(sqrt(x / 2))
        w = sd[~wide][:, None]

        def above_n(t):
            return special.erfc(np.sqrt(np.maximum((t[:, None] - w * _NODES) / s2, 0.0) / 2.0)) @ _WEIGHTS

        q_hi[~wide] = _bisect(lambda t: above_n(t) - alpha / 2, low[~wide], high[~wide])
    return q_lo, q_hi


def centre_norm_bound(s, weights, tail):
    r"""An upper bound on :math:`\sum_i a_i e_i^2` (``a = weights``) exceeded with probability at most ``tail``, for
    the private centre's noise :math:`e \sim N(0, s^2 I)` (the mean is a Gaussian release: private choices take zCDP
    laws only, ``moments/private_release.py``): Laurent & Massart (2000, Lemma 1),
    :math:`P(\sum a_i (Z_i^2 - 1) \ge 2 \|a\|_2 \sqrt x + 2 \|a\|_\infty x) \le e^{-x}`. With ``a`` the squared column
    scales it bounds the squared norm of the centre's error in the data's units: the largest eigenvalue of the
    rank-one term :math:`e e^\top` the second moment about the centre carries."""
    a = float(s) ** 2 * np.asarray(weights, dtype=float)
    if a.size == 0 or not np.any(a > 0):
        return 0.0
    x = float(np.log(1.0 / tail))
    return float(np.sum(a) + 2.0 * np.linalg.norm(a) * np.sqrt(x) + 2.0 * np.max(a) * x)
