"""Su et al. precision models, the Gaussian sampler, public clipping, max-norm scaling."""

import warnings

import numpy as np
import pytest

from dpmoments.datasets import (
    ar_precision,
    cai_precision,
    make_precision_data,
    max_norm_scale,
    sample_gaussian,
    su_model,
)
from dpmoments.exceptions import PrivacyLeakWarning


def _assert_spd(Theta):
    np.testing.assert_array_equal(Theta, Theta.T)
    assert np.linalg.eigvalsh(Theta)[0] > 0


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("p", [5, 100])
def test_models_symmetric_positive_definite(k, p):
    Theta = su_model(k, p, rng=0)
    assert Theta.shape == (p, p) and Theta.dtype == np.float64
    _assert_spd(Theta)


def test_model1_wishart_structure():
    Theta = su_model(1, 50, rng=1)
    # W W^T / 10000 with N(0,1) entries: diagonal ~ 1 +- sqrt(2/10000), off-diagonal ~ +-0.01
    np.testing.assert_allclose(np.diag(Theta), 1.0, atol=0.07)
    off = Theta[~np.eye(50, dtype=bool)]
    assert np.all(off != 0)
    assert abs(off.std() - 0.01) < 0.002
    np.testing.assert_array_equal(su_model(1, 50, rng=1), Theta)
    assert not np.array_equal(su_model(1, 50, rng=2), Theta)


def test_model2_compound_symmetry():
    Theta = su_model(2, 6)
    np.testing.assert_array_equal(np.diag(Theta), 1.0)
    np.testing.assert_array_equal(Theta[~np.eye(6, dtype=bool)], 0.5)


def test_model3_ar2_bands():
    p = 8
    Theta = su_model(3, p)
    np.testing.assert_array_equal(Theta, ar_precision(p, (0.5, 0.25)))
    i, j = np.indices((p, p))
    gap = np.abs(i - j)
    np.testing.assert_array_equal(Theta[gap == 0], 1.0)  # not the paper's typo theta_ii = 0
    np.testing.assert_array_equal(Theta[gap == 1], 0.5)
    np.testing.assert_array_equal(Theta[gap == 2], 0.25)
    np.testing.assert_array_equal(Theta[gap > 2], 0.0)


def test_ar_precision_variants():
    np.testing.assert_array_equal(ar_precision(1), [[1.0]])
    np.testing.assert_array_equal(ar_precision(2), [[1.0, 0.5], [0.5, 1.0]])
    Theta = ar_precision(5, coefficients=(0.4,))
    assert np.count_nonzero(np.triu(Theta, 1)) == 4
    with pytest.raises(ValueError, match="not positive definite"):
        ar_precision(10, coefficients=(0.9, 0.9))
    with pytest.raises(TypeError, match="'coefficients'"):
        ar_precision(5, coefficients="ab")
    with pytest.raises(ValueError, match="'coefficients' must be finite"):
        ar_precision(5, coefficients=(np.nan,))
    with pytest.raises(ValueError, match="'n_features' must be an integer >= 1; got 0"):
        ar_precision(0)


@pytest.mark.parametrize("p", [2, 3, 10, 50, 100])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_model4_condition_number_and_unit_diagonal(p, seed):
    Theta0 = cai_precision(p, rng=seed, standardise=False)
    _assert_spd(Theta0)
    np.testing.assert_allclose(np.linalg.cond(Theta0), p, rtol=1e-6)
    Theta = cai_precision(p, rng=seed)
    _assert_spd(Theta)
    np.testing.assert_allclose(np.diag(Theta), 1.0, rtol=1e-12)
    # same sparsity pattern as Theta0, standardised
    d = np.sqrt(np.diag(Theta0))
    np.testing.assert_allclose(Theta, Theta0 / np.outer(d, d), rtol=1e-12)
    np.testing.assert_array_equal(su_model(4, p, rng=seed), Theta)


def test_model4_sparsity_and_values():
    Theta0 = cai_precision(200, rng=3, standardise=False)
    off = Theta0[np.triu_indices(200, 1)]
    nonzero = off[off != 0]
    np.testing.assert_array_equal(nonzero, 0.5)
    # fraction of edges ~ 0.1 (19900 pairs: sd ~ 0.002)
    assert abs(nonzero.size / off.size - 0.1) < 0.01


def test_su_model_validation():
    with pytest.raises(ValueError, match=r"'k' must be a model number in \{1, 2, 3, 4\}; got 5"):
        su_model(5, 10)
    with pytest.raises(ValueError, match="'k'"):
        su_model(0, 10)
    with pytest.raises(TypeError, match="'k' must be an integer"):
        su_model(1.0, 10)
    with pytest.raises(TypeError, match="'n_features'"):
        su_model(2, "10")
    with pytest.raises(ValueError, match="'n_features' must be an integer >= 2"):
        su_model(4, 1)
    with pytest.raises(ValueError, match="'n_features' must be < 10000"):
        su_model(1, 10_000)
    with pytest.raises(TypeError, match="'rng'"):
        su_model(4, 10, rng="seed")
    with pytest.raises(TypeError, match="'standardise' must be a bool"):
        cai_precision(10, standardise=1)


def test_sample_gaussian_shape_and_determinism():
    Theta = su_model(3, 6)
    X = sample_gaussian(Theta, 50, rng=4)
    assert X.shape == (50, 6)
    np.testing.assert_array_equal(sample_gaussian(Theta, 50, rng=4), X)
    assert not np.array_equal(sample_gaussian(Theta, 50, rng=5), X)


@pytest.mark.statistical
@pytest.mark.parametrize("k", [2, 3, 4])
def test_sample_gaussian_covariance(k):
    p, n = 8, 200_000
    Theta = su_model(k, p, rng=7)
    X = sample_gaussian(Theta, n, rng=8)
    Sigma = np.linalg.inv(Theta)
    emp = X.T @ X / n
    # entrywise sd of the sample covariance: sqrt((S_ii S_jj + S_ij^2) / n)
    sd = np.sqrt((np.outer(np.diag(Sigma), np.diag(Sigma)) + Sigma**2) / n)
    assert np.max(np.abs(emp - Sigma) / sd) < 5.0
    assert np.max(np.abs(X.mean(axis=0)) / np.sqrt(np.diag(Sigma) / n)) < 5.0


def test_sample_gaussian_validation():
    with pytest.raises(ValueError, match="'precision' must be positive definite"):
        sample_gaussian(-np.eye(3), 10, rng=0)
    with pytest.raises(ValueError, match="'precision' must be symmetric"):
        sample_gaussian(np.array([[1.0, 0.5], [0.0, 1.0]]), 10, rng=0)
    with pytest.raises(ValueError, match="'precision' must be square"):
        sample_gaussian(np.ones((2, 3)), 10, rng=0)
    with pytest.raises(ValueError, match="'precision' contains"):
        sample_gaussian(np.array([[np.nan]]), 10, rng=0)
    with pytest.raises(ValueError, match="'n_samples' must be an integer >= 1; got 0"):
        sample_gaussian(np.eye(2), 0, rng=0)


@pytest.mark.parametrize("model", [1, 2, 3, 4])
def test_make_precision_data_clips_to_public_bound(model):
    X, Theta = make_precision_data(model, 300, 12, row_norm=0.5, rng=9)
    assert X.shape == (300, 12)
    _assert_spd(Theta)
    norms = np.linalg.norm(X, axis=1)
    assert norms.max() <= 0.5 * (1 + 1e-12)
    np.testing.assert_allclose(norms, 0.5, rtol=1e-12)  # rows of norm ~ sqrt(tr Sigma) >> 0.5 are all clipped
    X2, Theta2 = make_precision_data(model, 300, 12, row_norm=0.5, rng=9)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(Theta2, Theta)


def test_make_precision_data_large_bound_leaves_rows():
    X, Theta = make_precision_data(3, 100, 5, row_norm=1e6, rng=10)
    # same generator order: model (deterministic for M3) then rows
    np.testing.assert_array_equal(X, sample_gaussian(Theta, 100, rng=10))


def test_make_precision_data_validation():
    with pytest.raises(TypeError):
        make_precision_data(3, 10, 5, 1.0)  # row_norm is keyword-only
    with pytest.raises(ValueError, match="'row_norm' is required"):
        make_precision_data(3, 10, 5, row_norm=None)
    with pytest.raises(ValueError, match=r"'row_norm' must be in \(0, inf\); got -1.0"):
        make_precision_data(3, 10, 5, row_norm=-1.0)
    with pytest.raises(ValueError, match=r"'model' must be a model number in \{1, 2, 3, 4\}; got 7"):
        make_precision_data(7, 10, 5, row_norm=1.0)
    with pytest.raises(TypeError, match="'model' must be an integer"):
        make_precision_data("M3", 10, 5, row_norm=1.0)


def test_max_norm_scale_warns_every_time():
    X = np.array([[3.0, 4.0], [0.0, 1.0], [1.0, 0.0]])
    for _ in range(3):
        with pytest.warns(PrivacyLeakWarning, match="data-dependent statistic"):
            Y = max_norm_scale(X)
    np.testing.assert_allclose(Y, X / 5.0)
    np.testing.assert_allclose(np.linalg.norm(Y, axis=1).max(), 1.0)
    np.testing.assert_array_equal(X[0], [3.0, 4.0])  # input untouched


def test_max_norm_scale_zero_and_validation():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        Z = np.zeros((3, 2))
        out = max_norm_scale(Z)
        np.testing.assert_array_equal(out, Z)
        assert out is not Z
    with pytest.raises(ValueError, match="'X' must be 2-D"):
        max_norm_scale(np.ones(3))
    with pytest.raises(ValueError, match="'X' contains"):
        max_norm_scale(np.array([[np.inf]]))
