"""The ``dpmoments`` command line (layer 4: the only code that reads files or prints).

Built on :mod:`argparse` (standard library) with no rich/typer dependency:
the command line is part of the core package, and a privacy tool should pull
in as little as it can. Progress is a one-line indicator of our own on stderr
(:mod:`._progress`), shown only on a terminal and never with ``--quiet``.

Subcommands live in a registry: each is a module ``dpmoments.cli.<name>``
(``noise_generator`` is spelled ``noise-generator`` on the command line) with

* ``HELP`` (one line), ``DESCRIPTION`` and ``EXAMPLES`` (strings);
* ``add_arguments(parser)``: its options (see :mod:`._args` for the shared
  input, privacy and output groups);
* ``run(args) -> int``: the work; raise :class:`CliError` (or ``ValueError``,
  ``OSError``) for a user error, return the exit status.

Adding a subcommand is adding its module and one name to :data:`COMMANDS`.
Errors print one line ``dpmoments <command>: error: ...`` on stderr and exit
with status 2 (``--traceback`` shows the Python traceback instead).
"""

import argparse
import importlib
import sys
import warnings

from .._version import __version__
from ..exceptions import BudgetExceededError, UncertifiedSpendError
from ._args import CliError

__all__ = ["main", "build_parser", "COMMANDS", "CliError"]

#: The subcommands, in the order ``--help`` lists them. One module each.
COMMANDS = ("demo", "covariance", "precision", "pca", "tensor", "regress", "select", "audit", "simulate", "reproduce",
            "noise_generator", "site", "aggregate")

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``usage`` is left to ``--help``)."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog):
        super().__init__(prog, max_help_position=32, width=100)


def _module(name):
    return importlib.import_module(f"{__name__}.{name}")


def build_parser():
    """The argument parser, with one subparser per registered command."""
    parser = _Parser(
        prog="dpmoments", formatter_class=_Formatter,
        description="Differentially private multivariate statistics from privately released moments.",
        epilog="examples:\n  dpmoments demo --out sachs-demo\n"
               "  dpmoments covariance data.csv --epsilon 1 --delta 1e-6 --row-norm 10 --out cov\n"
               "  dpmoments precision data.parquet --epsilon 1 --delta 1e-6 --row-norm 10 --out net\n"
               "  dpmoments pca data.csv --n-components 2 --epsilon 1 --delta 1e-6 --row-norm 10 --out pca\n"
               "  dpmoments simulate site1.csv site2.csv --protocol cape --epsilon 1 --delta 1e-6 --row-norm 10 --out sim\n"
               "  dpmoments audit --mechanism gaussian --epsilon 1 --delta 1e-5 --dim 2\n"
               "  dpmoments reproduce --list\n\n"
               "'dpmoments COMMAND --help' explains each command; every result directory holds a JSON privacy report.",
    )
    parser.add_argument("--version", action="version", version=f"dpmoments {__version__}")
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors (no progress line)")
    parser.add_argument("--traceback", action="store_true", help="on an error, show the Python traceback")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS:
        mod = _module(name)
        cmd = sub.add_parser(name.replace("_", "-"), help=mod.HELP, description=mod.DESCRIPTION,
                             epilog="examples:\n" + mod.EXAMPLES, formatter_class=_Formatter)
        cmd.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS,
                         help="print nothing but errors")
        mod.add_arguments(cmd)
        cmd.set_defaults(_run=mod.run)
    return parser


def _one_line(exc):
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, KeyError):
        text = text.strip("'\"")
    return text


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"dpmoments: warning: {_one_line(message)}", file=sys.stderr)


def main(argv=None):
    """Run the command line; return the exit status (0 success, 2 bad input, 130 interrupted)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    prog = f"dpmoments {args.command}"
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return int(args._run(args) or 0)
        except BrokenPipeError:  # e.g. piped into head: not an error of ours
            sys.stderr.close()
            return 0
        except KeyboardInterrupt:
            print(f"{prog}: interrupted; no results were written", file=sys.stderr)
            return EXIT_INTERRUPTED
        except (CliError, ValueError, TypeError, OSError, ImportError, BudgetExceededError,
                UncertifiedSpendError) as exc:
            if args.traceback:
                raise
            print(f"{prog}: error: {_one_line(exc)}", file=sys.stderr)
            return EXIT_USAGE
