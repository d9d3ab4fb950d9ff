"""Ctrl-C, SIGTERM and SIGHUP: one way to stop a run, and a moment when they wait.

:func:`install` makes SIGINT raise ``KeyboardInterrupt`` and SIGTERM/SIGHUP
(what ``timeout``, systemd, Slurm and ``docker stop`` send) raise
:class:`Stopped`, both in the main thread, so every ``finally`` and
``__exit__`` runs: the temporary results are removed. Inside :func:`held`
(the atomic swap of a results directory) a signal is only noted and raised
right after, so a run is never stopped half way through publishing.

A signal the process inherited as ignored stays ignored: ``nohup`` (SIGHUP),
a shell's background job (SIGINT), a service manager or a container may have
set that on purpose, and the run must outlive the terminal it was started
from. It stops on the signals it was given, and only those. This is
done in Python rather than with a signal mask, which would hold the signal
back from the main thread only: any other thread (a BLAS or I/O pool) would
still receive it.
"""

import contextlib
import signal

__all__ = ["Stopped", "install", "restore", "held", "pending"]

_state = {"held": False, "pending": []}


class Stopped(BaseException):
    """A SIGTERM or SIGHUP, raised where the run is (a BaseException: no ``except Exception`` swallows it)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise(signum):
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Stopped(signum)


def _handler(signum, frame):
    if _state["held"]:
        _state["pending"].append(signum)
        return
    _raise(signum)


def install():
    """Install the handlers (main thread only; elsewhere nothing changes); return the previous ones.

    A signal whose inherited disposition is "ignore" keeps it (see the module's docstring).
    """
    previous = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is None or signal.getsignal(signum) == signal.SIG_IGN:
            continue
        try:
            previous[signum] = signal.signal(signum, _handler)
        except ValueError:  # not the main thread
            break
    return previous


def restore(previous):
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def pending():
    """Whether a signal arrived while held (for tests that wait at a point inside :func:`held`)."""
    return bool(_state["pending"])


@contextlib.contextmanager
def held():
    """Note signals instead of raising them; raise the first one noted on leaving."""
    outer = _state["held"]
    _state["held"] = True
    try:
        yield
    finally:
        _state["held"] = outer
        if not outer and _state["pending"]:
            signum = _state["pending"][0]
            _state["pending"].clear()
            _raise(signum)
