"""Wishart noise matrices (PSD perturbation of a second-moment matrix).

The Wishart mechanism (Jiang, Xie & Zhang, AAAI 2016) adds
``W ~ W_d(d + 1, C)`` with ``C = 3/(2 n epsilon) I``; the (epsilon, delta)
variant quoted in Wang et al. adds ``W_d(m, I/n)`` with Sheffet's
``m = d + 14 ln(4/delta) / epsilon^2``. This module only draws ``W``: which
guarantee (if any) a draw carries is decided and recorded in ``privacy/`` and
``moments/``.

Parameterisation: ``W_d(df, scale * I)`` is the law of ``Z Z^T`` with ``Z`` of
shape (d, df) and i.i.d. :math:`N(0, \\mathrm{scale})` entries (``scale`` is a
*variance*), so ``E[W] = df * scale * I``.
"""

import math

import numpy as np

from .._rng import as_generator
from .._validation import check_delta, check_epsilon, check_int, check_positive

__all__ = ["wishart_noise", "sheffet_degrees_of_freedom"]

# Quoted from Sheffet (ALT 2019 / arXiv 1507.00056) via docs/algorithms.md §1.3.
SHEFFET_CONSTANT = 14.0


def _wishart_direct(d, df, scale, rng):
    # Z Z^T, O(d^2 df): used where df < d (singular Wishart, no Bartlett form).
    Z = rng.normal(0.0, math.sqrt(scale), size=(d, df))
    return Z @ Z.T


def _wishart_bartlett(d, df, scale, rng):
    # Bartlett decomposition, valid for df >= d: W = scale * A A^T with A lower
    # triangular, A_ii^2 ~ chi2(df - i), A_ij ~ N(0, 1) for i > j. Same law as
    # Z Z^T but O(d^2) draws, so Sheffet's large df (often 1e4 to 1e6) is cheap.
    A = np.zeros((d, d))
    A[np.diag_indices(d)] = np.sqrt(rng.chisquare(df - np.arange(d)))
    rows, cols = np.tril_indices(d, k=-1)
    A[rows, cols] = rng.standard_normal(rows.size)
    return scale * (A @ A.T)


def wishart_noise(d, df, scale, rng=None):
    """Draw a Wishart matrix :math:`W \\sim W_d(\\mathrm{df}, \\mathrm{scale} \\cdot I)`.

    .. math::

        W \\overset{d}{=} Z Z^\\top, \\quad Z_{ij} \\overset{iid}{\\sim} N(0, \\mathrm{scale}),
        \\quad E[W] = \\mathrm{df} \\cdot \\mathrm{scale} \\cdot I,

    with :math:`\\mathrm{Var}(W_{ij}) = \\mathrm{df} \\cdot \\mathrm{scale}^2` for
    :math:`i \\ne j` and :math:`2 \\, \\mathrm{df} \\cdot \\mathrm{scale}^2` on the
    diagonal. ``df < d`` gives a singular (rank ``df``) Wishart.

    Parameters
    ----------
    d : int
        Dimension, >= 1.
    df : int
        Degrees of freedom, >= 1.
    scale : float
        Variance of the entries of ``Z`` (the scale matrix is ``scale * I``);
        finite, > 0.
    rng : None, int, SeedSequence or numpy.random.Generator, default=None
        Source of randomness; ``None`` draws fresh OS entropy.

    Returns
    -------
    W : ndarray of shape (d, d)
        Symmetric positive semi-definite, exactly symmetric.

    Notes
    -----
    For ``df >= d`` the draw uses the Bartlett decomposition (O(d^2) random
    numbers whatever ``df``); for ``df < d`` it forms ``Z Z^T`` directly. Both
    give the same distribution, not the same numbers for a seed.

    Examples
    --------
    >>> W = wishart_noise(3, df=4, scale=0.5, rng=0)
    >>> W.shape
    (3, 3)
    >>> bool(np.linalg.eigvalsh(W).min() > 0)
    True
    """
    d = check_int(d, "d", minimum=1)
    df = check_int(df, "df", minimum=1)
    scale = check_positive(scale, "scale")
    rng = as_generator(rng)
    W = _wishart_bartlett(d, df, scale, rng) if df >= d else _wishart_direct(d, df, scale, rng)
    # A @ A.T is symmetric only up to rounding; averaging makes it exact.
    return 0.5 * (W + W.T)


def sheffet_degrees_of_freedom(d, epsilon, delta):
    """Degrees of freedom of Sheffet's (epsilon, delta) Wishart noise.

    .. math::

        k = \\left\\lfloor d + \\frac{14 \\ln(4/\\delta)}{\\varepsilon^2} \\right\\rfloor

    Parameters
    ----------
    d : int
        Dimension, >= 1.
    epsilon : float
        Finite, > 0.
    delta : float
        In (0, 1); the quoted analysis targets small delta (well below 1/e).

    Returns
    -------
    k : int
        Degrees of freedom, >= d.

    Notes
    -----
    The constant 14 is quoted from Sheffet, "Old techniques in differentially
    private linear regression" (ALT 2019; arXiv 1507.00056) as cited by Wang,
    Huai & Xu (GlobalSIP 2018), see docs/algorithms.md §1.3; it was not re-derived
    here, and the guarantee holds only with the scale matrix that analysis
    prescribes for the stated data bound.

    This function only sizes a draw. The pure-epsilon variants with
    ``df = d + 1`` (Jiang et al.; Wang et al.; Park & Welling) are **not**
    differentially private (the support of ``A + W`` depends on ``A``,
    docs/algorithms.md §1.5.1); :func:`wishart_noise` still samples them so those
    papers can be reproduced. Guarantee bookkeeping lives in ``privacy/``.

    Examples
    --------
    >>> sheffet_degrees_of_freedom(5, epsilon=1.0, delta=1e-5)
    185
    """
    d = check_int(d, "d", minimum=1)
    epsilon = check_epsilon(epsilon, allow_inf=False)
    delta = check_delta(delta, allow_zero=False)
    # Divide twice so a tiny epsilon overflows to inf instead of dividing by 0.
    extra = SHEFFET_CONSTANT * math.log(4.0 / delta) / epsilon / epsilon
    if not math.isfinite(extra):
        raise ValueError(
            f"'epsilon' is too small: the degrees of freedom d + 14 ln(4/delta)/epsilon^2 "
            f"overflow; got epsilon={epsilon}."
        )
    return d + math.floor(extra)
