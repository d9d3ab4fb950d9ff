"""The exact law of a covariance entry's error about a private centre, and the sampling bound (issue 25)."""

import numpy as np
import pytest
from scipy import stats

from dpmoments.estimators.centre_law import diagonal_quantiles, off_diagonal_half_width
from dpmoments.estimators.error_budget import _psd, covariance_error_budget, sampling_variance


def test_without_a_centre_the_quantiles_are_the_normal_ones():
    v = np.array([0.25, 1.0, 9.0])
    np.testing.assert_allclose(off_diagonal_half_width(v, 0.0, 0.1), 1.6449 * np.sqrt(v), rtol=1e-4)
    lo, hi = diagonal_quantiles(v, 0.0, 0.01)
    np.testing.assert_allclose(hi, 2.5758 * np.sqrt(v), rtol=1e-4)
    np.testing.assert_allclose(lo, -hi)


def test_without_other_noise_the_diagonal_is_a_chi_square_and_the_tails_are_far_heavier_than_normal():
    _, hi = diagonal_quantiles(np.array([0.0]), 2.0, 0.002)
    assert hi[0] == pytest.approx(4.0 * stats.chi2.ppf(0.999, 1), rel=1e-3)
    # A product of two standard normals beyond t: far more often than a normal of the same sd (1) at level 0.999
    t = off_diagonal_half_width(np.array([1e-12]), 1.0, 0.001)[0]
    z = np.random.default_rng(0).standard_normal((2, 600_000))
    assert np.mean(np.abs(z[0] * z[1]) > t) == pytest.approx(0.001, abs=3e-4)
    assert t > 1.7 * 3.29


def test_a_mixture_quantile_holds_its_level_by_simulation():
    rng = np.random.default_rng(1)
    n, z1, z2 = rng.standard_normal((3, 600_000))
    t = off_diagonal_half_width(np.array([1.0]), 1.0, 0.01)[0]
    assert np.mean(np.abs(n + z1 * z2) > t) == pytest.approx(0.01, abs=6e-4)
    lo, hi = diagonal_quantiles(np.array([1.0]), 1.0, 0.01)
    x = n + z1**2
    assert np.mean(x > hi[0]) == pytest.approx(0.005, abs=4e-4) and np.mean(x < lo[0]) <= 0.006


class _Release:
    def __init__(self, second, row_norm, n):
        self.row_norm, self.n, self.n_features = row_norm, n, second.shape[0]
        self.second_moment, self.parts, self.column_scale = second, (), None
        self.mechanism, self.noise_scale, self.noise_df = "gaussian", 1.0, None  # unit Gaussian noise


def test_the_sampling_bound_holds_for_heavy_tailed_clipped_rows_where_normal_theory_does_not():
    """t_2 rows clipped to R: the bound is above every entry's sampling variance; normal theory is below."""
    rng = np.random.default_rng(2)
    n, R, reps = 400, 40.0, 300
    S = []
    for _ in range(reps):
        Z = rng.standard_t(2.0, size=(n, 3)) * [1.0, 2.0, 0.5]
        Z = Z * np.minimum(1.0, R / np.linalg.norm(Z, axis=1))[:, None]
        S.append(Z.T @ Z / n)
    S = np.array(S)
    spread, mean = S.var(axis=0), S.mean(axis=0)
    bound = sampling_variance(_Release(mean, R, n), _psd(mean))
    assert np.all(bound >= spread)
    normal = (np.outer(np.diag(mean), np.diag(mean)) + mean**2) / n
    assert normal[1, 1] < spread[1, 1]  # what the bound replaces understates this tail


def test_entries_not_selected_hold_0_and_withheld_entries_do_not_count_in_the_selection():
    """Every printed interval that excludes 0 was selected (Benjamini-Hochberg); the others are the level's
    own intervals stretched to hold 0."""
    d = 4
    second = np.diag([50.0, 1.0, 1.0, 1.0])
    second[0, 1] = second[1, 0] = 30.0
    rel = _Release(second, 20.0, 1000)
    se = np.full((d, d), 1.0)
    out = covariance_error_budget(rel, se, np.stack([second - 1.645, second + 1.645]), 0.9, "sample")
    lo, hi = out["interval"]
    excludes = (lo > 0) | (hi < 0)
    assert excludes[0, 0] and excludes[0, 1]
    assert out["parts"]["selected"] == int(np.triu(excludes).sum())
    off = ~excludes & ~np.eye(d, dtype=bool)
    assert np.all(lo[off] <= 0) and np.all(hi[off] >= 0)
    assert 0.9 < out["parts"]["level_each"] < 1.0


def test_laplace_noise_keeps_its_own_tails_at_the_selected_level():
    """At the false-coverage-rate level (0.999 and beyond) Laplace's quantile is far beyond the normal's rescaled
    one: every interval is at least the Laplace noise's own at its level."""
    from dpmoments.estimators import PrivateCovariance

    X = np.random.default_rng(3).standard_normal((2000, 3)) * [1.0, 3.0, 0.5]
    est = PrivateCovariance(epsilon=1.0, mechanism="laplace", row_norm=8.0, center=None, rng=0).fit(X)
    lo, hi = est.covariance_interval_
    raw, b = est.release_.second_moment, est.release_.noise_scale
    excludes = (lo > 0) | (hi < 0)
    level = np.where(excludes, est.uncertainty_["error_budget"]["level_each"], 0.9)
    assert excludes.any()
    assert np.all(hi - raw >= b * np.log(1.0 / (1.0 - level)) * (1 - 1e-9))
