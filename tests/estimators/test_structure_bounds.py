"""Ridge's and the graphical lasso's intervals where the draws leave first order (structure_bounds.py): noise
columns' entries hold 0, and ridge's intervals lie within the range ridge takes on any covariance."""

import numpy as np
import pytest

from dpmoments.estimators import PrivateGraphicalLasso, PrivateRidgePrecision
from dpmoments.estimators.structure_bounds import (hold_zero, ridge_jensen_range, ridge_range, with_dropped_draws,
                                                   within)
from dpmoments.solvers import ridge_precision

pytestmark = pytest.mark.filterwarnings("ignore::dpmoments.exceptions.NoiseDominatesWarning",
                                        "ignore::dpmoments.exceptions.BoundWarning")


def test_ridge_of_any_covariance_lies_in_its_range_and_an_indefinite_matrix_can_leave_it():
    rng = np.random.default_rng(0)
    lower, upper = ridge_range(0.3, 4)
    for _ in range(50):
        A = rng.standard_normal((4, 6)) * rng.exponential(size=(4, 1)) * 10.0 ** rng.integers(-3, 3)
        theta = ridge_precision(A @ A.T / 6, 0.3)
        assert np.all(theta >= lower - 1e-12) and np.all(theta <= upper + 1e-12)
    assert np.max(np.abs(ridge_precision(-np.eye(4), 0.3))) > upper[0, 0]  # the range is a covariance's only


def test_ridge_lies_in_the_range_its_covariance_bounds_allow_and_a_small_column_is_pinned_near_the_cap():
    """Jensen's operator inequality: any PSD matrix within the bounds has its ridge within ridge_jensen_range."""
    rng = np.random.default_rng(2)
    c = 1.0 / np.sqrt(2.0 * 0.3)
    for _ in range(50):
        A = rng.standard_normal((4, 6)) * rng.exponential(size=(4, 1)) * 10.0 ** rng.integers(-3, 3)
        S = A @ A.T / 6
        slack = rng.exponential(size=(2, 4, 4)) * np.abs(S).max()
        bounds = np.stack([S - slack[0] - slack[0].T, S + slack[1] + slack[1].T])
        for interval in (np.stack([S, S]), bounds):
            lower, upper = ridge_jensen_range(0.3, interval)
            theta = ridge_precision(S, 0.3)
            assert np.all(theta >= lower - 1e-12) and np.all(theta <= upper + 1e-12)
    tiny = np.diag([1e4, 1e-4])  # raw units, mixed scales: ridge of the small column is at its cap
    lower, upper = ridge_jensen_range(0.3, np.stack([tiny - 1.0, tiny + 1.0]))
    assert lower[1, 1] > 0.5 * c and upper[1, 1] == c and lower[0, 1] <= 0 <= upper[0, 1]
    unknown = ridge_jensen_range(0.3, np.full((2, 2, 2), np.nan))
    assert np.allclose(unknown[0], ridge_range(0.3, 2)[0]) and np.allclose(unknown[1], ridge_range(0.3, 2)[1])


def test_within_cuts_to_the_range_and_gives_the_range_where_nothing_is_left():
    lower, upper = ridge_range(0.5, 2)  # c = 1: diagonal [0, 1], off it [-0.5, 0.5]
    interval = np.array([[[-3.0, 0.2], [0.2, 2.0]], [[5.0, 0.4], [0.4, 3.0]]])
    out = within(interval, lower, upper)
    assert out[:, 0, 0].tolist() == [0.0, 1.0] and out[:, 0, 1].tolist() == [0.2, 0.4]
    assert out[:, 1, 1].tolist() == [0.0, 1.0]  # [2, 3] lies beyond the range: the range itself
    held = hold_zero(np.array([[0.2, np.nan], [0.4, np.nan]]), True)
    assert held[:, 0].tolist() == [0.0, 0.4] and np.isnan(held[:, 1]).all()


def test_noise_columns_hold_zero_and_ridge_stays_in_range():
    """A column far below the noise (mixed units): its entries are printed holding 0, not withheld."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((600, 3)) * [20.0, 15.0, 0.01]
    ridge = PrivateRidgePrecision(alpha=5.0, epsilon=1.0, delta=1e-6, row_norm=80.0, n_draws=19, rng=0).fit(X)
    glasso = PrivateGraphicalLasso(alpha=0.01, n_draws=19, rng=0).fit_release(ridge.release_)
    assert 2 in ridge.uncertainty_["noise_columns"]["columns"]
    for interval in (ridge.precision_interval_, ridge.partial_correlation_interval_,
                     glasso.partial_correlation_interval_):
        assert np.isfinite(interval).all()
        assert np.all(interval[0, 2, :2] <= 0) and np.all(interval[1, 2, :2] >= 0)
    c = 1.0 / np.sqrt(2.0 * 5.0)
    assert np.abs(ridge.precision_interval_).max() <= c + 1e-12
    assert not glasso.stable_edges_[2, :2].any()


def test_an_edge_the_draws_drop_keeps_the_atom_at_zero_in_its_interval():
    """The basic interval reflects draws that are all 0 into the point 2 theta; the percentile interval holds 0."""
    estimate = np.array([[1.0, -0.2], [-0.2, 1.0]])
    dropped = np.zeros((20, 2, 2))
    dropped[:, [0, 1], [0, 1]] = 1.0
    kept = dropped.copy()
    kept[:, 0, 1] = kept[:, 1, 0] = np.linspace(-0.3, -0.1, 20)
    basic = np.stack([np.full((2, 2), -0.4), np.full((2, 2), -0.4)])
    out = with_dropped_draws(basic, [kept, dropped], 0.9)
    assert out[0, 0, 1] == -0.4 and out[1, 0, 1] == 0.0  # widened to hold the dropped set's draws
    assert with_dropped_draws(basic, [kept], 0.9)[1, 0, 1] == -0.4  # no set drops it: unchanged


def test_the_beyond_first_order_text_says_which_intervals_hold_zero_where_jensen_s_diagonals_do_not():
    # Draws withheld (a t2 column's rows beyond the outer bound) and the release beyond first order: the text said
    # "every interval holds 0" while the diagonals from Jensen's range lay above 0 (star98, anes96 at epsilon 4).
    import warnings

    rng = np.random.default_rng(3)
    X = np.column_stack([rng.standard_t(2, 1000) * 30, rng.normal(size=1000), rng.normal(size=1000) * 1e3,
                         rng.integers(0, 2, 1000)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivateRidgePrecision(alpha=0.1, epsilon=1, delta=1e-6, n_draws=20, rng=3).fit(X)
    lo, hi = est.precision_interval_
    covers = est.uncertainty_["covers"]
    assert "beyond first order" in covers and (np.diagonal(lo) > 0).any()
    assert "every interval holds 0" not in covers and "every off-diagonal interval holds 0" in covers
    off = ~np.eye(4, dtype=bool)
    assert (lo[off] <= 0).all() and (hi[off] >= 0).all()
