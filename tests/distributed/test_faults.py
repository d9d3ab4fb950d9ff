"""Distributed faults (issue 8), each with a defined outcome.

=============================  =========================================================================
fault                          defined outcome
=============================  =========================================================================
crashed site                   before the deal: re-planned for the survivors; after the deal: completes
                               with *more* noise (``report.extra_std > 0``, the dropped site reported),
                               or ``ProtocolAborted`` (``on_dropout="abort"``, too few survivors).
                               (``test_failures.py``; extended here: every site crashing, DPdisPCA.)
slow site                      its reply misses the round: the aggregator closes the round when it
                               combines, a late message is refused (``MessageRefused``, reason
                               ``"late"``) and the site is a dropout exactly as a crash after the deal.
                               (Flower transport timeouts: ``tests/flower/test_flower_inprocess.py``
                               ``test_dropout_completes_with_extra_noise[timeout]``.)
duplicated message             refused (``"duplicate"``): one message per site per round; the first one
                               counts once and the aggregate is unchanged.
replayed message               refused: tagged with an earlier round (``"stale-round"``) or, untagged,
                               the same site and payload bytes seen before (``"replayed"``).
wrong shape / dtype            a site cannot build it (``EgressRefused`` naming the site); a forged
                               one reaching the aggregator is refused (``"wrong-payload"``), run aborted.
site claiming another n        refused (``"wrong-n"``): the run aborts with no release; the noise, weights
                               and guarantees were computed for the plan's n and are never recomputed
                               from a site's claim (the Flower server refuses it the same way).
=============================  =========================================================================

``MessageRefused`` is a ``ProtocolAborted``: a protocol that meets one makes no release.
"""

import dataclasses

import numpy as np
import pytest

from dpmoments.distributed import (Aggregator, EgressRefused, ProtocolAborted, SiteMessage, run_cape,
                                   run_conventional, run_dpdispca, run_pooled, run_secure_aggregation)
from dpmoments.distributed.messages import MessageRefused
from dpmoments.distributed.planning import plan_cape, site_weights

from .conftest import make_sites


def _cape_round(sites, seed=0):
    """One CAPE round run by hand: plan, aggregator shares, site messages (not yet received)."""
    mu = site_weights(sites, None)
    tau = np.full(len(sites), 0.05)
    plan, _ = plan_cape(sites, mu, tau, np.full(len(sites), 0.01), np.full(len(sites), 1e-5))
    agg = Aggregator(np.random.default_rng(seed))
    shares = agg.masks(plan, "second", sites[0].n_features)
    rngs = np.random.default_rng(seed + 1).spawn(len(sites))
    msgs = {s.name: s.respond("second", shares=[shares[s.name]] if s.name in shares else [],
                              g_std=float(plan.g_std[i]), rng=rngs[i]) for i, s in enumerate(sites)}
    return agg, plan, msgs


def _forge(msg, **fields):
    """A message altered after construction (bypassing the site's egress guard), as a tampering transport could."""
    forged = dataclasses.replace(msg)
    for key, value in fields.items():
        object.__setattr__(forged, key, value)
    return forged


# ---------------------------------------------------------------------------------------- crashed site


def test_every_site_crashing_aborts_with_no_release():
    sites = make_sites(3)
    with pytest.raises(ProtocolAborted, match="min_sites|at least") as info:
        run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, failures={s.name: "after-deal" for s in sites})
    assert len(info.value.report["dropped"]) == 3


def test_crashed_site_in_dpdispca_is_left_out():
    sites = make_sites(3, d=3)
    rel, rep = run_dpdispca(sites, epsilon=1.0, delta=1e-5, rank=2, rng=0, failures={"site-2": "after-deal"})
    assert rel.n == 400 and rep.dropped == (("site-2", "after-deal"),)
    assert rep.site("site-2").status == "failed-after-deal"


# ---------------------------------------------------------------------------------------- slow site


def test_slow_site_is_a_dropout_and_its_late_message_is_refused():
    sites = make_sites(4)
    agg, plan, msgs = _cape_round(sites)
    slow = msgs.pop("site-3")  # still on its way when the aggregator combines
    weights = dict(zip(plan.sites, plan.weights))
    agg.combine(msgs, weights)
    with pytest.raises(MessageRefused, match="'site-3'.*late") as info:
        agg.receive(slow)
    assert info.value.site == "site-3" and info.value.reason == "late"
    # In a protocol run, the defined outcome of a slow site is that of a crash after the deal:
    # completion with extra noise, reported (or an abort with on_dropout="abort").
    rel, rep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, failures={"site-3": "after-deal"})
    _, pooled = run_pooled(sites[:3], epsilon=1.0, delta=1e-5, rng=0)
    assert rep.dropped == (("site-3", "after-deal"),) and rel.n == 600
    assert rep.extra_std > 0 and rep.aggregate_std >= pooled.aggregate_std * (1 - 1e-12)
    with pytest.raises(ProtocolAborted, match="abort"):
        run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, on_dropout="abort", failures={"site-3": "after-deal"})


# ---------------------------------------------------------------------------------------- duplicate / replay


def test_duplicated_message_is_refused_and_counted_once():
    sites = make_sites(3)
    agg, plan, msgs = _cape_round(sites)
    for m in msgs.values():
        agg.receive(m)
    with pytest.raises(MessageRefused, match="'site-1'.*duplicate") as info:
        agg.receive(msgs["site-1"])
    assert info.value.reason == "duplicate"
    # A second, different message from the same site in the same round is refused too.
    other = SiteMessage("site-1", msgs["site-1"].n, "second", msgs["site-1"].value + 1.0, 3,
                        msgs["site-1"].round_id)
    with pytest.raises(MessageRefused, match="duplicate"):
        agg.receive(other)
    weights = dict(zip(plan.sites, plan.weights))
    total = agg.combine(msgs, weights)  # the first message of each site, once
    agg2, _, msgs2 = _cape_round(sites)
    np.testing.assert_array_equal(total, agg2.combine(msgs2, weights))


def test_replay_of_an_earlier_round_is_refused():
    sites = make_sites(3)
    agg, plan, msgs = _cape_round(sites)
    weights = dict(zip(plan.sites, plan.weights))
    agg.combine(msgs, weights)
    first_round = agg.round_id
    agg.masks(plan, "second", 3)  # round 2
    assert agg.round_id != first_round
    # Tagged with round 1 (CAPE sites echo the id of the aggregator's share).
    assert msgs["site-0"].round_id == first_round
    with pytest.raises(MessageRefused, match="'site-0'.*stale-round") as info:
        agg.receive(msgs["site-0"])
    assert info.value.reason == "stale-round"
    # Untagged (a transport that strips the id, or a protocol with no aggregator share): the
    # same site and payload bytes were seen in round 1.
    stripped = _forge(msgs["site-0"], round_id=None)
    with pytest.raises(MessageRefused, match="'site-0'.*replayed"):
        agg.receive(stripped)


def test_protocol_messages_carry_the_round_and_a_fresh_run_is_accepted():
    sites = make_sites(3)
    rel_a, rep_a = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    rel_b, _ = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    np.testing.assert_array_equal(rel_a.second_moment, rel_b.second_moment)  # round ids draw no noise
    for run in (run_conventional, run_secure_aggregation):
        run(sites, epsilon=1.0, delta=1e-5, rng=0)


# ---------------------------------------------------------------------------------------- wrong payload


@pytest.mark.parametrize("value, match", [
    (np.ones((4, 4)), "shape"),                  # a statistic of another d
    (np.ones((50, 3)), "shaped like data rows"),  # rows
    (np.ones((3, 3), dtype=complex), "dtype"),
    (np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=object), "dtype"),
])
def test_site_cannot_build_a_wrong_payload_and_the_error_names_it(value, match):
    with pytest.raises(EgressRefused, match=f"site 'site-7'.*{match}"):
        SiteMessage("site-7", 10, "second", value, 3)


@pytest.mark.parametrize("field, bad", [
    ("value", np.ones((2, 2))),
    ("value", np.eye(3, dtype=np.float32)),
    ("value", np.eye(3).tolist()),
    ("statistic", "cross"),
    ("n_features", 4),
])
def test_aggregator_refuses_a_forged_payload_naming_the_site(field, bad):
    sites = make_sites(3)
    agg, plan, msgs = _cape_round(sites)
    msgs["site-2"] = _forge(msgs["site-2"], **{field: bad})
    with pytest.raises(MessageRefused, match="'site-2'.*wrong-payload") as info:
        agg.combine(msgs, dict(zip(plan.sites, plan.weights)))
    assert info.value.site == "site-2" and info.value.reason == "wrong-payload"
    assert isinstance(info.value, ProtocolAborted)


def test_message_filed_under_another_site_is_refused():
    sites = make_sites(3)
    agg, plan, msgs = _cape_round(sites)
    msgs["site-0"], msgs["site-1"] = msgs["site-1"], msgs["site-0"]
    with pytest.raises(MessageRefused, match="filed under site 'site-0'"):
        agg.combine(msgs, dict(zip(plan.sites, plan.weights)))


def test_unknown_site_is_refused():
    sites = make_sites(3)
    agg, _, msgs = _cape_round(sites)
    with pytest.raises(MessageRefused, match="'mallory'.*unknown-site"):
        agg.receive(_forge(msgs["site-0"], site="mallory"))


# ---------------------------------------------------------------------------------------- wrong n


def test_site_claiming_another_n_is_refused():
    sites = make_sites(3)
    agg, _, msgs = _cape_round(sites)
    with pytest.raises(MessageRefused, match="'site-1'.*wrong-n.*n=201, the plan has n=200") as info:
        agg.receive(_forge(msgs["site-1"], n=201))
    assert info.value.reason == "wrong-n"


@pytest.mark.parametrize("run", [run_cape, run_conventional, run_secure_aggregation])
def test_protocol_aborts_with_no_release_when_a_site_lies_about_n(run, monkeypatch):
    sites = make_sites(3)
    liar = sites[1]
    honest = type(liar).respond

    def respond(self, statistic, **kwargs):
        msg = honest(self, statistic, **kwargs)
        if self is liar:  # a site that reports more rows than the plan was built on
            return SiteMessage(msg.site, msg.n * 2, msg.statistic, np.array(msg.value), msg.n_features, msg.round_id)
        return msg

    monkeypatch.setattr(type(liar), "respond", respond)
    with pytest.raises(MessageRefused, match="'site-1'.*n=400, the plan has n=200") as info:
        run(sites, epsilon=1.0, delta=1e-5, rng=0)
    assert info.value.report == {"site": "site-1", "reason": "wrong-n"}
