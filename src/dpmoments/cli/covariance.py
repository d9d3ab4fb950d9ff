"""``dpmoments covariance``: a private second-moment / covariance matrix of a data file.

Every entry comes with its noise: the closed-form standard error and
interval of the released entry (``covariance_se``, ``covariance_lower``,
``covariance_upper``). The console prints the variances and the largest
off-diagonal entries against their noise; a matrix whose noise outweighs its
signal is shown with a warning (its entries are estimates, and their
intervals say how much is noise), never withheld.
"""

import numpy as np

from ._args import add_input_arguments, add_output_arguments, add_privacy_arguments
from ._noise import Noise, add_uncertainty_arguments, interval_text, num, table
from ._output import ResultsDir
from ._release import expected_noise_error, second_moment_release
from ._report import privacy_report, privacy_summary, rows_text

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

writes: covariance.npy/.csv, covariance_se.npy/.csv, covariance_lower.npy/.csv, covariance_upper.npy/.csv,
        privacy_report.json, covariance.png/.svg, privacy_utility.png/.svg (with --epsilon-grid)"""

#: The console lists at most this many variances and off-diagonal entries (the files hold them all).
CONSOLE_ROWS = 12
CONSOLE_PAIRS = 5


def add_arguments(parser):
    add_input_arguments(parser)
    add_privacy_arguments(parser, secure=True)
    parser.add_argument("--psd-floor", default="0", metavar="FLOOR",
                        help="eigenvalue floor of the PSD projection, or 'none' to keep the raw release (default 0)")
    add_uncertainty_arguments(parser, closed_form="every entry's standard error and interval", auto_draws=False)
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
                            psd_floor=floor, level=args.level).fit_release(release)
    names = source.feature_names
    noise = Noise(est)
    analysis = {"estimator": "PrivateCovariance", "psd_floor": floor, "postprocessing": list(est.release_.postprocessing),
                "estimate": "covariance.npy", "standard_errors": "covariance_se.npy",
                "intervals": ["covariance_lower.npy", "covariance_upper.npy"], **noise.fields()}
    with ResultsDir(args.out, args.force) as res:
        save_covariance(res, est, names)
        if not args.no_figures:
            _figures(res, est, names, release, args)
        res.save_json("privacy_report.json", privacy_report(
            "covariance", release, source=source, fingerprint=fingerprint, analysis=analysis, argv=args.argv,
            extra={"files": res.files + ["privacy_report.json"]}))
    if not args.quiet:
        print(f"{_what(release)[0]} of {rows_text(release)} x {release.n_features} columns of {source.path.name}")
        for line in console_lines(est, names):
            print(line)
        noise.print()
        print(privacy_summary(release))
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def save_covariance(res, est, names):
    """The estimate and, beside it, every entry's standard error and interval."""
    res.save_matrix("covariance", est.covariance_, names)
    res.save_matrix("covariance_se", est.covariance_se_, names)
    res.save_matrix("covariance_lower", est.covariance_interval_[0], names)
    res.save_matrix("covariance_upper", est.covariance_interval_[1], names)


def console_lines(est, names, rows=CONSOLE_ROWS, pairs=CONSOLE_PAIRS):
    """The variances, and the off-diagonal entries largest against their noise, each with se and interval."""
    C, se, (lo, hi) = est.covariance_, est.covariance_se_, est.covariance_interval_
    level = f"{100 * est.level:g}% interval"
    d = C.shape[0]
    shown = range(min(d, rows))
    out = ["variances (the diagonal):"] + table(
        ["column", "estimate", "se", level],
        [[names[i], num(C[i, i], 4), num(se[i, i]), interval_text(lo[i, i], hi[i, i])] for i in shown])
    if d > rows:
        out.append(f"  ... {d - rows} more in covariance.csv / covariance.npy")
    if d > 1:
        i, j = np.triu_indices(d, 1)
        order = np.argsort(-np.abs(C[i, j]) / np.where(se[i, j] > 0, se[i, j], 1.0))[:pairs]
        out.append("largest off-diagonal entries against their noise (|estimate| / se; all in covariance.csv):")
        out += table(["pair", "estimate", "se", level],
                     [[f"{names[i[k]]} x {names[j[k]]}", num(C[i[k], j[k]], 4), num(se[i[k], j[k]]),
                       interval_text(lo[i[k], j[k]], hi[i[k], j[k]])] for k in order])
    return out


def _what(release):
    """(what, about): without a centre the matrix is the uncentred second moment, not a covariance."""
    return (("covariance", "about the centre") if release.center is not None
            else ("second moment", "about the origin (uncentred)"))


def _figures(res, est, names, release, args):
    from .. import plots

    what, about = _what(release)
    lo, hi = est.covariance_interval_
    title = (f"private {what} {about}, {release.guarantee}; signal_to_noise {num(est.snr_, 2)}, grey: within the "
             "noise")
    res.save_figure("covariance", plots.plot_matrix(est.covariance_, names, title=title, value_name=what,
                                                    within_noise=(lo <= 0) & (hi >= 0)))
    grid = args.epsilon_grid_values
    if grid:
        err = expected_noise_error(release, grid, args.delta)
        ax = plots.plot_privacy_utility(grid, err, label="expected relative Frobenius error", chosen=args.epsilon,
                                        title="noise error against epsilon (from the calibration; no data access)")
        res.save_figure("privacy_utility", ax)
