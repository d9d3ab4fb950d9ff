"""Each statistic a site may send as one frozen value: what the wing asks of it instead of comparing its name.

A statistic is named by a string where plans, messages and reports meet it (``"second"`` in a plan's
rounds, ``value:0:second`` on the wire, ``round 1 (second)`` in a report); :func:`as_statistic` turns the
name into its value once, and from there code asks the value: its payload's shape and the check a payload
must pass at the door (:meth:`~Statistic.guard`), its unit noise (the dealer's shares, a site's own noise,
the aggregator's ``f_s`` and top-up all draw it, with the statistic's symmetry), its L2 sensitivity, how a
site's reply enters the round's sum (:meth:`~Statistic.summand`) and how far an honest one can lie
(:meth:`~Statistic.entry_bound`). The names, and so the plans' digests and the wire, are unchanged.

The moments are one machine's (:mod:`dpmoments.moments.statistics`: shape, slot, sensitivity rule) seen
across sites. A new moment is one more value there; a new statistic only sites send (counts, a factor) is one
more value here (and its round in :mod:`~dpmoments.multisite.analyses`); a site computes it from its sums in
:meth:`~Statistic.of_sums`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..mechanisms import gaussian_noise, symmetric_matrix_noise, symmetric_tensor_noise
from ..moments import statistics as single
from ..moments import irls_sandwich as sandwich
from ..moments.clipping_bias import excess_row_bound, excess_sensitivity
from ..moments.irls_sandwich import scale_sensitivity, sign_sensitivity
from .bounds import HISTOGRAM_SENSITIVITY
from .egress import MAX_BINS, EgressRefused, egress_guard
from .location import location_sensitivity

__all__ = ["Statistic", "Moment", "Counts", "Factor", "STATISTICS", "ROUND_STATISTICS", "as_statistic", "SECOND",
           "CROSS", "THIRD", "EXCESS", "HISTOGRAM", "LOCATION", "FACTOR", "Sampling", "RESIDUAL_SCALE", "SANDWICH_K",
           "SANDWICH_V", "SIGN_SCORE"]


@dataclass(frozen=True, repr=False)
class Statistic:
    """What one round's sites send. Subclasses fix the arithmetic; instances differ by name.

    Attributes
    ----------
    name : str
        How plans, messages and reports write it.
    label : str
        How a sentence names it (``"second moment"``).
    """

    name: str
    label: str

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def __reduce__(self) -> tuple:  # a copy is the one value of its name, so `is` holds
        return (as_statistic, (self.name,))

    @property
    def mirrored(self) -> bool:
        return False

    @property
    def counts(self) -> bool:
        """A choosing step's noisy counts: each site's own noise only, summed as they are, checked as counts."""
        return False

    def shape(self, n_features: int, rank: Optional[int] = None, bins: Optional[int] = None) -> tuple[int, ...]:
        """The payload's shape at ``n_features`` (a factor's ``rank``, a histogram's public ``bins``)."""
        raise NotImplementedError

    def guard(self, value: object, n_features: int) -> np.ndarray:
        """The payload through the door's guard (:func:`~.egress.egress_guard`): a read-only float array."""
        return egress_guard(value, n_features, self.shape(n_features))

    def unit_noise(self, d: int, rng: Any, size: Optional[int] = None) -> np.ndarray:
        """Standard (std 1) Gaussian noise with the statistic's symmetry; ``size`` stacks draws on axis 0.

        Every draw is a symmetric matrix (upper triangle drawn, mirrored) or a symmetric tensor (one draw
        per index orbit), so linear combinations of draws keep the statistic's symmetry.
        """
        if size is None:
            return self._draw(d, rng)
        return np.stack([self._draw(d, rng) for _ in range(size)]) if size else np.zeros((0,) + self.noise_shape(d))

    def noise_shape(self, d: int) -> tuple[int, ...]:
        """The shape of one unit draw at ``d`` (for counts, ``d`` is the number of counts)."""
        return (int(d),)

    def _draw(self, d: int, rng: Any) -> np.ndarray:
        return gaussian_noise(d, 1.0, rng)

    def summand(self, value: np.ndarray, weight: float, f: Any) -> np.ndarray:
        """What a site's admitted reply adds to the round's running sum: ``mu_s (y_s - f_s)``."""
        return weight * (value - f)

    @property
    def sampling(self) -> bool:
        """One of IRLS's sampling statistics at the final iterate (:class:`Sampling`)."""
        return False

    @property
    def weight_scaled(self) -> bool:
        """Whether an IRLS round's weights (at most ``w_max``) multiply its sensitivity and entry bound."""
        return True

    def params_shape(self, n_features: int, weighted: bool) -> Optional[tuple[int, ...]]:
        """The shape of the public parameters a query of this statistic carries: IRLS's iterate ``(d,)`` in a
        weighted round, none otherwise."""
        return (int(n_features),) if weighted else None

    def sensitivity(self, n_samples: int, *, n_features: int, row_norm: float, response_bound: Optional[float],
                    neighbours: str) -> float:
        """L2 sensitivity of one site's statistic (its noise is calibrated to it)."""
        raise ValueError(f"a {self.label} is not calibrated: it is post-processing of a noisy release.")


@dataclass(frozen=True, repr=False)
class Moment(Statistic):
    """A normalised moment of the clipped rows, as a round's statistic: its shape, slot and symmetry are those of
    one machine's value (:class:`~dpmoments.moments.statistics.MomentStatistic`), read from it, never copied.

    Attributes
    ----------
    moment : MomentStatistic
        One machine's value: ``ndim`` axes of length ``d``, the power of ``R`` bounding an entry of one row's
        contribution, exact symmetry (a payload that is not is refused: a site with exactly ``d`` rows has a
        ``(d, d)`` data matrix, which rows are not except by accident), and the
        :class:`~dpmoments.moments.Release` field the sum across sites is released in (``slot``).
    """

    moment: single.MomentStatistic = single.SECOND

    @property
    def ndim(self) -> int:
        return self.moment.ndim

    @property
    def power(self) -> int:
        return self.moment.power

    @property
    def symmetric(self) -> bool:
        return self.moment.symmetric

    @property
    def slot(self) -> str:
        return self.moment.slot

    def shape(self, n_features: int, rank: Optional[int] = None, bins: Optional[int] = None) -> tuple[int, ...]:
        return (int(n_features),) * self.ndim

    def noise_shape(self, d: int) -> tuple[int, ...]:
        return self.shape(d)

    @property
    def mirrored(self) -> bool:
        """A symmetric matrix: the dealer mirrors each share's upper triangle, so that BLAS's rounding in the sum
        over sites leaves it exactly symmetric (the guard refuses one that is not)."""
        return self.moment.mirrored

    def guard(self, value: object, n_features: int) -> np.ndarray:
        out = super().guard(value, n_features)
        if self.symmetric and not all(np.array_equal(out, out.swapaxes(k, k + 1)) for k in range(self.ndim - 1)):
            whole = "exactly" if self.ndim == 2 else "fully"
            raise EgressRefused(f"a {self.name}-moment payload must be {whole} symmetric.")
        return out

    def _draw(self, d: int, rng: Any) -> np.ndarray:
        if self.symmetric:
            return (symmetric_matrix_noise if self.ndim == 2 else symmetric_tensor_noise)(d, 1.0, rng)
        return gaussian_noise(d, 1.0, rng)

    def distinct_entries(self, d: int) -> int:
        """The entries that carry independent noise: ``d(d+1)/2``, ``d``, ``C(d+2, 3)``."""
        return math.comb(d + self.ndim - 1, self.ndim) if self.symmetric else d ** self.ndim

    def entry_bound(self, row_norm: float, response_bound: Optional[float]) -> float:
        """The largest magnitude one row's clipped contribution puts in an entry (and so the statistic's): the L2
        norm of one row's term, which bounds each of its entries."""
        return self.moment.one_row("l2", 1, row_norm, response_bound)

    def sensitivity(self, n_samples: int, *, n_features: int, row_norm: float, response_bound: Optional[float],
                    neighbours: str) -> float:
        """L2 sensitivity of one site's normalised statistic (the moments layer's table)."""
        return self.moment.sensitivity(norm="l2", n_samples=n_samples, n_features=n_features, neighbours=neighbours,
                                       row_norm=row_norm, response_bound=response_bound)

    def of_sums(self, sums: Any) -> np.ndarray:
        """The normalised statistic from one pass's sums (:func:`~dpmoments.moments.accumulate_moments`)."""
        return self.moment.of_sums(sums)


@dataclass(frozen=True, repr=False)
class _Excess(Moment):
    """What clipping at the row bound removed from each variance (:mod:`dpmoments.moments.clipping_bias`)."""

    def entry_bound(self, row_norm: float, response_bound: Optional[float]) -> float:
        return excess_row_bound(row_norm)  # each entry of a row's loss vector is in [0, (kappa^2 - 1) R^2]

    def sensitivity(self, n_samples: int, *, n_features: int, row_norm: float, response_bound: Optional[float],
                    neighbours: str) -> float:
        return excess_sensitivity(row_norm, n_samples, neighbours)


@dataclass(frozen=True, repr=False)
class Sampling(Moment):
    """IRLS's sampling statistics across sites at the final public iterate (:mod:`dpmoments.moments.irls_sandwich`):
    the sandwich matrices ``K_h`` and ``V``, a second moment's shape and sensitivity (their rows' weights lie in
    ``[0, 1]``, so ``w_max`` does not multiply them). Their query carries the iterate and the bandwidth ``h``,
    ``(d + 1,)``: ``h`` is post-processing of the released residual scale (:class:`_ResidualScale`)."""

    @property
    def sampling(self) -> bool:
        return True

    @property
    def weight_scaled(self) -> bool:
        return False

    def params_shape(self, n_features: int, weighted: bool) -> Optional[tuple[int, ...]]:
        return (int(n_features) + 1,)

    def sensitivity(self, n_samples: int, *, n_features: int, row_norm: float, response_bound: Optional[float],
                    neighbours: str) -> float:
        """A second moment's, replace-one's under zero-out too: conservative. A zeroed row keeps IRLS's public
        constant column ``k``, so its term ``w0 z0 z0^T`` is not 0, but both rows carry ``k``: the terms are never
        orthogonal and, with weights in ``[0, 1]``, move by at most ``R^2`` (the B rounds' argument, docs/privacy.md
        "Relations"), so zero-out's ``R^2 / n`` would hold too; lowering it changes zero-out's sampling bytes."""
        return super().sensitivity(n_samples, n_features=n_features, row_norm=row_norm, response_bound=response_bound,
                                   neighbours="replace-one" if neighbours == "zero-out" else neighbours)


@dataclass(frozen=True, repr=False)
class _ResidualScale(Sampling):
    """The residual scale at the final iterate: one number in ``[0, response_bound]`` (its query carries the
    iterate alone, ``(d,)``)."""

    def shape(self, n_features: int, rank: Optional[int] = None, bins: Optional[int] = None) -> tuple[int, ...]:
        return (1,)

    def noise_shape(self, d: int) -> tuple[int, ...]:
        return (1,)

    def _draw(self, d: int, rng: Any) -> np.ndarray:
        return gaussian_noise(1, 1.0, rng)

    def distinct_entries(self, d: int) -> int:
        return 1

    def params_shape(self, n_features: int, weighted: bool) -> Optional[tuple[int, ...]]:
        return (int(n_features),)

    def entry_bound(self, row_norm: float, response_bound: Optional[float]) -> float:
        return _response(response_bound)

    def sensitivity(self, n_samples: int, *, n_features: int, row_norm: float, response_bound: Optional[float],
                    neighbours: str) -> float:
        return scale_sensitivity(_response(response_bound), n_samples, neighbours)


@dataclass(frozen=True, repr=False)
class _SignScore(Sampling):
    """LAD's score ``mean(sign(r_i) z_i)`` at the final iterate: a vector of ``d`` (the knot's check,
    :mod:`dpmoments.estimators._irls_knot`). Its query is the sandwich's step's, ``(theta, h)``; ``h`` is unused.
    Each entry of a row's term is at most ``R``; one machine's sensitivity ``2R/n`` under zero-out too
    (:func:`~dpmoments.moments.irls_sandwich.sign_sensitivity`: the zeroed row keeps the constant column)."""

    def shape(self, n_features: int, rank: Optional[int] = None, bins: Optional[int] = None) -> tuple[int, ...]:
        return (int(n_features),)

    def noise_shape(self, d: int) -> tuple[int, ...]:
        return (int(d),)

    def _draw(self, d: int, rng: Any) -> np.ndarray:
        return gaussian_noise(d, 1.0, rng)

    def distinct_entries(self, d: int) -> int:
        return int(d)

    def entry_bound(self, row_norm: float, response_bound: Optional[float]) -> float:
        return float(row_norm)

    def sensitivity(self, n_samples: int, *, n_features: int, row_norm: float, response_bound: Optional[float],
                    neighbours: str) -> float:
        return sign_sensitivity(n_samples, row_norm, neighbours)


@dataclass(frozen=True, repr=False)
class Counts(Statistic):
    """A choosing step's noisy counts on a public grid: a bound step's histogram ``(bins,)`` or a location step's
    per-coordinate counts ``(d, bins)``; its length is the plan's, not the data's."""

    per_feature: bool = False

    @property
    def counts(self) -> bool:
        return True

    def shape(self, n_features: int, rank: Optional[int] = None, bins: Optional[int] = None) -> tuple[int, ...]:
        return ((int(n_features),) if self.per_feature else ()) + (int(_needed(bins, "bins")),)

    def guard(self, value: object, n_features: int) -> np.ndarray:
        arr = np.asarray(value)
        if not self.per_feature and (arr.ndim != 1 or not 2 <= arr.shape[0] <= MAX_BINS):
            raise EgressRefused(f"a histogram payload must be a vector of 2 to {MAX_BINS} bins; got shape {arr.shape}.")
        if self.per_feature and (arr.ndim != 2 or arr.shape[0] != n_features or not 2 <= arr.shape[1] <= MAX_BINS):
            raise EgressRefused(f"a location payload must have shape (n_features, bins) with 2 to {MAX_BINS} bins; "
                                f"got {arr.shape}.")
        return egress_guard(arr, MAX_BINS, arr.shape)

    def noisy(self, counts: np.ndarray, g: float, rng: Any) -> np.ndarray:
        """The exact counts plus this site's own noise of std ``g`` (one draw per count, flat)."""
        return counts + g * gaussian_noise(counts.size, 1.0, rng).reshape(counts.shape)

    def summand(self, value: np.ndarray, weight: float, f: Any) -> np.ndarray:
        return value  # counts add: no weights, no shares

    def sensitivity(self, n_samples: int, *, n_features: int, row_norm: float, response_bound: Optional[float],
                    neighbours: str) -> float:
        return location_sensitivity(n_features) if self.per_feature else HISTOGRAM_SENSITIVITY


@dataclass(frozen=True, repr=False)
class Factor(Statistic):
    """DPdisPCA's rank-``r`` factor ``P`` of a site's noisy second moment: ``(d, r)``, ``r <= d``."""

    def shape(self, n_features: int, rank: Optional[int] = None, bins: Optional[int] = None) -> tuple[int, ...]:
        return (int(n_features), int(_needed(rank, "rank")))

    def guard(self, value: object, n_features: int) -> np.ndarray:
        arr = np.asarray(value)
        if arr.ndim != 2 or arr.shape[0] != n_features or not 1 <= arr.shape[1] <= n_features:
            raise EgressRefused(f"a factor payload must have shape (n_features, r) with r <= n_features="
                                f"{n_features}; got {arr.shape}.")
        return egress_guard(arr, n_features, arr.shape)

    def summand(self, value: np.ndarray, weight: float, f: Any) -> np.ndarray:
        return weight * (value @ value.T)


def _response(bound: Optional[float]) -> float:
    if bound is None:
        raise ValueError("the residual scale needs the public 'response_bound'.")
    return float(bound)


def _needed(value: Optional[int], name: str) -> int:
    if value is None:
        raise TypeError(f"'{name}' is needed for this statistic's shape.")
    return value


def _across_sites(moment: single.MomentStatistic) -> Moment:
    """One machine's moment (:mod:`dpmoments.moments.statistics`) as a round's statistic: the same shape, slot
    and sensitivity rule."""
    return Moment(moment.name, moment.label, moment=moment)


#: One machine's moments, each across sites.
MOMENTS = {name: _across_sites(m) for name, m in single.MOMENT_STATISTICS.items()}
SECOND, CROSS, THIRD = MOMENTS["second"], MOMENTS["cross"], MOMENTS["third"]
#: The loss vector travels as a vector: the cross moment's slot of a release.
EXCESS = _Excess("excess", "clipping excess", moment=single.MomentStatistic(
    "excess", "clipping excess", ndim=1, power=2, symmetric=False, slot="cross_moment"))
#: IRLS's sampling statistics (released only where a plan sets ``sampling_budget``).
RESIDUAL_SCALE = _ResidualScale(sandwich.RESIDUAL_SCALE.name, sandwich.RESIDUAL_SCALE.label,
                                moment=sandwich.RESIDUAL_SCALE)
SANDWICH_K, SANDWICH_V = (Sampling(m.name, m.label, moment=m) for m in (sandwich.SANDWICH_K, sandwich.SANDWICH_V))
SIGN_SCORE = _SignScore(sandwich.SIGN_SCORE.name, sandwich.SIGN_SCORE.label, moment=sandwich.SIGN_SCORE)
HISTOGRAM = Counts("histogram", "histogram")
LOCATION = Counts("location", "location counts", per_feature=True)
FACTOR = Factor("factor", "factor")

#: Every statistic by name: the moments a round releases, a choosing step's counts, DPdisPCA's factor.
STATISTICS = {**MOMENTS, **{s.name: s for s in (EXCESS, RESIDUAL_SCALE, SANDWICH_K, SANDWICH_V, SIGN_SCORE,
                                                 HISTOGRAM, LOCATION, FACTOR)}}


#: What a plan's round may release (a factor is a DPdisPCA site's reply to a second-moment round).
ROUND_STATISTICS = tuple(name for name, s in STATISTICS.items() if s is not FACTOR)


def as_statistic(statistic: Any) -> Statistic:
    """The value of a statistic's name (a value passes as it is); refuse an unknown name in one line."""
    if isinstance(statistic, Statistic):
        return statistic
    found = STATISTICS.get(statistic) if isinstance(statistic, str) else None
    if found is None:
        allowed = ", ".join(repr(s) for s in sorted(STATISTICS))
        raise ValueError(f"'statistic' must be one of {allowed}; got {statistic!r}.")
    return found
