r"""The private column scales across sites, read off a location step's summed noisy histograms (post-processing).

The last location step's histograms count each column's rows centred at the location before that step, and
its median (the move) is the upper edge of one bin of the public signed grid. One machine's private scale is
the median of ``|x - median|`` with the rows in the median's grid bin counted as tied to it (distance 0),
never below the gap to the column's next values (a 0/1 column's 1) nor the width of that bin
(:mod:`~dpmoments.moments.scale_floors`). Across sites the same three are read off the summed histograms:

* **the median distance**: every other bin's rows spread evenly over their distances from the median (the
  bin's near to its far edge; an end bin at its finite edge), the median bin's rows at 0; the bins whose
  noisy count is not above :data:`NOISE_MULTIPLE` times its noise sd are left out, so the noise of the
  hundreds of empty bins does not pass for rows (on RAND HIE it did: half the interquartile range, read
  off the noisy cumulative counts, put the upper quartile of ``idp``, 74% zeros, in the gap above its zeros
  and gave it scales of 1.6e-5 to 4e-3, which multiplied it by up to 6e4 and ran the covariance away);
* **the gap**: the distance from the median to the nearest such bin on either side, so a column whose
  median's bin holds half its rows or more (a zero-inflated or 0/1 column) is scaled by the distance to
  its other values, as one machine's coarse floor does;
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

__all__ = ["NOISE_MULTIPLE", "site_spreads"]

#: A summed bin counts as holding rows where its noisy count exceeds this many noise sds: about 3e-5 of the
#: empty bins pass (under one in the ~190 bins of ten columns), and a bin with a few dozen rows does.
NOISE_MULTIPLE = 4.0


def site_spreads(summed: Any, edges: Any, move: Any, noise_sd: float) -> np.ndarray:
    """Per column, the private scale about the median the last location step drew (module docstring).

    ``summed``: that step's sum of the sites' noisy histograms, ``(d, B)`` with ``B = len(edges) + 1`` (the
    end bins open); ``move``: its per-column median, an edge of ``edges`` (in the same centred units);
    ``noise_sd``: the summed bins' noise sd (public, from the plan).
    """
    summed = np.atleast_2d(np.asarray(summed, dtype=np.float64))
    edges = np.asarray(edges, dtype=np.float64)
    return np.array([_column_spread(row, edges, float(m), noise_sd)
                     for row, m in zip(summed, np.asarray(move, dtype=np.float64))])


def _column_spread(counts, edges, move, noise_sd):
    tied = int(np.clip(np.searchsorted(edges, move, side="left"), 1, edges.size - 1))  # the median's bin
    lower = np.concatenate([[edges[0]], edges])   # each bin's finite ends (an end bin: its one finite edge)
    upper = np.concatenate([edges, [edges[-1]]])
    near = np.where((lower <= move) & (move <= upper), 0.0, np.minimum(np.abs(lower - move), np.abs(upper - move)))
    far = np.maximum(np.abs(lower - move), np.abs(upper - move))
    rows = np.where(counts > NOISE_MULTIPLE * noise_sd, counts, 0.0)
    rows[tied] = 0.0
    resolution = edges[tied] - edges[tied - 1]
    held = np.flatnonzero(rows > 0)
    if held.size == 0:
        return float(resolution)
    gap = float(near[held].min())
    total = rows.sum() + max(float(counts[tied]), 0.0)
    median, upper = (_distance_quantile(near[held], far[held], rows[held], total, q) for q in (0.5, 0.75))
    return max(median, upper / 2.0, gap, float(resolution))


def _distance_quantile(near, far, rows, total, q):
    """Where ``total - sum(rows)`` tied rows at 0 and each bin's ``rows`` spread evenly over ``[near, far]`` reach
    ``q`` of ``total`` (0 while the tied rows are that share or more)."""
    points = np.unique(np.concatenate([[0.0], near, far]))
    width = np.maximum(far - near, 0.0)
    share = np.clip((points[:, None] - near) / np.where(width > 0, width, 1.0), 0.0, 1.0)
    share = np.where(width > 0, share, (points[:, None] >= near).astype(float))
    reached = (total - rows.sum()) + share @ rows
    k = int(np.searchsorted(reached, q * total, side="left"))
    if k == 0:
        return 0.0
    if k >= points.size:
        return float(points[-1])
    below, at = reached[k - 1], reached[k]
    return float(points[k - 1] + (q * total - below) / (at - below) * (points[k] - points[k - 1]))
