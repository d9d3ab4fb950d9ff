"""``dpmoments pca``: private principal components (Analyze Gauss) and the spectrum against the noise floor.

The data are touched once, to release the second moment; the
eigendecomposition, the noise floor (from the calibration: n, d, R and the
relation are public) and the privacy-utility curve are post-processing.

Noise: every eigenvalue is printed with its standard error, interval and
signal-to-noise (shown with a warning when below the floor: they are
estimates); the loadings of a component below the noise floor are eigenvectors
of noise and are withheld from the console (``components.csv`` keeps them,
the report names them).
"""

import math

import numpy as np

from ._args import (PRIVATE_ALL, CliError, add_input_arguments, add_output_arguments, add_privacy_arguments,
                    add_uncentred_argument, default_center, privacy_options)
from ._io import DataSource
from ._noise import Noise, add_uncertainty_arguments, draws, interval_text, json_safe, num, table
from ._output import ResultsDir, check_destination
from ._release import noise_sd, second_moment_release
from ._report import privacy_report, privacy_summary, rows_text
from ._choices import print_release_choices, release_choices

HELP = "private principal components and the spectrum against the noise floor"
DESCRIPTION = """\
Release the second-moment matrix (1/n) sum x x^T of the (centred, clipped) rows once with
calibrated symmetric noise E (Dwork, Talwar, Thakurta & Zhang's Analyze Gauss) and take its top
--n-components eigenvectors (post-processing). The spectrum figure draws the released
eigenvalues against the noise floor ~ 2 sigma sqrt(d), the expected spectral norm of E (computed
from the calibration alone, not from the data): eigenvalues below it cannot be told from noise.

By default nothing needs guessing: the rows are centred at a private mean (--center private,
--center-share 0.2 and --location-share 0.05 of the budget) and clipped to a privately drawn
bound (--row-norm auto, --bound-share 0.1), so the components are those of the covariance; the
console and report list every share. A public --center or --row-norm costs nothing; --uncentred
takes the components of the raw second moment (data centred by design, as in the papers). Data
too small for a draw's share (wine's 178 rows at epsilon 1; breast cancer's 569 run from epsilon
0.84) are refused in one line that says from which --epsilon (or share) the run goes through:
give public values or a larger share."""
EXAMPLES = """\
  dpmoments pca data.csv --n-components 2 --epsilon 1 --delta 1e-6 --out pca
  dpmoments pca data.csv --n-components 2 --scale private --epsilon 1 --delta 1e-6 --out pca
  dpmoments pca data.csv --n-components 2 --epsilon 1 --delta 1e-6 --row-norm 5 --center 4.6 --out pca
  dpmoments pca X.npy --n-components 3 --uncentred --epsilon 1 --delta 1e-6 --row-norm 1 --out pca \\
      --epsilon-grid 0.1,0.3,1,3

writes: components.npy/.csv, explained_variance.csv (with se, interval, signal_to_noise),
        components_se.npy/.csv (with --draws), privacy_report.json, spectrum.png,
        privacy_utility.png (with --epsilon-grid)"""


def add_arguments(parser):
    add_input_arguments(parser)
    add_privacy_arguments(parser, secure=True, private=PRIVATE_ALL, auto_default=True)
    add_uncentred_argument(parser, "principal components")
    group = parser.add_argument_group("estimator (post-processing: no extra privacy cost)")
    group.add_argument("--n-components", type=int, metavar="K", help="number of components (required)")
    add_uncertainty_arguments(parser, closed_form="the eigenvalues' standard errors and a bound on the subspace's "
                                                  "angle", auto_draws="each component's stability (its angle to "
                                                                      "the redrawn components)", cost="under 1 s")
    add_output_arguments(parser)


def noise_floor(release):
    """2 sd sqrt(d): the expected spectral norm of the d x d symmetric noise (Wigner semicircle edge)."""
    if release.mechanism == "none" or not release.noise_scale:
        return 0.0
    sd = release.noise_scale * (math.sqrt(2.0) if release.mechanism == "laplace" else 1.0)
    return 2.0 * sd * math.sqrt(release.n_features)


def check_components(k, d):
    if k is None:
        raise CliError("--n-components is required: the number K of principal components")
    if not 1 <= k <= d:
        raise CliError(f"--n-components must be in [1, {d}] (the number of feature columns); got {k}")
    return k


def spectrum(release, k):
    """The released matrix's eigenvalues, largest first (all of them up to d = 2000, else the top few)."""
    S = release.second_moment
    if S.shape[0] <= 2000:
        return np.linalg.eigvalsh(S)[::-1]
    from ..solvers.eigen import top_eigenpairs

    return top_eigenpairs(S, min(S.shape[0], max(2 * k, 20))).eigenvalues


def run(args):
    from ..estimators.pca import PCAFit  # PrivatePCA's logic without scikit-learn (its import costs ~1.2 s)

    check_destination(args.out, args.force)
    d = DataSource(args.data, args.columns).n_features
    default_center(args)
    privacy_options(args, d)  # the bound and epsilon first: the refusal that matters most
    k = check_components(args.n_components, d)
    source, release, fingerprint = second_moment_release(args)
    est = PCAFit(n_components=k, n_draws=draws(args, d, auto=True), level=args.level,
                 rng=args.seed).fit_release(release)
    names = source.feature_names
    floor = noise_floor(release)
    eig = spectrum(release, k)
    analysis = pca_analysis(est, floor, eig)
    with ResultsDir(args.out, args.force) as res:
        save_pca(res, est, names, floor)
        if not args.no_figures:
            figures(res, est, eig, floor, release, args)
        res.save_json("privacy_report.json", privacy_report(
            "pca", release, source=source, fingerprint=fingerprint, analysis=analysis, argv=args.argv,
            extra={"files": res.files + ["privacy_report.json"], **release_choices(release, args)}))
    if not args.quiet:
        print(f"PCA of {rows_text(release)} x {release.n_features} columns of {source.path.name}: "
              f"{k} component(s), {analysis['n_above_noise_floor']} eigenvalue(s) above the noise floor {floor:.3g}")
        print_components(est, names)
        pca_noise(est).print()
        print(privacy_summary(release))
        print_release_choices(release)
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def shown(est):
    """Which components' loadings mean something: above the noise floor, apart from their neighbours' eigenvalues
    and, with draws, stable."""
    from ..estimators.uncertainty import UNSTABLE_DEGREES

    ok = np.array(est.components_above_noise_, dtype=bool) & np.array(est.components_identified_, dtype=bool)
    if est.component_angles_ is not None:
        ok &= est.component_angles_ <= UNSTABLE_DEGREES
    return ok


def pca_noise(est):
    """The noise of a PCA: the loadings of components below the noise floor, or unstable, are withheld."""
    from ..estimators.uncertainty import UNSTABLE_DEGREES

    noise = Noise(est)
    below = [f"pc{j + 1}" for j in np.flatnonzero(~est.components_above_noise_)]
    if below:
        noise.withhold(f"the loadings of {', '.join(below)} (below the noise floor)", "components.csv",
                       "no-eigenvalue-above-noise", "components-below-noise")
    tied = est.components_above_noise_ & ~np.array(est.components_identified_, dtype=bool)
    if tied.any():
        noise.withhold(f"the loadings of {', '.join(f'pc{j + 1}' for j in np.flatnonzero(tied))} (an eigenvalue "
                       "within the noise of a neighbour's)", "components.csv", "components-unidentified")
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
    rows = [[f"pc{j + 1}", num(v, 4), num(est.explained_variance_se_[j]), interval_text(lo[j], hi[j]),
             num(est.component_snr_[j])] + ([] if angles is None else [f"{angles[j]:.0f} deg"])
            for j, v in enumerate(est.explained_variance_)]
    for line in table(header, rows):
        print(line)
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
    from .. import plots

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
