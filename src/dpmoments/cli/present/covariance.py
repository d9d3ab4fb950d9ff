"""How a covariance (or uncentred second moment) is presented: its files, console table and figures.

Shared by ``dpmoments covariance`` and the multi-site commands (``--analysis covariance``):
every entry with its standard error and interval, and a note on each one that the noise alone
could have made.
"""

import numpy as np

from .._noise import Noise, interval_text, num, table
from .._release import expected_noise_error


#: The console lists at most this many variances and off-diagonal entries (the files hold them all).
CONSOLE_ROWS = 12


CONSOLE_PAIRS = 5


def statistic(release):
    """What the released matrix is, in words (the report's ``analysis.statistic``)."""
    if release.center is None:
        return "uncentred second moment"
    return "covariance about a private mean" if _private_center(release) else "covariance about a public centre"


def _private_center(release):
    return any(p.label == "mean" for p in release.parts)


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
    from ...estimators.diagnostics import largest_noise
    from ...estimators.uncertainty import noise_law

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


def figures(res, est, names, release, args):
    from ... import plots

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


def across_sites(args, a, output, names, est_mod):
    """The analysis fitted to the multi-site ``output``: ``(analysis dict, save(res), summary line, noise lines)``."""
    draw = not getattr(args, "no_figures", True)
    est = est_mod.PrivateCovariance(psd_floor=0.0).fit_release(output)
    what, noise = " ".join(_what(output)), Noise(est)

    def save(res):
        save_covariance(res, est, names)
        if draw:
            from ... import plots

            lo, hi = est.covariance_interval_
            res.save_figure("covariance", plots.plot_matrix(
                est.covariance_, names, title=f"{what} ({output.guarantee} against the aggregator); "
                f"signal_to_noise {num(est.snr_, 2)}, grey: within the noise", within_noise=(lo <= 0) & (hi >= 0)))

    info = {"estimator": "PrivateCovariance", "estimate": "covariance.npy", "statistic": what,
            "standard_errors": "covariance_se.npy", "intervals": ["covariance_lower.npy", "covariance_upper.npy"]}
    return noise.analysis(info), save, what, console_lines(est, names) + noise.lines()
