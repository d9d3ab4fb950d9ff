"""``--ranges COL=LOW:HIGH,...`` and ``--ranges-file FILE``: per-column public ranges on the command line.

Each ranged column is clipped to its range entry by entry, and its centre
(the midpoint) and scale (the half-width) are free; the other columns get the
private choices (``dpmoments.moments.ranges``, ``docs/bounds.md``). The
ranges are public inputs: they are written into the report as given.
(``--bounds`` is not this option's name: in ``select`` and the library's
``bounds=`` it is Lei et al.'s entrywise bound.)
"""

from ..moments.ranges import parse_ranges_text, read_ranges_file
from ._numbers import CliError

__all__ = ["add_ranges_arguments", "ranges_of", "ranges_lines", "ranges_report"]

RANGES_HELP = (
    "PUBLIC per-column ranges, e.g. age=0:120,smoker=0:1: each value is clipped to its column's range and the "
    "column is centred at the midpoint and scaled by the half-width, for free (no share of the budget); the row "
    "bound of the standardised rows is drawn privately, or is sqrt(number of ranged columns) when there are too few "
    "rows. Columns without a range get a private centre and scale. State ranges from the data's documentation "
    "(0:1 for an indicator, a generous range otherwise), never from the data")


def add_ranges_arguments(group):
    group.add_argument("--ranges", metavar="COL=LOW:HIGH,...", help=RANGES_HELP)
    group.add_argument("--ranges-file", metavar="FILE",
                       help="--ranges from a file: CSV lines column,lower,upper (a header row is fine) or JSON "
                            "{\"column\": [lower, upper]}; combined with --ranges (a column may not be in both)")


def ranges_of(args):
    """The run's ranges as ``{column: (lower, upper)}``, or ``None`` when none were given."""
    text, path = getattr(args, "ranges", None), getattr(args, "ranges_file", None)
    if text is None and path is None:
        return None
    try:
        given = {} if path is None else read_ranges_file(path)
        inline = {} if text is None else parse_ranges_text(text)
    except ValueError as exc:
        raise CliError(str(exc).rstrip(".")) from None
    both = sorted(set(given) & set(inline))
    if both:
        raise CliError(f"--ranges and --ranges-file both give column {both[0]!r}; give it once")
    return {_key(k): v for k, v in {**given, **inline}.items()}


def _key(name):
    """A column name, or a 0-based position where the name is a whole number (as --columns reads it)."""
    return int(name) if isinstance(name, str) and name.isdigit() else name


def ranges_lines(release):
    """The console line saying which columns had public ranges and which private choices (or nothing)."""
    return [f"ranges: {step}" for step in release.postprocessing
            if step.startswith("public ranges")]


def ranges_report(args, release):
    """The report's ``ranges`` block: the ranges as given (public), and which columns had which choice."""
    ranges = ranges_of(args)
    if ranges is None:
        return {}
    note = next((s for s in release.postprocessing if s.startswith("public ranges")), None)
    return {"ranges": {"given": {str(k): list(v) for k, v in ranges.items()}, "columns": note,
                       "note": "public inputs: each value clipped to its range, centre and scale free"}}
