"""Robust tensor power method, whitening and un-whitening (noise-free references)."""

import numpy as np
import pytest

from dpmoments.solvers.tensor_power import (
    Whitening, robust_tensor_power, tensor_apply, unwhiten, whiten, whiten_tensor,
)


def _planted(K, seed=0, lams=None):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((K, K)))[0].T  # rows orthonormal
    lams = np.linspace(1.0, 3.0, K) if lams is None else np.asarray(lams)
    return np.einsum("r,ri,rj,rk->ijk", lams, Q, Q, Q), Q, lams


def _match(found, truth):
    """Index of the true row each found row aligns with, and the cosines."""
    C = np.abs(found @ truth.T)
    return np.argmax(C, axis=1), np.max(C, axis=1)


@pytest.mark.parametrize("K", [3, 8, 20])
def test_recovers_planted_orthogonal_components(K):
    T, Q, lams = _planted(K, seed=K)
    res = robust_tensor_power(T, K, rng=0)
    idx, cos = _match(res.eigenvectors, Q)
    assert sorted(idx) == list(range(K))
    # Signs are canonical for positive eigenvalues: theta = +q, not -q.
    np.testing.assert_allclose(res.eigenvectors, Q[idx], atol=1e-6)
    np.testing.assert_allclose(res.eigenvalues, lams[idx], atol=1e-6)
    assert res.residual_norm < 1e-6


def test_partial_decomposition_and_determinism():
    T, Q, lams = _planted(6, seed=1)
    a, b = robust_tensor_power(T, 2, rng=5), robust_tensor_power(T, 2, rng=5)
    np.testing.assert_array_equal(a.eigenvectors, b.eigenvectors)
    idx, cos = _match(a.eigenvectors, Q)
    np.testing.assert_allclose(a.eigenvalues, lams[idx], atol=1e-8)
    assert len(set(idx)) == 2


def test_agrees_with_tensorly():
    tl_sym = pytest.importorskip("tensorly.decomposition")
    T, Q, lams = _planted(10, seed=2)
    np.random.seed(0)  # TensorLy draws its starts from the global state
    weights, factors = tl_sym.symmetric_parafac_power_iteration(T, 10, n_repeat=10, n_iteration=10)
    ours = robust_tensor_power(T, 10, n_restarts=10, n_iter=30, rng=0)
    theirs = np.asarray(factors).T
    # Both find every planted pair; the order depends on each one's random starts.
    idx, cos = _match(ours.eigenvectors, theirs)
    assert sorted(idx) == list(range(10))
    np.testing.assert_allclose(ours.eigenvectors, theirs[idx], atol=1e-6)
    np.testing.assert_allclose(ours.eigenvalues, np.asarray(weights)[idx], atol=1e-6)


def test_tensor_apply_is_the_batched_contraction():
    rng = np.random.default_rng(0)
    T, th = rng.standard_normal((5, 5, 5)), rng.standard_normal((7, 5))
    np.testing.assert_allclose(tensor_apply(T, th), np.einsum("ijk,lj,lk->li", T, th, th), atol=1e-12)


def test_whiten_floor_and_unwhiten_roundtrip():
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    M2 = U @ np.diag([4.0, 2.0, 1.0, 1e-9, -0.5, -1.0]) @ U.T
    w = whiten(M2, 3, floor=1e-6)
    assert isinstance(w, Whitening) and w.n_floored == 0
    np.testing.assert_allclose(w.matrix.T @ M2 @ w.matrix, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(w.pseudo_inverse.T @ w.matrix, np.eye(3), atol=1e-12)  # (W^T)^+ W^T W = W
    floored = whiten(M2, 5, floor=0.1)
    assert floored.n_floored == 2 and np.all(floored.eigenvalues >= 0.1)
    theta = rng.standard_normal((2, 3))
    np.testing.assert_allclose(unwhiten(w, theta) @ w.matrix, theta, atol=1e-10)


def test_whitened_tensor_and_full_pipeline():
    rng = np.random.default_rng(3)
    d, K = 9, 4
    mu = rng.standard_normal((K, d))
    wts = np.array([0.1, 0.2, 0.3, 0.4])
    M2 = np.einsum("k,ki,kj->ij", wts, mu, mu)
    M3 = np.einsum("k,ki,kj,kl->ijl", wts, mu, mu, mu)
    W = whiten(M2, K, floor=1e-9)
    Tw = whiten_tensor(M3, W.matrix)
    np.testing.assert_allclose(Tw, np.einsum("ijk,ia,jb,kc->abc", M3, W.matrix, W.matrix, W.matrix), atol=1e-10)
    res = robust_tensor_power(Tw, K, rng=0)
    comps = res.eigenvalues[:, None] * unwhiten(W, res.eigenvectors)
    idx, _ = _match(comps / np.linalg.norm(comps, axis=1, keepdims=True), mu / np.linalg.norm(mu, axis=1)[:, None])
    np.testing.assert_allclose(comps, mu[idx], atol=1e-6)
    np.testing.assert_allclose(1 / res.eigenvalues**2, wts[idx], atol=1e-6)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: robust_tensor_power(np.zeros((2, 2, 3)), 1), ValueError, "cubic"),
    (lambda: robust_tensor_power(np.zeros((2, 2, 2)), 3), ValueError, r"\[1, 2\]"),
    (lambda: robust_tensor_power(np.zeros((2, 2, 2)), 1, n_restarts=0), ValueError, "n_restarts"),
    (lambda: robust_tensor_power(np.zeros((2, 2, 2)), 1, n_iter=2.0), TypeError, "n_iter"),
    (lambda: robust_tensor_power(np.full((2, 2, 2), np.nan), 1), ValueError, "NaN"),
    (lambda: robust_tensor_power(np.zeros((2, 2, 2), dtype=object), 1), TypeError, "real"),
    (lambda: whiten(np.eye(3), 2, floor=0.0), ValueError, "floor"),
    (lambda: whiten_tensor(np.zeros((3, 3, 3)), np.zeros((2, 1))), ValueError, "W"),
    (lambda: unwhiten("W", np.zeros((1, 1))), TypeError, "Whitening"),
])
def test_bad_inputs(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_zero_tensor_does_not_crash():
    res = robust_tensor_power(np.zeros((3, 3, 3)), 2, rng=0)
    np.testing.assert_array_equal(res.eigenvalues, [0.0, 0.0])
