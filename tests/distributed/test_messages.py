"""Messages, the egress guard, and what crosses the wire."""

import pickle

import numpy as np
import pytest

from dpmoments.distributed import (EgressRefused, FactorMessage, NoiseShare, SiteMessage, egress_guard, run_cape,
                                   run_secure_aggregation)

from .conftest import make_sites


def test_guard_refuses_data_rows():
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(EgressRefused, match="shaped like data rows"):
        egress_guard(X, 3, (3, 3))
    with pytest.raises(EgressRefused):
        SiteMessage("a", 50, "second", X, 3)
    with pytest.raises(EgressRefused):
        FactorMessage("a", 50, X, 3)
    with pytest.raises(EgressRefused):
        NoiseShare("a", "aggregator", "second", X)


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


def test_guard_refuses_non_symmetric_matrix_and_tensor():
    M = np.arange(9.0).reshape(3, 3)
    with pytest.raises(EgressRefused, match="symmetric"):
        SiteMessage("a", 10, "second", M, 3)
    with pytest.raises(EgressRefused, match="symmetric"):
        SiteMessage("a", 10, "third", np.arange(27.0).reshape(3, 3, 3), 3)


def test_messages_are_frozen_and_read_only():
    m = SiteMessage("a", 10, "cross", np.ones(3), 3)
    with pytest.raises(ValueError):
        m.value[0] = 2.0
    with pytest.raises(AttributeError):
        m.n = 3


def test_site_cannot_be_pickled_and_hides_rows():
    site = make_sites(1)[0]
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(site)
    assert "X" not in vars(site) and "200" in repr(site)


@pytest.mark.parametrize("run", [run_cape, run_secure_aggregation])
def test_transport_spy_sees_only_statistic_shapes(run):
    sites = make_sites(4, d=3)
    _, report = run(sites, epsilon=1.0, delta=1e-5, rng=0)
    assert report.transcript
    for hop in report.transcript:
        assert hop["shape"] == (3, 3)
        assert hop["type"] in ("SiteMessage", "NoiseShare")
    senders = {h["from"] for h in report.transcript if h["type"] == "SiteMessage"}
    assert senders == {s.name for s in sites}
    # e_s goes from the dealer to the site only, never through the aggregator
    assert all(h["to"] != "aggregator" for h in report.transcript if h["from"] == "noise-generator")
