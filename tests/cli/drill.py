"""A zygote for the kill drill: real ``dpmoments`` processes, forked from one warm interpreter.

Run as ``python -m tests.cli.drill``; it imports the command line once, then for every request
on stdin (one JSON list per line of ``{"argv": [...], "cwd": DIR, "phase": NAME|null, "log": FILE}``)
forks children that run ``dpmoments.cli.main(argv)`` exactly as the console script does (each its
own process with its own signal handlers, all of a list at once), prints ``pid N ...``, waits for
them and prints ``exit S ...`` (``-K`` when killed by signal K). With a ``phase``, the child writes ``drill: NAME`` to its log
and sleeps there (``pause_s``, default 60 s, or until a signal is held back), so that the test can send it a
signal at a known point; ``ignore`` lists signals (by name) the child starts with ignored, as ``nohup`` or a
shell's background job would leave them:

* ``read``: the first chunk of the data has been read;
* ``write``: the results are half written into the temporary directory;
* ``publish``: everything is written and checked, just before the atomic swap;
* ``swapped``: the new result is in place, the old one not yet deleted.

Forking saves the interpreter's start-up (seconds per run); what is drilled is the same code.
"""

import json
import os
import signal
import sys
import time

import dpmoments.cli  # noqa: F401 - imported once, before any fork
import dpmoments.multisite  # noqa: F401 - what the commands import lazily, imported before forking
import dpmoments.estimators  # noqa: F401
import dpmoments.plots  # noqa: F401
import matplotlib.figure  # noqa: F401
import sklearn.base  # noqa: F401
from dpmoments.cli import _io, _output, _signals, main

PAUSE_S = 60
_PAUSE = {"s": PAUSE_S}


def _pause(phase, wanted):
    """Wait at ``wanted`` for a signal; one held back (during the swap) ends the wait too."""
    if phase != wanted:
        return
    sys.stderr.write(f"drill: {phase}\n")
    sys.stderr.flush()
    deadline = time.monotonic() + _PAUSE["s"]
    while time.monotonic() < deadline and not _signals.pending():
        time.sleep(0.005)


def _arm(phase):
    chunks, save_json, publish, exchange = (_io.DataSource.chunks, _output.ResultsDir.save_json,
                                            _output.ResultsDir._publish, _output.exchange)

    def read(self, *args, **kwargs):
        for k, chunk in enumerate(chunks(self, *args, **kwargs)):
            yield chunk
            if k == 0:
                _pause("read", phase)

    def write(self, name, obj):
        _pause("write", phase)
        return save_json(self, name, obj)

    def before_publish(self):
        _pause("publish", phase)
        return publish(self)

    def swapped(new, final):
        exchange(new, final)
        _pause("swapped", phase)

    _io.DataSource.chunks, _output.ResultsDir.save_json = read, write
    _output.ResultsDir._publish, _output.exchange = before_publish, swapped


def _child(request):
    os.chdir(request["cwd"])
    fd = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    sys.stdout = os.fdopen(1, "w")
    for name in request.get("ignore", ()):  # as inherited: set before the command line starts
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    _PAUSE["s"] = request.get("pause_s", PAUSE_S)
    if request.get("phase"):
        _arm(request["phase"])
    try:
        status = main(request["argv"])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 2
    sys.stderr.flush()
    os._exit(status)


def serve():
    for line in sys.stdin:
        requests = json.loads(line)
        pids = []
        for request in requests:  # a batch runs concurrently
            pid = os.fork()
            if pid == 0:
                _child(request)
            pids.append(pid)
        print("pid", *pids, flush=True)
        statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
        print("exit", *statuses, flush=True)


if __name__ == "__main__":
    serve()
