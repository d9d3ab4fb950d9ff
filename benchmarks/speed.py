"""Issue 27: a command that starts at once, the bound's fused pass, no wasted O(d^3), small and large d.

Every cell is a ratio against an anchor measured in the same run, in CPU seconds (the machine is shared:
wall time measures the neighbours). Commands run as a user runs them, in fresh processes whose CPU time
(user + system, from ``os.wait4``) is read when they end; an untimed first command writes the package's
bytecode into a temporary ``PYTHONPYCACHEPREFIX``, as installing it does (a command compiling its own
sources on every start would time Python, not dpmoments). In-process cells are the best of three
``time.process_time`` readings.

1. **Start-up**: ``--version``, ``--help`` and a command on a 1000 x 5 ``.npy`` (where the start-up is
   the whole cost), and on a 2e4 x 10 one off the origin (where the private centre is refined, in zCDP),
   against ``python -c "import numpy"``; ``python -m benchmarks startup`` runs this table alone.
2. **The bound's fused pass** (:func:`dpmoments.moments.binned_sums.binned_pass`, the pass a private row
   bound makes with the mean or second moment it serves) and the public-bound pass
   (:func:`~dpmoments.moments.accumulate_moments`) against ``X.T @ X``, at 2e5 x 100.
3. **The release pass at small d**: :func:`~dpmoments.moments.release_second_moment` with a public bound
   against ``X.T @ X``, d in {10, 50, 200, 1000} (about 1e7 values each). Target 1.25x.
4. **The PSD projection** of a matrix already positive definite and of an indefinite one against ``eigh``.
5. **The default private choices** against the public-bound run of the same command (``covariance
   --no-figures``) on a 2e5 x 100 file (``--quick``: 2e4), ``.npy`` and CSV. Target (at 1e6 x 100) 1.5x.
6. **Large d**: ``dpmoments covariance`` and ``pca`` on a 1e4 x 2000 ``.npy`` with public bounds against a
   process that loads it, forms ``X.T @ X`` and runs one ``eigh``. Target 3x. The issue asks for d = 5000
   and 10000; one ``eigh`` at 5000 takes a minute of this shared machine's CPU per cell, so the record
   is at d = 2000 (``--quick``: 500).
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

ROOT = Path(__file__).resolve().parents[1]
PRIVACY = ["--epsilon", "1", "--delta", "1e-7", "--seed", "0"]


def _child_cpu(argv, env):
    """CPU seconds (user + system) of one fresh process running ``argv``; it must succeed."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.read().decode()[-500:]}")
    proc.stderr.close()
    return usage.ru_utime + usage.ru_stime


def _best_child(argv, env, repeat=3):
    return min(_child_cpu(argv, env) for _ in range(repeat))


def _env(cache):
    env = dict(os.environ, PYTHONPYCACHEPREFIX=cache, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT / "src"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _cpu(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _startup(tmp, env):
    path, rows = Path(tmp) / "small.npy", Path(tmp) / "rows.npy"
    np.save(path, np.random.default_rng(0).standard_normal((1000, 5)))
    np.save(rows, np.random.default_rng(0).standard_normal((20_000, 10)) + 3.0)  # enough rows to refine a centre
    dpm = [sys.executable, "-m", "dpmoments"]
    out = ["--out", str(Path(tmp) / "out"), "--force"]
    cells = {
        "dpmoments --version": dpm + ["--version"],
        "dpmoments --help": dpm + ["--help"],
        "dpmoments covariance --help": dpm + ["covariance", "--help"],
        "covariance, public bounds, --no-figures": dpm + ["-q", "covariance", str(path), *PRIVACY, "--row-norm", "5",
                                                          "--center", "0", *out, "--no-figures"],
        "covariance, public bounds, with its figure": dpm + ["-q", "covariance", str(path), *PRIVACY, "--row-norm",
                                                             "5", "--center", "0", *out],
        "covariance, default private choices, --no-figures": dpm + ["-q", "covariance", str(path), *PRIVACY, *out,
                                                                    "--no-figures"],
        "covariance, default private choices, --no-figures, 2e4 x 10 N(3, 1) (a refined centre)":
            dpm + ["-q", "covariance", str(rows), *PRIVACY, *out, "--no-figures"],
    }
    for argv in cells.values():  # bytecode written, files in the page cache
        _child_cpu(argv, env)
    anchor = _best_child([sys.executable, "-c", "import numpy"], env, 5)
    table = Table("Start-up: CPU seconds of a fresh process, against `python -c \"import numpy\"`",
                  ["command", "CPU s", "× import numpy"])
    for name, argv in cells.items():
        seconds = _best_child(argv, env, 5)
        table.rows.append([name, f"{seconds:.2f}", f"{seconds / anchor:.2f}×"])
        log(f"  {name}: {seconds:.2f} CPU s")
    table.notes.append(f"anchor `python -c \"import numpy\"`: {anchor:.3f} CPU s (best of 5); each cell best of 5.")
    table.notes.append("Targets: --version and --help well under 0.3 s; the fixed cost of a command at most 0.5 CPU s.")
    return table


def _passes(quick):
    from dpmoments.moments import SearchRange, accumulate_moments
    from dpmoments.moments.binned_sums import binned_pass

    n, d = (20_000, 100) if quick else (200_000, 100)
    X = np.random.default_rng(0).standard_normal((n, d)) * 2 + 1
    search, origin = SearchRange(), np.zeros(d)
    gram = _cpu(lambda: X.T @ X)
    table = Table(f"One pass over {n} x {d} in memory, against `X.T @ X` (CPU)", ["pass", "CPU s", "× X.T @ X"])
    cells = {
        "public bound: accumulate_moments (clip + X.T @ X)": lambda: accumulate_moments(X, row_norm=30.0),
        "private bound fused with a mean (binned_pass 'mean')": lambda: binned_pass(X, moment="mean", search=search,
                                                                                     center=origin),
        "private bound fused with the second moment (binned_pass 'second')":
            lambda: binned_pass(X, moment="second", search=search, center=origin),
    }
    for name, fn in cells.items():
        seconds = _cpu(fn)
        table.rows.append([name, f"{seconds:.3f}", f"{seconds / gram:.2f}×"])
    table.notes.append(f"`X.T @ X`: {gram:.3f} CPU s. The fused second-moment pass forms two Gram products per "
                       "chunk by design (rows and unit rows per bin); the planner fuses it only where the rows come "
                       "from a file, where a second read would cost more.")
    return table


def _interleaved(fns, rounds=7):
    """The best of ``rounds`` CPU readings of each function, taken in turn: on a shared machine a
    neighbour's burst then slows the anchor and the pass alike instead of one of them."""
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    return best


def _small_d(quick):
    from dpmoments.moments import release_second_moment

    table = Table("The release pass (public bound) against `X.T @ X` (CPU)", ["d", "n", "CPU s", "× X.T @ X"])
    rng = np.random.default_rng(0)
    for d in (10, 50, 200, 1000):
        n = max(int((1e6 if quick else 1e7) // d), 5 * d)
        X = rng.standard_normal((n, d))
        best = _interleaved({
            "gram": lambda: X.T @ X,
            "release": lambda: release_second_moment(X, epsilon=1.0, delta=1e-9, row_norm=2.0 * d ** 0.5, rng=0,
                                                     center=None)})
        table.rows.append([d, n, f"{best['release']:.3f}", f"{best['release'] / best['gram']:.2f}×"])
    table.notes.append("Target 1.25× at every d. Each cell the best of 7 CPU readings, the anchor and the pass taken "
                       "in turn. Up to d = 96 one compiled loop clips each row and adds its products (`clip_gram`: "
                       "each row read once, the next rows fetched while a panel's products are summed); wider rows "
                       "are clipped (one compiled pass over the block, about a read and a write of the rows) and "
                       "their products formed by BLAS.")
    return table


def _psd(quick):
    from dpmoments.moments import project_psd

    table = Table("The PSD projection against one `eigh` (CPU)", ["d", "matrix", "CPU s", "× eigh"])
    rng = np.random.default_rng(0)
    for d in ((300, 500) if quick else (1000, 2000)):
        A = rng.standard_normal((2 * d, d))
        S = A.T @ A / (2 * d)
        noisy = S + rng.standard_normal((d, d)) * 0.5
        eigh = _cpu(lambda: np.linalg.eigh(S), 2)
        for name, M in (("positive definite (nothing to project)", S), ("indefinite (noise)", noisy)):
            seconds = _cpu(lambda: project_psd(M), 2)
            table.rows.append([d, name, f"{seconds:.2f}", f"{seconds / eigh:.2f}×"])
    table.notes.append("A Cholesky test first: a matrix clearly above the floor is returned as it was, without the "
                       "full eigh; an indefinite one pays the test (d^3/3) on top of eigh.")
    return table


def _default_choices(tmp, env, quick):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    n, d = (20_000, 100) if quick else (200_000, 100)
    X = np.round(np.random.default_rng(0).standard_normal((n, d)) + 3.0, 4)
    paths = {"npy": Path(tmp) / "rows.npy", "csv": Path(tmp) / "rows.csv"}
    np.save(paths["npy"], X)
    pacsv.write_csv(pa.table({f"x{j}": X[:, j] for j in range(d)}), paths["csv"])
    dpm = [sys.executable, "-m", "dpmoments", "-q", "covariance"]
    tail = [*PRIVACY, "--out", str(Path(tmp) / "choices"), "--force", "--no-figures"]
    table = Table(f"Default private choices against public bounds: `covariance --no-figures` on {n} x {d} "
                  "(CPU of fresh processes)", ["file", "public bounds, CPU s", "default, CPU s", "default / public"])
    for kind, path in paths.items():
        public = _best_child(dpm + [str(path), "--row-norm", "20", "--center", "3", *tail], env, 2)
        default = _best_child(dpm + [str(path), *tail], env, 2)
        table.rows.append([kind, f"{public:.2f}", f"{default:.2f}", f"{default / public:.2f}×"])
        log(f"  {kind}: public {public:.2f}, default {default:.2f} CPU s")
    table.notes.append("The default run makes three passes on these N(3, 1) columns (the location's step about the "
                       "origin, a step about its centre that also draws the bound and sums the mean, the release; "
                       "two for data about the origin); a CSV file is parsed again for each, nothing is kept. "
                       "`python -m benchmarks default_choices` has Parquet, two sizes, passes and memory.")
    return table


def _large_d(tmp, env, quick):
    n, d = (10_000, 500) if quick else (10_000, 2000)
    path = Path(tmp) / f"wide_{d}.npy"
    np.save(path, np.random.default_rng(0).standard_normal((n, d)) / np.sqrt(d))
    anchor_code = (f"import numpy as np; X = np.load({str(path)!r}); G = X.T @ X; np.linalg.eigh(G)")
    dpm = [sys.executable, "-m", "dpmoments", "-q"]
    public = ["--row-norm", "2", "--center", "0", "--out", str(Path(tmp) / "wide"), "--force"]
    cells = {
        "covariance, --no-figures": dpm + ["covariance", str(path), *PRIVACY, *public, "--no-figures"],
        "covariance, with its figure": dpm + ["covariance", str(path), *PRIVACY, *public],
        "pca --n-components 5, --no-figures": dpm + ["pca", str(path), "--n-components", "5", *PRIVACY, *public,
                                                      "--no-figures"],
    }
    anchor = _best_child([sys.executable, "-c", anchor_code], env, 2)
    table = Table(f"Large d: commands on a {n} x {d} .npy with public bounds, against np.load + X.T @ X + eigh "
                  "(CPU of fresh processes)", ["command", "CPU s", "× anchor"])
    for name, argv in cells.items():
        seconds = _best_child(argv, env, 1)
        table.rows.append([name, f"{seconds:.1f}", f"{seconds / anchor:.2f}×"])
        log(f"  {name}: {seconds:.1f} CPU s")
    table.notes.append(f"anchor: {anchor:.2f} CPU s (best of 2; one run per command). Target 3×. d = 5000 and "
                       "10000 were not run on this shared machine (module docstring).")
    return table


def run_startup(quick=False):
    """Start-up alone (the first table of `speed`): --version, --help and small commands, CPU of fresh processes.

    ``DPM_BASELINE_SRC=/path/to/other/src`` adds the same table for another source tree, measured in the same run
    (a before and after)."""
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        tables.append(_startup(tmp, _env(str(Path(tmp) / "pycache"))))
        baseline = os.environ.get("DPM_BASELINE_SRC")
        if baseline:
            env = dict(_env(str(Path(tmp) / "pycache-baseline")), PYTHONPATH=baseline)
            table = _startup(tmp, env)
            table.title += f" — baseline: {os.environ.get('DPM_BASELINE_LABEL', baseline)}"
            tables.append(table)
    return tables


_SMALL_D_CHILD = ("import json, sys; from benchmarks.speed import _small_d; "
                  "print(json.dumps([[r[0], r[3]] for r in _small_d(sys.argv[1] == 'quick').rows]))")


def run_release_pass(quick=False, runs=3):
    """The release pass against ``X.T @ X`` alone (the third table of `speed`), in ``runs`` fresh processes.

    ``DPM_BASELINE_SRC=/path/to/other/src`` runs the same table on another source tree in turn with this
    one (a before and after on the same machine at the same time); each cell is the range over the runs."""
    trees = {"this tree": str(ROOT / "src")}
    baseline = os.environ.get("DPM_BASELINE_SRC")
    if baseline:
        trees = {os.environ.get("DPM_BASELINE_LABEL", "baseline"): baseline, **trees}
    ratios = {name: {} for name in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            for name, src in trees.items():
                env = dict(_env(str(Path(tmp) / "pycache")), PYTHONPATH=f"{src}{os.pathsep}{ROOT}")
                out = subprocess.run([sys.executable, "-c", _SMALL_D_CHILD, "quick" if quick else "full"], env=env,
                                     cwd=ROOT, capture_output=True, text=True, check=True).stdout
                for d, ratio in json.loads(out.splitlines()[-1]):
                    ratios[name].setdefault(d, []).append(float(ratio.rstrip("×")))
                log(f"  {name}: {out.strip()}")
    table = Table("The release pass (public bound) against `X.T @ X` (CPU), fresh processes in turn",
                  ["d", *(f"{name}: × X.T @ X" for name in trees)])
    for d in ratios["this tree"]:
        table.rows.append([d, *(f"{min(r[d]):.2f}–{max(r[d]):.2f}×" for r in ratios.values())])
    table.notes.append(f"Each cell the range over {runs} processes; in each, the best of 7 CPU readings of the anchor "
                       "and the pass taken in turn (n = 1e7 / d rows; --quick: 1e6 / d). Target 1.25× at every d.")
    if baseline:
        table.notes.append("The baseline column ran the source tree named by DPM_BASELINE_SRC (its label from "
                           "DPM_BASELINE_LABEL) with this tree's benchmark code.")
    return [table]


def run(quick=False):
    """Start-up, the fused pass, the PSD projection, small and large d (issue 27), CPU against anchors."""
    with tempfile.TemporaryDirectory() as tmp:
        env = _env(str(Path(tmp) / "pycache"))
        log("start-up ...")
        tables = [_startup(tmp, env)]
        log("passes ...")
        tables += [_passes(quick), _small_d(quick), _psd(quick)]
        log("default choices ...")
        tables.append(_default_choices(tmp, env, quick))
        log("large d ...")
        tables.append(_large_d(tmp, env, quick))
    return tables
