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
A command module's top imports only what its parser needs: ``--help`` builds
every parser and imports no NumPy; ``run`` and the functions it calls import
the rest (``tests/test_import_cost.py``).
Errors print one line ``dpmoments <command>: error: ...`` on stderr and exit
with status 2 (``--traceback`` shows the Python traceback instead); see
:mod:`._errors` for how a message that could quote data is kept off the
console. SIGTERM and SIGHUP end a run like Ctrl-C: the temporary results are
removed and the exit status is 128 + the signal number. ``--json`` prints the
run's report on stdout and nothing else there; ``--completion bash|zsh``
prints a shell completion script generated from the parser.
"""

import argparse
import importlib
import json
import os
import signal
import sys
import warnings

from .._startup import EXIT_INTERRUPTED, stop_if_command_line
from .._version import __version__

try:  # Ctrl-C while the command line imports: one line, exit 130 (see dpmoments._startup)
    from . import _signals
    from ._numbers import CliError
    from ._errors import EXIT_USAGE, describe_error, one_line
except KeyboardInterrupt:
    stop_if_command_line()
    raise

__all__ = ["main", "build_parser", "COMMANDS", "CliError"]

#: The subcommands, in the order ``--help`` lists them. One module each.
COMMANDS = ("demo", "covariance", "correlation", "precision", "pca", "tensor", "regress", "select", "audit", "simulate",
            "reproduce", "noise_generator", "site", "aggregate")

#: Paths a run reads; an ``--out`` may never be, contain or lie inside one of them.
INPUT_ATTRIBUTES = ("data", "more_data", "truth", "pair", "plan", "share")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``usage`` is left to ``--help``) and no abbreviated options.

    An abbreviation is a guess: ``regress --response y`` was read as ``--response-bound y``, and
    ``--row 5`` would have been ``--row-norm 5``, a privacy input, without a word.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        hints = _spelled_here(message) + _several_files_hint(message, self._takes_several())
        prog = self._help_prog(message)
        self.exit(EXIT_USAGE, f"{prog}: error: {message}{hints} (see '{prog} --help')\n")

    def _help_prog(self, message):
        """The command whose --help lists the options: argparse reports leftover words from the top parser, which
        holds the run's command alone (build_parser), so ``regress --response y`` points to ``dpmoments regress``."""
        commands = {id(p): p for a in self._actions if isinstance(a, argparse._SubParsersAction)
                    for p in a.choices.values()}
        if message.startswith("unrecognized arguments") and len(commands) == 1:
            return next(iter(commands.values())).prog
        return self.prog

    def _takes_several(self):
        """Whether the command's data input takes several files (``_args.add_input_arguments(several=True)``).

        argparse reports leftover words from the top parser, which holds the run's command alone (build_parser).
        """
        parsers = [self] + [p for a in self._actions if isinstance(a, argparse._SubParsersAction)
                            for p in a.choices.values()]
        return any(a.dest == "data" and a.nargs == "+" for p in parsers for a in p._actions)


def _spelled_here(message):
    """A hint when ``--bounds age=0:120`` (``--ranges``' other spelling, taken by every command that takes ranges)
    reaches a command that takes none."""
    if message.startswith("unrecognized arguments") and any(w.startswith("--bounds") for w in message.split()):
        return ("; this command takes no per-column ranges (--ranges or --bounds COL=LOW:HIGH,...: the analyses, "
                "simulate and noise-generator; docs/bounds.md)")
    return ""


def _several_files_hint(message, several=False):
    """Extra words that are all existing paths: an unquoted glob the shell expanded into several data files
    (``several``: the command takes them, but together, not split by options)."""
    words = message.split(": ", 1)[1].split() if message.startswith("unrecognized arguments: ") else []
    if words and all(os.path.exists(w) for w in words):
        if several:
            return ("; several data files are one input when given together, not split by options (or give their "
                    "directory or a quoted glob, 'data/*.parquet')")
        return ("; several data files are one input as their directory or a quoted glob ('data/*.parquet'), which "
                "the shell then leaves alone")
    return ""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog):
        super().__init__(prog, max_help_position=32, width=100)


class _Completion(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        from ._completion import script

        sys.stdout.write(script(parser, values))
        parser.exit(0)


class _Json(argparse.Action):
    """``--json``: the report on stdout and nothing else there, so it implies ``--quiet``."""

    def __init__(self, option_strings, dest, default=False, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.json = namespace.quiet = True


def _module(name):
    return importlib.import_module(f"{__name__}.{name}")


def build_parser(only=None):
    """The argument parser, with one subparser per registered command (``only``: just that command's).

    A run needs its own command's options only: importing every command's module (the multi-site ones
    load the protocols, ``demo`` the data sets) cost each run a quarter of a second.
    """
    parser = _Parser(
        prog="dpmoments", formatter_class=_Formatter,
        description="Differentially private multivariate statistics from privately released moments.",
        epilog="examples:\n  dpmoments demo --out sachs-demo\n"
               "  dpmoments covariance data.csv --epsilon 1 --delta 1e-6 --row-norm 10 --out cov\n"
               "  dpmoments precision data.parquet --epsilon 1 --delta 1e-6 --row-norm 10 --out net\n"
               "  dpmoments pca data.csv --n-components 2 --epsilon 1 --delta 1e-6 --row-norm 10 --out pca\n"
               "  dpmoments simulate site1.csv site2.csv --protocol cape --epsilon 1 --delta 1e-6 --row-norm 10 --out sim\n"
               "  dpmoments audit --mechanism gaussian --epsilon 1 --delta 1e-5 --dim 2\n"
               "  dpmoments reproduce --list\n"
               "  source <(dpmoments --completion bash)      # tab completion in bash (zsh: --completion zsh)\n\n"
               "'dpmoments COMMAND --help' explains each command; every result directory holds a JSON privacy report.",
    )
    parser.add_argument("--version", action="version", version=f"dpmoments {__version__}")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print nothing but errors and warnings (no results, no progress line): a warning says the "
                             "output is mostly noise or a privacy parameter is risky, and is never silenced")
    parser.add_argument("--json", action=_Json,
                        help="print the run's report (privacy_report.json) as JSON on stdout, and nothing else there")
    parser.add_argument("--traceback", action="store_true", help="on an error, show the Python traceback")
    parser.add_argument("--completion", choices=("bash", "zsh"), action=_Completion,
                        help="print a shell completion script and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS if only is None else (only,) if only else ():
        mod = _module(name)
        cmd = sub.add_parser(name.replace("_", "-"), help=mod.HELP, description=mod.DESCRIPTION,
                             epilog="examples:\n" + mod.EXAMPLES, formatter_class=_Formatter)
        cmd.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS,
                         help="print nothing but errors and warnings")
        cmd.add_argument("--json", action=_Json, default=argparse.SUPPRESS,
                         help="print the report as JSON on stdout (and nothing else there)")
        cmd.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS,
                         help="on an error, show the Python traceback")
        mod.add_arguments(cmd)
        cmd.set_defaults(_run=mod.run)
    return parser


def _command_of(argv):
    """The command ``argv`` names (its first word that is not an option), or ``None`` (then every parser is built).

    ``()`` for ``--version`` before any command: it prints a constant, and importing every command to build
    parsers it never reads tripled its time.
    """
    for word in argv:
        if not word.startswith("-"):
            name = word.replace("-", "_")
            return name if name in COMMANDS else None
        if word == "--completion":  # its value is a shell, not a command; it prints every command's parser
            return None
        if word == "--version":
            return ()
    return None


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _foreign_deprecation(category, filename):
    """Another package's deprecation notice (click's, through typer or flwr): not the user's to act on, nor ours to
    word as a dpmoments warning. dpmoments' own (its warning classes, or raised from its files) are kept."""
    if not issubclass(category, (DeprecationWarning, PendingDeprecationWarning)):
        return False
    ours = category.__module__.startswith("dpmoments") or os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
    return not ours


def _warning_shower(python_shower):
    """``warnings.showwarning`` for a run: one ``dpmoments: warning:`` line each; another package's deprecation
    notice goes to Python's own handler (shown in Python's format only where the user's filters ask, -W default)."""

    def show(message, category, filename, lineno, file=None, line=None):
        from ._choices import cli_words

        if _foreign_deprecation(category, filename):
            python_shower(message, category, filename, lineno, file, line)
            return
        print(f"dpmoments: warning: {cli_words(one_line(message))}", file=sys.stderr)

    return show


def _inputs(args):
    found = []
    for name in INPUT_ATTRIBUTES:
        value = getattr(args, name, None)
        found += [value] if isinstance(value, str) else list(value or [])
    return found


def _stopped_message(prog, what):
    from ._output import RUN

    if RUN.published:
        return f"{prog}: {what}; the results in '{RUN.published[-1][0]}' had been written completely"
    return f"{prog}: {what}; no results were written"


def _print_json():
    from ._output import RUN, _jsonable

    document = RUN.document
    if document is None and RUN.published:
        documents = RUN.published[-1][1]
        document = documents.get("privacy_report.json", next(iter(documents.values()), None))
    if document is not None:
        print(json.dumps(document, indent=2, default=_jsonable))


def main(argv=None):
    """Run the command line; return the exit status (0 success, 2 bad input, 130/143 interrupted)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before the run began: parsing, importing the command's modules
        print("dpmoments: interrupted while starting; no results were written", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv):
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(words))
    args = parser.parse_args(words, namespace=argparse.Namespace(argv=words))  # the words as typed, for the report
    from . import _io
    from ._output import RUN

    prog = f"dpmoments {args.command}"
    RUN.begin(args.command, inputs=_inputs(args), csv=getattr(args, "csv", False),
              figure_formats=getattr(args, "figure_format", None))
    _io.use_file_options(args)
    previous = _signals.install()
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_shower(warnings.showwarning)
            status = int(args._run(args) or 0)
        if args.json and status in (0, 3):
            _print_json()
        return status
    except BrokenPipeError:  # e.g. piped into head: not an error of ours
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(_stopped_message(prog, "interrupted"), file=sys.stderr)
        return EXIT_INTERRUPTED
    except _signals.Stopped as stop:
        print(_stopped_message(prog, f"stopped by {signal.Signals(stop.signum).name}"), file=sys.stderr)
        return 128 + stop.signum
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, no traceback, no data
        if args.traceback:
            raise
        status, text = describe_error(exc)
        print(f"{prog}: error: {text}", file=sys.stderr)
        return status
    finally:
        _signals.restore(previous)
