"""PrivateIRLS's error budget: every iteration's noise, sampling from private releases, ranges, defaults."""

import ast
import inspect
import math
import warnings

import numpy as np
import pytest

from dpmoments.estimators import PrivateIRLS, PrivateModelSelection
from dpmoments.estimators import _irls_error, _irls_knot
from dpmoments.estimators._irls_sampling import (SPLIT, release_sampling, sampling_scales,
                                                 sandwich_statistics)
from dpmoments.mechanisms import upper_triangle
from dpmoments.privacy import ZCDP
from dpmoments.testing import audit
from tests.source_tree import parse

BETA = np.array([1.0, -2.0, 0.5])


def _laplace(seed, n=2000):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)) * [1.0, 0.5, 2.0]
    return X, X @ BETA + 1.0 + rng.laplace(size=n)


def test_the_error_budget_reads_releases_only():
    # It may read released numbers and public values, never rows: no reader, no moments, no data argument.
    for module in (_irls_error, _irls_knot):
        tree = parse(inspect.getsource(module))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {m for m in imported if m and m.split(".")[0] in ("data", "moments")}, imported
    params = inspect.signature(_irls_error.irls_error_budget).parameters
    assert list(params)[:5] == ["iterations", "floor", "laws", "sampling", "n"]


def test_defaults_fit_an_intercept_with_private_bounds_and_list_every_share():
    X, y = _laplace(0)
    est = PrivateIRLS(epsilon=4.0, delta=1e-6, rng=0).fit(X, y)
    assert est.n_iter_ == 10 and est.intercept_fitted_ and est.w_max_ == pytest.approx(5.0 / est.response_bound_)
    assert [p.label for p in est.privacy_parts_] == ["row_norm", "response_bound", "sampling (error budget)",
                                                     "IRLS iterations"]
    assert est.privacy_.epsilon == pytest.approx(4.0) and est.privacy_.delta == 1e-6
    assert "sampling variability" in est.uncertainty_["covers"] and "clipping" in est.uncertainty_["not_covered"]
    assert [e["statistic"] for e in est.privacy_report_["noise"]][-4:] == [f"sampling release {k}"
                                                                           for k in SPLIT]
    assert "below the sign-score check" in est.uncertainty_["not_covered"]  # the knot: checked, not found
    assert np.all(est.coef_se_ >= est.coef_noise_se_)  # sampling adds to the noise, never replaces it


def test_a_response_with_few_values_is_found_by_the_knot_check_and_said_not_covered():
    # Three values, 80% at 1: most residuals sit within the w_max knot, so the IRLS fit is a smoothed one and LAD's
    # own fit (the constant 1: linear programming, scipy's highs) lies outside its intervals, as RAND HIE's did; the
    # released LAD score finds it and every line says so
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3000, 2))
    y = np.digitize(X @ [1.0, 0.3] + rng.laplace(size=3000) * 0.3, [-1.5, 1.5]).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivateIRLS(epsilon=math.inf, delta=0.0, row_norm=4.0, response_bound=2.0, rng=0).fit(X, y)
    assert [d for d in est.diagnostics_ if d["code"] == "knot-smoothing"]
    assert "knot's smoothing, which the sign-score release found" in est.uncertainty_["not_covered"]
    assert est.uncertainty_["w_max_knot"]["found"] and np.all(np.abs(est.coef_) > 0.05)  # LAD's slopes are 0
    assert "not covered: " in est.uncertainty_["scope"]  # the console's line


def test_the_earlier_iterations_widen_the_interval():
    X, y = _laplace(1)
    one = PrivateIRLS(epsilon=4.0, delta=1e-6, row_norm=6.0, response_bound=8.0, n_iter=1, rng=0).fit(X, y)
    five = PrivateIRLS(epsilon=4.0, delta=1e-6, row_norm=6.0, response_bound=8.0, n_iter=5, rng=0).fit(X, y)
    # Five iterations split the budget five ways (each release's noise sqrt(5) x larger), and the earlier ones'
    # noise is carried to the end, damped by the IRLS map's contraction: above 1.5 x, not the final one's alone
    assert np.all(five.coef_noise_se_ > 1.5 * one.coef_noise_se_)


def test_sampling_releases_within_their_noise_count_as_none():
    # A share of 1e-9 makes K_h all noise: its inverse is the floor's, and the sandwich and contraction from it had
    # given intervals labelled 'sampling' narrower than the noise-only ones; now they are the noise-only ones, said so
    X, y = _laplace(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivateIRLS(epsilon=4.0, delta=1e-6, row_norm=6.0, response_bound=8.0, n_iter=1, rng=0,
                          sampling_budget=1e-9).fit(X, y)
    assert "sampling variability" in est.uncertainty_["not_covered"]
    assert "sampling variability" not in est.uncertainty_["covers"]
    assert [d for d in est.diagnostics_ if d["code"] == "sampling-within-noise"]
    np.testing.assert_allclose(est.coef_se_, est.coef_noise_se_)


def test_a_floored_direction_is_withheld_not_printed():
    X, y = _laplace(2, n=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivateIRLS(epsilon=1.0, delta=1e-6, row_norm=6.0, response_bound=8.0, rng=0).fit(X, y)
    assert est.coef_biased_.any() and np.isnan(est.coef_interval_[:, est.coef_biased_]).all()
    floored = [d for d in est.diagnostics_ if d["code"] == "coefficients-floored"]
    assert floored and "a larger epsilon" in str(floored[0])  # the warning says what to do


def test_ranges_give_the_bounds_for_free_and_map_back():
    X, y = _laplace(3, n=400)
    ranges = {0: (-5.0, 5.0), 1: (-3.0, 3.0), 2: (-10.0, 10.0)}
    a = PrivateIRLS(epsilon=math.inf, delta=1e-6, ranges=ranges, response_range=(-40.0, 40.0), w_max=1e4,
                    n_iter=60, rng=0)
    b = PrivateIRLS(epsilon=math.inf, delta=1e-6, row_norm=60.0, response_bound=60.0, w_max=1e4, n_iter=60, rng=0)
    with pytest.warns(Warning):
        a.fit(X, y)
    with pytest.warns(Warning):
        b.fit(X, y)
    assert a.privacy_parts_ == () or all(p.label != "row_norm" for p in a.privacy_parts_)
    assert a.row_norm_ == pytest.approx(math.sqrt(3)) and a.response_bound_ == 1.0
    np.testing.assert_allclose(np.r_[a.coef_, a.intercept_], np.r_[b.coef_, b.intercept_], atol=2e-2)
    assert a.ranges_["features"]["x0"] == [-5.0, 5.0] and a.ranges_["response"] == [-40.0, 40.0]


def test_model_selection_defaults_and_ranges():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(20_000, 4))
    y = X @ np.array([1.0, 1.0, 0.0, 0.0]) + rng.normal(size=20_000)
    sel = PrivateModelSelection(epsilon=1.0, ranges={j: (-1, 1) for j in range(4)}, response_range=(-6, 6),
                                rng=0).fit(X, y)
    assert sel.selected_ == (0, 1) and (sel.bounds_, sel.response_bound_) == (1.0, 1.0)
    assert [(p.label, p.guarantee.epsilon) for p in sel.privacy_parts_] == [("R", 0.1), ("selection", 0.9)]
    assert 0 < sel.R_ < math.inf


@pytest.mark.parametrize("option, param, value", [("--n-iter", "n_iter", 10), ("--w-max", "w_max", "auto"),
                                                  ("--fit-intercept", "fit_intercept", True),
                                                  ("--row-norm", "row_norm", "auto"),
                                                  ("--intervals-for", "target", "population")])
def test_regress_and_the_estimator_share_their_defaults(option, param, value):
    import argparse

    from dpmoments.cli import regress

    parser = argparse.ArgumentParser()
    regress.add_arguments(parser)
    dest = next(a.dest for a in parser._actions if option in a.option_strings)
    assert parser.get_default(dest) == value == PrivateIRLS(epsilon=1, delta=1e-6).get_params()[param]


# -- audits of the sampling releases ---------------------------------------------------------------------------
# Worst-case replace-one pairs at theta = 0 (public): K's weight is 1{|r| < h} (h >= 1/w_max), so two rows with
# weight 1 at ||z|| = R on different axes move K's upper triangle by sqrt(2) R^2 / n (V's weights, in [0, 1] too,
# the same);
# LAD's score sign(y) z moves by 2R / n between y = 1 and y = -1 at z = R e_1. The residual scale (r / n between
# |y| = 0 and |y| = r) is the sites' residual-scale round, audited in tests/audit/test_multisite_irls_sampling_audit.py.
N, W, RHO = 3, 1.0, 0.3
SHARED = (np.array([[0.3, -0.2], [-0.5, 0.4]]), np.array([2.5, -3.0]))


def _centre(stat, x, y):
    X, Y = np.vstack([x, SHARED[0]]), np.r_[y, SHARED[1]]
    if stat == "sign":
        zero = {k: 0.0 for k in SPLIT}
        # the pair differs along e_1 only; the other coordinate's noise is independent of it: audit that one
        return release_sampling(X, Y, np.zeros(2), w_max=W, response_bound=3.0, scales=zero, rng=0)["sign"][:1]
    return upper_triangle(sandwich_statistics(X, Y, 1.0, W)["K"])  # h public: from the scale released before


def _replica(stat, factor):
    scales, sens = sampling_scales(RHO, N, 1.0, 3.0)
    rows = ([(np.array([1.0, 0.0]), 1.0), (np.array([1.0, 0.0]), -1.0)] if stat == "sign" else
            [(np.array([1.0, 0.0]), 0.0), (np.array([0.0, 1.0]), 0.0)])
    centres = [_centre(stat, x, y) for x, y in rows]
    assert np.linalg.norm(centres[0] - centres[1]) == pytest.approx(sens[stat])  # the pair is worst-case
    sigma = factor * scales[stat]

    def mech(which, rng, size):
        return centres[which] + rng.normal(0.0, sigma, size=(size, centres[which].size))

    return mech, centres[0] - centres[1], ZCDP(SPLIT[stat] * RHO).to_approx_dp(1e-3).epsilon


@pytest.mark.statistical
@pytest.mark.parametrize("stat", ["sign", "K"])
def test_audit_sampling_releases(stat):
    mech, proj, eps = _replica(stat, 1.0)
    audit(mech, 0, 1, delta=1e-3, n_samples=400_000, projection=proj, batch=200_000, rng=21).check(eps)
    leaky, proj, eps = _replica(stat, 0.5)  # negative control: half the noise must be caught
    res = audit(leaky, 0, 1, delta=1e-3, n_samples=400_000, projection=proj, batch=200_000, rng=22)
    assert not res.consistent_with(eps)


@pytest.mark.statistical
def test_population_coverage_on_a_laplace_simulation():
    held = []
    for seed in range(10):
        X, y = _laplace(100 + seed, n=5000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = PrivateIRLS(epsilon=4.0, delta=1e-6, rng=seed).fit(X, y)
        lo, hi = est.coef_interval_
        printed = ~np.isnan(lo)  # a withheld interval (floored direction) says 'biased' instead
        held += list(((lo <= BETA) & (BETA <= hi))[printed])
    assert len(held) >= 18 and 0.8 <= np.mean(held) <= 1.0, (len(held), np.mean(held))


def test_a_floored_direction_of_the_sandwich_gives_noise_only_intervals_on_it_alone():
    # H released with one direction (the second coordinate) at its noise floor, the other above: the floor, not the
    # rows, gives that coordinate's sandwich, so its interval is the noise-only one (M = I); the first is unchanged.
    law = _irls_error.NoiseLaw("gaussian", 0.01)
    A, B = np.array([1.0, 0.5]), np.eye(2)

    def budget(h_second, sampled=True):
        sampling = {"H": np.diag([1.0, h_second]), "H_floor": 0.1, "V": np.eye(2)} if sampled else None
        return _irls_error.irls_error_budget([(A, B), (A, B)], 1e-3, (law, law), sampling, 500)

    with pytest.warns(Warning, match="larger sampling share"):  # says what lifts it
        floored = budget(0.05)
    measured, unsampled = budget(0.5), budget(0.5, sampled=False)
    assert floored.unsampled.tolist() == [False, True] and not measured.unsampled.any()
    assert [d["code"] for d in floored.diagnostics] == ["sampling-floored"]
    interval = floored.interval(0.9)
    assert interval[:, 0].tobytes() == measured.interval(0.9)[:, 0].tobytes()
    np.testing.assert_allclose(interval[:, 1], unsampled.interval(0.9)[:, 1])
    mapped = floored.mapped(np.array([[1.0, 0.0], [1.0, 1.0]]), np.zeros(2))  # a coordinate taking it is marked
    assert mapped.unsampled.tolist() == [False, True]
