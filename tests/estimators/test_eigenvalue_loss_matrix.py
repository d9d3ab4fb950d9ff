"""PCA's eigenvalue intervals (issue 25): the centre's bias along a component by its norm bound, and the components
that bear rows beyond twice the bound withheld (the loss matrix itself: test_error_budget.py, read without rows)."""

import numpy as np
import pytest

from dpmoments.estimators.centre_bias import eigenvalue_centre_bias
from dpmoments.estimators.eigenvalue_budget import EIGEN_TAIL_RATIO, _along_unseen_loss, _tail_factors, bears_z
from dpmoments.estimators.error_budget import TAIL_RATIO

pytestmark = pytest.mark.filterwarnings("ignore::dpmoments.exceptions.NoiseDominatesWarning",
                                        "ignore::dpmoments.exceptions.BoundWarning")


def test_the_centre_bias_along_a_component_takes_the_norm_bound_where_it_is_smaller():
    W, B = np.full((1, 64), 1 / 8.0), np.full(64, 1.0)  # a component spread over 64 columns, each |beta_j| <= 1
    below, above = eigenvalue_centre_bias(B, 0.1, W, 0.9)
    normed_below, normed_above = eigenvalue_centre_bias(B, 0.1, W, 0.9, joint=(1.0, np.ones(64, dtype=bool)))
    # |w.beta| <= sum |w_j| B_j = 8 against ||w|| N = 1
    assert normed_below[0] < below[0] / 10 and normed_above[0] < above[0] / 5
    same = eigenvalue_centre_bias(B, 0.1, W, 0.9, joint=(np.inf, np.ones(64, dtype=bool)))
    np.testing.assert_array_equal(same[0], below)


def test_a_component_whose_band_loss_stands_out_while_rows_beyond_twice_the_bound_are_seen_is_withheld():
    part = {"variance_lost": [0.0, 0.0, 0.0], "noise_sd": 1.0, "rows_beyond_outer": 40.0, "rows_beyond_noise_sd": 5.0}
    W = np.eye(3)
    assert not _along_unseen_loss(part, W, 0.9).any()  # no column's loss stands out
    withheld = _along_unseen_loss(part, W, 0.9, np.array([6.0, 0.5, -1.0]), np.ones(3))
    assert withheld.tolist() == [True, False, False]
    ruled_out = dict(part, rows_beyond_outer=-3.0, rows_beyond_noise_sd=0.5)
    assert not _along_unseen_loss(ruled_out, W, 0.9, np.array([6.0, 0.5, -1.0]), np.ones(3)).any()


def test_only_the_first_component_takes_the_doubled_tail_ratio_the_later_ones_the_covariances():
    # the fitted first component turns towards the largest rows; the later ones are orthogonal to it
    factors = _tail_factors(3)
    assert factors[0] == 1.0 + EIGEN_TAIL_RATIO > factors[1] == factors[2] == 1.0 + TAIL_RATIO
    assert _tail_factors(0).shape == (0,)


def test_a_component_bears_far_rows_at_the_family_level_over_the_components_tested():
    from scipy.special import ndtri

    assert bears_z(0.9, 3) == pytest.approx(float(ndtri(1 - 0.1 / 3)))  # one-sided, Bonferroni over k = 3
    part = {"variance_lost": np.zeros(6), "noise_sd": 1.0, "rows_beyond_outer": 40.0, "rows_beyond_noise_sd": 5.0}
    W = np.eye(6)[:3]  # 3 components tested of d = 6 columns
    # 1.5 sd stood out at one-sided 90% per component (1.28); under the family's 1.83 only 1.9 sd does
    withheld = _along_unseen_loss(part, W, 0.9, np.array([1.5, 1.9, 0.0]), np.ones(3))
    assert withheld.tolist() == [False, True, False]


def test_the_turn_proof_upper_end_holds_the_first_eigenvalue_however_clipping_turned_the_component():
    from dpmoments.estimators.eigenvalue_turn import turn_parts, turned_upper

    rng = np.random.default_rng(3)
    for _ in range(10):  # the 2 x 2 bound against the exact top eigenvalue of S + D, D positive semi-definite
        values = np.sort(rng.exponential(5.0, 4))[::-1]
        Q = np.linalg.qr(rng.normal(size=(4, 4)))[0]
        G = rng.normal(size=(4, 2)) * rng.exponential(3.0)
        S, D = (Q * values) @ Q.T, G @ G.T
        w = Q[:, 0]
        b, c, below, _ = turn_parts(D, Q[:, :2].T, np.ones(4), values, 1.0, 0.0)
        upper = turned_upper(np.array([values[0] + w @ D @ w]), below[:1], b[:1], c[:1])
        assert np.linalg.eigvalsh(S + D)[-1] <= upper[0] * (1 + 1e-9)
    # a loss wholly off the first component: first order adds nothing, another direction overtakes
    b, c, below, turned = turn_parts(np.diag([0.0, 30.0]), np.eye(2)[:1], np.ones(2), np.array([10.0, 1.0]), 1.0, 0.0)
    assert turned.tolist() == [True] and turned_upper(np.array([10.0]), below, b, c)[0] >= 31.0
    small = turn_parts(np.diag([0.1, 0.1]), np.eye(2)[:1], np.ones(2), np.array([10.0, 1.0]), 1.0, 0.0)
    assert small[3].tolist() == [False]
