"""PrivateIRLS: reference fit at epsilon = inf, budgets, contracts and audits of its releases."""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from dpmoments.estimators._budget import irls_budget
from dpmoments.estimators.irls import PrivateIRLS
from dpmoments.exceptions import (BudgetExceededError, NoiseDominatesWarning, NotPrivateWarning,
                                  UncertifiedPrivacyWarning, UncertifiedSpendError)
from dpmoments.mechanisms import upper_triangle
from dpmoments.privacy import Accountant, ApproxDP, PureDP, Uncertified, ZCDP, zcdp_to_approx_dp
from dpmoments.solvers.irls import irls_weights, weighted_moments
from dpmoments.testing import audit

BASE = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, response_bound=1.0, n_iter=3, w_max=5.0, fit_intercept=False)


def _data(n=2000, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / (2 * math.sqrt(d))
    y = X @ np.linspace(1, -1, d) + 0.05 * rng.standard_t(2, size=n)
    return X, y


def test_epsilon_inf_matches_statsmodels_quantreg():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(1)
    n = 200
    X = rng.uniform(-1, 1, (n, 3)) / 2
    y = X @ np.array([1.0, -0.5, 0.3]) + 0.3 * rng.standard_t(3, size=n) + 0.1
    ref = sm.QuantReg(y, np.c_[X, np.ones(n)]).fit(q=0.5, max_iter=5000, p_tol=1e-10).params
    with pytest.warns(NotPrivateWarning):
        est = PrivateIRLS(epsilon=math.inf, delta=1e-6, row_norm=10.0, response_bound=100.0, n_iter=300,
                          w_max=1e6, fit_intercept=True, intercept_scale=1.0).fit(X, y)
    np.testing.assert_allclose(np.r_[est.coef_, est.intercept_], ref, atol=1e-4)
    assert est.privacy_ == PureDP(math.inf)


def test_sklearn_contract_and_determinism():
    X, y = _data()
    est = PrivateIRLS(**BASE, rng=3)
    assert clone(est).get_params() == est.get_params()
    a, b = clone(est).fit(X, y), clone(est).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_iter_ == 3 and a.coef_.shape == (3,) and a.intercept_ == 0.0
    assert a.predict(X).shape == (2000,)
    assert isinstance(a.score(X, y), float)
    assert a.privacy_.epsilon == pytest.approx(1.0) and a.budget_.total.epsilon < 1.0  # 0.1 of rho: sampling
    assert a.privacy_report_["neighbours"] == "replace-one"


@pytest.mark.parametrize("bad, err", [
    (dict(n_iter=0), ValueError), (dict(n_iter=1.5), ValueError), (dict(w_max=-1.0), ValueError),
    (dict(epsilon=0.0), ValueError), (dict(row_norm=None), ValueError), (dict(accounting="cdp"), ValueError),
    (dict(first_moment="wishart"), ValueError), (dict(p=2.5), ValueError), (dict(split=1.0), ValueError),
    (dict(delta=0.0), ValueError), (dict(accountant="yes"), TypeError)])
def test_bad_inputs(bad, err):
    X, y = _data(200)
    with pytest.raises(err):
        PrivateIRLS(**{**BASE, **bad}).fit(X, y)


def test_responses_outside_bound_are_clipped_silently():
    X, y = _data(500)
    y_big = y.copy()
    y_big[:10] = 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing about the (private) number of clipped responses
        warnings.simplefilter("ignore", NoiseDominatesWarning)  # n = 500 at epsilon = 1: the fit is noise, rightly said
        a = PrivateIRLS(**BASE, rng=0).fit(X, y_big)
    b = PrivateIRLS(**BASE, rng=0).fit(X, np.clip(y_big, -1, 1))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert "clipped" not in str(a.privacy_report_)


def test_intercept_is_fitted():
    X, y = _data(20_000)
    est = PrivateIRLS(**{**BASE, "epsilon": 5.0, "fit_intercept": True}, rng=0).fit(X, y + 0.3)
    assert abs(est.intercept_ - 0.3) < 0.1


# -- budgets ---------------------------------------------------------------------------
@pytest.mark.parametrize("first", ["gaussian", "laplace"])
def test_zcdp_budget_composes_to_the_total(first):
    b = irls_budget(0.9, 1e-6, 7, first_moment=first)
    rho = sum(g.rho if isinstance(g, ZCDP) else g.epsilon**2 / 2 for g in b.releases())
    assert len(b.releases()) == 14
    assert rho == pytest.approx(b.rho, rel=1e-12)
    assert zcdp_to_approx_dp(rho, 1e-6) <= 0.9 * (1 + 1e-9)
    acct = Accountant(ApproxDP(0.9, 1e-6), composition="zcdp")
    for g in b.releases():
        acct.spend(g)  # every release fits, in order
    assert not acct.can_spend(ZCDP(1e-3))


def test_basic_and_advanced_budgets():
    b = irls_budget(0.9, 1e-6, 5, accounting="basic")
    assert sum(g.epsilon for g in b.releases()) == pytest.approx(0.9)
    assert sum(g.delta for g in b.releases()) == pytest.approx(1e-6)
    adv = irls_budget(4.0, 1e-6, 50, accounting="advanced")
    acct = Accountant(ApproxDP(4.0, 1e-6), composition="advanced", delta_slack=adv.delta_slack,
                      plan=adv.releases())
    for g in adv.releases():
        acct.spend(ApproxDP(g.epsilon, g.delta))
    assert adv.first_moment.epsilon > 4.0 / 100  # better than basic composition at this J


def test_cdp_paper_is_uncertified_and_overspends():
    b = irls_budget(1.0, 1e-6, 10, accounting="cdp-paper", first_moment="laplace")
    assert b.first_moment == PureDP(math.sqrt(0.1))
    assert b.cdp_mean_loss == pytest.approx(math.sqrt(10) * math.expm1(math.sqrt(0.1)))
    assert b.cdp_mean_loss > 1.0
    X, y = _data(500)
    with pytest.warns(UncertifiedPrivacyWarning, match="overspends"):
        est = PrivateIRLS(**{**BASE, "accounting": "cdp-paper"}, rng=0).fit(X, y)
    assert isinstance(est.privacy_, Uncertified) and est.privacy_.holds.rho == pytest.approx(est.budget_.rho)


def test_wishart_is_uncertified_and_refused_by_accountant():
    X, y = _data(500)
    acct = Accountant(ApproxDP(10.0, 1e-5), composition="zcdp")
    with pytest.raises(UncertifiedSpendError):
        PrivateIRLS(**BASE, second_moment="wishart", accountant=acct, rng=0).fit(X, y)
    assert acct.spent is None
    with pytest.warns(UncertifiedPrivacyWarning):
        est = PrivateIRLS(**BASE, second_moment="wishart", rng=0).fit(X, y)
    assert isinstance(est.privacy_, Uncertified) and est.privacy_.holds is None


def test_accountant_check_then_commit():
    X, y = _data(500)
    acct = Accountant(ApproxDP(1.1, 1e-6), composition="zcdp")
    PrivateIRLS(**BASE, accountant=acct, rng=0).fit(X, y)
    assert len(acct.ledger) == 1
    with pytest.raises(BudgetExceededError):
        PrivateIRLS(**BASE, accountant=acct, rng=1).fit(X, y)
    assert len(acct.ledger) == 1


# -- audits of one iteration's releases ----------------------------------------------
# Worst-case replace-one pairs for the claimed sensitivities (theta = 0, public):
# weights are w_max when |y| <= 1/w_max; A moves by 2 w_max R r / N for (x, r) -> (x, -r),
# B's upper triangle by sqrt(2) w_max R^2 / N for x = R e1 -> R e2.
N, W, AUDIT_EPS, AUDIT_DELTA = 3, 1.0, 1.0, 1e-3
SHARED = (np.array([[0.3, -0.2], [-0.5, 0.4]]), np.array([0.7, -0.9]))


def _pairs(stat):
    if stat == "A":
        rows = [(np.array([1.0, 0.0]), 1.0), (np.array([1.0, 0.0]), -1.0)]
    else:
        rows = [(np.array([1.0, 0.0]), 1.0), (np.array([0.0, 1.0]), 1.0)]
    return [(np.vstack([x, SHARED[0]]), np.r_[yy, SHARED[1]]) for x, yy in rows]


def _replica(stat, factor):
    # One iteration of accounting="basic", n_iter=1, split=0.5: each release is (1, 1e-3)-DP (analytic).
    est = PrivateIRLS(epsilon=2 * AUDIT_EPS, delta=2 * AUDIT_DELTA, row_norm=1.0, response_bound=1.0, n_iter=1,
                      w_max=W, accounting="basic", fit_intercept=False)
    budget, _, sens, scales = est._plan(N, 2)
    assert budget.first_moment == budget.second_moment
    assert (budget.first_moment.epsilon, budget.first_moment.delta) == (AUDIT_EPS, AUDIT_DELTA)
    centres = []
    for X, y in _pairs(stat):
        A, B = weighted_moments(X, y, irls_weights(y, W))
        centres.append(A if stat == "A" else upper_triangle(B))
    gap = np.linalg.norm(centres[0] - centres[1])
    assert gap == pytest.approx(sens["A_l2" if stat == "A" else "B_l2"])  # the pair is worst-case
    sigma = factor * scales[stat]

    def mech(which, rng, size):
        c = centres[which]
        return c + rng.normal(0.0, sigma, size=(size, c.size))

    return mech, centres[0] - centres[1]


@pytest.mark.statistical
@pytest.mark.parametrize("stat", ["A", "B"])
def test_audit_per_iteration_release(stat):
    mech, proj = _replica(stat, 1.0)
    res = audit(mech, 0, 1, delta=AUDIT_DELTA, n_samples=600_000, projection=proj, batch=200_000, rng=11)
    res.check(AUDIT_EPS)
    leaky, proj = _replica(stat, 0.5)  # negative control: half the noise must be caught
    res = audit(leaky, 0, 1, delta=AUDIT_DELTA, n_samples=600_000, projection=proj, batch=200_000, rng=12)
    assert not res.consistent_with(AUDIT_EPS)
