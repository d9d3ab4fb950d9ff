"""The accountant: exact totals, refused overspend, parallel composition, modes."""

import json
import math

import pytest

from dpmoments import (
    Accountant,
    ApproxDP,
    BudgetExceededError,
    PureDP,
    Uncertified,
    UncertifiedSpendError,
    ZCDP,
)
from dpmoments.privacy import advanced_composition, zcdp_to_approx_dp


def test_basic_totals_are_exact():
    acct = Accountant(ApproxDP(1.0, 1e-5))
    acct.spend(PureDP(0.25), label="a")
    acct.spend(ApproxDP(0.5, 4e-6), label="b")
    assert acct.spent == ApproxDP(0.75, 4e-6)
    assert [e.label for e in acct.ledger] == ["a", "b"]


def test_pure_budget_totals_exactly():
    acct = Accountant(PureDP(1.0))
    for _ in range(4):
        acct.spend(PureDP(0.25))
    assert acct.spent == PureDP(1.0)
    with pytest.raises(BudgetExceededError):
        acct.spend(PureDP(1e-9))


def test_overspend_is_refused_and_leaves_state_unchanged():
    acct = Accountant(ApproxDP(1.0, 1e-6))
    acct.spend(ApproxDP(0.6, 1e-7), label="first")
    before = acct.report()
    with pytest.raises(BudgetExceededError) as err:
        acct.spend(PureDP(0.5), label="second")
    msg = str(err.value)
    assert "spent (0.6, 1e-07)-DP" in msg and "requested 0.5-DP" in msg and "total budget (1, 1e-06)-DP" in msg
    assert acct.report() == before
    assert not acct.can_spend(PureDP(0.5))
    assert acct.can_spend(PureDP(0.4))


def test_delta_overspend_is_refused():
    acct = Accountant(ApproxDP(10.0, 1e-6))
    acct.spend(ApproxDP(0.1, 6e-7))
    with pytest.raises(BudgetExceededError):
        acct.spend(ApproxDP(0.1, 6e-7))


def test_pure_budget_refuses_delta():
    with pytest.raises(ValueError, match="pure epsilon-DP budget"):
        Accountant(PureDP(1.0)).spend(ApproxDP(0.1, 1e-9))


def test_parallel_composition_over_sites():
    acct = Accountant(PureDP(1.0)).partitioning("sites", ["a", "b", "c"])
    acct.spend(PureDP(0.3), label="public-centre", partition=None)
    for site in ("a", "b", "c"):
        acct.spend(PureDP(0.7), partition=site)  # disjoint data: each record pays once
    assert acct.spent == PureDP(1.0)
    with pytest.raises(BudgetExceededError):
        acct.spend(PureDP(0.1), partition="b")  # site b would pay 1.1
    assert acct.report()["partitions"] == ["a", "b", "c"]


def test_zcdp_budget_adds_rho_and_converts_pure_dp():
    acct = Accountant(ZCDP(1.0))
    acct.spend(PureDP(1.0))  # 0.5-zCDP
    acct.spend(ZCDP(0.25))
    acct.spend(ApproxDP(1.0, 1e-6, rho=0.25))  # a Gaussian release
    assert acct.spent == ZCDP(1.0)
    with pytest.raises(BudgetExceededError):
        acct.spend(ZCDP(1e-6))
    with pytest.raises(ValueError, match="no rho"):
        Accountant(ZCDP(1.0)).spend(ApproxDP(0.1, 1e-7))


def test_zcdp_composition_against_an_approx_budget():
    acct = Accountant(ApproxDP(3.0, 1e-6), composition="zcdp")
    for _ in range(10):
        acct.spend(ApproxDP(0.5, 1e-8, rho=0.01))
    assert acct.spent.epsilon == pytest.approx(zcdp_to_approx_dp(0.1, 1e-6))
    # ten (0.5, 1e-8) spends would be 5.0 under basic composition
    assert acct.spent.epsilon < 3.0


def test_zcdp_mixes_in_approx_spends_without_rho():
    acct = Accountant(ApproxDP(3.0, 1e-5), composition="zcdp")
    acct.spend(ZCDP(0.1))
    acct.spend(ApproxDP(0.5, 4e-6))
    assert acct.spent.epsilon == pytest.approx(zcdp_to_approx_dp(0.1, 6e-6) + 0.5)


def test_advanced_composition_mode():
    acct = Accountant(ApproxDP(3.0, 1e-5), composition="advanced", delta_slack=1e-6, plan=[PureDP(0.05)] * 100)
    for _ in range(100):
        acct.spend(PureDP(0.05))
    eps, delta = advanced_composition([0.05] * 100, [0] * 100, 1e-6)
    assert acct.spent.epsilon == pytest.approx(min(eps, 5.0))
    assert eps < 3.0 < 5.0  # basic composition would have refused long ago
    assert acct.spent.delta == pytest.approx(delta)


def test_advanced_falls_back_to_basic_when_better():
    acct = Accountant(ApproxDP(3.0, 1e-5), composition="advanced", delta_slack=1e-6, plan=[PureDP(1.0)])
    acct.spend(PureDP(1.0))
    assert acct.spent == ApproxDP(1.0, 0.0)


def test_uncertified_refused_unless_allowed():
    claim = Uncertified(PureDP(1.0), "support mismatch")
    with pytest.raises(UncertifiedSpendError, match="allow_uncertified=True"):
        Accountant(PureDP(2.0)).spend(claim)
    acct = Accountant(PureDP(2.0), allow_uncertified=True)
    acct.spend(claim, label="wishart")
    assert acct.spent.claim == PureDP(1.0) and not acct.spent.certified and acct.certified is False
    assert acct.report()["certified"] is False


def test_infinite_epsilon_never_fits():
    with pytest.raises(BudgetExceededError):
        Accountant(PureDP(100.0)).spend(PureDP(math.inf))


def test_report_is_json_able():
    acct = Accountant(ApproxDP(1.0, 1e-6), composition="zcdp")
    acct.partitioning("sites", ["site-1", "site-2"])
    acct.spend(ApproxDP(0.5, 1e-7, rho=0.01), label="cov", partition="site-1")
    report = json.loads(json.dumps(acct.report(), allow_nan=False))
    assert report["spends"][0]["label"] == "cov"
    assert report["budget"] == {"type": "approx-dp", "epsilon": 1.0, "delta": 1e-6}


def test_no_global_state_between_accountants():
    a, b = Accountant(PureDP(1.0)), Accountant(PureDP(1.0))
    a.spend(PureDP(1.0))
    assert b.spent is None and b.can_spend(PureDP(1.0))


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(budget=1.0), TypeError, "'budget' must be"),
        (dict(budget=PureDP(math.inf)), ValueError, "'budget' must be finite"),
        (dict(budget=PureDP(1.0), composition="rdp"), ValueError, "'composition' must be one of"),
        (dict(budget=ApproxDP(1.0, 1e-6), composition="advanced"), ValueError, "delta_slack"),
        (dict(budget=ApproxDP(1.0, 1e-6), composition="advanced", delta_slack=1e-7), ValueError, "'plan'"),
        (dict(budget=ApproxDP(1.0, 1e-6), plan=[PureDP(0.1)]), ValueError, "only used with"),
        (dict(budget=ApproxDP(1.0, 1e-6), neighbours="swap"), ValueError, "'neighbours' must be one of"),
        (dict(budget=PureDP(1.0), composition="zcdp"), ValueError, "pure epsilon-DP budget"),
        (dict(budget=ZCDP(1.0), composition="basic"), ValueError, "composes in zCDP"),
    ],
)
def test_bad_construction(kwargs, error, match):
    budget = kwargs.pop("budget")
    with pytest.raises(error, match=match):
        Accountant(budget, **kwargs)


def test_bad_spend_arguments():
    acct = Accountant(PureDP(1.0))
    with pytest.raises(TypeError, match="'guarantee'"):
        acct.spend(0.5)
    with pytest.raises(TypeError, match="'partition'"):
        acct.spend(PureDP(0.1), partition=3)
    assert acct.spent is None


def test_a_refusal_states_the_composed_total_so_a_zcdp_conversion_is_not_a_mystery():
    # (hunt3) "spent nothing, requested 0.5-DP, total budget (1, 1e-06)-DP" read as a bug: in zCDP a lone
    # 0.5-DP spend is 0.125-zCDP, which converts at delta 1e-6 to more than epsilon 1.
    acct = Accountant(ApproxDP(1.0, 1e-6), composition="zcdp")
    with pytest.raises(BudgetExceededError, match=r"composed \(zcdp\) the total would be \(2\.4"):
        acct.spend(PureDP(0.5))


def test_advanced_composition_refuses_a_zcdp_spend_naming_the_composition():
    acct = Accountant(ApproxDP(1.0, 1e-5), composition="advanced", delta_slack=1e-6, plan=[PureDP(0.01)] * 10)
    with pytest.raises(ValueError, match="composition='zcdp'"):  # it said "'delta' in (0, 1); got None"
        acct.spend(ZCDP(1e-5))
    assert not acct.can_spend(ZCDP(1e-5)) and acct.ledger == ()


def test_the_total_after_an_uncertified_spend_is_headlined_as_uncertified():
    # (hunt3) acct.spent printed "(1, 0)-DP" after a Wishart spend: a claim shown as the guarantee that holds.
    acct = Accountant(ApproxDP(3.0, 1e-5), allow_uncertified=True)
    acct.spend(PureDP(0.5))
    assert acct.spent == ApproxDP(0.5, 0.0)
    acct.spend(Uncertified(ApproxDP(1.0, 1e-6), "classic formula", holds=ApproxDP(1.3, 1e-6)))
    assert acct.spent.claim == ApproxDP(1.5, 1e-6) and acct.spent.holding == ApproxDP(1.8, 1e-6)
    assert "UNCERTIFIED" in str(acct.spent) and acct.report()["spent"]["type"] == "uncertified"
    acct.spend(Uncertified(PureDP(0.1), "support mismatch"))
    assert acct.spent.holding is None
