"""The second-moment pass: clip rows + chunked ``X^T X`` against plain ``X.T @ X``.

Targets: the library's exact streaming pass
within about 1.1-1.6x of ``X.T @ X`` (float64, in memory, one BLAS thread);
``np.cov`` about 2x. Out of core, a ``.npy`` file streamed through a memory
map should cost little more than the in-memory pass while its anonymous
memory stays bounded by a chunk or two, not by the file.
"""

import json
import os
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np

import dpmoments
from dpmoments._validation import check_data
from dpmoments.data import iter_chunks
from dpmoments.moments import accumulate_moments
from dpmoments.moments.bounds import _clip_rows, _row_norms

from .timing import Table, best_of_each, log, peak_anonymous_memory, ratio

SIZES = [(1_000_000, 20), (1_000_000, 50), (100_000, 500), (20_000, 2000)]
OUT_OF_CORE = (2_000_000, 100)
CHUNK = 65536
RELEASE = dict(epsilon=1.0, delta=1e-6, rng=0)
STEPS = ["check_data (asarray + finite check)", "row norms (einsum)", "clip (norms + scale copy)",
         "chunked Xc.T @ Xc", "fused sketch (all steps)", "pass's clip, compiled", "pass's clip, NumPy"]


def _shape(n, d):
    return f"({n:.0e}, {d})".replace("e+0", "e")


def _data(n, d, seed=0):
    """Standard normal rows and ``R = sqrt(d)``: about half the rows get clipped."""
    X = np.random.default_rng(seed).standard_normal((n, d))
    return X, float(np.sqrt(d))


def _candidates(X, R):
    return {
        "X.T @ X": lambda: X.T @ X,
        "np.cov": lambda: np.cov(X, rowvar=False),
        "accumulate_moments": lambda: accumulate_moments(iter_chunks(X, chunk_size=CHUNK), row_norm=R),
        "no row clipped": lambda: accumulate_moments(iter_chunks(X, chunk_size=CHUNK), row_norm=4 * R),
        "release_second_moment": lambda: dpmoments.release_second_moment(X, row_norm=R, **RELEASE, center=None),
    }


def _steps(X, R):
    """The streaming pass taken apart: each step over every chunk, as the library does it."""
    chunks = [X[i:i + CHUNK] for i in range(0, X.shape[0], CHUNK)]
    clipped = [_clip_rows(c, R) for c in chunks]

    def each(fn, blocks):
        def loop():
            for c in blocks:
                fn(c)  # the result is dropped, as the library drops each clipped chunk
        return loop

    fns = [each(lambda c: check_data(c, min_samples=0), chunks), each(_row_norms, chunks),
           each(lambda c: _clip_rows(c, R), chunks), each(lambda c: c.T @ c, clipped),
           lambda: _fused(X, R), lambda: _pass_clip(X, R, compiled=True), lambda: _pass_clip(X, R, compiled=False)]
    return dict(zip(STEPS, fns))


def _pass_clip(X, R, compiled):
    """The clip step of ``accumulate_moments`` alone: its cache-sized blocks into one reused buffer,
    by the C extension (where built) or by its NumPy fallback."""
    from dpmoments.moments import accumulate

    kernel = accumulate._compiled
    accumulate._compiled = kernel if compiled else None
    try:
        rows = accumulate._block_rows(X.shape[1])
        buf = np.empty((rows, X.shape[1]))
        for lo in range(0, X.shape[0], rows):
            B = X[lo:lo + rows]
            accumulate._clip_rows_into(B, buf[:B.shape[0]], 0, lo, R)
    finally:
        accumulate._compiled = kernel


def _fused(X, R, block=8192):
    """What the pass could cost: the finite check read off the row norms, scaling into one reused
    buffer, cache-sized blocks. A sketch to compare against, not the library (no overflow fallback)."""
    n, d = X.shape
    G, buf = np.zeros((d, d)), np.empty((block, d))
    for lo in range(0, n, block):
        B = X[lo:lo + block]
        sq = np.einsum("ij,ij->i", B, B)
        if not np.isfinite(sq).all():  # a NaN/inf entry (or overflow) makes its row's sum non-finite
            raise ValueError("non-finite row")
        with np.errstate(divide="ignore"):
            s = np.minimum(1.0, R / np.sqrt(sq))
        if (s < 1.0).any():
            B = np.multiply(B, s[:, None], out=buf[:B.shape[0]])
        G += B.T @ B
    return G


def _in_memory(quick):
    main = Table(
        "Second-moment pass, float64 in memory, ratio to `X.T @ X` in the same run",
        ["(n, d)", "`X.T @ X` (s)", "`np.cov`", "`accumulate_moments` (clip, chunked)",
         "`accumulate_moments`, no row clipped", "`release_second_moment`", "rows clipped", "rounds"],
        notes=[f"`accumulate_moments(iter_chunks(X, chunk_size={CHUNK}), row_norm=R)` and "
               "`release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=R, rng=0)`; X standard normal, "
               "R = sqrt(d).",
               "`no row clipped`: the same pass with R = 4 sqrt(d), where every row is inside the ball and "
               "no chunk is copied.",
               "Target (issue 18): the clipped pass within 1.25x of X^T X at every d >= 20; np.cov about 2x.",
               "Each cell is the best of `rounds` calls; the candidates take turns within a round."],
    )
    steps = Table(
        "Where the streaming pass spends its time (each step over all chunks), ratio to `X.T @ X`",
        ["(n, d)", "`X.T @ X` (s)"] + [f"`{s}`" for s in STEPS] + ["rounds"],
        notes=["Private helpers of dpmoments (`_validation.check_data`, `moments.bounds._clip_rows`, "
               "`_row_norms`) called per chunk exactly as `accumulate_moments` calls them; the clip step "
               "includes the row norms.",
               "`fused sketch`: the whole pass as one loop (`_fused` in this file): finite check read off the "
               "row norms (a NaN/inf entry makes its row's sum of squares non-finite), scale = min(1, R/norm) "
               "without fancy indexing, scaled rows written into one reused buffer, 8192-row blocks that stay "
               "in cache. Not the library: a bound on what NumPy can do.",
               "`pass's clip`: the library's clip step alone (`accumulate._clip_rows_into` over its blocks), "
               "by the C extension `moments/_clip.c` and by its NumPy fallback."],
    )
    for n, d in SIZES:
        n = n // 10 if quick else n
        X, R = _data(n, d)
        clipped = f"{np.mean(np.einsum('ij,ij->i', X, X) > R * R):.0%}"
        log(f"moments: (n, d) = ({n}, {d})")
        best, rounds = best_of_each(_candidates(X, R), repeat=5, min_total=2.0)
        ref = best["X.T @ X"]
        main.rows.append([_shape(n, d), f"{ref:.3f}"]
                         + [ratio(best[k], ref) for k in list(best)[1:]] + [clipped, rounds])
        parts, rounds = best_of_each({"X.T @ X": lambda: X.T @ X, **_steps(X, R)}, repeat=5, min_total=2.0)
        ref = parts.pop("X.T @ X")
        steps.rows.append([_shape(n, d), f"{ref:.3f}"] + [ratio(t, ref) for t in parts.values()] + [rounds])
    return [main, steps]


# -- out of core ---------------------------------------------------------------


def _probe(path, row_norm):
    """Run in a fresh process: extra memory of ``release_second_moment(path)``.

    Prints JSON: the peak of RssAnon above its starting value (sampled every
    millisecond by a thread) and the tracemalloc peak (every numpy buffer).
    File pages of the memory map are not anonymous memory: they are page
    cache the kernel may drop, and are left out of both.
    """
    _, _, rss_mib = peak_anonymous_memory(lambda: dpmoments.release_second_moment(path, row_norm=row_norm,
                                                                                 **RELEASE, center=None))
    tracemalloc.start()
    dpmoments.release_second_moment(path, row_norm=row_norm, **RELEASE, center=None)
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"rss_anon_mib": rss_mib, "traced_mib": traced / 2**20}))


def _memory_in_fresh_process(path, row_norm):
    code = f"from benchmarks.moments import _probe; _probe({str(path)!r}, {row_norm!r})"
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _out_of_core(quick):
    n, d = OUT_OF_CORE
    n = n // 10 if quick else n
    X, R = _data(n, d, seed=1)
    size_mib = X.nbytes / 2**20
    table = Table(
        f"Out of core: `release_second_moment(path, ...)` on a {_shape(n, d)} float64 `.npy` "
        f"({size_mib:.0f} MiB) vs the same array in memory",
        ["source", "time (s)", "ratio to in memory", "peak extra anonymous memory (RssAnon)",
         "peak numpy allocations (tracemalloc)"],
        notes=[f"Chunk of {CHUNK} rows = {CHUNK * d * 8 / 2**20:.0f} MiB. Memory is measured in a fresh "
               "process (after importing numpy and dpmoments), so an earlier high-water mark cannot hide it; "
               "RssAnon is sampled every 1 ms, tracemalloc sees every numpy buffer.",
               "Pages of the memory-mapped file count in RSS/VmHWM but are page cache the kernel can drop: "
               "they are excluded here.",
               "The file was just written, so it is read from the page cache, not the disk: this measures the "
               "streaming code, not disk bandwidth."],
    )
    with tempfile.TemporaryDirectory(prefix="dpmoments-bench-") as tmp:
        path = os.path.join(tmp, "X.npy")
        log(f"moments: writing ({n}, {d}) float64 to {path}")
        np.save(path, X)
        log("moments: timing out of core vs in memory")
        best, rounds = best_of_each({
            "in memory": lambda: dpmoments.release_second_moment(X, row_norm=R, **RELEASE, center=None),
            "path": lambda: dpmoments.release_second_moment(path, row_norm=R, **RELEASE, center=None),
        })
        log("moments: measuring memory in a fresh process")
        mem = _memory_in_fresh_process(path, R)
    ref = best["in memory"]
    table.rows += [
        ["ndarray in memory", f"{ref:.3f}", ratio(ref, ref), f"the array itself: {size_mib:.0f} MiB", "—"],
        [".npy path (np.load mmap, streamed)", f"{best['path']:.3f}", ratio(best["path"], ref),
         f"{mem['rss_anon_mib']:.0f} MiB", f"{mem['traced_mib']:.0f} MiB"],
    ]
    table.notes.insert(0, f"Best of {rounds} rounds, taking turns. The temporary file was deleted afterwards.")
    return [table]


def run(quick=False):
    """The second-moment pass: X.T @ X vs np.cov, accumulate_moments, release_second_moment; out of core."""
    return _in_memory(quick) + _out_of_core(quick)
