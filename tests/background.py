"""Long subprocess checks started as soon as collection ends, on the core a one-process suite leaves idle.

The suite runs in one process, so on CI's two cores the second one sits mostly idle. A test whose
work is one subprocess with a fixed command (the docs build, the type check) marks itself
``@pytest.mark.prestart(JOB)`` with a :class:`Job` (or another object with ``prestart(item)`` and
``launch()``: ``tests/flower/conftest.py``'s deployment); ``tests/conftest.py`` queues the job of every
selected test when collection ends, one thread runs the queue one job at a time (at low priority, so
the tests beside it keep their core), and the test later waits for its job with :meth:`Job.result`
and checks its output exactly as before. A test reached before its job started starts it itself, and
a test run on its own does the same. The command, its output and what the test checks are the same
either way; only when the command starts differs.
"""

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

_LOCK = threading.Lock()
_QUEUE = []
_STARTED = []
_RUNNER = []  # the queue's thread while it runs
_LANE = []  # (Steps, state, error) waiting for the background lane, in launch order
# A job starts from the queue's thread while a test runs in the main one, and that test may have monkeypatched the
# environment or the directory (tests/cli/test_cluster.py sets DASK_SCHEDULER_ADDRESS to a port nothing listens on:
# a command started then tried that cluster and exited 2). Every job starts from the suite's own, taken at import.
_ENV, _CWD = dict(os.environ), os.getcwd()
_LANE_RUNNER = []  # the lane's thread while it runs


class Job:
    """One subprocess: ``prepare(scratch, background)`` fills a fresh scratch directory and returns
    ``(argv, cwd)``; ``background`` says whether it runs beside other tests (then it should take one core)."""

    def __init__(self, name, prepare, timeout):
        self.name, self.prepare, self.timeout = name, prepare, timeout
        self.proc = self.scratch = None

    def _start(self, background):
        """Start the job unless it has started; the caller holds ``_LOCK``."""
        if self.proc is not None:
            return
        if self in _QUEUE:
            _QUEUE.remove(self)
        self.scratch = Path(tempfile.mkdtemp(prefix=f"dpmoments-{self.name}-"))
        argv, cwd = self.prepare(self.scratch, background)
        with open(self.scratch / "stdout.txt", "w") as out, open(self.scratch / "stderr.txt", "w") as err:
            self.proc = subprocess.Popen((["nice", "-n", "10"] if background else []) + list(argv),
                                         cwd=cwd or _CWD, env=_ENV, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        _STARTED.append(self)

    def prestart(self, item):
        with _LOCK:
            if self.proc is None and self not in _QUEUE:
                _QUEUE.append(self)

    def launch(self):
        """Start the thread that runs the queue, one job at a time, unless it runs."""
        with _LOCK:
            if _RUNNER or not _QUEUE:
                return
            _RUNNER.append(threading.Thread(target=_run_queue, name="prestarted-jobs", daemon=True))
            _RUNNER[0].start()

    def result(self):
        """Wait for the job (started now if it has not started) and return ``(CompletedProcess, scratch)``.

        ``timeout`` counts from this call, as a ``subprocess.run(timeout=...)`` in the test would (a job started
        early is never held against it)."""
        with _LOCK:
            self._start(background=False)
        try:
            self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._stop()
            raise
        done = subprocess.CompletedProcess(self.proc.args, self.proc.returncode,
                                           (self.scratch / "stdout.txt").read_text(errors="replace"),
                                           (self.scratch / "stderr.txt").read_text(errors="replace"))
        return done, self.scratch

    def _stop(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()


def _run_queue():
    while True:
        with _LOCK:
            if not _QUEUE:
                _RUNNER.clear()
                return
            job = _QUEUE[0]
            job._start(background=True)
        job.proc.wait()


@atexit.register
def _clean_up():
    with _LOCK:
        _QUEUE.clear()
    for job in _STARTED:
        job._stop()
        shutil.rmtree(job.scratch, ignore_errors=True)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def start_marked(items):
    """Tell each object a selected item is marked ``prestart`` with which items it serves, then launch each.

    A run stopped by SIGTERM (a CI time limit, ``timeout``) then ends as an interrupted one does: the session
    ends and the exit handlers stop what was started here, which runs in sessions of its own."""
    marked = []
    for item in items:
        for mark in item.iter_markers("prestart"):
            mark.args[0].prestart(item)
            if mark.args[0] not in marked:
                marked.append(mark.args[0])
    if marked and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)
    for obj in marked:
        obj.launch()


class Steps:
    """Tests whose work is other processes' (deployments, drills), run in order in a thread beside the other tests.

    ``prepare(scratch)`` runs in the main thread when the steps launch (this process's own work: data, keys,
    files, in the fresh directory ``scratch``, removed at exit unless a step failed) and returns the state every
    step gets; ``setup(state)`` runs first in the thread and ``teardown(state)``
    last (stopping what setup started). A test marked ``@pytest.mark.prestart(STEPS)`` calls
    ``STEPS.outcome(its name)``, which waits for its step and returns what the step returned or raises what it
    raised (a failed assertion, a skip); only the selected tests' steps run, in the order they were
    registered. A step must not touch this process's shared state (warnings filters, the environment, the
    working directory): the tests beside it use them; it leaves such checks to its test, through its
    return value.
    """

    def __init__(self, name, prepare, setup=None, teardown=None):
        self.name, self.prepare, self.setup, self.teardown = name, prepare, setup, teardown
        self.steps, self.selected, self.outcomes = [], set(), {}
        self.thread = self.state = None  # thread: set once launched

    def step(self, test_name):
        """Register ``fn(state)`` as the step of the test (``item.name``, with its parameters) ``test_name``."""
        def register(fn):
            self.steps.append((test_name, fn))
            self.outcomes[test_name] = [threading.Event(), None, None]  # done, value, exception
            return fn
        return register

    def prestart(self, item):
        self.selected.add(item.name)

    def launch(self):
        """Prepare, then queue the steps on the one background lane (one group of steps at a time, in launch
        order: several deployments at once would each take long enough to reach their own time limits)."""
        if self.thread is not None or not self.selected:
            return
        scratch = Path(tempfile.mkdtemp(prefix=f"dpmoments-{self.name}-"))
        atexit.register(lambda: self.failed() or shutil.rmtree(scratch, ignore_errors=True))
        try:
            state, error = self.prepare(scratch), None
        except BaseException as exc:  # a skip or a failure of the preparation is every step's outcome
            state, error = None, exc
        self.state, self.thread = state, True
        with _LOCK:
            _LANE.append((self, state, error))
            if not _LANE_RUNNER:
                _LANE_RUNNER.append(threading.Thread(target=_run_lane, name="background-steps", daemon=True))
                _LANE_RUNNER[0].start()

    def _run(self, state, error):
        try:
            if error is None and self.setup is not None:
                try:
                    self.setup(state)
                except BaseException as exc:
                    error = exc
            for test_name, fn in self.steps:
                if test_name not in self.selected:
                    continue
                done = self.outcomes[test_name]
                try:
                    if error is not None:
                        raise error
                    done[1] = fn(state)
                except BaseException as exc:
                    done[2] = exc
                done[0].set()
        finally:
            if state is not None and self.teardown is not None:
                self.teardown(state)
            for done in self.outcomes.values():
                done[0].set()

    def failed(self):
        """Whether a step has failed (a skip is no failure)."""
        import pytest

        return any(d[2] is not None and not isinstance(d[2], pytest.skip.Exception) for d in self.outcomes.values())

    def outcome(self, test_name, timeout=1800):
        """Wait for the step of ``test_name`` and return its value, or raise what it raised."""
        if self.thread is None:  # collected without tests/conftest.py's hook
            self.selected.add(test_name)
            self.launch()
        done = self.outcomes[test_name]
        assert done[0].wait(timeout=timeout), f"{test_name}: its step did not end within {timeout} s"
        if done[2] is not None:
            raise done[2]
        return done[1]


def _run_lane():
    while True:
        with _LOCK:
            if not _LANE:
                _LANE_RUNNER.clear()
                return
            steps, state, error = _LANE.pop(0)
        steps._run(state, error)
