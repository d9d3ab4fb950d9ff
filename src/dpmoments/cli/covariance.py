"""``dpmoments covariance``: a private second-moment / covariance matrix of a data file."""

from ._output import ResultsDir
from ._args import PRIVATE_ALL, CliError, add_input_arguments, add_output_arguments, add_privacy_arguments
from ._choices import print_release_choices, release_choices
from ._release import expected_noise_error, second_moment_release
from ._report import privacy_report, privacy_summary, rows_text

HELP = "a private covariance matrix (or, with --uncentred, the second moment)"
DESCRIPTION = """\
Release the covariance (1/n) sum (x - m)(x - m)^T of the clipped rows with calibrated noise,
project it to the positive semi-definite cone (free post-processing) and write it with a JSON
privacy report. By default nothing needs guessing: the centre m is a private mean (--center
private, --center-share 0.2 and --location-share 0.05 of the budget) and the row bound is drawn
privately (--row-norm auto, --bound-share 0.1); the second moment gets the rest (0.65), and the
console and report list every share and the composed guarantee. A public --center or --row-norm
costs nothing and is used as given. --uncentred releases the raw second moment (1/n) sum x x^T
instead (one release, no centre). Small data sets (a few hundred rows at epsilon 1) may be
refused: a private draw needs enough rows for its share; give public values or a larger share."""
EXAMPLES = """\
  dpmoments covariance data.csv --epsilon 1 --delta 1e-6 --out cov
  dpmoments covariance data.csv --scale private --bound-share 0.2 --epsilon 1 --delta 1e-6 --out cov
  dpmoments covariance data.csv --columns a,b,c --epsilon 1 --delta 1e-6 --row-norm 5 --out cov
  dpmoments covariance big.parquet --center 4.6 --epsilon 0.5 --delta 1e-7 --row-norm 8 --out cov
  dpmoments covariance X.npy --uncentred --mechanism laplace --epsilon 1 --row-norm 1 --out cov --seed 0
  dpmoments covariance X.npy --uncentred --epsilon 1 --delta 1e-6 --row-norm 1 --out cov --epsilon-grid 0.1,1,3

writes: covariance.npy/.csv, privacy_report.json, covariance.png/.svg,
        privacy_utility.png/.svg (with --epsilon-grid)"""


def add_arguments(parser):
    add_input_arguments(parser)
    add_privacy_arguments(parser, secure=True, private=PRIVATE_ALL, auto_default=True)
    parser.add_argument("--uncentred", action="store_true",
                        help="release the uncentred second moment (1/n) sum x x^T instead of the covariance (no "
                             "centre: right for data centred by design, as in the papers)")
    parser.add_argument("--psd-floor", default="0", metavar="FLOOR",
                        help="eigenvalue floor of the PSD projection, or 'none' to keep the raw release (default 0)")
    add_output_arguments(parser)


def _default_center(args):
    """The covariance centres privately unless a public --center or --uncentred says otherwise."""
    if args.uncentred and args.center is not None:
        raise CliError("give --center or --uncentred, not both: --uncentred releases the second moment about the "
                       "origin")
    if not args.uncentred and args.center is None:
        args.center = "private"


def statistic(release):
    """What the released matrix is, in words (the report's ``analysis.statistic``)."""
    if release.center is None:
        return "uncentred second moment"
    return "covariance about a private mean" if _private_center(release) else "covariance about a public centre"


def _private_center(release):
    return any(p.label == "mean" for p in release.parts)


def psd_floor(text):
    from ._args import CliError

    if text.lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise CliError(f"--psd-floor must be a number >= 0 or 'none'; got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise CliError(f"--psd-floor must be a finite number >= 0 or 'none'; got {text}")
    return value


def run(args):
    from ..estimators import PrivateCovariance

    floor = psd_floor(args.psd_floor)
    _default_center(args)
    source, release, fingerprint = second_moment_release(args)
    est = PrivateCovariance(epsilon=args.epsilon, delta=args.delta, row_norm=1.0,
                            psd_floor=floor).fit_release(release)
    names = source.feature_names
    what = statistic(release)
    analysis = {"estimator": "PrivateCovariance", "statistic": what, "psd_floor": floor,
                "postprocessing": list(est.release_.postprocessing), "estimate": "covariance.npy"}
    with ResultsDir(args.out, args.force) as res:
        res.save_matrix("covariance", est.covariance_, names)
        if not args.no_figures:
            _figures(res, est.covariance_, names, release, args)
        res.save_json("privacy_report.json", privacy_report(
            "covariance", release, source=source, fingerprint=fingerprint, analysis=analysis, argv=args.argv,
            extra={"files": res.files + ["privacy_report.json"], **release_choices(release, args)}))
    if not args.quiet:
        print(f"{what} of {rows_text(release)} x {release.n_features} columns of {source.path.name}")
        print(privacy_summary(release))
        print_release_choices(release)
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def _figures(res, cov, names, release, args):
    from .. import plots

    # Without a centre the matrix is the uncentred second moment, not a covariance: say which.
    what, about = (("covariance", "about the private mean" if _private_center(release) else "about the centre")
                   if release.center is not None else ("second moment", "about the origin (uncentred)"))
    res.save_figure("covariance", plots.plot_matrix(cov, names, title=f"private {what} {about}, {release.guarantee}",
                                                    value_name=what))
    grid = args.epsilon_grid_values
    if grid:
        err = expected_noise_error(release, grid, args.delta)
        ax = plots.plot_privacy_utility(grid, err, label="expected relative Frobenius error", chosen=args.epsilon,
                                        title="noise error against epsilon (from the calibration; no data access)")
        res.save_figure("privacy_utility", ax)
