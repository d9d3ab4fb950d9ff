"""Exact discrete Gaussian and discrete Laplace samplers, behind the noise on a 2^-k grid.

The float samplers of :mod:`dpmoments.mechanisms.noise` draw noise with
NumPy and add it in floating point. That is "idealised numerics": Mironov
(CCS 2012, "On significance of the least significant bits for differential
privacy") showed that the set of doubles a float Laplace sampler can return
depends on the true value, so that the low-order bits of ``exact + noise``
can identify the input; our own release audits saw such a leak
(``docs/privacy.md``, "Randomness and floating point"). The samplers here
avoid floating point altogether:

1. the statistic is rounded to the grid :math:`2^{-k}\\mathbb{Z}`
   (:func:`~dpmoments.mechanisms.grid.to_grid`), a deterministic map to integers;
2. integer noise is drawn *exactly*, with rational arithmetic on Python
   integers only, from the discrete Gaussian or discrete Laplace
   (Canonne, Kamath & Steinke 2020, Algorithms 1--3);
3. the integers are added, and the sum is scaled back by :math:`2^{-k}`
   (:func:`~dpmoments.mechanisms.grid.grid_release`). Everything after step 3's integer addition is
   post-processing of an exactly private integer vector.

Randomness: a cryptographic source
----------------------------------
``rng=None`` (the only secure mode) draws from :class:`random.SystemRandom`,
which reads the operating system's CSPRNG (``os.urandom``, as ``secrets``
does). NumPy's ``Generator`` is *not* used: PCG64 is a statistical generator,
not a cryptographic one (its state can be recovered from its outputs), and a
seeded generator is predictable by anyone who knows or guesses the seed,
which removes the privacy entirely. For tests only, ``rng`` may be a seeded
:class:`random.Random` instance: reproducible and therefore **insecure**;
:func:`is_secure_source` tells the two apart for privacy reports. NumPy
generators and integer seeds are refused so that no one gets a seeded run by
accident.

Privacy analysis (what is proved, and under which hypotheses)
-------------------------------------------------------------
Let :math:`q` map datasets to :math:`\\mathbb{R}^m` with L2 sensitivity
:math:`\\Delta_2` and L1 sensitivity :math:`\\Delta_1` (over the neighbour
relation of the caller, e.g. replace-one), and let
:math:`g(D) = \\mathrm{round}(2^k q(D)) \\in \\mathbb{Z}^m` (nearest integer,
any tie rule).

* **Rounding.** :math:`|g_j(D) - 2^k q_j(D)| \\le 1/2` for every coordinate,
  so by the triangle inequality
  :math:`|g_j(D) - g_j(D')| \\le 2^k |q_j(D) - q_j(D')| + 1`, and
  :math:`\\|g(D) - g(D')\\|_2 \\le 2^k \\Delta_2 + \\sqrt{m}`,
  :math:`\\|g(D) - g(D')\\|_1 \\le 2^k \\Delta_1 + m` (in grid units).
  On the real scale the sensitivity grows by at most :math:`2^{-k}\\sqrt{m}`
  (L2) or :math:`2^{-k} m` (L1). Only coordinates that can differ between
  neighbours count in ``m`` (a coordinate equal on both datasets rounds to
  the same integer); ``m`` = all released coordinates is always safe.
* **Discrete Gaussian** (CKS20, Thm 14, the multivariate form of Thm 4 /
  Cor. 9): for :math:`x, x' \\in \\mathbb{Z}^m` with
  :math:`\\|x - x'\\|_2 \\le \\Delta`, adding independent
  :math:`\\mathcal{N}_{\\mathbb{Z}}(0, \\sigma^2)` to each coordinate gives
  :math:`\\frac{\\Delta^2}{2\\sigma^2}`-zCDP. Here :math:`\\sigma^2` is the
  *parameter* of the law :math:`P(x) \\propto e^{-x^2/(2\\sigma^2)}`; its
  actual variance is slightly below :math:`\\sigma^2` (CKS20, Cor. 9).
  Hence :math:`g(D) + Z` is :math:`\\rho`-zCDP with
  :math:`\\rho = (2^k\\Delta_2 + \\sqrt m)^2 / (2\\sigma_{grid}^2)`.
* **Discrete Laplace**: with :math:`P(x) \\propto e^{-|x|/t}` per coordinate,
  :math:`P(x)/P(x') \\le e^{|x - x'|/t}`, so :math:`g(D) + Z` is
  :math:`(2^k\\Delta_1 + m)/t`-DP.
* **Post-processing.** The released floats :math:`(g + Z)\\, 2^{-k}` are a
  deterministic function of the integer vector :math:`g + Z` (exactly so
  while :math:`|g + Z| < 2^{53}`; beyond that the int -> float conversion is
  still a fixed rounding of that integer), so they carry the same guarantee.

These statements assume the samplers are exact (they are: only integer
arithmetic and uniform integers from the source) and the source is uniform
(true for the OS CSPRNG up to its cryptographic assumptions). They do not
cover timing side channels: the samplers' running time depends on the
noise drawn (CKS20 §5.3 discuss this), though not on the data.

Calibration (epsilon, delta -> sigma) lives in
:mod:`dpmoments.privacy.discrete`; this module only draws, and :mod:`dpmoments.mechanisms.grid` puts
the draws on the grid (steps 1 and 3).

Speed
-----
The samplers are pure Python: about 30--45 uniform integers per discrete
Gaussian draw. On a loaded 2-core development machine one draw costs about
25--45 µs (``benchmarks/results/secure_noise.md``): the 20,100
upper-triangle entries of a d = 200 symmetric matrix take about 0.6 s,
several hundred times NumPy float noise, but about 5x faster than OpenDP's
floating-point-safe ``make_gaussian`` measured in the same run.

References
----------
.. [CKS20] C. Canonne, G. Kamath and T. Steinke. The discrete Gaussian for
   differential privacy. NeurIPS 2020 (arXiv 2004.00010).
.. [M12] I. Mironov. On significance of the least significant bits for
   differential privacy. CCS 2012.
"""

import math
import numbers
import os
import random
from fractions import Fraction

import numpy as np

__all__ = [
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "is_secure_source",
]

DISTRIBUTIONS = ("gaussian", "laplace")

# Largest integer magnitude kept in int64 arrays (headroom for g + Z without overflow).
_INT_LIMIT = 2**62


# --------------------------------------------------------------------------- randomness


def _source(rng):
    """The uniform-bits source: the OS CSPRNG for ``None``, a caller's ``random.Random`` as is."""
    if rng is None:
        return random.SystemRandom()
    if isinstance(rng, random.Random):
        return rng
    raise TypeError(
        "'rng' for the exact discrete samplers must be None (the OS CSPRNG via random.SystemRandom) "
        "or, for tests only, a random.Random instance (seeded, hence insecure); "
        f"got {type(rng).__name__}. NumPy generators are not cryptographic and are refused here."
    )


def is_secure_source(rng):
    """Whether ``rng`` gives cryptographic randomness to these samplers.

    ``True`` for ``None`` (a fresh :class:`random.SystemRandom`) and for a
    caller's ``SystemRandom``; ``False`` for any other :class:`random.Random`
    (a Mersenne Twister: reproducible and predictable, for tests only).

    Examples
    --------
    >>> import random
    >>> is_secure_source(None), is_secure_source(random.Random(0))
    (True, False)
    """
    return isinstance(_source(rng), random.SystemRandom)


_BLOCK = 4096


def _urandom_randbelow():
    """``randbelow(n)`` reading the OS CSPRNG (``os.urandom``) in 4 KiB blocks.

    ``SystemRandom.getrandbits`` makes one ``getrandom`` system call per
    call and the samplers make tens of calls per draw; reading blocks and
    drawing ``n.bit_length()`` bits per try (rejecting values ``>= n``) in
    one closure cut the cost of a d = 200 matrix about three-fold. The bytes are
    the same OS CSPRNG output that ``secrets`` and ``SystemRandom`` use, each
    consumed once, in order. A fresh closure (and buffer) is made for every
    sampling call and never shared, so no buffer outlives a call or is
    duplicated by a ``fork`` between calls.
    """
    urandom = os.urandom
    buf, pos = urandom(_BLOCK), 0
    from_bytes = int.from_bytes

    def randbelow(n):
        nonlocal buf, pos
        if n == 1:
            return 0
        k = n.bit_length()
        nbytes = (k + 7) >> 3
        shift = (nbytes << 3) - k
        while True:
            end = pos + nbytes
            if end > len(buf):
                buf, pos = urandom(max(_BLOCK, nbytes)), 0
                end = nbytes
            r = from_bytes(buf[pos:end], "little") >> shift
            pos = end
            if r < n:
                return r

    return randbelow


def _randbelow_fn(src):
    """An exact uniform integer in ``[0, n)``: rejection on ``n.bit_length()`` uniform bits.

    A :class:`random.SystemRandom` (``rng=None`` or the caller's) reads
    ``os.urandom`` directly, buffered (:func:`_urandom_randbelow`); any other
    :class:`random.Random` (tests only) uses its ``getrandbits``.
    """
    if type(src) is random.SystemRandom:
        return _urandom_randbelow()
    getrandbits = src.getrandbits

    def randbelow(n):
        if n == 1:
            return 0
        k = n.bit_length()
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return r

    return randbelow


# --------------------------------------------------------------------------- exact samplers


def _bernoulli_exp_le1(num, den, randbelow):
    """Bernoulli(exp(-num/den)) for 0 <= num/den <= 1 [CKS20, Alg. 1, first part].

    K = 1; repeat A ~ Bernoulli(gamma / K) until A = 0, incrementing K on each
    success; return K odd. P[K odd] = sum_k (-gamma)^k / k! = exp(-gamma).
    """
    k = 1
    kden = den
    while randbelow(kden) < num:  # A ~ Bernoulli(num / (den * k)) = Bernoulli(gamma / k)
        k += 1
        kden += den
    return k & 1 == 1


def _bernoulli_exp(num, den, randbelow):
    """Bernoulli(exp(-num/den)) for any num/den >= 0 [CKS20, Alg. 1].

    exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma))): one
    Bernoulli(exp(-1)) per unit, stopping at the first failure.
    """
    while num > den:
        if not _bernoulli_exp_le1(1, 1, randbelow):
            return False
        num -= den
    return _bernoulli_exp_le1(num, den, randbelow)


def _discrete_laplace_one(t, s, randbelow):
    """One draw with P(y) proportional to exp(-|y| s / t): scale t/s, t, s >= 1 integers [CKS20, Alg. 2]."""
    while True:
        u = randbelow(t)
        if not _bernoulli_exp(u, t, randbelow):  # keeps u with probability exp(-u/t)
            continue
        v = 0
        while _bernoulli_exp_le1(1, 1, randbelow):  # v ~ Geometric(1 - exp(-1))
            v += 1
        y = (u + t * v) // s  # u + t v ~ Geometric(1 - exp(-1/t)); // s gives Geometric(1 - exp(-s/t))
        negative = randbelow(2)
        if negative and y == 0:  # reject -0 so that 0 is not counted twice
            continue
        return -y if negative else y


def _discrete_gaussian_one(p, q, randbelow):
    """One draw with P(y) proportional to exp(-y^2 / (2 sigma^2)), sigma^2 = p/q [CKS20, Alg. 3].

    Proposal: discrete Laplace with integer scale t = floor(sigma) + 1;
    accept with probability exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)), written
    over integers as exp(-(|y| t q - p)^2 / (2 p q t^2)).
    """
    t = math.isqrt(p // q) + 1  # floor(sqrt(p/q)) == isqrt(floor(p/q))
    den = 2 * p * q * t * t
    tq = t * q
    while True:
        y = _discrete_laplace_one(t, 1, randbelow)
        a = abs(y) * tq - p
        if _bernoulli_exp(a * a, den, randbelow):
            return y


# --------------------------------------------------------------------------- public samplers


def _rational(value, name):
    """A finite rational > 0, exactly (floats convert exactly: they are dyadic rationals)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Rational, float, np.floating)):
        raise TypeError(f"'{name}' must be a Fraction, an int or a float; got {type(value).__name__} {value!r}.")
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"'{name}' must be finite; got {value}.")
        value = float(value)
    value = Fraction(value)
    if value <= 0:
        raise ValueError(f"'{name}' must be > 0; got {value}.")
    return value


def _size(size):
    if size is None:
        return None, 1
    entries = size if isinstance(size, tuple) else (size,)
    for e in entries:
        if isinstance(e, bool) or not isinstance(e, numbers.Integral) or e < 0:
            raise ValueError(f"'size' must be None, an int >= 0 or a tuple of them; got {size!r}.")
    shape = tuple(int(e) for e in entries)
    return shape, math.prod(shape)


def _fill(shape, count, draw):
    values = [draw() for _ in range(count)]
    if shape is None:
        return values[0]
    if any(abs(v) >= _INT_LIMIT for v in values):
        raise OverflowError("a draw does not fit in int64; use a coarser grid (smaller k).")
    return np.array(values, dtype=np.int64).reshape(shape)


def bernoulli_exp(gamma, rng=None):
    """An exact Bernoulli(exp(-gamma)) draw for a rational ``gamma >= 0`` [CKS20, Alg. 1].

    Parameters
    ----------
    gamma : Fraction, int or float
        ``>= 0``; a float is converted exactly.
    rng : None or random.Random
        ``None``: the OS CSPRNG (:class:`random.SystemRandom`). A seeded
        ``random.Random`` is for tests only (insecure).

    Returns
    -------
    bool

    Examples
    --------
    >>> import random
    >>> bernoulli_exp(0, rng=random.Random(0))
    True
    """
    randbelow = _randbelow_fn(_source(rng))
    if gamma == 0 and not isinstance(gamma, bool):
        return True
    g = _rational(gamma, "gamma")
    return _bernoulli_exp(g.numerator, g.denominator, randbelow)


def discrete_laplace(scale, size=None, rng=None):
    """Exact discrete Laplace draws: ``P(x) = C exp(-|x| / scale)`` on the integers.

    With L1 sensitivity ``Delta`` (integers), adding one independent draw per
    coordinate is ``(Delta / scale)``-DP.

    Parameters
    ----------
    scale : Fraction, int or float
        The scale ``t > 0`` (a float is used exactly as the dyadic rational it is).
    size : None, int or tuple of int
        ``None`` returns one Python ``int``.
    rng : None or random.Random
        ``None``: the OS CSPRNG (secure). A seeded ``random.Random`` is for
        tests only (insecure).

    Returns
    -------
    int or ndarray of int64

    Examples
    --------
    >>> import random
    >>> discrete_laplace(Fraction(3, 2), size=4, rng=random.Random(1)).dtype
    dtype('int64')
    """
    t = _rational(scale, "scale")
    shape, count = _size(size)
    randbelow = _randbelow_fn(_source(rng))
    num, den = t.numerator, t.denominator  # scale num/den: Alg. 2 with t = num, s = den
    return _fill(shape, count, lambda: _discrete_laplace_one(num, den, randbelow))


def discrete_gaussian(sigma2, size=None, rng=None):
    """Exact discrete Gaussian draws: ``P(x) = C exp(-x^2 / (2 sigma2))`` on the integers.

    For integer vectors at L2 distance at most ``Delta``, adding one
    independent draw per coordinate is ``Delta^2 / (2 sigma2)``-zCDP
    [CKS20, Thm 14]. The variance is slightly *below* ``sigma2`` (CKS20,
    Cor. 9; the gap is negligible once ``sigma2 >= 1``).

    Parameters
    ----------
    sigma2 : Fraction, int or float
        The parameter ``sigma^2 > 0`` (a variance on the integer grid).
    size : None, int or tuple of int
        ``None`` returns one Python ``int``.
    rng : None or random.Random
        ``None``: the OS CSPRNG (secure). A seeded ``random.Random`` is for
        tests only (insecure).

    Returns
    -------
    int or ndarray of int64

    Examples
    --------
    >>> import random
    >>> z = discrete_gaussian(Fraction(9), size=(2, 3), rng=random.Random(0))
    >>> z.shape, z.dtype
    ((2, 3), dtype('int64'))
    """
    s2 = _rational(sigma2, "sigma2")
    shape, count = _size(size)
    randbelow = _randbelow_fn(_source(rng))
    p, q = s2.numerator, s2.denominator
    return _fill(shape, count, lambda: _discrete_gaussian_one(p, q, randbelow))
