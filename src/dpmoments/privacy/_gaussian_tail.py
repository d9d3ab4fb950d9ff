r"""The exact delta of the Gaussian mechanism, evaluated without cancellation.

Balle & Wang (2018, Thm 8): with noise-to-sensitivity ratio ``r = sigma/Delta``,

.. math::

    \delta(r, \varepsilon) = \Phi(a) - e^\varepsilon \Phi(b),\qquad
    a = \tfrac{1}{2r} - \varepsilon r,\quad b = -\tfrac{1}{2r} - \varepsilon r .

Subtracting the two terms loses every digit when they nearly agree (tiny
``1/r``, the regime of tiny epsilon): at (epsilon, delta) = (1e-8, 1e-100)
the naive evaluation is off by a relative 2e-3. We write
``Phi(x) = erfcx(-x/sqrt2) e^{-x^2/2} / 2`` and use ``(a^2 - b^2)/2 = -epsilon``
exactly, which turns the difference into

.. math::

    \delta = \Phi(a)\,\bigl(1 - e^{-g}\bigr),\qquad
    g = \log\operatorname{erfcx}(z - w) - \log\operatorname{erfcx}(z + w) \ge 0,

with ``z = epsilon r / sqrt2`` and ``w = 1/(2 sqrt2 r)``: epsilon has left the
formula and only the gap ``g`` of one smooth function remains. For small
``w`` the gap is the integral of ``p = (log erfcx)'`` over ``[z - w, z + w]``,
computed by Gauss--Legendre quadrature (``p`` is analytic within a distance
about 2 of the real axis, so 12 nodes are exact to rounding for ``w <= 1/4``);
for larger ``w`` it is the plain difference, which then has no cancellation
to speak of. ``p(t) = 2t - 2/(sqrt(pi) erfcx(t))`` itself cancels for large
``t`` and is taken from its asymptotic series there. Everything is returned
as ``log delta`` so that subnormal deltas keep their precision.
"""

import math

import numpy as np

__all__ = ["log_gaussian_delta"]

_SQRT2 = math.sqrt(2.0)
_SQRT_PI = math.sqrt(math.pi)
_NODES, _WEIGHTS = (tuple(float(v) for v in arr) for arr in np.polynomial.legendre.leggauss(12))
_QUADRATURE_HALF_WIDTH = 0.25
_ASYMPTOTIC_FROM = 10.0


def _special():
    """scipy.special, imported by the first calibration: a command that draws no noise never pays its 0.4 s."""
    from scipy import special

    return special


def _log_erfcx(x):
    # erfcx(x) = e^{x^2} erfc(x) overflows for x < -26; its logarithm does not.
    return math.log(_special().erfcx(x)) if x >= 0 else x * x + math.log(_special().erfc(x))


def _slope(t):
    """``p(t) = d/dt log erfcx(t)``, accurate to a few ulps for every real ``t``."""
    if t < _ASYMPTOTIC_FROM:
        return 2.0 * t - 2.0 / (_SQRT_PI * _special().erfcx(t))
    # 1 - sqrt(pi) t erfcx(t) = sum_{n>=1} (-1)^{n+1} (2n-1)!! / (2t^2)^n (asymptotic; 20 terms reach 1e-19 at t=10)
    x = 0.5 / (t * t)
    term, total = x, 0.0
    for n in range(1, 40):
        total += term
        term *= -(2 * n + 1) * x
        if abs(term) <= 1e-18 * abs(total):
            break
    return -2.0 / (_SQRT_PI * _special().erfcx(t)) * total


def _log_gap(z, w, log_w):
    """``log g`` with ``g = log erfcx(z - w) - log erfcx(z + w)``."""
    if w <= _QUADRATURE_HALF_WIDTH:
        s = math.fsum(c * _slope(z + w * x) for x, c in zip(_NODES, _WEIGHTS))  # integral / w
        return log_w + math.log(-s) if s < 0 else -math.inf
    g = _log_erfcx(z - w) - _log_erfcx(z + w)
    return math.log(g) if g > 0 else -math.inf


def _log_one_minus_exp_neg(log_g):
    """``log(1 - e^{-g})`` from ``log g``."""
    if log_g < -700:  # 1 - e^{-g} = g (1 - g/2 + ...), and g/2 is below any float's precision here
        return log_g
    g = math.exp(log_g)
    return math.log(-math.expm1(-g))


def log_gaussian_delta(ratio, epsilon):
    """``log delta`` of the Gaussian mechanism with ``sigma / sensitivity = ratio`` at ``epsilon``.

    ``-inf`` when delta is zero (to float precision: below ``e^-745``).
    """
    if ratio == 0 or math.isinf(1.0 / (2.0 * ratio)):
        return 0.0  # no noise: delta = 1
    if math.isinf(ratio) or math.isinf(epsilon):
        return -math.inf
    log_first = float(_special().log_ndtr(1.0 / (2.0 * ratio) - epsilon * ratio))
    if log_first == -math.inf:
        return -math.inf
    z = epsilon * ratio / _SQRT2
    w = 1.0 / (2.0 * _SQRT2 * ratio)
    log_w = -math.log(2.0 * _SQRT2) - math.log(ratio)
    return log_first + _log_one_minus_exp_neg(_log_gap(z, w, log_w))
