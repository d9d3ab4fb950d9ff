"""``dpmoments precision``: a private precision matrix (graphical lasso or ridge) and its network.

The data are touched once, to release the second moment; the solver, the
choice of penalty (eBIC, a target edge count), the correlation scaling and
the ROC curve against a truth graph are all post-processing of that release.

Noise: the graphical lasso is refitted at the chosen penalty on redrawn
releases (``--draws``), giving each edge's inclusion frequency; ridge gives
each entry's standard error and interval. A graph with no entry above the
noise floor is withheld (its edges are not printed or drawn); a noisy matrix
or floored variances are shown with a warning.
"""

from ..estimators.model_defaults import RIDGE_THRESHOLD
from ._args import (PRIVATE_ALL, CliError, _bounded_int, add_input_arguments, add_output_arguments,
                    add_privacy_arguments, add_uncentred_argument, check_uncentred, parse_alpha)
from ._noise import add_uncertainty_arguments
from ._choices import release_choices

HELP = "a private precision matrix (graphical lasso or ridge) and its network"
DESCRIPTION = """\
Release the second moment once, then estimate a sparse precision matrix by the graphical lasso
(penalty by eBIC on the release, a fixed --alpha, or the sparsest graph with at most --edges
edges) or a dense one by ridge precision (ROPE), and draw the network of recovered edges. With
--truth, the ROC curve of support recovery along the penalty path is drawn too.

By default nothing needs guessing: the released matrix is the covariance about a private mean
(--center private, --center-share 0.2 and --location-share 0.05 of the budget) with a privately
drawn row bound (--row-norm auto, --bound-share 0.1); the console and report list every share.
Centring is what makes a graph of real data right: the uncentred second moment of data far from
the origin is dominated by the mean. A public --center or --row-norm costs nothing; --uncentred
uses the raw second moment (data centred by design, as in the papers). Data too small for a
draw's share (wine's 178 rows at epsilon 1; breast cancer's 569 run from epsilon 0.84) are
refused in one line that says from which --epsilon (or share) the run goes through: give public
values or a larger share."""
EXAMPLES = """\
  dpmoments precision data.csv --epsilon 1 --delta 1e-6 --out net
  dpmoments precision data.csv --epsilon 1 --delta 1e-6 --scale private --standardize --out net
  dpmoments precision data.csv --epsilon 1 --delta 1e-6 --row-norm 5 --center 4.6 --out net
  dpmoments precision data.parquet --alpha 0.1 --standardize --epsilon 1 --delta 1e-6 --row-norm 5 --out net
  dpmoments precision X.npy --uncentred --edges 20 --truth graph.csv --epsilon 1 --delta 1e-6 --row-norm 1 --out net
  dpmoments precision X.npy --uncentred --method ridge --alpha 0.01 --epsilon 1 --delta 1e-6 --row-norm 1 --out net

writes: precision.npy/.csv, edges.csv, privacy_report.json, network.png,
        edge_frequency.npy/.csv (glasso, with draws), precision_se/_lower/_upper.npy/.csv (ridge, with draws),
        partial_correlation_lower/_upper.npy/.csv (with draws; NaN where withheld),
        roc.png (with --truth), privacy_utility.png (with --epsilon-grid)"""


def add_arguments(parser):
    add_input_arguments(parser, cluster=True, several=True)
    add_privacy_arguments(parser, secure=True, private=PRIVATE_ALL, auto_default=True)
    add_uncentred_argument(parser, "estimate the precision")
    group = parser.add_argument_group("estimator (post-processing: no extra privacy cost)")
    group.add_argument("--method", choices=("glasso", "ridge"), default="glasso", help="default glasso")
    group.add_argument("--alpha", default=None, metavar="A",
                       help="penalty: a number, or 'ebic' (glasso default: eBIC on the release); required for ridge")
    group.add_argument("--edges", type=int, metavar="K",
                       help="glasso: the sparsest-penalty graph with at most K edges along the path (instead of --alpha)")
    group.add_argument("--n-alphas", type=_bounded_int(1, 1000), default=20, metavar="M",
                       help="penalties on the path (default 20)")
    group.add_argument("--alpha-floor", default="noise", metavar="F",
                       help="--alpha ebic searches no penalty below F: 'noise' (default: the release's noise level, "
                            "below which its noise alone makes edges) or a number >= 0 (0: no floor)")
    group.add_argument("--standardize", action="store_true",
                       help="scale the released matrix to a correlation matrix before solving (post-processing)")
    group.add_argument("--threshold", type=float, metavar="T",
                       help="an edge is an absolute partial correlation above T (default: any non-zero for glasso, "
                            f"{RIDGE_THRESHOLD} for ridge, whose estimate is dense)")
    group.add_argument("--truth", metavar="FILE",
                       help="a reference graph (d x d .npy/.csv matrix, or a CSV edge list of column names) for ROC")
    add_uncertainty_arguments(parser, closed_form="the signal-to-noise checks only",
                              auto_draws="each edge's inclusion frequency and partial correlation interval (glasso) "
                                         "or each entry's interval (ridge), over draws carrying the noise, the "
                                         "centre's noise, clipping and sampling", target=True)
    add_output_arguments(parser)


def _alpha(args):
    if args.threshold is not None and not 0 <= args.threshold < 1:
        raise CliError(f"--threshold must be in [0, 1) (an absolute partial correlation); got {args.threshold:g}")
    if args.method == "ridge":
        if args.alpha is None or args.alpha == "ebic" or args.edges is not None:
            raise CliError("ridge precision needs a numeric --alpha (e.g. --alpha 0.01); --edges and --alpha ebic "
                           "are for glasso")
    if args.edges is not None:
        if args.alpha is not None:
            raise CliError("give --alpha or --edges, not both")
        if args.edges < 0:
            raise CliError(f"--edges must be >= 0; got {args.edges}")
        return None
    return "ebic" if args.alpha is None else parse_alpha(args.alpha)


def _alpha_floor(args):
    if args.alpha_floor == "noise":
        return "noise"
    try:
        value = float(args.alpha_floor)
    except ValueError:
        raise CliError(f"--alpha-floor must be 'noise' or a number >= 0; got {args.alpha_floor!r}") from None
    if not value >= 0:
        raise CliError(f"--alpha-floor must be >= 0; got {args.alpha_floor}")
    return value


def run(args):
    from ..estimators.graph import edge_matrix, standardized_checked
    from ..estimators.summaries import precision_summary
    from ._io import read_truth
    from ._output import ResultsDir
    from ._release import second_moment_release
    from ._report import privacy_report
    from .present.precision import edge_table, figures, fit_precision, precision_noise, save_spread, truth_lines

    alpha = _alpha(args)
    check_uncentred(args)
    source, release, fingerprint, request = second_moment_release(args)
    names = source.feature_names
    truth = None if args.truth is None else read_truth(args.truth, names)
    work, floored = standardized_checked(release) if args.standardize else (release, [])
    # the fit itself redraws the release for its spread (edge frequencies or standard errors)
    est, path = fit_precision(work, args.method, alpha, args, args.edges, args.n_alphas, _alpha_floor(args),
                              roc=truth is not None)
    threshold = args.threshold
    if args.method == "ridge" and threshold is None:
        threshold = RIDGE_THRESHOLD
    E = edge_matrix(est.precision_, threshold)
    noise = precision_noise(est, floored)
    analysis = noise.analysis(_analysis(args, est, E, threshold, truth, path))
    with ResultsDir(args.out, args.force) as res:
        res.save_matrix("precision", est.precision_, names)
        save_spread(res, est, names)
        res.save_table("edges.csv", *edge_table(est, E, names, truth))
        if not args.no_figures:
            figures(res, est, E, names, truth, path, threshold, release, args.method, request, noise)
        res.save_json("privacy_report.json", privacy_report(
            "precision", release, source=source, fingerprint=fingerprint, analysis=analysis, argv=args.argv,
            extra={"files": res.files + ["privacy_report.json"], **release_choices(release, request.choices)}))
    if not args.quiet:
        summary = precision_summary(est, args.method, names, source.name, release, threshold, floored)
        for line in (summary.title, *truth_lines(analysis), *summary.lines):
            print(line)
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def _analysis(args, est, E, threshold, truth, path):
    from ..metrics import auc, roc_curve, tpr_fpr

    info = {"method": args.method, "alpha": float(getattr(est, "alpha_", est.alpha)),
            "alpha_rule": "edges<=%d" % args.edges if args.edges is not None else str(_alpha(args)),
            "standardized": args.standardize, "edge_threshold": threshold, "n_edges": int(E.sum() // 2),
            "postprocessing": list(est.release_.postprocessing), "estimate": "precision.npy"}
    if args.method == "glasso":
        info.update(n_iter=int(est.n_iter_), converged=bool(est.converged_))
        if getattr(est, "alpha_floor_", None) is not None:
            info["alpha_floor"] = float(est.alpha_floor_)
    if truth is not None:
        tpr, fpr = tpr_fpr(E, truth)
        info.update(tpr=tpr, fpr=fpr, truth_edges=int(truth.sum() // 2))
        if path is not None:
            f, t = roc_curve(path, truth)
            info["roc_auc"] = auc(f, t)
    return info


