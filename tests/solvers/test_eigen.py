"""Top-k symmetric eigenpairs: agreement with full eigh, signs, solver choice, bad inputs."""

import numpy as np
import pytest

from dpmoments.solvers.eigen import flip_signs, top_eigenpairs


def _sym(d, seed=0):
    A = np.random.default_rng(seed).standard_normal((d, d))
    return (A + A.T) / 2


@pytest.mark.parametrize("method", ["eigh", "eigsh", "auto"])
def test_matches_full_eigh(method):
    A = _sym(60)
    res = top_eigenpairs(A, 5, method=method)
    w, V = np.linalg.eigh(A)
    np.testing.assert_allclose(res.eigenvalues, w[::-1][:5], atol=1e-10)
    np.testing.assert_allclose(np.abs(res.eigenvectors.T @ V[:, ::-1][:, :5]), np.eye(5), atol=1e-8)
    np.testing.assert_allclose(res.eigenvectors.T @ res.eigenvectors, np.eye(5), atol=1e-12)


def test_sign_convention_is_deterministic_and_solver_independent():
    A = _sym(40, seed=3)
    a, b = top_eigenpairs(A, 4, method="eigh"), top_eigenpairs(A, 4, method="eigsh")
    np.testing.assert_allclose(a.eigenvectors, b.eigenvectors, atol=1e-8)
    V = a.eigenvectors
    assert np.all(V[np.argmax(np.abs(V), axis=0), np.arange(4)] > 0)
    np.testing.assert_array_equal(flip_signs(-V), V)


def test_indefinite_matrix_ranks_by_value():
    res = top_eigenpairs(np.diag([-5.0, 1.0, 0.5]), 2)
    np.testing.assert_allclose(res.eigenvalues, [1.0, 0.5])


def test_auto_picks_eigsh_only_for_large_d_and_small_k():
    assert top_eigenpairs(_sym(50), 3).method == "eigh"
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((1000, 5)))[0]
    A = U @ np.diag([10.0, 9, 8, 7, 6]) @ U.T + 0.01 * _sym(1000)
    res = top_eigenpairs(A, 5)
    assert res.method == "eigsh"
    np.testing.assert_allclose(res.eigenvalues, np.linalg.eigvalsh(A)[::-1][:5], atol=1e-8)


@pytest.mark.parametrize("A, k, method, exc, match", [
    (np.ones((2, 3)), 1, "auto", ValueError, "square"),
    (np.eye(3), 4, "auto", ValueError, r"\[1, 3\]"),
    (np.eye(3), 0, "auto", ValueError, "n_components"),
    (np.eye(3), 1.5, "auto", TypeError, "n_components"),
    (np.eye(3), 1, "lanczos", ValueError, "method"),
    (np.eye(3), 3, "eigsh", ValueError, "n_components < d"),
    ([[1.0, np.nan], [np.nan, 1.0]], 1, "auto", ValueError, "NaN"),
])
def test_bad_inputs(A, k, method, exc, match):
    with pytest.raises(exc, match=match):
        top_eigenpairs(A, k, method=method)
