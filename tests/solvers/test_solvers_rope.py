"""ROPE closed form: stationarity, positive definiteness, optimality, validation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpmoments.solvers.rope import ridge_precision, ridge_precision_objective


def _random_symmetric(p, seed, shift=0.0):
    A = np.random.default_rng(seed).normal(size=(p, p))
    return (A + A.T) / 2 + shift * np.eye(p)


def _stationarity(S, Theta, alpha):
    return -np.linalg.inv(Theta) + S + 2 * alpha * Theta


@pytest.mark.parametrize("alpha", [1e-3, 0.1, 1.0, 25.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stationarity_random_symmetric(alpha, seed):
    S = _random_symmetric(8, seed)
    Theta = ridge_precision(S, alpha)
    assert np.max(np.abs(_stationarity(S, Theta, alpha))) < 1e-10 * max(1.0, np.abs(S).max())


def test_stationarity_second_moment():
    X = np.random.default_rng(3).normal(size=(200, 10)) / 4
    S = X.T @ X / 200
    Theta = ridge_precision(S, 0.01)
    assert np.max(np.abs(_stationarity(S, Theta, 0.01))) < 1e-10


def test_equivalent_matrix_form():
    # Theta = 2 [S + (S^2 + 8 alpha I)^{1/2}]^{-1}
    S = _random_symmetric(6, 4)
    alpha = 0.3
    w, V = np.linalg.eigh(S @ S + 8 * alpha * np.eye(6))
    root = (V * np.sqrt(w)) @ V.T
    np.testing.assert_allclose(ridge_precision(S, alpha), 2 * np.linalg.inv(S + root), atol=1e-10)


@pytest.mark.parametrize(
    "S",
    [-np.eye(5), -100.0 * np.eye(3), _random_symmetric(12, 5), _random_symmetric(12, 6, shift=-5.0)],
    ids=["minus-identity", "very-negative", "random", "negative-definite"],
)
def test_positive_definite_on_indefinite_input(S):
    Theta = ridge_precision(S, 1e-2)
    np.testing.assert_array_equal(Theta, Theta.T)
    assert np.linalg.eigvalsh(Theta).min() > 0
    np.linalg.cholesky(Theta)


def test_minus_identity_value():
    # phi = -1, alpha: theta = (sqrt(1 + 8 alpha) + 1) / (4 alpha)
    alpha = 0.25
    expected = (np.sqrt(1 + 8 * alpha) + 1) / (4 * alpha)
    np.testing.assert_allclose(ridge_precision(-np.eye(3), alpha), expected * np.eye(3), rtol=1e-14)


def test_negative_eigenvalue_no_cancellation():
    # phi = -1e8, alpha = 1e-6: the naive 2/(phi + sqrt(phi^2 + 8 alpha)) gives 2/0 or garbage.
    phi, alpha = -1e8, 1e-6
    theta = ridge_precision(np.array([[phi]]), alpha)[0, 0]
    assert np.isfinite(theta)
    # root of 2 alpha t^2 + phi t - 1 = 0; relative residual
    assert abs(2 * alpha * theta**2 + phi * theta - 1) < 1e-8 * abs(phi * theta)
    np.testing.assert_allclose(theta, -phi / (2 * alpha), rtol=1e-12)


def test_large_positive_eigenvalue():
    phi, alpha = 1e8, 1e-6
    theta = ridge_precision(np.array([[phi]]), alpha)[0, 0]
    np.testing.assert_allclose(theta, 1 / phi, rtol=1e-12)


def test_symmetrises_input():
    S = _random_symmetric(5, 7)
    skew = np.triu(np.ones((5, 5)), 1)
    np.testing.assert_allclose(ridge_precision(S + skew - skew.T, 0.2), ridge_precision(S, 0.2), atol=1e-14)


@pytest.mark.parametrize("seed", range(4))
def test_objective_minimised(seed):
    rng = np.random.default_rng(seed)
    S = _random_symmetric(6, 10 + seed)
    alpha = 0.5
    Theta = ridge_precision(S, alpha)
    best = ridge_precision_objective(S, Theta, alpha)
    assert np.isfinite(best)
    for scale in (1e-1, 1e-3):
        for _ in range(20):
            D = rng.normal(size=(6, 6))
            D = scale * (D + D.T) / 2
            assert ridge_precision_objective(S, Theta + D, alpha) > best


def test_objective_values():
    assert ridge_precision_objective(np.eye(2), np.eye(2), 1.0) == pytest.approx(4.0)
    Theta = np.diag([2.0, 0.5])
    S = np.array([[1.0, 3.0], [3.0, 2.0]])
    # -log(1) + (2 + 1) + alpha (4 + 0.25)
    assert ridge_precision_objective(S, Theta, 2.0) == pytest.approx(3.0 + 8.5)
    assert ridge_precision_objective(np.eye(2), -np.eye(2), 1.0) == np.inf


def test_accepts_lists_and_ints():
    Theta = ridge_precision([[2, 0], [0, 2]], 1)
    assert Theta.dtype == np.float64


@pytest.mark.parametrize(
    "S, alpha, exc, match",
    [
        (np.eye(2), 0.0, ValueError, r"'alpha' must be in \(0, inf\); got 0.0"),
        (np.eye(2), -1.0, ValueError, "'alpha'"),
        (np.eye(2), np.inf, ValueError, "'alpha'"),
        (np.eye(2), np.nan, ValueError, "'alpha' must not be NaN"),
        (np.eye(2), "1", TypeError, "'alpha' must be a real number"),
        (np.eye(2), None, ValueError, "'alpha'"),
        (np.ones((2, 3)), 1.0, ValueError, r"'S' must be a square .* got shape \(2, 3\)"),
        (np.ones(3), 1.0, ValueError, "'S' must be a square"),
        (np.ones((0, 0)), 1.0, ValueError, "'S' must be a square"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), 1.0, ValueError, "'S' contains 2 NaN"),
        (np.array([[np.inf]]), 1.0, ValueError, "'S' contains 1 NaN or infinite"),
        ("abc", 1.0, TypeError, "'S' must be a square array"),
        (np.array([["a"]]), 1.0, TypeError, "'S' must hold real numbers"),
        (np.eye(2, dtype=complex), 1.0, TypeError, "'S' must hold real numbers"),
    ],
)
def test_bad_inputs(S, alpha, exc, match):
    with pytest.raises(exc, match=match):
        ridge_precision(S, alpha)


def test_objective_bad_inputs():
    with pytest.raises(ValueError, match="'Theta' must have the shape of 'S'"):
        ridge_precision_objective(np.eye(2), np.eye(3), 1.0)
    with pytest.raises(ValueError, match="'Theta' contains"):
        ridge_precision_objective(np.eye(1), np.array([[np.nan]]), 1.0)
    with pytest.raises(ValueError, match="'alpha'"):
        ridge_precision_objective(np.eye(1), np.eye(1), 0)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    A=arrays(np.float64, (5, 5), elements=st.floats(-10, 10, allow_nan=False, allow_infinity=False)),
    alpha=st.floats(1e-3, 10.0),
)
def test_property_pd_and_stationary(A, alpha):
    S = (A + A.T) / 2
    Theta = ridge_precision(S, alpha)
    assert np.linalg.eigvalsh(Theta)[0] > 0
    inv = np.linalg.inv(Theta)
    residual = np.abs(-inv + S + 2 * alpha * Theta).max()
    scale = np.abs(inv).max() + np.abs(S).max() + 2 * alpha * np.abs(Theta).max()
    assert residual <= 1e-10 * scale
