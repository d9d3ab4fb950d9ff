"""End to end against the I/O floor: every moment-based command, as a user runs it, against a bare read.

Target (issue 18): each moment-based command of the command line on a 1e6 x 50 file (CSV, Parquet,
``.npy``) within 1.5x the time pyarrow (or numpy, for ``.npy``) needs just to read every value of the
file, with memory that does not grow with the file.

The bare read uses the settings of the project's one reader (``dpmoments.data.tables``): pyarrow's
streaming CSV reader in 256 KiB blocks with every column typed float64, Parquet record batches of 65536
rows read in 1 MiB buffers without pre-buffering, and a ``.npy`` memory map summed block by block (a
sum touches every value; nothing cheaper reads them all). It is timed in this process, best of three,
after a first read has put the file in the page cache: the commands read it from the page cache too.
The ratios (and the target) are against this in-process read. Beside it, the floor a user actually
pays: the same read in a fresh ``python -c`` process that imports only pyarrow (or numpy) and reads
the file (interpreter start and imports included), best of three; its ratio is shown in brackets.
An untimed first command writes the package's bytecode (``__pycache__``), as installing it does: a
command that compiled its own sources on every start would be timing Python, not dpmoments.

Every command runs as a user runs it: a fresh ``python -m dpmoments`` process (interpreter start,
imports, the passes, figures, report), timed by wall clock; its peak resident memory (VmHWM, which
counts the pages of a memory-mapped ``.npy`` the process touched) and its peak of anonymous memory
(RssAnon: the memory the process allocated itself), both sampled every 10 ms, are recorded.
Each command runs with PUBLIC bounds (a public row bound and centre: one pass over the file) and with
its DEFAULT private choices (a private row bound and, for covariance, precision and PCA, a private
centre: one pass per private choice, then the release).

``select`` is not timed: it is not moment-based (it loads the selected columns into memory and scores
every candidate model on the rows). ``regress`` loads its columns too (IRLS reweights every row at
every iteration), so its memory grows with the file by design; it is timed beside the others.
"""

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from .timing import Table, best_of, log

N, D = 1_000_000, 50
QUICK_N = 100_000
TARGET = 1.5
FORMATS = ("csv", "parquet", "npy")
ROOT = Path(__file__).resolve().parents[1]
# Rows are about sqrt(49) ~ 7 long: a public bound of 10 clips a few; y = x b + noise has sd ~ 1.
PRIVACY = ["--epsilon", "1", "--delta", "1e-7", "--seed", "0"]
#: The covariance cell (public bounds) again with the figure in two formats, and with none: what drawing costs.
LEAN = ("--figure-format png,svg", "--no-figures")
COMMANDS = {  # name -> (arguments, public-bound arguments)
    "covariance": (["covariance"], ["--row-norm", "10", "--center", "0"]),
    "precision --alpha 0.1": (["precision", "--alpha", "0.1"], ["--row-norm", "10", "--center", "0"]),
    "pca --n-components 5": (["pca", "--n-components", "5"], ["--row-norm", "10", "--center", "0"]),
    "regress (last column)": (["regress", "--target", str(D - 1), "--n-iter", "3", "--w-max", "10"],
                              ["--row-norm", "10", "--response-bound", "5"]),
    "tensor --model mog": (["tensor", "--model", "mog", "--sigma2", "1", "--n-components", "3"],
                           ["--row-norm", "10"]),
}


def _write(tmp, n):
    """The same rows (4 decimals, as instruments write them) as CSV, Parquet and .npy."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, D))
    X[:, -1] = X[:, :-1] @ (rng.standard_normal(D - 1) / 7) + 0.5 * rng.standard_normal(n)
    X = np.round(X, 4)
    names = [f"x{j}" for j in range(D - 1)] + ["y"]
    table = pa.table({name: X[:, j] for j, name in enumerate(names)})
    paths = {k: os.path.join(tmp, f"data.{k}") for k in FORMATS}
    pacsv.write_csv(table, paths["csv"])
    pq.write_table(table, paths["parquet"])
    np.save(paths["npy"], X)
    return paths


def _bare_read(path):
    """Read every value once with the reader's own settings; returns the rows seen."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    rows = 0
    if path.endswith(".csv"):
        keys = [f"f{j}" for j in range(D)]
        reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=1 << 18, skip_rows=1,
                                                                     autogenerate_column_names=True),
                                convert_options=pacsv.ConvertOptions(column_types={k: pa.float64() for k in keys}))
        for batch in reader:
            rows += batch.num_rows
    elif path.endswith(".parquet"):
        f = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20, memory_map=False)
        for batch in f.iter_batches(batch_size=65536):
            rows += batch.num_rows
    else:
        A = np.load(path, mmap_mode="r")
        for lo in range(0, A.shape[0], 65536):
            A[lo:lo + 65536].sum()
        rows = A.shape[0]
    return rows


# The bare read in a fresh process: the interpreter, ``import pyarrow`` (numpy for .npy), the read. Same settings.
FRESH_READ = {
    "csv": ("import pyarrow as pa, pyarrow.csv as c, sys; "
            "k = [f'f{j}' for j in range(%d)]; "
            "r = c.open_csv(sys.argv[1], read_options=c.ReadOptions(block_size=1 << 18, skip_rows=1, "
            "autogenerate_column_names=True), convert_options=c.ConvertOptions(column_types={n: pa.float64() "
            "for n in k})); [b.num_rows for b in r]" % D),
    "parquet": ("import pyarrow.parquet as pq, sys; f = pq.ParquetFile(sys.argv[1], pre_buffer=False, "
                "buffer_size=1 << 20, memory_map=False); [b.num_rows for b in f.iter_batches(batch_size=65536)]"),
    "npy": ("import numpy as np, sys; A = np.load(sys.argv[1], mmap_mode='r'); "
            "[A[lo:lo + 65536].sum() for lo in range(0, A.shape[0], 65536)]"),
}


def _memory_kib(pid):
    """``(VmHWM, RssAnon)`` of a running process in KiB: its peak resident memory so far, its anonymous memory."""
    found = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(":", 1)[0]
                if key in ("VmHWM", "RssAnon"):
                    found[key] = int(line.split()[1])
    except OSError:
        pass
    return found.get("VmHWM", 0), found.get("RssAnon", 0)


def _process(argv):
    """``(wall seconds, peak RSS MiB, peak anonymous MiB)`` of a fresh process; raises if it fails.

    Both peaks are sampled from /proc every 10 ms (the kernel's ``ru_maxrss`` of a child starts at its
    parent's resident size, here that of the benchmark holding the data).
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode: compiling is not the command's
    peak, done = [0, 0], threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def sample():
        while not done.is_set():
            peak[:] = np.maximum(peak, _memory_kib(proc.pid)).tolist()
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    err = proc.stderr.read().decode(errors="replace")
    proc.wait()
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[2:5])} failed ({proc.returncode}): {err.strip()[-300:]}")
    return seconds, peak[0] / 1024, peak[1] / 1024


def _command(name, path, out, public, extra=()):
    args, bounds = COMMANDS[name]
    return [sys.executable, "-m", "dpmoments", "-q", *args, path, *PRIVACY, *(bounds if public else []),
            "--out", out, "--force", *extra]


def _best(argv, repeat):
    runs = [_process(argv) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs), max(r[2] for r in runs)


def _load():
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def run(quick=False):
    """Every moment-based CLI command on a 1e6 x 50 CSV/Parquet/.npy against a bare pyarrow read."""
    n = QUICK_N if quick else N
    repeat = 1 if quick else 2
    with tempfile.TemporaryDirectory(prefix="dpmoments-io-floor-") as tmp:
        log(f"io_floor: writing ({n}, {D}) as CSV, Parquet, .npy in {tmp}")
        paths = _write(tmp, n)
        out = os.path.join(tmp, "out")
        sizes = {k: os.path.getsize(p) / 2**20 for k, p in paths.items()}
        reads = {}
        _process(_command("covariance", paths["npy"], out, True))  # untimed: writes the bytecode, as an install does
        for k, p in paths.items():
            _bare_read(p)  # into the page cache
            reads[k] = best_of(lambda p=p: _bare_read(p), repeat=3, min_total=0)[0]
        fresh = {k: min(_process([sys.executable, "-c", FRESH_READ[k], p])[0] for _ in range(3))
                 for k, p in paths.items()}
        floor = min(_process([sys.executable, "-c", "import dpmoments.cli"])[0] for _ in range(3))
        loads = [_load()]
        cells = {}
        for name in COMMANDS:
            for k in FORMATS:
                for public in (True, False):
                    log(f"io_floor: {name} on .{k}, {'public' if public else 'default private'} bounds (load {_load()})")
                    times = 1 if name.startswith("tensor") else repeat
                    cells[name, k, public] = _best(_command(name, paths[k], out, public), times)
            loads.append(_load())
        lean = {flag: {k: _best(_command("covariance", paths[k], out, True, flag.split()), repeat)[0] for k in FORMATS}
                for flag in LEAN}
        loads.append(_load())
    return _tables(n, sizes, reads, fresh, floor, cells, lean, loads, quick)


def _tables(n, sizes, reads, fresh, floor, cells, lean, loads, quick):
    size = f"{n:.0e}".replace("e+0", "e")
    ratio = Table(f"Command wall time / bare read time, ({size}, {D}) file, fresh process per command "
                  f"(target <= {TARGET}x)",
                  ["command", "bounds"] + [f".{k} (read {reads[k]:.2f} s, fresh {fresh[k]:.2f} s, {sizes[k]:.0f} MiB)"
                                           for k in FORMATS])
    memory = Table(f"Peak memory per cell, MiB: resident (VmHWM) / anonymous (RssAnon), ({size}, {D})",
                   ["command", "bounds"] + [f".{k}" for k in FORMATS])
    met = missed = met_fresh = 0
    for name in COMMANDS:
        for public in (True, False):
            row, mem = [f"`{name}`", "public" if public else "default (private)"], []
            for k in FORMATS:
                s, rss, anon = cells[name, k, public]
                ok = s <= TARGET * reads[k]
                met, missed, met_fresh = met + ok, missed + (not ok), met_fresh + (s <= TARGET * fresh[k])
                row.append(f"{s / reads[k]:.2f}× [{s / fresh[k]:.2f}×] ({s:.1f} s){'' if ok else ' not met'}")
                mem.append(f"{rss:.0f} / {anon:.0f}")
            ratio.rows.append(row)
            memory.rows.append(row[:2] + mem)
    extra = {name: [cells[name, k, False][0] - cells[name, k, True][0] for k in FORMATS] for name in COMMANDS}
    ratio.notes += [
        f"Target met in {met} of {met + missed} cells (against the in-process read; against the fresh-process "
        f"read, in brackets, {met_fresh} of {met + missed}).",
        "read: the bare read in this process (best of 3), the ratio and the target; fresh: the same read in a fresh "
        "process importing pyarrow (numpy for .npy), interpreter start included (best of 3), the ratio in brackets. "
        f"A fresh `python -c 'import dpmoments.cli'` takes {floor:.2f} s here (best of 3).",
        "Default bounds cost more than public ones by (s; csv, parquet, npy): "
        + "; ".join(f"{name} " + ", ".join(f"{x:+.1f}" for x in v) for name, v in extra.items())
        + ". Covariance, precision and PCA choose a private centre: its first step about the origin (one pass "
        "for its bound and mean), a second about that centre where the first moved it by more than a tenth of its "
        "bound (that pass also draws the row bound and sums the final mean; far-off data take up to four steps), "
        "then the release, which also sums what clipping removed: two or three passes where public bounds make "
        "one; tensor makes two (the row bound, then the third moment). Nothing is kept between passes: a CSV or "
        "Parquet file is parsed again for each, a .npy file read again. A CSV or Parquet file is parsed up to "
        "128 MiB ahead in a "
        "background thread while the pass works on the chunks before. regress reads it once (it loads its "
        "columns; the bound pass runs in memory).",
        "`covariance` with public bounds and other figures (s and ratio to the read; csv, parquet, npy): "
        + "; ".join(f"`{flag}` " + ", ".join(f"{v[k]:.1f} s ({v[k] / reads[k]:.2f}×)" for k in FORMATS)
                    for flag, v in lean.items())
        + ". By default the heat map is drawn once, as PNG (matplotlib is imported while the file is parsed); "
        "the differences are what the figures cost.",
        f"Timed with {'1 run' if quick else 'the best of 2 runs'} per cell (tensor: 1); load average (1, 5, 15 "
        f"min) at the start and after each command: {' | '.join(loads)}.",
    ]
    memory.notes += [
        "Resident memory (VmHWM) counts the pages of mapped files that were read (page cache, not "
        "allocations); anonymous memory is what the process allocated. covariance, precision, PCA and tensor "
        "stream the file in chunks; regress loads its columns into memory by design (IRLS reweights every row "
        "at every iteration).",
        f"Memory against file size: compare with the same table at ({'1e6' if quick else '1e5'}, {D}) in "
        + ("io_floor.md" if quick else "io_floor-quick.md") + ".",
    ]
    return [ratio, memory]
