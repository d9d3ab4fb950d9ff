"""The same covariance in memory, on threaded dask and on a ``distributed`` cluster of worker processes.

Issue 28's targets: through ``--scheduler`` a hive-partitioned Parquet directory and a Zarr store
larger than the workers' combined memory finish, with the in-memory path's exact sums (to
rounding); on the cluster the default run (private choices) costs no more passes over the data
than on one machine; and the default-to-public time ratio.

The data are bigger than the workers' memory by giving each worker a small ``memory_limit``
(:data:`WORKER_MEMORY`), not by writing data bigger than this shared machine's disk and time allow.
Each engine runs the public-bound release (``row_norm`` and a centre given: one pass) and the
library's defaults (private centre and bound). Passes on the cluster are
counted from the workers' own row reports (:data:`~dpmoments.data.dask_tables.PROGRESS_TOPIC`): rows
read / rows. Worker memory is each worker process's RSS, sampled every 0.2 s from here. Times are
wall seconds of one run each (the cluster's work is in other processes, so CPU time here would say
nothing); the default-to-public ratios are measured within one engine in the same run.
"""

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from .timing import Table, log

N, D = 6_000_000, 40          # 1.92 GB of float64: 2.1x the workers' combined memory_limit
ROW_GROUP = 50_000            # rows per Parquet row group (16 MB)
FILES = 16                    # Parquet files, under year=/site= directories
ZARR_CHUNK = 50_000           # rows per Zarr chunk
WORKERS, WORKER_MEMORY = 2, 450 * 2**20  # a worker process alone holds ~250 MiB (imports); dask pauses at 80%
ROW_NORM = 12.0
EPSILON, DELTA = 1.0, 1e-6


def _write(root, n, rng, offset=0.3):
    """The data (column ``j`` normal with sd from 0.5 to 2 and mean ``offset``) as a hive-partitioned Parquet
    directory and a Zarr store, written file by file (n a multiple of FILES)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zarr

    root.mkdir(parents=True, exist_ok=True)
    z = zarr.create_array(str(root / "data.zarr"), shape=(n, D), chunks=(ZARR_CHUNK, D), dtype="f8",
                          compressors=None)
    scales = np.linspace(0.5, 2.0, D)
    per_file = n // FILES
    for k in range(FILES):
        X = rng.normal(size=(per_file, D)) * scales + offset
        z[k * per_file:(k + 1) * per_file] = X
        folder = root / "lake" / f"year={2020 + k % 4}" / f"site=s{k // 4}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({f"x{j}": X[:, j] for j in range(D)}), folder / "part.parquet",
                       row_group_size=ROW_GROUP)


def _in_memory(root, n):
    """The Zarr store's rows in this process (the reference's input; loading is not timed)."""
    import zarr

    return np.asarray(zarr.open_array(str(root / "data.zarr"), mode="r")[:n])


def _estimator(kind):
    """A fresh estimator per fit (rng=None: a benchmark's noise needs no seed, and a reused one warns)."""
    from dpmoments.estimators import PrivateCovariance

    if kind == "public":
        return PrivateCovariance(epsilon=EPSILON, delta=DELTA, row_norm=ROW_NORM, center=np.zeros(D))
    return PrivateCovariance(epsilon=EPSILON, delta=DELTA)


class _ThreadedRows:
    """Rows read on one machine: the readers' own row report (``_report_rows``, which every block read calls)
    wrapped to count while the threaded scheduler runs (on a cluster the workers send it as an event)."""

    def __init__(self):
        from dpmoments.data import dask_tables

        self.count, self.module, self.original = 0, dask_tables, dask_tables._report_rows

    def _counted(self, block):
        self.count += int(block.shape[0])
        return self.original(block)

    def __enter__(self):
        self.module._report_rows = self._counted
        return self

    def __exit__(self, *exc):
        self.module._report_rows = self.original

    def take(self):
        out, self.count = self.count, 0
        return out


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


class _Rows:
    """Rows the workers report having read (their progress events)."""

    def __init__(self, client):
        from dpmoments.data.dask_tables import PROGRESS_TOPIC

        self.count, self.client, self.topic = 0, client, PROGRESS_TOPIC
        client.subscribe_topic(PROGRESS_TOPIC, self._add)

    def _add(self, event):
        self.count += int(event[1])

    def take(self):
        time.sleep(0.5)  # events are delivered asynchronously
        out, self.count = self.count, 0
        return out


class _PeakRss:
    """The largest RSS of each worker process, sampled every ``every`` seconds (0.2 s)."""

    def __init__(self, pids, every=0.2):
        import psutil

        self.every = every
        self.procs = {p: psutil.Process(p) for p in pids}
        self.peak = {p: 0 for p in pids}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.wait(self.every):
            for p, proc in self.procs.items():
                try:
                    self.peak[p] = max(self.peak[p], proc.memory_info().rss)
                except Exception:  # a worker restarted: its new process is not followed
                    pass

    def close(self):
        self.stop.set()
        self.thread.join()
        return max(self.peak.values()) / 2**20


def run(quick=False):
    """Large data (2.1x the workers' memory): exact sums and the public run; smaller: defaults against public."""
    root = Path(tempfile.mkdtemp(prefix="dpm-cluster-", dir=os.environ.get("DPM_BENCH_DIR")))
    try:
        big = _large(root / "large", N // 10 if quick else N)
        small = _defaults(root / "small", N // 100 if quick else N // 10)
        return big + small
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _cluster():
    import distributed

    log(f"LocalCluster: {WORKERS} worker processes, 1 thread, memory_limit {WORKER_MEMORY >> 20} MiB each")
    return distributed.LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                                    memory_limit=WORKER_MEMORY, dashboard_address=None, host="127.0.0.1",
                                    env={"OPENBLAS_NUM_THREADS": "1"})


def _sources(root):
    return {"Parquet directory (hive)": str(root / "lake"), "Zarr store": str(root / "data.zarr")}


def _large(root, n):
    """Data larger than the workers' memory: the public run on every engine, exact sums, the command line."""
    import dask
    import distributed

    from dpmoments.data.dask_tables import open_dask_table
    from dpmoments.moments import accumulate_moments
    from dpmoments.moments.dask_moments import dask_moment_sums

    log(f"writing {n} x {D} ({n * D * 8 / 1e9:.2f} GB) as Parquet and Zarr under {root}")
    _write(root, n, np.random.default_rng(0))
    X = _in_memory(root, n)
    times = Table(f"Public bound and centre (one pass), {n:,} x {D} ({X.nbytes / 2**30:.2f} GiB, "
                  f"{X.nbytes / (WORKERS * WORKER_MEMORY):.1f}x the workers' combined memory_limit): wall seconds",
                  ["engine", "source", "seconds", "passes", "exact sums: max |rel diff| of X^T X vs in memory"])
    ref = accumulate_moments(X, row_norm=ROW_NORM)
    t, _ = _timed(lambda: _estimator("public").fit(X))
    times.rows.append(["in memory (numpy)", "the rows in memory", f"{t:.1f}", "1", "(reference)"])
    with dask.config.set(scheduler="threads", num_workers=WORKERS):
        for label, path in _sources(root).items():
            log(f"threaded dask: {label}")
            t, _ = _timed(lambda: _estimator("public").fit(open_dask_table(path).X))
            times.rows.append([f"threaded dask ({WORKERS} threads)", label, f"{t:.1f}", "1", ""])
    with _cluster() as cluster, distributed.Client(cluster) as client:
        rows, peak = _Rows(client), _PeakRss(list(client.run(os.getpid).values()))
        for label, path in _sources(root).items():
            log(f"cluster: {label}")
            t, sums = _timed(lambda: dask_moment_sums(open_dask_table(path).X, row_norm=ROW_NORM))
            passes = rows.take() / n
            diff = np.max(np.abs(sums.xtx - ref.xtx)) / np.max(np.abs(ref.xtx))
            times.rows.append([f"distributed ({WORKERS} processes)", label, f"{t:.1f}", f"{passes:g}",
                               f"{diff:.1e} (n = {sums.n:,})"])
        cli = {label: _cli_pair(path, cluster.scheduler_address, root / label.split()[0]) for label, path in
               _sources(root).items()}
        worker_peak = peak.close()
    piece = _piece_memory(root / "lake")
    times.notes += [
        f"Workers: {WORKERS} processes x 1 thread, memory_limit {WORKER_MEMORY >> 20} MiB each (a worker process "
        f"alone holds ~250 MiB: dask pauses a worker at 80% of its limit). Peak RSS of a worker: {worker_peak:.0f} MiB.",
        "The cluster rows time `dask_moment_sums` (the pass the release makes), passes counted from the workers' "
        "row reports; the exact sums are compared with `accumulate_moments` of the same rows in memory.",
        *[f"The command line on the cluster, {label} (`dpmoments covariance PATH --scheduler ADDRESS --row-norm "
          f"{ROW_NORM:g} --center 0 --seed 0`, process start included): {c['cluster_s']:.1f} s, exit status "
          f"{c['cluster_rc']}; the same command with `--scheduler none` (read in this machine's process): "
          f"{c['local_s']:.1f} s, exit status {c['local_rc']}; max |rel diff| of the two covariance.npy: "
          f"{c['diff']:.1e}" for label, c in cli.items()],
        f"Reading one Parquet block ({piece['groups']} row groups, {piece['rows']:,} rows, {piece['mib']:.1f} MiB of "
        f"numbers) in a fresh process: numpy's peak {piece['numpy_x']:.2f}x the block's numbers (tracemalloc), "
        f"pyarrow's pool peak {piece['arrow_mib']:.1f} MiB (its batches); both together at most {piece['both_x']:.2f}x.",
    ]
    return [times]


def run_defaults(quick=False):
    """The defaults against the public run alone (the second table of ``cluster``), CPU and wall seconds, best of
    ``DPM_REPEAT`` (default 3) runs of each, taken in turn; ``DPM_ROWS`` rows (default 200,000; --quick 60,000)."""
    n = int(float(os.environ.get("DPM_ROWS", 60_000 if quick else 200_000)))
    n -= n % FILES
    root = Path(tempfile.mkdtemp(prefix="dpm-cluster-", dir=os.environ.get("DPM_BENCH_DIR")))
    try:
        return _defaults(root, n, repeat=int(os.environ.get("DPM_REPEAT", 3)))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _cpu_timed(fn, procs=()):
    """``(wall s, CPU s)`` of ``fn()``: this process's CPU (its threads, the threaded scheduler's and the local
    cluster's scheduler) plus that of the worker processes ``procs`` (psutil)."""
    def cpu():
        return time.process_time() + sum(sum(p.cpu_times()[:2]) for p in procs)

    c0, t0 = cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, cpu() - c0


def _pair(fit_public, fit_default, repeat, procs=(), counter=None, n=1):
    """Best (wall, CPU) of the public and the default fit over ``repeat`` runs each, in turn; their passes; the
    largest worker RSS (MiB, sampled every 20 ms) during each kind's fits, where ``procs`` are worker processes."""
    best, passes, peak = {"public": (np.inf, np.inf), "defaults": (np.inf, np.inf)}, {}, {}
    for _ in range(repeat):
        for kind, fit in (("public", fit_public), ("defaults", fit_default)):
            rss = _PeakRss([p.pid for p in procs], every=0.02) if procs else None
            wall, cpu = _cpu_timed(fit, procs)
            if rss is not None:
                peak[kind] = max(peak.get(kind, 0.0), rss.close())
            best[kind] = (min(best[kind][0], wall), min(best[kind][1], cpu))
            if counter is not None:
                passes[kind] = counter.take() / n
    return best, passes, peak


def _defaults(root, n, repeat=1):
    """The library's defaults (private centre and bound) against the public run, with their passes and the workers'
    memory. ``DPM_OFFSET`` (default 0.3) is every column's mean: at 0 the private location settles at its first
    step (one pass for the choices, one for the release); at 0.3 it takes a second step (a third pass)."""
    import dask
    import distributed
    import psutil

    from dpmoments.data.dask_tables import open_dask_table

    offset = float(os.environ.get("DPM_OFFSET", 0.3))
    log(f"writing {n} x {D} ({n * D * 8 / 1e9:.2f} GB) as Parquet and Zarr under {root}")
    _write(root, n, np.random.default_rng(1), offset)
    X = _in_memory(root, n)
    table = Table(f"The defaults (private choices) against the public run, {n:,} x {D} ({X.nbytes / 2**30:.2f} "
                  f"GiB), columns of mean {offset:g}: CPU and wall seconds, worker memory",
                  ["engine", "source", "public CPU s", "defaults CPU s", "defaults / public (CPU)", "public wall s",
                   "defaults wall s", "defaults / public (wall)", "passes (public, defaults)",
                   "worker peak RSS MiB (public, defaults)"])

    def row(engine, label, best, passes, peak):
        (pw, pc), (dw, dc) = best["public"], best["defaults"]
        table.rows.append([engine, label, f"{pc:.2f}", f"{dc:.2f}", f"{dc / pc:.2f}", f"{pw:.2f}", f"{dw:.2f}",
                           f"{dw / pw:.2f}", f"{passes['public']:g}, {passes['defaults']:g}" if passes
                           else "(over memory)", f"{peak['public']:.0f}, {peak['defaults']:.0f}" if peak else ""])

    def fits(source):
        return (lambda: _estimator("public").fit(source()), lambda: _estimator("defaults").fit(source()))

    row("in memory (numpy)", "the rows in memory", *_pair(*fits(lambda: X), repeat))
    counter = _ThreadedRows()
    with dask.config.set(scheduler="threads", num_workers=WORKERS), counter:
        for label, path in _sources(root).items():
            log(f"threaded dask: {label}")
            row(f"threaded dask ({WORKERS} threads)", label,
                *_pair(*fits(lambda: open_dask_table(path).X), repeat, counter=counter, n=n))
    with _cluster() as cluster, distributed.Client(cluster) as client:
        rows = _Rows(client)
        procs = [psutil.Process(p) for p in client.run(os.getpid).values()]
        for label, path in _sources(root).items():
            log(f"cluster: {label}")
            row(f"distributed ({WORKERS} processes)", label,
                *_pair(*fits(lambda: open_dask_table(path).X), repeat, procs, counter=rows, n=n))
        passes = _pass_costs(root, procs, repeat, offset)
    table.notes += [
        f"Each cell: the best of {repeat} run(s), the public and the default fit taken in turn. CPU: this process "
        "(its threads: the threaded scheduler's, the local cluster's scheduler) plus the worker processes' "
        "(psutil); wall: elapsed. On this shared two-core machine the CPU ratio is the one to read.",
        "passes: rows read / rows, from the readers' own row report of every block read: counted here on one "
        "machine (threaded dask), sent as the workers' events on the cluster. The defaults' passes are the private "
        "location's steps (the settled one also draws the row bound and sums the mean) and the release's, which "
        "also sums what clipping removed. On the cluster the files are read once: each worker keeps the blocks it "
        "parsed in unnamed files on its own disk while the release runs, and the later passes read them back there "
        "(`data/dask_spill.py`); the threaded scheduler reads the files on every pass.",
        "The in-memory time is of the array itself (its passes are over memory); threaded dask reads the files on "
        "every pass, the cluster a Parquet directory once and a Zarr store on every pass.",
        "Worker peak RSS: the largest resident memory of a worker process (its imports included) "
        "while the fits of each kind ran, sampled every 20 ms (psutil).",
    ]
    return [table, passes]


def _pass_costs(root, procs, repeat, offset):
    """What one pass of each kind costs on the cluster, against the public fit (the same CPU measure, best of
    ``repeat``, taken in turn): the private location's binned pass, the public release's and the default release's."""
    from dpmoments.data.dask_tables import open_dask_table
    from dpmoments.moments import SearchRange
    from dpmoments.moments.binned_sums import binned_pass
    from dpmoments.moments.clipping_bias import ExcessTap
    from dpmoments.moments.dask_moments import dask_moment_sums

    centre = np.full(D, offset)
    kinds = {
        "the public fit (reference)": lambda X: _estimator("public").fit(X),
        "binned pass of a location step or the row bound (counts and mean sums per bin)":
            lambda X: binned_pass(X, moment="mean", search=SearchRange(), center=centre),
        "the public release's pass (clipped moment sums)": lambda X: dask_moment_sums(X, row_norm=ROW_NORM,
                                                                                       center=centre),
        "the default release's pass (moment sums and the clipping loss)":
            lambda X: ExcessTap(X, centre, ROW_NORM).moment_sums(),
    }
    table = Table(f"One pass of each kind on the cluster ({WORKERS} processes): CPU seconds, and against the public "
                  "fit", ["source", "pass", "CPU s", "/ public fit"])
    for label, path in _sources(root).items():
        best = {k: np.inf for k in kinds}
        for _ in range(repeat):
            for k, fn in kinds.items():
                best[k] = min(best[k], _cpu_timed(lambda: fn(open_dask_table(path).X), procs)[1])
        reference = best["the public fit (reference)"]
        table.rows += [[label, k, f"{v:.2f}", f"{v / reference:.2f}"] for k, v in best.items()]
    table.notes.append(f"Best of {repeat}, each kind in turn, the same CPU measure as above (this process and the "
                       "workers'). The defaults make two binned passes (a location step that moves the centre "
                       "by more than a tenth of its bound takes a second) and the default release's pass.")
    return table


def _cli(path, scheduler, out):
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "dpmoments", "covariance", path, "--scheduler", scheduler, "--row-norm",
           f"{ROW_NORM:g}", "--center", "0", "--epsilon", str(EPSILON), "--delta", str(DELTA), "--out",
           str(out), "--quiet", "--no-figures", "--seed", "0"]
    return subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1")).returncode


def _cli_pair(path, address, root):
    """The command line on the cluster and here (same seed): the two covariances must agree to rounding."""
    root.mkdir(parents=True, exist_ok=True)
    log(f"the command line, --scheduler, on {path}")
    t_cluster, rc_cluster = _timed(lambda: _cli(path, address, root / "there"))
    log(f"the command line, --scheduler none, on {path}")
    t_local, rc_local = _timed(lambda: _cli(path, "none", root / "here"))
    diff = float("nan")
    if rc_cluster == rc_local == 0:
        there, here = np.load(root / "there" / "covariance.npy"), np.load(root / "here" / "covariance.npy")
        diff = float(np.max(np.abs(there - here)) / np.max(np.abs(here)))
    return dict(cluster_s=t_cluster, cluster_rc=rc_cluster, local_s=t_local, local_rc=rc_local, diff=diff)


_PIECE_SCRIPT = """
import json, sys, tracemalloc
import pyarrow as pa
from dpmoments.data.dask_tables import _plan, _read_piece, PIECE_BYTES
plan = _plan(sys.argv[1], None, None, None, True, PIECE_BYTES)
_read_piece(*plan["pieces"][-1], plan)  # first-use imports and caches are not the read's
pool = pa.proxy_memory_pool(pa.default_memory_pool())  # its own statistics: this read's only
pa.set_memory_pool(pool)
tracemalloc.start()
block = _read_piece(*plan["pieces"][0], plan)
numpy_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps(dict(groups=len(plan["pieces"][0][1]), rows=int(block.shape[0]), nbytes=int(block.nbytes),
                      numpy=numpy_peak, arrow=pool.max_memory())))
"""


def _piece_memory(lake):
    """What reading one Parquet block (row groups up to PIECE_BYTES of numbers) costs, in a fresh process."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _PIECE_SCRIPT, str(lake)], capture_output=True, text=True, check=True,
                         env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    m = json.loads(out.stdout)
    return dict(groups=m["groups"], rows=m["rows"], mib=m["nbytes"] / 2**20, numpy_x=m["numpy"] / m["nbytes"],
                arrow_mib=m["arrow"] / 2**20, both_x=(m["numpy"] + m["arrow"]) / m["nbytes"])
