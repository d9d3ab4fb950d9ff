"""Symmetrisation: an idempotent, non-expansive projection, exactly symmetric output."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpmoments.moments.symmetry import symmetrise_matrix, symmetrise_tensor

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, allow_subnormal=False)
squares = st.integers(1, 6).flatmap(lambda d: arrays(np.float64, (d, d), elements=finite))
cubes = st.integers(1, 4).flatmap(lambda d: arrays(np.float64, (d, d, d), elements=finite))


def _all_permutations_equal(T):
    return all(np.array_equal(T, T.transpose(p)) for p in itertools.permutations(range(3)))


@settings(max_examples=60, deadline=None)
@given(squares)
def test_matrix_projection_properties(M):
    S = symmetrise_matrix(M)
    np.testing.assert_array_equal(S, S.T)
    np.testing.assert_array_equal(symmetrise_matrix(S), S)  # idempotent
    assert np.linalg.norm(S) <= np.linalg.norm(M) * (1 + 1e-12) + 1e-300
    # the removed part is antisymmetric, so orthogonal to the symmetric part
    np.testing.assert_allclose(np.sum((M - S) * S), 0.0, atol=1e-9 * max(1.0, np.sum(M * M)))


@settings(max_examples=60, deadline=None)
@given(squares)
def test_symmetric_matrix_unchanged(M):
    S = M + M.T
    np.testing.assert_array_equal(symmetrise_matrix(S), S)


@settings(max_examples=60, deadline=None)
@given(cubes)
def test_tensor_projection_properties(T):
    before = T.copy()
    S = symmetrise_tensor(T)
    np.testing.assert_array_equal(T, before)
    assert _all_permutations_equal(S)
    np.testing.assert_array_equal(symmetrise_tensor(S), S)  # idempotent, exactly
    assert np.linalg.norm(S) <= np.linalg.norm(T) * (1 + 1e-12) + 1e-300
    mean = sum(T.transpose(p) for p in itertools.permutations(range(3))) / 6
    np.testing.assert_allclose(S, mean, rtol=1e-12, atol=1e-12)


def test_symmetric_tensor_unchanged():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 4))
    T = np.einsum("ni,nj,nk->ijk", x, x, x)
    T = symmetrise_tensor(T)
    out = symmetrise_tensor(T)
    np.testing.assert_array_equal(out, T)
    assert out is not T


def test_tensor_example():
    T = np.zeros((2, 2, 2))
    T[0, 0, 1] = 3.0
    S = symmetrise_tensor(T)
    assert S[0, 0, 1] == S[0, 1, 0] == S[1, 0, 0] == 1.0
    assert S.sum() == 3.0


def test_antisymmetric_part_removed():
    # the leak of docs/algorithms.md §0.4: a non-symmetric cross moment
    M = np.array([[1.0, 2.0], [0.0, 1.0]])
    S = symmetrise_matrix(M)
    np.testing.assert_array_equal(S - S.T, 0.0)


@pytest.mark.parametrize("bad", [np.ones((2, 3)), np.ones(3), np.ones((2, 2, 2))])
def test_matrix_shape_errors(bad):
    with pytest.raises(ValueError, match="'M'"):
        symmetrise_matrix(bad)


@pytest.mark.parametrize("bad", [np.ones((2, 2)), np.ones((2, 2, 3)), np.ones((0, 0, 0))])
def test_tensor_shape_errors(bad):
    with pytest.raises(ValueError, match=r"'T' must be a cubic"):
        symmetrise_tensor(bad)


def test_kind_and_finiteness_errors():
    with pytest.raises(TypeError, match="'T'"):
        symmetrise_tensor(np.full((2, 2, 2), "a"))
    with pytest.raises(TypeError, match="'T'"):
        symmetrise_tensor(None)
    with pytest.raises(ValueError, match="NaN"):
        symmetrise_tensor(np.full((2, 2, 2), np.nan))
    with pytest.raises(ValueError, match="NaN"):
        symmetrise_matrix(np.full((2, 2), np.inf))
