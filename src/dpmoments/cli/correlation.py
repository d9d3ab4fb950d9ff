"""``dpmoments correlation``: a private correlation matrix of a data file, an interval for every pair.

The correlation is post-processing of the private covariance (the same release as ``dpmoments
covariance``, at no further cost): every pair comes with its standard error and interval
(``correlation_se``, ``correlation_lower``, ``correlation_upper``), on Fisher's z scale, counting
the added noise and, by default, the sampling of the rows.
"""

from ._args import (PRIVATE_ALL, add_input_arguments, add_output_arguments, add_privacy_arguments,
                    check_uncentred)
from ._choices import release_choices
from ._noise import Noise, add_uncertainty_arguments

HELP = "a private correlation matrix, with an interval for every pair"
DESCRIPTION = """\
Release the covariance of the clipped rows about a private mean (exactly as 'dpmoments
covariance'), then divide by its standard deviations: the correlation is free post-processing.
Each pair's interval (on Fisher's z scale, inside [-1, 1]) counts the added noise and the sampling
of the rows. A column whose released variance is within its noise has its correlations withheld
(nan): columns in very different units drown each other under one row bound, so give them
--scale private (a private scale per column) or public ranges."""
EXAMPLES = """\
  dpmoments correlation data.csv --epsilon 1 --delta 1e-6 --out cor
  dpmoments correlation data.csv --scale private --epsilon 1 --delta 1e-6 --out cor

writes: correlation.npy/.csv, correlation_se, correlation_lower, correlation_upper (.npy/.csv), the covariance
        and its intervals (covariance*.npy/.csv), privacy_report.json, correlation.png"""


def add_arguments(parser):
    add_input_arguments(parser, several=True)
    add_privacy_arguments(parser, secure=True, private=PRIVATE_ALL, auto_default=True)
    add_uncertainty_arguments(parser, closed_form="every pair's standard error and interval", auto_draws=False)
    add_output_arguments(parser)
    parser.set_defaults(uncentred=False)  # a correlation is about the mean: no --uncentred here


def run(args):
    # PrivateCorrelation's logic without scikit-learn (whose import would cost more than reading most files)
    from ..estimators.correlation import CorrelationFit
    from ._output import ResultsDir
    from ._release import second_moment_release
    from ._report import privacy_report
    from .present.correlation import figures, save_correlation

    check_uncentred(args)
    source, release, fingerprint, request = second_moment_release(args)
    est = CorrelationFit(psd_floor=0.0, level=args.level).fit_release(release)
    names = source.feature_names
    noise = Noise(est)
    analysis = {"estimator": "PrivateCorrelation", "statistic": "correlation", "estimate": "correlation.npy",
                "standard_errors": "correlation_se.npy", "intervals": ["correlation_lower.npy", "correlation_upper.npy"],
                "withheld_pairs": int(est.correlation_withheld_.sum() - est.correlation_withheld_.trace()) // 2,
                **noise.fields()}
    with ResultsDir(args.out, args.force) as res:
        save_correlation(res, est, names)
        res.save_json("privacy_report.json", privacy_report(
            "correlation", release, source=source, fingerprint=fingerprint, analysis=analysis, argv=args.argv,
            extra={"files": res.files + ["privacy_report.json"], **release_choices(release, request.choices)}))
    if not args.quiet:
        print(est.summary(names, source.name))
    if not args.no_figures:  # drawn once the result is published and printed: an interrupted figure leaves it
        with res.added():
            figures(res, est, names, release)
    if not args.quiet:
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0
