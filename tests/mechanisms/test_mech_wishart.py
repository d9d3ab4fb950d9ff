"""Wishart noise: law (chi-square margins, moments, trace), structure, validation."""

import math

import numpy as np
import pytest
from scipy import stats

from dpmoments.mechanisms import sheffet_degrees_of_freedom, wishart_noise
from dpmoments.mechanisms.wishart import _wishart_bartlett, _wishart_direct

ALPHA = 1e-6


def _draws(d, df, scale, reps, seed):
    rng = np.random.default_rng(seed)
    return np.array([wishart_noise(d, df, scale, rng) for _ in range(reps)])


@pytest.mark.statistical
@pytest.mark.parametrize("df", [1, 3, 40])
def test_one_dimensional_is_scaled_chi_square(df):
    scale = 0.25
    W = _draws(1, df, scale, 4_000, seed=31)[:, 0, 0]
    assert stats.kstest(W / scale, stats.chi2(df).cdf).pvalue > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("df", [2, 7])  # df < d (direct Z Z^T) and df >= d (Bartlett)
def test_mean_and_variances(df):
    d, scale, reps = 4, 0.5, 4_000
    W = _draws(d, df, scale, reps, seed=32)
    off = ~np.eye(d, dtype=bool)
    # Mean: each entry's standard error is sqrt(Var(W_ij) / reps); allow 6 of them.
    se_mean = np.sqrt(np.where(off, df, 2 * df) * scale**2 / reps)
    assert np.all(np.abs(W.mean(axis=0) - df * scale * np.eye(d)) < 6 * se_mean)
    # Variance: Var(s^2) ~ sigma^4 (2 + kappa) / reps with excess kurtosis kappa =
    # 6/df off the diagonal (sum of df products of normals), 12/df on it (chi2(df)).
    var = W.var(axis=0, ddof=1)
    expected = np.where(off, df, 2 * df) * scale**2
    kappa = np.where(off, 6.0 / df, 12.0 / df)
    se_var = expected * np.sqrt((2 + kappa) / reps)
    assert np.all(np.abs(var - expected) < 6 * se_var)


@pytest.mark.statistical
@pytest.mark.parametrize("df", [2, 4, 9])
def test_trace_is_chi_square(df):
    d, scale = 4, 1.7
    traces = np.trace(_draws(d, df, scale, 4_000, seed=33), axis1=1, axis2=2)
    assert stats.kstest(traces / scale, stats.chi2(d * df).cdf).pvalue > ALPHA


@pytest.mark.statistical
def test_bartlett_and_direct_samplers_agree():
    # Two-sample KS on an off-diagonal entry and on the smallest eigenvalue.
    d, df, reps = 3, 5, 4_000
    rng = np.random.default_rng(34)
    bart = np.array([_wishart_bartlett(d, df, 1.0, rng) for _ in range(reps)])
    direct = np.array([_wishart_direct(d, df, 1.0, rng) for _ in range(reps)])
    assert stats.ks_2samp(bart[:, 0, 2], direct[:, 0, 2]).pvalue > ALPHA
    assert stats.ks_2samp(bart[:, 1, 1], direct[:, 1, 1]).pvalue > ALPHA
    low = [np.linalg.eigvalsh(W)[0] for W in (bart, direct)]
    assert stats.ks_2samp(*low).pvalue > ALPHA


@pytest.mark.parametrize("d, df", [(1, 1), (4, 2), (4, 4), (6, 50)])
def test_structure(d, df):
    W = wishart_noise(d, df, 0.3, rng=1)
    assert W.shape == (d, d)
    np.testing.assert_array_equal(W, W.T)
    eig = np.linalg.eigvalsh(W)
    assert eig.min() > -1e-12 * eig.max()
    assert np.linalg.matrix_rank(W) == min(d, df)  # df < d is singular


def test_huge_df_is_cheap():
    # Sheffet's df for a small epsilon: Bartlett draws O(d^2) numbers, not d * df.
    df = sheffet_degrees_of_freedom(50, epsilon=0.01, delta=1e-6)
    assert df > 2_000_000
    W = wishart_noise(50, df, 1.0, rng=2)
    assert np.allclose(np.diag(W) / df, 1.0, atol=0.01)


def test_seeding():
    np.testing.assert_array_equal(wishart_noise(3, 5, 1.0, rng=7), wishart_noise(3, 5, 1.0, rng=7))
    assert not np.array_equal(wishart_noise(3, 5, 1.0, rng=7), wishart_noise(3, 5, 1.0, rng=8))
    assert not np.array_equal(wishart_noise(3, 5, 1.0), wishart_noise(3, 5, 1.0))


def test_sheffet_degrees_of_freedom():
    d, eps, delta = 10, 0.5, 1e-5
    assert sheffet_degrees_of_freedom(d, eps, delta) == math.floor(d + 14 * math.log(4 / delta) / eps**2)
    assert sheffet_degrees_of_freedom(3, epsilon=2.0, delta=0.5) == 3 + math.floor(3.5 * math.log(8))
    assert isinstance(sheffet_degrees_of_freedom(3, 1.0, 1e-3), int)


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(epsilon=0.0, delta=1e-5), ValueError, "epsilon"),
        (dict(epsilon=np.inf, delta=1e-5), ValueError, "epsilon"),
        (dict(epsilon=1e-200, delta=1e-5), ValueError, "epsilon"),
        (dict(epsilon=1.0, delta=0.0), ValueError, "delta"),
        (dict(epsilon=1.0, delta=1.0), ValueError, "delta"),
        (dict(epsilon="1", delta=1e-5), TypeError, "epsilon"),
    ],
)
def test_sheffet_bad_input(kwargs, error, name):
    with pytest.raises(error, match=f"'{name}'"):
        sheffet_degrees_of_freedom(5, **kwargs)


@pytest.mark.parametrize(
    "args, error, name",
    [
        ((3, 2.5, 1.0), TypeError, "df"),
        ((3, 0, 1.0), ValueError, "df"),
        ((3, 2, 0.0), ValueError, "scale"),
        ((3, 2, np.nan), ValueError, "scale"),
        ((3, 2, -1.0), ValueError, "scale"),
        ((0, 2, 1.0), ValueError, "d"),
        ((2.0, 2, 1.0), TypeError, "d"),
    ],
)
def test_wishart_bad_input(args, error, name):
    with pytest.raises(error, match=f"'{name}'"):
        wishart_noise(*args, rng=0)
