"""The command line's numbers: how each option's text becomes a checked value, and the user error type.

The lowest module of the command line: the option groups (``_args``) and the
private choices (``_choices``) both build on it.
"""

import argparse
import math
import sys

__all__ = ["BOUND_MAX", "CHUNK_MAX", "EPSILON_MIN", "CliError", "positive_int", "radius_or_private", "seed_int"]

#: The smallest --epsilon the command line accepts: smaller budgets give no useful release and push the
#: calibrations to the edge of floating point (1e-300 overflowed, 1e-320 divided by zero).
EPSILON_MIN = 1e-12
#: Public bounds (--row-norm, --response-bound, ...) stay inside [1/BOUND_MAX, BOUND_MAX] so that their
#: powers up to the cube, and the squares of the sensitivities built from them, stay finite.
BOUND_MAX = 1e30
#: The most rows in one chunk (about 80 GB of float64 at 1000 columns is already far too much).
CHUNK_MAX = 10_000_000
class CliError(Exception):
    """A user error: printed as one line, exit status 2, no traceback."""


def _share(text):
    if "_" in text:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1), got {text}")
    return value


def _number(text):
    if "_" in text:  # float() would read "1_0" as 10
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"expected a number, got {text}")
    return value


def _positive(text):
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _epsilon(text):
    value = _positive(text)
    if math.isinf(value):
        raise argparse.ArgumentTypeError("must be finite: the command line only releases private results")
    if value < EPSILON_MIN:
        raise argparse.ArgumentTypeError(f"must be at least {EPSILON_MIN:g}: smaller budgets give no useful release "
                                         f"and leave the calibration's floating-point range; got {text}")
    return value


def _delta(text):
    value = _positive(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    if value < sys.float_info.min:
        raise argparse.ArgumentTypeError(f"must be at least {sys.float_info.min:.3g} (the smallest normal double); "
                                         f"got {text}")
    return value


def _bound(text):
    """A public bound (a row norm, a response bound, ...): in [1/BOUND_MAX, BOUND_MAX]."""
    value = _positive(text)
    if not 1.0 / BOUND_MAX <= value <= BOUND_MAX:
        raise argparse.ArgumentTypeError(f"must be between {1 / BOUND_MAX:g} and {BOUND_MAX:g} (its powers must stay "
                                         f"in floating-point range; rescale the data); got {text}")
    return value


def radius_or_private(text):
    """An argparse type: ``select``'s L1 radius, a public bound (as ``_bound``) or ``"private"``."""
    return "private" if text == "private" else _bound(text)


def _nonnegative_bound(text):
    value = _number(text)
    if value != 0:
        value = _bound(text)
    return value


def _bounded_int(low, high):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}], got {text}")
        return value

    return parse


#: An argparse type: an integer >= 1 (row limits, iteration counts).
positive_int = _bounded_int(1, sys.maxsize)
seed_int = _bounded_int(0, 2**128 - 1)
