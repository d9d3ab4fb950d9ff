"""Long subprocess checks started as soon as collection ends, on the core a one-process suite leaves idle.

The suite runs in one process, so on CI's two cores the second one sits mostly idle. A test whose
work is one subprocess with a fixed command (the docs build, the type check) marks itself
``@pytest.mark.prestart(JOB)`` with a :class:`Job`; ``tests/conftest.py`` queues the job of every
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
            self.proc = subprocess.Popen((["nice", "-n", "10"] if background else []) + list(argv), cwd=cwd,
                                         stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        _STARTED.append(self)

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


def start_marked(items):
    """Queue the job of every item marked ``prestart`` (once each, in test order) and start the queue's thread."""
    with _LOCK:
        for item in items:
            for mark in item.iter_markers("prestart"):
                if mark.args[0].proc is None and mark.args[0] not in _QUEUE:
                    _QUEUE.append(mark.args[0])
        if not _QUEUE:
            return
    threading.Thread(target=_run_queue, name="prestarted-jobs", daemon=True).start()
