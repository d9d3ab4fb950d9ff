"""``dpmoments demo``: a private graphical model of the bundled Sachs cell-signalling data.

Public choices, made a priori from the measurement, never from the values:

* the data are natural logs of flow-cytometry intensities, which span about
  four decades (ln 10^4 ~ 9.2), so the public prior centre is the middle of
  that scale, ln 100 ~ 4.6, for every protein;
* a private mean (20% of the budget) refines that centre: rows are centred at
  ln 100 and clipped to norm ``MEAN_ROW_NORM`` = 2 sqrt(11) ~ 6.6 (each
  protein within ~2 log units of the prior centre), which bounds the mean's
  sensitivity;
* the second moment about the private mean (80% of the budget) has rows
  clipped to ``ROW_NORM`` = 5: a protein's spread about its mean is about one
  log unit, so a typical centred row of 11 has norm ~ sqrt(11) ~ 3.3, and 5
  clips only rows with unusually large deviations (about a quarter here);
* delta = 1e-6, well below 1/n = 1/7466.

The released matrix is scaled to a correlation matrix and the graphical lasso
picks, along its penalty path, the sparsest graph with at most as many edges
as the consensus network (18): a choice made on the release (post-processing),
applied identically to the non-private estimate shown beside it.
"""

import math
import time

from ._args import _delta, _epsilon, add_figure_arguments, seed_int
from ._noise import add_uncertainty_arguments, draws

HELP = "a private graphical model of bundled cell-signalling data, beside the non-private one"
DESCRIPTION = """\
On the Sachs et al. (2005) flow-cytometry data bundled with dpmoments (7466 cells x 11
proteins), release a private mean and second moment at (epsilon, delta) = (1, 1e-6), fit the
graphical lasso, and compare the recovered edges with the consensus signalling network and with
the non-private graphical lasso. Writes the figure, the estimates and the privacy report."""
EXAMPLES = """\
  dpmoments demo
  dpmoments demo --out sachs-demo --seed 0      # reproducible (not secure) noise
  dpmoments demo --epsilon 0.5 --out sachs-eps05 --force"""

PRIOR_CENTRE = math.log(100.0)
MEAN_ROW_NORM = 2.0 * math.sqrt(11.0)
ROW_NORM = 5.0
MEAN_SHARE = 0.2


def add_arguments(parser):
    parser.add_argument("--out", "-o", default="dpmoments-demo", metavar="DIR",
                        help="results directory (default dpmoments-demo)")
    parser.add_argument("--force", action="store_true", help="replace an existing non-empty results directory")
    parser.add_argument("--epsilon", type=_epsilon, default=1.0, help="total epsilon (default 1)")
    parser.add_argument("--delta", type=_delta, default=1e-6, help="total delta (default 1e-6)")
    parser.add_argument("--seed", type=seed_int, default=None, help="seed: reproducible but NOT secure noise")
    add_figure_arguments(parser, "figure")
    add_uncertainty_arguments(parser, closed_form="the signal-to-noise checks only",
                              auto_draws="each private edge's inclusion frequency", cost="about 0.3 s at 11")


def private_release(X, epsilon, delta, seed):
    """Private mean (share MEAN_SHARE), then the second moment about it; both spent in one accountant."""
    from ..moments import release_cross_moment, release_second_moment
    import numpy as np

    from ..privacy import Accountant, ApproxDP

    acct = Accountant(ApproxDP(epsilon, delta))
    # Two independent streams: fresh OS entropy each, or two seeds derived from --seed (reported "seeded").
    rng_mean, rng_cov = (None, None) if seed is None else (int(s) for s in np.random.SeedSequence(seed).generate_state(2))
    prior = np.full(X.shape[1], PRIOR_CENTRE)
    mean = release_cross_moment(X, np.ones(len(X)), epsilon=MEAN_SHARE * epsilon, delta=MEAN_SHARE * delta,
                                row_norm=MEAN_ROW_NORM, response_bound=1.0, center=prior, rng=rng_mean)
    acct.spend(mean, label="mean (centred at ln 100)")  # a release: charged under its own relation
    centre = prior + mean.cross_moment
    cov = release_second_moment(X, epsilon=(1 - MEAN_SHARE) * epsilon, delta=(1 - MEAN_SHARE) * delta,
                                row_norm=ROW_NORM, center=centre, rng=rng_cov)
    acct.spend(cov, label="second moment about the private mean")
    return mean, cov, acct


def exact_release(X):
    """The non-private reference: exact mean, no clipping (a bound no row reaches)."""
    from ..moments import release_second_moment

    import warnings

    from ..exceptions import NotPrivateWarning
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        bound = 2.0 * float(np.linalg.norm(X - X.mean(0), axis=1).max()) + 1.0
        return release_second_moment(X, epsilon=math.inf, row_norm=bound, center=X.mean(0))


def run(args):
    from ..datasets import load_sachs
    from ..estimators.glasso import glasso
    from ..estimators.graph import edge_matrix, standardized, standardized_checked
    from ._output import check_destination, ResultsDir
    from ._report import privacy_report
    from .present.precision import precision_noise

    t0 = time.perf_counter()
    check_destination(args.out, args.force)
    sachs = load_sachs()
    X, names, truth = sachs.data, list(sachs.feature_names), sachs.adjacency
    k = int(truth.sum() // 2)
    mean, cov, acct = private_release(X, args.epsilon, args.delta, args.seed)
    work, floored = standardized_checked(cov, owner="demo")
    # the private fit redraws its release for each edge's inclusion frequency
    private, _ = glasso(work, None, max_edges=k, n_alphas=40, n_draws=draws(args, cov.n_features, auto=True),
                        level=args.level, rng=args.seed)
    fits = {"private": (private, edge_matrix(private.precision_, None))}
    noise = precision_noise(private, floored)
    exact, _ = glasso(standardized(exact_release(X)), None, max_edges=k, n_alphas=40)
    fits["non-private"] = (exact, edge_matrix(exact.precision_, None))
    freq = getattr(private, "edge_frequency_", None)
    analysis = _analysis(fits, truth, k, freq)
    analysis["private"] = noise.analysis(analysis["private"])
    with ResultsDir(args.out, args.force) as res:
        for label, (est, E) in fits.items():
            res.save_matrix(f"precision_{label.replace('-', '_')}", est.precision_, names)
        if freq is not None:
            res.save_matrix("edge_frequency_private", freq, names)
        res.save_table("edges.csv", ["estimate", "feature_a", "feature_b", "partial_correlation", "frequency",
                                     "in_consensus"], _edge_rows(fits, names, truth, freq))
        if not args.no_figures:
            res.save_figure("network", _figure(fits, names, truth, acct.spent, private, noise))
        report = privacy_report(
            "demo", cov, analysis=analysis, argv=args.argv,
            extra={"input": {"dataset": "Sachs et al. (2005), bundled", "shape": list(X.shape), "columns": names},
                   "mean_release": mean.to_dict(), "accountant": acct.report(),
                   "public_choices": {"prior_centre": PRIOR_CENTRE, "mean_row_norm": MEAN_ROW_NORM,
                                      "row_norm": ROW_NORM, "mean_share": MEAN_SHARE},
                   "files": res.files + ["privacy_report.json"]})
        report["privacy"].update(headline(mean, cov))
        res.save_json("privacy_report.json", report)
    if not args.quiet:
        _print(fits, names, truth, k, mean, cov, acct, args, time.perf_counter() - t0, freq, noise)
    return 0


def headline(mean, cov):
    """The report's headline: what the two releases compose to, with the parts listed beside it."""
    from ..privacy import compose

    total = compose([mean.guarantee, cov.guarantee])
    return {"guarantee": str(total), "guarantee_detail": total.to_dict(), "certified": total.certified,
            "composition": "basic composition of the two releases below",
            "parts": {"mean": str(mean.guarantee), "second_moment": str(cov.guarantee)}}


def _analysis(fits, truth, k, freq=None):
    from ..metrics import tpr_fpr

    out = {"rule": f"graphical lasso on the correlation-scaled matrix; sparsest penalty with at most {k} edges",
           "consensus_edges": k}
    for label, (est, E) in fits.items():
        tpr, fpr = tpr_fpr(E, truth)
        out[label] = {"alpha": float(est.alpha_), "n_edges": int(E.sum() // 2), "tpr": tpr, "fpr": fpr,
                      "true_positives": int((E & truth).sum() // 2)}
    if freq is not None:
        out["private"].update(zip(("tpr_redrawn", "fpr_redrawn"), expected_rates(freq, truth)))
    return out


def expected_rates(freq, truth):
    """The TPR and FPR averaged over the redrawn releases: the mean inclusion frequency of true and false pairs."""
    import numpy as np

    upper = np.triu(np.ones(truth.shape, dtype=bool), 1)
    true = upper & (truth != 0)
    false = upper & (truth == 0)
    return (float(freq[true].mean()) if true.any() else float("nan"),
            float(freq[false].mean()) if false.any() else float("nan"))


def _edge_rows(fits, names, truth, freq=None):
    import numpy as np

    from ..estimators.graph import partial_correlations

    rows = []
    for label, (est, E) in fits.items():
        P = partial_correlations(est.precision_)
        for a, b in zip(*np.nonzero(np.triu(E, 1))):
            f = f"{freq[a, b]:.2f}" if label == "private" and freq is not None else ""
            rows.append([label, names[a], names[b], f"{P[a, b]:.4f}", f, bool(truth[a, b])])
    return rows


def _figure(fits, names, truth, spent, spread=None, noise=None):
    from .. import plots
    import numpy as np

    from ..estimators.graph import partial_correlations
    from ..metrics import tpr_fpr

    fig = plots.new_figure((11, 6.0))
    axes = fig.subplots(1, 2)
    for ax, (label, (est, E)) in zip(axes, fits.items()):
        tpr, fpr = tpr_fpr(E, truth)
        what = f"private, {spent} in all" if label == "private" else "non-private"
        W = np.where(E, partial_correlations(est.precision_), 0.0)
        kw = {}
        if label == "private" and noise is not None and noise.withholds:  # a graph of noise is not drawn
            W, heading = np.zeros_like(W), f"{what}\nwithheld: no entry stands out of the noise"
        else:
            heading = f"{what}\n{int(E.sum() // 2)} edges, TPR {tpr:.2f}, FPR {fpr:.2f}"
            if label == "private" and getattr(spread, "edge_frequency_", None) is not None:
                kw = dict(stability=spread.edge_frequency_, n_draws=spread.n_draws)
        plots.plot_network(W, names, truth=truth, ax=ax, title=heading, **kw)
    fig.suptitle("Sachs cell-signalling data: graphical lasso vs the consensus network")
    return axes[0]


def _print(fits, names, truth, k, mean, cov, acct, args, seconds, freq=None, noise=None):
    import numpy as np

    from ..metrics import tpr_fpr
    from ..privacy import compose
    from ._report import privacy_summary

    print(f"Sachs et al. (2005): {cov.n} cells x {cov.n_features} proteins; consensus network: {k} edges")
    total = compose([mean.guarantee, cov.guarantee])
    print(f"privacy: {total} in all = private mean {mean.guarantee} + second moment {cov.guarantee} "
          f"(accountant: {acct.spent} spent of {acct.budget})")
    print("second moment " + privacy_summary(cov))
    for label, (est, E) in fits.items():
        if label == "private" and noise is not None and noise.withholds:
            print(f"{label:>11s}: withheld (no entry of the released matrix stands out of the noise)")
            continue
        tpr, fpr = tpr_fpr(E, truth)
        private = label == "private" and freq is not None
        hits = [f"{names[a]}-{names[b]}" + (f" ({freq[a, b]:.2f})" if private else "")
                for a, b in zip(*np.nonzero(np.triu(E & truth, 1)))]
        print(f"{label:>11s}: {int(E.sum() // 2)} edges, {len(hits)} in the consensus (TPR {tpr:.2f}, FPR {fpr:.2f}): "
              + ", ".join(hits))
        if private:
            t, f = expected_rates(freq, truth)
            stable = int(np.sum(np.triu(E, 1) & (freq >= 0.9)))
            n_draws = noise.uncertainty["n_draws"]
            print(f"{'':>11s}  noise: (in brackets) the share of {n_draws} redrawn releases with the edge; "
                  f"{stable} of {int(E.sum() // 2)} edges in at least 90%; averaged over them TPR {t:.2f}, "
                  f"FPR {f:.2f}")
    if noise is None or not noise.withholds:  # a withheld graph is not compared either
        both = fits["private"][1] & fits["non-private"][1]
        print(f"edges shared by the private and non-private graphs: {int(both.sum() // 2)}")
    if noise is not None:
        noise.print()
    print(f"results in {args.out}/ ({seconds:.1f} s); the non-private graph is shown only for comparison")
