"""Row, entry and response clipping: the public bound is enforced, nothing else changes."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpmoments.moments.bounds import clip_entries, clip_responses, clip_rows

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
shapes = st.tuples(st.integers(0, 20), st.integers(1, 6))
matrices = shapes.flatmap(lambda s: arrays(np.float64, s, elements=finite))
bounds = st.floats(1e-3, 1e3)


@settings(max_examples=60, deadline=None)
@given(matrices, bounds)
def test_clip_rows_enforces_bound_and_keeps_inside_rows(X, R):
    before = X.copy()
    out = clip_rows(X, row_norm=R)
    np.testing.assert_array_equal(X, before)  # input not mutated
    assert out.shape == X.shape and not np.shares_memory(out, X)
    norms_in = np.linalg.norm(X, axis=1)
    norms_out = np.linalg.norm(out, axis=1)
    assert np.all(norms_out <= R * (1 + 1e-12) + 1e-12)
    inside = norms_in <= R
    np.testing.assert_array_equal(out[inside], X[inside])
    # clipped rows keep their direction and land on the sphere
    outside = ~inside
    np.testing.assert_allclose(norms_out[outside], R, rtol=1e-12)
    np.testing.assert_allclose(out[outside] * norms_in[outside, None] / R, X[outside], rtol=1e-9, atol=1e-9)


def test_clip_rows_example_and_zero_rows_without_warnings():
    X = np.array([[3.0, 4.0], [0.0, 0.0], [0.3, 0.4]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = clip_rows(X, row_norm=1.0)
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0], [0.3, 0.4]])
    assert isinstance(out, np.ndarray)  # no count of clipped rows is returned


def test_clip_rows_huge_entries_do_not_overflow_to_zero():
    X = np.array([[1e200, -1e200], [1e300, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = clip_rows(X, row_norm=2.0)
    np.testing.assert_allclose(out, [[np.sqrt(2), -np.sqrt(2)], [2.0, 0.0]], rtol=1e-12)


def test_clip_rows_returns_new_array_even_when_nothing_clipped():
    X = np.full((3, 2), 0.1)
    out = clip_rows(X, row_norm=10.0)
    out[0, 0] = 99.0
    assert X[0, 0] == 0.1


def test_clip_rows_accepts_lists_and_ints():
    np.testing.assert_allclose(clip_rows([[3, 4]], row_norm=5), [[3.0, 4.0]])


@pytest.mark.parametrize("bad, exc", [(0.0, ValueError), (-1.0, ValueError), (None, ValueError),
                                      (np.inf, ValueError), (np.nan, ValueError), ("1", TypeError),
                                      (True, TypeError)])
def test_clip_rows_rejects_bad_row_norm(bad, exc):
    with pytest.raises(exc, match="row_norm"):
        clip_rows(np.ones((2, 2)), row_norm=bad)


def test_clip_rows_rejects_bad_data():
    with pytest.raises(ValueError, match="2-D"):
        clip_rows(np.ones((2, 2, 2)), row_norm=1.0)
    with pytest.raises(ValueError, match="NaN"):
        clip_rows(np.array([[1.0, np.nan]]), row_norm=1.0)
    with pytest.raises(TypeError, match="X"):
        clip_rows(np.array([["a", "b"]]), row_norm=1.0)


@settings(max_examples=40, deadline=None)
@given(matrices, bounds)
def test_clip_entries_bounds_each_entry(X, B):
    before = X.copy()
    out = clip_entries(X, bound=B)
    np.testing.assert_array_equal(X, before)
    assert np.all(np.abs(out) <= B)
    inside = np.abs(X) <= B
    np.testing.assert_array_equal(out[inside], X[inside])
    np.testing.assert_array_equal(out[~inside], np.sign(X[~inside]) * B)


def test_clip_entries_rejects_bad_bound():
    with pytest.raises(ValueError, match="'bound'"):
        clip_entries(np.ones((2, 2)), bound=-1)
    with pytest.raises(ValueError, match="'bound'"):
        clip_entries(np.ones((2, 2)), bound=None)


def test_clip_responses():
    y = np.array([5.0, -0.5, -2.0, 1.0])
    out = clip_responses(y, bound=1.0)
    np.testing.assert_array_equal(out, [1.0, -0.5, -1.0, 1.0])
    assert y[0] == 5.0
    with pytest.raises(ValueError, match="1-D"):
        clip_responses(np.ones((2, 2)), bound=1.0)
    with pytest.raises(ValueError, match="'bound'"):
        clip_responses(y, bound=0.0)
    with pytest.raises(ValueError, match="NaN"):
        clip_responses([np.nan], bound=1.0)
