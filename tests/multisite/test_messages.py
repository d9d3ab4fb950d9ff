"""Messages, the egress guard, the wire format, and what crosses it."""

import pickle

import numpy as np
import pytest

from dpmoments.multisite import (EgressRefused, NoiseShare, Query, Reply, SiteError, egress_guard, from_wire,
                                 run_cape, run_secure_aggregation, to_wire)

from .conftest import make_sites

PLAN = "ab" * 32


def _reply(value, statistic="second", n_features=3, **kw):
    return Reply(kw.pop("site", "a"), PLAN, 0, "r1-x", kw.pop("n", 50), n_features, {0: (statistic, value)})


def test_guard_refuses_data_rows():
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(EgressRefused, match="shaped like data rows"):
        egress_guard(X, 3, (3, 3))
    with pytest.raises(EgressRefused):
        _reply(X)
    with pytest.raises(EgressRefused):
        _reply(X, statistic="factor")
    with pytest.raises(EgressRefused):
        NoiseShare("a", 0, "second", X)


@pytest.mark.parametrize("payload, shape", [
    (np.ones((3, 3)), (3,)),          # wrong shape
    (np.ones(3, dtype=complex), (3,)),
    ([[1.0]], (1, 1)),                 # not an array
    (np.array([np.nan, 1.0, 1.0]), (3,)),
    (np.ones((3, 3)), (4, 4)),         # declared shape longer than d
])
def test_guard_refuses_other_payloads(payload, shape):
    with pytest.raises(EgressRefused):
        egress_guard(payload, 3, shape)


def test_messages_are_frozen_and_read_only():
    m = _reply(np.ones(3), statistic="cross")
    with pytest.raises(ValueError):
        m.value(0)[0] = 2.0
    with pytest.raises(AttributeError):
        m.n = 3


def test_site_cannot_be_pickled_and_hides_rows():
    site = make_sites(1)[0]
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(site)
    assert "X" not in vars(site) and "200" in repr(site)


def test_wire_round_trip_and_nothing_else_decodes():
    q = Query(PLAN, 2, "r7-abc", np.arange(3.0), {4: np.eye(3)})
    back = from_wire(to_wire(q))
    assert (back.plan, back.step, back.round_id) == (PLAN, 2, "r7-abc")
    np.testing.assert_array_equal(back.shares[4], np.eye(3))
    r = _reply(np.eye(3))
    np.testing.assert_array_equal(from_wire(to_wire(r)).value(0), np.eye(3))
    e = SiteError("a", PLAN, 0, "r1-x", "over-budget")
    assert from_wire(to_wire(e)).message == e.message
    for junk in (b"", b"hello", pickle.dumps({"kind": "Reply"}), to_wire(r)[:-3], to_wire(r) + b"x"):
        with pytest.raises(ValueError):
            from_wire(junk)


def test_every_message_names_its_plan_and_round():
    with pytest.raises(ValueError, match="round"):
        Reply("a", PLAN, 0, None, 5, 3, {0: ("second", np.eye(3))})
    with pytest.raises(ValueError, match="plan"):
        Query("not-a-digest", 0, "r1")
    with pytest.raises(ValueError, match="code"):
        SiteError("a", PLAN, 0, "r1", "could not convert string 'JANE-DOE-4711'")


@pytest.mark.parametrize("runner", [run_cape, run_secure_aggregation])
def test_transport_spy_sees_only_statistic_shapes(runner):
    sites = make_sites(4, d=3)
    _, report = runner(sites, epsilon=1.0, delta=1e-5, rng=0)
    assert report.transcript
    for hop in report.transcript:
        assert all(shape == (3, 3) for shape in hop["shapes"])
        assert hop["type"] in ("Reply", "Query", "Bundle")
    senders = {h["from"] for h in report.transcript if h["type"] == "Reply"}
    assert senders == {s.name for s in sites}
    # e_s goes from the dealer to the site only, never through the aggregator
    assert all(h["to"] != "aggregator" for h in report.transcript if h["from"] == "noise-generator")


def test_a_symmetric_matrix_travels_as_its_upper_triangle():
    d = 50
    A = np.random.default_rng(0).normal(size=(d, d))
    S = A + A.T
    reply = Reply(site="a", plan="0" * 64, step=0, round_id="r1", n=10, n_features=d, values={0: ("second", S)})
    data = to_wire(reply)
    back = from_wire(data)
    assert np.array_equal(back.value(0), S)
    payload = 8 * d * (d + 1) // 2
    assert payload < len(data) < payload + 400  # d(d+1)/2 float64s and a short header, not d*d
    query = Query(plan="0" * 64, step=0, round_id="r1", shares={0: S})
    assert np.array_equal(from_wire(to_wire(query)).shares[0], S) and len(to_wire(query)) < payload + 400
    factor = A[:, :3]  # not square: sent whole
    assert np.array_equal(from_wire(to_wire(Reply(site="a", plan="0" * 64, step=0, round_id="r1", n=10,
                                                  n_features=d, values={0: ("factor", factor)}))).value(0), factor)
