"""Ctrl-C while the command line is still importing: one line and exit status 130, not a traceback.

The first second of every ``dpmoments`` command is spent importing numpy and the package; a
KeyboardInterrupt there would otherwise end in a Python traceback, before ``dpmoments.cli.main``
(which handles it for the rest of the run) has started. The package's and the command line's
imports call :func:`stop_if_command_line` when interrupted; in any other program (a notebook, a
test, a user's script) the interrupt goes on as it came.
"""

import os
import sys

__all__ = ["EXIT_INTERRUPTED", "is_command_line", "stop_if_command_line"]

EXIT_INTERRUPTED = 130


def is_command_line():
    """Whether this process is ``dpmoments`` (the console script) or ``python -m dpmoments``."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if "-m" in argv:
        return argv[argv.index("-m") + 1:][:1] == ["dpmoments"]
    script = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    return os.path.basename(script).split(".")[0] in ("dpmoments", "dpmoments-script")


def stop_if_command_line():
    """In the command line, end the process with one line and status 130; elsewhere return (the caller re-raises)."""
    if is_command_line():
        print("dpmoments: interrupted while starting; no results were written", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED)
