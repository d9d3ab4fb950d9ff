"""Drills: every analysis command killed at every point of a run, and twenty runs at once.

Kill drill. Each command first writes a result; then a second run with ``--force`` is stopped
with SIGTERM or SIGKILL while reading, half way through writing, just before the swap and just
after it (``tests/cli/drill.py`` holds the run at that point): ``covariance`` with both signals at
every point, every other command with each signal at alternate points. Afterwards the inputs are
byte-for-byte unchanged, the destination holds either the complete old result or a complete new
one, a SIGTERM leaves no temporary and exits 143 with one line, and the litter of a SIGKILL is
gone once the next run has started.

Load drill. Twenty command-line processes at once (forked by the same zygote), ten into one shared
parent directory and ten replacing the same destination with ``--force``: every run succeeds, every result is right
and complete, and no temporary is left.
"""

import atexit
import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from dpmoments.cli import _output

from ..background import Steps
from .helpers import ENV

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the drill forks its runs (POSIX)")

ROOT = Path(__file__).resolve().parents[2]
PHASES = ("read", "write", "publish", "swapped")
SEED = ["--seed", "0", "--no-figures"]
PRIV = ["--epsilon", "1", "--delta", "1e-6", *SEED]


def _make_inputs(d):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4)) / 2
    y = X @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.05 * rng.normal(size=600)
    np.save(d / "x.npy", X)
    header = "a,b,c,d,y\n"
    (d / "xy.csv").write_text(header + "\n".join(",".join(f"{v:.6f}" for v in r) for r in np.c_[X, y]) + "\n")
    for s in range(2):
        (d / f"site{s}.csv").write_text("a,b,c,d\n" + "\n".join(",".join(f"{v:.6f}" for v in r)
                                                                  for r in X[s * 300:(s + 1) * 300]) + "\n")
    from dpmoments.datasets.mixtures import make_mog

    np.save(d / "mog.npy", make_mog(2000, 3, 2, sigma2=0.01, rng=0).X)
    return d


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return _make_inputs(tmp_path_factory.mktemp("drill-inputs"))


def commands(d):
    """Each analysis command on small data: (name, argv without --out, whether it reads a data file)."""
    return {
        "covariance": ([str(d / "x.npy"), *PRIV, "--row-norm", "2", "--uncentred", "--chunk-size", "100"], True),
        "precision": ([str(d / "xy.csv"), "--columns", "a,b,c,d", *PRIV, "--row-norm", "2", "--edges", "2",
                       "--chunk-size", "100"], True),
        "pca": ([str(d / "x.npy"), "--n-components", "2", *PRIV, "--row-norm", "2", "--chunk-size", "100"], True),
        "tensor": ([str(d / "mog.npy"), "--model", "mog", "--sigma2", "0.01", "--n-components", "2", *PRIV,
                    "--row-norm", "3", "--chunk-size", "500", "--n-restarts", "2"], True),
        "regress": ([str(d / "xy.csv"), "--target", "y", *PRIV, "--row-norm", "2", "--response-bound", "3",
                     "--n-iter", "2", "--w-max", "10", "--chunk-size", "100"], True),
        "select": ([str(d / "xy.csv"), "--target", "y", "--epsilon", "1", *SEED, "--bounds", "1",
                    "--response-bound", "3", "--R", "2", "--max-size", "2", "--chunk-size", "100"], True),
        "simulate": ([str(d / "site0.csv"), str(d / "site1.csv"), "--protocol", "cape", *PRIV, "--row-norm", "2",
                      "--uncentred", "--chunk-size", "100"], True),  # 600 rows: too few for a private centre
        "audit": (["--epsilon", "1", "--delta", "1e-5", "--dim", "2", "--n-samples", "20000", "--seed", "0"], False),
        "demo": (SEED, False),
    }


class Zygote:
    """The client of ``tests/cli/drill.py``: one forked ``dpmoments`` run at a time."""

    def __init__(self):
        env = dict(ENV, PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.cli.drill"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.logs, self.runs = tempfile.mkdtemp(prefix="drill-logs-"), 0

    def _line(self, timeout=120):
        fd, out, deadline = self.proc.stdout.fileno(), b"", time.monotonic() + timeout
        while not out.endswith(b"\n"):
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise TimeoutError("the drill zygote did not answer")
            byte = os.read(fd, 1)
            if not byte:
                raise RuntimeError("the drill zygote died")
            out += byte
        return out.decode().split()

    def run(self, argv, cwd, phase=None, sig=None, ignore=(), pause_s=None):
        """Run ``dpmoments ARGV``; with ``phase``, send ``sig`` there (a signal or a sequence of them).

        ``ignore``: signal names the run inherits as ignored; ``pause_s``: how long it waits at ``phase``.
        Returns (exit status, stderr lines).
        """
        self.runs += 1
        log = Path(self.logs) / f"run-{self.runs}.log"  # a fresh log: an old marker must not trigger the signal
        request = {"argv": [str(a) for a in argv], "cwd": str(cwd), "phase": phase, "log": str(log),
                   "ignore": list(ignore)}
        if pause_s is not None:
            request["pause_s"] = pause_s
        self.proc.stdin.write((json.dumps([request]) + "\n").encode())
        pid = int(self._line()[1])
        if phase is not None:
            deadline = time.monotonic() + 120
            while f"drill: {phase}" not in (log.read_text() if log.exists() else ""):
                if select.select([self.proc.stdout], [], [], 0.005)[0] or time.monotonic() > deadline:
                    raise AssertionError(f"the run never reached '{phase}': {log.read_text()}")
            for one in (sig if isinstance(sig, (tuple, list)) else [sig]):
                os.kill(pid, one)
                time.sleep(0.05)
        status = int(self._line()[1])
        lines = [line for line in log.read_text().splitlines() if not line.startswith("drill: ")]
        return status, lines

    def batch(self, argvs, cwd):
        """Run every ``dpmoments ARGV`` at once; returns their exit statuses and stderr texts."""
        logs = [Path(self.logs) / f"batch-{self.runs}-{k}.log" for k in range(len(argvs))]
        self.runs += 1
        requests = [{"argv": [str(a) for a in argv], "cwd": str(cwd), "phase": None, "log": str(log)}
                    for argv, log in zip(argvs, logs)]
        self.proc.stdin.write((json.dumps(requests) + "\n").encode())
        assert len(self._line()) == len(argvs) + 1
        statuses = [int(s) for s in self._line(timeout=300)[1:]]
        return statuses, [log.read_text() for log in logs]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.logs, ignore_errors=True)


@pytest.fixture(scope="module")
def zygote():
    z = Zygote()
    yield z
    z.close()


def _snapshot(path):
    if not path.exists():
        return None
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _complete(path):
    """A whole result: the marker lists files that all exist, are non-empty, and the report parses."""
    marker = json.loads((path / _output.MARKER).read_text())
    assert marker["files"], marker
    for name in marker["files"]:
        assert (path / name).stat().st_size > 0, name
        if name.endswith(".json"):
            json.loads((path / name).read_text())
    return True


def _digest(d):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def _temps(parent):
    return [p.name for p in parent.iterdir() if p.name.startswith((".dpmoments-tmp-", ".dpmoments-old-"))]


def _drill_one(zygote, inputs, work, name, phase, sig):
    argv, reads = commands(inputs)[name]
    out = work / "result"
    (out / "drill-old.txt").write_text("the old result")  # seeded runs repeat themselves: tell old from new
    marker = json.loads((out / _output.MARKER).read_text())  # listed, as if the old run had written it:
    marker["files"] = sorted(set(marker["files"]) | {"drill-old.txt"})  # --force spares files it did not write
    (out / _output.MARKER).write_text(json.dumps(marker))
    before, digest = _snapshot(out), _digest(inputs)
    status, lines = zygote.run([name, *argv, "--out", "result", "--force"], work, phase, sig)
    assert _digest(inputs) == digest, "an input changed"
    after = _snapshot(out)
    if phase in ("read", "write") or (phase == "publish" and sig == signal.SIGKILL):
        assert after == before, f"{name} {phase}: the old result changed"
    else:  # the swap had begun: a complete new result
        assert after != before and _complete(out), f"{name} {phase}"
    lines = [line for line in lines if not line.startswith("dpmoments: warning: ")]  # warnings are not errors
    if sig == signal.SIGTERM:
        assert status == 128 + signal.SIGTERM and len(lines) == 1 and "stopped by SIGTERM" in lines[0], lines
        assert ("had been written" in lines[0]) == (after != before), lines
        assert not _temps(work), _temps(work)
    else:
        assert status == -signal.SIGKILL
        status, lines = zygote.run([name, *argv, "--out", "next", "--force"], work)
        assert status in (0, 3) and not _temps(work), (lines, _temps(work))


def _scenarios(names, every=False):
    """Each command meets SIGTERM and SIGKILL, each signal at alternate points (``every``: all of them)."""
    for k, name in enumerate(names):
        reads = commands(Path("."))[name][1]
        for j, phase in enumerate(PHASES if reads else PHASES[1:]):
            signals = (signal.SIGTERM, signal.SIGKILL)
            for sig in signals if every else [signals[(j + k) % 2]]:
                yield name, phase, sig


def _drill(zygote, inputs, tmp_path, names, every=False):
    works = {}
    for name, phase, sig in _scenarios(names, every):
        if name not in works:  # the old result the forced runs replace
            works[name] = tmp_path / name
            works[name].mkdir()
            argv, _ = commands(inputs)[name]
            status, lines = zygote.run([name, *argv, "--out", "result"], works[name])
            assert status in (0, 3) and _complete(works[name] / "result"), lines
        _drill_one(zygote, inputs, works[name], name, phase, sig)


# The kill and load drills run beside the other tests (tests/background.py): their work is the forked runs', in a
# thread with its own zygote and inputs; their tests come last and wait for them.
def _prepare(root):
    (root / "inputs").mkdir()
    return dict(root=root, inputs=_make_inputs(root / "inputs"))


def _start_zygote(state):
    state["zygote"] = Zygote()
    atexit.register(state["zygote"].proc.kill)  # should the test run end first (its thread is a daemon)


def _stop_zygote(state):
    if "zygote" in state:
        state["zygote"].close()


DRILLS = Steps("cli-drills", _prepare, _start_zygote, _stop_zygote)


def _work(state, name):
    (state["root"] / name).mkdir()
    return state["root"] / name


@DRILLS.step("test_kill_drill_covariance")
def _kill_drill_covariance(state):
    _drill(state["zygote"], state["inputs"], _work(state, "covariance"), ["covariance"], every=True)


@DRILLS.step("test_kill_drill_every_analysis_command")
def _kill_drill_every_analysis_command(state):
    inputs = state["inputs"]
    _drill(state["zygote"], inputs, _work(state, "every"), [n for n in commands(inputs) if n != "covariance"])


@DRILLS.step("test_load_drill_twenty_concurrent_runs")
def _load_drill_twenty_concurrent_runs(state):
    inputs, tmp_path = state["inputs"], _work(state, "load")
    base = ["-q", "covariance", str(inputs / "x.npy"), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "2",
            "--uncentred", "--no-figures"]
    runs = [[*base, "--seed", str(k), "--out", f"own-{k}"] for k in range(10)]
    runs += [[*base, "--seed", str(k), "--out", "shared", "--force"] for k in range(10)]
    statuses, errors = state["zygote"].batch(runs, tmp_path)
    assert statuses == [0] * 20, errors
    assert _complete(tmp_path / "shared") and not _temps(tmp_path)
    return inputs, tmp_path


@pytest.mark.prestart(DRILLS)
def test_kill_drill_covariance():
    DRILLS.outcome("test_kill_drill_covariance")


@pytest.mark.slow
@pytest.mark.prestart(DRILLS)
def test_kill_drill_every_analysis_command():
    DRILLS.outcome("test_kill_drill_every_analysis_command")


@pytest.mark.prestart(DRILLS)
def test_load_drill_twenty_concurrent_runs():
    inputs, tmp_path = DRILLS.outcome("test_load_drill_twenty_concurrent_runs")
    from dpmoments import release_second_moment

    X = np.load(inputs / "x.npy")
    expected = {k: release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=2.0, rng=k, center=None).project_psd(0.0)
                .second_moment for k in range(10)}
    for k in range(10):
        np.testing.assert_allclose(np.load(tmp_path / f"own-{k}" / "covariance.npy"), expected[k], rtol=1e-12)
    shared = np.load(tmp_path / "shared" / "covariance.npy")
    assert any(np.allclose(shared, e, rtol=1e-12) for e in expected.values())


def _covariance_run(zygote, inputs, work, **kwargs):
    argv, _ = commands(inputs)["covariance"]
    return zygote.run(["covariance", *argv, "--out", "result", "--force"], work, **kwargs)


@pytest.mark.parametrize("name", ["SIGHUP", "SIGINT"])
def test_a_signal_inherited_as_ignored_stays_ignored(zygote, inputs, tmp_path, name):
    """``nohup`` (SIGHUP) and a shell's background job (SIGINT): the run outlives the terminal."""
    sig = getattr(signal, name)
    status, lines = _covariance_run(zygote, inputs, tmp_path, phase="read", sig=sig, ignore=[name], pause_s=0.5)
    assert status == 0 and _complete(tmp_path / "result"), lines


def test_a_run_with_sighup_ignored_still_stops_cleanly_on_sigterm(zygote, inputs, tmp_path):
    status, _ = _covariance_run(zygote, inputs, tmp_path)
    assert status == 0
    before = _snapshot(tmp_path / "result")
    status, lines = _covariance_run(zygote, inputs, tmp_path, phase="read", sig=(signal.SIGHUP, signal.SIGTERM),
                                    ignore=["SIGHUP"])
    lines = [line for line in lines if not line.startswith("dpmoments: warning: ")]
    assert status == 128 + signal.SIGTERM and len(lines) == 1 and "stopped by SIGTERM" in lines[0], lines
    assert _snapshot(tmp_path / "result") == before and not _temps(tmp_path)


def test_nohup_keeps_a_real_process_alive(inputs, tmp_path):
    """A real ``python -m dpmoments`` started with SIGHUP ignored (as ``nohup`` starts it) is sent SIGHUP
    again and again until it ends: it finishes its run."""
    argv, _ = commands(inputs)["covariance"]
    env = dict(ENV, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-m", "dpmoments", "covariance", *argv, "--out", "result"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.02)
    assert proc.wait(timeout=5) == 0, proc.stderr.read()
    assert _complete(tmp_path / "result")
