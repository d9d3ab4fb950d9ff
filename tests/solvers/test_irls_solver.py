"""Thresholded IRLS weights and the weighted solve (non-private numerics)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmoments.solvers.irls import irls, irls_weights, solve_weighted, weighted_moments


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20), st.floats(1e-3, 1e6), st.floats(1.0, 2.0))
def test_weights_in_zero_wmax(residuals, w_max, p):
    w = irls_weights(residuals, w_max, p)
    assert np.all(w > 0) and np.all(w <= w_max)


def test_weights_formula():
    np.testing.assert_allclose(irls_weights([0.0, 0.5, -4.0], 10.0), [10.0, 2.0, 0.25])
    np.testing.assert_allclose(irls_weights([0.0, 0.5, -4.0], 10.0, p=2.0), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(irls_weights([4.0], 10.0, p=1.5), [0.5])


@pytest.mark.parametrize("bad, err", [(dict(w_max=0.0), ValueError), (dict(p=0.5), ValueError),
                                      (dict(p=3.0), ValueError), (dict(w_max="1"), TypeError)])
def test_weights_bad_inputs(bad, err):
    kwargs = dict(w_max=1.0, p=1.0)
    kwargs.update(bad)
    with pytest.raises(err):
        irls_weights([1.0], **kwargs)


def test_weighted_moments_and_solve():
    rng = np.random.default_rng(0)
    X, y, s = rng.normal(size=(50, 3)), rng.normal(size=50), rng.uniform(0.1, 1, 50)
    A, B = weighted_moments(X, y, s)
    np.testing.assert_allclose(B, (X.T * s) @ X / 50)
    np.testing.assert_allclose(A, (X.T * s) @ y / 50)
    theta, k = solve_weighted(B, A)
    assert k == 0
    np.testing.assert_allclose(B @ theta, A, atol=1e-12)
    theta, k = solve_weighted(np.diag([2.0, -1.0]), np.array([2.0, 1.0]), floor=0.5)
    assert k == 1
    np.testing.assert_allclose(theta, [1.0, 2.0])


def test_irls_p2_is_least_squares_and_p1_is_robust():
    rng = np.random.default_rng(1)
    X = np.c_[np.ones(200), rng.normal(size=200)]
    y = X @ [1.0, 2.0] + 0.1 * rng.normal(size=200)
    np.testing.assert_allclose(irls(X, y, w_max=1.0, p=2.0, n_iter=3).coef, np.linalg.lstsq(X, y, rcond=None)[0])
    y[:20] += 50.0  # gross outliers
    res = irls(X, y, w_max=1e6, n_iter=200, tol=1e-10)
    assert res.converged
    np.testing.assert_allclose(res.coef, [1.0, 2.0], atol=0.05)
