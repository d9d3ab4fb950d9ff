"""The protocol and its fault drills on every transport: in process, Flower (real ClientApp, real site door) and gRPC.

Each drill breaks one site at its door (the bytes it sends), as a crashed, slow, replaying or
forging site would, and checks the defined outcome (tests/multisite/test_faults.py):

* crashed: dropped after the deal; the run completes with more noise, or aborts on request;
* late: the same, once its reply misses the step's timeout;
* replayed (a reply of an earlier run or step re-sent): refused, no release;
* forged (a reply naming another site): refused, no release.
"""

import math
import threading
import warnings

import numpy as np
import pytest

from dpmoments.exceptions import NotPrivateWarning
from dpmoments.multisite import (Aggregator, MessageRefused, Plan, ProtocolAborted, Query, Reply, SiteError, deal,
                                 from_wire, irls, release_tensor_moments, run_cape, run_conventional, run_plan,
                                 run_pooled, to_wire)
from dpmoments.multisite.api import analyse

from .conftest import make_sites
from .transports import KINDS, factory, make

pytestmark = pytest.mark.parametrize("kind", KINDS)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        yield


def test_noise_off_equals_pooled_and_seeded_runs_agree_across_transports(kind):
    sites = make_sites(3, sizes=[50, 120, 300])
    rel, rep = run_cape(sites, epsilon=math.inf, delta=1e-5, rng=0, transport=factory(kind))
    pooled, _ = run_pooled(sites, epsilon=math.inf, delta=1e-5)
    np.testing.assert_allclose(rel.second_moment, pooled.second_moment, atol=1e-12)
    a, _ = run_cape(sites, epsilon=1.0, delta=1e-5, rng=4, transport=factory(kind))
    b, rep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=4)
    np.testing.assert_array_equal(a.second_moment, b.second_moment)  # the same bytes, whatever carried them
    assert rep.guarantee.epsilon == pytest.approx(1.0, rel=1e-6)


def test_multi_step_analyses_run_on_every_transport(kind):
    xy = make_sites(3, y=True, n=400)
    fit, rep = irls(xy, epsilon=1.0, delta=1e-6, n_iter=3, w_max=5.0, rng=0, transport=factory(kind))
    ref, _ = irls(xy, epsilon=1.0, delta=1e-6, n_iter=3, w_max=5.0, rng=0)
    np.testing.assert_array_equal(fit.coef, ref.coef)
    mom, rep = release_tensor_moments(make_sites(3), model="mog", epsilon=1.0, delta=1e-5, sigma2=0.01, rng=1,
                                      transport=factory(kind))
    assert mom.m3.shape == (3, 3, 3) and rep.guarantee.epsilon == pytest.approx(1.0, rel=1e-6)
    rel, rep = analyse(make_sites(3, y=True), "select", epsilon=1.0, delta=1e-5, rng=0, transport=factory(kind))
    assert rel.second_moment.shape == (4, 4)


def _wrap(kind, sites, name, fault):
    """For the API's ``transport=``: a transport of ``kind`` where ``name``'s door is broken by ``fault``."""
    def link(_):
        handlers = {s.name: s.handle for s in sites}
        handlers[name] = fault(handlers[name])
        return make(kind, handlers)
    return link


def _dealt(sites):
    plan = Plan.build("cape", [s.name for s in sites], [s.n for s in sites], n_features=3, row_norm=1.0,
                      epsilon=1.0, delta=1e-5)
    for s, b in zip(sites, deal(plan, rng=0).values()):
        s.accept(b, rng=1)
    return plan


def _crash(handle):
    def crashed(data):
        raise RuntimeError("the site's process died")
    return crashed


def _late(released, delay=3.5):
    """A door that answers a query ``delay`` s late, or once ``released`` is set (the drill is over).

    The network transports time the step out while the door waits for ``released``; the in-process one
    asks in this thread, so it sees the whole delay, which need only exceed the step's timeout."""
    def fault(handle):
        def slow(data):
            if isinstance(from_wire(data), Query):
                released.wait(delay)
            return handle(data)
        return slow
    return fault


def test_crashed_site_is_dropped_with_more_noise_or_aborts(kind):
    sites = make_sites(4)
    rel, rep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, transport=_wrap(kind, sites, "site-3", _crash),
                        target="per-site")
    _, pooled = run_pooled(sites[:3], epsilon=1.0, delta=1e-5)
    assert rep.dropped == (("site-3", "after-deal"),) and rel.n == 600
    assert rep.extra_std > 0 and rep.aggregate_std >= pooled.aggregate_std * (1 - 1e-12)
    with pytest.raises(ProtocolAborted, match="abort"):
        run_cape(make_sites(4), epsilon=1.0, delta=1e-5, rng=0, on_dropout="abort",
                 transport=_wrap(kind, sites, "site-3", _crash))


def test_late_site_is_a_dropout(kind):
    sites = make_sites(3)
    plan = _dealt(sites)
    released = threading.Event()
    link = _wrap(kind, sites, "site-1", _late(released))(None)
    try:
        # 2.5 s: far above a healthy site's step latency under load (tens of ms), far below the late one's delay.
        rep = run_plan(plan, link, rng=0, timeout_s=2.5).reports[0]
    finally:
        released.set()  # the late reply arrives now, after the step's timeout: closing need not wait out the delay
        link.close()
    assert rep.dropped == (("site-1", "after-deal"),) and rep.extra_std > 0
    assert any("site-1" in n and "timeout" in n for n in rep.notes)


def test_replayed_reply_is_refused(kind):
    sites = make_sites(3)
    kept = {}

    def replaying(handle):
        def replay(data):
            out = handle(data)
            if isinstance(from_wire(out), Reply):  # answers its hellos honestly, replays its first reply
                return kept.setdefault("first", out)
            return out
        return replay

    link = _wrap(kind, sites, "site-2", replaying)
    run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, transport=link)  # the first run records site-2's reply
    with pytest.raises(MessageRefused, match="'site-2'.*(wrong-plan|stale-round)"):
        run_cape(sites, epsilon=1.0, delta=1e-5, rng=1, transport=link)
    kept.clear()
    xy = make_sites(3, y=True)
    with pytest.raises(MessageRefused, match="'site-2'.*stale-round"):  # within a run: a later IRLS step
        irls(xy, epsilon=1.0, delta=1e-6, n_iter=2, w_max=5.0, rng=0, transport=_wrap(kind, xy, "site-2", replaying))


def test_forged_reply_naming_another_site_is_refused(kind):
    sites = make_sites(3)

    def forging(handle):
        def forge(data):
            msg = from_wire(handle(data))
            if isinstance(msg, Reply):
                msg = Reply("site-0", msg.plan, msg.step, msg.round_id, msg.n, msg.n_features, msg.values)
            return to_wire(msg)
        return forge

    with pytest.raises(MessageRefused, match="'site-1'.*forged"):
        run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, transport=_wrap(kind, sites, "site-1", forging))


def test_a_site_answers_each_step_once_on_every_transport(kind):
    sites = make_sites(3)
    plan = _dealt(sites)
    link = make(kind, {s.name: s.handle for s in sites})
    try:
        # Generous timeouts: a healthy site on a loaded machine must not be dropped (it answers within ms when idle).
        assert link.connect(plan, 60.0) == list(plan.sites)
        agg = Aggregator(plan, rng=0)
        first = link.ask(agg.open_step(0, plan.sites), 60.0)
        again = link.ask(agg.open_step(0, plan.sites), 60.0)
    finally:
        link.close()
    assert all(isinstance(r, Reply) for r in first.values())
    assert all(isinstance(r, SiteError) and r.code == "already-answered" for r in again.values())
    assert all(s.ledger.refusals[-1]["reason"] == "already-answered" for s in sites)


def test_conventional_runs_on_every_transport(kind):
    rel, rep = run_conventional(make_sites(2), epsilon=1.0, delta=1e-5, rng=0, transport=factory(kind))
    assert rel.n == 400 and rep.guarantee.epsilon == pytest.approx(1.0, rel=1e-6)
