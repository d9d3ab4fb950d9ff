"""The one line an error gets on the console, and the guard that keeps data out of it.

dpmoments' own messages name the parameter or file and what is wrong, never a
value read from the data. A message written by a library (numpy, pyarrow,
the ``csv`` module, ``float()``) may quote a cell or a whole row, so it is
shown only when the exception was raised by a ``raise`` statement in
dpmoments' own code; otherwise the line says what kind of error occurred
where, and ``--traceback`` shows the full text to whoever runs the command.
"""

import linecache
import os
import re

from ..exceptions import BudgetExceededError, UncertifiedSpendError

__all__ = ["EXIT_USAGE", "EXIT_INTERNAL", "describe_error", "one_line"]

EXIT_USAGE = 2
EXIT_INTERNAL = 1
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Errors of the input or the environment (exit 2); anything else is a fault of ours (exit 1).
USER_ERRORS = (ValueError, TypeError, OSError, ImportError, ArithmeticError, MemoryError, BudgetExceededError,
               UncertifiedSpendError)


def one_line(exc):
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, KeyError):
        text = text.strip("'\"")
    return text


def _raised_by_us(exc):
    """Whether ``exc`` comes from a ``raise`` statement in dpmoments' own source."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
    if not filename.startswith(_PACKAGE + os.sep):
        return False
    return re.match(r"\s*raise\b", linecache.getline(filename, tb.tb_lineno)) is not None


def _origin(exc):
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "dpmoments"
    module = tb.tb_frame.f_globals.get("__name__", "") or "?"
    return module.split(".")[0]


def describe_error(exc):
    """``(exit status, one line)`` for an exception that ended a run."""
    from ._args import CliError

    if isinstance(exc, CliError) or (isinstance(exc, USER_ERRORS) and _raised_by_us(exc)):
        return EXIT_USAGE, one_line(exc)
    if isinstance(exc, OSError) and exc.strerror:  # the system's words for an errno hold no data
        where = f": '{exc.filename}'" if exc.filename else f" (in {_origin(exc)}; --traceback shows where)"
        return EXIT_USAGE, f"{exc.strerror}{where}"
    if isinstance(exc, ArithmeticError):
        return EXIT_USAGE, (f"a number went out of the floating-point range ({type(exc).__name__}); check the size "
                            "of --epsilon, --delta and the bounds (such as --row-norm) and rescale the data if needed")
    if isinstance(exc, MemoryError):
        return EXIT_USAGE, ("not enough memory: each d x d statistic takes 8 d^2 bytes (select fewer --columns) and each "
                            "chunk of rows its share (lower --chunk-size, or --max-rows where the command loads the data)")
    hidden = "its message is withheld because it may quote the data; --traceback shows it"
    if isinstance(exc, Warning):  # python -W error asked warnings to end the run; dpmoments' own never quote data
        ours = type(exc).__module__ == "dpmoments.exceptions"
        return EXIT_USAGE, f"{type(exc).__name__} turned into an error (-W error): {one_line(exc) if ours else hidden}"
    if isinstance(exc, USER_ERRORS):
        return EXIT_USAGE, f"{type(exc).__name__} in {_origin(exc)} ({hidden})"
    return EXIT_INTERNAL, f"unexpected {type(exc).__name__} in {_origin(exc)}, a fault of dpmoments ({hidden})"
