"""``dpmoments covariance``: a private second-moment / covariance matrix of a data file."""

from ._output import ResultsDir
from ._release import expected_noise_error, second_moment_release
from ._report import privacy_report, privacy_summary, rows_text
from ._args import add_input_arguments, add_output_arguments, add_privacy_arguments

HELP = "a private covariance (second-moment) matrix"
DESCRIPTION = """\
Release the second-moment matrix (1/n) sum x x^T of the (centred, clipped) rows once with
calibrated noise, project it to the positive semi-definite cone (free post-processing) and write
it with a JSON privacy report. With a public --center it is a covariance about that centre."""
EXAMPLES = """\
  dpmoments covariance data.csv --columns a,b,c --epsilon 1 --delta 1e-6 --row-norm 5 --out cov
  dpmoments covariance big.parquet --center 4.6 --epsilon 0.5 --delta 1e-7 --row-norm 8 --out cov
  dpmoments covariance X.npy --mechanism laplace --epsilon 1 --row-norm 1 --out cov --seed 0
  dpmoments covariance X.npy --epsilon 1 --delta 1e-6 --row-norm 1 --out cov --epsilon-grid 0.1,0.3,1,3

writes: covariance.npy/.csv, privacy_report.json, covariance.png/.svg,
        privacy_utility.png/.svg (with --epsilon-grid)"""


def add_arguments(parser):
    add_input_arguments(parser)
    add_privacy_arguments(parser, secure=True)
    parser.add_argument("--psd-floor", default="0", metavar="FLOOR",
                        help="eigenvalue floor of the PSD projection, or 'none' to keep the raw release (default 0)")
    add_output_arguments(parser)


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
    source, release, fingerprint = second_moment_release(args)
    est = PrivateCovariance(epsilon=args.epsilon, delta=args.delta, row_norm=args.row_norm,
                            psd_floor=floor).fit_release(release)
    names = source.feature_names
    analysis = {"estimator": "PrivateCovariance", "psd_floor": floor, "postprocessing": list(est.release_.postprocessing),
                "estimate": "covariance.npy"}
    with ResultsDir(args.out, args.force) as res:
        res.save_matrix("covariance", est.covariance_, names)
        if not args.no_figures:
            _figures(res, est.covariance_, names, release, args)
        res.save_json("privacy_report.json", privacy_report(
            "covariance", release, source=source, fingerprint=fingerprint, analysis=analysis, argv=args.argv,
            extra={"files": res.files + ["privacy_report.json"]}))
    if not args.quiet:
        print(f"covariance of {rows_text(release)} x {release.n_features} columns of {source.path.name}")
        print(privacy_summary(release))
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def _figures(res, cov, names, release, args):
    from .. import plots

    # Without a centre the matrix is the uncentred second moment, not a covariance: say which.
    what, about = (("covariance", "about the centre") if release.center is not None
                   else ("second moment", "about the origin (uncentred)"))
    res.save_figure("covariance", plots.plot_matrix(cov, names, title=f"private {what} {about}, {release.guarantee}",
                                                    value_name=what))
    grid = args.epsilon_grid_values
    if grid:
        err = expected_noise_error(release, grid, args.delta)
        ax = plots.plot_privacy_utility(grid, err, label="expected relative Frobenius error", chosen=args.epsilon,
                                        title="noise error against epsilon (from the calibration; no data access)")
        res.save_figure("privacy_utility", ax)
