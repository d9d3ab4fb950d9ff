"""A variance printed only where its clipping loss did not stand out: its loss's upper end given that (issue 25)."""

import numpy as np
from scipy import special

from dpmoments.estimators.clipping_allowance import unclear_signs
from dpmoments.estimators.selective_loss import SelectiveLoss, truncated_upper

Z = 1.6448536269514722  # one-sided 95%


def test_given_the_printing_the_truncated_upper_end_holds_the_loss_at_its_level_and_the_plain_one_does_not():
    # grunfeld at epsilon 4: the variance of 'value' was printed in 3 fits of 100, those whose band loss drew low
    rng = np.random.default_rng(0)
    for loss, plain_short in ((0.0, False), (2.0, True), (4.0, True)):
        # the printed draws: N(loss, 1) given at most 2 (withheld where it stands out at 2 noise sd), by inversion
        printed = loss + special.ndtri(rng.uniform(0.0, special.ndtr(2.0 - loss), 5000))
        held = np.mean(truncated_upper(printed, 2.0, Z) >= loss)
        assert abs(held - 0.95) < 0.012
        assert (np.mean(printed + Z >= loss) < 0.93) == plain_short  # the untruncated end: 0.90 and 0.00


def test_no_threshold_is_the_plain_end_and_the_excess_is_capped_and_never_negative():
    assert np.allclose(truncated_upper(np.array([-1.0, 0.5]), np.inf, Z), [-1.0 + Z, 0.5 + Z])
    # near the threshold the end grows without bound: the loss cap (a sure bound) holds it
    selective = SelectiveLoss(np.array([2.79, 0.5, -3.0]), 1.0, np.array([2.8, 2.8, np.inf]), np.array([8.0] * 3), 2.0)
    excess = selective.excess(Z)
    assert excess[0] == 2.0 * (8.0 - (2.79 + Z))  # the cap, times the tail factor
    assert 0 < excess[1] < excess[0] and excess[2] == 0.0


def test_an_entry_within_what_the_loss_may_have_moved_it_by_is_of_unclear_sign():
    # grunfeld's value x year released -0.52 in correlation, the full-data value +0.001: the private centre 196
    # years off made the clipped rows' loss positive, and the clipped entry negative
    sigma = np.array([[1.0, -0.5], [-0.5, 1.0]])
    assert not unclear_signs(sigma, 0.1, np.zeros(2), Z).any()
    assert not unclear_signs(sigma, 0.1, np.zeros(2), Z, np.array([0.5, 0.5])).any()  # 0.5 > 0.16 + 0.25
    assert unclear_signs(sigma, 0.1, np.zeros(2), Z, np.array([0.8, 0.8]))[0, 1]  # 0.5 <= 0.16 + 0.4


def test_with_laplace_noise_the_end_holds_at_its_level_given_the_printing_or_is_unbounded():
    rng = np.random.default_rng(1)
    b = 1 / np.sqrt(2.0)  # the Laplace scale of sd 1
    for loss in (0.0, 2.0):
        drawn = loss + rng.laplace(0.0, b, 6000)
        printed = drawn[drawn <= 2.5]
        upper = truncated_upper(printed, 2.5, Z, laplace=True)
        assert abs(np.mean(upper >= loss) - 0.95) < 0.015
    # the cdfs' ratio tends to exp(-sqrt(2) (t - l)) = 0.24 > 0.05 here: no finite end, the cap bounds it
    assert np.isinf(truncated_upper(np.array([2.0]), 3.0, Z, laplace=True)[0])
