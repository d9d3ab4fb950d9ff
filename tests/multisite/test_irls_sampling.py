"""IRLS across sites with sampling rounds (``sampling_budget``, issue 25): the residual scale and the LAD sandwich's
matrices at the final iterate, released across sites, only where the option is set."""

import argparse
import math
import warnings

import numpy as np
import pytest

from dpmoments.cli._args import CliError
from dpmoments.cli._multisite import check_analysis, plan_options
from dpmoments.cli.present.regress import coefficient_lines
from dpmoments.estimators import PrivateIRLS
from dpmoments.exceptions import NotPrivateWarning
from dpmoments.moments import clip_responses, clip_rows
from dpmoments.moments.irls_sandwich import residual_scale, sandwich_statistics, sign_score
from dpmoments.multisite import Site, irls
from dpmoments.multisite.analyses import intercept_factor, plan_analysis

FACTS = dict(row_norm=3.0, response_bound=4.0, epsilon=2.0, delta=1e-6)


def _plan(**options):
    return plan_analysis("regress", "cape", ["a", "b", "c"], [400, 300, 300], n_features=2,
                         options={"n_iter": 1, "w_max": 2.0, "p": 1.0, **options}, **FACTS)


def test_only_a_set_share_adds_the_rounds_and_they_spend_it():
    plain, sampled = _plan(), _plan(sampling_budget=0.2)
    assert "sampling_budget" not in dict(plain.options) and len(plain.rounds) == 2
    assert not any(r.stat.sampling for r in plain.rounds)
    extra = sampled.rounds[2:]
    assert [r.statistic for r in extra] == ["residual-scale", "sandwich-k", "sandwich-v", "sign-score"]
    assert [r.step for r in extra] == [1, 2, 2, 2]  # the scale first; the matrices (and LAD's score) after it
    assert [r.share for r in extra] == pytest.approx([0.02, 0.08, 0.08, 0.02])  # one machine's split
    assert sum(r.share for r in sampled.rounds) == pytest.approx(1.0)
    assert sampled.rounds[0].share == pytest.approx(0.8 * plain.rounds[0].share)
    assert sampled.digest != plain.digest
    # the weights are in [0, 1]: w_max does not multiply their sensitivity (it does the iterations')
    assert extra[0].weight == extra[1].weight == 1.0 and sampled.rounds[0].weight == 2.0
    assert sampled.noise[2].sensitivity[0] == pytest.approx(FACTS["response_bound"] / 400)  # r / n_s
    assert sampled.noise[3].sensitivity[0] == pytest.approx(math.sqrt(2.0) * 9.0 / 400)  # sqrt(2) R^2 / n_s
    assert sampled.noise[5].sensitivity[0] == pytest.approx(2.0 * 3.0 / 400)  # 2 R / n_s
    zero = _plan(sampling_budget=0.2, neighbours="zero-out")  # the zeroed row keeps the constant column: 2R/n too
    assert zero.noise[5].sensitivity[0] == pytest.approx(2.0 * 3.0 / 400)


@pytest.mark.parametrize("options, match", [({"sampling_budget": 1.0}, "share in"),
                                            ({"sampling_budget": 0.1, "p": 1.5}, "p = 1")])
def test_a_bad_share_is_refused_in_one_line(options, match):
    with pytest.raises(ValueError, match=match):
        _plan(**options)


def test_without_noise_the_sampling_parts_are_one_machines_on_the_pooled_rows():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 2))
    y = X @ np.array([1.0, -0.5]) + 0.3 + rng.standard_t(3, size=600)
    parts = np.array_split(np.arange(600), 3)
    sites = [Site(f"s{i}", X[p], y=y[p], row_norm=3.0, response_bound=4.0) for i, p in enumerate(parts)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        fit, report = irls(sites, epsilon=math.inf, delta=1e-6, n_iter=4, sampling_budget=0.1, rng=0)
        one = PrivateIRLS(epsilon=math.inf, delta=1e-6, row_norm=3.0, response_bound=4.0, n_iter=4, rng=0).fit(X, y)
    across = PrivateIRLS(epsilon=None, delta=None, row_norm=None, response_bound=None, w_max=None).fit_release(fit)
    # the sites' rows, formed as they form them: x clipped to R / s beside the constant c R / s
    c = 0.5
    R, s = fit.releases[-1].row_norm, intercept_factor(c)
    Z = np.hstack([clip_rows(X, R / s), np.full((600, 1), c * R / s)])
    yc = clip_responses(y, 4.0)
    scale, K, V, sign = fit.sampling
    assert scale.cross_moment[0] == pytest.approx(residual_scale(Z, yc, fit.coef, 4.0), rel=1e-12)
    exact = sandwich_statistics(Z, yc - Z @ fit.coef, fit.bandwidth, 5.0 / 4.0)
    np.testing.assert_allclose(K.second_moment, exact["K"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(V.second_moment, exact["V"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(sign.cross_moment, sign_score(Z, yc - Z @ fit.coef), rtol=1e-12, atol=1e-15)
    # and the intervals: one machine's sandwich and contraction, on the same rows
    np.testing.assert_allclose(across.coef_, one.coef_, rtol=1e-8)
    np.testing.assert_allclose(across.coef_se_, one.coef_se_, rtol=1e-6)
    assert across.intercept_se_ == pytest.approx(one.intercept_se_, rel=1e-6)
    assert "sampling variability of the rows" in across.uncertainty_["covers"]
    assert "sampling" not in across.uncertainty_["not_covered"]
    assert [k for k in report.to_dict()["budget"] if "sandwich" in k or "residual" in k] == [
        "round 8 (residual-scale)", "round 9 (sandwich-k)", "round 10 (sandwich-v)"]
    assert "round 11 (sign-score)" in report.to_dict()["budget"]
    assert across.uncertainty_["w_max_knot"]["score_over_its_size_at_lad"] == pytest.approx(
        one.uncertainty_["w_max_knot"]["score_over_its_size_at_lad"], rel=1e-6)
    assert not across.uncertainty_["w_max_knot"]["found"]  # t_3 errors: a density at the fit, LAD's fit up to sampling
    lines = coefficient_lines(across, ["x0", "x1"])
    assert sum("covers: noise + sampling; not clipping bias" in line for line in lines) == 4  # each interval's line
    across.coef_unsampled_ = np.array([False, True])  # the presenter alone: x1 along a floored direction of K_h
    lines = coefficient_lines(across, ["x0", "x1"])
    assert sum("covers: noise + sampling" in line for line in lines) == 3
    assert sum("not sampling or the iterations not run (K_h floored)" in line for line in lines) == 2
    with warnings.catch_warnings():  # without the rounds (sampling_budget=None): noise only, and each line says so
        warnings.simplefilter("ignore", NotPrivateWarning)
        bare, _ = irls(sites, epsilon=math.inf, delta=1e-6, n_iter=4, sampling_budget=None, rng=0)
    bare = PrivateIRLS(epsilon=None, delta=None, row_norm=None, response_bound=None, w_max=None).fit_release(bare)
    lines = coefficient_lines(bare, ["x0", "x1"])
    assert sum("noise only: not sampling or the iterations not run" in line for line in lines) == 4


def test_the_knot_check_runs_across_sites_and_finds_a_response_with_five_values():
    # 82% of the responses at 0, the rest at -2, -1, 1, 2: most residuals sit within the w_max knot (1 / 2.5), so the
    # IRLS fit is a smoothed one. Three CAPE sites release LAD's score as one machine does on the pooled rows, and
    # every interval's line says the fit is not LAD's, as one machine's does
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 2))
    y = np.digitize(X @ [1.0, 0.3] + rng.laplace(size=3000) * 0.3, [-2.5, -1.5, 1.5, 2.5]) - 2.0
    sites = [Site(f"s{i}", X[p], y=y[p], row_norm=4.0, response_bound=2.0)
             for i, p in enumerate(np.array_split(np.arange(3000), 3))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit, _ = irls(sites, epsilon=math.inf, delta=1e-6, protocol="cape", rng=0)
        across = PrivateIRLS(epsilon=None, delta=None, row_norm=None, response_bound=None, w_max=None).fit_release(fit)
        one = PrivateIRLS(epsilon=math.inf, delta=1e-6, row_norm=4.0, response_bound=2.0, rng=0).fit(X, y)
    knot = across.uncertainty_["w_max_knot"]
    assert knot["found"] and knot["score_over_its_size_at_lad"] == pytest.approx(
        one.uncertainty_["w_max_knot"]["score_over_its_size_at_lad"], rel=1e-9)  # 4.3 on both
    assert [d for d in across.diagnostics_ if d["code"] == "knot-smoothing"]
    assert "knot's smoothing, which the sign-score release found" in across.uncertainty_["not_covered"]
    lines = coefficient_lines(across, ["x0", "x1"])
    assert sum("not LAD's fit (w_max knot)" in line for line in lines) == 3  # x0, x1 and the intercept


def test_the_command_line_takes_the_share_for_lad_regress_only():
    args = argparse.Namespace(analysis="regress", n_iter=None, w_max=None, response_bound=None, p=1.0,
                              sampling_share=0.1)
    check_analysis(args, fit=False)
    assert plan_options(args)["sampling_budget"] == 0.1
    assert "sampling_budget" not in plan_options(argparse.Namespace(**{**vars(args), "sampling_share": 0.0}))
    assert plan_options(argparse.Namespace(**{**vars(args), "sampling_share": None}))["sampling_budget"] == 0.1
    for bad in ({"analysis": "covariance"}, {"p": 1.5}, {"sampling_share": 1.0}):
        with pytest.raises(CliError, match="--sampling-share"):
            check_analysis(argparse.Namespace(**{**vars(args), **bad}), fit=False)
    with pytest.raises(CliError, match=r"got 0.1 with --analysis regress --p 1.5$"):  # the line names what is wrong
        check_analysis(argparse.Namespace(**{**vars(args), "p": 1.5}), fit=False)
