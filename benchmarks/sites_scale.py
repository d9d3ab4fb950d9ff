"""Hundreds of sites: a CAPE covariance with S sites in process and over gRPC on loopback; bytes per site.

Issue 28's targets: a simulated deployment of 1000 sites (in process) and of 200 sites over gRPC on
localhost completes, and a site sends and receives at most 4.2 d^2 + O(d) bytes per round (a
symmetric matrix travels as its d(d+1)/2 upper-triangle entries). Bytes are counted on the
transport: every query's and every reply's wire bytes, per site and per round, each way. The gRPC
run is plain TCP on 127.0.0.1 (no TLS: certificates for hundreds of sites would time the CA, not
the transport). Times are wall seconds of one run (the sites are threads of this process).
"""

import time

import numpy as np

from .timing import Table, log

D = 50
ROWS = 100            # rows per site (more than d: a site with at most d rows is refused by its egress guard)
IN_PROCESS_SITES = 1000
GRPC_SITES = 200


def _sites(n_sites, rng):
    from dpmoments.multisite import Site

    return [Site(f"site-{i:04d}", rng.normal(size=(ROWS, D)) / np.sqrt(D), row_norm=1.0) for i in range(n_sites)]


class _Counting:
    """A transport's ``exchange`` wrapped to count the bytes each way."""

    def __init__(self, transport):
        self.transport, self.down, self.up, self.rounds = transport, 0, 0, 0
        self._exchange = transport.exchange
        transport.exchange = self.exchange

    def exchange(self, messages, timeout_s):
        replies = self._exchange(messages, timeout_s)
        if all(_is_hello(m) for m in messages.values()):
            return replies  # who is there: no matrix travels
        self.down += sum(len(m) for m in messages.values())
        self.up += sum(len(r) for r in replies.values() if isinstance(r, bytes))
        self.rounds += 1
        return replies


def _is_hello(data):
    from dpmoments.multisite import from_wire

    try:
        from_wire(data, kinds=("Hello",))
    except ValueError:
        return False
    return True


def _run(sites, transport):
    from dpmoments.multisite import run_cape

    counting = {}

    def make(alive):
        link = transport(alive)
        counting["c"] = _Counting(link)
        return link

    t0 = time.perf_counter()
    release, _ = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, transport=make)
    return time.perf_counter() - t0, release, counting["c"]


def _grpc(sites):
    from dpmoments.multisite.grpc_transport import GrpcSite, GrpcTransport

    def make(alive):
        link = GrpcTransport("127.0.0.1:0", insecure=True)
        clients = [GrpcSite(s.handle, f"127.0.0.1:{link.port}", s.name, insecure=True).start() for s in sites]
        close = link.close

        def close_all():
            for c in clients:
                c.stop()
            close()

        link.close = close_all
        return link

    return make


def run(quick=False):
    from dpmoments.multisite import InProcessTransport

    rng = np.random.default_rng(0)
    table = Table(f"CAPE covariance across S sites, d = {D}, {ROWS} rows each: wall seconds and bytes per site "
                  "per round", ["transport", "S", "seconds", "released n", "bytes down (query) / site / round",
                                "bytes up (reply) / site / round", "each way / d^2"])
    cases = [("gRPC, 127.0.0.1", GRPC_SITES // (10 if quick else 1), _grpc),
             ("in process", IN_PROCESS_SITES // (10 if quick else 1), lambda sites: InProcessTransport)]
    for name, n_sites, transport in cases:
        log(f"{name}: {n_sites} sites")
        sites = _sites(n_sites, rng)
        seconds, release, count = _run(sites, transport(sites))
        per = max(1, count.rounds) * n_sites
        down, up = count.down / per, count.up / per
        table.rows.append([name, n_sites, f"{seconds:.1f}", release.n, f"{down:,.0f}", f"{up:,.0f}",
                           f"{max(down, up) / D ** 2:.2f}"])
    table.notes += [
        f"A symmetric d x d float64 matrix whole is 8 d^2 = {8 * D * D:,} bytes; its upper triangle 4 d(d+1) = "
        f"{4 * D * (D + 1):,} bytes. The rest of a message is its JSON header (plan digest, round id, names).",
        "Not done: the aggregator's memory still holds every reply of a step (the transports return a step's "
        "replies together), O(S d^2); the shares are O(d^2) each (the plan travels once, as plan.json).",
    ]
    return [table]
