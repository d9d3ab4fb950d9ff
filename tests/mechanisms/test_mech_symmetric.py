"""Symmetric noise matrices and tensors: marginals, structure, orbit coordinates."""

import itertools
from math import comb

import numpy as np
import pytest
from scipy import stats

from dpmoments.mechanisms import (
    orbit_vector,
    symmetric_matrix_noise,
    symmetric_tensor_noise,
    upper_triangle,
)

ALPHA = 1e-6
LAWS = {"gaussian": stats.norm, "laplace": stats.laplace}
PERMUTATIONS = list(itertools.permutations(range(3)))


# --- marginals --------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
def test_matrix_upper_triangle_marginal(distribution):
    rng = np.random.default_rng(21)
    d, scale, reps = 6, 0.7, 2_500  # 21 entries per draw -> 52 500 pooled
    pooled = np.concatenate(
        [upper_triangle(symmetric_matrix_noise(d, scale, rng, distribution)) for _ in range(reps)]
    )
    law = LAWS[distribution](0.0, scale)
    assert stats.kstest(pooled, law.cdf).pvalue > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
def test_tensor_orbit_marginal(distribution):
    rng = np.random.default_rng(22)
    d, scale, reps = 4, 1.3, 5_000  # C(6, 3) = 20 orbits per draw -> 100 000 pooled
    pooled = np.concatenate(
        [orbit_vector(symmetric_tensor_noise(d, scale, rng, distribution)) for _ in range(reps)]
    )
    law = LAWS[distribution](0.0, scale)
    assert stats.kstest(pooled, law.cdf).pvalue > ALPHA


@pytest.mark.statistical
def test_distinct_orbits_uncorrelated():
    rng = np.random.default_rng(23)
    reps = 5_000
    draws = np.array([symmetric_tensor_noise(3, 1.0, rng) for _ in range(reps)])
    # Two off-diagonal orbits, and a diagonal against an off-diagonal one.
    for a, b in [((0, 1, 2), (0, 0, 1)), ((1, 1, 1), (0, 1, 2))]:
        r = np.corrcoef(draws[(slice(None), *a)], draws[(slice(None), *b)])[0, 1]
        # Under independence sqrt(n) r is approximately N(0, 1); 6 sd is p ~ 2e-9.
        assert abs(r) < 6.0 / np.sqrt(reps)
    mats = np.array([symmetric_matrix_noise(3, 1.0, rng) for _ in range(reps)])
    r = np.corrcoef(mats[:, 0, 1], mats[:, 1, 2])[0, 1]
    assert abs(r) < 6.0 / np.sqrt(reps)


# --- structure --------------------------------------------------------------


@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
@pytest.mark.parametrize("d", [1, 2, 7])
def test_matrix_exactly_symmetric(d, distribution):
    E = symmetric_matrix_noise(d, 2.0, rng=1, distribution=distribution)
    assert E.shape == (d, d)
    np.testing.assert_array_equal(E, E.T)
    assert np.unique(E).size == d * (d + 1) // 2


@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
@pytest.mark.parametrize("d", [1, 2, 5, 9])
def test_tensor_fully_symmetric(d, distribution):
    T = symmetric_tensor_noise(d, 1.0, rng=2, distribution=distribution)
    assert T.shape == (d, d, d)
    for perm in PERMUTATIONS:
        np.testing.assert_array_equal(T, T.transpose(perm))
    assert np.unique(T).size == comb(d + 2, 3)


def test_tensor_large_d_is_fast_and_symmetric():
    d = 60
    T = symmetric_tensor_noise(d, 1.0, rng=3)
    assert np.unique(T).size == comb(d + 2, 3)
    for perm in PERMUTATIONS[1:]:
        np.testing.assert_array_equal(T, T.transpose(perm))


def test_draw_order_matches_coordinate_extractors():
    # The k-th draw of the generator lands on the k-th coordinate.
    d, scale = 4, 0.5
    expected = np.random.default_rng(9).normal(0.0, scale, size=d * (d + 1) // 2)
    np.testing.assert_array_equal(upper_triangle(symmetric_matrix_noise(d, scale, rng=9)), expected)
    expected = np.random.default_rng(9).laplace(0.0, scale, size=comb(d + 2, 3))
    T = symmetric_tensor_noise(d, scale, rng=9, distribution="laplace")
    np.testing.assert_array_equal(orbit_vector(T), expected)


def test_extractor_orders():
    M = np.arange(9).reshape(3, 3)
    np.testing.assert_array_equal(upper_triangle(M), [0, 1, 2, 4, 5, 8])
    T = np.arange(27).reshape(3, 3, 3)
    triples = [t for t in itertools.product(range(3), repeat=3) if t[0] <= t[1] <= t[2]]
    np.testing.assert_array_equal(orbit_vector(T), [T[t] for t in triples])
    assert orbit_vector(np.ones((1, 1, 1))).shape == (1,)


@pytest.mark.parametrize("draw", [symmetric_matrix_noise, symmetric_tensor_noise])
def test_seeding(draw):
    np.testing.assert_array_equal(draw(4, 1.0, rng=5), draw(4, 1.0, rng=5))
    assert not np.array_equal(draw(4, 1.0, rng=5), draw(4, 1.0, rng=6))
    a, b = draw(4, 1.0), draw(4, 1.0)  # rng=None
    assert not np.array_equal(a, b)


def test_cached_index_is_not_exposed_to_mutation():
    T = symmetric_tensor_noise(3, 1.0, rng=0)
    T[0, 0, 0] = 1e9  # the result is a fresh array, writable
    T2 = symmetric_tensor_noise(3, 1.0, rng=0)
    assert T2[0, 0, 0] != 1e9


# --- bad input --------------------------------------------------------------


@pytest.mark.parametrize("draw", [symmetric_matrix_noise, symmetric_tensor_noise])
def test_bad_arguments(draw):
    with pytest.raises(ValueError, match="'distribution'"):
        draw(3, 1.0, rng=0, distribution="cauchy")
    with pytest.raises(ValueError, match="'scale'"):
        draw(3, 0.0, rng=0)
    with pytest.raises(ValueError, match="'scale'"):
        draw(3, np.nan, rng=0)
    with pytest.raises(ValueError, match="'d'"):
        draw(0, 1.0, rng=0)
    with pytest.raises(TypeError, match="'d'"):
        draw(3.0, 1.0, rng=0)


def test_extractors_reject_bad_shapes():
    with pytest.raises(ValueError, match="'M'"):
        upper_triangle(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="'M'"):
        upper_triangle(np.zeros(3))
    with pytest.raises(ValueError, match="'T'"):
        orbit_vector(np.zeros((2, 2, 3)))
    with pytest.raises(TypeError, match="'M'"):
        upper_triangle(np.array([["a"]]))


@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
def test_noise_added_in_place_is_the_same_draws_in_blocks(monkeypatch, distribution):
    # Drawn in blocks of whole rows (here a few entries each) and added in place: the same bits as one draw
    # of the upper triangle, mirrored and added to a symmetric matrix
    from dpmoments.mechanisms import symmetric

    S = np.random.default_rng(1).standard_normal((9, 9))
    S = S + S.T
    noise = symmetric_matrix_noise(9, 0.5, 3, distribution)
    whole = S + noise
    monkeypatch.setattr(symmetric, "_BLOCK", 7)
    assert symmetric_matrix_noise(9, 0.5, 3, distribution).tobytes() == noise.tobytes()
    out = symmetric.add_symmetric_matrix_noise(S.copy(), 0.5, 3, distribution)
    assert out.tobytes() == whole.tobytes()
