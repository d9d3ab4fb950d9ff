"""How principal components are presented: the spectrum against the noise floor, the loadings that mean something.

Shared by ``dpmoments pca`` and the multi-site commands (``--analysis pca``). The loadings of a
component below the noise floor, tied with a neighbour or unstable across redrawn releases are
withheld from the console (``components.csv`` keeps them).
"""

import math

import numpy as np

from .._args import CliError
from .._noise import Noise, interval_text, json_safe, num, table
from .._release import noise_sd


def noise_floor(release):
    """2 sd sqrt(d): the expected spectral norm of the d x d symmetric noise (Wigner semicircle edge)."""
    if release.mechanism == "none" or not release.noise_scale:
        return 0.0
    sd = release.noise_scale * (math.sqrt(2.0) if release.mechanism == "laplace" else 1.0)
    return 2.0 * sd * math.sqrt(release.n_features)


def spectrum(release, k):
    """The released matrix's eigenvalues, largest first (all of them up to d = 2000, else the top few)."""
    S = release.second_moment
    if S.shape[0] <= 2000:
        return np.linalg.eigvalsh(S)[::-1]
    from ...solvers.eigen import top_eigenpairs

    return top_eigenpairs(S, min(S.shape[0], max(2 * k, 20))).eigenvalues


def shown(est):
    """Which components' loadings mean something: above the noise floor, apart from their neighbours' eigenvalues
    and, with draws, stable."""
    from ...estimators.uncertainty import UNSTABLE_DEGREES

    ok = np.array(est.components_above_noise_, dtype=bool) & np.array(est.components_identified_, dtype=bool)
    if est.component_angles_ is not None:
        ok &= est.component_angles_ <= UNSTABLE_DEGREES
    return ok


def pca_noise(est):
    """The noise of a PCA: the loadings of components below the noise floor, or unstable, are withheld."""
    from ...estimators.uncertainty import UNSTABLE_DEGREES

    noise = Noise(est)
    below = [f"pc{j + 1}" for j in np.flatnonzero(~est.components_above_noise_)]
    if below:
        noise.withhold(f"the loadings of {', '.join(below)} (below the noise floor)", "components.csv",
                       "no-eigenvalue-above-noise", "components-below-noise")
    tied = est.components_above_noise_ & ~np.array(est.components_identified_, dtype=bool)
    if tied.any():
        noise.withhold(f"the loadings of {', '.join(f'pc{j + 1}' for j in np.flatnonzero(tied))} (an eigenvalue "
                       "within the noise, or the centre's, clipping's and sampling's pull, of a neighbour's)",
                       "components.csv", "components-unidentified")
    unstable = [f"pc{j + 1}" for j in np.flatnonzero(est.components_above_noise_ & ~tied & ~shown(est))]
    if unstable:
        noise.withhold(f"the loadings of {', '.join(unstable)} (more than {UNSTABLE_DEGREES:g} degrees from their "
                       "redrawn counterparts)", "components.csv", "components-unstable")
    return noise


def pca_analysis(est, floor, eig):
    return {"estimator": "PrivatePCA", "n_components": int(est.n_components_),
            "explained_variance": est.explained_variance_.tolist(),
            "explained_variance_ratio": est.explained_variance_ratio_.tolist(),
            "explained_variance_se": json_safe(est.explained_variance_se_),
            "explained_variance_interval": json_safe(est.explained_variance_interval_),
            "component_signal_to_noise": json_safe(est.component_snr_),
            "noise_floor": floor,
            "noise_floor_rule": "2 * sigma * sqrt(d): the expected spectral norm of the symmetric noise, from the "
                                "calibration alone (sigma = the per-entry noise std)",
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


def print_components(est, names, top=3):
    """Each eigenvalue with its noise; the loadings only of components above the noise floor."""
    lo, hi = est.explained_variance_interval_
    level = f"{100 * est.level:g}% interval"
    angles = est.component_angles_
    header = ["component", "eigenvalue", "se", level, "signal_to_noise"] + ([] if angles is None else ["angle"])
    withheld = np.isnan(lo) | np.isnan(hi)  # the error budget could not bound the clipping (rows beyond 2R)
    rows = [[f"pc{j + 1}", num(v, 4), num(est.explained_variance_se_[j]),
             "withheld" if withheld[j] else interval_text(lo[j], hi[j]),
             num(est.component_snr_[j])] + ([] if angles is None else [f"{angles[j]:.0f} deg"])
            for j, v in enumerate(est.explained_variance_)]
    for line in table(header, rows):
        print(line)
    if withheld.any():
        print("  withheld: clipping removed more than can be measured (rows beyond twice the row bound), so no "
              "eigenvalue interval is complete")
    pushed = [f"pc{j + 1}" for j in np.flatnonzero(hi < est.explained_variance_)]
    if pushed:  # a basic bootstrap interval corrects the noise's bias; an interval beside its estimate puzzles
        print(f"  {', '.join(pushed)}: the interval lies below the eigenvalue: noise pushes the top eigenvalues of a "
              "noisy matrix up, and the interval, for the exact eigenvalue, takes that bias out")
    for j, row in enumerate(est.components_):
        if shown(est)[j]:
            lead = np.argsort(-np.abs(row))[:top]
            print(f"  pc{j + 1} loads on " + ", ".join(f"{names[i]} ({row[i]:+.2f})" for i in lead)
                  + ("" if angles is None else f"; {angles[j]:.0f} degrees from its redrawn counterparts"))
    bound = est.subspace_angle_bound_
    print(f"subspace: the top-{est.n_components_} subspace is within {bound:.0f} degrees of the exact one "
          "(Davis-Kahan bound from the released eigengap)" if bound < 90 else
          f"subspace: no bound on the top-{est.n_components_} subspace's angle (the released eigengap is within "
          "the noise)")
    if est.subspace_angle_ is not None:
        print(f"stability: the median largest angle between the fitted and redrawn subspaces is "
              f"{est.subspace_angle_:.0f} degrees ('angle' above: each component's, across redrawn releases)")


def figures(res, est, eig, floor, release, args):
    from ... import plots

    title = f"released spectrum ({release.guarantee}) against the noise floor, {100 * est.level:g}% intervals"
    shift = est.uncertainty_["noise"]["diagonal_mean"]  # the intervals are for the exact eigenvalues
    res.save_figure("spectrum", plots.plot_spectrum(eig, floor, intervals=est.explained_variance_interval_ + shift,
                                                    level=est.level, title=title))
    grid = getattr(args, "epsilon_grid_values", None)
    if grid:
        top = float(max(eig[0], 1e-300))
        err = [2.0 * noise_sd(release, e, args.delta) * math.sqrt(release.n_features) / top for e in grid]
        ax = plots.plot_privacy_utility(
            grid, err, label="noise spectral norm / top eigenvalue", chosen=args.epsilon,
            title="eigenvalue error bound (Weyl) against epsilon (calibration only)")
        res.save_figure("privacy_utility", ax)


def across_sites(args, a, output, names, est_mod):
    """The analysis fitted to the multi-site ``output``: ``(analysis dict, save(res), summary line, noise lines)``."""
    draw = not getattr(args, "no_figures", True)
    if not 1 <= args.n_components <= output.n_features:
        raise CliError(f"--n-components must be in [1, {output.n_features}]; got {args.n_components}")
    est = est_mod.PrivatePCA(n_components=args.n_components).fit_release(output)
    floor, eig = noise_floor(output), spectrum(output, args.n_components)
    info = pca_analysis(est, floor, eig)

    def save(res):
        save_pca(res, est, names, floor)
        if draw:
            from ... import plots

            res.save_figure("spectrum", plots.plot_spectrum(eig, floor, title=f"spectrum ({output.guarantee}) "
                                                            "against the noise floor"))

    return (info, save, f"{info['n_above_noise_floor']} eigenvalue(s) above the noise floor {floor:.3g}",
            pca_noise(est).lines())
