"""Bounds, centres and scales chosen privately on the command line: the options, their checks, what is shown.

``--row-norm auto`` (and ``--response-bound auto``, ``--bounds auto``),
``--scale private`` and ``--center private`` are paid from shares of the
run's budget that the user states (``--bound-share``, ``--center-share``,
``--location-share``; the library's ``BoundBudget`` and ``CenterBudget``
with the same defaults) and searched on a public grid (``--search-range``),
never derived from the data. The drawn values are private outputs: the
console and ``privacy_report.json`` list each share, its guarantee and
what it released, the composed total, and the noisy fraction of clipped
rows (see docs/bounds.md).
"""

import argparse
import contextlib
import math
from dataclasses import dataclass
from typing import Optional

from ..estimators.summary import choices_lines, clipped_fraction  # noqa: F401 (the console's words, shared)
from ._numbers import BOUND_MAX, CliError, _bound, _share
from ._ranges import ranges_lines, ranges_of, ranges_report

__all__ = ["AUTO_HELP", "bound_or_auto", "add_choice_arguments", "Choices", "choices_of", "check_choices",
           "bound_budget", "center_budget", "choices_report", "choices_lines"]

BOUND_SHARE, CENTER_SHARE, LOCATION_SHARE = 0.1, 0.2, 0.05  # the library's BoundBudget / CenterBudget defaults
SITES_LOCATION = 0.1  # dpmoments.multisite.location.LOCATION_SHARE: the location steps across sites
SEARCH = (1e-6, 1e8)  # SearchRange's default: 1000 log-spaced steps, 3.3% apart

AUTO_HELP = (
    "'auto' chooses it privately: one draw of the exponential mechanism on the public --search-range grid, paid "
    f"from --bound-share (default {BOUND_SHARE:g} of the budget, of which a tenth releases the noisy fraction of "
    "clipped rows); it needs a few hundred rows at epsilon 1 and is refused in one line when there are too few, "
    "saying from which --epsilon it would run"
)
HOW_TO_CHOOSE = (
    "How to choose a bound: a public R from units or instrument ranges costs nothing and is best when you know "
    "the data's spread; 'auto' costs --bound-share of the budget and adapts to the data; columns in very "
    "different units need --scale private (or rescaled data), since no single row bound fits them all"
)


class _Unstated(str):
    """A default that equals the value it stands for but says it was not typed (``args.x is ROW_NORM_DEFAULT``)."""


#: ``--row-norm``'s default where it is 'auto' (the multi-site commands): told apart from a typed 'auto', which an
#: analysis without a row bound (tensor-stm) refuses as an option it would ignore.
ROW_NORM_DEFAULT = _Unstated("auto")


def bound_or_auto(text):
    """An argparse type: a public bound (as ``_bound``) or ``"auto"``."""
    if text == "auto":
        return text  # argparse passes a string default through here too: ROW_NORM_DEFAULT stays itself
    try:
        float(text)
    except ValueError:
        ranges = " (per-column ranges COL=LOW:HIGH are --ranges)" \
            if "=" in text else ""
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}{ranges}") from None
    return _bound(text)


def _search_range(text):
    parts = text.split(",")
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise CliError(f"--search-range must be two numbers LOW,HIGH (e.g. 1e-6,1e8); got {text!r}") from None
    if not (0 < low < high < math.inf) or high > BOUND_MAX or low < 1 / BOUND_MAX:
        raise CliError(f"--search-range must satisfy 0 < LOW < HIGH, both in [{1 / BOUND_MAX:g}, {BOUND_MAX:g}] "
                       f"(the search range would be empty or leave floating-point range); got {text!r}")
    return low, high


#: The grid of a bound chosen across sites (``dpmoments.multisite.bounds``), for the multi-site commands' help.
SITES_GRID = ("edges at most a factor sqrt 2 apart: each site's noisy histogram has one count per bin",
              "of each site's budget (of its epsilon and delta; of its rho in zCDP plans such as regress)")


def add_choice_arguments(group, *, center=True, scale=True, sites=False):
    """``--bound-share``, ``--search-range`` and, for the moment releases, the centre's shares and ``--scale``.

    ``sites``: the multi-site commands, where the bound comes from noisy histograms (their help says so).
    """
    grid, of = SITES_GRID if sites else ("1000 log-spaced steps 3.3%% apart", "of epsilon for pure DP, of rho "
                                         "(zCDP) when a Gaussian release composes several parts")
    group.add_argument("--bound-share", type=_share, metavar="F",
                       help="the share of the budget spent choosing bounds" + ("" if sites else " (and --scale "
                            "private)") + f" privately (default {BOUND_SHARE:g}); shares are {of}")
    group.add_argument("--search-range", metavar="LOW,HIGH",
                       help=f"the PUBLIC range a private bound or scale is searched in, fixed before the data are "
                            f"read (default {SEARCH[0]:g},{SEARCH[1]:g}, {grid}); values "
                            "beyond it are reported as its end, with a warning")
    if scale:
        group.add_argument("--scale", choices=("private",),
                           help="divide each column by a private scale (the median of its non-zero |x_j - m_j|, "
                                "one draw per column, half of --bound-share, never below half a private 0.75-quantile "
                                "of the same distances, drawn from at most 5%% of the budget) before clipping, and map "
                                "the estimate back: for columns in different units; needs a few thousand rows at "
                                "epsilon 1")
    if center:
        group.add_argument("--center-share", type=_share, metavar="F",
                           help=f"--center private: the share spent on the private mean (default {CENTER_SHARE:g})")
        where = ("the location steps: each site's noisy per-coordinate histograms on a signed PUBLIC grid over "
                 f"--search-range, whose medians say where to clip rows for the mean; default {SITES_LOCATION:g}"
                 if sites else "choosing where to clip rows for the mean (a private bound on ||x||, or with "
                 f"--scale private the column medians; default {LOCATION_SHARE:g}")
        group.add_argument("--location-share", type=_share, metavar="F", help=f"--center private: the share spent on "
                                                                                f"{where})")


#: The options that set the shares of the private choices.
SHARE_OPTIONS = ("bound_share", "center_share", "location_share")


@dataclass(frozen=True)
class Choices:
    """The private choices a run makes and the options that pay for them, read from the options once.

    ``private``: which choices the run makes privately (``"row_norm"``, ``"scale"``, ``"center"``, or a
    command's own bounds such as ``"response_bound"``); the shares and the search range as the user gave
    them (``None``: the default, applied by :func:`bound_budget` and :func:`center_budget`); ``center``:
    the centre asked for (``"private"``, public numbers as text, or ``None``); ``secure``: exact discrete
    noise was asked for; ``offered``: the share options this command has and ``uncentred``: whether it
    has ``--uncentred`` (for the words of a refusal).
    """

    private: tuple = ()
    bound_share: Optional[float] = None
    search_range: Optional[str] = None
    center_share: Optional[float] = None
    location_share: Optional[float] = None
    center: Optional[str] = None
    secure: bool = False
    offered: tuple = ()
    uncentred: bool = False
    ranges: Optional[dict] = None  # --ranges / --ranges-file / --categories / --impute: PUBLIC, as given
    clipping_bias: bool = False  # the analysis's intervals count the clipping-excess release (covariance, PCA)


#: The commands whose intervals count the clipping-excess release (the library's estimators pay for it too).
CLIPPING_COUNTED = ("covariance", "correlation", "pca", "precision")


def choices_of(args, private=(), center=None):
    """The :class:`Choices` of the parsed options: ``private``, the choices made privately; ``center``, the
    centre asked for, when a default (a moment command's private centre) replaces what was typed."""
    return Choices(private=tuple(private), bound_share=getattr(args, "bound_share", None),
                   search_range=getattr(args, "search_range", None),
                   center_share=getattr(args, "center_share", None),
                   location_share=getattr(args, "location_share", None),
                   center=getattr(args, "center", None) if center is None else center,
                   secure=bool(getattr(args, "secure", False)),
                   offered=tuple(n for n in SHARE_OPTIONS if hasattr(args, n)), uncentred=hasattr(args, "uncentred"),
                   ranges=ranges_of(args),
                   clipping_bias=_counts_clipping(args))


def _counts_clipping(args):
    """Whether the run's intervals count the clipping excess: a command of :data:`CLIPPING_COUNTED`, or a multi-site
    run of one of their analyses (or ridge's, whose estimator pays for it too)."""
    if getattr(args, "command", None) in CLIPPING_COUNTED:
        return True
    return getattr(args, "analysis", None) in CLIPPING_COUNTED + ("ridge",)


def _given(choices, *names):
    return [f"--{n.replace('_', '-')}" for n in names if getattr(choices, n) is not None]


def check_choices(choices):
    """Refuse options that would be silently ignored, and shares that leave nothing for the release."""
    autos = choices.private
    private_center = "center" in autos
    if not autos and _given(choices, "bound_share", "search_range"):
        raise CliError(f"{_given(choices, 'bound_share', 'search_range')[0]} applies only to a private choice "
                       "(an 'auto' bound, --scale private or --center private); this run chooses nothing privately")
    if private_center and set(autos) == {"center"} and _given(choices, "bound_share"):
        raise CliError("--bound-share applies only to a private bound (--row-norm auto, --scale private); this run's "
                       "bound is public and its private centre is paid from --center-share and --location-share")
    if not private_center and _given(choices, "center_share", "location_share"):
        raise CliError(f"{_given(choices, 'center_share', 'location_share')[0]} applies only with --center private")
    if choices.secure and autos:
        raise CliError("--secure cannot be combined with a private choice (--row-norm auto, --scale private, "
                       "--center private): the private quantiles draw floating-point noise; give a public --row-norm "
                       "and a public --center" + (" or --uncentred" if choices.uncentred else ""))
    shares = {"--bound-share": bound_budget(choices).share if {"row_norm", "scale"} & set(autos) else 0.0}
    if private_center:
        split = center_budget(choices)
        shares.update({"--center-share": split.mean, "--location-share": split.location})
    if sum(shares.values()) >= 1:
        raise CliError(", ".join(f"{k} {v:g}" for k, v in shares.items() if v) + " add up to 1 or more and leave "
                       "nothing for the release; lower them")


def bound_budget(choices):
    """The ``BoundBudget`` of ``--bound-share`` and ``--search-range`` (the library's defaults where not given)."""
    from ..moments.auto_release import BoundBudget  # here: --help loads none of the private choices' modules
    from ..moments.private_bounds import SearchRange

    share = BOUND_SHARE if choices.bound_share is None else choices.bound_share
    text = choices.search_range
    low, high = SEARCH if text is None else _search_range(text)
    # the clipping-excess release (moments/clipping_bias.py) only where the analysis's intervals count it
    bias = BoundBudget.bias if choices.clipping_bias else 0.0
    return BoundBudget(share=share, search=SearchRange(low, high), bias=bias)


def center_budget(choices):
    """The ``CenterBudget`` of ``--center-share`` and ``--location-share`` (the library's defaults where not given)."""
    from ..estimators import CenterBudget

    mean = CENTER_SHARE if choices.center_share is None else choices.center_share
    location = LOCATION_SHARE if choices.location_share is None else choices.location_share
    return CenterBudget(mean=mean, location=location)


def choices_report(parts, total, budget=None):
    """The report's ``private_choices`` block: each share, its guarantee and output, the total, the diagnostic."""
    from ..moments.auto_release import CLIPPED_WARNING

    clipped = clipped_fraction(parts)
    block = {
        "parts": [p.to_dict() | {"guarantee_text": str(p.guarantee)} for p in parts],
        "composed_guarantee": str(total),
        "note": "each part is one share of the budget; what it released (a drawn bound, scales, a noisy mean or "
                "count) is a private output; the parts compose to composed_guarantee "
                "(dpmoments.privacy.composition.compose)",
        "clipped_fraction": None if clipped is None else {
            "value": clipped[0], "noise_sd": clipped[1], "warning_threshold": CLIPPED_WARNING,
            "warned": clipped[0] - 2 * clipped[1] > CLIPPED_WARNING,
            "note": "a noisy count of the rows beyond the drawn row bound, over n; the exact count is never released"},
    }
    if budget is not None:
        block["bound_budget"] = budget.to_dict()
    return block


def release_choices(release, choices):
    """``extra`` for the report of a second-moment run: ``{"private_choices": ...}``, or ``{}`` when none."""
    ranged = ranges_report(choices.ranges, release)
    if not release.parts:
        return ranged
    return {"private_choices": choices_report(release.parts, release.guarantee, bound_budget(choices)), **ranged}


def print_release_choices(release):
    for line in ranges_lines(release) + (choices_lines(release.parts, release.guarantee) if release.parts else []):
        print(line)


#: The library's names for the shares, as the command line spells them (warnings and refusals).
_CLI_WORDS = {"'bound_budget'": "--bound-share", "bound_budget": "--bound-share",
              "center='private' across sites": "--center private across sites",
              "'location_share'": "--location-share", "'center_share'": "--center-share",
              "CenterBudget.location": "--location-share", "BoundBudget(search=...)": "--search-range",
              "scale='private'": "--scale private", "runs from epsilon": "runs from --epsilon"}


def cli_words(text):
    """A library message about a private choice in the command line's option names."""
    for api, cli in _CLI_WORDS.items():
        text = text.replace(api, cli)
    return text


@contextlib.contextmanager
def too_few_rows_hint(choices, ranges=False):
    """A refused private draw (too few rows for its share) says which of this command's options would help.

    The library's refusal already says from which epsilon (and share) the draw runs, computed from the
    public n alone (never raised under add-remove, where n is private). ``ranges``: with every column's
    ``--ranges`` this command draws nothing that needs the rows (one machine's second moment), so it says so; as
    it does wherever the library's refusal names every column's range (a plan across sites that the ranges alone
    would run: ``multisite.plan``)."""
    try:
        yield
    except ValueError as exc:
        if "too few rows" not in str(exc):
            raise
        centre = choices.center == "private"  # the centre's shares help only a private centre
        shares = [f"--{n.replace('_', '-')}" for n in SHARE_OPTIONS
                  if n in choices.offered and (centre or n == "bound_share")]
        public = "--uncentred or PUBLIC values" if choices.uncentred else "PUBLIC values"
        reason = cli_words(" ".join(str(exc).split()).split("; give ")[0])  # the library's advice, in CLI names
        ranged = ", or every column's --ranges COL=LOW:HIGH (then no draw needs these rows)" \
            if ranges or "every column's range (ranges=)" in str(exc) else ""
        raise CliError(f"{reason}; give a larger {', '.join(shares)} or --epsilon, a narrower --search-range, or "
                       f"{public} instead of auto/private{ranged}") from None
