"""How a covariance (or uncentred second moment) is presented: its files, console table and figures.

Shared by ``dpmoments covariance`` and the multi-site commands (``--analysis covariance``):
every entry with its standard error and interval, and a note on each one that the noise alone
could have made.
"""

from ...estimators.summaries import console_lines, statistic, statistic_words  # noqa: F401 (console_lines: shared)
from .._noise import Noise, num, spread
from .._release import expected_noise_error


def save_covariance(res, est, names):
    """The estimate and, beside it, every entry's standard error and interval."""
    res.save_matrix("covariance", est.covariance_, names)
    res.save_matrix("covariance_se", est.covariance_se_, names)
    res.save_matrix("covariance_lower", est.covariance_interval_[0], names)
    res.save_matrix("covariance_upper", est.covariance_interval_[1], names)


def figures(res, est, names, release, request):
    from ... import plots

    what, about = statistic_words(release)
    lo, hi = est.covariance_interval_
    title = (f"private {what} {about}, {release.guarantee}; signal_to_noise {num(est.snr_, 2)}, grey: within the "
             "noise")
    res.save_figure("covariance", plots.plot_matrix(est.covariance_, names, title=title, value_name=what,
                                                    within_noise=(lo <= 0) & (hi >= 0)))
    grid = request.epsilon_grid
    if grid:
        err = expected_noise_error(release, grid, request.delta)
        ax = plots.plot_privacy_utility(grid, err, label="expected relative Frobenius error", chosen=request.epsilon,
                                        title="noise error against epsilon (from the calibration; no data access)")
        res.save_figure("privacy_utility", ax)


def across_sites(args, a, output, names, est_mod):
    """The analysis fitted to the multi-site ``output``: ``(analysis dict, save(res), summary line, noise lines)``."""
    draw = not getattr(args, "no_figures", True)
    options = spread(args, output.n_features, auto=False)
    est = est_mod.PrivateCovariance(psd_floor=0.0, level=options["level"], target=options["target"]).fit_release(output)
    what, noise = " ".join(statistic_words(output)), Noise(est)

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
