"""The aggregator sums each reply as it arrives and keeps none: its memory does not grow with the sites."""

import importlib
import math
import weakref

import numpy as np
from dpmoments.multisite import InProcessTransport, Plan, deal, run_plan
from dpmoments.multisite.aggregator import Aggregator, RunningSum

from .conftest import make_sites


def _dealt(n_sites):
    """``n_sites`` sites of 50 rows at d = 3 holding their shares of one CAPE plan (throwaway: no records)."""
    sites = make_sites(n_sites, n=50, d=3)
    plan = Plan.build("cape", [s.name for s in sites], [s.n for s in sites], n_features=3, row_norm=1.0,
                      epsilon=1.0, delta=1e-5)
    for s, bundle in zip(sites, deal(plan, rng=1).values()):
        s.accept(bundle, rng=2, throwaway=True)
    return sites, plan


def test_the_running_sum_does_not_depend_on_the_order_of_its_terms():
    rng = np.random.default_rng(0)
    terms = [rng.normal(size=40) * 10.0 ** rng.integers(-8, 8) for _ in range(300)]
    sums = []
    for k in range(4):
        total = RunningSum()
        for i in rng.permutation(len(terms)) if k else range(len(terms)):
            total.add(terms[i])
        sums.append(total.value())
    for other in sums[1:]:
        assert np.array_equal(other, sums[0])
    exact = [math.fsum(t[j] for t in terms) for j in range(40)]
    assert np.array_equal(sums[0], exact)  # correctly rounded here


def test_a_reply_is_dropped_once_it_is_added(monkeypatch):
    """At most one site's message is alive while the next is received (the queries' f_s included)."""
    alive = []

    class Watching(Aggregator):
        def receive(self, reply):
            live = [r for r in alive if r() is not None]
            assert len(live) <= 1, f"{len(live)} replies still held"
            out = super().receive(reply)
            alive.append(weakref.ref(reply.values[0][1]))
            return out

    monkeypatch.setattr(importlib.import_module("dpmoments.multisite.run"), "Aggregator", Watching)
    sites, plan = _dealt(6)
    (release,), (report,) = run_plan(plan, InProcessTransport(sites), rng=0)
    assert release.n == 300 and len(alive) == 6 and report.dropped == ()


def test_summed_as_they_come_equals_the_sum_in_plan_order_and_a_dropout_renormalises():
    sites, plan = _dealt(5)
    agg = Aggregator(plan, rng=3)
    queries = agg.open_step(0, plan.sites)
    replies = InProcessTransport(sites).ask(queries, 10.0)
    weights = np.asarray(plan.weights, dtype=float)
    mu = weights / weights.sum()
    expected = sum(m * (replies[s].value(0) - agg.f_share(0, s)) for m, s in zip(mu, plan.sites))
    for s in reversed(plan.sites[1:]):  # site-0 never answers
        agg.receive(replies[s])
    received = agg.close_step()
    assert received == tuple(plan.sites[1:])
    w = weights[1:] / weights[1:].sum()
    partial = sum(m * (replies[s].value(0) - agg.f_share(0, s)) for m, s in zip(w, plan.sites[1:]))
    np.testing.assert_allclose(agg.combine(0, received), partial, rtol=1e-12, atol=1e-15)
    assert not np.allclose(partial, expected)


def test_the_release_is_the_same_bytes_whatever_order_the_replies_arrive_in():

    class Backwards(InProcessTransport):
        def exchange_each(self, messages, timeout_s):
            got = list(super().exchange_each(messages, timeout_s))
            yield from reversed(got)

    out = []
    for transport in (InProcessTransport, Backwards):
        sites, plan = _dealt(6)  # the same rows and plan, dealt again: a site answers a step of a plan once
        out.append(run_plan(plan, transport(sites), rng=4).releases[0].second_moment)
    assert np.array_equal(out[0], out[1])


def test_flower_pushes_and_pulls_a_window_at_a_time(monkeypatch):
    """The ServerApp built every query of a step before one push and pulled every reply in one list: S messages
    at once. It builds each query when its push comes and hands each reply on as it is pulled; same bytes."""
    import pytest

    pytest.importorskip("flwr", reason="the Flower extra is not installed")
    from dpmoments.multisite import flower, run_cape

    from .transports import make

    monkeypatch.setattr(flower, "WINDOW", 1)  # one message a push, one id a pull
    sites = make_sites(4, n=50)
    pushed, pulled = [], []

    def link(_):
        transport = make("flower", {s.name: s.handle for s in sites})
        push, pull = transport.grid.push_messages, transport.grid.pull_messages
        transport.grid.push_messages = lambda batch: pushed.append(len(batch)) or push(batch)
        transport.grid.pull_messages = lambda ids: pulled.append(len(ids)) or pull(ids)
        return transport

    release, report = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, transport=link)
    assert report.dropped == () and max(pushed) == max(pulled) == 1 and len(pushed) >= 2 * 4
    reference, _ = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    assert release.second_moment.tobytes() == reference.second_moment.tobytes()
