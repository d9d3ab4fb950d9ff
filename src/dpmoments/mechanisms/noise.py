"""I.i.d. Gaussian and Laplace noise arrays.

These are the raw noise draws behind the Gaussian and Laplace mechanisms. They
know nothing of epsilon, delta or sensitivity: the caller (``moments/``)
chooses the scale from a calibration in ``privacy/`` and records the guarantee.

Floating-point noise is "idealised numerics" (Mironov 2012): the draws come
from NumPy's (non-cryptographic) ``Generator``, see :mod:`dpmoments._rng`.
"""

import numbers

from .._rng import as_generator
from .._validation import check_positive

__all__ = ["gaussian_noise", "laplace_noise"]


def _check_shape(shape, name="shape"):
    """Normalise an array shape: a non-negative int or a tuple of them.

    Parameters
    ----------
    shape : int or tuple of int
        Each entry must be an integer >= 0.
    name : str, default="shape"
        Parameter name used in error messages.

    Returns
    -------
    shape : tuple of int

    Examples
    --------
    >>> _check_shape(3)
    (3,)
    >>> _check_shape((2, 4))
    (2, 4)
    """
    entries = shape if isinstance(shape, tuple) else (shape,)
    for entry in entries:
        if isinstance(entry, bool) or not isinstance(entry, numbers.Integral):
            raise TypeError(
                f"'{name}' must be a non-negative int or a tuple of them; "
                f"got {type(shape).__name__} {shape!r}."
            )
        if entry < 0:
            raise ValueError(f"'{name}' must have entries >= 0; got {shape!r}.")
    return tuple(int(entry) for entry in entries)


def gaussian_noise(shape, sigma, rng=None):
    """Draw i.i.d. centred Gaussian noise.

    Each entry is :math:`N(0, \\sigma^2)`.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the returned array.
    sigma : float
        Standard deviation, finite and > 0.
    rng : None, int, SeedSequence or numpy.random.Generator, default=None
        Source of randomness; ``None`` draws fresh OS entropy.

    Returns
    -------
    noise : ndarray of shape ``shape``

    Examples
    --------
    >>> z = gaussian_noise((2, 3), sigma=0.5, rng=0)
    >>> z.shape
    (2, 3)
    """
    shape = _check_shape(shape)
    sigma = check_positive(sigma, "sigma")
    return as_generator(rng).normal(0.0, sigma, size=shape)


def laplace_noise(shape, scale, rng=None):
    """Draw i.i.d. centred Laplace noise.

    Each entry has density :math:`\\exp(-|x|/b) / (2b)` with :math:`b` =
    ``scale`` (variance :math:`2b^2`).

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the returned array.
    scale : float
        Laplace scale :math:`b`, finite and > 0.
    rng : None, int, SeedSequence or numpy.random.Generator, default=None
        Source of randomness; ``None`` draws fresh OS entropy.

    Returns
    -------
    noise : ndarray of shape ``shape``

    Examples
    --------
    >>> w = laplace_noise(4, scale=2.0, rng=0)
    >>> w.shape
    (4,)
    """
    shape = _check_shape(shape)
    scale = check_positive(scale, "scale")
    return as_generator(rng).laplace(0.0, scale, size=shape)
