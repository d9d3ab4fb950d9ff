"""The gRPC transport at scale: more sites than the old threaded server's 64, and a loud refusal past its limit."""

import pytest

pytest.importorskip("grpc", reason="grpcio is not installed")

from dpmoments.multisite import ProtocolAborted, run_cape  # noqa: E402
from dpmoments.multisite.grpc_transport import GrpcSite, GrpcTransport  # noqa: E402

from .conftest import make_sites  # noqa: E402
from .transports import closing_together  # noqa: E402


def _served(sites, max_sites):
    """A transport on a loopback port (no TLS: names on their word) with every site dialling in."""
    link = GrpcTransport("127.0.0.1:0", insecure=True, max_sites=max_sites)
    clients = [GrpcSite(s.handle, f"127.0.0.1:{link.port}", s.name, insecure=True, retry_s=60).start() for s in sites]
    return closing_together(link, clients)


def _run(sites, link):
    try:
        return run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, transport=lambda alive: link)
    finally:
        link.close()


def test_a_site_beyond_the_limit_is_refused_and_the_run_stops_saying_so():
    sites = make_sites(5, n=50)
    with pytest.raises(ProtocolAborted, match=r"serves at most 3 sites at once and refused 2 of the plan's 5"):
        _run(sites, _served(sites, max_sites=3))


def test_seventy_sites_all_join_where_the_threaded_server_took_64():
    sites = make_sites(70, n=30)
    release, report = _run(sites, _served(sites, max_sites=4096))
    assert release.n == 70 * 30
    assert report.dropped == ()


def test_queries_are_built_as_there_is_room_and_replies_taken_as_they_come(monkeypatch):
    """A step's queries (each carrying the aggregator's d x d share) were all queued before the first went out:
    the aggregator held S of them. With room for one at a time it holds a few messages, and the release is the
    in-process one byte for byte."""
    from dpmoments.multisite import grpc_transport

    monkeypatch.setattr(grpc_transport, "SEND_WINDOW", 1)  # one query waits to be sent at a time
    sites = make_sites(24, n=30)
    link = _served(sites, max_sites=4096)
    largest = []
    each = link.exchange_each

    def watched(messages, timeout_s):
        def sizes():
            for site, data in messages:
                largest.append(len(data))
                yield site, data
        return each(sizes(), timeout_s)

    link.exchange_each = watched
    release, report = _run(sites, link)
    assert report.dropped == () and len(largest) > 24
    assert link.peak_held <= 12 * (16 + max(largest)) < 24 * min(largest)  # all queued at once: 23 here
    reference, _ = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    assert release.second_moment.tobytes() == reference.second_moment.tobytes()
