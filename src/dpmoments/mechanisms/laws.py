r"""Each noise law as one frozen value: what the library asks of a mechanism instead of comparing its name.

A mechanism is named by a string where people and files meet it (``mechanism="laplace"``, ``--mechanism
laplace``, ``"mechanism": "laplace"`` in a report); :func:`as_mechanism` turns the name into its value
once, and from there code asks the value: which norm its sensitivity is measured in (:attr:`~Mechanism.norm`),
whether it needs ``delta``, whether its budget is shared in zCDP, its standard deviation and interval
half-widths at a given scale, and its centred draws (through the samplers of this package, so a seed
gives the same numbers as it always did). What a mechanism costs (its calibration) is joined to it in
:mod:`dpmoments.moments` (``calibrated.calibrate``), since a sampler knows nothing of budgets.

A new noise law is one more :class:`Mechanism` subclass here (its sampler beside it), its calibration in
:mod:`dpmoments.privacy`, and one entry in ``moments.calibrated.CALIBRATE``.
"""

import math
from dataclasses import dataclass

# NumPy and the samplers are imported by the methods that draw: the command line reads the laws' names to build
# its options, and '--help' imports no NumPy (tests/test_import_cost.py).

__all__ = ["Mechanism", "NoNoise", "Gaussian", "Laplace", "Wishart", "as_mechanism", "MECHANISMS",
           "NONE", "GAUSSIAN", "LAPLACE", "WISHART", "WISHART_APPROX", "DISCRETE_GAUSSIAN", "DISCRETE_LAPLACE"]


@dataclass(frozen=True, repr=False)
class Mechanism:
    """A noise law. Subclasses fix its arithmetic; instances differ by name (exact discrete noise, Wishart's two
    analyses).

    Attributes
    ----------
    name : str
        How parameters, reports and files write it (``"gaussian"``, ``"discrete-laplace"``, ...).
    norm : {"l2", "l1"} or None
        The norm its calibration measures the sensitivity in; None where noise is not added
        coordinate by coordinate (Wishart) or not at all.
    needs_delta : bool
        Its guarantee is ``(epsilon, delta)`` and needs ``delta`` in (0, 1).
    zcdp : bool
        A budget of several of its releases is shared in zCDP (``rho``) rather than in epsilon.
    certified : bool
        Its proof holds (the papers' Wishart claim does not).
    discrete : bool
        Exact integer noise on a grid (``secure=True``); its spread is the continuous law's of the same scale.
    chooses_calibration : bool
        The caller chooses how it is calibrated (``"analytic"``, ``"classic"``, ``"zcdp"``) and the
        release records the choice.
    """

    name: str
    norm: str = None
    needs_delta: bool = False
    zcdp: bool = False
    certified: bool = True
    discrete: bool = False
    chooses_calibration: bool = False

    def __str__(self):
        return self.name

    def __repr__(self):  # short, for the refusals that quote what they got
        return f"{type(self).__name__}({self.name!r})"

    def __reduce__(self):  # a copy or an unpickled value is the one value of its name, so `is` holds
        return (_by_name, (self.name,))

    @property
    def additive(self):
        """Independent noise on each released coordinate (a vector, a matrix's upper triangle, a tensor's orbits)."""
        return self.norm is not None

    @property
    def family(self):
        """The continuous law its spread follows: ``"none"``, ``"gaussian"``, ``"laplace"`` or ``"wishart"``."""
        return self.name.removeprefix("discrete-").removesuffix("-approx")

    # -- spread of one coordinate, at a scale (Gaussian sigma, Laplace b, Wishart c) ------------------
    def sd(self, scale, df=None):
        """Standard deviation of one released coordinate (an off-diagonal entry for Wishart)."""
        return float(scale)

    def diagonal_sd(self, scale, df=None):
        """Standard deviation of a diagonal entry of a matrix release."""
        return self.sd(scale, df)

    def diagonal_mean(self, scale, df=None):
        """The noise's mean on the diagonal (``df * c`` for Wishart noise, else 0)."""
        return 0.0

    def spectral_norm(self, scale, df, d):
        r"""About the spectral norm of the centred ``d x d`` noise: the semicircle edge :math:`2 s \sqrt d`."""
        return 2.0 * self.sd(scale, df) * math.sqrt(d)

    def entry_interval(self, scale, df, level, diagonal=False):
        """``(lo, hi)``: one coordinate's centred noise lies in it with probability ``level`` (checked by the
        caller)."""
        from scipy import special  # norm.ppf, without scipy.stats' import

        sd = self.diagonal_sd(scale, df) if diagonal else self.sd(scale, df)
        half = float(special.ndtri(0.5 + level / 2.0)) * sd
        return -half, half

    def largest_of(self, m, scale, df=None):
        r"""The typical largest of ``m`` noise magnitudes: :math:`s \sqrt{2 \ln m}`."""
        return self.sd(scale, df) * math.sqrt(2.0 * math.log(m))

    def largest_magnitude(self, m, q, scale, df=None):
        r"""The level the largest of ``m >= 1`` independent noise magnitudes stays below with probability ``q``.

        Normal entries of sd ``s``: :math:`s\,\Phi^{-1}((1 + q^{1/m})/2)`.
        """
        from scipy import special

        return self.sd(scale, df) * float(special.ndtri(0.5 + 0.5 * q ** (1.0 / m)))

    # -- centred draws, through this package's samplers ---------------------------------------------
    def entries(self, size, scale, generator):
        """``size`` i.i.d. centred draws at ``scale`` from a NumPy ``Generator``, in one call: the law's sampler."""
        raise ValueError(f"{self.name} noise has no i.i.d. entries.")

    def vector(self, size, scale, rng):
        """A centred noise vector (or array of shape ``size``)."""
        from .._rng import as_generator
        from .._validation import check_positive
        from .noise import _check_shape

        return self.entries(_check_shape(size), check_positive(scale, "scale"), as_generator(rng))

    def matrix(self, d, scale, rng, df=None):
        """A centred symmetric ``(d, d)`` noise matrix: i.i.d. upper triangle, mirrored."""
        from .symmetric import symmetric_matrix_noise

        return symmetric_matrix_noise(d, scale, rng, distribution=self.entries)

    def add_matrix(self, M, scale, rng):
        """``M + self.matrix(d, scale, rng)`` written into the float64 array ``M`` (the same draws and bits for a
        symmetric ``M``), without a second d x d array where the law draws i.i.d. entries."""
        if type(self).entries is Mechanism.entries:  # no i.i.d. entries (Wishart, no noise): the matrix itself
            M += self.matrix(M.shape[0], scale, rng)
            return M
        from .symmetric import add_symmetric_matrix_noise

        return add_symmetric_matrix_noise(M, scale, rng, distribution=self.entries)

    def tensor(self, d, scale, rng):
        """A centred, fully symmetric ``(d, d, d)`` noise tensor: one draw per index orbit."""
        from .symmetric import symmetric_tensor_noise

        return symmetric_tensor_noise(d, scale, rng, distribution=self.entries)


@dataclass(frozen=True, repr=False)
class NoNoise(Mechanism):
    """No noise (``epsilon = inf``)."""

    def largest_magnitude(self, m, q, scale, df=None):
        return 0.0

    def sd(self, scale, df=None):
        return 0.0

    def spectral_norm(self, scale, df, d):
        return 0.0

    def entry_interval(self, scale, df, level, diagonal=False):
        return 0.0, 0.0

    def vector(self, size, scale, rng):
        import numpy as np

        return np.zeros(size)

    def matrix(self, d, scale, rng, df=None):
        import numpy as np

        return np.zeros((d, d))

    def tensor(self, d, scale, rng):
        import numpy as np

        return np.zeros((d, d, d))


@dataclass(frozen=True, repr=False)
class Gaussian(Mechanism):
    """Gaussian noise of standard deviation ``sigma`` on each coordinate, calibrated to the L2 sensitivity."""

    def entries(self, size, scale, generator):
        return generator.normal(0.0, scale, size=size)

    def vector(self, size, scale, rng):
        from .noise import gaussian_noise

        return gaussian_noise(size, scale, rng)  # its checks name the scale 'sigma'


@dataclass(frozen=True, repr=False)
class Laplace(Mechanism):
    """Laplace noise of scale ``b`` (sd ``sqrt(2) b``) on each coordinate, calibrated to the L1 sensitivity."""

    def sd(self, scale, df=None):
        return math.sqrt(2.0) * scale

    def entry_interval(self, scale, df, level, diagonal=False):
        half = scale * math.log(1.0 / (1.0 - level))  # |noise| is exponential of mean b
        return -half, half

    def largest_of(self, m, scale, df=None):
        return scale * math.log(m)  # the largest of m Laplace(b) is about b ln m

    def largest_magnitude(self, m, q, scale, df=None):
        return -scale * math.log1p(-q ** (1.0 / m))  # each magnitude is exponential of mean b

    def entries(self, size, scale, generator):
        return generator.laplace(0.0, scale, size=size)

    def vector(self, size, scale, rng):
        from .noise import laplace_noise

        return laplace_noise(size, scale, rng)


@dataclass(frozen=True, repr=False)
class Wishart(Mechanism):
    """Wishart noise ``W_d(df, cI)`` on a second moment (scale ``c``, the variance of ``Z``'s entries in ``Z Z^T``)."""

    def sd(self, scale, df=None):
        return scale * math.sqrt(df)

    def diagonal_sd(self, scale, df=None):
        return scale * math.sqrt(2.0 * df)

    def diagonal_mean(self, scale, df=None):
        return df * scale

    def spectral_norm(self, scale, df, d):
        r"""Centred :math:`W_d(k, cI) - kcI`: the Marchenko-Pastur edge :math:`c(2\sqrt{kd} + d)`."""
        return scale * (2.0 * math.sqrt(df * d) + d)

    def entry_interval(self, scale, df, level, diagonal=False):
        """A diagonal entry is ``c`` times a chi-square (exact); an off-diagonal one is treated as normal."""
        if not diagonal:
            return super().entry_interval(scale, df, level)
        import numpy as np
        from scipy import special

        tail = (1.0 - level) / 2.0
        lo, hi = 2.0 * special.gammaincinv(df / 2.0, np.array([tail, 1.0 - tail]))  # chi2.ppf
        mean = self.diagonal_mean(scale, df)
        return scale * lo - mean, scale * hi - mean

    def largest_magnitude(self, m, q, scale, df=None):
        """Off-diagonal entries are ``c`` times a sum of ``df`` products of normals, heavier-tailed than a normal."""
        if df > WISHART_EXACT_DF:
            return super().largest_magnitude(m, q, scale, df)
        return scale * _wishart_off_diagonal_level(df, 1.0 - q ** (1.0 / m))

    def vector(self, size, scale, rng):
        raise ValueError("Wishart noise has no vector form; only second moments carry it.")

    def matrix(self, d, scale, rng, df=None):
        import numpy as np

        from .wishart import wishart_noise

        return wishart_noise(d, df, scale, rng) - self.diagonal_mean(scale, df) * np.eye(d)

    def tensor(self, d, scale, rng):
        raise ValueError("Wishart noise has no tensor form; only second moments carry it.")


WISHART_EXACT_DF = 2000  # from k = 2000 the normal level is within 0.5% of the exact one (measured, m = 1 to 19900)


def _wishart_off_diagonal_level(k, tail, nodes=4000):
    r"""``t`` with ``P(|X| > t) = tail`` for ``X`` the sum of ``k`` products of independent standard normals.

    ``z w = (u^2 - v^2) / 2`` with ``u, v`` independent standard normals, so
    ``X = (A - B) / 2`` with ``A, B`` independent chi-square(``k``), and
    ``P(X > t) = E_B[P(A > 2t + B)]``: the expectation is a midpoint rule over
    ``nodes`` quantiles of ``B``, and ``t`` is found by bisection. The
    normal level with the same sd was passed by pure noise 11-13% of the
    time at ``k = d + 1`` (d = 8 to 50) where 5% was meant.
    """
    import numpy as np
    from scipy import special

    b = special.chdtri(k, (np.arange(nodes) + 0.5) / nodes)  # quantiles of B

    def two_sided(t):
        return 2.0 * float(np.mean(special.chdtrc(k, 2.0 * t + b)))

    lo, hi = 0.0, math.sqrt(k) * (4.0 + 2.0 * math.log1p(1.0 / tail))
    while two_sided(hi) > tail:
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if two_sided(mid) > tail else (lo, mid)
    return hi


NONE = NoNoise("none")
GAUSSIAN = Gaussian("gaussian", norm="l2", needs_delta=True, zcdp=True, chooses_calibration=True)
LAPLACE = Laplace("laplace", norm="l1")
DISCRETE_GAUSSIAN = Gaussian("discrete-gaussian", norm="l2", needs_delta=True, zcdp=True, discrete=True)
DISCRETE_LAPLACE = Laplace("discrete-laplace", norm="l1", discrete=True)
# The papers' W_d(d+1, .): no epsilon-DP proof (docs/algorithms.md §1.5.1).
WISHART = Wishart("wishart", certified=False)
WISHART_APPROX = Wishart("wishart-approx", needs_delta=True)

#: Every mechanism by its name: the one table :func:`as_mechanism` reads.
MECHANISMS = {m.name: m for m in (NONE, GAUSSIAN, LAPLACE, WISHART, WISHART_APPROX, DISCRETE_GAUSSIAN,
                                  DISCRETE_LAPLACE)}
#: What a caller may ask for by name (exact discrete noise is asked for with ``secure=True``): the additive laws,
#: which every statistic, a noisy count and a private choice can use, and those a second moment can also use.
ADDITIVE = (GAUSSIAN, LAPLACE)
SECOND_MOMENT = (GAUSSIAN, LAPLACE, WISHART, WISHART_APPROX)
#: Each additive law's exact discrete counterpart (``secure=True``).
DISCRETE = {GAUSSIAN: DISCRETE_GAUSSIAN, LAPLACE: DISCRETE_LAPLACE}


def _by_name(name):
    return MECHANISMS[name]


def named(value):
    """The :class:`Mechanism` that ``value`` (a name or a value) names, or None: for a caller with its own refusal."""
    return value if isinstance(value, Mechanism) else MECHANISMS.get(value) if isinstance(value, str) else None


def as_mechanism(value, parameter="mechanism", allowed=SECOND_MOMENT):
    """The :class:`Mechanism` that ``value`` (a name or a value) names, among ``allowed``.

    Refused in one line naming ``parameter``: anything but one of the allowed names or values.

    Examples
    --------
    >>> law = as_mechanism("laplace")
    >>> law.norm, law.needs_delta, law.name == str(law)
    ('l1', False, True)
    >>> as_mechanism("cauchy", "first_moment", ADDITIVE)
    Traceback (most recent call last):
    ...
    ValueError: 'first_moment' must be one of 'gaussian', 'laplace'; got 'cauchy'.
    """
    mech = named(value)
    if isinstance(mech, Mechanism) and MECHANISMS.get(mech.name) != mech:  # made elsewhere, unlike its namesake
        raise ValueError(f"'{parameter}' must be one of the library's noise laws (a name, or a value of "
                         f"dpmoments.mechanisms.laws); got an unregistered {type(mech).__name__} named {mech.name!r}.")
    if mech is None or mech not in allowed:
        names = ", ".join(repr(m.name) for m in sorted(allowed, key=lambda m: m.name))
        got = value.name if isinstance(value, Mechanism) else value
        raise ValueError(f"'{parameter}' must be one of {names}; got {got!r}.")
    return mech


def offered(mechanisms):
    """``'gaussian' or 'laplace'``: how a refusal names the laws it would take."""
    return " or ".join(repr(m.name) for m in mechanisms)


def names(mechanisms):
    """The names of ``mechanisms``, in order: the choices a parameter or a command-line option offers."""
    return tuple(m.name for m in mechanisms)
