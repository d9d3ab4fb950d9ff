"""``dpmoments covariance``: a private second-moment / covariance matrix of a data file.

Every entry comes with its noise: the closed-form standard error and
interval of the released entry (``covariance_se``, ``covariance_lower``,
``covariance_upper``). The console prints the variances and the largest
off-diagonal entries against their noise; a matrix whose noise outweighs its
signal is shown with a warning (its entries are estimates, and their
intervals say how much is noise), never withheld.
"""

from ._noise import Noise, add_uncertainty_arguments
from ._args import (PRIVATE_ALL, add_input_arguments, add_output_arguments, add_privacy_arguments,
                    add_uncentred_argument, check_uncentred)
from ._choices import release_choices

HELP = "a private covariance matrix (or, with --uncentred, the second moment)"
DESCRIPTION = """\
Release the covariance (1/n) sum (x - m)(x - m)^T of the clipped rows with calibrated noise,
project it to the positive semi-definite cone (free post-processing) and write it with a JSON
privacy report. By default nothing needs guessing: the centre m is a private mean (--center
private, --center-share 0.2 and --location-share 0.05 of the budget) and the row bound is drawn
privately (--row-norm auto, --bound-share 0.1); the second moment gets the rest (0.65), and the
console and report list every share and the composed guarantee. A public --center or --row-norm
costs nothing and is used as given. --uncentred releases the raw second moment (1/n) sum x x^T
instead (one release, no centre). Data too small for a draw's share (wine's 178 rows at epsilon
1; breast cancer's 569 run from epsilon 0.84) are refused in one line that says from which
--epsilon (or share) the run goes through: a private draw needs enough rows for its share; give
public values or a larger share."""
EXAMPLES = """\
  dpmoments covariance data.csv --epsilon 1 --delta 1e-6 --out cov
  dpmoments covariance data.csv --scale private --bound-share 0.2 --epsilon 1 --delta 1e-6 --out cov
  dpmoments covariance data.csv --columns a,b,c --epsilon 1 --delta 1e-6 --row-norm 5 --out cov
  dpmoments covariance big.parquet --center 4.6 --epsilon 0.5 --delta 1e-7 --row-norm 8 --out cov
  dpmoments covariance X.npy --uncentred --mechanism laplace --epsilon 1 --row-norm 1 --out cov --seed 0
  dpmoments covariance X.npy --uncentred --epsilon 1 --delta 1e-6 --row-norm 1 --out cov --epsilon-grid 0.1,1,3

writes: covariance.npy/.csv, covariance_se.npy/.csv, covariance_lower.npy/.csv, covariance_upper.npy/.csv,
        privacy_report.json, covariance.png, privacy_utility.png (with --epsilon-grid)"""


def add_arguments(parser):
    add_input_arguments(parser, cluster=True, several=True)
    add_privacy_arguments(parser, secure=True, private=PRIVATE_ALL, auto_default=True)
    add_uncentred_argument(parser, "release")
    parser.add_argument("--psd-floor", default="0", metavar="FLOOR",
                        help="eigenvalue floor of the PSD projection, or 'none' to keep the raw release (default 0)")
    add_uncertainty_arguments(parser, closed_form="every entry's standard error and interval", auto_draws=False,
                              target=True)
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
    # PrivateCovariance's logic without scikit-learn (whose import would cost more than reading most files)
    from ..estimators.covariance import CovarianceFit
    from ._output import ResultsDir
    from ._release import second_moment_release
    from ._report import privacy_report
    from .present.covariance import figures, save_covariance, statistic

    floor = psd_floor(args.psd_floor)
    check_uncentred(args)
    source, release, fingerprint, request = second_moment_release(args)
    est = CovarianceFit(psd_floor=floor, level=args.level, target=args.intervals_for).fit_release(release)
    names = source.feature_names
    what = statistic(release)
    noise = Noise(est)
    analysis = {"estimator": "PrivateCovariance", "statistic": what, "psd_floor": floor,
                "postprocessing": list(est.release_.postprocessing), "estimate": "covariance.npy",
                "standard_errors": "covariance_se.npy", "intervals": ["covariance_lower.npy", "covariance_upper.npy"],
                **noise.fields()}
    with ResultsDir(args.out, args.force) as res:
        save_covariance(res, est, names)
        res.save_json("privacy_report.json", privacy_report(
            "covariance", release, source=source, fingerprint=fingerprint, analysis=analysis, argv=args.argv,
            extra={"files": res.files + ["privacy_report.json"], **release_choices(release, request.choices)}))
    if not args.quiet:
        print(est.summary(names, source.name))
    if not args.no_figures:  # drawn once the result is published and printed: an interrupted figure leaves it
        with res.added():
            figures(res, est, names, release, request)
    if not args.quiet:
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


