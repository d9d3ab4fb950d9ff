"""Each moment one machine releases as one frozen value: what release code asks of it instead of comparing its name.

A moment is named by a string where parameters, files and reports meet it (``statistic="second"``,
the ``second_moment`` field of a :class:`~dpmoments.moments.Release`); :func:`as_moment` turns the name into
its value once, and from there code asks the value: its shape (``ndim`` axes of length ``d``), the
:class:`~dpmoments.moments.Release` field it is released in (``slot``), its sensitivity under each
neighbouring relation (:meth:`~MomentStatistic.sensitivity`, the table of :mod:`.sensitivity`), and how
a mechanism's noise is added to it with its symmetry (:meth:`~MomentStatistic.add_noise`).

A new moment is one more value here; the multi-site wing's statistics
(:mod:`dpmoments.multisite.statistics`) are built on these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from ..privacy.relations import NEIGHBOURS

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MomentStatistic", "SECOND", "CROSS", "THIRD", "MOMENT_STATISTICS", "as_moment"]


def _h3(d: float) -> float:
    return (d**1.5 + 3.0 * math.sqrt(d) + 2.0) / 6.0


@dataclass(frozen=True, repr=False)
class MomentStatistic:
    """A normalised moment of the clipped rows: ``ndim`` axes of length ``d``.

    Attributes
    ----------
    name : str
        How parameters, files and reports write it (``"second"``).
    label : str
        How a sentence names it (``"second moment"``).
    ndim : int
        Its axes: 2 for a matrix, 1 for a vector, 3 for a tensor.
    power : int
        The power of the row bound ``R`` an entry of one row's contribution is at most (a cross moment's
        is ``R`` times the response's bound).
    symmetric : bool
        Exactly symmetric in every pair of axes.
    slot : str
        The :class:`~dpmoments.moments.Release` field it is released in.
    sums : str or None
        The :class:`~dpmoments.moments.MomentSums` field one pass sums it in (None for a moment those sums do not
        hold: the multi-site clipping excess, summed by :mod:`~dpmoments.moments.clipping_bias`).
    """

    name: str
    label: str
    ndim: int
    power: int
    symmetric: bool
    slot: str
    sums: Optional[str] = None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"MomentStatistic({self.name!r})"

    def __reduce__(self) -> tuple:  # a copy is the one value of its name, so `is` holds
        return (as_moment, (self.name,))

    @property
    def mirrored(self) -> bool:
        """A symmetric matrix: its noise is drawn on the upper triangle and mirrored."""
        return self.symmetric and self.ndim == 2

    @property
    def needs_response(self) -> bool:
        """Bounded by the public response bound as well as the row bound (the cross moment ``X^T y / n``)."""
        return self.power == 1 and self.ndim == 1

    def entries(self, d: int) -> int:
        """Its number of entries at ``d`` features: ``d^ndim``."""
        return d ** self.ndim

    def one_row(self, norm: str, d: int, row_norm: float, response_bound: Optional[float]) -> float:
        """The L1 or L2 norm one row's term can have (the sum's add-remove sensitivity); see :mod:`.sensitivity`."""
        R = row_norm
        if self.needs_response:
            if response_bound is None:
                raise ValueError("the cross moment needs 'response_bound'.")
            return R * response_bound if norm == "l2" else math.sqrt(d) * R * response_bound
        if norm == "l2":
            return R ** self.power
        return (d + 1) * R**2 / 2.0 if self.ndim == 2 else _h3(d) * R**3

    def sensitivity(self, *, norm: str, n_samples: Optional[int], n_features: int, neighbours: str,
                    row_norm: float, response_bound: Optional[float] = None) -> float:
        """The L1 or L2 sensitivity of the released moment (the mean, or under add-remove the sum)."""
        one_row = self.one_row(norm, n_features, row_norm, response_bound)
        if neighbours == "add-remove":  # n is private: the sum is released, one row's term moves
            if n_samples is not None:
                raise ValueError("under neighbours='add-remove' n is private and the noise goes on the sum: pass "
                                 "n_samples=None (dividing by the exact n is the 'zero-out' relation).")
            return one_row
        if neighbours not in NEIGHBOURS:
            raise ValueError(f"'neighbours' must be one of {', '.join(map(repr, NEIGHBOURS))}; got {neighbours!r}.")
        if n_samples is None:
            raise ValueError(f"neighbours={neighbours!r} divides by the public n: pass 'n_samples'.")
        # Replace-one moves two rows' worth, except the second-moment L2 case, where
        # the two rank-one terms are orthogonal at the worst case: sqrt(2), not 2.
        if neighbours == "zero-out":
            factor = 1.0
        elif self.mirrored and norm == "l2":
            factor = math.sqrt(2.0)
        else:
            factor = 2.0
        return factor * one_row / n_samples

    def of_sums(self, sums: Any) -> "np.ndarray":
        """The normalised moment from one pass's :class:`~dpmoments.moments.MomentSums`: its sum over ``n``,
        made exactly symmetric where it is symmetric (BLAS's rounding leaves a Gram product a few ulps off)."""
        from .symmetry import symmetrise_matrix, symmetrise_tensor  # numpy only once a moment is computed

        if self.sums is None:
            raise ValueError(f"the {self.label} is not held by one pass's moment sums.")
        value = getattr(sums, self.sums) / sums.n
        if not self.symmetric:
            return value
        return (symmetrise_matrix if self.ndim == 2 else symmetrise_tensor)(value)

    def add_noise(self, mechanism: Any, values: np.ndarray, scale: float, rng: Any) -> np.ndarray:
        """``values`` plus the mechanism's noise at ``scale``: a symmetric matrix is noised in place (``values``
        must be the caller's own new array), a vector or tensor gets a new array."""
        if self.mirrored:
            return mechanism.add_matrix(values, scale, rng)
        draw = mechanism.vector if self.ndim == 1 else mechanism.tensor
        return values + draw(values.shape[0], scale, rng)


SECOND = MomentStatistic("second", "second moment", ndim=2, power=2, symmetric=True, slot="second_moment",
                         sums="xtx")
CROSS = MomentStatistic("cross", "cross moment", ndim=1, power=1, symmetric=False, slot="cross_moment",
                        sums="xty")
THIRD = MomentStatistic("third", "third moment", ndim=3, power=3, symmetric=True, slot="third_moment",
                        sums="third")

#: Every moment one machine releases, by name.
MOMENT_STATISTICS = {m.name: m for m in (SECOND, CROSS, THIRD)}


def as_moment(statistic: Any) -> MomentStatistic:
    """The value of a moment's name (a value passes as it is); refuse an unknown name in one line."""
    if isinstance(statistic, MomentStatistic):
        return statistic
    found = MOMENT_STATISTICS.get(statistic) if isinstance(statistic, str) else None
    if found is None:
        allowed = ", ".join(repr(s) for s in MOMENT_STATISTICS)
        raise ValueError(f"'statistic' must be one of {allowed}; got {statistic!r}.")
    return found
