"""The sites' private column scales read off a location step's summed histograms (multisite/site_spreads.py)."""

import numpy as np

from dpmoments.multisite.location import AutoLocation
from dpmoments.multisite.site_spreads import site_spreads

EDGES = AutoLocation().edges()
SD = 60.0  # the summed bins' noise sd, about three sites' at epsilon = 1 (the old half-IQR failed at it)


def _histogram(values, rng):
    """The summed noisy histogram of ``values`` on the signed grid (bin k: (edges[k-1], edges[k]])."""
    counts = np.bincount(np.searchsorted(EDGES, values, side="left"), minlength=EDGES.size + 1).astype(float)
    return counts + rng.normal(0.0, SD, counts.size)


def _move(values):
    """The step's median rounded up to an edge, as choose_location gives it."""
    return EDGES[np.searchsorted(EDGES, np.median(values), side="left")]


def test_a_column_mostly_at_one_value_is_scaled_by_the_gap_to_its_other_values():
    """idp (74% zeros): half the interquartile range put the upper quartile in the gap above the zeros (1.6e-5 to
    4e-3 on RAND HIE); the median distance is 0 there, the gap 1 (less the bin the 1s fall in)."""
    rng = np.random.default_rng(1)  # half the interquartile range of these counts: 3.9e-7
    x = (rng.random(20000) < 0.26).astype(float) - 3e-6  # centred at a location a little off 0
    s = site_spreads(_histogram(x, rng)[None], EDGES, [_move(x)], SD, x.size)
    assert 0.7 <= s[0] <= 1.01


def test_a_balanced_zero_one_column_whose_median_bin_is_just_beyond_its_zeros_keeps_a_scale_of_its_gap():
    """Half the rows at 0 sit right next to a median drawn in the empty bin above them: their median distance may
    be tiny; half the upper quartile (among the 1s) is not."""
    rng = np.random.default_rng(1)
    x = np.r_[np.zeros(5001), np.ones(4999)]
    move = EDGES[np.searchsorted(EDGES, 0.0, side="left") + 3]  # three bins above the zeros (a rank error)
    s = site_spreads(_histogram(x, rng)[None], EDGES, [move], SD, x.size)
    assert s[0] >= 0.45


def test_a_gaussian_column_keeps_its_median_absolute_deviation_and_empty_bins_noise_is_not_rows():
    rng = np.random.default_rng(2)
    x = rng.normal(0.0, 2.0, 20000)
    s = site_spreads(_histogram(x, rng)[None], EDGES, [_move(x)], SD, x.size)
    assert abs(s[0] / (0.6745 * 2.0) - 1) < 0.1
    noisy = site_spreads(rng.normal(0.0, SD, (1, EDGES.size + 1)), EDGES, [0.0], SD, 0.0)  # no rows: the resolution
    assert noisy[0] <= 1e-4
