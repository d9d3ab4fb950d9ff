"""I.i.d. Gaussian and Laplace noise: laws, shapes, seeding, validation."""

import numpy as np
import pytest
from scipy import stats

from dpmoments.mechanisms import gaussian_noise, laplace_noise

ALPHA = 1e-6  # goodness-of-fit tests fail only when p <= ALPHA
N_DRAWS = 100_000


@pytest.mark.statistical
@pytest.mark.parametrize("sigma", [0.3, 2.5])
def test_gaussian_noise_matches_normal(sigma):
    draws = gaussian_noise(N_DRAWS, sigma, rng=11)
    assert stats.kstest(draws, stats.norm(0.0, sigma).cdf).pvalue > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("scale", [0.3, 2.5])
def test_laplace_noise_matches_laplace(scale):
    draws = laplace_noise(N_DRAWS, scale, rng=12)
    assert stats.kstest(draws, stats.laplace(0.0, scale).cdf).pvalue > ALPHA


@pytest.mark.parametrize("noise", [gaussian_noise, laplace_noise])
@pytest.mark.parametrize("shape, expected", [(5, (5,)), ((2, 3), (2, 3)), ((), ()), (0, (0,)), (np.int64(4), (4,))])
def test_shapes(noise, shape, expected):
    assert noise(shape, 1.0, rng=0).shape == expected


@pytest.mark.parametrize("noise", [gaussian_noise, laplace_noise])
def test_seeding(noise):
    np.testing.assert_array_equal(noise(10, 1.0, rng=3), noise(10, 1.0, rng=3))
    assert not np.array_equal(noise(10, 1.0, rng=3), noise(10, 1.0, rng=4))
    gen = np.random.default_rng(5)
    assert not np.array_equal(noise(10, 1.0, rng=gen), noise(10, 1.0, rng=gen))
    a, b = noise(10, 1.0), noise(10, 1.0)  # rng=None: fresh OS entropy
    assert a.shape == (10,) and not np.array_equal(a, b)


@pytest.mark.parametrize("noise, name", [(gaussian_noise, "sigma"), (laplace_noise, "scale")])
@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf])
def test_bad_scale_raises_value_error(noise, name, bad):
    with pytest.raises(ValueError, match=f"'{name}'"):
        noise(3, bad, rng=0)


@pytest.mark.parametrize("noise, name", [(gaussian_noise, "sigma"), (laplace_noise, "scale")])
@pytest.mark.parametrize("bad", ["1", None, True, [1.0]])
def test_bad_scale_kind(noise, name, bad):
    with pytest.raises((TypeError, ValueError), match=f"'{name}'"):
        noise(3, bad, rng=0)


@pytest.mark.parametrize("noise", [gaussian_noise, laplace_noise])
def test_bad_shape(noise):
    with pytest.raises(ValueError, match="'shape'"):
        noise((2, -1), 1.0, rng=0)
    with pytest.raises(TypeError, match="'shape'"):
        noise(2.5, 1.0, rng=0)
    with pytest.raises(TypeError, match="'shape'"):
        noise([2, 3], 1.0, rng=0)


def test_bad_rng():
    with pytest.raises(TypeError, match="'rng'"):
        gaussian_noise(3, 1.0, rng="seed")
