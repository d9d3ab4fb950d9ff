"""How principal components are presented: the spectrum against the noise floor, the loadings that mean something.

Shared by ``dpmoments pca`` and the multi-site commands (``--analysis pca``). The loadings of a
component below the noise floor, tied with a neighbour or unstable across redrawn releases are
withheld from the console (``components.csv`` keeps them).
"""

import math

import numpy as np

from .._args import CliError
from ...estimators.component_summaries import component_lines, pca_noise, spectrum_against_floor
from .._noise import json_safe, spread
from .._release import noise_sd


def fit_pca(release, n_components, args):
    """PCA of ``release`` as ``dpmoments pca`` and the multi-site commands fit it (one set of options)."""
    from ...estimators.pca import PCAFit  # PrivatePCA's logic without scikit-learn (its import costs ~1.2 s)

    return PCAFit(n_components=n_components, **spread(args, release.n_features, auto=True)).fit_release(release)


def pca_analysis(est, floor, eig):
    return {"estimator": "PrivatePCA", "n_components": int(est.n_components_),
            "explained_variance": est.explained_variance_.tolist(),
            "explained_variance_ratio": est.explained_variance_ratio_.tolist(),
            "explained_variance_se": json_safe(est.explained_variance_se_),
            "explained_variance_interval": json_safe(est.explained_variance_interval_),
            "component_signal_to_noise": json_safe(est.component_snr_),
            "noise_floor": floor,
            "noise_floor_rule": "2 * sigma * sqrt(d): the expected spectral norm of the symmetric noise, from the "
                                "calibration alone (sigma = the per-entry noise std), plus the noise's diagonal mean; "
                                "with column scales, times the largest scale squared (the data's units)",
            "n_above_noise_floor": int(np.sum(eig > floor)), "eigensolver": est.eigensolver_,
            "postprocessing": list(est.release_.postprocessing), "estimate": "components.npy",
            **pca_noise(est).fields()}


def save_pca(res, est, names, floor):
    comps = est.components_
    res.save_array("components.npy", comps)
    if res.wants_csv(comps.size):
        res.save_table("components.csv", ["component"] + list(names),
                       [[f"pc{j + 1}"] + [repr(float(v)) for v in row] for j, row in enumerate(comps)])
    lo, hi = est.explained_variance_interval_
    angles = est.component_angles_
    res.save_table("explained_variance.csv",
                   ["component", "eigenvalue", "se", "lower", "upper", "signal_to_noise", "ratio", "above_noise_floor",
                    "angle_degrees"],
                   [[f"pc{j + 1}", repr(float(v)), repr(float(est.explained_variance_se_[j])), repr(float(lo[j])),
                     repr(float(hi[j])), repr(float(est.component_snr_[j])), repr(float(r)),
                     bool(est.components_above_noise_[j]), "" if angles is None else repr(float(angles[j]))]
                    for j, (v, r) in enumerate(zip(est.explained_variance_, est.explained_variance_ratio_))])


def figures(res, est, eig, floor, release, request):
    from ... import plots

    title = f"released spectrum ({release.guarantee}) against the noise floor, {100 * est.level:g}% intervals"
    shift = est.uncertainty_["noise"]["diagonal_mean"]  # the intervals are for the exact eigenvalues
    res.save_figure("spectrum", plots.plot_spectrum(eig, floor, intervals=est.explained_variance_interval_ + shift,
                                                    level=est.level, title=title))
    grid = request.epsilon_grid
    if grid:
        top = float(max(eig[0], 1e-300))
        err = [2.0 * noise_sd(release, e, request.delta) * math.sqrt(release.n_features) / top for e in grid]
        ax = plots.plot_privacy_utility(
            grid, err, label="noise spectral norm / top eigenvalue", chosen=request.epsilon,
            title="eigenvalue error bound (Weyl) against epsilon (calibration only)")
        res.save_figure("privacy_utility", ax)


def across_sites(args, a, output, names, est_mod):
    """The analysis fitted to the multi-site ``output``: ``(analysis dict, save(res), summary line, noise lines)``."""
    draw = not getattr(args, "no_figures", True)
    if not 1 <= args.n_components <= output.n_features:
        raise CliError(f"--n-components must be in [1, {output.n_features}]; got {args.n_components}")
    # as ``dpmoments pca``: draws carrying every part of the error give each component's stability
    est = fit_pca(output, args.n_components, args)
    eig, floor, _, note = spectrum_against_floor(est)
    info = pca_analysis(est, floor, eig)

    def save(res):
        save_pca(res, est, names, floor)
        if draw:
            from ... import plots

            res.save_figure("spectrum", plots.plot_spectrum(eig, floor, title=f"spectrum ({output.guarantee}) "
                                                            "against the noise floor"))

    return (info, save, f"{info['n_above_noise_floor']} eigenvalue(s) above the noise floor {floor:.3g}{note}",
            component_lines(est, names) + pca_noise(est).lines())
