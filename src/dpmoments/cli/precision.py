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

import warnings

import numpy as np

from ..metrics import auc, roc_curve, tpr_fpr
from ._args import (PRIVATE_ALL, CliError, _bounded_int, add_input_arguments, add_output_arguments,
                    add_privacy_arguments, add_uncentred_argument, default_center, parse_alpha)
from ._io import read_truth
from ._noise import Noise, add_uncertainty_arguments, draws, interval_text, num, table
from ._output import ResultsDir
from ._release import expected_noise_error, second_moment_release
from ._report import privacy_report, privacy_summary, rows_text
from ._choices import print_release_choices, release_choices

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
        roc.png (with --truth), privacy_utility.png (with --epsilon-grid)"""

RIDGE_THRESHOLD = 0.05
#: The console lists at most this many edges (edges.csv holds them all).
CONSOLE_EDGES = 12


def add_arguments(parser):
    add_input_arguments(parser, cluster=True)
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
                              auto_draws="each edge's inclusion frequency (glasso) or each entry's standard error "
                                         "(ridge)")
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


def standardized(release):
    """The release scaled to a correlation matrix, variances floored at their noise level (and warned about).

    See :func:`dpmoments.estimators.standardize.standardize_release`.
    """
    return standardized_checked(release)[0]


def standardized_checked(release, owner="precision --standardize"):
    """:func:`standardized`, and its failed checks as ``diagnostics_`` entries (also warned, as before)."""
    from ..estimators.standardize import standardize_release
    from ..exceptions import NoiseDominatesWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaled = standardize_release(release, owner=owner)
    found = []
    for w in caught:  # passed on as they were; the floor's own sentence becomes a diagnostic
        warnings.warn(w.message, w.category, stacklevel=2)
        if issubclass(w.category, NoiseDominatesWarning):
            found.append({"code": "variance-below-noise", "message": str(w.message).removeprefix(f"{owner}: ")})
    return scaled, found


def partial_correlations(precision):
    scale = np.sqrt(np.abs(np.diag(precision)))
    scale[scale == 0] = 1.0
    P = -precision / np.outer(scale, scale)
    np.fill_diagonal(P, 1.0)
    return P


def edge_matrix(precision, threshold):
    """Boolean (d, d) edges: |partial correlation| > threshold (any non-zero when threshold is None)."""
    E = np.abs(precision) > 1e-8 if threshold is None else np.abs(partial_correlations(precision)) > threshold
    np.fill_diagonal(E, False)
    return E | E.T


def glasso(release, alpha, max_edges=None, n_alphas=20, alpha_floor="noise", roc=False, n_draws=0, level=0.9,
           rng=None):
    """Fit the graphical lasso on a release, solving each penalty once. Returns (estimator, path precisions).

    A fixed ``alpha`` is one solve. ``"ebic"`` and ``max_edges`` solve the grid once, as a warm-started
    path kept on the estimator (``path_``), which the ROC curve reads. A path is solved for the ROC
    only when ``roc`` asks for one that the estimator did not already solve. ``n_draws`` redrawn
    releases are each solved once more at the chosen penalty (the edges' inclusion frequencies),
    by the same fit: the estimate is never solved twice.
    """
    # PrivateGraphicalLasso's logic without scikit-learn (whose import would cost more than reading most files)
    from ..estimators.precision import GraphicalLassoFit
    from ..estimators.selection import alpha_grid
    from ..solvers import graphical_lasso_path

    # epsilon, delta, row_norm: unused by fit_release, the release carries its guarantee
    kw = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, n_draws=n_draws, level=level, rng=rng)
    if max_edges is not None:
        est = GraphicalLassoFit(alpha="edges", max_edges=max_edges, alphas=n_alphas, **kw)
    elif alpha == "ebic":
        est = GraphicalLassoFit(alpha="ebic", alphas=n_alphas, alpha_floor=alpha_floor, **kw)
    else:
        est = GraphicalLassoFit(alpha=alpha, **kw)
    est.fit_release(release)
    if not roc:
        return est, None
    S = est.release_.second_moment  # the projected release the estimator solved on
    grid = alpha_grid(S, n_alphas)
    if est.path_ is not None and np.array_equal(est.path_.alphas, grid):
        return est, est.path_.precisions
    return est, [r.precision for r in graphical_lasso_path(S, grid)]


def run(args):
    alpha = _alpha(args)
    default_center(args)
    source, release, fingerprint = second_moment_release(args)
    names = source.feature_names
    truth = None if args.truth is None else read_truth(args.truth, names)
    work, floored = standardized_checked(release) if args.standardize else (release, [])
    # the fit itself redraws the release for its spread (edge frequencies or standard errors)
    bootstrap = dict(n_draws=draws(args, release.n_features, auto=True), level=args.level, rng=args.seed)
    if args.method == "glasso":
        est, path = glasso(work, alpha, args.edges, args.n_alphas, _alpha_floor(args), roc=truth is not None,
                           **bootstrap)
        threshold = args.threshold
    else:
        from ..estimators.precision import RidgePrecisionFit  # PrivateRidgePrecision without scikit-learn

        est = RidgePrecisionFit(alpha=alpha, epsilon=1.0, delta=1e-6, row_norm=1.0, **bootstrap).fit_release(work)
        path, threshold = None, RIDGE_THRESHOLD if args.threshold is None else args.threshold
    E = edge_matrix(est.precision_, threshold)
    noise = precision_noise(est, floored)
    analysis = noise.analysis(_analysis(args, est, E, threshold, truth, path))
    with ResultsDir(args.out, args.force) as res:
        res.save_matrix("precision", est.precision_, names)
        save_spread(res, est, names)
        res.save_table("edges.csv", *edge_table(est, E, names, truth))
        if not args.no_figures:
            _figures(res, est, E, names, truth, path, threshold, release, args, noise)
        res.save_json("privacy_report.json", privacy_report(
            "precision", release, source=source, fingerprint=fingerprint, analysis=analysis, argv=args.argv,
            extra={"files": res.files + ["privacy_report.json"], **release_choices(release, args)}))
    if not args.quiet:
        _print(source, release, analysis, args)
        if not noise.withholds:
            for line in edge_lines(est, E, names):
                print(line)
        noise.print()
        print(privacy_summary(release))
        print_release_choices(release)
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def precision_noise(est, floored=()):
    """The noise of a precision fit: a graph with no entry above the noise floor is withheld."""
    noise = Noise(est, floored)
    if noise.failed("no-edge-above-noise"):
        noise.withhold("the edges (no entry of the released matrix stands out of the noise)", "edges.csv",
                       "no-edge-above-noise", fields=("n_edges",))
    return noise


def save_spread(res, est, names):
    """Beside the estimate: each edge's inclusion frequency (glasso) or each entry's se and interval (ridge)."""
    if getattr(est, "edge_frequency_", None) is not None:
        res.save_matrix("edge_frequency", est.edge_frequency_, names)
    if getattr(est, "precision_se_", None) is not None:
        res.save_matrix("precision_se", est.precision_se_, names)
        if est.precision_interval_ is not None:
            res.save_matrix("precision_lower", est.precision_interval_[0], names)
            res.save_matrix("precision_upper", est.precision_interval_[1], names)


def _edge_columns(est):
    """The noise columns of the edge table: frequency (glasso draws), se and interval of the entry (ridge draws)."""
    freq = getattr(est, "edge_frequency_", None)
    se = getattr(est, "precision_se_", None)
    level = f"{100 * est.level:g}% interval"
    if freq is not None:
        return ["frequency"], lambda a, b: [f"{freq[a, b]:.2f}"]
    if se is not None and est.precision_interval_ is not None:
        lo, hi = est.precision_interval_
        return (["precision", "se", level],
                lambda a, b: [num(est.precision_[a, b], 4), num(se[a, b]), interval_text(lo[a, b], hi[a, b])])
    return [], lambda a, b: []


def edge_table(est, E, names, truth):
    """(header, rows) of edges.csv: each edge with its partial correlation and its noise columns."""
    P = partial_correlations(est.precision_)
    extra, cells = _edge_columns(est)
    i, j = np.nonzero(np.triu(E, 1))
    pairs = sorted(zip(i.tolist(), j.tolist()), key=lambda ij: -abs(P[ij]))
    rows = [[names[a], names[b], f"{P[a, b]:.4f}", *cells(a, b), "" if truth is None else bool(truth[a, b])]
            for a, b in pairs]
    return ["feature_a", "feature_b", "partial_correlation", *extra, "in_truth"], rows


def edge_lines(est, E, names, top=CONSOLE_EDGES):
    """The strongest edges with their noise (inclusion frequency or standard error), for the console."""
    header, rows = edge_table(est, E, names, None)
    if not rows:
        return []
    freq = getattr(est, "edge_frequency_", None)
    out = []
    if freq is not None:
        u = est.uncertainty_
        out.append(f"edges: {u['n_edges_stable_90']} of {u['n_edges']} in at least 90% of {u['n_draws']} redrawn "
                   "releases ('frequency': the share of them with the edge)")
    elif "se" not in header:
        out.append("edges (no per-edge noise without draws: run with --draws B for each edge's frequency):")
    out += table([f"{header[0]} - {header[1]}", *header[2:-1]], [[f"{r[0]} - {r[1]}", *r[2:-1]] for r in rows[:top]])
    if len(rows) > top:
        out.append(f"  ... {len(rows) - top} more in edges.csv")
    return out


def _analysis(args, est, E, threshold, truth, path):
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


def _edge_rows(precision, E, names, truth):
    P = partial_correlations(precision)
    i, j = np.nonzero(np.triu(E, 1))
    rows = sorted(zip(i.tolist(), j.tolist()), key=lambda ij: -abs(P[ij]))
    return [[names[a], names[b], f"{P[a, b]:.4f}", "" if truth is None else bool(truth[a, b])] for a, b in rows]


def _figures(res, est, E, names, truth, path, threshold, release, args, noise=None):
    from .. import plots

    if noise is None or not noise.withholds:  # a graph of noise is not drawn as a result
        freq = getattr(est, "edge_frequency_", None)
        title = f"{args.method}, {release.guarantee}: {int(E.sum() // 2)} edges" + (
            "" if noise is None else f"; signal_to_noise {num(noise.snr, 2)}")
        res.save_figure("network", plots.plot_network(np.where(E, partial_correlations(est.precision_), 0.0), names,
                                                      truth=truth, title=title, stability=freq,
                                                      n_draws=est.n_draws if freq is not None else None))
    if truth is not None:
        curves = {}
        if path is not None:
            curves["penalty path"] = roc_curve(path, truth)
        else:
            curves["threshold path"] = _threshold_roc(partial_correlations(est.precision_), truth)
        tpr, fpr = tpr_fpr(E, truth)
        area = auc(*next(iter(curves.values())))
        res.save_figure("roc", plots.plot_roc(curves, points={"chosen": (fpr, tpr)},
                                              title=f"support recovery, {release.guarantee}: AUC {area:.2f}"))
    grid = args.epsilon_grid_values
    if grid:
        err = expected_noise_error(release, grid, args.delta)
        ax = plots.plot_privacy_utility(grid, err, label="expected relative Frobenius error of the released matrix",
                                        chosen=args.epsilon, title="noise against epsilon (calibration only)")
        res.save_figure("privacy_utility", ax)


def _threshold_roc(P, truth):
    """The ROC of |partial correlation| > t over every t, from one sort (a graph per t is O(d^4)).

    The same points as ``roc_curve`` over the thresholded graphs, (0, 0) and (1, 1) included.
    """
    upper = ~np.tri(P.shape[0], dtype=bool)  # a mask, not index arrays: 12.5 million pairs at d = 5000
    score, edge = np.abs(P[upper]), np.abs(np.asarray(truth)[upper].astype(np.float64)) > 1e-8
    order = np.argsort(-score)  # ties need no order: they enter together below
    score, edge = score[order], edge[order]
    last = np.r_[score[1:] != score[:-1], True]  # tied scores enter together
    tp, fp = np.cumsum(edge)[last], np.cumsum(~edge)[last]
    return np.r_[0.0, fp / max(fp[-1], 1)], np.r_[0.0, tp / max(tp[-1], 1)]


def _print(source, release, info, args):
    print(f"{args.method} precision of {rows_text(release)} x {release.n_features} columns of {source.path.name}: "
          f"alpha = {info['alpha']:.4g} ({info['alpha_rule']}), "
          + ("the graph withheld (noise)" if info["n_edges"] is None else f"{info['n_edges']} edges"))
    if "tpr" in info:
        print(f"against the truth graph ({info['truth_edges']} edges): TPR {info['tpr']:.2f}, FPR {info['fpr']:.2f}"
              + (f", ROC AUC {info['roc_auc']:.2f}" if "roc_auc" in info else ""))
