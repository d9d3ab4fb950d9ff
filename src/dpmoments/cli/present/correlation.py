"""How a correlation matrix is presented: its files, console table and figure.

Shared by ``dpmoments correlation`` and the multi-site commands (``--analysis correlation``): the
pairs whose correlation stands furthest from 0 against its standard error, each with its interval
and a note on what the interval leaves open.
"""

import numpy as np

from ...estimators.summaries import correlation_lines as console_lines  # noqa: F401 (shared)
from .._noise import Noise, spread
from .covariance import save_covariance

def save_correlation(res, est, names):
    """The correlation, its standard errors and interval ends, and the covariance it comes from."""
    res.save_matrix("correlation", est.correlation_, names)
    res.save_matrix("correlation_se", est.correlation_se_, names)
    res.save_matrix("correlation_lower", est.correlation_interval_[0], names)
    res.save_matrix("correlation_upper", est.correlation_interval_[1], names)
    save_covariance(res, est, names)


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
    options = spread(args, output.n_features, auto=False)
    est = est_mod.PrivateCorrelation(psd_floor=0.0, level=options["level"],
                                     target=options["target"]).fit_release(output)
    noise = Noise(est)

    def save(res):
        save_correlation(res, est, names)
        if draw:
            figures(res, est, names, output)

    info = {"estimator": "PrivateCorrelation", "estimate": "correlation.npy", "statistic": "correlation",
            "standard_errors": "correlation_se.npy", "intervals": ["correlation_lower.npy", "correlation_upper.npy"]}
    return noise.analysis(info), save, "correlation", console_lines(est, names) + noise.lines()
