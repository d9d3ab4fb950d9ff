"""The multi-site commands' options that only some analyses take: one typed for another analysis is refused.

``simulate``, ``noise-generator`` and ``aggregate`` share one parser group of every analysis's options
(``_multisite.add_analysis_arguments``); an option the chosen analysis does not read (``--n-components`` with
``--analysis covariance``, ``--target`` with ``pca``) was dropped without a word, so the user believed it applied.
"Typed" is read from the words of the command line (``args.argv``), as in ``_plan_fixed``: the parser's defaults
(``--p 1``, ``--fit-intercept``, ``--R private``) are not the user's.
"""

from __future__ import annotations

from ._numbers import CliError

__all__ = ["refuse_unused", "typed"]

_REGRESS = ("regress",)

#: flag -> the analyses that read it, at fit time (simulate, aggregate) and when the plan is written (noise-generator)
_FIT = {
    "--target": ("select", "regress"),
    "--n-components": ("pca", "tensor-mog", "tensor-stm"),
    "--alpha": ("precision", "ridge"),
    "--R": ("select",),
    "--phi": ("select",),
    "--max-size": ("select",),
    "--sigma2": ("tensor-mog", "select"),
    "--vocabulary-size": ("tensor-stm",),
    "--n-iter": _REGRESS,
    "--w-max": _REGRESS,
    "--p": _REGRESS,
    "--response-bound": _REGRESS,
    "--fit-intercept": _REGRESS,
    "--no-fit-intercept": _REGRESS,
}
#: the noise generator writes the plan only: select's --sigma2 is the aggregator's (its fit), not the plan's; it
#: checks --target against the columns itself
_PLAN = {**{k: v for k, v in _FIT.items() if k != "--target"}, "--sigma2": ("tensor-mog",)}


def typed(argv, *flags):
    """Whether one of ``flags`` is among the words ``argv`` (``--flag value`` or ``--flag=value``)."""
    words = [str(w) for w in argv or ()]
    return any(w == f or w.startswith(f + "=") for w in words for f in flags)


def refuse_unused(args, fit=True):
    """A one-line refusal of an option typed that ``args.analysis`` does not read (``fit``: the fit's options too;
    without, the plan's only: the noise generator's)."""
    argv = getattr(args, "argv", None)
    if not argv:
        return
    for flag, users in (_FIT if fit else _PLAN).items():
        if args.analysis not in users and typed(argv, flag):
            whose = "the plan's " if getattr(args, "plan", None) else ""
            raise CliError(f"{flag} has no use with {whose}--analysis {args.analysis} (it is for "
                           f"{', '.join(users)}); leave it out")
