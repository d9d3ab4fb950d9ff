"""``dpmoments covariance``: a private second-moment / covariance matrix of a data file.

Every entry comes with its noise: the closed-form standard error and
interval of the released entry (``covariance_se``, ``covariance_lower``,
``covariance_upper``). The console prints the variances and the largest
off-diagonal entries against their noise; a matrix whose noise outweighs its
signal is shown with a warning (its entries are estimates, and their
intervals say how much is noise), never withheld.
"""

import numpy as np

from ._noise import Noise, add_uncertainty_arguments, interval_text, num, table
from ._output import ResultsDir
from ._args import (PRIVATE_ALL, add_input_arguments, add_output_arguments, add_privacy_arguments,
                    add_uncentred_argument, default_center)
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

#: The console lists at most this many variances and off-diagonal entries (the files hold them all).
CONSOLE_ROWS = 12
CONSOLE_PAIRS = 5


def add_arguments(parser):
    add_input_arguments(parser)
    add_privacy_arguments(parser, secure=True, private=PRIVATE_ALL, auto_default=True)
    add_uncentred_argument(parser, "release")
    parser.add_argument("--psd-floor", default="0", metavar="FLOOR",
                        help="eigenvalue floor of the PSD projection, or 'none' to keep the raw release (default 0)")
    add_uncertainty_arguments(parser, closed_form="every entry's standard error and interval", auto_draws=False)
    add_output_arguments(parser)


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
    # PrivateCovariance's logic without scikit-learn (whose import would cost more than reading most files)
    from ..estimators.covariance import CovarianceFit

    floor = psd_floor(args.psd_floor)
    default_center(args)
    source, release, fingerprint = second_moment_release(args)
    est = CovarianceFit(psd_floor=floor, level=args.level).fit_release(release)
    names = source.feature_names
    what = statistic(release)
    noise = Noise(est)
    analysis = {"estimator": "PrivateCovariance", "statistic": what, "psd_floor": floor,
                "postprocessing": list(est.release_.postprocessing), "estimate": "covariance.npy",
                "standard_errors": "covariance_se.npy", "intervals": ["covariance_lower.npy", "covariance_upper.npy"],
                **noise.fields()}
    with ResultsDir(args.out, args.force) as res:
        save_covariance(res, est, names)
        if not args.no_figures:
            _figures(res, est, names, release, args)
        res.save_json("privacy_report.json", privacy_report(
            "covariance", release, source=source, fingerprint=fingerprint, analysis=analysis, argv=args.argv,
            extra={"files": res.files + ["privacy_report.json"], **release_choices(release, args)}))
    if not args.quiet:
        print(f"{what} of {rows_text(release)} x {release.n_features} columns of {source.path.name}")
        for line in console_lines(est, names):
            print(line)
        noise.print()
        print(privacy_summary(release))
        print_release_choices(release)
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def save_covariance(res, est, names):
    """The estimate and, beside it, every entry's standard error and interval."""
    res.save_matrix("covariance", est.covariance_, names)
    res.save_matrix("covariance_se", est.covariance_se_, names)
    res.save_matrix("covariance_lower", est.covariance_interval_[0], names)
    res.save_matrix("covariance_upper", est.covariance_interval_[1], names)


def console_lines(est, names, rows=CONSOLE_ROWS, pairs=CONSOLE_PAIRS):
    """The variances, and the off-diagonal entries largest against their noise, each with se and interval.

    A note marks an entry whose interval holds 0 (the noise could have made it) and an estimate the
    positive semi-definite projection moved outside the released entry's interval, so that no
    number is read as signal when the release cannot tell it from noise. The off-diagonal entries
    shown are the largest of d(d-1)/2 against their noise, so they are also marked 'noise' when
    below the level the largest of that many pure-noise entries reaches 5% of the time (at
    d = 200 the top five of pure noise stand 4-5 se from 0, and their intervals exclude 0).
    """
    C, se, (lo, hi) = est.covariance_, est.covariance_se_, est.covariance_interval_
    header = ["column", "estimate", "se", f"{100 * est.level:g}% interval", "note"]
    top = _largest_noise_in_se(est, C.shape[0])

    biased = getattr(est, "covariance_biased_", np.zeros(C.shape, bool))
    nlo, nhi = getattr(est, "covariance_noise_interval_", est.covariance_interval_)  # where PSD projection shows
    clip = getattr(est, "uncertainty_", {}).get("error_budget", {}).get("clipping")
    clipped = set(clip.get("clipped_columns", ())) if isinstance(clip, dict) else set()

    def row(name, i, j, floor=0.0):
        withheld = biased[i, j] or np.isnan(lo[i, j]) or np.isnan(hi[i, j])
        note = "biased" if withheld else _note(C, lo, hi, i, j, floor * se[i, j], nlo, nhi)
        if not withheld and {i, j} & clipped:
            note = ", ".join(filter(None, [note, "clipped"]))
        return [name, num(C[i, j], 4), num(se[i, j]), "withheld" if withheld else interval_text(lo[i, j], hi[i, j]),
                note]

    d = C.shape[0]
    shown = range(min(d, rows))
    variances = [row(names[i], i, i) for i in shown]
    out = ["variances (the diagonal):"] + table(header, variances)
    if d > rows:
        out.append(f"  ... {d - rows} more in covariance.csv / covariance.npy")
    noted = [r for r in variances if r[-1]]
    if d > 1:
        i, j = np.triu_indices(d, 1)
        order = np.argsort(-np.abs(C[i, j]) / np.where(se[i, j] > 0, se[i, j], 1.0))[:pairs]
        pairs_shown = [row(f"{names[i[k]]} x {names[j[k]]}", i[k], j[k], top) for k in order]
        out.append("largest off-diagonal entries against their noise (|estimate| / se; all in covariance.csv):")
        out += table(["pair"] + header[1:], pairs_shown)
        noted += [r for r in pairs_shown if r[-1]]
    if noted:
        out.append("  note: 'noise' = its interval holds 0, or (off-diagonal) it is below what the largest of the "
                   f"{d * (d - 1) // 2} noise entries reaches 5% of the time ({num(top)} se), so the noise alone could "
                   "have made it; 'projected' = the PSD projection moved the estimate outside the released entry's "
                   "interval" + ("; 'clipped' = clipping removed a measurable part of the column's variance: the "
                                 "interval counts it, the estimate does not" if clipped else "")
                   + ("; 'biased' = clipping removed more than can be measured (rows beyond twice the row bound): "
                      "no interval is given" if biased.any() else ""))
    return out


def _largest_noise_in_se(est, d):
    """The largest of the d(d-1)/2 off-diagonal noise entries' magnitudes (95%), in standard errors."""
    from ..estimators.diagnostics import largest_noise
    from ..estimators.uncertainty import noise_law

    law = noise_law(est.release_)
    return largest_noise(law, d * (d - 1) // 2) / law.sd if law.sd > 0 else 0.0


def _note(C, lo, hi, i, j, floor=0.0, nlo=None, nhi=None):
    notes = []
    if lo[i, j] <= 0 <= hi[i, j] or abs(lo[i, j] + hi[i, j]) / 2 < floor:  # the released entry is the midpoint
        notes.append("noise")
    nlo, nhi = (lo, hi) if nlo is None else (nlo, nhi)
    if not nlo[i, j] <= C[i, j] <= nhi[i, j]:  # outside the interval of the released entry's noise
        notes.append("projected")
    return ", ".join(notes)


def _what(release):
    """(what, about): without a centre the matrix is the uncentred second moment, not a covariance."""
    if release.center is None:
        return "second moment", "about the origin (uncentred)"
    return "covariance", "about the private mean" if _private_center(release) else "about the centre"


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
