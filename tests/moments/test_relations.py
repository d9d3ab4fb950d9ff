"""The three neighbouring relations of the releases: replace-one, zero-out, add-remove (issue 12).

Under add-remove the row count is private: the release must publish only a
noisy count (from a declared share of the budget), calibrate the sums to the
unnormalised sensitivity, compose the two guarantees and say so. Zero-out is
what "add-remove" used to produce (n public, one row's term over n).
"""

import json
import math
import random

import numpy as np
import pytest

import dpmoments as dpm
from dpmoments.exceptions import PrivacyLeakWarning
from dpmoments.moments import COUNT_SHARE, moment_sensitivity
from dpmoments.privacy import ApproxDP, PureDP, ZCDP, calibrate_gaussian, compose
from dpmoments.privacy.relations import NEIGHBOURS, describe_relation

RNG = np.random.default_rng(5)
X = RNG.normal(size=(300, 3)) / 3
Y = X @ np.array([1.0, -1.0, 0.5])
KW = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)


def test_one_tuple_of_relations():
    assert dpm.moments.NEIGHBOURS is NEIGHBOURS == ("replace-one", "zero-out", "add-remove")
    from dpmoments.moments import tensor_moments
    assert not hasattr(tensor_moments, "_NEIGHBOURS")
    for name in NEIGHBOURS:
        assert describe_relation(name).startswith(name + " (")


@pytest.mark.parametrize("statistic,norm,replace,zero,add", [
    ("second", "l2", math.sqrt(2) / 300, 1 / 300, 1.0),
    ("second", "l1", 4 / 300, 2 / 300, 2.0),
    ("cross", "l2", 4 / 300, 2 / 300, 2.0),
    ("third", "l2", 2 / 300, 1 / 300, 1.0),
])
def test_sensitivity_table(statistic, norm, replace, zero, add):
    kw = dict(norm=norm, n_features=3, row_norm=1.0, response_bound=2.0 if statistic == "cross" else None)
    assert moment_sensitivity(statistic, n_samples=300, neighbours="replace-one", **kw) == pytest.approx(replace)
    assert moment_sensitivity(statistic, n_samples=300, neighbours="zero-out", **kw) == pytest.approx(zero)
    assert moment_sensitivity(statistic, n_samples=None, neighbours="add-remove", **kw) == pytest.approx(add)


def test_a_moment_is_one_value_the_sites_build_on():
    import pickle
    from dpmoments.moments.statistics import CROSS, SECOND, THIRD, as_moment
    from dpmoments.multisite import statistics as across
    assert as_moment("second") is SECOND and as_moment(THIRD) is THIRD and pickle.loads(pickle.dumps(CROSS)) is CROSS
    assert [(m.ndim, m.slot, m.mirrored) for m in (SECOND, CROSS, THIRD)] == \
        [(2, "second_moment", True), (1, "cross_moment", False), (3, "third_moment", False)]
    for m in (SECOND, CROSS, THIRD):  # the wing's moment is the same shape, slot and rule
        site = across.as_statistic(m.name)
        assert (site.ndim, site.power, site.symmetric, site.slot) == (m.ndim, m.power, m.symmetric, m.slot)
    with pytest.raises(ValueError, match="'statistic' must be one of 'second', 'cross', 'third'; got 'fourth'"):
        moment_sensitivity("fourth", norm="l2", n_samples=3, n_features=2, neighbours="zero-out", row_norm=1.0)


def test_zero_out_is_the_old_behaviour_with_its_true_name():
    rel = dpm.release_second_moment(X, neighbours="zero-out", rng=0, **KW, center=None)
    assert rel.n == 300 and rel.n_public and rel.count_noise_scale is None
    assert rel.sensitivity == pytest.approx(1 / 300)
    d = rel.to_dict()
    assert d["n_public"] is True and d["count"] is None and d["sensitivity_of"] == "the mean over n rows"


def test_add_remove_releases_a_noisy_count_and_composes():
    rel = dpm.release_second_moment(X, neighbours="add-remove", rng=0, **KW, center=None)
    sigma_count, g_count = calibrate_gaussian(COUNT_SHARE, COUNT_SHARE * 1e-6, 1.0)
    sigma_sum, g_sum = calibrate_gaussian(1 - COUNT_SHARE, (1 - COUNT_SHARE) * 1e-6, 1.0)
    assert not rel.n_public and rel.count_share == COUNT_SHARE
    assert rel.count_noise_scale == pytest.approx(sigma_count) and rel.count_guarantee == g_count
    assert rel.sensitivity == 1.0 and rel.sum_noise_scale == pytest.approx(sigma_sum)  # R^2, unnormalised
    assert rel.noise_scale == pytest.approx(sigma_sum / rel.n)  # stated per noisy count
    assert rel.guarantee == compose([g_count, g_sum])
    assert (rel.guarantee.epsilon, rel.guarantee.delta) == pytest.approx((1.0, 1e-6))
    # The statistic is the noisy sum over the noisy count: reproduce it from the seed.
    gen = np.random.default_rng(0)
    count = max(1, int(np.rint(300 + gen.normal(0.0, rel.count_noise_scale))))
    S = dpm.moments.clip_rows(X, 1.0).T @ dpm.moments.clip_rows(X, 1.0)
    noise = dpm.mechanisms.symmetric_matrix_noise(3, rel.sum_noise_scale, gen)
    assert rel.n == count != 300
    np.testing.assert_allclose(rel.second_moment, (S + noise) / count, rtol=1e-12, atol=1e-15)


def test_add_remove_never_reports_the_exact_count():
    rel = dpm.release_second_moment(X, neighbours="add-remove", rng=0, **KW, center=None)
    assert rel.n != 300
    text = json.dumps(rel.to_dict())
    assert '"n": %d' % rel.n in text and '"n_public": false' in text and "300" not in text
    assert "(noisy)" in repr(rel)
    d = rel.to_dict()
    assert d["count"]["noise_scale"] == rel.count_noise_scale and d["count"]["share"] == COUNT_SHARE
    assert d["sensitivity_of"] == "the sum (n is private)" and "noisy n" in d["noise_scale_of"]


@pytest.mark.parametrize("fn,args,extra", [
    (dpm.release_cross_moment, (X, Y), dict(response_bound=2.0)),
    (dpm.release_third_moment, (X,), {}),
])
def test_cross_and_third_moments_under_add_remove(fn, args, extra):
    rel = fn(*args, neighbours="add-remove", rng=1, **KW, **extra)
    assert not rel.n_public and rel.n != 300 and rel.count_noise_scale > 0
    assert rel.sensitivity == pytest.approx(2.0 if fn is dpm.release_cross_moment else 1.0)
    assert rel.guarantee.epsilon == pytest.approx(1.0)


def test_laplace_and_zcdp_under_add_remove():
    lap = dpm.release_second_moment(X, epsilon=1.0, row_norm=1.0, mechanism="laplace", neighbours="add-remove",
                                    count_share=0.1, rng=0, center=None)
    assert lap.guarantee == PureDP(1.0) and lap.count_guarantee == PureDP(0.1)
    assert lap.count_noise_scale == pytest.approx(10.0) and lap.sensitivity == pytest.approx(2.0)  # (d+1)R^2/2
    z = dpm.release_second_moment(X, calibration="zcdp", neighbours="add-remove", rng=0, **KW, center=None)
    assert isinstance(z.guarantee, ZCDP) and z.guarantee.to_approx_dp(1e-6).epsilon <= 1.0


def test_secure_release_under_add_remove():
    rel = dpm.release_second_moment(X, neighbours="add-remove", secure=True, rng=random.Random(3), **KW, center=None)
    assert rel.mechanism == "discrete-gaussian" and not rel.n_public and isinstance(rel.n, int)
    assert isinstance(rel.guarantee, ApproxDP) and rel.guarantee.epsilon == pytest.approx(1.0)
    assert rel.count_guarantee.epsilon == pytest.approx(COUNT_SHARE)
    cross = dpm.release_cross_moment(X, Y, response_bound=2.0, neighbours="add-remove", secure=True,
                                     mechanism="laplace", epsilon=1.0, row_norm=1.0, rng=random.Random(4))
    assert cross.guarantee == PureDP(1.0) and cross.mechanism == "discrete-laplace"


@pytest.mark.parametrize("share", [0, 1, -0.1, 1.5, "0.1", True, math.nan, None])
def test_count_share_is_validated(share):
    with pytest.raises(ValueError, match="'count_share' must be a fraction in \\(0, 1\\)"):
        dpm.release_second_moment(X, neighbours="add-remove", count_share=share, **KW, center=None)


@pytest.mark.parametrize("mechanism", ["wishart", "wishart-approx"])
def test_wishart_refuses_add_remove(mechanism):
    with pytest.raises(ValueError, match=f"mechanism='{mechanism}' has no analysis with a noisy row count") as e:
        dpm.release_second_moment(X, mechanism=mechanism, neighbours="add-remove", **KW, center=None)
    assert "\n" not in str(e.value)


def test_exact_statistic_under_add_remove_is_not_private():
    with pytest.warns(dpm.NotPrivateWarning):
        rel = dpm.release_second_moment(X, epsilon=math.inf, row_norm=1.0, neighbours="add-remove", center=None)
    assert not rel.is_private and rel.n == 300


def test_delta_at_least_one_over_n_is_warned_about():
    small = X[:20]
    with pytest.warns(PrivacyLeakWarning, match=r"delta=0\.05 >= 1/n with n=20 \(rows\)"):
        dpm.release_second_moment(small, epsilon=1.0, delta=0.05, row_norm=1.0, rng=0, center=None)
    with pytest.warns(PrivacyLeakWarning, match=r"delta=0\.5 >= 1/n with n=\d+ \(the noisy row count\)") as rec:
        rel = dpm.release_cross_moment(small, Y[:20], epsilon=1.0, delta=0.5, row_norm=1.0, response_bound=1.0,
                                       neighbours="add-remove", rng=0)
    assert f"n={rel.n} " in str(rec[0].message)
    with pytest.warns(PrivacyLeakWarning, match="delta=0.1"):
        dpm.release_third_moment(small, epsilon=1.0, delta=0.1, row_norm=1.0, rng=0)


def test_small_delta_and_laplace_are_not_warned_about(recwarn):
    dpm.release_second_moment(X, rng=0, **KW, center=None)
    dpm.release_second_moment(X[:5], epsilon=1.0, delta=0.5, row_norm=1.0, mechanism="laplace", rng=0, center=None)
    assert not [w for w in recwarn if issubclass(w.category, PrivacyLeakWarning)]


def test_the_delta_suggested_is_below_one_over_n():
    """The warning suggested 1e-6 whatever n: with n = 4e6 rows, delta = 1e-6 was told to choose 1e-6."""
    many = np.zeros((4_000_000, 1))
    with pytest.warns(PrivacyLeakWarning, match=r"well below 1/n \(e\.g\. 1e-09\)"):
        dpm.release_second_moment(many, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0, center=None)
    with pytest.warns(PrivacyLeakWarning, match=r"well below 1/n \(e\.g\. 0\.0001\)"):
        dpm.release_second_moment(X[:20], epsilon=1.0, delta=0.05, row_norm=1.0, rng=0, center=None)


@pytest.mark.parametrize("release", ["second", "third"])
def test_sums_that_overflow_are_refused_in_words(release):
    """Rows of norm 1e154 under a bound of 1e155 are finite, but 3000 of them add up past 1e308: the release
    said "'M' contains 9 NaN or infinite value(s); remove or impute them first" (of data without one)."""
    big = np.random.default_rng(0).normal(size=(3000, 3)) * 1e154
    call = dpm.release_second_moment if release == "second" else dpm.release_third_moment  # both about the origin
    with pytest.raises(ValueError, match="the sums of the clipped rows overflow the float range at 'row_norm' = 1e"):
        with np.errstate(over="ignore", invalid="ignore"):
            call(big, epsilon=1.0, delta=1e-6, row_norm=1e155, center=None, rng=0)


def test_responses_whose_sums_overflow_are_named_as_such():
    """(review7) y under response_bound=1e155 overflowed y^T y and the refusal blamed 'row_norm' = 1."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(3000, 2)) / 3, rng.normal(size=3000) * 1e154
    with pytest.raises(ValueError, match="responses overflow the float range at 'response_bound' = 1e"):
        with np.errstate(over="ignore", invalid="ignore"):
            dpm.release_cross_moment(X, y, epsilon=1.0, delta=1e-6, row_norm=1.0, response_bound=1e155, rng=0)
