"""The location step's building blocks: signed grid, exact counts, sensitivity, median choice, refusal."""

import itertools
import math

import numpy as np
import pytest

from dpmoments.multisite.location import (AutoLocation, choose_location, location_counts,
                                          location_sensitivity)
from dpmoments.privacy import calibrate_gaussian


def test_signed_grid_is_mirrored_with_zero():
    edges = AutoLocation(low=1.0, high=4.0, factor=2.0).edges()
    assert edges.tolist() == [-4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0]
    assert AutoLocation(low=1.0, high=4.0, factor=2.0).n_bins == 8


def test_counts_per_coordinate_sum_to_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3)) * [1, 10, 100]
    edges = AutoLocation().edges()
    counts = location_counts(X, edges)
    assert counts.shape == (3, edges.size + 1)
    assert counts.sum(axis=1).tolist() == [50.0, 50.0, 50.0]
    for j in range(3):  # same bins as a one-coordinate searchsorted
        assert np.array_equal(counts[j], np.bincount(np.searchsorted(edges, X[:, j]), minlength=edges.size + 1))


@pytest.mark.parametrize("relation", ["replace-one", "zero-out"])
def test_one_row_moves_at_most_two_counts_per_coordinate(relation):
    """The stated sensitivity sqrt(2d) holds for every row swap, with awkward values (edges, 0, beyond the range)."""
    auto = AutoLocation(low=1.0, high=8.0, factor=2.0)
    edges = auto.edges()
    values = [-1e9, -8.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 2.0000001, 8.0, 1e9]
    d = 2
    rng = np.random.default_rng(1)
    X = rng.choice(values, size=(7, d))
    base = location_counts(X, edges)
    rows = [np.zeros(d)] if relation == "zero-out" else [np.array(p) for p in itertools.product(values, repeat=d)]
    worst = 0.0
    for i in range(X.shape[0]):
        for new in rows:
            Y = X.copy()
            Y[i] = new
            diff = location_counts(Y, edges) - base
            assert np.all(np.abs(diff).sum(axis=1) <= 2)
            worst = max(worst, float(np.linalg.norm(diff)))
    assert worst <= location_sensitivity(d) + 1e-12
    if relation == "replace-one":
        assert worst == pytest.approx(location_sensitivity(d))  # attained: the bound is tight


def _noisy_sum(X_sites, auto, epsilon, delta, rng):
    """What the aggregator sums: each site's exact counts plus its own Gaussian noise at the step's share."""
    d = X_sites[0].shape[1]
    sigma, _ = calibrate_gaussian(auto.share * epsilon, delta, location_sensitivity(d))
    edges = auto.edges()
    total = sum(location_counts(X, edges) + rng.normal(scale=sigma, size=(d, edges.size + 1)) for X in X_sites)
    return total, sigma * math.sqrt(len(X_sites))


def test_three_sites_find_the_medians_of_a_large_mean():
    rng = np.random.default_rng(2)
    mean = np.array([100.0, 0.0, -5.0])
    sites = [rng.normal(size=(40_000, 3)) + mean for _ in range(3)]
    auto = AutoLocation()
    summed, sd = _noisy_sum(sites, auto, 1.0, 1e-6, rng)
    auto.check_rows(120_000, sd)  # enough rows: not refused
    m, at_end = choose_location(summed, 120_000, auto)
    assert not at_end.any()
    pooled = np.median(np.vstack(sites), axis=0)
    # within one bin of the pooled median (the grid's factor sqrt 2; near 0 the bins are tiny)
    assert abs(m[0] - pooled[0]) <= (math.sqrt(2) - 1) * abs(pooled[0]) + 1e-9
    assert abs(m[1]) <= 0.1 and abs(m[2] - pooled[2]) <= (math.sqrt(2) - 1) * abs(pooled[2])


def test_median_beyond_the_range_is_flagged():
    auto = AutoLocation(low=1.0, high=10.0)
    X = np.full((1000, 1), 1e6)
    m, at_end = choose_location(location_counts(X, auto.edges()), 1000, auto)
    assert m[0] == 10.0 and at_end[0]


def test_too_few_rows_refused_in_one_line():
    auto = AutoLocation()
    sigma, _ = calibrate_gaussian(auto.share * 1.0, 1e-6, location_sensitivity(10))
    with pytest.raises(ValueError, match=r"too few rows \(3000 in all\)") as err:
        auto.check_rows(3000, sigma * math.sqrt(3))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kwargs, match", [
    (dict(share=0.0), "'location_share' must be a share"), (dict(share=1.0), "'location_share'"),
    (dict(share=True), "'location_share'"), (dict(mean=0.0), "'center_share'"), (dict(share=0.5, mean=0.5), "add up"), (dict(low=5.0, high=1.0), "search range is empty"),
    (dict(factor=1.0), "'factor'"), (dict(low=-1.0), "'low'"),
])
def test_bad_settings_one_line(kwargs, match):
    with pytest.raises(ValueError, match=match) as err:
        AutoLocation(**kwargs)
    assert "\n" not in str(err.value)


def test_summed_of_wrong_width_refused():
    with pytest.raises(ValueError, match="'summed' must have"):
        choose_location(np.zeros((2, 3)), 10, AutoLocation())


def test_round_trip():
    auto = AutoLocation(0.1, 0.5, 50.0, 2.0)
    assert AutoLocation.from_dict(auto.to_dict()) == auto
    with pytest.raises(ValueError, match="'n_features'"):
        location_sensitivity(0)
