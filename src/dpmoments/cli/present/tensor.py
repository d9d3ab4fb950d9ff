"""How a tensor decomposition (mixture means or topics) is presented: components, weights and their noise.

Shared by ``dpmoments tensor`` and the multi-site commands (``--analysis tensor-mog`` and
``tensor-stm``). A decomposition that failed (whitening by noise, sigma2 above the spectrum,
weights that are not proportions) is withheld.
"""

from ...estimators.component_summaries import tensor_noise
from .._args import CliError
from .._noise import num


def save_tensor(res, est, names):
    """Components and weights; beside them, with draws, their standard errors and intervals."""
    comps, se = est.components_, est.components_se_
    res.save_array("components.npy", comps)
    if res.wants_csv(comps.size):
        res.save_table("components.csv", ["component"] + list(names),
                       [[f"c{j + 1}"] + [repr(float(v)) for v in row] for j, row in enumerate(comps)])
    if se is not None:
        res.save_array("components_se.npy", se)
        if res.wants_csv(se.size):
            res.save_table("components_se.csv", ["component"] + list(names),
                           [[f"c{j + 1}"] + [repr(float(v)) for v in row] for j, row in enumerate(se)])
    wse, wiv = est.weights_se_, est.weights_interval_
    extra = (lambda j: []) if wse is None else (lambda j: [repr(float(wse[j])), repr(float(wiv[0, j])),
                                                           repr(float(wiv[1, j]))])
    res.save_table("weights.csv", ["component", "weight", "eigenvalue"] + ([] if wse is None else
                                                                           ["se", "lower", "upper"]),
                   [[f"c{j + 1}", repr(float(w)), repr(float(lam))] + extra(j)
                    for j, (w, lam) in enumerate(zip(est.weights_, est.eigenvalues_))])


def compose_report(rep, m):
    """The report's privacy block states the composed guarantee, with both releases beside it."""
    p = rep["privacy"]
    g = m.guarantee
    what = "the two Gaussian releases" if m.second.n_public else "the noisy count and the two Gaussian releases"
    p.update(guarantee=str(g), guarantee_detail=g.to_dict(), certified=g.certified,
             composition=("basic" if p["calibration"] == "analytic" else "zCDP") + f" composition of {what}",
             sensitivity={"second": m.second.sensitivity, "third": m.third.sensitivity},
             noise_scale={"second": m.second.noise_scale, "third": m.third.noise_scale})
    if m.model == "stm":
        p["row_norm"] = None
        p["clipping"] = ("none needed: each document is three one-hot words (norm 1 each), so the symmetrised "
                         f"moments have sensitivity {m.second.sensitivity:.3g} under {m.second.neighbours} "
                         "without clipping")
    rep["release"] = {"second": m.second.to_dict(), "third": m.third.to_dict(),
                      "composed": {"guarantee": str(g), "guarantee_detail": g.to_dict()}}


def weights_figure(res, est, m):
    from ... import plots

    res.save_figure("weights", plots.plot_estimates(
        est.weights_, est.weights_interval_, [f"c{j + 1}" for j in range(len(est.weights_))], level=est.level,
        value_name="weight", title=f"mixture weights ({m.guarantee}); signal_to_noise {num(est.snr_, 2)}"))


def grid_figure(res, grid, m, args):
    from ... import plots
    from ...moments.tensor_moments import check_tensor_arguments, planned_guarantees

    per = 1 if m.second.n_public else m.second.n  # add-remove: the sums' sigma over the noisy count
    curves = {"second-moment noise sigma": [], "third-moment noise sigma": []}
    for e in grid:
        plan = planned_guarantees(check_tensor_arguments(e, args.delta, args.neighbours, args.calibration, m.budget,
                                                         args.count_share))
        curves["second-moment noise sigma"].append(plan.second.sigma(m.second.sensitivity) / per)
        curves["third-moment noise sigma"].append(plan.third.sigma(m.third.sensitivity) / per)
    ax = plots.plot_privacy_utility(grid, curves, label="noise sigma per coordinate", chosen=args.epsilon,
                                    title="tensor releases: noise against epsilon (calibration only)")
    res.save_figure("privacy_utility", ax)


def across_sites(args, a, moments, names, est_mod):
    model = a.split("-")[1]
    D = moments.second.n_features
    if not 1 <= args.n_components <= D:
        raise CliError(f"--n-components must be in [1, {D}]; got {args.n_components}")
    est = est_mod.PrivateTensorDecomposition(
        n_components=args.n_components, model=model, row_norm=moments.second.row_norm,
        sigma2=moments.sigma2, vocabulary_size=D if model == "stm" else None, budget=moments.budget,
        rng=args.seed).fit_release(moments)
    labels = names if model == "mog" else [f"w{j}" for j in range(D)]

    def save(res):
        res.save_array("components.npy", est.components_)
        res.save_table("components.csv", ["component"] + list(labels),
                       [[f"c{j + 1}"] + [repr(float(v)) for v in row] for j, row in enumerate(est.components_)])
        res.save_table("weights.csv", ["component", "weight"],
                       [[f"c{j + 1}", repr(float(w))] for j, w in enumerate(est.weights_)])

    noise = tensor_noise(est)
    info = {"estimator": "PrivateTensorDecomposition", "model": model, "n_components": args.n_components,
            "weights": est.weights_.tolist(), "estimate": "components.npy"}
    summary = f"{args.n_components} component(s)" + (" withheld (noise)" if noise.withholds else "")
    return noise.analysis(info), save, summary, noise.lines()
