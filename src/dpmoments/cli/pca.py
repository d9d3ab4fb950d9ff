"""``dpmoments pca``: private principal components (Analyze Gauss) and the spectrum against the noise floor.

The data are touched once, to release the second moment; the
eigendecomposition, the noise floor (from the calibration: n, d, R and the
relation are public) and the privacy-utility curve are post-processing.
"""

import math

import numpy as np

from ._args import (PRIVATE_ALL, CliError, add_input_arguments, add_output_arguments, add_privacy_arguments,
                    privacy_options)
from ._io import DataSource
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
Without --center this is PCA of the raw second moment (data assumed centred, as the papers)."""
EXAMPLES = """\
  dpmoments pca data.csv --n-components 2 --epsilon 1 --delta 1e-6 --row-norm 5 --out pca
  dpmoments pca data.csv --n-components 2 --epsilon 1 --delta 1e-6 --row-norm auto --center private --out pca
  dpmoments pca X.npy --n-components 3 --center 0 --epsilon 1 --delta 1e-6 --row-norm 1 --out pca \\
      --epsilon-grid 0.1,0.3,1,3

writes: components.npy/.csv, explained_variance.csv, privacy_report.json, spectrum.png/.svg,
        privacy_utility.png/.svg (with --epsilon-grid)"""


def add_arguments(parser):
    add_input_arguments(parser)
    add_privacy_arguments(parser, secure=True, private=PRIVATE_ALL)
    group = parser.add_argument_group("estimator (post-processing: no extra privacy cost)")
    group.add_argument("--n-components", type=int, metavar="K", help="number of components (required)")
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
    from ..estimators import PrivatePCA

    check_destination(args.out, args.force)
    d = DataSource(args.data, args.columns).n_features
    privacy_options(args, d)  # the bound and epsilon first: the refusal that matters most
    k = check_components(args.n_components, d)
    source, release, fingerprint = second_moment_release(args)
    est = PrivatePCA(n_components=k, epsilon=args.epsilon, delta=args.delta, row_norm=1.0).fit_release(release)
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
        print(privacy_summary(release))
        print_release_choices(release)
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def pca_analysis(est, floor, eig):
    return {"estimator": "PrivatePCA", "n_components": int(est.n_components_),
            "explained_variance": est.explained_variance_.tolist(),
            "explained_variance_ratio": est.explained_variance_ratio_.tolist(),
            "noise_floor": floor,
            "noise_floor_rule": "2 * sigma * sqrt(d): the expected spectral norm of the symmetric noise, from the "
                                "calibration alone (sigma = the per-entry noise std)",
            "n_above_noise_floor": int(np.sum(eig > floor)), "eigensolver": est.eigensolver_,
            "postprocessing": list(est.release_.postprocessing), "estimate": "components.npy"}


def save_pca(res, est, names, floor):
    comps = est.components_
    np.save(res.path("components.npy"), comps)
    if res.wants_csv(comps.size):
        res.save_table("components.csv", ["component"] + list(names),
                       [[f"pc{j + 1}"] + [repr(float(v)) for v in row] for j, row in enumerate(comps)])
    res.save_table("explained_variance.csv", ["component", "eigenvalue", "ratio", "above_noise_floor"],
                   [[f"pc{j + 1}", repr(float(v)), repr(float(r)), bool(v > floor)]
                    for j, (v, r) in enumerate(zip(est.explained_variance_, est.explained_variance_ratio_))])


def print_components(est, names, top=3):
    for j, row in enumerate(est.components_):
        lead = np.argsort(-np.abs(row))[:top]
        print(f"  pc{j + 1}: eigenvalue {est.explained_variance_[j]:.4g}; loads on "
              + ", ".join(f"{names[i]} ({row[i]:+.2f})" for i in lead))


def figures(res, est, eig, floor, release, args):
    from .. import plots

    title = f"released spectrum ({release.guarantee}) against the noise floor"
    res.save_figure("spectrum", plots.plot_spectrum(eig, floor, title=title))
    grid = getattr(args, "epsilon_grid_values", None)
    if grid:
        top = float(max(eig[0], 1e-300))
        err = [2.0 * noise_sd(release, e, args.delta) * math.sqrt(release.n_features) / top for e in grid]
        ax = plots.plot_privacy_utility(
            grid, err, label="noise spectral norm / top eigenvalue", chosen=args.epsilon,
            title="eigenvalue error bound (Weyl) against epsilon (calibration only)")
        res.save_figure("privacy_utility", ax)
