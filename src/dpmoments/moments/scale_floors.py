"""The least a privately drawn column scale may be: post-processing of released medians and scales and the public grid.

Two floors: a column's scale about its refined location is never below ``COARSE_FLOOR`` of its coarse scale
(:func:`scale_floor`), and a scale about a private median is never below the width of the grid bin that median
was drawn in (:func:`median_resolution`, :func:`at_resolution`). Neither reads the rows.
"""

import numpy as np

# A column's scale (the median of its |x - m| about the refined location, near the mean) is never below this share
# of its coarse scale (the median of its non-zero |x - median|, the gap between its values for a 0/1 or count
# column): about its mean a 0/1 column with 2% ones has |x - m| = 0.02 on 98% of its rows, and dividing by 0.02
# multiplied it by 50, set the row bound and drowned the other columns (randhie: 6 times the error of public
# ranges, 1.0 times with the floor; benchmarks/results/ranges.md). A continuous column's two medians are about
# equal, so the floor leaves it alone. Where the coarse scale is within COARSE_GRID_STEPS grid steps of the
# private median, it measures the median's grid error (a column around 1e6, where a step is 3.3e4), not the
# column, and no floor is taken from it.
COARSE_FLOOR = 0.25
COARSE_GRID_STEPS = 2.0


def median_resolution(medians, search):
    """The width of the signed-grid bin each private median is the upper edge of (post-processing).

    The median of a column lies somewhere in that bin, so rows within it of the median cannot be told from it:
    a scale about the median counts them as tied. A 0/1 column with 90% ones has its median drawn at the edge
    just above 1 (1.028 on the default grid), and without this its scale was the 0.028 between them, which
    multiplied its zeros by 36, set the row bound and drowned every other column.
    """
    return resolution_on(search.edges(signed=True), medians)


def upper_edge_bin(edges, values):
    """The index ``k`` of the bin ``[edges[k - 1], edges[k]]`` each of ``values`` is the upper edge of (the end bins'
    at the ends): where a private median drawn on the sorted ``edges`` lies."""
    return np.clip(np.searchsorted(edges, values, side="left"), 1, edges.size - 1)


def resolution_on(edges, values):
    """The width of the bin of the sorted ``edges`` each of ``values`` is the upper edge of (the end bins' at the
    ends): one machine's signed grid, or the sites' location grid (multisite/column_ranges.py)."""
    k = upper_edge_bin(edges, values)
    return edges[k] - edges[k - 1]


def at_resolution(s, width, known):
    """The scales raised to the medians' resolution where drawn: a column all within it of its median (around
    1e6 with spread 1) keeps a scale of that resolution, not the other columns' (scale_guard) it fell back to."""
    if width is None:
        return s
    return np.where(drawn_columns(known, s.size), np.maximum(s, width), s)


def drawn_columns(known, d):
    """The columns whose scale is drawn (not known from a public range)."""
    return np.ones(d, dtype=bool) if known is None else known[0] < known[1]


def scale_floor(medians, coarse, search):
    """``COARSE_FLOOR`` times the coarse scales, 0 where one is within ``COARSE_GRID_STEPS`` grid steps of its
    median (it then measures the median's grid error); post-processing of private draws."""
    ratio = (search.high / search.low) ** (1.0 / (search.steps - 1)) - 1.0
    step = np.maximum(np.abs(medians), search.low) * ratio
    return np.where(coarse > COARSE_GRID_STEPS * step, COARSE_FLOOR * coarse, 0.0)
