"""Hundreds of sites: a CAPE covariance with S sites in process and over gRPC on loopback; bytes per site.

Issue 28's targets: a simulated deployment of 1000 sites (in process) and of 200 sites over gRPC on
localhost completes, and a site sends and receives at most 4.2 d^2 + O(d) bytes per round (a
symmetric matrix travels as its d(d+1)/2 upper-triangle entries). Bytes are counted on the
transport: every query's and every reply's wire bytes, per site and per round, each way. The gRPC
run is plain TCP on 127.0.0.1 (no TLS: certificates for hundreds of sites would time the CA, not
the transport). Times are wall seconds of one run (the sites are threads of this process).

Also: the aggregator's peak memory while it runs a plan over S dealt sites (tracemalloc, above what
the sites already hold: it must not grow with S), and the size of one site's share file as S grows.
"""

import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from .timing import Table, log

D = 50
ROWS = 100            # rows per site (more than d: a site with at most d rows is refused by its egress guard)
IN_PROCESS_SITES = 200   # at d = 50; the 1000-site run is ACCOUNTING_SITES' (d = 5)
GRPC_SITES = 200
MEMORY_SITES = (10, 50, 200)
GRPC_MEMORY_D, GRPC_MEMORY_SITES = 200, (50, 200)  # a query is 161 kB: 200 of them are 32 MB, 8x SEND_WINDOW
ACCOUNTING_SITES = (200, 1000)  # CAPE, d = 5: the joint-view accounting against S (issue 28's 1000 sites)
ACCOUNTING_NOTE = ("The accounting (the plan met against the aggregator, every site's ledger charge, the report's "
                   "'aggregator alone' and 'all other sites colluding' lines) reads every site's Delta_M from one "
                   "factorisation per plan and survivor set: O(S^3) in all. Solved site by site (one conditional "
                   "covariance per site and line, as before) it was O(S^4): the 'per site' column, same numbers.")


def _sites(n_sites, rng):
    return [_site(i, D, rng) for i in range(n_sites)]


class _Counting:
    """A transport's ``exchange_each`` wrapped to count the bytes each way, as the messages pass."""

    def __init__(self, transport):
        self.transport, self.down, self.up, self.rounds = transport, 0, 0, 0
        self._exchange_each = transport.exchange_each
        transport.exchange_each = self.exchange_each

    def exchange_each(self, messages, timeout_s):
        step = {}  # whether this exchange is the hello (who is there: no matrix travels), from its first query

        def counted():
            for site, m in messages:  # each query counted as the transport takes it (they stream)
                if step.setdefault("hello", _is_hello(m)) is False:
                    self.down += len(m)
                yield site, m

        for site, reply in self._exchange_each(counted(), timeout_s):
            if step.get("hello") is False and isinstance(reply, bytes):
                self.up += len(reply)
            yield site, reply
        self.rounds += step.get("hello") is False


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


def _dealt(n_sites, d, rng):
    """``n_sites`` sites of ``ROWS`` rows at ``d`` features, a CAPE plan and its shares accepted."""
    from dpmoments.multisite import Plan, deal

    sites = [_site(i, d, rng) for i in range(n_sites)]
    plan = Plan.build("cape", [s.name for s in sites], [s.n for s in sites], n_features=d, row_norm=1.0,
                      epsilon=1.0, delta=1e-5, run_id="memory")  # one plan in every process (_grpc_memory)
    for s, bundle in zip(sites, deal(plan, rng=1).values()):
        s.accept(bundle, rng=2, throwaway=True)  # a benchmark's sites answer this run only: no records written
    return sites, plan


def _site(i, d, rng):
    from dpmoments.multisite import Site

    return Site(f"site-{i:04d}", rng.normal(size=(ROWS, d)) / np.sqrt(d), row_norm=1.0)


def _aggregator_memory(n_sites, d):
    """Peak bytes traced while ``run_plan`` runs, above what the dealt sites hold before it starts: while the
    messages travel (each step's queries out, replies in, checked and summed) and while the round's release
    and report are made (``finish_round``)."""
    from dpmoments.multisite import InProcessTransport

    sites, plan = _dealt(n_sites, d, np.random.default_rng(n_sites))
    for s in sites:
        s._exact("second")  # the site's own cache of its moment (a site's memory, in this process here)
    return _measured_run(plan, InProcessTransport(sites))


def _measured_run(plan, link):
    """``(messages peak, report peak, seconds, released n)`` of ``run_plan(plan, link)`` (module docstring)."""
    import importlib

    from dpmoments.multisite import run_plan

    run_module = importlib.import_module("dpmoments.multisite.run")
    peaks, finish = {}, run_module.finish_round

    def measured_finish(*args, **kwargs):
        peaks["messages"] = tracemalloc.get_traced_memory()[1] - peaks["base"]
        tracemalloc.reset_peak()
        out = finish(*args, **kwargs)
        peaks["report"] = tracemalloc.get_traced_memory()[1] - peaks["base"]
        return out

    run_module.finish_round = measured_finish
    try:
        tracemalloc.start()
        peaks["base"] = tracemalloc.get_traced_memory()[0]
        t0 = time.perf_counter()
        result = run_plan(plan, link, rng=0, wait_s=300.0)
        seconds = time.perf_counter() - t0
    finally:
        tracemalloc.stop()
        run_module.finish_round = finish
    return peaks["messages"], peaks["report"], seconds, result.releases[0].n


# The sites of _grpc_memory, in a process of their own (their memory is not the aggregator's).
_SITES_SCRIPT = """
import sys
import numpy as np
from benchmarks.sites_scale import _dealt
from dpmoments.multisite.grpc_transport import GrpcSite
n, d, port = (int(a) for a in sys.argv[1:4])
sites, _ = _dealt(n, d, np.random.default_rng(n))
clients = [GrpcSite(s.handle, f"127.0.0.1:{port}", s.name, insecure=True, retry_s=1.0).start() for s in sites]
sys.stdin.read()  # until the aggregator's side is done
for c in clients:
    c.stop()
"""


def _grpc_memory(n_sites, d, window):
    """The aggregator's peaks over gRPC on loopback with ``window`` bytes of queries queued at most (the sites in
    a child process), and the most message bytes the transport held at once (``peak_held``)."""
    import os
    import subprocess
    import sys

    from dpmoments.multisite import Plan
    from dpmoments.multisite import grpc_transport

    plan = Plan.build("cape", [f"site-{i:04d}" for i in range(n_sites)], [ROWS] * n_sites, n_features=d,
                      row_norm=1.0, epsilon=1.0, delta=1e-5, run_id="memory")  # the plan _dealt builds in the child
    link = grpc_transport.GrpcTransport("127.0.0.1:0", insecure=True)
    child = subprocess.Popen([sys.executable, "-c", _SITES_SCRIPT, str(n_sites), str(d), str(link.port)],
                             stdin=subprocess.PIPE, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    window_was, grpc_transport.SEND_WINDOW = grpc_transport.SEND_WINDOW, window
    try:
        messages, report, seconds, n = _measured_run(plan, link)
    finally:
        grpc_transport.SEND_WINDOW = window_was
        link.close()
        child.stdin.close()
        child.wait(timeout=120)
    return messages, report, seconds, n, link.peak_held


def _accounting(n_sites, d=5, per_site=False):
    """Seconds of a CAPE plan's joint-view accounting at ``n_sites`` sites: build (met against the aggregator),
    the report's two collusion lines, and a whole in-process run (``run_cape``, d features).

    ``per_site``: the lines solved site by site, one conditional covariance each (the accounting before it
    was read from one factorisation per plan); returns the largest relative difference from the fast lines.
    """
    import math

    from dpmoments.multisite import Plan, run_cape
    from dpmoments.multisite.noise import guarantee_from_ratio

    names, n = [f"s{i:04d}" for i in range(n_sites)], [ROWS] * n_sites
    t0 = time.perf_counter()
    plan = Plan.build("cape", names, n, n_features=d, row_norm=1.0, epsilon=1.0, delta=1e-5)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    lines = plan.collusion
    collusion = time.perf_counter() - t0
    out = {"build": build, "collusion": collusion, "epsilon": (lines["aggregator_alone"].epsilon,
                                                              lines["all_other_sites"][1].epsilon)}
    if per_site:
        noise, t0 = plan.noise[0], time.perf_counter()
        worst = []
        for c in (0, n_sites - 1):
            ratio = max(noise._mahalanobis_direct(s, () if c == 0 else tuple(t for t in range(n_sites) if t != s),
                                                  tuple(range(n_sites))) for s in range(n_sites))
            worst.append(guarantee_from_ratio(ratio, noise.deltas[0]).epsilon)
        out["collusion_per_site"] = time.perf_counter() - t0
        out["difference"] = max(abs(a - b) / b for a, b in zip(out["epsilon"], worst))
        return out
    sites = [_site(i, d, np.random.default_rng(i)) for i in range(n_sites)]
    t0 = time.perf_counter()
    release, report = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    out.update(run=time.perf_counter() - t0, n=release.n, run_epsilon=report.guarantee.epsilon)
    assert math.isfinite(out["run_epsilon"])
    return out


def _bytes_per_message(d, n_sites=5):
    """Bytes down and up per site in the moment round at ``d`` features (in process)."""
    from dpmoments.multisite import InProcessTransport, run_plan

    sites, plan = _dealt(n_sites, d, np.random.default_rng(d))
    link = InProcessTransport(sites)
    count = _Counting(link)
    run_plan(plan, link, rng=0)
    per = max(1, count.rounds) * n_sites
    return count.down / per, count.up / per


def _share_size(n_sites, d, root):
    from dpmoments.multisite import Plan, deal_files

    plan = Plan.build("cape", [f"s{i:04d}" for i in range(n_sites)], [ROWS] * n_sites, n_features=d, row_norm=1.0,
                      epsilon=1.0, delta=1e-5)
    paths = deal_files(plan, root / str(n_sites), rng=0)
    return paths["s0000"].stat().st_size, paths["plan"].stat().st_size


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
    ]
    accounting = Table("Joint-view accounting against S: CAPE, d = 5, 100 rows each (seconds)",
                       ["S", "build", "collusion lines", "collusion lines, per site", "largest relative difference",
                        "whole in-process run", "released n"])
    for n_sites in (20,) if quick else ACCOUNTING_SITES:
        log(f"accounting: {n_sites} sites")
        fast, old = _accounting(n_sites), _accounting(n_sites, per_site=True) if n_sites <= 200 else None
        accounting.rows.append([n_sites, f"{fast['build']:.1f}", f"{fast['collusion']:.1f}",
                                "" if old is None else f"{old['collusion_per_site']:.1f}",
                                "" if old is None else f"{old['difference']:.1e}", f"{fast['run']:.1f}", fast["n"]])
    accounting.notes.append(ACCOUNTING_NOTE)
    sizes = Table("Bytes per site per round against d (in process, 5 sites): the target is 4.2 d^2 + O(d)",
                  ["d", "bytes down / site / round", "bytes up / site / round", "4 d(d+1)", "each way / d^2",
                   "header (bytes beyond 4 d(d+1))"])
    for d in (50, 200):
        log(f"bytes per message at d = {d}")
        down, up = _bytes_per_message(d)
        tri = 4 * d * (d + 1)
        sizes.rows.append([d, f"{down:,.0f}", f"{up:,.0f}", f"{tri:,}", f"{max(down, up) / d ** 2:.3f}",
                           f"{max(down, up) - tri:,.0f}"])
    memory = Table("The aggregator's peak memory over S sites (in process): it sums each reply as it arrives",
                   ["d", "S", "messages: peak MiB", "messages: peak / one d x d matrix",
                    "messages: growth per added site / one d x d matrix", "report: peak MiB", "seconds",
                    "released n"])
    for d, counts in ((D, MEMORY_SITES[:2] if quick else MEMORY_SITES), (200, MEMORY_SITES[:2])):
        before = None
        for n_sites in counts:
            log(f"aggregator memory: {n_sites} sites, d = {d}")
            messages, report, seconds, n = _aggregator_memory(n_sites, d)
            growth = "" if before is None else f"{(messages - before[1]) / (n_sites - before[0]) / (8 * d * d):.3f}"
            memory.rows.append([d, n_sites, f"{messages / 2**20:.2f}", f"{messages / (8 * d * d):.1f}", growth,
                                f"{report / 2**20:.2f}", f"{seconds:.1f}", n])
            before = (n_sites, messages)
    memory.notes += [
        "tracemalloc's peaks while `run_plan` runs, less what was traced when it started: the sites, their rows, "
        "their shares and their own cached moments, which the sites hold, not the aggregator (the sites are objects "
        "of this process here). 'messages': from the start until the round's release is made (every query out, "
        "every reply checked and summed, each site making its reply one at a time); it grows with S but not with "
        "d (compare the d = 200 rows): a few KB per site of bookkeeping (the transcript, one line per message, "
        "shapes only; the aggregator's saved generator state and a digest per reply, for the replay check) and "
        "the S x S joint-view arithmetic each site does for its own ledger charge (the sites run in this process "
        "here). No site's message is kept. "
        "'report': making the release and the report, whose joint-view accounting holds S x S matrices "
        "(O(S^2), whatever d).",
    ]
    grpc = Table(f"The aggregator's peak memory over gRPC on 127.0.0.1, d = {GRPC_MEMORY_D}: a step's queries "
                 "are built as there is room (SEND_WINDOW), each reply summed as it arrives",
                 ["S", "queries queued at most", "messages: peak MiB", "messages: peak / one query",
                  "transport: most message bytes held / one query", "report: peak MiB", "seconds", "released n"])
    query = 4 * GRPC_MEMORY_D * (GRPC_MEMORY_D + 1) + 300  # the upper triangle and a JSON header (table above)
    for n_sites in GRPC_MEMORY_SITES[:1] if quick else GRPC_MEMORY_SITES:
        for label, window in (("SEND_WINDOW (4 MiB)", 4 << 20), ("all at once (no window)", 1 << 62)):
            log(f"gRPC aggregator memory: {n_sites} sites, d = {GRPC_MEMORY_D}, {label}")
            messages, report, seconds, n, held = _grpc_memory(n_sites, GRPC_MEMORY_D, window)
            grpc.rows.append([n_sites, label, f"{messages / 2**20:.1f}", f"{messages / query:.1f}",
                              f"{held / query:.1f}", f"{report / 2**20:.1f}", f"{seconds:.1f}", n])
    grpc.notes += [
        "The sites run in a child process (GrpcSite threads), so tracemalloc here traces the aggregator's side "
        "alone: its gRPC server, the frames queued for sending, the replies not yet taken, the checks and the "
        "running sums. 'all at once' sets SEND_WINDOW above any step's queries: every query of a step is built "
        "and queued before the first is handed to gRPC, as before the window. 'transport: most message bytes "
        "held': GrpcTransport.peak_held (queries queued, replies not yet taken). gRPC's own C buffers are not "
        "traced.",
    ]
    shares = Table(f"One site's share file and the public plan.json against S, d = {D}",
                   ["S", "share file bytes", "plan.json bytes"])
    with tempfile.TemporaryDirectory() as root:
        for n_sites in MEMORY_SITES:
            log(f"share files: {n_sites} sites")
            share, plan = _share_size(n_sites, D, Path(root))
            shares.rows.append([n_sites, f"{share:,}", f"{plan:,}"])
    shares.notes += ["The plan travels once, as plan.json (public; it grows as S^2: each round's noise plan holds "
                     "the S x S factors of the dealt shares); a share names it by digest and holds only its own e_s."]
    return [table, accounting, sizes, memory, grpc, shares]
