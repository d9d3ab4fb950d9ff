"""Flower: a site that dies or restarts mid-step is noticed by its node's liveness, not by the step's timeout.

The SuperLink counts a node online while it heartbeats, and a site restarted with the same key comes
back as the same node with a new activation time. The aggregator's roll call (every second) treats a
pending message whose node went offline, or came back as a new session, as a crash; a site that
restarted between steps answers the next step (its ledger, on disk, refuses what it answered before).
"""

import threading
import time

import pytest

from dpmoments.multisite import Query, from_wire, run_plan

from .conftest import make_sites
from .test_drills import _dealt
from .transports import make

pytest.importorskip("flwr", reason="the Flower extra is not installed")


def _link(sites, hang=None):
    """A Flower transport (real ClientApp, real doors) whose grid reports each node's session from a dict."""
    from flwr.proto.node_pb2 import NodeInfo  # what the deployed grid's get_nodes() returns

    release = threading.Event()

    def hanging(handle):
        def dead(data):
            if isinstance(from_wire(data), Query):
                release.wait(30)  # the old SuperNode took the query and died with it
            return handle(data)
        return dead

    handlers = {s.name: (hanging(s.handle) if s.name == hang else s.handle) for s in sites}
    link = make("flower", handlers)
    session = {nid: "t0" for nid in link.grid.get_node_ids()}
    link.grid.get_nodes = lambda: [NodeInfo(node_id=n, last_activated_at=t) for n, t in session.items() if t]
    return link, session, release


@pytest.mark.parametrize("event", ["restarted", "offline"])
def test_a_node_that_restarts_or_dies_mid_step_is_dropped_at_once(event):
    sites = make_sites(3)
    plan = _dealt(sites)
    link, session, release = _link(sites, hang="site-1")
    node = 101  # site-1's node in the test grid

    def die():
        time.sleep(0.5)
        session[node] = "t1" if event == "restarted" else None

    try:
        threading.Thread(target=die, daemon=True).start()
        t0 = time.monotonic()
        rep = run_plan(plan, link, rng=0, timeout_s=30).reports[0]
        elapsed = time.monotonic() - t0
    finally:
        release.set()
        link.close()
    assert rep.dropped == (("site-1", "after-deal"),) and rep.extra_std > 0
    assert any("site-1" in n and "crashed" in n for n in rep.notes)
    assert elapsed < 10, f"waited {elapsed:.1f} s for a dead node (timeout 30 s)"


def test_a_site_restarted_between_steps_answers_the_next_step():
    from dpmoments.multisite import Aggregator

    sites = make_sites(3)
    plan = _dealt(sites)
    link, session, _ = _link(sites)
    try:
        assert link.connect(plan, 10.0) == list(plan.sites)
        session[101] = "t1"  # site-1 restarted after the hello, before the step
        replies = link.ask(Aggregator(plan, rng=0).open_step(0, plan.sites), 10.0)
    finally:
        link.close()
    assert all(type(r).__name__ == "Reply" for r in replies.values())
