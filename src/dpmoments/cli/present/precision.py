"""How a precision matrix (graphical lasso or ridge) is presented: the estimate, its edges and their noise.

Shared by ``dpmoments precision``, ``dpmoments demo`` and the multi-site commands (``--analysis
precision`` and ``ridge``). A graph with no entry above the noise floor is withheld: its edges
are not printed or drawn.
"""

import numpy as np

from ...estimators.glasso import glasso
from ...estimators.graph import RIDGE_THRESHOLD, edge_matrix, partial_correlations
from ...estimators.summaries import edge_lines, edge_table, precision_noise
from ...metrics import auc, roc_curve, tpr_fpr
from .._args import CliError, parse_alpha
from .._noise import num, spread
from .._release import expected_noise_error


def fit_precision(release, method, alpha, args, max_edges=None, n_alphas=20, alpha_floor="noise", roc=False):
    """``(estimator, path)``: the graphical lasso (``method="glasso"``) or ridge precision fitted to ``release``.

    One fit for ``dpmoments precision`` and the multi-site commands: ``--draws auto`` redraws the
    release 50 times (up to 200 columns) with every part of the error (the added noise, the private
    centre's, the clipping loss and, for ``--intervals-for population``, sampling;
    ``estimators/error_draws.py``), which gives the edges' frequencies and the intervals.
    """
    options = spread(args, release.n_features, auto=True)
    if method == "glasso":
        return glasso(release, alpha, max_edges, n_alphas, alpha_floor, roc=roc, **options)
    from ...estimators.ridge import RidgePrecisionFit  # PrivateRidgePrecision without scikit-learn

    # epsilon, delta, row_norm: unused by fit_release, the release carries its guarantee
    return RidgePrecisionFit(alpha=alpha, epsilon=1.0, delta=1e-6, row_norm=1.0, **options).fit_release(release), None


def save_spread(res, est, names):
    """Beside the estimate: each edge's inclusion frequency (glasso), each entry's se and interval (ridge), the
    partial correlations' intervals (both)."""
    if getattr(est, "edge_frequency_", None) is not None:
        res.save_matrix("edge_frequency", est.edge_frequency_, names)
    if getattr(est, "partial_correlation_interval_", None) is not None:  # NaN where withheld
        res.save_matrix("partial_correlation_lower", est.partial_correlation_interval_[0], names)
        res.save_matrix("partial_correlation_upper", est.partial_correlation_interval_[1], names)
    if getattr(est, "precision_se_", None) is not None:
        res.save_matrix("precision_se", est.precision_se_, names)
        if est.precision_interval_ is not None:
            res.save_matrix("precision_lower", est.precision_interval_[0], names)
            res.save_matrix("precision_upper", est.precision_interval_[1], names)


def figures(res, est, E, names, truth, path, threshold, release, method, request, noise=None):
    from ... import plots

    if noise is None or not noise.withholds:  # a graph of noise is not drawn as a result
        freq = getattr(est, "edge_frequency_", None)
        title = f"{method}, {release.guarantee}: {int(E.sum() // 2)} edges" + (
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
    grid = request.epsilon_grid
    if grid:
        err = expected_noise_error(release, grid, request.delta)
        ax = plots.plot_privacy_utility(grid, err, label="expected relative Frobenius error of the released matrix",
                                        chosen=request.epsilon, title="noise against epsilon (calibration only)")
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


def truth_lines(info):
    """Support recovery against a ``--truth`` graph, for the console (no line without one)."""
    if "tpr" not in info:
        return []
    return [f"against the truth graph ({info['truth_edges']} edges): TPR {info['tpr']:.2f}, FPR {info['fpr']:.2f}"
            + (f", ROC AUC {info['roc_auc']:.2f}" if "roc_auc" in info else "")]


def across_sites(args, a, release, names, est_mod):
    """The graphical lasso (``precision``) or ridge precision (``ridge``) of the multi-site ``release``, as
    ``dpmoments precision`` fits and prints it: the same draws, intervals, stable edges and withheld entries."""
    if a == "precision":
        method, alpha, threshold = "glasso", parse_alpha(args.alpha or "ebic"), None
    else:
        method, alpha, threshold = "ridge", parse_alpha(args.alpha), RIDGE_THRESHOLD
        if alpha == "ebic":
            raise CliError("--analysis ridge needs a number for --alpha")
    est, _ = fit_precision(release, method, alpha, args)
    E = edge_matrix(est.precision_, threshold)
    rule = "non-zero" if threshold is None else f"|partial correlation| > {threshold}"

    def save(res):
        res.save_matrix("precision", est.precision_, names)
        save_spread(res, est, names)
        res.save_table("edges.csv", *edge_table(est, E, names, None))
        if not getattr(args, "no_figures", True) and not noise.withholds:  # a graph of noise is not drawn as a result
            from ... import plots

            freq = getattr(est, "edge_frequency_", None)
            res.save_figure("network", plots.plot_network(
                np.where(E, partial_correlations(est.precision_), 0.0), names, stability=freq,
                n_draws=est.n_draws if freq is not None else None,
                title=f"{a} ({release.guarantee}): {int(E.sum() // 2)} edges"))

    noise = precision_noise(est)
    info = {"estimator": type(est).__name__, "alpha": float(getattr(est, "alpha_", est.alpha)), "edge_rule": rule,
            "n_edges": int(E.sum() // 2), "estimate": "precision.npy"}
    summary = "the graph withheld (noise)" if noise.withholds else f"{info['n_edges']} edge(s)"
    shown = [] if noise.withholds else edge_lines(est, E, names)
    return noise.analysis(info), save, summary, shown + noise.lines()
