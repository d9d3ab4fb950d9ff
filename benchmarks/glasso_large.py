"""Graphical lasso at very large p: one solve, a 20-value warm path, time and peak memory.

The AR(2) S of ``benchmarks.anchors`` (exact, n = 10p up to p = 2000, 2p above), λ = 0.1,
penalised diagonal, tol 1e-7. Each p runs in a fresh process that first makes S, so the
memory reported is what the solver adds on top of S (peak of RssAnon above its value with
S in memory, sampled every millisecond), in units of one p x p float64 matrix. The solver's
outputs are two such matrices (the precision and the dual W): "one copy beyond S" would be
that and nothing else. The path is :func:`iter_graphical_lasso_path` (each solution dropped
once the next is warm-started from it), geometric from max|S_ij| (i ≠ j) down to 0.1, run
twice: as it returns dense results (a precision and a dual per penalty) and with
``sparse=True`` (CSR precisions, the duals kept and reused inside the path).

``python -m benchmarks glasso_large [--quick]`` (quick: p = 500, 1000). The environment variable
``DPMOMENTS_BENCH_P`` (e.g. ``2000,5000``) runs only those p: the p = 10000 row takes about half
an hour on a 2-core machine.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .timing import Table, log

SIZES = [2000, 5000, 10000]
QUICK_SIZES = [500, 1000]
ALPHA = 0.1
TARGET = 5.0  # the 20-value path against one solve (issue 18)


def _probe(p, what, cache):
    """In a fresh process: time and measure one solve or the path on S. Prints JSON.

    S is made once per p and saved to ``cache`` (an ``.npy`` path): at p = 10000 making it takes minutes.
    """
    from dpmoments.solvers import graphical_lasso, iter_graphical_lasso_path

    from .anchors import ar2_sample_cov
    from .timing import peak_anonymous_memory

    n = 10 * p if p <= 2000 else 2 * p
    if os.path.exists(cache):
        S = np.load(cache)
    else:
        S, n = ar2_sample_cov(p)
        np.save(cache, S)
    cpu = {}

    def on_cpu(fn):  # this thread's CPU seconds as well as the wall clock (the sampler runs on another thread)
        def call():
            c0 = time.thread_time()
            out = fn()
            cpu["seconds"] = time.thread_time() - c0
            return out
        return call

    if what == "one":
        seconds, res, mib = peak_anonymous_memory(on_cpu(lambda: graphical_lasso(S, ALPHA)))
        info = {"n_iter": res.n_iter, "blocks": res.n_blocks, "gap": res.duality_gap / abs(res.objective),
                "converged": res.converged, "nnz": int(np.count_nonzero(res.precision))}
    else:
        off = float(np.abs(S - np.diag(np.diag(S))).max())
        alphas = np.geomspace(off, ALPHA, 20)

        def path():
            worst, sweeps = 0.0, 0
            for _, r in iter_graphical_lasso_path(S, alphas, sparse=what == "sparse"):
                worst = max(worst, r.duality_gap / abs(r.objective))
                sweeps += r.n_iter
            return worst, sweeps

        seconds, (worst, sweeps), mib = peak_anonymous_memory(on_cpu(path))
        info = {"worst_gap": worst, "sweeps": sweeps}
    print(json.dumps({"seconds": seconds, "cpu": cpu["seconds"], "mib": mib, "n": n, **info}))


def _fresh(p, what, cache):
    code = f"from benchmarks.glasso_large import _probe; _probe({p}, {what!r}, {str(cache)!r})"
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _row(p, cache):
    unit = p * p * 8 / 2**20
    load = os.getloadavg()[0]
    log(f"glasso_large: p = {p}, one solve")
    one = _fresh(p, "one", cache)
    log(f"glasso_large: p = {p}, path")
    path = _fresh(p, "path", cache)
    log(f"glasso_large: p = {p}, sparse path")
    thin = _fresh(p, "sparse", cache)
    ratio = thin["cpu"] / one["cpu"]

    def both(r):  # CPU seconds, wall seconds in brackets
        return f"{r['cpu']:.2f} s ({r['seconds']:.2f} s)"

    def ratios(r):
        return f"{r['cpu'] / one['cpu']:.2f}× ({r['seconds'] / one['seconds']:.2f}×)"

    return [p, one["n"], both(one), f"{one['n_iter']} / {one['gap']:.1e}",
            f"{one['mib'] / unit:.2f} ({one['mib']:.0f} MiB)", both(path), ratios(path),
            f"{path['mib'] / unit:.2f} ({path['mib']:.0f} MiB)", both(thin),
            f"{ratios(thin)}{'' if ratio <= TARGET else ' not met'}",
            f"{thin['sweeps']} / {thin['worst_gap']:.1e}", f"{thin['mib'] / unit:.2f} ({thin['mib']:.0f} MiB)",
            f"{load:.1f} / {os.getloadavg()[0]:.1f}"]


def run(quick=False):
    """Very large p: one solve and a 20-value warm path, time and peak memory beyond S."""
    table = Table("Graphical lasso at large p (AR(2), λ = 0.1, tol 1e-7): time and memory beyond S",
                  ["p", "n", "one solve", "sweeps / gap", "memory beyond S (× p² doubles)", "20-value path, dense",
                   "dense path / one solve", "dense path memory (× p²)", "20-value path, sparse=True",
                   f"sparse path / one solve (target ≤ {TARGET:g}×)", "sparse path sweeps / worst gap",
                   "sparse path memory (× p²)", "load"])
    chosen = os.environ.get("DPMOMENTS_BENCH_P")
    sizes = [int(v) for v in chosen.split(",")] if chosen else QUICK_SIZES if quick else SIZES
    with tempfile.TemporaryDirectory() as tmp:
        for p in sizes:
            cache = Path(tmp) / f"S{p}.npy"
            table.rows.append(_row(p, cache))
            cache.unlink()
            print(json.dumps(table.rows[-1]), flush=True)
    table.notes += [
        "Each p in a fresh process; memory = peak RssAnon above its value once S is in memory, in units of "
        "p² float64. The result holds two p × p matrices (precision, dual W).",
        "gap: the certified relative duality gap (an upper bound on the relative suboptimality).",
        "'load': 1-minute load average of the shared 2-core machine when the row started / ended; one call "
        "per cell. The three processes of a row solve the same S (made once, saved, loaded).",
        "Times: CPU seconds of the solving thread, wall seconds in brackets; ratios likewise, the target judged on "
        "the CPU-time ratio (the work ratio: the solver is single-threaded at one BLAS thread, so on an idle "
        "machine the two agree; on this shared one a long call is interrupted by other processes more than a "
        "short one, so wall-clock ratios drift with load).",
        "No GPU was used.",
        "The dense path returns a new precision and dual per penalty (two fresh p × p arrays; on this virtual "
        "machine a fresh array's first touch can cost more than a sweep). sparse=True returns CSR precisions and "
        "writes each extrapolated start over the dual the path no longer needs.",
    ] + ([f"Only p = {chosen} (DPMOMENTS_BENCH_P)."] if chosen else [])
    return [table]

