r"""The private column scales across sites, read off a location step's summed noisy histograms (post-processing).

The last location step's histograms count each column's rows centred at the location before that step, and
its median (the move) is the upper edge of one bin of the public signed grid. One machine's private scale is
the median of ``|x - median|`` with the rows in the median's grid bin counted as tied to it (distance 0),
never below the gap to the column's next values (a 0/1 column's 1) nor the width of that bin
(:mod:`~dpmoments.moments.scale_floors`). Across sites they, and one machine's upper-quartile floor, are read
off the summed histograms:

* **the median distance**: the median bin's rows at 0, every other bin's spread evenly over their distances
  from the median (the bin's near to its far edge; an end bin at its finite edge), the count within each
  distance estimated from both ends as the bound step's cumulative counts are. Half the interquartile range
  of the signed counts, used before, put the upper quartile of RAND HIE's ``idp`` (74% zeros) in the gap
  above its zeros and gave it scales of 1.6e-5 to 4e-3, which multiplied it by up to 6e4 and ran the
  covariance away (3 of 8 seeds at epsilon = 1 over an error of 1, up to 2e6);
* **the gap**: the distance from the median to the nearest bin on either side whose noisy count is above
  :data:`NOISE_MULTIPLE` times its noise sd (so the noise of the empty bins next to it does not pass for
  rows), so a column whose median's bin holds half its rows or more (a zero-inflated or 0/1 column: its
  median distance is 0) is scaled by the distance to its other values, as one machine's coarse floor does;
* **half the upper quartile** of the same distances, as one machine's extra draw (here free, from the same
  counts): a median in a gap between a column's values (a balanced 0/1 column, whose median's bin may be an
  empty one just beyond its zeros) has half its rows at about the gap's near side, and its median distance
  can be anything from that tiny distance to the far side's; the upper quartile lies among the far side's
  rows. A Gaussian column keeps its median distance (0.67 sd against 0.58);
* **the resolution**: the median bin's width (rows within it cannot be told from the median).

The scale is the largest of the four; the bottom-of-grid guard and the ranges' limits follow
(:func:`~dpmoments.multisite.column_ranges.column_scales`). Post-processing of the noisy counts, the public
``n_total``, the public grid and the plan's public noise sd: no share of its own, no new round or payload.
"""

from typing import Any

import numpy as np

from ..moments.scale_floors import upper_edge_bin

__all__ = ["NOISE_MULTIPLE", "site_spreads"]

#: For the gap, a summed bin counts as holding rows where its noisy count exceeds this many noise sds: about 3e-5
#: of the empty bins pass (under one in the ~190 bins of ten columns). On RAND HIE at epsilon = 1 (three sites,
#: the last location step's noise sd about 220 rows) a bin needs about 900 of its 20190 rows.
NOISE_MULTIPLE = 4.0


def site_spreads(summed: Any, edges: Any, move: Any, noise_sd: float, n_total: float) -> np.ndarray:
    """Per column, the private scale about the median the last location step drew (module docstring).

    ``summed``: that step's sum of the sites' noisy histograms, ``(d, B)`` with ``B = len(edges) + 1`` (the
    end bins open); ``move``: its per-column median, an edge of ``edges`` (in the same centred units);
    ``noise_sd``: the summed bins' noise sd (public, from the plan); ``n_total``: the public row count.
    """
    summed = np.atleast_2d(np.asarray(summed, dtype=np.float64))
    edges = np.asarray(edges, dtype=np.float64)
    return np.array([_column_spread(row, edges, float(m), noise_sd, n_total)
                     for row, m in zip(summed, np.asarray(move, dtype=np.float64))])


def _column_spread(counts, edges, move, noise_sd, n_total):
    tied = int(upper_edge_bin(edges, move))  # the median's bin
    lower = np.concatenate([[edges[0]], edges])   # each bin's finite ends (an end bin: its one finite edge)
    upper = np.concatenate([edges, [edges[-1]]])
    near = np.where((lower <= move) & (move <= upper), 0.0, np.minimum(np.abs(lower - move), np.abs(upper - move)))
    far = np.maximum(np.abs(lower - move), np.abs(upper - move))
    others = np.arange(counts.size) != tied
    held = others & (counts > NOISE_MULTIPLE * noise_sd)
    gap = float(near[held].min()) if held.any() else 0.0
    median, quartile = (_distance_quantile(near[others], far[others], counts[others], counts[tied], n_total, q)
                        for q in (0.5, 0.75))
    return max(median, quartile / 2.0, gap, float(edges[tied] - edges[tied - 1]))


def _distance_quantile(near, far, counts, tied, n_total, q):
    """Where the estimated count of rows within a distance of the median reaches ``q * n_total``: the median bin's
    ``tied`` rows at 0, every other bin's noisy ``counts`` spread evenly over ``[near, far]``; at each distance
    the inverse-variance average of the count within it and ``n_total`` less the count beyond it (as
    :func:`~dpmoments.multisite.bounds.cumulative_estimate`: each sum's variance is its number of bins), so
    neither the noise of the bins beyond nor that of the bins within adds up unchecked. 0 while the tied rows
    reach it."""
    points = np.unique(np.concatenate([[0.0], near, far]))
    width = far - near
    share = np.clip((points[:, None] - near) / np.where(width > 0, width, 1.0), 0.0, 1.0)
    share = np.where(width > 0, share, (points[:, None] >= near).astype(float))
    within, beyond = 1.0 + share.sum(axis=1), (1.0 - share).sum(axis=1)
    below, above = tied + share @ counts, n_total - (1.0 - share) @ counts
    w_below, w_above = 1.0 / within, 1.0 / np.maximum(beyond, 1e-12)
    estimate = (w_below * below + w_above * above) / (w_below + w_above)
    reached = np.flatnonzero(estimate >= q * n_total)
    k = int(reached[0]) if reached.size else points.size - 1
    if k == 0:
        return 0.0
    before, at = estimate[k - 1], estimate[k]
    fraction = 0.0 if at <= before else min(max((q * n_total - before) / (at - before), 0.0), 1.0)
    return float(points[k - 1] + fraction * (points[k] - points[k - 1]))
