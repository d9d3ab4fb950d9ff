"""The eBIC grid's noise floor: below the release's own noise level, edges are noise."""

import math
import random
import warnings

import numpy as np
import pytest

from dpmoments import release_second_moment
from dpmoments.datasets import make_precision_data
from dpmoments.estimators import PrivateGraphicalLasso, alpha_grid, noise_floor
from dpmoments.metrics import tpr_fpr

P = 30
R = 1.5 * math.sqrt(P)


def _release(mechanism="gaussian", epsilon=1.0, n=2000, seed=0):
    X, theta = make_precision_data(3, n, P, row_norm=R, rng=np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release_second_moment(X, epsilon=epsilon, delta=1e-5, row_norm=R, mechanism=mechanism, rng=seed, center=None)
    return rel, theta


def test_floor_values():
    m = P * (P - 1) / 2
    gauss, _ = _release()
    assert noise_floor(gauss) == pytest.approx(gauss.noise_scale * math.sqrt(2 * math.log(m)))
    lap, _ = _release("laplace")
    assert noise_floor(lap) == pytest.approx(lap.noise_scale * math.log(m))
    wish, _ = _release("wishart-approx")
    assert noise_floor(wish) == pytest.approx(wish.noise_scale * math.sqrt(wish.noise_df * 2 * math.log(m)))
    exact, _ = _release(epsilon=math.inf)
    assert noise_floor(exact) == 0.0


def test_exact_discrete_laplace_has_the_laplace_floor():
    # Old: secure=True Laplace noise fell through to the Gaussian formula b*sqrt(2 ln m), which is
    # below the largest of m Laplace(b) draws (about b ln m), so pure-noise edges entered the grid.
    X, _ = make_precision_data(3, 2000, P, row_norm=R, rng=np.random.default_rng(0))
    rel = release_second_moment(X, epsilon=1.0, row_norm=R, mechanism="laplace", secure=True,
                                rng=random.Random(0), center=None)
    assert rel.mechanism == "discrete-laplace"
    assert noise_floor(rel) == pytest.approx(rel.noise_scale * math.log(P * (P - 1) / 2))


def test_grid_respects_the_floor():
    S = np.array([[1.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.0]])
    grid = alpha_grid(S, 10, floor=0.05)
    assert grid[0] == pytest.approx(0.5) and grid.min() == pytest.approx(0.05) and grid.size == 10
    np.testing.assert_array_equal(alpha_grid(S, 10, floor=0.9), [0.9])  # all noise: the diagonal solution
    np.testing.assert_array_equal(alpha_grid(S, [0.01, 0.3, 0.1], floor=0.05), [0.3, 0.1])
    np.testing.assert_array_equal(alpha_grid(S, [0.01, 0.02], floor=0.05), [0.05])
    with pytest.raises(ValueError, match="'floor'"):
        alpha_grid(S, 10, floor=-1.0)


def test_floor_stops_ebic_from_choosing_noise_edges():
    # Su et al.'s sparse Model 3: 57 true edges of 435 pairs
    rel, theta = _release(epsilon=1.0, n=20000, seed=3)
    kw = dict(alpha="ebic", epsilon=1.0, delta=1e-5, row_norm=R, alphas=30)
    floored = PrivateGraphicalLasso(**kw).fit_release(rel)
    blind = PrivateGraphicalLasso(alpha_floor=0.0, **kw).fit_release(rel)
    assert floored.alpha_floor_ == pytest.approx(noise_floor(rel)) and blind.alpha_floor_ == 0.0
    assert floored.alphas_.min() >= floored.alpha_floor_
    fpr = {name: tpr_fpr(est.precision_, theta)[1] for name, est in (("floored", floored), ("blind", blind))}
    assert fpr["floored"] < 0.5 * fpr["blind"], fpr


@pytest.mark.parametrize("bad, match", [("nois", "'alpha_floor' must be one of"), (-0.1, "'alpha_floor'")])
def test_bad_floor(bad, match):
    rel, _ = _release()
    with pytest.raises(ValueError, match=match):
        PrivateGraphicalLasso(alpha="ebic", alpha_floor=bad, epsilon=1.0, delta=1e-5, row_norm=R).fit_release(rel)
