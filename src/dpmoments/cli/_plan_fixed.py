"""The options of ``dpmoments aggregate`` that its plan fixes: one typed against the plan is refused, never replaced.

The noise generator writes the analysis and its public options into the plan (they enter its digest; the sites
accepted them). The aggregator runs the plan as written, so an option the user leaves out takes the plan's value
silently, and one typed with another value is a one-line refusal naming the option, the value typed and the plan's
(plan values are public: never a data value). "Typed" is read from the words of the command line (``args.argv``):
the parser's defaults are not the user's, and the command line admits no abbreviated options.
"""

from __future__ import annotations

from ._args import CliError
from ._unused_options import typed as _typed

__all__ = ["refuse_contradictions"]

_NONE = object()  # the plan does not have the option at all (its analysis takes none)


def _response_bound(plan):
    if plan.option("response_range") is not None:  # the plan maps the response into [-1, 1]: no bound to type
        return "none: the plan's --ranges entry of the target bounds the response"
    return "auto" if plan.auto is not None and "response_bound" in plan.auto.names else plan.response_bound


def _w_max(plan):
    per_bound = plan.option("w_max_per_bound")
    return f"{per_bound:g} / the chosen response bound" if per_bound is not None else plan.option("w_max", _NONE)


def _sampling_share(plan):
    if plan.analysis != "regress":
        return _NONE
    return plan.option("sampling_budget", 0.0)


def _regress(name, default=_NONE):
    """A regress plan's option (``default`` where the plan leaves it out: the library's ``p`` 1)."""
    return lambda plan: plan.option(name, default) if plan.analysis == "regress" else _NONE


#: flag -> (the parsed attribute, the plan's value of it); ``--sigma2`` of select is the fit's own, not the plan's.
_FIXED = {
    "--analysis": ("analysis", lambda plan: plan.analysis),
    "--vocabulary-size": ("vocabulary_size", lambda plan: plan.vocabulary_size if plan.analysis == "tensor-stm"
                          else _NONE),
    "--sigma2": ("sigma2", lambda plan: plan.option("sigma2") if plan.analysis == "tensor-mog" else None),
    "--response-bound": ("response_bound", lambda plan: _response_bound(plan) if plan.analysis == "regress"
                         else _NONE),
    "--n-iter": ("n_iter", _regress("n_iter")),
    "--w-max": ("w_max", _w_max),
    "--p": ("p", _regress("p", 1.0)),
    "--sampling-share": ("sampling_share", _sampling_share),
}


def _show(value):
    """A float as short as says it exactly (a plan's w_max of 5 / 3 is shown whole, so it can be typed back)."""
    if not isinstance(value, float):
        return str(value)
    return f"{value:g}" if float(f"{value:g}") == value else repr(value)


def _same(typed, planned):
    if isinstance(typed, (int, float)) and isinstance(planned, (int, float)):
        return float(typed) == float(planned)
    return typed == planned


def refuse_contradictions(args, plan):
    """Refuse, in one line, an option typed on the command line that the plan fixes to another value (or that the
    plan's analysis does not take); options left out are untouched (the plan's values win)."""
    argv = [str(w) for w in getattr(args, "argv", None) or ()]
    for flag, (attr, planned_of) in _FIXED.items():
        planned = planned_of(plan)
        if planned is None or not _typed(argv, flag):  # None: not fixed by the plan (select's --sigma2)
            continue
        typed = getattr(args, attr)
        if planned is _NONE:
            raise CliError(f"{flag} {_show(typed)} has no use with the plan's --analysis {plan.analysis}: the plan "
                           "fixes the options; leave it out or write a new plan")
        if not _same(typed, planned):
            raise CliError(f"{flag} {_show(typed)} contradicts the plan ({_show(planned)}): the plan fixes it; "
                           "leave it out or write a new plan")
    _refuse_intercept(args, plan, argv)


def _refuse_intercept(args, plan, argv):
    typed = "--fit-intercept" if _typed(argv, "--fit-intercept") else \
        "--no-fit-intercept" if _typed(argv, "--no-fit-intercept") else None
    if typed is None:
        return
    if plan.analysis != "regress":
        raise CliError(f"{typed} has no use with the plan's --analysis {plan.analysis}: the plan fixes the options; "
                       "leave it out or write a new plan")
    planned = "--fit-intercept" if plan.option("intercept") is not None else "--no-fit-intercept"
    if typed != planned:
        raise CliError(f"{typed} contradicts the plan ({planned}): the plan fixes it; leave it out or write a new plan")
