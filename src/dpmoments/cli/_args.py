"""Shared options of the subcommands (input, privacy bound, output) and their checks.

Every analysis that reads data takes the same three groups, so a new
subcommand adds them with one call each and gets the same refusals: no run
without ``--epsilon``, ``--delta`` (Gaussian) and a data bound.
"""

import argparse
import math
from dataclasses import dataclass, replace
from typing import Optional

from ..mechanisms import laws
from ..moments.counts import COUNT_SHARE
from ..privacy.relations import NEIGHBOURS
from ._choices import AUTO_HELP, HOW_TO_CHOOSE, Choices, add_choice_arguments, ROW_NORM_DEFAULT, bound_or_auto, choices_of
from ._ranges import add_ranges_arguments, ranges_of
# The parsers the commands import from here, where they have always been (their home is _numbers).
from ._numbers import (BOUND_MAX, CHUNK_MAX, CliError, _bound, _bounded_int, _delta,  # noqa: F401
                       _epsilon, _nonnegative_bound, _positive, _share, positive_int, seed_int)

__all__ = [
    "CliError", "CLIPPING_HELP", "add_input_arguments", "add_format_arguments", "add_privacy_arguments",
    "add_output_arguments", "add_figure_arguments", "FIGURE_FORMATS", "DEFAULT_FIGURE_FORMATS",
    "privacy_options", "ReleaseRequest", "parse_columns", "parse_floats", "add_uncentred_argument",
    "check_uncentred", "with_epsilon_grid", "check_count_share",
]

FINGERPRINT_HELP = (
    "record a SHA-256 and the byte size of each input in the report, for provenance. Off by default: the "
    "fingerprint is NOT private; it tells apart two inputs that differ in a single row, so anyone holding the "
    "report can confirm a guess of the exact file")

CLIPPING_HELP = (
    "rows are clipped: every row x is (centred at --center, then) scaled down to norm R when ||x||_2 > R, so no single row can move "
    "the result by more than the sensitivity the noise is calibrated to; R is a PUBLIC bound chosen before seeing "
    "the data (from units, instrument ranges or domain knowledge), never computed from it: too small a bound biases "
    "the estimate towards zero, too large a bound adds more noise"
)


NEIGHBOURS_HELP = (
    "the neighbouring relation the guarantee holds under: replace-one (default): one row replaced by any other, "
    "n public; zero-out: one row replaced by the zero row, n public (the papers' 1/n sensitivity); add-remove: "
    "one row added or removed, n private (released as a noisy count from --count-share of the budget)"
)




def parse_alpha(text):
    """A ``--alpha`` value: ``"ebic"`` or a finite penalty > 0."""
    if text == "ebic":
        return "ebic"
    try:
        value = float(text)
    except ValueError:
        raise CliError(f"--alpha must be a number > 0 or 'ebic'; got {text!r}") from None
    if not 0 < value < math.inf:
        raise CliError(f"--alpha must be a finite number > 0; got {text}")
    return value


def parse_floats(text, name, check=None):
    """``"0.1,0.5,1"`` -> ``[0.1, 0.5, 1.0]`` (a CliError naming ``name`` otherwise).

    ``check`` is an argparse type (such as the one of ``--epsilon``) every value must pass.
    """
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise CliError(f"{name} must be comma-separated numbers; got {text!r}") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise CliError(f"{name} must be comma-separated finite numbers; got {text!r}")
    for v in values if check else ():
        try:
            check(repr(v))
        except argparse.ArgumentTypeError as exc:
            raise CliError(f"{name}: every value {exc}") from None
    return values


#: The figure formats the command line writes, and its default.
# One format by default: each is drawn again (a labelled 50 x 50 heat map's SVG took 0.25 s more).
FIGURE_FORMATS, DEFAULT_FIGURE_FORMATS = ("png", "svg", "pdf"), ("png",)


def add_figure_arguments(group, what="figures"):
    group.add_argument("--no-figures", action="store_true", help=f"skip the {what}")
    group.add_argument("--figure-format", type=figure_formats, metavar="FMT[,FMT]",
                       help=f"write the {what} in these formats, of {', '.join(FIGURE_FORMATS)} (default "
                            f"{','.join(DEFAULT_FIGURE_FORMATS)}); each format is drawn again, so one is fastest")


def figure_formats(text):
    """``"png,pdf"`` -> ``("png", "pdf")``: formats of FIGURE_FORMATS, each once (argparse type)."""
    formats = tuple(dict.fromkeys(t.strip().lower() for t in text.split(",") if t.strip()))
    bad = [f for f in formats if f not in FIGURE_FORMATS]
    if not formats or bad:
        raise argparse.ArgumentTypeError(f"must name formats among {', '.join(FIGURE_FORMATS)}; got {text!r}")
    return formats


def parse_columns(text, option="--columns"):
    """``"a,b,3"`` -> ``["a", "b", 3]``: names, or 0-based positions when a token is an integer."""
    if text is None:
        return None
    tokens = [t.strip() for t in text.split(",")]
    if not all(tokens):
        raise CliError(f"{option} has an empty name; got {text!r}")
    if any(t.startswith("-") and t[1:].isdigit() for t in tokens):  # not Python's count from the end
        raise CliError(f"{option} positions are 0-based (0 is the first column); got {text!r}")
    from ..data import TypedNumber  # here: --help imports no NumPy
    return [TypedNumber(t) if t.isdigit() else t for t in tokens]  # a name where the header has it


def parse_target(text):
    if text is None:
        return None
    if text.isdigit():
        from ..data import TypedNumber  # here: --help imports no NumPy
        return TypedNumber(text)  # a name where the header has it, else a position
    return int(text) if text.lstrip("-").isdigit() else text


def add_format_arguments(group):
    """``--delimiter`` and ``--no-header``: how text files are read (every file of the run)."""
    group.add_argument("--delimiter", metavar="CHAR",
                       help="the field separator of .csv/.tsv files: one character, or tab, semicolon, space, pipe "
                            "(default: comma for .csv, tab for .tsv)")
    group.add_argument("--no-header", action="store_true",
                       help="text files have no header row: every line is data and the columns are named x0, x1, ...")


def add_input_arguments(parser, target=False, cluster=False, several=False):
    """The data file and which of its columns to use (``cluster``: offer ``--scheduler``; ``several``: take
    several files as one input, the list a shell makes of an unquoted glob)."""
    group = parser.add_argument_group("input (read in chunks, never loaded whole)")
    listed = "; or several files of one format and the same columns, read as one table in the order given" \
        if several else ""
    group.add_argument("data", nargs="+" if several else None, action=_OneOrSeveral if several else "store",
                       metavar="data", help="a .csv or .tsv (also .gz/.bz2 compressed; a header row unless --no-header), "
                                    ".parquet, .npy, .npz (scipy.sparse) or Zarr (directory) file; a directory of "
                                    "Parquet files (hive partitions left out unless chosen), a quoted glob "
                                    "('data/*.parquet'), or an s3://, gs:// or https:// URL (dpmoments[cloud])" + listed)
    default = "all but --target" if target else "all"
    group.add_argument("--columns", metavar="A,B,...",
                       help=f"feature columns, in order: names or 0-based positions (default: {default}); files "
                            "without names (.npy, .npz, --no-header) name their columns x0, x1, ...; text and "
                            "categorical columns and a pandas index are left out of the default, with a note")
    group.add_argument("--exclude", metavar="A,B,...",
                       help="leave these columns (names or 0-based positions) out of the default selection")
    if target:
        group.add_argument("--target", metavar="COL", help="the response column (a name or a 0-based position)")
    add_format_arguments(group)
    group.add_argument("--chunk-size", type=_bounded_int(1, CHUNK_MAX), default=None, metavar="ROWS",
                       help="rows per chunk of the streaming pass (default: about 64 MiB of data, 1024 to 65536 rows)")
    group.add_argument("--fingerprint", action="store_true", help=FINGERPRINT_HELP)
    group.add_argument("--no-fingerprint", action="store_true", help=argparse.SUPPRESS)  # the old default's switch
    if cluster:
        group.add_argument("--scheduler", metavar="ADDRESS", help=SCHEDULER_HELP)


class _OneOrSeveral(argparse.Action):
    """``data`` as one path (a string, as a one-file command stores it) or, for several, their list."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values[0] if len(values) == 1 else list(values))


SCHEDULER_HELP = ("run the passes on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786): the workers "
                  "open the data, which must be at the same path for them; default: DASK_SCHEDULER_ADDRESS or the "
                  "dask configuration's scheduler-address, if set; 'none' runs here (docs/cluster.md)")

#: What a moment command may choose privately (``add_privacy_arguments(private=...)``).
PRIVATE_ALL = ("row_norm", "center", "scale")


def add_privacy_arguments(parser, bound=True, secure=False, private=(), auto_default=False, auto_help=None):
    """epsilon, delta, the row bound and how the noise is calibrated (``secure``: offer --secure).

    ``private``: which of ``PRIVATE_ALL`` the command can choose privately
    (``--row-norm auto``, ``--center private``, ``--scale private``, with the
    options of :mod:`._choices`); ``auto_default``: the bound and centre are
    chosen privately unless given (covariance); ``auto_help``: what 'auto' does, where it is
    not the single-machine draw (the multi-site commands).
    """
    required = "" if auto_default or not bound else ", --row-norm"
    group = parser.add_argument_group(f"privacy (required: --epsilon, --delta for Gaussian noise{required})")
    group.add_argument("--epsilon", type=_epsilon, metavar="EPS", help="privacy parameter epsilon > 0 (required)")
    group.add_argument("--delta", type=_delta, metavar="DELTA",
                       help="privacy parameter delta in (0, 1) (required for Gaussian noise), e.g. 1e-6 < 1/n")
    if bound and private:
        default = "default auto" if auto_default else "required"
        group.add_argument("--row-norm", type=bound_or_auto, metavar="R|auto",
                           default=(ROW_NORM_DEFAULT if auto_help else "auto") if auto_default else None,
                           help=f"the L2 bound R on each (centred, scaled) row ({default}): a PUBLIC number, or "
                                f"{auto_help or AUTO_HELP}. Clipping: {CLIPPING_HELP}. {HOW_TO_CHOOSE}")
        if "center" in private:
            group.add_argument("--center", metavar="C1,C2,...|private",
                               help="the centre subtracted from every row before clipping: PUBLIC numbers (one for "
                                    "every column or one per column) or 'private', a private mean paid from "
                                    "--center-share " + ("(default: private; --uncentred for the raw second moment)"
                                                         if auto_default else "(default: none, the raw second moment)"))
        else:
            group.add_argument("--center", metavar="C1,C2,...",
                               help="a PUBLIC centre subtracted from every row before clipping: one number for every "
                                    "column or one per column (default: none)")
        parser.set_defaults(private_choices=tuple(private))
        add_choice_arguments(group, center="center" in private, scale="scale" in private, sites=auto_help is not None)
        if "scale" in private:
            add_ranges_arguments(group)
    elif bound:
        group.add_argument("--row-norm", type=_bound, metavar="R",
                           help="the public L2 bound R on each (centred) row (required). Clipping: " + CLIPPING_HELP)
        group.add_argument("--center", metavar="C1,C2,...",
                           help="a PUBLIC centre subtracted from every row before clipping: one number for every "
                                "column or one per column (default: none, the raw second moment)")
    group.add_argument("--mechanism", choices=laws.names(laws.ADDITIVE), default=laws.GAUSSIAN.name,
                       help="noise: gaussian gives (epsilon, delta)-DP, laplace epsilon-DP (default gaussian)")
    group.add_argument("--neighbours", choices=NEIGHBOURS, default="replace-one", help=NEIGHBOURS_HELP)
    group.add_argument("--count-share", type=_share, default=COUNT_SHARE, metavar="F",
                       help="with --neighbours add-remove: the share of epsilon (and delta) spent on the noisy row "
                            f"count (default {COUNT_SHARE:g})")
    group.add_argument("--calibration", choices=("analytic", "classic", "zcdp"), default="analytic",
                       help="Gaussian calibration (default analytic, Balle & Wang 2018)")
    group.add_argument("--seed", type=seed_int, metavar="INT",
                       help="seed the noise: reproducible but NOT secure (default: fresh OS entropy)")
    if secure:
        group.add_argument("--secure", action="store_true",
                           help="exact discrete noise on a 2^-k grid from the OS CSPRNG, immune to floating-point "
                                "attacks (slower: ~0.5 s for d = 200); cannot be seeded")


DEFAULT_MAX_ROWS = 5_000_000


def add_memory_arguments(parser):
    """``--max-rows``, for the analyses that load the selected columns into memory (select, regress, tensor,
    simulate)."""
    parser.add_argument("--max-rows", type=positive_int, default=DEFAULT_MAX_ROWS, metavar="N",
                        help="this analysis loads the selected columns into memory: refuse inputs with more than "
                             f"N rows (default {DEFAULT_MAX_ROWS:,})")


def add_uncentred_argument(parser, statistic):
    """``--uncentred``: the raw second moment instead of the private centre a moment command defaults to."""
    parser.add_argument("--uncentred", action="store_true",
                        help=f"{statistic} of the uncentred second moment (1/n) sum x x^T instead of the covariance "
                             "(no centre, no --center-share spent: right for data centred by design, as in the "
                             "papers)")


def check_uncentred(args):
    """Refuse --center with --uncentred (before the data are opened)."""
    if args.uncentred and args.center is not None:
        raise CliError("give --center or --uncentred, not both: --uncentred uses the second moment about the "
                       "origin")


def center_asked(args):
    """The centre a run asks for: a moment command (one with --uncentred) centres privately unless a public
    --center or --uncentred says otherwise; across sites, where the analysis is taken about a centre."""
    if hasattr(args, "uncentred") and not args.uncentred and args.center is None and _about_a_centre(args):
        return "private"
    return getattr(args, "center", None)


def _about_a_centre(args):
    """Is the analysis taken about a centre? Every single-machine moment command is; across sites, ``CENTRED``."""
    analysis = getattr(args, "analysis", None)
    if analysis is None:
        return True
    from ..multisite.analyses import CENTRED  # here: --help loads no multi-site module

    return analysis in CENTRED


def add_output_arguments(parser, default=None, required=True):
    group = parser.add_argument_group("output")
    group.add_argument("--out", "-o", metavar="DIR", default=default, required=required and default is None,
                       help="results directory, written atomically" + (f" (default {default})" if default else ""))
    group.add_argument("--force", action="store_true",
                       help="replace an existing results directory (only one dpmoments wrote: it holds a "
                            ".dpmoments-results file)")
    group.add_argument("--csv", action="store_true",
                       help="also write every matrix as CSV: by default a matrix is written as .npy, plus .csv only "
                            "when it has at most 10000 entries (100 x 100)")
    add_figure_arguments(group)
    group.add_argument("--epsilon-grid", metavar="E1,E2,...",
                       help="also draw a privacy-utility curve over these epsilons (from the calibration alone: "
                            "no further data access, no extra privacy cost)")


_NO_BOUND = object()  # a command without --row-norm: the release takes no row_norm or centre from it


@dataclass(frozen=True)
class ReleaseRequest:
    """What a run asks of its release, read once from the privacy options; the helpers take it, never the options.

    ``epsilon``, ``delta`` (``None`` for Laplace noise), ``mechanism``, ``neighbours``, ``calibration``, ``rng``,
    ``count_share``, ``secure``, the row bound (a number or ``"auto"``) and the centre (numbers, ``"private"`` or
    ``None``) are :func:`~dpmoments.moments.release_second_moment`'s keywords (:meth:`release_kwargs`);
    ``scale``: ``"private"`` for private column scales; ``choices``: the private choices and their shares
    (:class:`._choices.Choices`); ``offers_choices``: whether the command offers any; ``epsilon_grid``: the
    epsilons of the privacy-utility figure (sorted, or ``None``).
    """

    epsilon: float
    delta: Optional[float]
    mechanism: laws.Mechanism
    neighbours: str
    calibration: str
    rng: Optional[int]
    count_share: float
    choices: Choices
    secure: bool = False
    row_norm: object = _NO_BOUND
    center: object = None
    scale: Optional[str] = None
    offers_choices: bool = False
    epsilon_grid: Optional[tuple] = None

    def release_kwargs(self):
        """Keyword arguments for ``release_second_moment``."""
        kwargs = dict(epsilon=self.epsilon, delta=self.delta, mechanism=self.mechanism, neighbours=self.neighbours,
                      calibration=self.calibration, rng=self.rng, count_share=self.count_share)
        if self.secure:
            kwargs["secure"] = True
        if self.row_norm is not _NO_BOUND:
            kwargs["row_norm"], kwargs["center"] = self.row_norm, self.center
        return kwargs


def with_epsilon_grid(request, grid):
    """The same request with the privacy-utility figure's epsilons."""
    return replace(request, epsilon_grid=None if grid is None else tuple(grid))


def check_count_share(args):
    """``--count-share`` pays for add-remove's noisy row count; typed under another relation (n public) it paid for
    nothing and was ignored."""
    from ._unused_options import typed

    if getattr(args, "neighbours", "add-remove") != "add-remove" and typed(getattr(args, "argv", ()), "--count-share"):
        raise CliError(f"--count-share applies only with --neighbours add-remove (its noisy row count); under "
                       f"{args.neighbours} the number of rows is public and nothing is counted: leave it out")


def privacy_options(args, n_features=None):
    """Check the privacy group; return the run's :class:`ReleaseRequest`."""
    if args.epsilon is None:
        raise CliError("--epsilon is required: the privacy parameter epsilon > 0 of this release")
    check_count_share(args)
    mechanism = laws.as_mechanism(args.mechanism, "--mechanism", laws.ADDITIVE)  # the one parse of the option
    if mechanism.needs_delta and args.delta is None:
        raise CliError("--delta is required for Gaussian noise (e.g. --delta 1e-6, well below 1/n); "
                       "or use --mechanism laplace for pure epsilon-DP")
    if getattr(args, "row_norm", 1.0) is None:
        auto = " (or --row-norm auto, chosen privately)" if getattr(args, "private_choices", ()) else ""
        raise CliError(f"--row-norm is required: the public bound R on each row's L2 norm{auto}; " + CLIPPING_HELP)
    secure = bool(getattr(args, "secure", False))
    if secure and args.seed is not None:
        raise CliError("--secure draws from the OS CSPRNG and cannot be seeded; drop --seed")
    row_norm, center, scale = _NO_BOUND, None, getattr(args, "scale", None)
    if hasattr(args, "row_norm"):
        row_norm = args.row_norm
        center = _center(center_asked(args), n_features, "center" in getattr(args, "private_choices", ()))
    private = tuple(name for name, chosen in (("row_norm", row_norm == "auto"), ("scale", scale is not None),
                                              ("center", center == "private"),
                                              ("ranges", ranges_of(args) is not None)) if chosen)
    return ReleaseRequest(epsilon=args.epsilon, delta=args.delta if mechanism.needs_delta else None,
                          mechanism=mechanism, neighbours=args.neighbours, calibration=args.calibration,
                          rng=args.seed, count_share=args.count_share,
                          choices=choices_of(args, private, center=center_asked(args)), secure=secure,
                          row_norm=row_norm, center=center, scale=scale,
                          offers_choices=bool(getattr(args, "private_choices", ())))


def _center(text, n_features, private=False):
    if text is None:
        return None
    if text.strip() == "private":
        if not private:
            raise CliError("--center private is not available in this command (it takes a PUBLIC centre only)")
        return "private"
    values = parse_floats(text, "--center")
    if max(abs(v) for v in values) > BOUND_MAX:
        raise CliError(f"--center values must be at most {BOUND_MAX:g} in size (rescale the data); got {text!r}")
    if len(values) == 1 and n_features is not None:
        values = values * n_features
    if n_features is not None and len(values) != n_features:
        raise CliError(f"--center must give 1 or {n_features} numbers (one per feature column); got {len(values)}")
    return values
