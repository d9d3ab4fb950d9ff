"""Reading a file takes memory that does not grow with the file, for every format.

Each file is read in a fresh subprocess that records its peak anonymous memory (RssAnon: the
heap, not the page cache of a memory-mapped file) above the level after its imports; a file
four times larger must not need noticeably more. The files are many chunks long, so a reader
that buffers the file (pyarrow's CSV read-ahead in large blocks, Parquet column chunks read
whole) fails here.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

ROWS, COLS, CHUNK = 150_000, 4, 8192

_MEASURE = textwrap.dedent("""
    import sys, threading, time
    import numpy as np
    from dpmoments.data import iter_chunks
    import pyarrow, pyarrow.csv, pyarrow.parquet, scipy.sparse  # imports are not the reader's memory

    def anon():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("RssAnon:")) // 1024

    base, peak, done = anon(), [0], []
    def sample():
        while not done:
            peak[0] = max(peak[0], anon())
            time.sleep(0.002)
    threading.Thread(target=sample, daemon=True).start()
    rows = 0
    for X in iter_chunks(sys.argv[1], chunk_size=int(sys.argv[2])):
        rows += X.shape[0]
        peak[0] = max(peak[0], anon())
    done.append(1)
    print(rows, peak[0] - base)
""")


def _write(path, n, kind):
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    from scipy import sparse

    X = np.random.default_rng(0).normal(size=(n, COLS))
    table = pa.table({f"c{j}": X[:, j] for j in range(COLS)})
    if kind == "csv":
        pacsv.write_csv(table, path)
    elif kind == "parquet":
        pq.write_table(table, path, row_group_size=n)  # one row group: the hard case
    elif kind == "npy":
        np.save(path, X)
    else:
        sparse.save_npz(path, sparse.csr_array(np.where(X > 0, X, 0.0)))
    return os.path.getsize(path) >> 20


def _peak(path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=os.environ.get("DPM_SRC", os.pathsep.join(sys.path)))
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(path), str(CHUNK)], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout.split()
    return int(out[0]), int(out[1])


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads RssAnon from /proc")
@pytest.mark.parametrize("kind", ["csv", "parquet", "npy", "npz"])
def test_peak_memory_does_not_grow_with_the_file(tmp_path, kind):
    sizes, peaks = [], []
    for n in (ROWS, 4 * ROWS):
        path = tmp_path / f"x{n}.{kind}"
        sizes.append(_write(path, n, kind))
        rows, peak = _peak(path)
        assert rows == n
        peaks.append(peak)
    grown = peaks[1] - peaks[0]
    assert grown <= 4 + 0.25 * (sizes[1] - sizes[0]), f"{kind}: peaks {peaks} MiB for files of {sizes} MiB"
