"""Shared options of the subcommands (input, privacy bound, output) and their checks.

Every analysis that reads data takes the same three groups, so a new
subcommand adds them with one call each and gets the same refusals: no run
without ``--epsilon``, ``--delta`` (Gaussian) and a data bound.
"""

import argparse
import math

from ..moments.counts import COUNT_SHARE
from ..privacy.relations import NEIGHBOURS

__all__ = [
    "CliError", "CLIPPING_HELP", "add_input_arguments", "add_privacy_arguments", "add_output_arguments",
    "privacy_options", "parse_columns", "parse_floats",
]

CLIPPING_HELP = (
    "rows are clipped: every row x is (centred at --center, then) scaled down to norm R when ||x||_2 > R, so no single row can move "
    "the result by more than the sensitivity the noise is calibrated to; R is a PUBLIC bound chosen before seeing "
    "the data (from units, instrument ranges or domain knowledge), never computed from it: too small a bound biases "
    "the estimate towards zero, too large a bound adds more noise"
)


class CliError(Exception):
    """A user error: printed as one line, exit status 2, no traceback."""


NEIGHBOURS_HELP = (
    "the neighbouring relation the guarantee holds under: replace-one (default): one row replaced by any other, "
    "n public; zero-out: one row replaced by the zero row, n public (the papers' 1/n sensitivity); add-remove: "
    "one row added or removed, n private (released as a noisy count from --count-share of the budget)"
)


def _share(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1), got {text}")
    return value


def _positive(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or math.isnan(value):
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _epsilon(text):
    value = _positive(text)
    if math.isinf(value):
        raise argparse.ArgumentTypeError("must be finite: the command line only releases private results")
    return value


def _delta(text):
    value = _positive(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    return value


def positive_int(text):
    """An argparse type: an integer >= 1 (chunk sizes, row limits, iteration counts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def parse_alpha(text):
    """A ``--alpha`` value: ``"ebic"`` or a penalty > 0."""
    if text == "ebic":
        return "ebic"
    try:
        value = float(text)
    except ValueError:
        raise CliError(f"--alpha must be a number > 0 or 'ebic'; got {text!r}") from None
    if not value > 0:
        raise CliError(f"--alpha must be > 0; got {text}")
    return value


def parse_floats(text, name):
    """``"0.1,0.5,1"`` -> ``[0.1, 0.5, 1.0]`` (a CliError naming ``name`` otherwise)."""
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise CliError(f"{name} must be comma-separated numbers; got {text!r}") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise CliError(f"{name} must be comma-separated finite numbers; got {text!r}")
    return values


def parse_columns(text):
    """``"a,b,3"`` -> ``["a", "b", 3]``: names, or 0-based positions when a token is an integer."""
    if text is None:
        return None
    tokens = [t.strip() for t in text.split(",")]
    if not all(tokens):
        raise CliError(f"--columns has an empty name; got {text!r}")
    return [int(t) if t.lstrip("-").isdigit() else t for t in tokens]


def parse_target(text):
    if text is None:
        return None
    return int(text) if text.lstrip("-").isdigit() else text


def add_input_arguments(parser, target=False):
    """The data file and which of its columns to use."""
    group = parser.add_argument_group("input (read in chunks, never loaded whole)")
    group.add_argument("data", help="a .csv (header row), .parquet, .npy or Zarr (directory) file")
    default = "all but --target" if target else "all"
    group.add_argument("--columns", metavar="A,B,...",
                       help=f"feature columns, in order: header names or 0-based positions (default: {default})")
    if target:
        group.add_argument("--target", metavar="COL", help="the response column (a name or a 0-based position)")
    group.add_argument("--chunk-size", type=positive_int, default=65536, metavar="ROWS",
                       help="rows per chunk of the streaming pass (default 65536)")
    group.add_argument("--no-fingerprint", action="store_true",
                       help="do not record a SHA-256 of the input in the report (it identifies the exact file)")


def add_privacy_arguments(parser, bound=True, secure=False):
    """epsilon, delta, the row bound and how the noise is calibrated (``secure``: offer --secure)."""
    title = "privacy (required: --epsilon, --delta for Gaussian noise" + (", --row-norm)" if bound else ")")
    group = parser.add_argument_group(title)
    group.add_argument("--epsilon", type=_epsilon, metavar="EPS", help="privacy parameter epsilon > 0 (required)")
    group.add_argument("--delta", type=_delta, metavar="DELTA",
                       help="privacy parameter delta in (0, 1) (required for Gaussian noise), e.g. 1e-6 < 1/n")
    if bound:
        group.add_argument("--row-norm", type=_positive, metavar="R",
                           help="the public L2 bound R on each (centred) row (required). Clipping: " + CLIPPING_HELP)
        group.add_argument("--center", metavar="C1,C2,...",
                           help="a PUBLIC centre subtracted from every row before clipping: one number for every "
                                "column or one per column (default: none, the raw second moment)")
    group.add_argument("--mechanism", choices=("gaussian", "laplace"), default="gaussian",
                       help="noise: gaussian gives (epsilon, delta)-DP, laplace epsilon-DP (default gaussian)")
    group.add_argument("--neighbours", choices=NEIGHBOURS, default="replace-one", help=NEIGHBOURS_HELP)
    group.add_argument("--count-share", type=_share, default=COUNT_SHARE, metavar="F",
                       help="with --neighbours add-remove: the share of epsilon (and delta) spent on the noisy row "
                            f"count (default {COUNT_SHARE:g})")
    group.add_argument("--calibration", choices=("analytic", "classic", "zcdp"), default="analytic",
                       help="Gaussian calibration (default analytic, Balle & Wang 2018)")
    group.add_argument("--seed", type=int, metavar="INT",
                       help="seed the noise: reproducible but NOT secure (default: fresh OS entropy)")
    if secure:
        group.add_argument("--secure", action="store_true",
                           help="exact discrete noise on a 2^-k grid from the OS CSPRNG, immune to floating-point "
                                "attacks (slower: ~0.5 s for d = 200); cannot be seeded")


def add_output_arguments(parser, default=None, required=True):
    group = parser.add_argument_group("output")
    group.add_argument("--out", "-o", metavar="DIR", default=default, required=required and default is None,
                       help="results directory, written atomically" + (f" (default {default})" if default else ""))
    group.add_argument("--force", action="store_true", help="replace an existing non-empty results directory")
    group.add_argument("--no-figures", action="store_true", help="skip the PNG/SVG figures")
    group.add_argument("--epsilon-grid", metavar="E1,E2,...",
                       help="also draw a privacy-utility curve over these epsilons (from the calibration alone: "
                            "no further data access, no extra privacy cost)")


def privacy_options(args, n_features=None):
    """Check the privacy group; return keyword arguments for ``release_second_moment``."""
    if args.epsilon is None:
        raise CliError("--epsilon is required: the privacy parameter epsilon > 0 of this release")
    if args.mechanism == "gaussian" and args.delta is None:
        raise CliError("--delta is required for Gaussian noise (e.g. --delta 1e-6, well below 1/n); "
                       "or use --mechanism laplace for pure epsilon-DP")
    if getattr(args, "row_norm", 1.0) is None:
        raise CliError("--row-norm is required: the public bound R on each row's L2 norm; " + CLIPPING_HELP)
    kwargs = dict(epsilon=args.epsilon, delta=args.delta if args.mechanism == "gaussian" else None,
                  mechanism=args.mechanism, neighbours=args.neighbours, calibration=args.calibration,
                  rng=args.seed, count_share=args.count_share)
    if getattr(args, "secure", False):
        if args.seed is not None:
            raise CliError("--secure draws from the OS CSPRNG and cannot be seeded; drop --seed")
        kwargs["secure"] = True
    if hasattr(args, "row_norm"):
        kwargs["row_norm"] = args.row_norm
        kwargs["center"] = _center(args.center, n_features)
    return kwargs


def _center(text, n_features):
    if text is None:
        return None
    values = parse_floats(text, "--center")
    if len(values) == 1 and n_features is not None:
        values = values * n_features
    if n_features is not None and len(values) != n_features:
        raise CliError(f"--center must give 1 or {n_features} numbers (one per feature column); got {len(values)}")
    return values
