"""How robust regression coefficients are presented: each with its standard error and interval.

Shared by ``dpmoments regress`` and the multi-site commands (``--analysis regress``).
"""

import numpy as np

from .._noise import Noise, interval_text, json_safe, num, spread, table


def coefficients(est, names):
    """(labels, estimates, standard errors, (2, m) intervals), the intercept last when fitted."""
    labels, values, se, interval = list(names), list(est.coef_), list(est.coef_se_), est.coef_interval_
    if est.intercept_fitted_:
        labels.append("(intercept)")
        values.append(est.intercept_)
        se.append(est.intercept_se_)
        interval = np.column_stack([interval, est.intercept_interval_])
    return labels, np.array(values, dtype=float), np.array(se, dtype=float), interval


def biased(est, kind="biased"):
    """Which printed coefficients (the intercept last) had their interval withheld: ``kind="biased"``, along floored
    directions of B; ``"unsampled"``, along floored directions of the sampling release H."""
    coef, intercept = getattr(est, f"coef_{kind}_"), getattr(est, f"intercept_{kind}_")
    return np.r_[coef, [intercept] if est.intercept_fitted_ else []].astype(bool)


#: The line of a coefficient along floored directions of the sampling release (its interval is the noise-only one).
UNSAMPLED = "noise only: not sampling or the iterations not run (K_h floored)"


def _line_note(b_floored, h_floored, zero, left, knot=""):
    """What a coefficient's line says beside its interval: B's floor first (the estimate itself is biased)."""
    if b_floored:
        return "biased (B floored)"
    return "; ".join(x for x in ("contains 0" if zero else "", UNSAMPLED if h_floored else left, knot) if x)


def knot_note(est):
    """Each printed line's note where the released LAD score found the w_max knot moved the fit (``_irls_knot``)."""
    return "not LAD's fit (w_max knot)" if est.uncertainty_.get("w_max_knot", {}).get("found") else ""


def coefficient_fields(est, names):
    labels, values, se, interval = coefficients(est, names)
    unsampled = [k for k, u in zip(labels, biased(est, "unsampled")) if u]
    fields = {"coefficients_noise_only": unsampled} if unsampled else {}  # first where present, as written before
    fields.update(coefficients=dict(zip(labels, values.tolist())), coefficients_se=dict(zip(labels, se.tolist())),
                  coefficients_interval={k: iv for k, iv in zip(labels, interval.T.tolist())})
    return json_safe(fields)


def save_coefficients(res, est, names):
    labels, values, se, (lo, hi) = coefficients(est, names)
    res.save_table("coefficients.csv", ["feature", "coefficient", "se", "lower", "upper"],
                   [[k, repr(float(v)), repr(float(s)), repr(float(a)), repr(float(b))]
                    for k, v, s, a, b in zip(labels, values, se, lo, hi)])
    res.save_array("coefficients.npy", values)
    res.save_array("coefficients_se.npy", se)


def left_out(est):
    """What every printed interval leaves out that a fit with a sampling release counts, for its own line: sampling
    (where the intervals are for the population) and the iterations not run, or ``""``. A run across sites without
    sampling rounds (nothing bounds the IRLS map's derivative from its releases) counts the noise of every iteration
    only (one with them says what it covers: :func:`covers_note`); the clipping bias is left out everywhere, as
    ``not_covered`` says."""
    missing = est.uncertainty_.get("not_covered", "")
    parts = (["sampling"] if getattr(est, "target", None) == "population" and "sampling variability" in missing
             else []) + (["the iterations not run"] if "iterations not run" in missing else [])
    return "" if not parts else "noise only: not " + " or ".join(parts)


def covers_note(est):
    """Across sites with sampling rounds: the line's ``"covers: noise + sampling; not clipping bias"`` (a run without
    them says what it leaves out, :func:`left_out`), else ``""``."""
    sampled = "sampling variability of the rows" in est.uncertainty_.get("covers", "")
    across = getattr(est, "privacy_report_", {}).get("fitted_by") == "fit_release"
    return "covers: noise + sampling; not clipping bias" if sampled and across else ""


def coefficient_lines(est, names):
    labels, values, se, (lo, hi) = coefficients(est, names)
    zero = (lo <= 0) & (hi >= 0)
    marks, unsampled = biased(est), biased(est, "unsampled")
    left, knot = left_out(est) or covers_note(est), knot_note(est)
    rows = [[k, num(v, 4), num(s), "withheld" if m else interval_text(a, b), _line_note(m, u, z, left, knot)]
            for k, v, s, a, b, z, m, u in zip(labels, values, se, lo, hi, zero, marks, unsampled)]
    out = table(["coefficient", "estimate", "se", f"{100 * est.level:g}% interval", ""], rows)
    if left.startswith("covers"):
        out += [] if not (~unsampled & ~marks).any() else [  # said only where some line says it
            f"'{left}': these intervals count the added noise of every iteration (damped by the IRLS map's "
            "contraction), the iterations not run and the rows' sampling (the LAD sandwich, from the sites' sampling "
            "releases); not the bias of clipping rows and responses at their bounds"]
    elif left:
        out.append(f"'{left}': these intervals count the added noise of every iteration, passed on undamped; no "
                   "sampling release estimates the IRLS map's derivative (none was made, or it is within its noise), "
                   "so sampling variability and how far the iterations not run would move the coefficients are not "
                   "in them")
    if zero.any():
        out.append(f"{int(zero.sum())} of {zero.size} intervals contain 0: those coefficients cannot be told from 0 "
                   "at this noise")
    if marks.any():
        out.append(f"{int(marks.sum())} of {marks.size} intervals withheld: those coefficients lie where the noise of "
                   "the weighted second moment hid the signal (its eigenvalues were raised to the floor), so their "
                   "shrinkage is unknown")
    shown = unsampled & ~marks
    if shown.any():
        out.append(f"'{UNSAMPLED}' ({int(shown.sum())} of {shown.size}): those coefficients lie along directions where "
                   "the sampling release K_h is at or below its noise floor, so the rows' sampling is not measured "
                   "there and their intervals count the iterations' noise only, passed on undamped; more rows or a "
                   "larger --sampling-share lift K_h above its noise")
    return out


def coefficient_figure(est, names):
    from ... import plots

    labels, values, _, interval = coefficients(est, names)
    return plots.plot_estimates(values, interval, labels, level=est.level, value_name="coefficient",
                                title=f"IRLS coefficients ({est.privacy_}); signal_to_noise {num(est.snr_, 2)}")


def grid_figure(res, grid, scales, args):
    from ... import plots

    curves = {"cross-moment noise scale": [s["A"] for s in scales],
              "second-moment noise scale": [s["B"] for s in scales]}
    ax = plots.plot_privacy_utility(grid, curves, label="per-iteration noise scale", chosen=args.epsilon,
                                    title="IRLS noise against epsilon (calibration only; no data access)")
    res.save_figure("privacy_utility", ax)


def across_sites(args, a, fit, names, est_mod):
    # fit_release reads only the uncertainty options; the run's budget, bounds and iterations are in ``fit``
    est = est_mod.PrivateIRLS(epsilon=None, delta=None, row_norm=None, response_bound=None, n_iter=fit.n_iter,
                              w_max=None, **spread(args, len(fit.coef), auto=False)).fit_release(fit)
    noise = Noise(est)

    def save(res):
        save_coefficients(res, est, names)
        if not getattr(args, "no_figures", True):
            res.save_figure("coefficients", coefficient_figure(est, names))

    info = noise.analysis({"estimator": "PrivateIRLS (across sites)", "n_iter": fit.n_iter,
                           "intervals_leave_out": left_out(est) or None,
                           "psd_floor_clipped": list(fit.n_psd_clipped), "estimate": "coefficients.csv",
                           "standard_errors": "coefficients_se.npy", **coefficient_fields(est, names)})
    shown = ", ".join(f"{c:.3g}" for c in est.coef_) + (f"; intercept {est.intercept_:.3g}"
                                                         if est.intercept_fitted_ else "")
    return (info, save, "coefficients " + shown,
            coefficient_lines(est, names) + noise.lines())
