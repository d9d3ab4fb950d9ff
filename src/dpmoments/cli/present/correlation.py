"""How a correlation matrix is presented: its files, console table and figure.

Shared by ``dpmoments correlation`` and the multi-site commands (``--analysis correlation``): the
pairs whose correlation stands furthest from 0 against its standard error, each with its interval
and a note on what the interval leaves open.
"""

import numpy as np

from .._noise import Noise, interval_text, num, table
from .covariance import save_covariance

#: The console lists at most this many pairs (the files hold them all).
CONSOLE_PAIRS = 10

_NOTE = ("  note: 'noise' = its interval holds 0; 'biased' = clipping may have moved it by more than its interval "
         "says; 'withheld' = a variance within its noise, so no correlation is computed (give that column a public "
         "range or --scale private)")


def save_correlation(res, est, names):
    """The correlation, its standard errors and interval ends, and the covariance it comes from."""
    res.save_matrix("correlation", est.correlation_, names)
    res.save_matrix("correlation_se", est.correlation_se_, names)
    res.save_matrix("correlation_lower", est.correlation_interval_[0], names)
    res.save_matrix("correlation_upper", est.correlation_interval_[1], names)
    save_covariance(res, est, names)


def console_lines(est, names, pairs=CONSOLE_PAIRS):
    """The pairs largest against their standard error, each with its interval and note."""
    r, se, (lo, hi) = est.correlation_, est.correlation_se_, est.correlation_interval_
    d = r.shape[0]
    if d < 2:
        return ["one column: no correlation to show"]
    i, j = np.triu_indices(d, 1)
    strength = np.where(np.isnan(r[i, j]), -1.0, np.abs(r[i, j]) / np.where(se[i, j] > 0, se[i, j], 1.0))
    order = np.argsort(-strength, kind="stable")[:pairs]
    header = ["pair", "correlation", "se", f"{100 * est.level:g}% interval", "note"]
    rows = [[f"{names[i[k]]} x {names[j[k]]}", num(r[i[k], j[k]], 3), num(se[i[k], j[k]], 2),
             interval_text(lo[i[k], j[k]], hi[i[k], j[k]], 3), _note(est, i[k], j[k])] for k in order]
    out = [f"largest correlations against their standard error (all {d * (d - 1) // 2} in correlation.csv):"]
    out += table(header, rows)
    withheld = int(np.triu(est.correlation_withheld_, 1).sum())
    if withheld:
        out.append(f"  {withheld} of {d * (d - 1) // 2} pairs withheld: a column's variance is within its noise")
    if any(row[-1] for row in rows) or withheld:
        out.append(_NOTE)
    return out


def _note(est, i, j):
    if est.correlation_withheld_[i, j]:
        return "withheld"
    lo, hi = est.correlation_interval_[:, i, j]
    notes = ["noise"] if lo <= 0 <= hi else []
    if getattr(est, "correlation_biased_", np.zeros((1, 1), bool)).any() and est.correlation_biased_[i, j]:
        notes.append("biased")
    return ", ".join(notes)


def figures(res, est, names, release, args=None):
    from ... import plots

    lo, hi = est.correlation_interval_
    title = f"private correlation, {release.guarantee}; grey: interval holds 0 or withheld"
    shown = np.where(np.isnan(est.correlation_), 0.0, est.correlation_)
    grey = ((lo <= 0) & (hi >= 0)) | np.isnan(est.correlation_)
    res.save_figure("correlation", plots.plot_matrix(shown, names, title=title, value_name="correlation",
                                                     within_noise=grey))


def across_sites(args, a, output, names, est_mod):
    """The analysis fitted to the multi-site ``output``: ``(analysis dict, save(res), summary line, noise lines)``."""
    draw = not getattr(args, "no_figures", True)
    est = est_mod.PrivateCorrelation(psd_floor=0.0).fit_release(output)
    noise = Noise(est)

    def save(res):
        save_correlation(res, est, names)
        if draw:
            figures(res, est, names, output)

    info = {"estimator": "PrivateCorrelation", "estimate": "correlation.npy", "statistic": "correlation",
            "standard_errors": "correlation_se.npy", "intervals": ["correlation_lower.npy", "correlation_upper.npy"]}
    return noise.analysis(info), save, "correlation", console_lines(est, names) + noise.lines()
