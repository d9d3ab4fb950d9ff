r"""Bounds chosen across sites: each site's noisy histogram on a public grid, summed by the aggregator.

A plan with ``row_norm="auto"`` (or ``response_bound="auto"``) starts with a **bound step**
(step 0): every site counts how many of its rows have a statistic (``||x - c||`` of the
rows it forms, or ``|y|``) in each bin of a public, coarse, log-spaced grid
(:class:`AutoBounds`), adds its own Gaussian noise and sends the noisy counts. The
aggregator sums the noisy histograms and takes the bound as the requested quantile of the
sum, rounded **up** to a bin's upper edge (:func:`choose_bound`); that bound goes into the
queries of the moment steps, where each site clips its rows to it and scales its noise to
the sensitivity at that bound. No site reveals a raw norm; nothing is pooled from raw data;
everything after the noisy counts is post-processing.

Privacy
-------
Bins ``(t_{k-1}, t_k]`` of the edges ``t_0 < ... < t_{G-1}`` (the first and last open),
``B = G + 1`` of them. Under replace-one, one row moves from one bin to another: two counts
change by 1 each (L2 sensitivity :math:`\sqrt2`, L1 2). Under zero-out the row becomes the
zero row, whose statistic is 0 (bin 0): the same, or nothing if it was in bin 0. The
histogram is a Gaussian mechanism with that sensitivity and each site's own noise
:math:`\sigma_s` per bin, calibrated (like every round of a plan, :mod:`.plan`) to the
step's share of the site's budget. The noise is the site's own, independent of every other
message: the aggregator's view of site ``s``'s histogram is that histogram alone, and
colluding sites know nothing of its noise, so the guarantee against the aggregator with any
number of colluders is the per-site one (no zero-sum shares are needed, and none are used:
CAPE's correlated noise helps only where the *sum* is to carry less noise than each
message). The site's ledger charges the bound step with the rest of the plan, once
(:meth:`~.plan.Plan.cost` composes every round, this one included).

Accuracy
--------
With ``N = sum_s N_s`` public, the count of rows at or below ``t_k`` is estimated twice,
from the bins below (``k + 1`` noisy counts) and as ``N`` minus the bins above
(``B - k - 1`` of them), and the two independent estimates are averaged with
inverse-variance weights: variance :math:`v (k+1)(B-k-1)/B \le vB/4` with
:math:`v = \sum_s \sigma_s^2`. A noisy count may be negative and the estimate need not be
monotone; the bound is the upper edge of the *first* bin whose estimate reaches ``q N``
(the same as the first crossing of its running maximum), so neither matters. The noise of
a cumulative count grows with the square root of the number of bins, hence the coarse grid
(factor sqrt 2 by default: 95 edges, 96 bins, over ``[1e-6, 1e8]``); rounding up costs at most that factor.
"""

import math
from dataclasses import asdict, dataclass
from typing import Any, Optional, Union

import numpy as np

from .._validation import check_positive
from ..moments import BoundBudget

__all__ = ["AutoBounds", "auto_bounds", "AUTO_NAMES", "histogram_counts", "cumulative_estimate", "choose_bound",
           "HISTOGRAM_SENSITIVITY", "MARGIN_SD", "LOWEST_QUANTILE"]

#: What may be chosen across sites, and the statistic each counts.
AUTO_NAMES = {"row_norm": "||x - c|| of the rows the plan forms", "response_bound": "|y|"}
#: One row moves from one bin to another: two counts change by one (replace-one and zero-out alike).
HISTOGRAM_SENSITIVITY = math.sqrt(2.0)
#: A bound step is refused unless the rows beyond the target quantile (and below it) are this many
#: standard deviations of the worst cumulative count's noise: below, the noise decides the bin.
MARGIN_SD = 3.0
GRID_FACTOR = math.sqrt(2.0)
#: ``quantile="auto"`` never covers less than this quantile (the fixed default before it; check_rows asks of it).
LOWEST_QUANTILE = 0.95  # measured against 2 and 1.25: docs/bounds.md, "Across sites"


def _fraction(value: Any, name: str, low: float = 0.0, high: float = 1.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value < high:
        raise ValueError(f"'{name}' must be in ({low:g}, {high:g}); got {value!r}.")
    return float(value)


def check_grid(grid: Any) -> None:
    """Check and normalise a frozen choosing step's public grid (``low``, ``high``, ``factor``) in place."""
    low, high = check_positive(grid.low, "low"), check_positive(grid.high, "high")
    if not low < high:
        raise ValueError(f"the search range is empty: 'low' must be below 'high'; got low={low:g}, high={high:g}.")
    if isinstance(grid.factor, bool) or not isinstance(grid.factor, (int, float)) or not 1.0 < grid.factor < math.inf:
        raise ValueError(f"'factor' (the grid's spacing) must be a number > 1; got {grid.factor!r}.")
    for name, value in (("low", low), ("high", high), ("factor", grid.factor)):
        object.__setattr__(grid, name, float(value))


def grid_edges(grid: Any) -> np.ndarray:
    """``ceil(log(high/low)/log(factor)) + 1`` edges, log-spaced from ``low`` to ``high``."""
    steps = max(1, math.ceil(math.log(grid.high / grid.low) / math.log(grid.factor) - 1e-9))
    return np.geomspace(grid.low, grid.high, steps + 1)


@dataclass(frozen=True)
class AutoBounds:
    """What a plan's bound step chooses and how: public, fixed before any data are read.

    Parameters
    ----------
    names : tuple of str
        Keys of :data:`AUTO_NAMES` chosen privately (``"row_norm"``, ``"response_bound"``).
    share : float in (0, 1), default 0.1
        The fraction of every site's budget the bound step spends (split equally between
        the names); the plan's other rounds share the rest.
    quantile : "auto" or float in (0, 1), default "auto"
        The bound covers this quantile of the pooled statistic (then rounded up to an edge).
        ``"auto"`` (:meth:`target_quantile`): the highest quantile the summed histograms' noise
        can place, ``1 - MARGIN_SD * (worst cumulative count's noise sd) / N``, never below
        :data:`LOWEST_QUANTILE`: it clips as few rows as the noise lets the step tell apart (the
        0.95-quantile clipped 3-4% of RAND HIE's rows, against the single machine's 0.2-0.8%:
        docs/across-sites.md).
    low, high : float, default 1e-6 and 1e8
        The public search range (as single-site ``SearchRange``).
    factor : float > 1, default sqrt(2)
        The grid's spacing: edges ``low * factor**k`` (evenly log-spaced up to ``high``, no
        step wider than ``factor``): coarse, because the noise of a cumulative count grows
        with the number of bins summed.
    bias : float in [0, 1), default 0.1
        As the single machine's ``BoundBudget.bias``: the fraction of every site's budget (beside
        ``share``) that releases what clipping at the chosen ``row_norm`` removed from each variance
        (an ``"excess"`` round beside a second moment of the rows ``x``), so that the intervals
        count the clipping bias; 0 turns it off.
    """

    names: tuple[str, ...]
    share: float = 0.1
    quantile: Union[str, float] = "auto"
    low: float = 1e-6
    high: float = 1e8
    factor: float = GRID_FACTOR
    bias: float = 0.1

    def __post_init__(self) -> None:
        names = tuple(self.names)
        if not names or len(set(names)) != len(names) or any(n not in AUTO_NAMES for n in names):
            raise ValueError(f"'names' must be distinct keys of {sorted(AUTO_NAMES)}; got {names!r}.")
        object.__setattr__(self, "names", names)
        if isinstance(self.share, bool) or not isinstance(self.share, (int, float)) or not 0 < self.share < 1:
            raise ValueError(f"'bound_budget' must be a share in (0, 1); got {self.share!r}.")
        object.__setattr__(self, "share", float(self.share))
        if isinstance(self.quantile, str) and self.quantile != "auto":
            raise ValueError(f"'quantile' must be 'auto' or in (0, 1); got {self.quantile!r}.")
        if not isinstance(self.quantile, str):
            object.__setattr__(self, "quantile", _fraction(self.quantile, "quantile"))
        if isinstance(self.bias, bool) or not isinstance(self.bias, (int, float)) or not 0 <= self.bias < 1:
            raise ValueError(f"'bias' must be a share in [0, 1); got {self.bias!r}.")
        object.__setattr__(self, "bias", float(self.bias))
        check_grid(self)

    @classmethod
    def from_budget(cls, names: Any, budget: Any = None) -> "AutoBounds":
        """From ``bound_budget``: ``None`` (the defaults), a share, a ``BoundBudget`` or an :class:`AutoBounds`."""
        if budget is None:
            return cls(tuple(names))
        if isinstance(budget, cls):
            return cls(tuple(names), budget.share, budget.quantile, budget.low, budget.high, budget.factor, budget.bias)
        if isinstance(budget, BoundBudget):  # the single-machine budget: its share, quantile, range and bias share
            quantile = "auto" if budget.quantile == "auto" else float(budget.quantile)
            return cls(tuple(names), budget.share, quantile, budget.search.low, budget.search.high, bias=budget.bias)
        if isinstance(budget, bool) or not isinstance(budget, (int, float)):
            raise TypeError(f"'bound_budget' must be a share in (0, 1), a BoundBudget or an AutoBounds; "
                            f"got {budget!r}.")
        return cls(tuple(names), float(budget))

    def edges(self) -> np.ndarray:
        """The grid's edges: ``ceil(log(high/low)/log(factor)) + 1`` of them, log-spaced from ``low`` to ``high``."""
        return grid_edges(self)

    @property
    def n_bins(self) -> int:
        return self.edges().size + 1

    def edge(self, value: Any) -> Optional[float]:
        """The grid edge equal to ``value`` (to rounding), or ``None``: a bound a query may carry."""
        edges = self.edges()
        if not isinstance(value, (float, int, np.floating)) or not math.isfinite(value):
            return None
        k = int(np.argmin(np.abs(edges - value)))
        return float(edges[k]) if abs(edges[k] - value) <= 1e-12 * edges[k] else None

    def target_quantile(self, n_total: int, noise_sd: float) -> float:
        """The quantile the bound covers: a fixed one, or (``"auto"``) the highest that the summed histograms'
        per-bin noise ``noise_sd`` lets the step place among ``n_total`` rows, ``1 - MARGIN_SD * sd_B / n_total``
        with ``sd_B = noise_sd sqrt(B) / 2`` (the worst cumulative count's), never below :data:`LOWEST_QUANTILE`.
        Public facts only (the plan's stds and row counts)."""
        if not isinstance(self.quantile, str):
            return self.quantile
        worst = noise_sd * math.sqrt(self.n_bins) / 2.0
        return min(max(LOWEST_QUANTILE, 1.0 - MARGIN_SD * worst / max(n_total, 1)), 1.0 - 1.0 / max(n_total, 1))

    def max_noise_sd(self, n_total: int) -> float:
        """The largest per-bin std of the summed histograms that ``n_total`` rows bear (:meth:`check_rows`)."""
        target = (LOWEST_QUANTILE if isinstance(self.quantile, str) else self.quantile) * n_total
        return min(target, n_total - target) / (MARGIN_SD * math.sqrt(self.n_bins) / 2.0)

    def check_rows(self, n_total: int, noise_sd: float, name: str, runs: Optional[str] = None) -> None:
        """Refuse (one line) a bound step whose count noise would decide the bin (``noise_sd``: per bin, summed).

        Public facts only: ``n_total`` and the stds of the plan. The worst cumulative count's
        noise is ``noise_sd * sqrt(B) / 2`` (module docstring); the rows on either side of the
        target must be :data:`MARGIN_SD` times that. ``runs``: what would run the plan (the
        epsilon, a share: :func:`~dpmoments.multisite.rounds.check_choice_steps`), said before the advice.
        """
        if noise_sd * (1 - 1e-12) > self.max_noise_sd(n_total):
            sd = noise_sd * math.sqrt(self.n_bins) / 2.0
            raise ValueError(f"{name}='auto' across sites: too few rows ({n_total} in all) for the noisy histograms "
                             f"with this share of the budget among {self.n_bins} bins (their count noise, sd "
                             f"{sd:.3g} rows, would decide the bin){'; ' + runs if runs else ''}; give a larger "
                             "budget share or epsilon, a narrower search range, or a public value.")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["names"] = list(self.names)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "AutoBounds":
        data = dict(data)
        data["names"] = tuple(data["names"])
        return cls(**data)


def auto_bounds(row_norm: Any, response_bound: Any, bound_budget: Any, *, off: bool = False,
                rows: str = "x") -> Optional[AutoBounds]:
    """A plan's :class:`AutoBounds` when a bound is ``"auto"`` (else ``None``), checked.

    ``off``: the sites' epsilon is infinite (refused: nothing private to release); ``rows``: the plan's rows
    (three-word documents have norm sqrt 3 and need no bound).
    """
    names = tuple(name for name, v in (("row_norm", row_norm), ("response_bound", response_bound))
                  if isinstance(v, str) and v == "auto")
    if not names:
        if bound_budget is not None:
            raise ValueError("'bound_budget' applies only to an 'auto' bound (row_norm or response_bound).")
        return None
    if off:
        raise ValueError(f"{names[0]}='auto' needs a finite epsilon: with epsilon=inf nothing is private and no "
                         "noisy histogram can be released; give a public value.")
    if rows == "stm":
        raise ValueError("row_norm='auto' has no use for three-word documents: their rows have norm sqrt(3).")
    return AutoBounds.from_budget(names, bound_budget)


def histogram_counts(values: Any, edges: np.ndarray) -> np.ndarray:
    """Exact counts of ``values`` in the bins ``(t_{k-1}, t_k]`` (private: only a site reads them)."""
    idx = np.searchsorted(edges, np.asarray(values, dtype=np.float64), side="left")
    return np.bincount(idx, minlength=edges.size + 1).astype(np.float64)


def cumulative_estimate(summed: Any, n_total: float) -> tuple[np.ndarray, np.ndarray]:
    """Per edge ``t_k``: the estimated count of rows at or below it, and that estimate's variance per unit ``v``.

    The inverse-variance average of the sum of the bins below and ``n_total`` minus the sum
    of the bins above (module docstring); ``summed`` is the sum of the sites' noisy histograms.
    """
    summed = np.asarray(summed, dtype=np.float64)
    B = summed.size
    running = np.cumsum(summed)
    below = running[:-1]
    above = n_total - (running[-1] - below)
    k1 = np.arange(1, B, dtype=np.float64)  # bins at or below each edge
    w_below, w_above = 1.0 / k1, 1.0 / (B - k1)
    return (w_below * below + w_above * above) / (w_below + w_above), k1 * (B - k1) / B


def choose_bound(summed: Any, n_total: int, auto: AutoBounds, noise_sd: float = 0.0) -> tuple[float, int, bool]:
    """The bound: the upper edge of the first bin whose estimated cumulative count reaches ``q * n_total``.

    ``q`` is :meth:`AutoBounds.target_quantile` at the summed histograms' per-bin noise sd
    ``noise_sd``. Returns ``(value, index, at_range_end)``. Post-processing of the noisy counts and the
    public ``n_total`` and stds; robust to negative counts (no clamping, no monotonicity needed).
    """
    edges = auto.edges()
    estimate, _ = cumulative_estimate(summed, n_total)
    reached = np.flatnonzero(estimate >= auto.target_quantile(n_total, noise_sd) * n_total)
    k = int(reached[0]) if reached.size else edges.size - 1
    return float(edges[k]), k, k in (0, edges.size - 1)
