"""Calibration of the exact grid noise (:mod:`dpmoments.mechanisms.grid`).

A real statistic with sensitivity ``Delta`` is rounded to the grid ``2^-k``
and released with exact integer noise. Rounding moves each of the ``m``
coordinates by at most half a grid step on *each* dataset, so the integer
statistic's sensitivity is at most ``2^k Delta_2 + sqrt(m)`` (L2) or
``2^k Delta_1 + m`` (L1), in grid units; :func:`grid_sensitivity` returns
that bound on the real scale, ``Delta + 2^-k sqrt(m)`` or ``Delta + 2^-k m``.
``m`` counts the coordinates that can differ between neighbours (all the
released ones is always safe).

* Discrete Gaussian [CKS20, Thm 14]: noise parameter ``sigma^2`` per
  coordinate on integers at L2 distance ``<= Delta`` gives
  ``Delta^2 / (2 sigma^2)``-zCDP, the same rho as the continuous Gaussian.
  :func:`calibrate_discrete_gaussian` takes the largest rho whose [CKS20]
  conversion fits (epsilon, delta) and sets ``sigma`` from it.
* Discrete Laplace (``P ~ exp(-|x| / t)``) with L1 sensitivity ``Delta``:
  ``(Delta / t)``-DP (the ratio of the two pmfs at any point is at most
  ``exp(|x - x'|_1 / t)``).

Every rounding here goes the safe way: the grid sensitivity is rounded up,
sigma and the scale are rounded up, and the sampler rounds the rational
variance up again (:func:`dpmoments.mechanisms.grid.rational_scale`).

References
----------
.. [CKS20] C. Canonne, G. Kamath and T. Steinke. The discrete Gaussian for
   differential privacy. NeurIPS 2020 (arXiv 2004.00010).
"""

import math
from fractions import Fraction

from .._validation import check_delta, check_epsilon, check_int, check_option, check_positive
from .calibration import _largest_rho  # one search for "the largest rho that fits", shared
from .conversions import MIN_NORMAL, sqrt_up
from .guarantees import ApproxDP, PureDP

__all__ = [
    "grid_sensitivity",
    "grid_exponent",
    "calibrate_discrete_gaussian",
    "calibrate_discrete_laplace",
]

# Relative margin by which float results are pushed up (the float ops below are a few ulps off).
_UP = 1.0 + 1e-12


def _check_k(k):
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"'k' must be an integer (the grid is 2**-k); got {type(k).__name__} {k!r}.")
    if not -1000 <= k <= 1000:
        raise ValueError(f"'k' must be in [-1000, 1000]; got {k}.")
    return k


def grid_sensitivity(sensitivity, k, n_coordinates, norm="l2"):
    """The sensitivity, on the real scale, of a statistic after rounding to the grid ``2^-k``.

    Parameters
    ----------
    sensitivity : float > 0
        Sensitivity of the unrounded statistic (in its own norm).
    k : int
        Grid exponent.
    n_coordinates : int >= 1
        Number ``m`` of coordinates that can change between neighbours.
    norm : {"l2", "l1"}

    Returns
    -------
    float
        ``sensitivity + 2^-k sqrt(m)`` (L2) or ``sensitivity + 2^-k m``
        (L1), rounded up. Multiply by ``2^k`` for grid units.

    Notes
    -----
    Proof: with ``g = round(2^k q)``, ``|g_j(D) - 2^k q_j(D)| <= 1/2`` for
    both datasets, so ``|g_j(D) - g_j(D')| <= 2^k |q_j(D) - q_j(D')| + 1``;
    take the L2 (Minkowski) or L1 norm over the ``m`` coordinates.

    Examples
    --------
    >>> grid_sensitivity(1.0, 10, 100) > 1.0 + 10 / 1024
    True
    >>> grid_sensitivity(1.0, 10, 100, norm="l1") >= 1.0 + 100 / 1024
    True
    """
    sensitivity = check_positive(sensitivity, "sensitivity")
    k = _check_k(k)
    m = check_int(n_coordinates, "n_coordinates", minimum=1)
    norm = check_option(norm, "norm", ("l1", "l2"))
    extra = math.sqrt(m) if norm == "l2" else float(m)
    try:
        sens = (sensitivity + math.ldexp(extra, -k)) * _UP
    except OverflowError:
        sens = math.inf
    return _representable(sens, f"the grid sensitivity of 'sensitivity' = {sensitivity:g} on the grid 2^-{k}")


def _representable(value, what):
    """A computed scale, refused in one line where it left the normal floats."""
    if not math.isfinite(value):
        raise ValueError(f"{what} overflows the float range.")
    if value < MIN_NORMAL:
        raise ValueError(f"{what} underflows the float range.")
    return value


def grid_exponent(sensitivity, n_coordinates, relative_increase=1e-3, norm="l2"):
    """The smallest grid exponent ``k`` whose rounding raises the sensitivity by at most ``relative_increase``.

    That is the smallest ``k >= 0`` with ``2^-k sqrt(m) <= relative_increase
    * sensitivity`` (``m`` for ``norm="l1"``). A finer grid costs nothing in
    privacy but makes the integers (and the exact arithmetic) larger.

    Examples
    --------
    >>> grid_exponent(1.0, 20_100)   # d = 200 upper triangle: 2^-18 sqrt(m) ~ 5.4e-4
    18
    """
    sensitivity = check_positive(sensitivity, "sensitivity")
    m = check_int(n_coordinates, "n_coordinates", minimum=1)
    relative_increase = check_positive(relative_increase, "relative_increase")
    norm = check_option(norm, "norm", ("l1", "l2"))
    extra = math.sqrt(m) if norm == "l2" else float(m)
    # In logarithms: relative_increase * sensitivity may underflow, and the ratio overflow.
    k = max(0, math.ceil(math.log2(extra) - math.log2(relative_increase) - math.log2(sensitivity)))
    if k > 1000:
        raise ValueError(f"'sensitivity' = {sensitivity:g} is too small for a grid 2^-k with k <= 1000.")
    while k < 1000 and math.ldexp(extra, -k) > relative_increase * sensitivity:
        k += 1
    return k


def calibrate_discrete_gaussian(epsilon, delta, sensitivity, k, n_coordinates):
    """Discrete Gaussian noise on the grid ``2^-k`` for an (epsilon, delta) release.

    Parameters
    ----------
    epsilon : float in (0, inf]
    delta : float in (0, 1)
    sensitivity : float > 0
        L2 sensitivity of the *unrounded* statistic, on the coordinates the
        noise acts on (e.g. the upper triangle of a symmetric matrix).
    k : int
        Grid exponent (see :func:`grid_exponent`).
    n_coordinates : int
        Coordinates rounded and released (``d(d+1)/2`` for a symmetric
        ``d x d`` matrix).

    Returns
    -------
    sigma : float
        Real-scale sigma for :func:`dpmoments.mechanisms.grid.grid_noise`
        / ``grid_release`` with the same ``k``; ``0.0`` when ``epsilon = inf``.
    guarantee : ApproxDP
        ``ApproxDP(epsilon, delta, rho=rho)``, where ``rho`` is the largest
        zCDP parameter whose [CKS20] conversion gives (epsilon, delta) and
        ``sigma^2 4^k >= Delta_grid^2 / (2 rho)`` exactly (Delta_grid =
        ``2^k Delta + sqrt(m)``, :func:`grid_sensitivity` in grid units), so
        the release is rho-zCDP [CKS20, Thm 14].

    Examples
    --------
    >>> sigma, g = calibrate_discrete_gaussian(1.0, 1e-6, 1.0, k=20, n_coordinates=10)
    >>> round(sigma, 3), g.epsilon, g.delta
    (4.531, 1.0, 1e-06)
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    k = _check_k(k)
    sens = grid_sensitivity(sensitivity, k, n_coordinates, norm="l2")
    if math.isinf(epsilon):
        return 0.0, PureDP(math.inf)
    rho = _largest_rho(epsilon, delta)
    delta_grid = Fraction(sens) * Fraction(2) ** k  # grid units, already rounded up
    variance_grid = delta_grid * delta_grid / (2 * Fraction(rho))
    what = f"the discrete Gaussian sigma for 'epsilon' = {epsilon:g} with 'sensitivity' = {sensitivity:g} on 2^-{k}"
    try:
        sigma = math.ldexp(sqrt_up(variance_grid), -k)  # exact power-of-two scaling
    except OverflowError:
        sigma = math.inf
    sigma = _representable(sigma, what)  # a normal float: ldexp scaled it exactly
    return sigma, ApproxDP(epsilon, delta, rho=rho)


def calibrate_discrete_laplace(epsilon, sensitivity_l1, k, n_coordinates):
    """Discrete Laplace noise on the grid ``2^-k`` for an epsilon-DP release.

    Parameters
    ----------
    epsilon : float in (0, inf]
    sensitivity_l1 : float > 0
        L1 sensitivity of the unrounded statistic on the released coordinates.
    k : int
    n_coordinates : int

    Returns
    -------
    scale : float
        Real-scale ``b`` (``P ~ exp(-|x| / b)``) for ``grid_noise(...,
        distribution="laplace")``: ``b 2^k >= (2^k Delta_1 + m) / epsilon``.
    guarantee : PureDP

    Examples
    --------
    >>> b, g = calibrate_discrete_laplace(1.0, 2.0, k=10, n_coordinates=3)
    >>> b >= 2.0 + 3 / 1024, str(g)
    (True, '1-DP')
    """
    epsilon = check_epsilon(epsilon)
    k = _check_k(k)
    sens = grid_sensitivity(sensitivity_l1, k, n_coordinates, norm="l1")
    if math.isinf(epsilon):
        return 0.0, PureDP(math.inf)
    what = f"the discrete Laplace scale for 'epsilon' = {epsilon:g} with 'sensitivity_l1' = {sensitivity_l1:g}"
    scale = _representable((sens / epsilon) * _UP, what)
    while Fraction(scale) * Fraction(epsilon) < Fraction(sens):  # exact check: scale >= sens / epsilon
        scale = math.nextafter(scale, math.inf)
    return _representable(scale, what), PureDP(epsilon)
