"""``dpmoments regress``: private robust (least absolute deviations) regression by IRLS.

Private IRLS (Park & Welling 2016, corrected) makes ``2 J`` releases, one
pair per iteration, each computed from weights that depend on the previous
private iterate: it needs ``J`` passes over the rows, so this subcommand
(unlike ``covariance`` or ``pca``) loads the selected columns into memory.
``--max-rows`` caps what it will load; the file is still read in chunks.
"""

import argparse

from ..estimators.model_defaults import N_ITER, W_MAX_AUTO
from ..mechanisms import laws
from ..privacy.relations import describe_relation
from ._args import (CLIPPING_HELP, CliError, _bound, _delta, _epsilon, add_input_arguments, add_memory_arguments,
                    add_output_arguments, positive_int, seed_int)
from ._choices import (add_choice_arguments, bound_budget, bound_or_auto, check_choices, choices_lines, choices_of,
                       choices_report, too_few_rows_hint)
from ._noise import Noise, add_uncertainty_arguments, draws
from ._ranges import add_model_ranges_arguments, model_ranges, named_ranges
from ._unused_options import typed

HELP = "private robust (least absolute deviations) regression by IRLS"
DESCRIPTION = """\
Fit a linear model y ~ X (with an intercept by default) by private iteratively reweighted least
squares (Park & Welling 2016, with the corrected accounting): each of --n-iter iterations (default
10) releases the weighted moments
(1/n) sum s_i x_i y_i and (1/n) sum s_i x_i x_i^T with Gaussian noise, where the weights
s_i = 1/max(1/w_max, |residual_i|^(2-p)) come from the previous private iterate; p = 1 is
median (LAD) regression. The total (epsilon, delta) is split over the 2 J releases (zCDP by
default). Rows are clipped to ||x||_2 <= --row-norm and responses to |y| <= --response-bound.
By default both bounds are 'auto': private 0.95-quantiles of ||x|| and |y| (lowered on small
data to leave the draw's rank error above them, never below the 0.75-quantile), one exponential-
mechanism draw each from --bound-share 0.1 of the budget (split equally, shares of rho under
--accounting zcdp), listed in the report; a public bound costs nothing and is used as given.
Too few rows for the draws (breast cancer's 569 at epsilon below 1.8) are refused in one line
that says from which --epsilon (or --bound-share) the run goes through. --w-max defaults to
'auto': 5 / response_bound, so residuals below a fifth of the response bound get the largest
weight (docs/regression.md says why). The intervals count the noise of every iteration, the
iterations not run and, from --sampling-share 0.1 of the budget (three releases at the final
iterate, listed in the report), the sampling variability of the rows; not the clipping bias.

Memory: IRLS needs one pass per iteration, so the selected columns (and the target) are
loaded into memory (8 bytes per value); files with more than --max-rows rows are refused."""
EXAMPLES = """\
  dpmoments regress data.csv --target y --epsilon 1 --delta 1e-6 --out fit
  dpmoments regress data.csv --target y --epsilon 1 --delta 1e-6 --row-norm 2 --response-bound 3 \\
      --n-iter 5 --w-max 10 --out fit
  dpmoments regress data.parquet --columns a,b --target y --no-fit-intercept --epsilon 1 --delta 1e-6 \\
      --row-norm 2 --response-bound 3 --n-iter 5 --w-max 10 --out fit --epsilon-grid 0.3,1,3

writes: coefficients.csv (with se and interval), coefficients.npy, coefficients_se.npy, privacy_report.json,
        coefficients.png, privacy_utility.png (with --epsilon-grid)

Noise: each coefficient is printed with its standard error and interval (the noise of every
iteration, the iterations not run and sampling; not the clipping bias); coefficients within their noise are shown with a warning, never hidden:
their intervals say how much of them is noise."""


# -- the subcommand ---------------------------------------------------------------------------------
def add_arguments(parser):
    add_input_arguments(parser, target=True, several=True)
    add_memory_arguments(parser)
    group = parser.add_argument_group("privacy (required: --epsilon, --delta)")
    group.add_argument("--epsilon", type=_epsilon, metavar="EPS", help="total epsilon > 0 of the 2 J releases (required)")
    group.add_argument("--delta", type=_delta, metavar="DELTA", help="total delta in (0, 1) (required), e.g. 1e-6 < 1/n")
    group.add_argument("--row-norm", type=bound_or_auto, metavar="R|auto", default="auto",
                       help="the L2 bound R on each feature row (default auto): a PUBLIC number, or 'auto', a private "
                            "0.95-quantile of ||x|| (lowered on small data) paid from --bound-share. Clipping: " + CLIPPING_HELP)
    group.add_argument("--response-bound", type=bound_or_auto, metavar="B|auto", default="auto",
                       help="the bound on |y| (default auto): responses are clipped to [-B, B]; a PUBLIC number, or "
                            "'auto', a private 0.95-quantile of |y| paid from --bound-share (the two auto bounds share it "
                            "equally, one exponential-mechanism draw each on the public --search-range)")
    add_choice_arguments(group, center=False, scale=False)
    add_model_ranges_arguments(group)
    group.add_argument("--accounting", choices=("zcdp", "basic", "advanced"), default="zcdp",
                       help="how the budget is split over the 2 J releases (default zcdp)")
    group.add_argument("--first-moment", choices=laws.names(laws.ADDITIVE), default=laws.GAUSSIAN.name,
                       help="noise on the weighted cross moment (default gaussian)")
    group.add_argument("--split", type=float, default=0.5, metavar="F",
                       help="share of each iteration's budget for the cross moment (default 0.5)")
    group.add_argument("--seed", type=seed_int, metavar="INT",
                       help="seed the noise: reproducible but NOT secure (default: fresh OS entropy)")
    est = parser.add_argument_group("estimator")
    est.add_argument("--n-iter", type=positive_int, metavar="J", default=N_ITER,
                     help=f"IRLS iterations, each two releases (default {N_ITER})")
    est.add_argument("--w-max", type=_w_max, metavar="W|auto", default="auto",
                     help="the largest IRLS weight: residuals below 1/W count as 1/W; the sensitivities grow "
                          f"linearly in W (default auto: {W_MAX_AUTO:g} / response_bound)")
    est.add_argument("--p", type=float, default=1.0, metavar="P", help="the loss sum |r_i|^p, p in [1, 2] (default 1: LAD)")
    est.add_argument("--fit-intercept", action=argparse.BooleanOptionalAction, default=True,
                     help="append a public constant column R/2 (default on; the row bound grows to sqrt(R^2 + R^2/4))")
    est.add_argument("--sampling-share", type=float, default=0.1, metavar="F",
                     help="share of the budget (of rho) for the three releases behind the intervals' sampling part "
                          "with --intervals-for population (default 0.1; 0: no sampling part, said in the report)")
    add_uncertainty_arguments(parser, closed_form="every coefficient's standard error (first order)", target=True)
    add_output_arguments(parser)


def _w_max(text):
    return "auto" if text == "auto" else _bound(text)


def _check(args):
    from ._io import require_target

    require_target(args)
    missing = [f for f, v in (("--epsilon", args.epsilon), ("--delta", args.delta)) if v is None]
    choices = choices_of(args, [k for k in ("row_norm", "response_bound") if getattr(args, k) == "auto"])
    check_choices(choices)
    if missing:
        raise CliError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required")
    if not 1.0 <= args.p <= 2.0:
        raise CliError(f"--p must be in [1, 2]; got {args.p:g}")
    if not 0.0 <= args.sampling_share < 0.9:
        raise CliError(f"--sampling-share must be in [0, 0.9); got {args.sampling_share:g}")
    if args.p != 1.0 and args.sampling_share and typed(getattr(args, "argv", ()), "--sampling-share"):
        raise CliError(f"--sampling-share is for --p 1 (LAD: its releases estimate LAD's sandwich); with --p "
                       f"{args.p:g} no sampling release is made and the intervals count the noise only: leave it out")
    if not 0.0 < args.split < 1.0:
        raise CliError(f"--split must be in (0, 1); got {args.split:g}")
    return choices


def run(args):
    from sklearn.base import clone

    from ..estimators import PrivateIRLS
    from ._io import fingerprint, open_input, read_in_memory
    from ._output import ResultsDir
    from ._release import epsilon_grid
    from ._report import estimator_report, randomness_text
    from .present.regress import coefficient_fields, coefficient_figure, coefficient_lines, grid_figure, save_coefficients

    choices = _check(args)
    source = open_input(args, target=args.target)
    grid = epsilon_grid(args)
    ranges, response_range = model_ranges(args, source.feature_names)
    est = PrivateIRLS(epsilon=args.epsilon, delta=args.delta, row_norm=args.row_norm,
                      response_bound=args.response_bound, n_iter=args.n_iter, w_max=args.w_max, p=args.p,
                      first_moment=args.first_moment, accounting=args.accounting, split=args.split,
                      fit_intercept=args.fit_intercept, rng=args.seed, bound_budget=bound_budget(choices),
                      level=args.level, target=args.intervals_for, sampling_budget=args.sampling_share,
                      ranges=ranges, response_range=response_range)
    fp = fingerprint(source, args)
    X, y = read_in_memory(source, args)
    est.set_params(n_draws=draws(args, X.shape[1], auto=False))
    with too_few_rows_hint(choices, ranges=True):  # every column's range (the target's too) draws nothing
        est.fit(X, y)
    n, d = X.shape
    del X, y
    noise = Noise(est)
    names = source.feature_names
    rep = est.privacy_report_
    chosen = {"private_choices": choices_report(est.privacy_parts_, est.privacy_, bound_budget(choices))} \
        if est.privacy_parts_ else {}
    analysis = {"estimator": "PrivateIRLS", "n_iter": est.n_iter_, "w_max": est.w_max_, "p": args.p,
                "fit_intercept": args.fit_intercept, "accounting": args.accounting,
                "budget_split": rep["budget"], "psd_floor_clipped": list(est.n_psd_clipped_),
                "loaded_into_memory": True, "estimate": "coefficients.csv", "standard_errors": "coefficients_se.npy",
                **coefficient_fields(est, names), **noise.fields()}
    privacy = {"mechanism": f"{args.first_moment} (cross moment) + gaussian (second moment), 2 x {est.n_iter_} releases",
               "sensitivity": rep["sensitivity"], "sensitivity_norm": "l2 (l1 for a laplace cross moment)",
               "calibration": args.accounting, "noise_scale": rep["noise"], "row_norm": est.row_norm_,
               "response_bound": est.response_bound_, "ranges": named_ranges(est.ranges_, names)}
    with ResultsDir(args.out, args.force) as res:
        save_coefficients(res, est, names)
        if not args.no_figures:
            res.save_figure("coefficients", coefficient_figure(est, names))
        if grid and not args.no_figures:
            d_aug = d + bool(args.fit_intercept)
            scales = [_at(clone(est).set_params(epsilon=e), est)._plan(n, d_aug)[3] for e in grid]
            grid_figure(res, grid, scales, args)
        res.save_json("privacy_report.json", estimator_report(
            "regress", est.privacy_, privacy=privacy, source=source, fingerprint=fp, n=n, d=d, analysis=analysis,
            argv=args.argv, randomness=rep["randomness"], files=res.files, extra=chosen))
    if not args.quiet:
        print(f"IRLS (p={args.p:g}, {est.n_iter_} iterations) on {n} rows x {d} columns of {source.name}:")
        for line in coefficient_lines(est, names):
            print(line)
        noise.print()
        b = est.budget_
        print(f"privacy: guarantee {est.privacy_}, neighbouring_relation {describe_relation(est.neighbours_)}; "
              f"calibration {args.accounting} over {2 * est.n_iter_} releases (per iteration {b.first_moment} + "
              f"{b.second_moment}); row_norm {est.row_norm_:g}, response_bound {est.response_bound_:g} (rows and "
              "responses clipped); " + randomness_text(rep["randomness"], False))
        for line in choices_lines(est.privacy_parts_, est.privacy_) if est.privacy_parts_ else ():
            print(line)
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def _at(copy, est):
    """A clone that plans with the bounds ``est`` used (drawn privately or public): no data access."""
    copy.row_norm_, copy.response_bound_ = est.row_norm_, est.response_bound_
    return copy


