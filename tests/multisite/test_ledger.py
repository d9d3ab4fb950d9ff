"""A site gives its share once (issue 12): its own ledger, on disk, refuses repeats, replays and overspending."""

import json
import math

import numpy as np
import pytest

from dpmoments.multisite import (Aggregator, InProcessTransport, Plan, Reply, SiteError, SiteLedger, deal, run_cape,
                                 to_wire)
from dpmoments.privacy import ApproxDP

from .conftest import make_sites


def _dealt(sites, epsilon=1.0, seed=0):
    plan = Plan.build("cape", [s.name for s in sites], [s.n for s in sites], n_features=3, row_norm=1.0,
                      epsilon=epsilon, delta=1e-5)
    for s, b in zip(sites, deal(plan, rng=seed).values()):
        s.accept(b, rng=seed + 1)
    return plan


def _ask(sites, plan, seed=0):
    agg = Aggregator(plan, rng=seed)
    return InProcessTransport(sites).ask(agg.open_step(0, plan.sites), 60.0), agg


def test_repeating_a_query_cannot_average_the_noise_away():
    """The attack of issue 12: ask K times, average g_s away, cancel e_s. The second ask is refused."""
    sites = make_sites(3)
    plan = _dealt(sites)
    first, _ = _ask(sites, plan)
    assert all(isinstance(r, Reply) for r in first.values())
    for k in range(1, 5):  # a fresh round id each time: the aggregator re-asks
        again, _ = _ask(sites, plan, seed=k)
        assert all(isinstance(r, SiteError) and r.code == "already-answered" for r in again.values())
    for s in sites:
        assert s.ledger.answered == [(plan.digest, 0)]
        assert [r["reason"] for r in s.ledger.refusals] == ["already-answered"] * 4


def test_a_replayed_query_is_refused_and_unknown_plans_and_steps_are_refused():
    sites = make_sites(3)
    plan = _dealt(sites)
    agg = Aggregator(plan, rng=0)
    query = agg.open_step(0, plan.sites)["site-0"]
    wire = to_wire(query)
    assert isinstance(InProcessTransport(sites).exchange({"site-0": wire}, 1)["site-0"], bytes)
    replay = sites[0].answer(query)
    assert isinstance(replay, SiteError) and replay.code == "already-answered"
    other = Aggregator(Plan.build("cape", plan.sites, plan.n, n_features=3, row_norm=1.0, epsilon=1.0,
                                  delta=1e-5), rng=1)  # re-planned by the aggregator: no share for it
    assert sites[1].answer(other.open_step(0, plan.sites)["site-1"]).code == "plan-unknown"
    assert sites[1].answer(agg.open_step(3, plan.sites)["site-1"]).code == "step-unknown"
    assert [r["reason"] for r in sites[1].ledger.refusals] == ["plan-unknown", "step-unknown"]


def test_the_site_owns_its_budget_and_refuses_a_plan_beyond_it():
    sites = make_sites(3, budget=(1.5, 1e-4))
    first = _dealt(sites)
    assert all(isinstance(r, Reply) for r in _ask(sites, first)[0].values())
    second = _dealt(sites, seed=5)  # a new plan with new shares: 1 + 1 > 1.5
    replies, _ = _ask(sites, second)
    assert {r.code for r in replies.values()} == {"over-budget"}
    assert sites[0].ledger.spent().epsilon == pytest.approx(1.0, rel=1e-6)
    # a run through the API ends cleanly with no release when every site refuses
    with pytest.raises(Exception, match="took part"):
        run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)


def test_the_ledger_survives_a_restart_and_records_before_it_answers(tmp_path, monkeypatch):
    path = tmp_path / "north.ledger.json"
    sites = make_sites(3, ledger=None)
    north = make_sites(1, ledger=path)[0]
    sites[0] = north
    plan = _dealt(sites)
    crash = type(north)._noisy

    def crash_after_recording(self, *args):
        raise RuntimeError("killed between recording and sending")

    monkeypatch.setattr(type(north), "_noisy", crash_after_recording)
    replies, _ = _ask(sites, plan)
    assert replies["site-0"].code == "internal"  # nothing left the site but the code
    monkeypatch.setattr(type(north), "_noisy", crash)
    restarted = make_sites(1, ledger=path)[0]  # the same site, a new process: the ledger is read back
    restarted.accept(next(b for b in deal(plan, rng=0).values() if b.site == "site-0"))
    assert restarted.answer(Aggregator(plan, rng=9).open_step(0, plan.sites)["site-0"]).code == "already-answered"
    saved = json.loads(path.read_text())
    assert saved["answered"] == [[plan.digest, 0]] and saved["refusals"][-1]["reason"] == "already-answered"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ledger-")]  # no temporary left


def test_ledger_budget_arithmetic_and_refusals():
    ledger = SiteLedger("a", ApproxDP(1.0, 1e-5))
    ledger.admit("p" * 64, 0, ApproxDP(0.6, 4e-6))
    ledger.admit("p" * 64, 1, ApproxDP(0.6, 4e-6))  # the same plan is charged once
    with pytest.raises(Exception) as info:
        ledger.admit("q" * 64, 0, ApproxDP(0.6, 4e-6))
    assert info.value.code == "over-budget" and ledger.spent().epsilon == pytest.approx(0.6)
    with pytest.raises(TypeError):
        SiteLedger("a", "lots")
    assert SiteLedger("a", None).can_answer("r" * 64, ApproxDP(math.inf, 0.5))


def test_a_site_budget_does_not_mix_relations(tmp_path):
    """The site's budget rule is the accountant's: spends under two relations do not add up, so they are refused."""
    ledger = SiteLedger("a", ApproxDP(3.0, 1e-5), tmp_path / "ledger.json")
    ledger.admit("p" * 64, 0, ApproxDP(0.6, 4e-6), "zero-out")
    assert not ledger.can_answer("q" * 64, ApproxDP(0.1, 1e-7), "replace-one")
    with pytest.raises(Exception) as info:
        ledger.admit("q" * 64, 0, ApproxDP(0.1, 1e-7), "replace-one")
    assert info.value.code == "relation-mismatch"
    again = SiteLedger("a", ApproxDP(3.0, 1e-5), tmp_path / "ledger.json")  # after a restart, from disk
    assert again.to_dict()["charged"]["p" * 64]["neighbours"] == "zero-out"
    assert again.to_dict()["refusals"][-1]["reason"] == "relation-mismatch"
    again.admit("s" * 64, 0, ApproxDP(0.6, 4e-6), "zero-out")  # the same relation still composes
    assert again.spent().epsilon == pytest.approx(1.2)


def test_an_unreadable_ledger_refuses_to_answer(tmp_path):
    path = tmp_path / "l.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="unreadable"):
        make_sites(1, ledger=path)
    path.write_text(json.dumps({"site": "someone-else", "answered": [], "charged": {}, "refusals": []}))
    with pytest.raises(ValueError, match="another site"):
        make_sites(1, ledger=path)


@pytest.mark.parametrize("state", [[], {"site": "site-0"}, {"site": "site-0", "answered": 5, "charged": {},
                                                              "refusals": []}])
def test_a_ledger_of_another_shape_refuses_in_one_line(tmp_path, state):
    # a JSON list was an AttributeError (an internal fault), a missing field a KeyError at the first query
    path = tmp_path / "l.json"
    path.write_text(json.dumps(state))
    with pytest.raises(ValueError, match="is not a dpmoments site ledger"):
        SiteLedger("site-0", None, path)


def test_the_aggregator_drops_a_refusing_site_and_keeps_its_noise_promise():
    sites = make_sites(4)
    plan = _dealt(sites)
    sites[2].answer(Aggregator(plan, rng=3).open_step(0, plan.sites)["site-2"])  # site-2 spent its share already
    from dpmoments.multisite import run_plan

    out = run_plan(plan, InProcessTransport(sites), rng=1)
    rep = out.reports[0]
    assert rep.dropped == (("site-2", "after-deal"),) and rep.extra_std > 0
    assert any("already-answered" in n for n in rep.notes)
    assert np.all(np.isfinite(out.releases[0].second_moment))


def test_an_aborted_run_says_why_its_sites_did_not_take_part():
    # an aggregator holding a tampered plan was told only "0 site(s) took part, fewer than min_sites=2"
    from dpmoments.multisite import ProtocolAborted, run_plan
    from dpmoments.multisite.plan import plan_with

    sites = make_sites(3)
    plan = _dealt(sites)
    tampered = plan_with(plan, epsilon=tuple(10 * e for e in plan.epsilon))
    with pytest.raises(ProtocolAborted, match="fewer than min_sites") as info:
        run_plan(tampered, InProcessTransport(sites), rng=0)
    assert "plan-unknown" in str(info.value) or "holds no share" in str(info.value), str(info.value)
    assert "\n" not in str(info.value)
