r"""Uncertainty from the release alone: the law of its noise, redrawn.

A release records how its noise was drawn (``mechanism``, ``noise_scale``,
``noise_df``), so the spread that noise induces in any estimate is known
without touching the data again. Two routes, both free post-processing:

* **closed forms** where the estimate is (close to) linear in the released
  numbers: the standard error of a released entry is the noise's own
  standard deviation;
* a **parametric bootstrap** otherwise: a draw is the released statistic plus
  fresh, centred noise of the release's own law (drawn by
  :mod:`dpmoments.mechanisms`, never a new sampler), and the estimator's
  post-processing is rerun on each draw. Intervals are *basic* bootstrap
  intervals, :math:`[2\hat\theta - q_{1-a/2}, 2\hat\theta - q_{a/2}]` of the
  draws :math:`\theta^*`: the spread of :math:`\theta^* - \hat\theta` stands
  in for that of :math:`\hat\theta - \theta`, which also removes the bias
  the noise adds to a non-linear post-processing (to first order).

The bootstrap's generator is a stream derived from the estimator's ``rng``
that no release draws from (:func:`bootstrap_generator`): a draw never reuses
the noise that was added to the data, which would disclose it.

What is *not* covered: sampling variability (the rows are what they are),
clipping bias, and, for a release that was post-processed before it reached
the estimator (rescaled, projected), any departure of its noise from the law
recorded. docs/uncertainty.md says what each number means.
"""

import dataclasses
import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._lazy import lazy_module
from .._rng import bootstrap_generator
from ..mechanisms.laws import MECHANISMS, NONE, Mechanism, Wishart, as_mechanism
from ..moments.counts import published_count

# scipy.special, not scipy.stats: the same quantiles (scipy.stats calls these), without the 0.5 s import of
# scipy.stats that every command paid for two quantiles; and imported when an interval is first computed
special = lazy_module("scipy.special")

__all__ = ["UNSTABLE_DEGREES", "NoiseLaw", "noise_law", "redraw", "redraw_count", "bootstrap_generator",
           "basic_interval", "bootstrap_se", "check_draws", "check_level", "check_uncertainty_params",
           "count_relative_sd", "family_z", "fewest_draws", "row_blocks", "warn_if_too_few_draws", "z_value"]

#: A component further than this from its redrawn counterparts (median angle) shares less than half of its
#: squared length with them (cos^2 45 deg = 1/2): more of it is noise than signal.
UNSTABLE_DEGREES = 45.0


@dataclass(frozen=True)
class NoiseLaw:
    """The law of the noise added to every released coordinate: a mechanism at a scale.

    Attributes
    ----------
    mechanism : Mechanism
        The noise law (:mod:`dpmoments.mechanisms.laws`; a name is parsed on construction). Exact
        discrete noise (``secure=True``) is described by its continuous counterpart of the same
        scale: on its fine grid (at most 0.1% of the sensitivity) the two differ negligibly in spread.
    scale : float
        Gaussian sigma, Laplace b, or Wishart c (the variance of the entries
        of ``Z`` in ``W = Z Z^T``).
    df : int or None
        Wishart degrees of freedom (noise mean ``df * c * I``).
    """

    mechanism: Mechanism
    scale: float
    df: Optional[int] = None

    def __post_init__(self):
        mech = as_mechanism(self.mechanism, "kind", tuple(MECHANISMS.values()))
        object.__setattr__(self, "mechanism", MECHANISMS[mech.family])  # the continuous law of its spread

    @property
    def kind(self):
        """``"none"``, ``"gaussian"``, ``"laplace"`` or ``"wishart"``: the name written in reports."""
        return self.mechanism.name

    # -- moments of one coordinate ---------------------------------------------------
    @property
    def sd(self):
        """Standard deviation of one released coordinate (an off-diagonal entry for Wishart)."""
        return self.mechanism.sd(self.scale, self.df)

    @property
    def diagonal_sd(self):
        """Standard deviation of a diagonal entry of a matrix release."""
        return self.mechanism.diagonal_sd(self.scale, self.df)

    @property
    def diagonal_mean(self):
        """The noise's mean on the diagonal (``df * c`` for Wishart noise, else 0)."""
        return self.mechanism.diagonal_mean(self.scale, self.df)

    def spectral_norm(self, d):
        r"""About the spectral norm of the centred ``d x d`` noise: what no signal eigenvalue can hide in.

        Symmetric i.i.d. entries of standard deviation ``s``: the semicircle
        edge :math:`2 s \sqrt d`; centred Wishart :math:`W_d(k, cI) - kcI`:
        the Marchenko-Pastur edge :math:`c(2\sqrt{kd} + d)`.
        """
        return self.mechanism.spectral_norm(self.scale, self.df, d)

    def entry_interval(self, level, diagonal=False):
        """``(lo, hi)``: the centred noise of one coordinate lies in ``[lo, hi]`` with probability ``level``.

        Exact for Gaussian and Laplace noise and for a Wishart diagonal
        (``c`` times a chi-square); a Wishart off-diagonal entry is treated as
        normal (its law is a sum of ``df`` products of normals).
        """
        return self.mechanism.entry_interval(self.scale, self.df, check_level(level), diagonal)

    # -- centred draws, through dpmoments.mechanisms ------------------------------------------
    def matrix(self, d, rng):
        """A centred symmetric ``(d, d)`` noise matrix of this law."""
        return self.mechanism.matrix(d, self.scale, rng, self.df)

    def vector(self, size, rng):
        """A centred noise vector of this law."""
        return self.mechanism.vector(size, self.scale, rng)

    def tensor(self, d, rng):
        """A centred, fully symmetric ``(d, d, d)`` noise tensor of this law."""
        return self.mechanism.tensor(d, self.scale, rng)

    def to_dict(self):
        return {"kind": self.kind, "scale": float(self.scale), "df": self.df, "entry_sd": self.sd,
                "diagonal_sd": self.diagonal_sd, "diagonal_mean": self.diagonal_mean}


def noise_law(release):
    """The :class:`NoiseLaw` a :class:`~dpmoments.Release` records (its ``mechanism``, ``noise_scale``, ``noise_df``).

    ``noise_scale`` is the noise on the normalised statistic, as released
    (under add-remove, the sums' noise over the noisy count: an estimate);
    :func:`redraw` also redraws the count there.
    """
    mech = MECHANISMS.get(release.mechanism)
    if mech is None:
        raise ValueError(f"a release with mechanism {release.mechanism!r} has no known noise law.")
    if not release.noise_scale > 0:
        mech = NONE
    return NoiseLaw(mech, float(release.noise_scale), release.noise_df if isinstance(mech, Wishart) else None)


def count_relative_sd(release):
    """Add-remove: the noisy count's standard deviation relative to it (0 when ``n`` is exact).

    The statistic is the noisy sums over the noisy count, so to first order
    the count scales every entry by ``1 + e`` with ``sd(e)`` this value.
    """
    scale = getattr(release, "count_noise_scale", None)
    if scale is None:
        return 0.0
    return noise_law(release).mechanism.sd(scale) / release.n


def redraw_count(release, rng):
    """Add-remove: a fresh noisy count around the released one (``None`` when ``n`` is exact)."""
    law = noise_law(release)
    if getattr(release, "count_noise_scale", None) is None or not law.mechanism.additive:
        return None
    return published_count(release.n + NoiseLaw(law.mechanism, release.count_noise_scale).vector(1, rng)[0])


def redraw(release, rng, count=None):
    """One parametric-bootstrap draw: every released statistic plus fresh centred noise of its law.

    Under add-remove (``count_noise_scale`` set) the noisy count is redrawn
    too: the released sums (statistic times the noisy count) get fresh sum
    noise and are divided by a fresh noisy count, so the draw carries both
    noises; ``count`` passes one redrawn count (:func:`redraw_count`) to
    releases that shared theirs. Post-processing of the release (no data, no
    privacy cost). ``rng`` must be a bootstrap stream
    (:func:`bootstrap_generator`), never the release's.
    """
    law, d = noise_law(release), release.n_features
    scale, fields = 1.0, {}
    count = redraw_count(release, rng) if count is None else count
    if count is not None:
        scale = release.n / count  # sums = statistic * n; the draw divides them by its own count
        law = NoiseLaw(law.mechanism, release.sum_noise_scale / count)
        fields.update(n=count, noise_scale=law.scale)
    if release.second_moment is not None:
        M = scale * release.second_moment + law.matrix(d, rng)
        fields["second_moment"] = 0.5 * (M + M.T)
    if release.cross_moment is not None:
        fields["cross_moment"] = scale * release.cross_moment + law.vector(d, rng)
    if release.third_moment is not None:
        fields["third_moment"] = scale * release.third_moment + law.tensor(d, rng)
    return dataclasses.replace(release, postprocessing=release.postprocessing + ("parametric-bootstrap-draw",),
                               **fields)


def basic_interval(estimate, draws, level):
    r"""Basic bootstrap interval :math:`[2\hat\theta - q_{hi}, 2\hat\theta - q_{lo}]` of shape ``(2, ...)``.

    The quantiles sit at the positions ``p (B + 1)`` of the ``B`` sorted draws (``"weibull"``): a
    fresh draw falls below the ``k``-th of ``B`` exchangeable draws with probability ``k / (B + 1)``.
    NumPy's default, ``1 + p (B - 1)``, leaves ``3.45 / 51`` in each tail at ``B = 50`` and a 90%
    interval covered 0.85-0.88 (ridge precision, tensor weights, PCA, 200 releases each).

    Fewer than :func:`fewest_draws` draws cannot reach the tails: the interval is withheld (NaN), never printed
    narrower than its level (one draw gave the point ``2 theta - theta*``, away from the estimate itself); the
    parameter check says so once (:func:`warn_if_too_few_draws`).
    """
    estimate, draws = np.asarray(estimate, dtype=float), np.asarray(draws, dtype=float)
    if draws.shape[0] < fewest_draws(check_level(level)):
        return np.full((2,) + np.broadcast_shapes(estimate.shape, draws.shape[1:]), np.nan)
    tail = (1.0 - check_level(level)) / 2.0
    lo, hi = np.quantile(draws, [tail, 1.0 - tail], axis=0, method="weibull")
    return np.stack([2.0 * estimate - hi, 2.0 * estimate - lo])


def bootstrap_se(draws):
    """A robust standard error of bootstrap draws: the interquartile range over 1.349.

    Equal to the standard deviation for normal draws, and not swamped by the
    rare draw in which a near-singular matrix is inverted (whitening, IRLS).
    """
    draws = np.asarray(draws, dtype=float)
    if draws.shape[0] < 2:  # one draw has no spread: its "0" would claim an exact estimate
        return np.full(draws.shape[1:], np.nan)
    q25, q75 = np.quantile(draws, [0.25, 0.75], axis=0)
    return (q75 - q25) / 1.349


def z_value(level):
    """The two-sided normal quantile of ``level`` (1.645 for 0.9)."""
    return float(special.ndtri(0.5 + check_level(level) / 2.0))  # norm.ppf


def family_z(level, tests):
    """The one-sided normal quantile at ``1 - (1 - level) / tests``: Bonferroni over ``tests`` one-sided tests, so that
    noise alone makes any of them fire in at most ``1 - level`` of fits (the error budgets' detections)."""
    return float(special.ndtri(1.0 - (1.0 - level) / tests))


def check_level(level):
    # [0.5, 1), as the command line's --level (one set of defaults): below 0.5 an "interval" misses its value
    # more often than it holds it
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0.5 <= level < 1:
        raise ValueError(f"'level' must be in [0.5, 1) (the coverage of an interval); got {level!r}.")
    return float(level)


def check_draws(n_draws):
    if isinstance(n_draws, bool) or not isinstance(n_draws, numbers.Integral) or n_draws < 0:
        raise ValueError(f"'n_draws' must be an integer >= 0 (0: closed forms only); got {n_draws!r}.")
    return int(n_draws)


def fewest_draws(level):
    """The fewest draws whose sorted values reach each tail of a ``level`` interval.

    The basic interval reads the quantiles at positions ``p (B + 1)`` (:func:`basic_interval`): below
    ``1 / p - 1`` draws they clamp to the extremes, and the interval is narrower than its level.
    """
    return math.ceil(2.0 / (1.0 - level) - 1.0 - 1e-9)


def warn_if_too_few_draws(n_draws, level):
    """Warn where ``0 < n_draws`` is below :func:`fewest_draws` at ``level``: the one place, for the library and the
    command line (its ``--draws`` is an estimator's ``n_draws``), called where an estimator's parameters are
    checked (:func:`~dpmoments.estimators._params.check_parameters`)."""
    need = fewest_draws(level)
    if 0 < n_draws < need:
        warnings.warn(f"n_draws={n_draws} (--draws): fewer than the {need} draws that the tails of a {level:.3g} "
                      f"interval need; the intervals drawn are withheld (NaN) and closed forms kept where there "
                      f"are (PCA, IRLS): ask for --draws {need} or more", UserWarning,
                      stacklevel=2)  # one location: a fit checks its parameters twice, warned once


def check_uncertainty_params(estimator):
    """Validate an estimator's ``n_draws`` and ``level`` before any data are touched."""
    check_draws(getattr(estimator, "n_draws", 0))
    check_level(getattr(estimator, "level", 0.9))


# Entries in one block of rows (8 MB of float64); a test sets it small to check that the blocks join bit for bit
ROW_BLOCK_ELEMENTS = 1 << 20


def row_blocks(d, elements=None):
    """Slices of rows of a (d, d) array, about ``elements`` entries each (``ROW_BLOCK_ELEMENTS``): the error budget's
    d x d steps made a block at a time keep their temporaries a block's size (a d x d array is 800 MB at
    d = 10 000)."""
    step = max(1, (ROW_BLOCK_ELEMENTS if elements is None else elements) // max(d, 1))
    return [slice(lo, min(lo + step, d)) for lo in range(0, d, step)]
