"""Guarantees answer what callers need (no type switches outside privacy/), and compose from their parts."""

import math
import pathlib
import re

import pytest

from dpmoments.privacy import ApproxDP, PureDP, Uncertified, ZCDP, compose, parallel, zcdp_to_approx_dp

WISHART = Uncertified(PureDP(1.0), "support mismatch")
CLASSIC = Uncertified(ApproxDP(50.0, 1e-6), "classic formula at epsilon >= 1", holds=ApproxDP(88.6, 1e-6, rho=44.5))


def test_holding_claim_and_certified():
    for g in (PureDP(1.0), ApproxDP(1.0, 1e-6), ZCDP(0.5)):
        assert g.certified and g.holding is g and g.claim is g
    assert not WISHART.certified and WISHART.holding is None and WISHART.claim == PureDP(1.0)
    assert CLASSIC.holding == ApproxDP(88.6, 1e-6, rho=44.5)


def test_rho_and_approx_forms():
    assert PureDP(1.0).rho_or_none == 0.5 and ApproxDP(1.0, 1e-6).rho_or_none is None
    assert ApproxDP(1.0, 1e-6, rho=0.1).rho_or_none == 0.1 and ZCDP(0.3).rho_or_none == 0.3
    assert WISHART.rho_or_none is None and CLASSIC.rho_or_none == 44.5
    assert PureDP(1.0).as_approx() == ApproxDP(1.0, 0.0) and PureDP(1.0).as_approx(1e-6) == ApproxDP(1.0, 1e-6)
    assert ZCDP(0.5).as_approx(1e-6).epsilon == pytest.approx(zcdp_to_approx_dp(0.5, 1e-6))
    with pytest.raises(ValueError, match="needs 'delta'"):
        ZCDP(0.5).as_approx()
    with pytest.raises(ValueError, match="no guarantee is known to hold"):
        WISHART.as_approx()
    assert CLASSIC.as_approx() == CLASSIC.holds


def test_describe_says_what_is_claimed_and_what_holds():
    assert "e^1 = 2.72" in PureDP(1.0).describe()
    assert "plus at most 1e-06" in ApproxDP(1.0, 1e-6).describe()
    assert "at delta = 1e-06 that is (" in ZCDP(0.5).describe(1e-6)
    assert WISHART.describe().endswith("No guarantee is known to hold.")
    assert "What holds: (88.6, 1e-06)-DP" in CLASSIC.describe()
    assert str(CLASSIC).endswith("what holds: (88.6, 1e-06)-DP")
    assert str(WISHART) == "UNCERTIFIED: 1-DP is claimed but not proven (support mismatch); no guarantee is known to hold"
    assert "not private" in PureDP(math.inf).describe()


def test_an_uncertified_part_makes_the_whole_uncertified():
    total = compose([ApproxDP(1.0, 1e-6), CLASSIC])
    assert not total.certified and total.claim == ApproxDP(51.0, 2e-6)
    assert total.holding.epsilon == pytest.approx(89.6) and total.holding.delta == pytest.approx(2e-6)
    nothing = compose([CLASSIC, WISHART], composition="basic")
    assert nothing.holding is None and nothing.reason == "classic formula at epsilon >= 1; support mismatch"


def test_composition_rules():
    assert compose([PureDP(0.5), PureDP(0.25)]) == PureDP(0.75)
    assert compose([ZCDP(0.1), ZCDP(0.2)], composition="zcdp") == ZCDP(0.1 + 0.2)
    at = compose([ZCDP(0.1), ApproxDP(0.5, 1e-7)], composition="zcdp", delta=1e-6)
    assert at.epsilon == pytest.approx(0.5 + zcdp_to_approx_dp(0.1, 1e-6 - 1e-7)) and at.delta == 1e-6
    adv = compose([PureDP(0.01)] * 1000, composition="advanced", delta_slack=1e-6)
    assert adv.epsilon < 10.0 and adv.delta == pytest.approx(1e-6)
    with pytest.raises(ValueError, match="composition='zcdp'"):
        compose([ZCDP(0.1), PureDP(1.0)])
    with pytest.raises(TypeError):
        compose([0.5])


def test_parallel_composition_is_the_weakest_part():
    """Disjoint blocks (the sites of a multi-site run): what holds for each block, never a sum."""
    g = parallel([ApproxDP(0.5, 1e-6, rho=0.02), ApproxDP(0.8, 1e-7, rho=0.05)])
    assert (g.epsilon, g.delta, g.rho) == (0.8, 1e-6, 0.05)  # each part implies it; delta from the other part
    assert parallel([PureDP(0.3), PureDP(0.7)]) == PureDP(0.7)
    assert parallel([ZCDP(0.1), ZCDP(0.4)]) == ZCDP(0.4)
    mixed = parallel([PureDP(0.3), ApproxDP(0.2, 1e-6)])
    assert (mixed.epsilon, mixed.delta) == (0.3, 1e-6)
    assert not parallel([PureDP(0.3), PureDP(math.inf)]).is_private
    unc = parallel([ApproxDP(0.5, 1e-6), Uncertified(ApproxDP(0.4, 1e-6), "classic formula", ApproxDP(0.9, 1e-6))])
    assert not unc.certified and unc.claim.epsilon == 0.5 and unc.holding.epsilon == 0.9
    with pytest.raises(ValueError, match="one delta"):
        parallel([ZCDP(0.1), ApproxDP(0.5, 1e-6)])
    with pytest.raises(ValueError):
        parallel([])


def test_no_guarantee_type_switches_outside_privacy():
    src = pathlib.Path(__file__).resolve().parents[2] / "src" / "dpmoments"
    pattern = re.compile(r"isinstance\([^)]*\b(PureDP|ApproxDP|ZCDP|Uncertified)\b")
    offenders = [str(p.relative_to(src)) for p in src.rglob("*.py")
                 if p.relative_to(src).parts[0] != "privacy" and pattern.search(p.read_text())]
    assert offenders == []
