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

from ._args import (PRIVATE_ALL, CliError, add_input_arguments, add_output_arguments, add_privacy_arguments,
                    add_uncentred_argument, check_uncentred)
from ._noise import add_uncertainty_arguments
from ._choices import release_choices

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
    add_input_arguments(parser, cluster=True, several=True)
    add_privacy_arguments(parser, secure=True, private=PRIVATE_ALL, auto_default=True)
    add_uncentred_argument(parser, "principal components")
    group = parser.add_argument_group("estimator (post-processing: no extra privacy cost)")
    group.add_argument("--n-components", type=int, metavar="K", help="number of components (required)")
    add_uncertainty_arguments(parser, closed_form="the eigenvalues' standard errors and a bound on the subspace's "
                                                  "angle", auto_draws="each component's stability (its angle to "
                                                                      "the redrawn components)", cost="under 1 s",
                              target=True)
    add_output_arguments(parser)


def check_components(k, d):
    if k is None:
        raise CliError("--n-components is required: the number K of principal components")
    if not 1 <= k <= d:
        raise CliError(f"--n-components must be in [1, {d}] (the number of feature columns); got {k}")
    return k


def run(args):
    from ._output import check_destination, ResultsDir
    from ._release import second_moment_release
    from ._report import privacy_report
    from .present.pca import figures, fit_pca, pca_analysis, save_pca, spectrum_against_floor

    check_destination(args.out, args.force)
    check_uncentred(args)
    # The bound and epsilon are checked first (the refusal that matters most), then the components, both
    # once the input is open (here, or by a cluster's worker) and before any pass over it.
    source, release, fingerprint, request = second_moment_release(
        args, check=lambda opened: check_components(args.n_components, opened.n_features))
    d = source.n_features
    k = check_components(args.n_components, d)
    est = fit_pca(release, k, args)
    names = source.feature_names
    eig, floor, _, _ = spectrum_against_floor(est)  # in the data's units, as the table (no new decomposition)
    analysis = pca_analysis(est, floor, eig)
    with ResultsDir(args.out, args.force) as res:
        save_pca(res, est, names, floor)
        res.save_json("privacy_report.json", privacy_report(
            "pca", release, source=source, fingerprint=fingerprint, analysis=analysis, argv=args.argv,
            extra={"files": res.files + ["privacy_report.json"], **release_choices(release, request.choices)}))
    if not args.quiet:
        print(est.summary(names, source.name))
    if not args.no_figures:  # drawn once the result is published and printed: an interrupted figure leaves it
        with res.added():
            figures(res, est, eig, floor, release, request)
    if not args.quiet:
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


