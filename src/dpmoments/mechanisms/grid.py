"""Exact noise on the grid 2^-k: a statistic rounded to integers, integer noise added, scaled back.

The steps around the exact samplers of :mod:`dpmoments.mechanisms.discrete` (whose docstring gives
the privacy analysis): :func:`to_grid` rounds the statistic to :math:`2^{-k}\\mathbb{Z}`,
:func:`rational_scale` turns a real noise scale into the samplers' exact parameter, and
:func:`grid_release` adds the integer noise in int64 and scales the sum back, so that the output is
post-processing of an exactly private integer vector. :func:`grid_noise`,
:func:`grid_integer_noise` and :func:`secure_symmetric_matrix_noise` give the noise alone.
"""

import math
import numbers
from fractions import Fraction

import numpy as np

from .._validation import check_int, check_option
from .discrete import (DISTRIBUTIONS, _INT_LIMIT, _discrete_gaussian_one, _discrete_laplace_one, _fill,
                       _randbelow_fn, _rational, _source)
from .noise import _check_shape

__all__ = [
    "rational_scale",
    "to_grid",
    "grid_noise",
    "grid_integer_noise",
    "grid_release",
    "secure_symmetric_matrix_noise",
]

# Scales on the grid are rounded UP to a multiple of 2**-_SCALE_BITS: more noise, never less,
# and denominators small enough that the exact integer arithmetic stays cheap.
_SCALE_BITS = 16


def _check_k(k):
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"'k' must be an integer (the grid is 2**-k); got {type(k).__name__} {k!r}.")
    if not -1000 <= k <= 1000:
        raise ValueError(f"'k' must be in [-1000, 1000]; got {k}.")
    return int(k)


def _round_up(value, bits=_SCALE_BITS):
    """The smallest multiple of 2**-bits that is >= ``value`` (a Fraction)."""
    unit = 1 << bits
    return Fraction(-((-value.numerator * unit) // value.denominator), unit)


def rational_scale(sigma, k, distribution="gaussian"):
    """The exact parameter of the integer sampler for a real noise scale ``sigma`` on the grid 2^-k.

    ``"gaussian"``: the variance ``sigma^2 4^k``; ``"laplace"``: the scale
    ``sigma 2^k``. Both are computed exactly from the float ``sigma`` and
    rounded **up** to a multiple of ``2^-16`` (more noise, never less, so the
    calibrated guarantee still holds).

    Examples
    --------
    >>> rational_scale(1.5, 3)
    Fraction(144, 1)
    >>> rational_scale(0.1, 0, "laplace") >= Fraction(1, 10)
    True
    """
    sigma = _rational(sigma, "sigma")
    k = _check_k(k)
    distribution = check_option(distribution, "distribution", DISTRIBUTIONS)
    grid = Fraction(2) ** k
    exact = sigma * sigma * grid * grid if distribution == "gaussian" else sigma * grid
    return _round_up(exact)


def to_grid(values, k):
    """Round ``values`` to the nearest multiple of ``2^-k``: integers ``g`` with ``values ~ g 2^-k``.

    ``|g - values 2^k| <= 1/2`` per entry (ties to even), so the L2
    sensitivity of ``g`` is at most ``2^k Delta_2 + sqrt(m)`` over ``m``
    coordinates that can change (module docstring).

    Returns
    -------
    g : ndarray of int64
    scale : float
        ``2.0 ** -k``; ``g * scale`` is the rounded statistic.

    Examples
    --------
    >>> g, scale = to_grid([0.3, -1.26], 2)
    >>> g.tolist(), scale
    ([1, -5], 0.25)
    """
    k = _check_k(k)
    arr = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError("'values' must be finite to be rounded to the grid.")
    scaled = np.rint(np.ldexp(arr, k))  # multiplying by 2**k is exact (barring overflow)
    if scaled.size and np.max(np.abs(scaled)) >= 2.0**62:
        raise OverflowError(f"values * 2**{k} do not fit in int64; use a smaller k.")
    return scaled.astype(np.int64), 2.0**-k


def _integer_noise(count, sigma, k, distribution, rng):
    param = rational_scale(sigma, k, distribution)
    randbelow = _randbelow_fn(_source(rng))
    p, q = param.numerator, param.denominator
    if distribution == "gaussian":
        draw = lambda: _discrete_gaussian_one(p, q, randbelow)  # noqa: E731
    else:
        draw = lambda: _discrete_laplace_one(p, q, randbelow)  # noqa: E731
    return _fill((count,), count, draw)


def grid_integer_noise(shape, sigma, k, distribution="gaussian", rng=None):
    """Integer noise for the grid ``2^-k``: the draws behind :func:`grid_noise`, as int64.

    ``"gaussian"``: discrete Gaussian with parameter ``sigma^2 4^k`` (rounded
    up); ``"laplace"``: discrete Laplace with scale ``sigma 2^k`` (rounded
    up). Add them to :func:`to_grid`'s integers.
    """
    shape = _check_shape(shape)
    distribution = check_option(distribution, "distribution", DISTRIBUTIONS)
    return _integer_noise(math.prod(shape), sigma, k, distribution, rng).reshape(shape)


def grid_noise(shape, sigma, k, distribution="gaussian", rng=None):
    """Exact noise on the grid ``2^-k`` as floats: integer noise times ``2^-k``.

    Parameters
    ----------
    shape : int or tuple of int
    sigma : float
        Real-scale noise: the discrete Gaussian's ``sigma`` (standard
        deviation parameter) or the discrete Laplace's scale ``b``
        (``P ~ exp(-|x| / b)``). Converted exactly and rounded up on the
        grid (:func:`rational_scale`).
    k : int
        Grid exponent: the noise takes values in ``2^-k Z``.
    distribution : {"gaussian", "laplace"}
    rng : None or random.Random
        ``None``: the OS CSPRNG (secure); a seeded ``random.Random`` is for
        tests only (insecure).

    Returns
    -------
    ndarray of float64
        Multiples of ``2^-k`` (exact while ``|noise| 2^k < 2^53``).

    Notes
    -----
    Adding these floats to an *unrounded* float statistic is exactly the
    floating-point addition this module exists to avoid. Add them to the
    rounded statistic ``to_grid(values, k)[0] * 2^-k`` (IEEE addition is
    correctly rounded, so the float sum of two grid values is a function of
    their exact sum only), or use :func:`grid_release`.

    Examples
    --------
    >>> import random
    >>> E = grid_noise((2, 2), sigma=1.0, k=10, rng=random.Random(0))
    >>> bool(np.all(E * 1024 == np.round(E * 1024)))
    True
    """
    return np.ldexp(grid_integer_noise(shape, sigma, k, distribution, rng).astype(np.float64), -_check_k(k))


def _symmetric_integer_noise(d, sigma, k, distribution, rng):
    d = check_int(d, "d", minimum=1)
    distribution = check_option(distribution, "distribution", DISTRIBUTIONS)
    rows, cols = np.triu_indices(d)
    values = _integer_noise(rows.size, sigma, k, distribution, rng)
    Z = np.empty((d, d), dtype=np.int64)
    Z[rows, cols] = values
    Z[cols, rows] = values
    return Z


def secure_symmetric_matrix_noise(d, sigma, k, distribution="gaussian", rng=None):
    """A symmetric (d, d) matrix of exact grid noise: upper triangle drawn, mirrored.

    The ``d(d+1)/2`` entries with ``i <= j`` are drawn i.i.d. in the order of
    :func:`~dpmoments.mechanisms.upper_triangle` (as
    :func:`~dpmoments.mechanisms.symmetric_matrix_noise` does) and mirrored,
    so ``E == E.T`` exactly; entries are multiples of ``2^-k``. Calibrate
    ``sigma`` on the upper-triangle coordinates with ``m = d(d+1)/2``
    (:func:`dpmoments.privacy.calibrate_discrete_gaussian`), and add the
    result to the *rounded* statistic (:func:`grid_release` does both).

    Examples
    --------
    >>> import random
    >>> E = secure_symmetric_matrix_noise(4, 2.0, 8, rng=random.Random(0))
    >>> bool((E == E.T).all())
    True
    """
    k = _check_k(k)
    return np.ldexp(_symmetric_integer_noise(d, sigma, k, distribution, rng).astype(np.float64), -k)


def grid_release(values, sigma, k, distribution="gaussian", rng=None, symmetric=False):
    """Release ``values`` with exact grid noise: ``(to_grid(values, k) + Z) * 2^-k``.

    The noise is added to the rounded statistic in int64, so the output is a
    post-processing of an exactly private integer vector (module docstring).

    Parameters
    ----------
    values : array-like
        The statistic (float). With ``symmetric=True`` a square matrix
        (symmetrise it first): noise is drawn on the upper triangle and
        mirrored.
    sigma, k, distribution, rng
        As in :func:`grid_noise`.
    symmetric : bool, default=False

    Returns
    -------
    ndarray of float64, shape of ``values``

    Examples
    --------
    >>> import random
    >>> out = grid_release([[2.0, 1.0], [1.0, 3.0]], 0.5, 6, rng=random.Random(0), symmetric=True)
    >>> bool((out == out.T).all())
    True
    """
    k = _check_k(k)
    distribution = check_option(distribution, "distribution", DISTRIBUTIONS)
    g, _ = to_grid(values, k)
    if symmetric:
        if g.ndim != 2 or g.shape[0] != g.shape[1]:
            raise ValueError(f"'values' must be a square matrix with symmetric=True; got shape {g.shape}.")
        Z = _symmetric_integer_noise(g.shape[0], sigma, k, distribution, rng)
    else:
        Z = _integer_noise(g.size, sigma, k, distribution, rng).reshape(g.shape)
    total = g + Z
    if total.size and np.max(np.abs(total)) >= _INT_LIMIT:
        raise OverflowError("the noisy integers overflow int64; use a smaller k.")
    return np.ldexp(total.astype(np.float64), -k)
