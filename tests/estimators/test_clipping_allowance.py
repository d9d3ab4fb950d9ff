"""The undetected clipping loss's off-diagonal allowance, its noise in quadrature (estimators/clipping_allowance.py)."""

import numpy as np

from dpmoments.estimators.clipping_allowance import (elliptical_parts, split_allowance, towards_parts, unclear_signs,
                                                     widen_block)
from dpmoments.estimators.clipping_blocks import ClippingShifts, correlations_in_place

Z = 1.6448536269514722


def _parts(rng, d=6):
    lost, lost_sd = rng.normal(0.0, 1.0, d), 2.0
    r, sigma = rng.uniform(-0.5, 3.0, d), rng.uniform(0.2, 1.0, d)
    return elliptical_parts(lost, lost_sd, 3 * r, 3 * sigma, Z)


def test_at_the_levels_noise_the_bound_is_the_plain_sums_allowance_and_its_sd_is_never_wider():
    c, tau, up = _parts(np.random.default_rng(0))
    shift, sd = split_allowance(c, tau, up, slice(0, len(c)))
    lam = np.sqrt(np.divide.outer(up, up)).T  # lambda_ij = sqrt(U_j / U_i)
    linear = 0.5 * (lam * tau[:, None] + tau[None, :] / lam)
    plain = np.sqrt(np.outer(up, up))
    unclamped = 0.5 * (lam * c[:, None] + c[None, :] / lam)
    np.testing.assert_allclose(unclamped + Z * linear, plain, rtol=1e-12, atol=1e-12)
    negative = np.add.outer(c < 0, c < 0)  # a variance released below its noise: the plain sqrt(U_i U_j), no sd
    assert negative.any() and (~negative).any()
    np.testing.assert_allclose(shift[negative], plain[negative], rtol=1e-12)
    assert np.all(sd[negative] == 0) and np.all(sd <= linear + 1e-12)
    np.testing.assert_allclose(shift[~negative], unclamped[~negative], rtol=1e-12)


def test_the_linearised_bound_holds_for_every_draw_of_the_variances_noise():
    rng = np.random.default_rng(1)
    c, tau, up = _parts(rng)
    shift, _ = split_allowance(c, tau, up, slice(0, len(c)))
    lam = np.sqrt(np.divide.outer(up, up)).T
    for _ in range(200):  # whatever the noise, D_jj = c_j + tau_j Z_j >= 0 bounds sqrt(D_ii D_jj) by the linear form
        z = rng.normal(size=len(c)) * 3
        D = c + tau * z
        ok = D >= 0
        bound = shift + 0.5 * (lam * (tau * z)[:, None] + (tau * z)[None, :] / lam)
        exact = np.sqrt(np.outer(np.where(ok, D, 0), np.where(ok, D, 0)))
        both = np.outer(ok, ok) & np.outer(c >= 0, c >= 0)  # the pairs the linear form is used for
        assert np.all(exact[both] <= bound[both] + 1e-9)


def test_the_signed_sd_widens_the_end_it_names_in_quadrature_and_leaves_the_other():
    lo, hi = np.full((2, 2), 3.0), np.full((2, 2), 3.0)
    widen_block(lo, hi, np.array([[0.0, 2.0], [-2.0, 0.0]]), 2.0)
    assert hi[0, 1] == 5.0 and lo[0, 1] == 3.0 and lo[1, 0] == 5.0 and hi[1, 0] == 3.0 and hi[0, 0] == 3.0


def _shifts(sigma, up, unclear=None):
    """The error budget's clipping shifts of ``sigma`` with no column detected and the loss bounded by ``up``."""
    towards = towards_parts(np.zeros(3), 1.0, 3 * up, up, np.full(3, 0.1), Z)
    return ClippingShifts(3, correlations_in_place(sigma.copy()), np.zeros(3, bool), (None, None, up), towards,
                          unclear)


def test_an_entry_of_unclear_sign_is_widened_at_both_ends_by_its_released_size():
    # grunfeld's invest x capital released negative (noise and the centre), its full-data value positive: where the
    # released entry is within its noise and the centre's reach of 0, the allowance may not pick a side or a size
    sigma = np.array([[4.0, -0.5, 1.9], [-0.5, 1.0, 0.9], [1.9, 0.9, 1.0]])
    unclear = unclear_signs(sigma, 0.3, np.array([0.5, 0.5, 0.5]), 1.0)  # |entry| <= 0.3 + 0.25
    assert unclear.tolist() == [[False, True, False], [True, False, False], [False, False, False]]
    rows, up = slice(0, 3), np.array([4.0, 1.0, 1.0])
    shifts = _shifts(sigma, up, unclear)
    _, _, sd = shifts.block(rows)
    _, _, plain_sd = _shifts(sigma, up).block(rows)
    assert sd[0, 1] == -plain_sd[0, 1] > 0  # the released |rho|, both ways
    lo_half, hi_half = np.ones((3, 3)), np.ones((3, 3))
    shifts.widen(lo_half, hi_half, rows, sd, Z)
    assert lo_half[0, 1] == hi_half[0, 1] > 1 and lo_half[0, 2] == 1 < hi_half[0, 2]  # both ends, else the sign's


def test_the_centres_bias_cross_term_is_one_normal_and_its_product_is_held_by_the_norm_bound():
    from dpmoments.estimators.centre_bias import centre_bias_widths

    B, s, upper = np.array([3.0, 1.0, 2.0, 0.5]), 2.0, np.full(4, 1e6)
    summed, _ = centre_bias_widths(B, s, upper, 0.9)
    joint, diagonal = centre_bias_widths(B, s, upper, 0.9, joint=(np.inf, np.ones(4, dtype=bool)))
    E = Z * s
    off = ~np.eye(4, dtype=bool)
    np.testing.assert_allclose(joint[off], (E * np.sqrt(np.add.outer(B**2, B**2)) + np.outer(B, B))[off])
    assert np.all(joint <= summed + 1e-12) and np.allclose(np.diag(joint), np.diag(summed))
    capped, _ = centre_bias_widths(B, s, upper, 0.9, joint=(2.5, np.array([True, True, True, False])))
    assert capped[0, 2] == E * 2.5 + 2.5**2 / 2  # ||(beta_0, beta_2)|| <= 2.5: both parts held by it
    assert capped[0, 3] == joint[0, 3]  # column 3 is not under the norm bound


def test_a_variance_released_far_below_its_noise_gives_the_plain_bound_without_a_numpy_warning():
    import warnings
    c = np.array([-1e13, 2.0, 1.0])  # the first column's upper end is 0: tau / 1e-150 once overflowed when squared
    tau = np.array([3e13, 0.5, 0.4])
    up = np.maximum(c + Z * tau, 0.0)
    up[0] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shift, sd = split_allowance(c, tau, up, slice(0, 3))
    assert np.all(np.isfinite(shift)) and np.all(np.isfinite(sd))
    assert np.all(shift[0] < 1e-100) and np.all(sd[0] == 0) and np.all(sd[:, 0] == 0)  # the plain sqrt(U_0 U_j) = 0
