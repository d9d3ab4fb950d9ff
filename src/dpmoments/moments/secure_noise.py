"""``secure=True`` releases: exact discrete noise on a 2^-k grid from the OS CSPRNG.

Float Laplace and Gaussian noise from numpy leaks through rounding of its
low-order bits (Mironov 2012; our audits measured it, docs/privacy.md). With
``secure=True`` the statistic is rounded to the grid ``2^-k``, exact discrete
Gaussian (zCDP) or discrete Laplace (pure DP) integers are added in integer
arithmetic, and the result is scaled back: a post-processing of an exactly
private integer vector (Canonne, Kamath & Steinke 2020). Rounding adds at
most ``2^-k sqrt(m)`` to the L2 sensitivity over ``m`` coordinates
(``2^-k m`` to L1); ``k`` is chosen so this costs at most 0.1%.
"""

import math
import random

from ..mechanisms.discrete import is_secure_source
from ..mechanisms.grid import grid_release
from ..mechanisms.laws import DISCRETE, DISCRETE_GAUSSIAN, DISCRETE_LAPLACE, offered
from ..privacy.discrete import calibrate_discrete_gaussian, calibrate_discrete_laplace, grid_exponent

__all__ = ["secure_noisy"]

# Each exact discrete law's calibration on the grid 2^-k over m coordinates: (scale, guarantee).
_CALIBRATE = {
    DISCRETE_GAUSSIAN: lambda epsilon, delta, sens, k, m: calibrate_discrete_gaussian(epsilon, delta, sens, k, m),
    DISCRETE_LAPLACE: lambda epsilon, delta, sens, k, m: calibrate_discrete_laplace(epsilon, sens, k, m),
}


def _check_rng(rng):
    if rng is not None and not isinstance(rng, random.Random):
        raise TypeError(
            "with secure=True, 'rng' must be None (the OS CSPRNG) or, for tests only, a random.Random "
            f"(seeded, hence insecure); got {type(rng).__name__}. Seeds and numpy generators are not "
            "cryptographic."
        )
    return rng


def secure_noisy(values, *, sensitivity_of, epsilon, delta, mechanism, symmetric, rng):
    """Exact grid noise for a released statistic; returns ``(noisy, release fields)``.

    Parameters
    ----------
    values : ndarray
        The exact statistic (a symmetric matrix when ``symmetric``).
    sensitivity_of : callable
        ``norm -> sensitivity`` of the statistic on its released coordinates.
    epsilon, delta, mechanism, rng
        ``mechanism`` is :data:`~dpmoments.mechanisms.laws.GAUSSIAN` (zCDP-calibrated discrete
        Gaussian) or :data:`~dpmoments.mechanisms.laws.LAPLACE` (discrete Laplace).
    symmetric : bool
        Draw on the upper triangle and mirror.
    """
    discrete = DISCRETE.get(mechanism)
    if discrete is None:
        raise ValueError(f"secure=True supports mechanism {offered(DISCRETE)}; got {str(mechanism)!r}.")
    rng = _check_rng(rng)
    d = values.shape[0]
    m = d * (d + 1) // 2 if symmetric else values.size
    norm = discrete.norm
    sens = sensitivity_of(norm)
    k = grid_exponent(sens, m, norm=norm)
    scale, guarantee = _CALIBRATE[discrete](epsilon, delta, sens, k, m)
    noisy = grid_release(values, scale, k, distribution=discrete.family, rng=rng, symmetric=symmetric)
    fields = dict(
        mechanism=discrete.name, noise_scale=scale, sensitivity=sens, sensitivity_norm=norm,
        guarantee=guarantee, calibration="zcdp" if discrete.zcdp else None,
        noise_grid=math.ldexp(1.0, -k), randomness="os-entropy" if is_secure_source(rng) else "seeded",
    )
    return noisy, fields
