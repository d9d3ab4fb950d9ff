"""Sparse rows: the sums from the non-zeros equal the dense sums, clipping included."""

import numpy as np
import pytest
from scipy import sparse

from dpmoments.multisite import Site
from dpmoments.moments import accumulate_moments, sparse_moment_sums

from .test_accumulate import _one_shot as _dense


def _random_sparse(rng, n=300, d=12, density=0.15, scale=2.0):
    X = rng.normal(size=(n, d)) * scale * (rng.random((n, d)) < density)
    X[:5] = rng.normal(size=(5, d)) * scale  # a few dense rows: the BLAS branch
    X[7] = 0.0  # an empty row
    return X


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("bound", [{"row_norm": 1.5}, {"entry_bound": 0.7}])
def test_equals_dense(fmt, bound):
    rng = np.random.default_rng(0)
    X = _random_sparse(rng)
    y = rng.normal(size=X.shape[0]) * 3
    got = accumulate_moments((sparse.coo_array(X).asformat(fmt), y), third=True, response_bound=1.0, **bound)
    want = _dense(X, y, response_bound=1.0, **bound)
    assert got.n == X.shape[0]
    for name in ("xtx", "third", "xty"):
        np.testing.assert_allclose(getattr(got, name), want[name], rtol=1e-12, atol=1e-12)
    assert got.yty == pytest.approx(want["yty"], rel=1e-12)
    assert got.row_norm == bound.get("row_norm") and got.entry_bound == bound.get("entry_bound")


def test_input_is_not_modified_and_huge_entries_clip_safely():
    X = sparse.csr_array(np.array([[1e200, 0.0, 1e200], [0.0, 3.0, 0.0]]))
    before = X.data.copy()
    got = sparse_moment_sums(X, row_norm=1.0)
    np.testing.assert_array_equal(X.data, before)
    np.testing.assert_allclose(got.xtx, [[0.5, 0, 0.5], [0, 1, 0], [0.5, 0, 0.5]], atol=1e-15)


def test_one_hot_documents_are_counts():
    rng = np.random.default_rng(1)
    D, n = 6, 500
    ids = rng.integers(0, D, size=(n, 3))
    Z = np.zeros((n, 3 * D))
    for j in range(3):
        Z[np.arange(n), j * D + ids[:, j]] = 1.0
    got = sparse_moment_sums(sparse.csr_array(Z), row_norm=np.sqrt(3.0), third=True)
    want = np.zeros((3 * D,) * 3)
    np.add.at(want, (ids[:, 0], D + ids[:, 1], 2 * D + ids[:, 2]), 1.0)
    np.testing.assert_allclose(got.third[:D, D:2 * D, 2 * D:], want[:D, D:2 * D, 2 * D:], atol=1e-12)
    np.testing.assert_allclose(got.xtx, Z.T @ Z, atol=1e-12)


def test_site_accepts_sparse_rows_with_the_dense_result():
    rng = np.random.default_rng(2)
    X = _random_sparse(rng, n=200, d=8)
    dense, sp = Site("a", X, row_norm=1.0), Site("a", sparse.csr_array(X), row_norm=1.0)
    assert sp.n == 200 and sp.n_features == 8
    for statistic in ("second", "third"):
        np.testing.assert_allclose(sp._exact(statistic), dense._exact(statistic), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("bad, match", [
    (lambda X: X.__setitem__((3, 2), np.nan), r"row 3, column 2"),
    (lambda X: X.__setitem__((0, 0), np.inf), r"row 0, column 0"),
])
def test_non_finite_entries_are_named(bad, match):
    X = np.eye(5)
    bad(X)
    with pytest.raises(ValueError, match=match):
        sparse_moment_sums(sparse.csr_array(X), row_norm=1.0)


def test_bad_arguments():
    X = sparse.csr_array(np.eye(3))
    with pytest.raises(ValueError, match="Exactly one of 'row_norm'"):
        sparse_moment_sums(X)
    with pytest.raises(ValueError, match="'center' cannot be used with sparse"):
        accumulate_moments(X, row_norm=1.0, center=np.zeros(3))
    with pytest.raises(ValueError, match="'response_bound'"):
        sparse_moment_sums(X, np.ones(3), row_norm=1.0)
    with pytest.raises(ValueError, match="length 3"):
        sparse_moment_sums(X, np.ones(4), row_norm=1.0, response_bound=1.0)
    with pytest.raises(ValueError, match="no rows"):
        sparse_moment_sums(sparse.csr_array((0, 3)), row_norm=1.0)
    with pytest.raises(ValueError, match="'center' cannot be used with sparse"):
        Site("a", X, row_norm=1.0, center=np.zeros(3))


def test_releases_take_sparse_input_with_the_dense_noise():
    from dpmoments import release_cross_moment, release_second_moment, release_third_moment

    rng = np.random.default_rng(3)
    X = _random_sparse(rng, n=400, d=6)
    y = rng.normal(size=400)
    kw = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, center=None)
    for release, args in ((release_second_moment, ()), (release_third_moment, ()), (release_cross_moment, (y,))):
        extra = {"response_bound": 1.0} if args else {}
        dense = release(X, *args, rng=5, **kw, **extra)
        sp = release(sparse.csr_array(X), *args, rng=5, **kw, **extra)
        assert sp.noise_scale == dense.noise_scale and sp.n == dense.n
        name = {release_second_moment: "second_moment", release_third_moment: "third_moment",
                release_cross_moment: "cross_moment"}[release]
        np.testing.assert_allclose(getattr(sp, name), getattr(dense, name), rtol=1e-10, atol=1e-12)
