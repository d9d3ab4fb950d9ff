"""``python -I _orphan.py CMD ...``: exec ``CMD`` so that it ends when its parent ends.

Run as a script (it imports nothing of dpmoments, so a child starts as fast as without it).

Linux's ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` survives ``exec``: the kernel sends the command
SIGTERM the moment the process that started it dies, even by SIGKILL. Elsewhere the command
simply runs (and is ended by the parent's own teardown).
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv):
    if not argv:
        raise SystemExit("usage: python -I _orphan.py CMD [ARG ...]")
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the request took effect
            raise SystemExit(143)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
