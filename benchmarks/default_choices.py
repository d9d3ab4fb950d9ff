"""Issue 27: the default private choices against a public bound, from one file, in passes, CPU and memory.

``dpmoments covariance FILE --no-figures`` with its defaults (private centre and row bound) against the
same command with a public bound and centre (``--row-norm 20 --center 3``), on N(3, 1) columns (a few
spreads off the origin: one refinement step) and on N(0, 1) columns (about the origin), from ``.npy``,
Parquet and CSV files of two sizes. Each cell is a fresh process, as a user runs it: its CPU time
(user + system, ``os.wait4``) and its peak anonymous memory (RssAnon, sampled from /proc every 10 ms);
an untimed first command writes the package's bytecode (as installing it does). The passes over the
rows are counted in this process by the library on the same data (full reads of the source).
Targets (issue 27): default / public <= 1.5x at 1e6 x 100 (run by default at 2.5e5 and 5e5 rows: the shared machine;
``DPM_ROWS=1e6,4e6 DPM_REPEAT=1`` runs other sizes); at most one pass more than the public run;
peak memory flat in rows (within 10%). ``DPM_BASELINE_SRC=/path/to/other/src`` (label ``DPM_BASELINE_LABEL``) runs
the same commands from another source tree beside each cell, in turn with this one (a before and after in one run).
"""

import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from .speed import PRIVACY, ROOT, _env
from .timing import Table, log

D = 100
SIZES, QUICK_SIZES = (250_000, 500_000), (25_000, 100_000)  # 1e6 x 100 is the size: a quiet machine
PUBLIC = ["--row-norm", "20", "--center", "3"]


def _write(path, X):
    import pyarrow as pa

    if path.suffix == ".npy":
        np.save(path, X)
        return
    table = pa.table({f"x{j}": X[:, j] for j in range(X.shape[1])})
    if path.suffix == ".csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, path)
    else:
        import pyarrow.parquet as pq

        pq.write_table(table, path)


def _anon_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("RssAnon:")), 0)
    except OSError:
        return 0


def _run(argv, env):
    """``(CPU seconds, peak anonymous MiB)`` of one fresh process; it must succeed."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    peak, done = [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _anon_kib(proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(map(str, argv[3:6]))} failed: {proc.stderr.read().decode()[-400:]}")
    proc.stderr.close()
    return usage.ru_utime + usage.ru_stime, peak[0] / 1024


def _trees(env, tmp):
    """``(label suffix, environment)`` of this tree and, with ``DPM_BASELINE_SRC``, the baseline tree."""
    trees = [("", env)]
    baseline = os.environ.get("DPM_BASELINE_SRC")
    if baseline:
        label = os.environ.get("DPM_BASELINE_LABEL", "baseline")
        trees.append((f" ({label})", dict(env, PYTHONPATH=baseline,
                                          PYTHONPYCACHEPREFIX=str(Path(tmp) / "pycache-baseline"))))
    return trees


def _best_pair(dpm, env, repeat):
    """The best public and default runs over ``repeat`` of each, taken in turn."""
    runs = [(_run(dpm + PUBLIC, env), _run(dpm, env)) for _ in range(repeat)]
    return ((min(r[0][0] for r in runs), max(r[0][1] for r in runs)),
            (min(r[1][0] for r in runs), max(r[1][1] for r in runs)))


class _Counted:
    """Chunks of ``X`` on every iteration, counting the iterations that reached the end (full passes)."""

    def __init__(self, X):
        self.X, self.passes = X, 0

    def __iter__(self):
        for lo in range(0, self.X.shape[0], 65536):
            yield self.X[lo:lo + 65536]
        self.passes += 1


def _passes(X):
    """Full passes of the library's default choices and of a public bound, on ``X``."""
    from dpmoments.estimators import CenterBudget
    from dpmoments.moments import BoundBudget, release_second_moment
    from dpmoments.moments.private_release import private_second_moment

    default, public = _Counted(X), _Counted(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        private_second_moment(default, epsilon=1.0, delta=1e-7, row_norm="auto", center="private",
                              center_budget=CenterBudget(), scale=None, bound_budget=BoundBudget(),
                              mechanism="gaussian", neighbours="replace-one", calibration="analytic", rng=0)
        release_second_moment(public, epsilon=1.0, delta=1e-7, row_norm=20.0, center=np.full(X.shape[1], 3.0),
                              rng=0)
    return default.passes, public.passes


def run(quick=False):
    """Default private choices against a public bound: passes, CPU and peak memory, three formats, two sizes."""
    sizes, repeat = (QUICK_SIZES, 1) if quick else (SIZES, 2)
    if os.environ.get("DPM_ROWS"):  # e.g. DPM_ROWS=1000000,4000000 DPM_REPEAT=1: the sizes on a quiet machine
        sizes = tuple(int(float(n)) for n in os.environ["DPM_ROWS"].split(","))
        repeat = int(os.environ.get("DPM_REPEAT", repeat))
    table = Table(f"`covariance --no-figures`: default private choices against a public bound, {D} columns "
                  "(CPU s and peak anonymous MiB of fresh processes)",
                  ["data", "rows", "file", "passes default / public", "public CPU s", "default CPU s",
                   "default / public", "public MiB", "default MiB"])
    with tempfile.TemporaryDirectory() as tmp:
        env, compiled = _env(str(Path(tmp) / "pycache")), False
        for offset, name in ((3.0, "N(3, 1)"), (0.0, "N(0, 1)")):
            for n in sizes:
                X = np.round(np.random.default_rng(0).standard_normal((n, D)) + offset, 4)
                passes = _passes(X)
                for suffix in ((".npy", ".parquet", ".csv") if offset else (".npy",)):
                    path = Path(tmp) / f"rows{suffix}"
                    _write(path, X)
                    dpm = [sys.executable, "-m", "dpmoments", "-q", "covariance", str(path), *PRIVACY,
                           "--out", str(Path(tmp) / "out"), "--force", "--no-figures"]
                    if not compiled:  # untimed: writes the bytecode
                        compiled = bool(_run(dpm + PUBLIC, env))
                    for tree, tree_env in _trees(env, tmp):
                        if tree_env is not env:  # untimed: the baseline's bytecode
                            _run(dpm + PUBLIC, tree_env)
                        public, default = _best_pair(dpm, tree_env, repeat)
                        table.rows.append([name, n, suffix[1:] + tree, f"{passes[0]} / {passes[1]}",
                                           f"{public[0]:.2f}", f"{default[0]:.2f}", f"{default[0] / public[0]:.2f}×",
                                           f"{public[1]:.0f}", f"{default[1]:.0f}"])
                        log(f"  {name} {n} {suffix}{tree}: public {public[0]:.2f} s {public[1]:.0f} MiB, default "
                            f"{default[0]:.2f} s {default[1]:.0f} MiB")
                    path.unlink()
                del X
    table.notes.append(f"Each cell: the best CPU of {repeat} run(s), the largest peak. The default run's passes: "
                       "the location's first step about the origin (its bound and mean), a second step about "
                       "that centre where the first moved it by more than a tenth of its bound (it then also "
                       "draws the row bound and sums the final mean), then the release, which also sums what "
                       "clipping removed. Nothing is kept in memory between passes: a CSV or Parquet file is "
                       "parsed once and its rows replayed from an unnamed temporary file "
                       "(`dpmoments.data.SpilledPasses`), a .npy read again.")
    return [table]
