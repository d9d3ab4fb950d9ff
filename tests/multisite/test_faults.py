"""Faults at the aggregator's door, each with a defined outcome (the same on every transport: test_drills.py).

=============================  =========================================================================
fault                          defined outcome
=============================  =========================================================================
crashed site                   after the deal: completes with *more* noise (``extra_std > 0``, the site
                               reported), or ``ProtocolAborted`` (``on_dropout="abort"``, too few left).
slow site                      its reply misses the round: a late reply is refused (``"late"``) and the
                               site is a dropout exactly as a crash after the deal.
duplicated message             refused (``"duplicate"``): one message per site per round.
replayed message               refused: it names an earlier round (``"stale-round"``); with its tags
                               stripped it does not decode (``"wrong-payload"``); the same payload bytes
                               seen before (``"replayed"``; noise off, an honest site may repeat itself).
wrong shape / dtype            a site cannot build it (``EgressRefused``); a forged one reaching the
                               aggregator is refused (``"wrong-payload"``), run aborted.
site claiming another n        refused (``"wrong-n"``): the plan's n is never recomputed from a claim.
=============================  =========================================================================
"""

import numpy as np
import pytest

from dpmoments.multisite import (Aggregator, EgressRefused, InProcessTransport, MessageRefused, Plan,
                                 ProtocolAborted, Reply, deal, from_wire, run_cape, run_conventional, run_dpdispca,
                                 run_pooled, run_secure_aggregation, to_wire)

from .conftest import make_sites


def _round(sites, seed=0):
    """One CAPE step run by hand: plan, deal, queries, replies (not yet received)."""
    plan = Plan.build("cape", [s.name for s in sites], [s.n for s in sites], n_features=sites[0].n_features,
                      row_norm=1.0, epsilon=1.0, delta=1e-5)
    for s, b in zip(sites, deal(plan, rng=seed).values()):
        s.accept(b, rng=seed + 1)
    agg = Aggregator(plan, rng=seed + 2)
    replies = InProcessTransport(sites).ask(agg.open_step(0, plan.sites), 60.0)
    return agg, plan, replies


def _forge(msg, **fields):
    """A message altered after construction (bypassing the site's guard), as a tampering transport could."""
    forged = Reply(msg.site, msg.plan, msg.step, msg.round_id, msg.n, msg.n_features, msg.values)
    for key, value in fields.items():
        object.__setattr__(forged, key, value)
    return forged


def test_every_site_crashing_aborts_with_no_release():
    sites = make_sites(3)
    with pytest.raises(ProtocolAborted, match="min_sites|at least") as info:
        run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, failures={s.name: "after-deal" for s in sites})
    assert len(info.value.report["dropped"]) == 3


def test_crashed_site_in_dpdispca_is_left_out():
    rel, rep = run_dpdispca(make_sites(3), epsilon=1.0, delta=1e-5, rank=2, rng=0, failures={"site-2": "after-deal"})
    assert rel.n == 400 and rep.dropped == (("site-2", "after-deal"),)
    assert rep.site("site-2").status == "failed-after-deal"


def test_slow_site_is_a_dropout_and_its_late_message_is_refused():
    sites = make_sites(4)
    agg, plan, replies = _round(sites)
    slow = replies.pop("site-3")  # still on its way when the round closes
    for r in replies.values():
        agg.receive(r)
    agg.close_step()
    with pytest.raises(MessageRefused, match="'site-3'.*late") as info:
        agg.receive(slow)
    assert info.value.site == "site-3" and info.value.reason == "late"
    rel, rep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, failures={"site-3": "after-deal"}, target="per-site")
    _, pooled = run_pooled(sites[:3], epsilon=1.0, delta=1e-5, rng=0)
    assert rep.dropped == (("site-3", "after-deal"),) and rel.n == 600
    assert rep.extra_std > 0 and rep.aggregate_std >= pooled.aggregate_std * (1 - 1e-12)
    with pytest.raises(ProtocolAborted, match="abort"):
        run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, on_dropout="abort", failures={"site-3": "after-deal"})


def test_duplicated_message_is_refused_and_counted_once():
    sites = make_sites(3)
    agg, plan, replies = _round(sites)
    for r in replies.values():
        agg.receive(r)
    with pytest.raises(MessageRefused, match="'site-1'.*duplicate") as info:
        agg.receive(replies["site-1"])
    assert info.value.reason == "duplicate"


def test_replay_of_an_earlier_round_is_refused_even_one_ulp_off_and_untagged():
    """Issue 16: a message of an earlier round, re-sent without its round id and one value one ulp off."""
    sites = make_sites(3)
    agg, plan, replies = _round(sites)
    for r in replies.values():
        agg.receive(r)
    agg.close_step()
    old = replies["site-0"]
    agg.open_step(0, plan.sites)  # a second round of the same step
    with pytest.raises(MessageRefused, match="'site-0'.*stale-round"):
        agg.receive(old)
    value = np.array(old.value(0))
    value[0, 0] = np.nextafter(value[0, 0], np.inf)
    nudged = _forge(old, values={0: ("second", value)})
    with pytest.raises(MessageRefused, match="stale-round"):
        agg.receive(nudged)
    stripped = to_wire(nudged).replace(old.round_id.encode(), b"")  # its round id removed on the wire
    with pytest.raises(ValueError):
        from_wire(stripped)
    with pytest.raises(MessageRefused, match="wrong-payload"):
        InProcessTransport._decode("site-0", agg.open_step(0, plan.sites)["site-0"], stripped)


def test_same_payload_twice_is_a_replay():
    sites = make_sites(3)
    agg, plan, replies = _round(sites)
    agg.receive(replies["site-0"])
    agg.close_step()
    queries = agg.open_step(0, plan.sites)
    again = _forge(replies["site-0"], round_id=queries["site-0"].round_id)
    with pytest.raises(MessageRefused, match="replayed"):
        agg.receive(again)


def test_protocol_runs_are_independent_rounds():
    sites = make_sites(3)
    a, _ = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    b, _ = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    np.testing.assert_array_equal(a.second_moment, b.second_moment)  # round ids and plan ids draw no noise
    for runner in (run_conventional, run_secure_aggregation):
        runner(sites, epsilon=1.0, delta=1e-5, rng=0)


@pytest.mark.parametrize("value, match", [
    (np.ones((4, 4)), "shape"),
    (np.ones((50, 3)), "shaped like data rows"),
    (np.ones((3, 3), dtype=complex), "dtype"),
    (np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=object), "dtype"),
])
def test_site_cannot_build_a_wrong_payload_and_the_error_names_it(value, match):
    with pytest.raises(EgressRefused, match=f"site 'site-7'.*{match}"):
        Reply("site-7", "ab" * 32, 0, "r1", 10, 3, {0: ("second", value)})


@pytest.mark.parametrize("field, bad", [
    ("values", {0: ("second", np.ones((2, 2)))}),
    ("values", {0: ("second", np.eye(3, dtype=np.float32))}),
    ("values", {0: ("cross", np.ones(3))}),
    ("values", {1: ("second", np.eye(3))}),
    ("n_features", 4),
])
def test_aggregator_refuses_a_forged_payload_naming_the_site(field, bad):
    sites = make_sites(3)
    agg, plan, replies = _round(sites)
    with pytest.raises(MessageRefused, match="'site-2'.*wrong-payload") as info:
        agg.receive(_forge(replies["site-2"], **{field: bad}))
    assert info.value.site == "site-2" and isinstance(info.value, ProtocolAborted)


def test_reply_naming_another_site_is_forged():
    sites = make_sites(3)
    agg, plan, replies = _round(sites)
    query = agg.open_step(0, plan.sites)["site-0"]
    with pytest.raises(MessageRefused, match="forged"):
        InProcessTransport._decode("site-0", query, to_wire(replies["site-1"]))


def test_unknown_site_and_wrong_plan_are_refused():
    sites = make_sites(3)
    agg, _, replies = _round(sites)
    with pytest.raises(MessageRefused, match="'mallory'.*unknown-site"):
        agg.receive(_forge(replies["site-0"], site="mallory"))
    with pytest.raises(MessageRefused, match="wrong-plan"):
        agg.receive(_forge(replies["site-0"], plan="cd" * 32))


def test_site_claiming_another_n_is_refused():
    sites = make_sites(3)
    agg, _, replies = _round(sites)
    with pytest.raises(MessageRefused, match="'site-1'.*wrong-n.*n=201, the plan has n=200") as info:
        agg.receive(_forge(replies["site-1"], n=201))
    assert info.value.reason == "wrong-n"


@pytest.mark.parametrize("runner", [run_cape, run_conventional, run_secure_aggregation])
def test_protocol_aborts_with_no_release_when_a_site_lies_about_n(runner):
    sites = make_sites(3)
    liar = sites[1]
    honest = liar.handle

    def handle(data):
        msg = from_wire(honest(data))
        return to_wire(Reply(msg.site, msg.plan, msg.step, msg.round_id, msg.n * 2, msg.n_features, msg.values))

    liar.handle = handle
    with pytest.raises(MessageRefused, match="'site-1'.*n=400, the plan has n=200") as info:
        runner(sites, epsilon=1.0, delta=1e-5, rng=0)
    assert info.value.report == {"site": "site-1", "reason": "wrong-n"}
