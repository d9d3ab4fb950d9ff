"""``dpmoments reproduce NAME``: run a paper reproduction, ``dpmoments.reproduce.<NAME>.main(argv)``."""

import argparse
import contextlib
import importlib
import pkgutil
import sys

from ._args import CliError

HELP = "reproduce a paper's tables (see --list)"
DESCRIPTION = """\
Run one of the paper reproductions in dpmoments.reproduce. Everything after NAME is passed to
that reproduction's own command line (try 'dpmoments reproduce NAME --help')."""
EXAMPLES = """\
  dpmoments reproduce --list
  dpmoments reproduce park_welling --quick
  dpmoments reproduce park_welling --help"""


def available():
    """``{name: first docstring line}`` for every module of dpmoments.reproduce with a ``main``."""
    from .. import reproduce

    found = {}
    for info in pkgutil.iter_modules(reproduce.__path__):
        if info.name.startswith("_"):
            continue
        try:
            mod = importlib.import_module(f"{reproduce.__name__}.{info.name}")
        except Exception as exc:  # a reproduction being written must not break the listing
            found[info.name] = f"(cannot be imported: {type(exc).__name__}: {exc})"
            continue
        if callable(getattr(mod, "main", None)):
            found[info.name] = ((mod.__doc__ or "").strip().splitlines() or [""])[0]
    return found


def add_arguments(parser):
    parser.add_argument("name", nargs="?", metavar="NAME", help="the reproduction (see --list)")
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="...", help="its own arguments")
    parser.add_argument("--list", action="store_true", help="list the reproductions and exit")


def run(args):
    from ._output import RUN

    names = available()
    if args.list or args.name is None:
        if args.name is None and not args.list:
            raise CliError("give a reproduction NAME or --list; available: " + (", ".join(names) or "none"))
        RUN.document = {"reproductions": dict(sorted(names.items()))}
        if not args.quiet:
            for name, doc in sorted(names.items()):
                print(f"{name:20s} {doc}")
        return 0
    name = args.name.replace("-", "_")
    if name not in names:
        raise CliError(f"no reproduction named {args.name!r}; available: {', '.join(sorted(names)) or 'none'}")
    mod = importlib.import_module(f"dpmoments.reproduce.{name}")
    # With --json the reproduction's own printout goes to stderr: stdout carries the JSON document only.
    redirect = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    try:
        with redirect:
            status = mod.main(list(args.rest))
    except SystemExit as exc:  # its argparse exits on --help or bad arguments
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    RUN.document = {"reproduction": name, "arguments": list(args.rest),
                    "markdown": status if isinstance(status, str) else None}
    return status if isinstance(status, int) else 0
