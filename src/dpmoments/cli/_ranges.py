"""``--ranges COL=LOW:HIGH,...`` and ``--ranges-file FILE``: per-column public ranges on the command line.

Each ranged column is clipped to its range entry by entry, and its centre
(the midpoint) and scale (the half-width) are free; the other columns get the
private choices (``dpmoments.moments.ranges``, ``docs/bounds.md``). The
ranges are public inputs: they are written into the report as given.
``--bounds``/``--bounds-file`` are the same options spelt as the issue tracker and other tools do; on
``select``, whose ``--bounds B`` is Lei et al.'s entrywise bound, the value's syntax tells them apart
(a number or ``auto``; ``COL=LOW:HIGH,...``). The library's ``bounds=`` stays the entrywise bound.
"""

import contextlib

from ._numbers import CliError

__all__ = ["add_ranges_arguments", "check_ranges_across_sites", "site_ranges", "target_range", "plan_ranges_report",
           "add_plain_ranges_arguments", "positional_ranges", "ranges_of", "categories_of", "impute_of", "ranges_lines",
           "ranges_report", "add_model_ranges_arguments", "model_ranges", "add_typed_column_arguments",
           "add_bounds_spelling", "bound_or_ranges", "select_bounds", "named_ranges"]

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
                            "{\"column\": [lower, upper]} (or {\"ranges\": {...}, \"categories\": {\"col\": [levels]}}); "
                            "combined with --ranges (a column may not be in both)")
    add_bounds_spelling(group)
    add_typed_column_arguments(group)


def add_bounds_spelling(group, entrywise=False):
    """``--bounds COL=LOW:HIGH,...`` and ``--bounds-file FILE``: the other spelling of ``--ranges`` (the issue
    tracker's and other tools'). ``entrywise``: ``select``, whose ``--bounds B|auto`` is also the entrywise bound,
    told apart by syntax (:func:`bound_or_ranges`, :func:`select_bounds`), so it registers ``--bounds`` itself."""
    if not entrywise:
        group.add_argument("--bounds", dest="bounds_as_ranges", metavar="COL=LOW:HIGH,...",
                           help="the same as --ranges (give one of them)")
    group.add_argument("--bounds-file", dest="bounds_file", metavar="FILE",
                       help="the same as --ranges-file (give one of them)")


def bound_or_ranges(bound_or_auto):
    """``select``'s ``--bounds`` type: a number or ``auto`` (read by ``bound_or_auto``) is the entrywise bound,
    ``COL=LOW:HIGH,...`` per-column ranges (kept as text); a value mixing the two is refused."""
    import argparse

    def parse(text):
        if "=" not in text:
            return bound_or_auto(text)
        if any("=" not in item for item in text.split(",")):
            raise argparse.ArgumentTypeError(
                f"{text!r} mixes a number with COL=LOW:HIGH items: give the entrywise bound and the ranges as two "
                "options (--bounds B --bounds COL=LOW:HIGH,..., or --ranges)")
        return RangesText(text)

    return parse


class RangesText(str):
    """``--bounds COL=LOW:HIGH,...`` on ``select``: per-column ranges, told apart from the entrywise bound."""


def select_bounds(args):
    """``(entrywise bound, ranges text or None)`` from ``select``'s ``--bounds``, given at most once each way."""
    given = getattr(args, "bounds", None)
    if not isinstance(given, list):  # not select's repeated option: a value or its default
        return ("auto" if given is None else given), None
    ranges = [v for v in given if isinstance(v, RangesText)]
    numbers = [v for v in given if not isinstance(v, RangesText)]
    for kind, found in (("the entrywise bound (a number or auto)", numbers), ("per-column ranges", ranges)):
        if len(found) > 1:
            raise CliError(f"--bounds gives {kind} twice; give it once")
    return (numbers[0] if numbers else "auto"), (str(ranges[0]) if ranges else None)


def add_typed_column_arguments(group):
    """``--categories`` and ``--impute``: the 0/1 columns they make get the range 0:1 with every command's ranges."""
    group.add_argument("--categories", metavar="COL=A,B,...", action="append",
                       help="PUBLIC levels of a text column (repeat the option for each column): it is one-hot "
                            "encoded into columns COL=A, COL=B, ... with range 0:1 (a value that is none of them, or "
                            "missing, sets all to 0); never read from the data. CSV and Parquet files, and a hive partition "
                            "column of a Parquet directory")
    group.add_argument("--impute", metavar="COL=VALUE,...",
                       help="instead of refusing missing values: replace a missing value of COL by the PUBLIC VALUE "
                            "and add a 0/1 column COL:missing (range 0:1) that marks it; the guarantee is unchanged "
                            "(a fixed map of each row), what is estimated is the completed table")


MODEL_RANGES_HELP = (
    "PUBLIC per-column ranges, e.g. age=0:120,smoker=0:1,y=0:400 (the target's too): each value is clipped to its "
    "range and centred at the midpoint and scaled by the half-width, for free; with every feature column ranged the "
    "row bound is free too, and with the target ranged the response bound. Columns without a range keep the private "
    "bounds. State ranges from the data's documentation, never from the data")


def add_model_ranges_arguments(group, entrywise=False):
    """``--ranges`` and ``--ranges-file`` for ``regress`` and ``select`` (features and the target), with their other
    spelling ``--bounds``/``--bounds-file`` (``entrywise``: ``select``'s own ``--bounds``) and typed columns."""
    group.add_argument("--ranges", metavar="COL=LOW:HIGH,...", help=MODEL_RANGES_HELP)
    group.add_argument("--ranges-file", metavar="FILE",
                       help="--ranges from a file: CSV lines column,lower,upper (a header row is fine) or JSON "
                            "{\"column\": [lower, upper]}; combined with --ranges (a column may not be in both)")
    add_bounds_spelling(group, entrywise=entrywise)
    add_typed_column_arguments(group)


def add_plain_ranges_arguments(group, help_text):
    """``--ranges`` and ``--ranges-file`` with a command's own help (the tensor command, the noise generator)."""
    group.add_argument("--ranges", metavar="COL=LOW:HIGH,...", help=help_text)
    group.add_argument("--ranges-file", metavar="FILE",
                       help="--ranges from a file: CSV lines column,lower,upper (a header row is fine) or JSON "
                            "{\"column\": [lower, upper]}; combined with --ranges (a column may not be in both)")
    add_bounds_spelling(group)


@contextlib.contextmanager
def _as_option_error():
    """A refusal of the ranges in the command line's words (``--ranges``, not the library's ``'ranges'``)."""
    try:
        yield
    except ValueError as exc:
        raise CliError(str(exc).replace("'ranges'", "--ranges").rstrip(".")) from None


def positional_ranges(args, names):
    """``--ranges`` as ``{position: (lower, upper)}`` over the columns ``names`` (``None`` when none), checked."""
    from ..moments.ranges import as_column_ranges  # here, as in every function a run calls: '--help' imports no NumPy

    given = ranges_of(args)
    if given is None:
        return None
    with _as_option_error():
        lower, upper = as_column_ranges(given).resolve(names)
    return {j: (float(lo), float(hi)) for j, (lo, hi) in enumerate(zip(lower, upper)) if lo == lo}


def model_ranges(args, names):
    """``(feature ranges by position, target range)`` from ``--ranges``/``--ranges-file``; ``None`` where none."""
    from ..moments.ranges import as_column_ranges

    given = ranges_of(args)
    if not given:
        return None, None
    with _as_option_error():
        as_column_ranges(given)  # each range's own form, named as the user wrote it
    target, features, response = str(args.target), {}, None
    for key, span in given.items():
        if str(key) == target:
            response = span
            continue
        if getattr(key, "text", key) in names:  # a number typed is a name where the header has it
            j = names.index(getattr(key, "text", key))
        elif isinstance(key, int) and 0 <= key < len(names):
            j = key
        else:
            raise CliError(f"--ranges names column {key!r}, which is neither a feature column nor the target")
        if j in features:  # a name and a position of one column
            raise CliError(f"--ranges gives column {names[j]!r} twice (by name and by position)")
        features[j] = span
    if response is not None and args.response_bound != "auto":  # the range bounds the mapped y by 1, for free
        raise CliError("--response-bound and a --ranges entry for the target both bound the response: give one")
    return features or None, response


def check_ranges_across_sites(args):
    """Refuse ``--ranges`` where the multi-site path does not take them, in one line, before any file is read."""
    from ..multisite.analyses import CENTRED
    from ..multisite.column_ranges import MODELS

    if ranges_of(args) is None:
        return
    if args.analysis not in CENTRED + MODELS:
        raise CliError(f"--ranges across sites are for --analysis {', '.join(CENTRED + MODELS)}; {args.analysis} "
                       "takes its public bounds instead")
    if getattr(args, "center", None) not in (None, "private"):
        raise CliError("--ranges across sites centre each column at its midpoint (--uncentred) or about a private "
                       "centre (the default): drop the public --center")


def site_ranges(args, names):
    """The plan's form of ``--ranges`` over the sites' feature columns ``names`` (``None`` when none), checked; the
    target's range (select, regress) is :func:`target_range`'s."""
    given = ranges_of(args)
    target = _target_of(args)
    if given is not None and target is not None:
        given = {k: v for k, v in given.items() if str(k) != target} or None
    if given is None:
        return None
    from ..multisite.column_ranges import plan_ranges

    with _as_option_error():
        return plan_ranges(given, len(names), names)


def _target_of(args):
    return str(args.target) if getattr(args, "analysis", None) in ("select", "regress") and \
        getattr(args, "target", None) is not None else None


def target_range(args):
    """The range ``--ranges`` gives the target across sites (select, regress), as ``(lower, upper)``, or ``None``."""
    given, target = ranges_of(args), _target_of(args)
    span = None if given is None or target is None else given.get(target)
    if span is not None and getattr(args, "response_bound", None) not in (None, "auto"):
        raise CliError("--response-bound and a --ranges entry for the target both bound the response: give one")
    return None if span is None else (float(span[0]), float(span[1]))


def plan_ranges_report(ranges, names, release):
    """The report's ``ranges`` block of a multi-site run from the plan's ranges (``{}`` when none), as
    :func:`ranges_report` writes a single-site one."""
    if ranges is None:
        return {}
    names = [f"x{j}" for j in range(len(ranges))] if names is None else list(names)
    given = {name: span for name, span in zip(names, ranges) if span is not None}
    return ranges_report(given, release)


def impute_of(args):
    """``{column: value}`` from ``--impute``; ``{}`` when none."""
    text = getattr(args, "impute", None)
    if text is None:
        return {}
    out = {}
    for token in (t.strip() for t in text.split(",")):
        name, eq, value = token.rpartition("=")
        if eq and name.strip() and _key(name.strip()) in out:  # a dict would keep the last silently
            raise CliError(f"--impute gives column {name.strip()!r} twice; give it once")
        try:
            out[_key(name.strip())] = float(value)
        except ValueError:
            name = ""
        if not (eq and name.strip()):
            raise CliError(f"--impute takes COLUMN=VALUE items separated by commas (e.g. income=0); got {token!r}")
    return out


def categories_of(args):
    """``{column: [levels]}`` from ``--categories`` and a JSON ranges file's ``categories``; ``{}`` when none."""
    out = {}
    for text in getattr(args, "categories", None) or ():
        name, eq, levels = text.partition("=")
        tokens = [t.strip() for t in levels.split(",")]
        if not (eq and name.strip() and all(tokens)):
            raise CliError(f"--categories takes COLUMN=LEVEL,LEVEL,... (one column per option); got {text!r}")
        if name.strip() in out:
            raise CliError(f"--categories gives column {name.strip()!r} twice")
        out[name.strip()] = tokens
    path = _spelled_once(args, "ranges_file", "bounds_file")  # --bounds-file's categories too
    if path is not None and str(path).lower().endswith(".json"):
        import json

        try:
            declared = json.loads(open(path, encoding="utf-8-sig").read()).get("categories", {})
        except (OSError, ValueError, AttributeError):
            declared = {}  # read_ranges_file says what is wrong with the file
        for name, levels in declared.items():
            if name in out:
                raise CliError(f"--categories and --ranges-file both give the categories of column {name!r}")
            if not isinstance(levels, list):
                raise CliError(f"the ranges file '{path}': the categories of {name!r} must be a list of levels")
            out[name] = [str(v) for v in levels]
    return out


def one_hot_ranges(categories):
    """Each one-hot column's range, 0 to 1: public by construction."""
    from ..data.columns import one_hot_names

    return {name: (0.0, 1.0) for col, levels in categories.items() for name in one_hot_names(col, levels)}


def ranges_of(args):
    """The run's ranges as ``{column: (lower, upper)}`` (one-hot columns' 0:1 included), or ``None`` when none."""
    from ..data.columns import MISSING_SUFFIX
    from ..moments.ranges import merged_indicator_ranges, parse_ranges_text, read_ranges_file

    text, path = _spelled_once(args, "ranges", "bounds_as_ranges"), _spelled_once(args, "ranges_file", "bounds_file")
    hot = one_hot_ranges(categories_of(args)) | {f"{name}{MISSING_SUFFIX}": (0.0, 1.0) for name in impute_of(args)}
    if text is None and path is None:
        return hot or None
    try:
        given = {} if path is None else read_ranges_file(path)
        spelt = "--ranges" if getattr(args, "ranges", None) else "--bounds"  # the option as the user wrote it
        inline = {} if text is None else parse_ranges_text(text, spelt)
    except ValueError as exc:
        raise CliError(str(exc).rstrip(".")) from None
    both = sorted(set(given) & set(inline))
    if both:
        in_file = "--ranges-file" if getattr(args, "ranges_file", None) else "--bounds-file"
        raise CliError(f"{spelt} and {in_file} both give column {both[0]!r}; give it once")
    given = {_key(k): v for k, v in {**given, **inline}.items() if k != "categories"}
    with _as_option_error():  # as the library's: the 0/1 columns' 0:1 added, another range for one refused
        return merged_indicator_ranges(given, hot)


def _spelled_once(args, name, other):
    """``--ranges`` or its other spelling ``--bounds`` (``--ranges-file``, ``--bounds-file``): one of them."""
    value, alias = getattr(args, name, None), getattr(args, other, None)
    if other == "bounds_as_ranges" and isinstance(getattr(args, "bounds", None), list):  # select's --bounds
        alias = select_bounds(args)[1]
    if value is not None and alias is not None:
        option = "--" + name.replace("_", "-")
        raise CliError(f"{option} and {option.replace('ranges', 'bounds')} are one option spelt two ways: give one")
    return alias if value is None else value


def _key(name):
    """A column name, or a 0-based position where the name is a whole number (as --columns reads it)."""
    from ..data import TypedNumber  # here: --help imports no NumPy

    return TypedNumber(name) if isinstance(name, str) and name.isdigit() else name


def named_ranges(ranges, names):
    """An estimator's ``ranges_`` from a fit on the command line's array (columns ``x0, x1, ...``) named by the
    file's columns, as the report names them everywhere else."""
    rename = {f"x{j}": str(name) for j, name in enumerate(names)}
    return {**ranges, "features": {rename.get(k, k): v for k, v in ranges["features"].items()},
            "unranged": [rename.get(k, k) for k in ranges["unranged"]]}


def _steps(output):
    """The post-processing lines of a release, of a multi-site IRLS fit, or of a tensor's second moment."""
    if hasattr(output, "postprocessing"):
        return output.postprocessing
    return output.second.postprocessing if hasattr(output, "second") else ()


def ranges_lines(release):
    """The console line saying which columns had public ranges and which private choices (or nothing)."""
    return [f"ranges: {step}" for step in _steps(release) if step.startswith("public ranges")]


def ranges_report(ranges, release):
    """The report's ``ranges`` block: the ranges as given (public), and which columns had which choice."""
    if ranges is None:
        return {}
    note = next((s for s in _steps(release) if s.startswith("public ranges")), None)
    return {"ranges": {"given": {str(k): list(v) for k, v in ranges.items()}, "columns": note,
                       "note": "public inputs: each value clipped to its range, centre and scale free"}}
