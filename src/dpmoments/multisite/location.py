r"""A location chosen across sites: per-coordinate noisy histograms on a public signed grid, summed by the aggregator.

The building block of a private centre across sites (a **location step**): every site
counts, for each of the ``d`` coordinates, how many of its rows have that coordinate in
each bin of a public, coarse, signed grid (:class:`AutoLocation`: the edges
``±low * factor**k`` up to ``±high``, and 0), adds its own Gaussian noise to the ``d``
histograms and sends them. The aggregator sums the sites' noisy histograms and takes, per
coordinate, the median of the sum, rounded **up** to a bin's upper edge
(:func:`choose_location`): the location ``m``, post-processing of the noisy counts and the
public ``N = sum_s N_s``. No site reveals a raw value; nothing is pooled from raw data.

A plan with ``center="private"`` (:meth:`~dpmoments.multisite.plan.Plan.build`) asks
:attr:`AutoLocation.steps` such steps first (by default as many as the rows allow, up to four): each later one counts the rows
centred at the location so far and moves it by the medians it finds, since one rounded
median can be far from the data on a log-spaced grid (a factor √2 of ``|median|``). Every
later query carries ``m``, each site centres its rows at it, and a **mean round** (the first
moment of the clipped rows centred at ``m``, its own share :attr:`AutoLocation.mean`) lets
the analysis move the centre from ``m`` to the private mean (``docs/bounds.md``, "Across
sites").

Privacy
-------
Bins ``(t_{k-1}, t_k]`` of the signed edges ``t_0 < ... < t_{E-1}`` (the first and last
open), ``B = E + 1`` per coordinate. Under replace-one, one row changes each coordinate's
value, so each of the ``d`` histograms loses one count in one bin and gains one in another:
at most ``2d`` counts change by 1, L2 sensitivity :math:`\sqrt{2d}` of the concatenated
``d x B`` counts (L1 ``2d``). Under zero-out the row becomes the zero row, whose every
coordinate lies in the bin ``(t_{-}, 0]`` holding 0: the same bound (a coordinate already
in that bin changes nothing). The step is a Gaussian mechanism with that sensitivity and
each site's own noise :math:`\sigma_s` per count, calibrated to the step's share of the
site's budget; the noise is the site's own, independent of every other message, so its
guarantee against the aggregator with any number of colluders is the per-site one (as for
the bound step, :mod:`~dpmoments.multisite.bounds`).

Accuracy
--------
Per coordinate, the count at or below each edge is estimated as in :mod:`~dpmoments.multisite.bounds`
(:func:`~dpmoments.multisite.bounds.cumulative_estimate`: variance at most :math:`vB/4`,
:math:`v = \sum_s \sigma_s^2`); a step is refused unless the ``N/2`` rows on each side of
the median are :data:`~dpmoments.multisite.bounds.MARGIN_SD` times that noise's std (:meth:`AutoLocation.check_rows`).
With ``d`` coordinates the sensitivity grows as :math:`\sqrt d`, so the rows a location step
needs grow with :math:`\sqrt d` too; a narrower search range (fewer bins) needs fewer.
"""

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Optional

import numpy as np

from .._validation import check_int
from .bounds import GRID_FACTOR, MARGIN_SD, check_grid, cumulative_estimate, grid_edges

__all__ = ["AutoLocation", "LOCATION_SHARE", "MEAN_SHARE", "MAX_AUTO_STEPS", "location_sensitivity", "location_counts",
           "choose_location", "private_location"]

#: The default share of every site's budget the location steps spend, together (twice the single-site
#: ``CenterBudget.location``: per-coordinate histograms need more rows than one draw; docs/bounds.md).
LOCATION_SHARE = 0.1
#: The default share of every site's budget the mean round spends (single-site ``CenterBudget.mean``).
MEAN_SHARE = 0.2
#: The most location steps taken by default: each shrinks the offset to at most 0.29 of itself, so four
#: bring a column whose mean is 300 times its spread within about its spread (docs/bounds.md).
MAX_AUTO_STEPS = 4


class TooFewLocationRows(ValueError):
    """A location step refused for too few rows (before any noise is drawn: public facts only)."""


def location_sensitivity(n_features: int) -> float:
    """L2 sensitivity of the ``d`` concatenated histograms: one row moves one count in each, :math:`\\sqrt{2d}`."""
    return math.sqrt(2.0 * check_int(n_features, "n_features", minimum=1))


@dataclass(frozen=True)
class AutoLocation:
    """What a location step chooses and how: public, fixed before any data are read.

    Parameters
    ----------
    share : float in (0, 1), default 0.1
        The fraction of every site's budget the location steps spend, together.
    low, high : float, default 1e-6 and 1e8
        The public search range of ``|x_j|`` (as single-site ``SearchRange``); the grid is signed.
    factor : float > 1, default sqrt(2)
        The spacing of the positive edges ``low * factor**k`` (mirrored, plus 0).
    mean : float in (0, 1), default 0.2
        The fraction of every site's budget the mean round spends (the first moment of the
        clipped rows centred at the location).
    steps : int in [0, 8], optional
        Location steps, each paid ``share / steps`` (0: none, the mean round is taken about the origin of the
        sites' rows, the midpoints where every column has a range; ``share`` is then not spent): step 0 counts
        the rows' coordinates, each later step the coordinates of the rows centred at the location so far, and moves it by
        the median so found. A grid edge is within a factor ``factor`` of the median, so one
        step leaves the location up to ``factor - 1`` of ``|median|`` away (41 for a median of
        100); each further step shrinks that offset to at most ``1 - 1/factor`` of it (measured:
        docs/bounds.md, "Across sites"). Default: as many as the rows allow, up to
        :data:`MAX_AUTO_STEPS` (public facts only: :meth:`~dpmoments.multisite.plan.Plan.build`
        takes the most for which :meth:`check_rows` passes).
    """

    share: float = LOCATION_SHARE
    low: float = 1e-6
    high: float = 1e8
    factor: float = GRID_FACTOR
    mean: float = MEAN_SHARE
    steps: Optional[int] = None

    def __post_init__(self) -> None:
        for name, api in (("share", "location_share"), ("mean", "center_share")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
                raise ValueError(f"'{api}' must be a share in (0, 1); got {value!r}.")
            object.__setattr__(self, name, float(value))
        if self.steps is not None:
            if isinstance(self.steps, bool) or not isinstance(self.steps, (int, np.integer)) or \
                    not 0 <= self.steps <= 8:
                raise ValueError(f"'steps' (location steps) must be an integer in [0, 8]; got {self.steps!r}.")
            object.__setattr__(self, "steps", int(self.steps))
        if self.share + self.mean >= 1:
            raise ValueError(f"'location_share' {self.share:g} and 'center_share' {self.mean:g} add up to 1 or more "
                             "and leave nothing for the release.")
        check_grid(self)

    def edges(self) -> np.ndarray:
        """The signed grid: the positive edges (as :meth:`~dpmoments.multisite.bounds.AutoBounds.edges`) mirrored, and 0."""
        pos = grid_edges(self)
        return np.concatenate([-pos[::-1], [0.0], pos])

    @property
    def n_bins(self) -> int:
        return self.edges().size + 1

    def on_grid(self, moves: Any, scale: float = 0.0) -> bool:
        """Whether every coordinate of ``moves`` is an edge of the grid: how far a location step may move the centre.

        To rounding: relative to the move's size or ``scale`` (the size of the centres the
        move was computed from as a difference), whichever is larger.
        """
        c = np.asarray(moves, dtype=np.float64)
        if c.ndim != 1 or not np.all(np.isfinite(c)):
            return False
        gap = np.min(np.abs(self.edges()[None, :] - c[:, None]), axis=1)
        return bool(np.all(gap <= 1e-12 * np.maximum(np.abs(c), scale)))

    @classmethod
    def from_budget(cls, budget: Any = None) -> "AutoLocation":
        """From ``center_budget``: ``None`` (the defaults), a share (the mean's), a ``CenterBudget`` or an AutoLocation."""
        if budget is None or isinstance(budget, cls):
            return budget or cls()
        if isinstance(budget, bool) or not isinstance(budget, (int, float)):
            if hasattr(budget, "mean") and hasattr(budget, "location") and hasattr(budget, "prior"):
                if budget.prior is not None:  # a public guess would be a public centre: use center= for that
                    raise ValueError("center='private' across sites takes no 'prior': give a public 'center' instead.")
                return cls(share=budget.location, mean=budget.mean)
            raise TypeError(f"'center_budget' must be a share in (0, 1), a CenterBudget or an AutoLocation; "
                            f"got {budget!r}.")
        return cls(mean=float(budget))

    def max_noise_sd(self, n_total: float) -> float:
        """The largest per-count std of the summed histograms that ``n_total`` rows bear (:meth:`check_rows`)."""
        return n_total / 2.0 / (MARGIN_SD * math.sqrt(self.n_bins) / 2.0)

    def bears(self, n_total: float, noise_sd: float) -> bool:
        """Whether ``n_total`` rows can bear a location step's count noise (per count, summed: ``noise_sd``)."""
        return noise_sd * (1 - 1e-12) <= self.max_noise_sd(n_total)

    def check_rows(self, n_total: float, noise_sd: float, runs: Optional[str] = None) -> None:
        """Refuse (one line) a location step whose count noise would decide the median's bin.

        Public facts only: ``n_total`` rows in all and ``noise_sd``, the per-count std of the
        summed histograms. The worst cumulative count's noise is ``noise_sd * sqrt(B) / 2``; the
        ``n_total / 2`` rows on either side of the median must be :data:`~dpmoments.multisite.bounds.MARGIN_SD`
        times it. ``runs``: what would run the plan, said before the advice (as :meth:`.AutoBounds.check_rows`).
        """
        if not self.bears(n_total, noise_sd):
            sd = float(noise_sd) * math.sqrt(self.n_bins) / 2.0
            raise TooFewLocationRows(f"center='private' across sites: too few rows ({n_total} in all) for the noisy "
                                     f"per-coordinate histograms with this share of the budget among {self.n_bins} "
                                     f"bins (their count noise, sd {sd:.3g} rows, would decide the median)"
                                     f"{'; ' + runs if runs else ''}; give a larger 'location_share' or epsilon, a "
                                     "narrower search range, or a public centre.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> "AutoLocation":
        return cls(**dict(data))


def private_location(center: Any, center_budget: Any, *, off: bool, rows: str, rank: Optional[int],
                     rounds: Iterable[Any]) -> Optional[AutoLocation]:
    """A plan's :class:`AutoLocation` when ``center="private"`` (else ``None``), checked.

    ``off``: the sites' epsilon is infinite; ``rows``, ``rank``, ``rounds``: the plan's (a private
    centre is for one second moment of the rows ``x``).
    """
    if not isinstance(center, str):
        if center_budget is not None:
            raise ValueError("'center_budget' applies only to center='private'.")
        return None
    if center != "private":
        raise ValueError(f"'center' must be a public vector (one value per column) or 'private'; got {center!r}.")
    if off:
        raise ValueError("center='private' needs a finite epsilon: with epsilon=inf nothing is private and no noisy "
                         "count can be released; give a public centre.")
    if rows != "x" or rank is not None or any(r.statistic != "second" or r.w_max is not None for r in rounds):
        raise ValueError("center='private' across sites is for one second moment of the rows x (covariance, pca, "
                         "precision, ridge): the other analyses' statistics are not taken about a centre; give a "
                         "public centre or none.")
    return AutoLocation.from_budget(center_budget)


def location_counts(X: Any, edges: np.ndarray) -> np.ndarray:
    """Exact per-coordinate counts of ``X`` (n, d) in the bins ``(t_{k-1}, t_k]``: shape (d, B).

    Private: only a site reads them, and only with its own noise added do they leave it.
    """
    X = np.asarray(X, dtype=np.float64)
    B = edges.size + 1
    idx = np.searchsorted(edges, X, side="left")  # (n, d): the bin of each coordinate
    flat = idx + B * np.arange(X.shape[1])[None, :]
    return np.bincount(flat.ravel(), minlength=B * X.shape[1]).reshape(X.shape[1], B).astype(np.float64)


def choose_location(summed: Any, n_total: float, auto: AutoLocation) -> tuple[np.ndarray, np.ndarray]:
    """Per coordinate, the upper edge of the first bin whose estimated cumulative count reaches ``n_total / 2``.

    ``summed``: the sum of the sites' noisy histograms, shape (d, B). Returns ``(location,
    at_range_end)``: the location (d,) and a boolean per coordinate for a median at an end
    edge of the grid. Post-processing of the noisy counts and the public ``n_total``.
    """
    summed = np.atleast_2d(np.asarray(summed, dtype=np.float64))
    edges = auto.edges()
    if summed.shape[1] != edges.size + 1:
        raise ValueError(f"'summed' must have {edges.size + 1} bins per coordinate; got {summed.shape[1]}.")
    location, at_end = np.empty(summed.shape[0]), np.zeros(summed.shape[0], dtype=bool)
    for j, row in enumerate(summed):
        estimate, _ = cumulative_estimate(row, n_total)
        reached = np.flatnonzero(estimate >= 0.5 * n_total)
        k = int(reached[0]) if reached.size else edges.size - 1
        location[j], at_end[j] = edges[k], k in (0, edges.size - 1)
    return location, at_end
