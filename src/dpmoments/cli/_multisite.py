"""What the multi-site commands share: the analysis options, the fit from the releases, the files and the report.

``dpmoments simulate`` (sites in this process), ``dpmoments aggregate`` (gRPC) and the
Flower ServerApp (:mod:`._serverapp`) all finish the same way: the wing's output
(:func:`dpmoments.multisite.analyses.finish_analysis`) is fitted by the analysis's estimator
(post-processing) and written, with a privacy report whose headline guarantee is the one
that holds against the aggregator, the per-site claim beside it.
"""

import argparse

from ._args import CliError, _about_a_centre, _positive, center_asked, positive_int
from ._noise import add_uncertainty_arguments
from ._numbers import radius_or_private
from ._unused_options import refuse_unused
from ._choices import (ROW_NORM_DEFAULT, bound_budget, bound_or_auto, check_choices, choices_lines, choices_of,
                       choices_report)

__all__ = ["add_scale_argument", "check_scale", "add_analysis_arguments", "plan_options", "response_bound_of",
           "check_analysis", "fit_analysis", "multisite_report", "print_guarantees", "ANALYSES", "auto_bounds",
           "center_across_sites", "AUTO_ACROSS_SITES", "CENTER_ACROSS_SITES"]

AUTO_ACROSS_SITES = (
    "'auto' chooses it across sites from noisy histograms: each site adds its own Gaussian noise to the counts "
    "of its row norms on a coarse PUBLIC grid (--search-range, steps of a factor sqrt 2), paid from --bound-share "
    "of its "
    "budget (default 0.1); the aggregator sums them and takes the highest quantile their noise can place (at least "
    "the 0.95-quantile), rounded up to a grid edge, "
    "for every later round; refused in one line when there are too few rows for the share, naming the --epsilon "
    "(and --bound-share) that runs")

CENTER_ACROSS_SITES = (
    "'private' (covariance, pca, precision, ridge) chooses it across sites: up to four location steps, as many "
    "as the rows allow (each site's own Gaussian noise on the counts of each column on a signed PUBLIC grid; the "
    "aggregator moves the location by the "
    "medians of their sum), paid from --location-share (default 0.1), then the mean of the rows clipped about the "
    "location, from --center-share (default 0.2): the covariance is taken about that private mean; refused in one "
    "line when there are too few rows, naming the --epsilon (and --location-share) that runs")

#: ``regress``'s intercept column across sites: its constant as a share of the features' bound (the single-site
#: ``INTERCEPT_SCALE``, written here so that --help imports neither an estimator nor the wing; a test checks it).
INTERCEPT_SHARE = 0.5

#: The analyses a multi-site command offers: the keys of the wing's table, in its order (a test checks they agree;
#: the table itself is not imported here, so that --help stays light).
ANALYSES = ("covariance", "correlation", "pca", "precision", "ridge", "select", "tensor-mog", "tensor-stm", "regress")


def add_scale_argument(parser):
    """``--scale private`` across sites: private column scales read off the location steps' noisy histograms."""
    parser.add_argument("--scale", choices=("private",),
                        help="divide each column by a private scale, its median distance from its median in the "
                             "last location step's summed noisy histograms, at least the gap to its next values (free: "
                             "post-processing of counts already released; needs "
                             "the private centre, the default); with --ranges the columns get them by default, a 0/1 "
                             "column keeping its range's")


def check_scale(args):
    """Refuse ``--scale private`` where no location step gives the scales, in one line, before any file is read."""
    if getattr(args, "scale", None) is not None and center_asked(args) != "private":
        how = ("drop --uncentred or the public --center" if _about_a_centre(args) else
               f"--analysis {args.analysis} is not taken about a centre; scale the columns before the run")
        raise CliError("--scale private across sites needs the private centre (its location steps' histograms give "
                       f"the scales): {how}")


#: The analyses whose fit across sites takes no --draws, and those whose intervals have no --intervals-for.
CLOSED_FORM_ONLY = ("covariance", "correlation", "select", "tensor-mog", "tensor-stm")
NO_TARGET = ("select", "tensor-mog", "tensor-stm")


def add_analysis_arguments(parser, fit=True):
    """``--analysis`` and the public options of each analysis (``fit``: also the estimator's own)."""
    g = parser.add_argument_group("analysis (what is released across sites, and what is fitted to it)")
    g.add_argument("--analysis", default="covariance", metavar="{" + ",".join(ANALYSES) + "}",
                   help="default covariance")
    g.add_argument("--sigma2", type=float, metavar="S", help="tensor-mog: the PUBLIC within-component variance; "
                                                           "select: the noise variance guess of --phi bic (default 1)")
    g.add_argument("--vocabulary-size", type=positive_int, metavar="D", help="tensor-stm: the PUBLIC vocabulary size")
    g.add_argument("--n-iter", type=positive_int, metavar="J",
                   help="regress: IRLS iterations, two releases each (default 10, as 'dpmoments regress')")
    g.add_argument("--w-max", type=_positive, metavar="W",
                   help="regress: the largest IRLS weight (default 5 / the response bound, public or chosen across "
                        "sites, as 'dpmoments regress' --w-max auto)")
    g.add_argument("--p", type=float, default=1.0, metavar="P", help="regress: the loss sum |r|^p (default 1: LAD)")
    g.add_argument("--fit-intercept", action=argparse.BooleanOptionalAction, default=True,
                   help="regress: fit an intercept (the default, as 'dpmoments regress'): each site appends the "
                        f"public constant {INTERCEPT_SHARE:g} R / sqrt(1 + {INTERCEPT_SHARE:g}^2) to its rows clipped "
                        "to R / sqrt(1 + ...), so the rows it forms stay within the row bound R")
    g.add_argument("--response-bound", type=bound_or_auto, metavar="B|auto",
                   help="regress: the public bound on |y|, or 'auto' (the default, as 'dpmoments regress'): chosen "
                        "across sites from noisy histograms of |y| (half of --bound-share)")
    g.add_argument("--sampling-share", type=float, default=None, metavar="F",
                   help="regress: share of each site's budget (of rho) for four releases at the final iterate (the "
                        "residual scale, the LAD sandwich's two matrices, LAD's sign score), so that the intervals "
                        "cover the rows' sampling (default 0.1 with --p 1, as 'dpmoments regress'; 0: none, the "
                        "intervals count the noise only)")
    if not fit:
        return
    g.add_argument("--n-components", type=positive_int, metavar="K", help="pca, tensor-*: components")
    g.add_argument("--alpha", default=None, metavar="A",
                   help="precision: the graphical-lasso penalty, a number or 'ebic' (default); ridge: required")
    g.add_argument("--R", type=radius_or_private, dest="R", default="private", metavar="RADIUS|private",
                   help="select: the L1 radius, a PUBLIC number or 'private' (default, as 'dpmoments select'): the "
                        "L1 norm of the full model's least-squares fit to the released second moment (post-processing "
                        "of the sites' release, no share of the budget)")
    g.add_argument("--phi", default="bic", metavar="PHI", help="select: penalty per column, a number or 'bic'")
    g.add_argument("--max-size", type=positive_int, metavar="K", help="select: largest model size")
    add_uncertainty_arguments(parser, closed_form="the covariance's, correlation's and PCA eigenvalues' intervals and "
                                                  "IRLS's standard errors", target=True,
                              auto_draws="the graphical lasso's edge frequencies and partial correlation intervals, "
                                         "ridge precision's intervals and PCA's component stability (as the "
                                         "single-machine commands), over draws carrying the noise, the centre's noise, "
                                         "clipping and sampling")


def check_analysis(args, fit=True):
    """One-line refusals of a bad analysis or a missing option, before any data are read."""
    a = args.analysis
    if a not in ANALYSES:
        raise CliError(f"unknown --analysis {a!r}; choose one of {', '.join(ANALYSES)}")
    refuse_unused(args, fit)  # an option of another analysis, typed, is refused rather than silently dropped
    need = {"tensor-mog": ["sigma2"], "tensor-stm": ["vocabulary_size"]}.get(a, [])
    if fit:
        need += {"pca": ["n_components"], "tensor-mog": ["n_components"], "tensor-stm": ["n_components"],
                 "ridge": ["alpha"]}.get(a, [])
    for name in need:
        if getattr(args, name, None) is None:
            raise CliError(f"--{name.replace('_', '-')} is required for --analysis {a}")
    share = getattr(args, "sampling_share", None)
    if share is not None and (a != "regress" or not 0.0 <= share < 1.0 or (share and getattr(args, "p", 1.0) != 1.0)):
        raise CliError("--sampling-share is for --analysis regress with --p 1 (LAD), a share in [0, 1); got "
                       f"{share:g} with --analysis {a}" + (f" --p {getattr(args, 'p', 1):g}" if a == "regress" else ""))
    if fit and getattr(args, "draws", "auto") not in ("auto", 0) and a in CLOSED_FORM_ONLY:
        raise CliError(f"--draws has no use with --analysis {a}: its spread is in closed form (or, for select, "
                       "from its own redrawn releases); leave --draws out")
    if fit and getattr(args, "intervals_for", "population") == "sample" and a in NO_TARGET:
        why = "no draws are made across sites, so it prints no intervals" if a.startswith("tensor") else \
            "its intervals count the noise only"
        raise CliError(f"--intervals-for has no use with --analysis {a}: {why}; leave it out")


def response_bound_of(args):
    """``--response-bound``, or for ``regress`` its default ``"auto"`` (a private bound drawn across sites, as
    ``dpmoments regress`` draws one); ``None`` for the analyses that take no response bound."""
    bound = getattr(args, "response_bound", None)
    return "auto" if bound is None and getattr(args, "analysis", None) == "regress" else bound


def regress_defaults(args):
    """``(n_iter, w_max, w_max_per_bound)`` across sites with the single-site defaults of ``regress`` (one set of
    defaults): ``n_iter`` 10 and ``w_max = W_MAX_AUTO / B``: fixed now from a PUBLIC response bound ``B``; from an
    "auto" one (the default), ``w_max_per_bound = W_MAX_AUTO``, which the plan divides by the chosen bound."""
    from ..estimators.model_defaults import N_ITER, W_MAX_AUTO

    n_iter, w_max = getattr(args, "n_iter", None), getattr(args, "w_max", None)
    bound, per_bound = response_bound_of(args), None
    if w_max is None and bound == "auto":
        per_bound = W_MAX_AUTO
    elif w_max is None and bound is not None:
        w_max = W_MAX_AUTO / float(bound)
    return (N_ITER if n_iter is None else n_iter), w_max, per_bound


def auto_bounds(args):
    """Which bounds this run chooses across sites (``"row_norm"``, ``"response_bound"``), checked; and the budget.

    Returns ``(names, bound_budget or None)``; one-line refusals of options that would be ignored
    (and of a private centre's shares, at the multi-site defaults, before any file is read:
    :func:`center_across_sites`).
    """
    from ..multisite.analyses import CENTRED

    names = tuple(n for n, v in (("row_norm", getattr(args, "row_norm", None)), ("response_bound",
                                                                               response_bound_of(args))) if v == "auto")
    if "row_norm" in names and args.analysis == "tensor-stm":
        if args.row_norm is not ROW_NORM_DEFAULT:
            raise CliError("--row-norm auto has no use with --analysis tensor-stm: a document's row has norm sqrt(3)")
        names = tuple(n for n in names if n != "row_norm")  # the default, where no bound applies
    private = center_asked(args) == "private"
    choices = choices_of(args, names + (("center",) if private else ()))
    check_choices(choices)
    if args.analysis == "correlation" and center_asked(args) is None:
        raise CliError("--analysis correlation is about the mean: drop --uncentred (a private mean across sites, "
                       "the default) or give a public --center")
    if private and args.analysis not in CENTRED:
        raise CliError(f"--center private across sites is for --analysis {', '.join(CENTRED)}: {args.analysis} is "
                       "not taken about a centre (its statistics are the model's moments about the origin, or of "
                       "the raw rows and response)")
    center_across_sites(args)
    return names, (bound_budget(choices) if names else None)


def center_across_sites(args):
    """``--center private``: the location steps' and the mean's shares (and the grid's range), else ``None``."""
    if center_asked(args) != "private":
        return None
    from ..multisite.location import LOCATION_SHARE, MEAN_SHARE, AutoLocation

    bounds = bound_budget(choices_of(args))
    share = LOCATION_SHARE if args.location_share is None else args.location_share
    mean = MEAN_SHARE if args.center_share is None else args.center_share
    bound = bounds.share if "auto" in (args.row_norm, response_bound_of(args)) else 0.0
    if share + mean + bound >= 1:
        raise CliError(", ".join(f"{k} {v:g}" for k, v in (("--location-share", share), ("--center-share", mean),
                                                            ("--bound-share", bound)) if v) +
                       " add up to 1 or more and leave nothing for the release; lower them")
    return AutoLocation(share=share, low=bounds.search.low, high=bounds.search.high, mean=mean)


def plan_options(args):
    """The public options of the plan (they enter its digest; the sites see them): the target's ``--ranges`` entry
    (select, regress) as ``response_range``."""
    from ._ranges import target_range

    a = args.analysis
    if a == "tensor-mog":
        return {"sigma2": args.sigma2}
    if a == "tensor-stm":
        return {"vocabulary_size": args.vocabulary_size}
    span = target_range(args)
    spans = {} if span is None else {"response_range": span}
    if a == "regress":
        n_iter, w_max, per_bound = regress_defaults(args)
        if span is not None:  # the range bounds the mapped response by 1: w_max is W_MAX_AUTO / 1, fixed now
            w_max, per_bound = (per_bound if w_max is None else w_max), None
        return {"n_iter": n_iter, "w_max": w_max, "p": args.p, **spans,
                **({} if per_bound is None else {"w_max_per_bound": per_bound}),
                **({"intercept": INTERCEPT_SHARE} if getattr(args, "fit_intercept", False) else {}),
                **sampling_option(args)}
    return spans


def sampling_option(args):
    """``{"sampling_budget": share}`` of a LAD ``regress`` plan: ``--sampling-share``, by default ``PrivateIRLS``'s 0.1
    (one set of defaults); ``{}`` for 0, or for another loss (whose sandwich is not LAD's, as on one machine)."""
    from ..multisite.analyses import IRLS_DEFAULTS

    share = getattr(args, "sampling_share", None)
    share = IRLS_DEFAULTS["sampling_budget"] if share is None else share
    return {"sampling_budget": share} if share and getattr(args, "p", 1.0) == 1.0 else {}


def fit_analysis(args, analysis, output, names):
    """Fit ``analysis`` to the wing's ``output``: ``(analysis dict, save(res), one summary line, noise lines)``.

    The analysis goes through the single-site commands' noise rule (:mod:`._noise`): every
    estimate with its standard errors, the failed checks in the report and on the console, and
    an output that is all noise withheld (null in the report, its file kept for inspection).
    """
    from .. import estimators as est_mod
    from .present import PRESENTERS

    return PRESENTERS[analysis].across_sites(args, analysis, output, names, est_mod)


def headline_release(output):
    """A Release of the output whose metadata the report shows (the first release of a multi-release output)."""
    if hasattr(output, "second_moment") or hasattr(output, "cross_moment"):
        return output
    return output.second if hasattr(output, "second") else output.releases[-1]


def multisite_report(command, output, report, analysis, argv, files, extra=None):
    """The privacy report: the headline is the guarantee against the aggregator; the per-site claim beside it."""
    from ..multisite.report import collusion_dict
    from ._report import privacy_report

    rep = privacy_report(command, headline_release(output), analysis=analysis, argv=argv,
                         extra=dict(extra or {}, files=files))
    g = report.guarantee
    rep["privacy"].update(guarantee=str(g), guarantee_detail=g.to_dict(), certified=g.certified,
                          guarantee_is="against the aggregator, which sees every site's message, with "
                                       f"{report.colluders} colluding site(s): the guarantee that holds",
                          per_site_claim=str(report.claimed),
                          per_site_claim_is="each site's message alone (the papers' claim), shown beside the "
                                            "headline, never instead of it",
                          target=report.target)
    if getattr(report, "collusion", None) is not None:  # the colluders assumed, and what holds without and beyond
        rep["privacy"]["collusion"] = collusion_dict(report.collusion)
    rep["protocol"] = report.to_dict()
    if getattr(report, "choices", ()):
        rep["private_choices"] = choices_report(report.choices, report.guarantee)
        rep["private_choices"]["note"] = (
            "each part is one share of every site's budget, with the worst site's guarantee against the aggregator; "
            "a bound or location was chosen from the sum of the sites' noisy histograms (each site's own noise: it "
            "holds with any colluders) and is a private output; the parts compose to composed_guarantee")
    return rep


def print_guarantees(report):
    from ..multisite.report import collusion_line

    for line in choices_lines(report.choices, report.guarantee) if getattr(report, "choices", ()) else ():
        print(line)
    print(f"guarantee against the aggregator ({report.colluders} colluder(s)): {report.guarantee}  <- holds "
          f"(calibrated to meet the budget here: {report.target == 'aggregator'})")
    print(f"per-site claim (each message alone, the papers' view): {report.claimed}")
    if getattr(report, "collusion", None) is not None:
        print(f"collusion: {collusion_line(report.collusion)}")
