r"""The spread the noise induces in the second-moment analyses: covariance, PCA, precision.

Each function reads a raw release (before the estimator's own
post-processing) and a fitted estimator, and returns the attributes to set:
standard errors and intervals, ``snr_``, ``uncertainty_`` (JSON-able) and
``diagnostics_``. See :mod:`dpmoments.estimators.uncertainty` for the noise
law and the bootstrap, docs/uncertainty.md for what each number means.
"""

import math

import numpy as np

from ..solvers.eigen import top_eigenpairs
from .error_draws import every_part_draws, hull_interval
from .graph import partial_correlations
from .structure_bounds import hold_zero, with_dropped_draws
from .noise_entries import EntrySpread, LazyEntries
from .diagnostics import Diagnostics, check_centre, check_matrix, in_data_units, largest_noise, variance_noise_level
from ..mechanisms.laws import WISHART
from .uncertainty import (NoiseLaw, basic_interval, bootstrap_generator, bootstrap_se, check_draws, check_level,
                          fewest_draws)
from .uncertainty import count_relative_sd, noise_law, redraw
from .uncertainty import UNSTABLE_DEGREES, z_value

__all__ = ["covariance_spread", "pca_spread", "precision_spread", "output_perturbation_spread"]

_MATRIX_SNR = "signal / noise Frobenius norm of the released matrix (matrix_snr)"
_GRAPH_SNR = ("largest |off-diagonal| of the released matrix / the level the largest off-diagonal noise stays "
              "below 95% of the time (largest_noise)")
_NOT_COVERED = ("sampling variability of the rows, clipping bias, and (with center='private') the noise of the "
                "private mean")


def _centre(release, law):
    """The released matrix with the noise's mean removed: unbiased for the exact (clipped) moment."""
    out = np.array(release.second_moment, dtype=float)  # minus diagonal_mean I, without an identity matrix
    out[np.diag_indices(release.n_features)] -= law.diagonal_mean
    return out


def _summary(law, level, method, n_draws, snr, definition, covers):
    return {"method": method, "level": level, "n_draws": n_draws, "noise": law.to_dict(),
            "signal_to_noise": snr, "signal_to_noise_definition": definition, "covers": covers,
            "not_covered": _NOT_COVERED}


# -- covariance -------------------------------------------------------------------------------------------------
def covariance_spread(release, level, owner):
    """Closed-form standard errors and intervals of every released entry.

    They are two numbers off the diagonal and two on it, about the released entries: kept as those
    (:class:`~.noise_entries.LazyEntries`), not as d x d arrays (800 MB each at d = 10 000).
    """
    level, law = check_level(level), noise_law(release)
    diag, spread = Diagnostics(owner), EntrySpread(release, level)
    se, interval = LazyEntries(spread, "se"), LazyEntries(spread, "interval")
    snr = check_matrix(_centre(release, law), law, diag, scale=release.column_scale)
    check_centre(release, diag)
    return {
        "covariance_se_": se, "covariance_interval_": interval, "snr_": snr,
        "diagnostics_": diag.as_list(),
        "uncertainty_": _summary(law, level, "closed-form", 0, snr, _MATRIX_SNR, "the noise of every released entry: "
                                 "exact for Gaussian and Laplace noise and the Wishart diagonal, normal "
                                 "approximation for Wishart off-diagonal entries; intervals are centred on the "
                                 "released entries (before the PSD projection, which biases them); under "
                                 "add-remove the noisy count's relative error is added to first order (normal "
                                 "intervals)"),
    }


# -- PCA --------------------------------------------------------------------------------------------------------
def _eigenvalue_se(law, W):
    r"""First-order sd of :math:`w^\top E w`: :math:`\sqrt{s_d^2\sum w_i^4 + 2 s^2((\sum w_i^2)^2 - \sum w_i^4)}`.

    Per column of ``W``: a unit eigenvector ``v``, or ``s * v`` for a release
    of rows standardised by column scales ``s`` (its noise is ``diag(s) E diag(s)``).
    """
    fourth, square = np.sum(W**4, axis=0), np.sum(W**2, axis=0)
    return np.sqrt(law.diagonal_sd**2 * fourth + 2.0 * law.sd**2 * (square**2 - fourth))


def _scales(release):
    """The release's column scales (ones when its rows were not standardised)."""
    return np.ones(release.n_features) if release.column_scale is None else np.asarray(release.column_scale)


def _angle(u, v):
    return math.degrees(math.acos(min(1.0, abs(float(u @ v)))))


def _pca_draws(release, k, method, n_draws, rng):
    gen, units = bootstrap_generator(rng), np.outer(_scales(release), _scales(release))
    out = [top_eigenpairs(redraw(release, gen).second_moment * units, k, method=method) for _ in range(n_draws)]
    return np.array([e.eigenvalues for e in out]), [e.eigenvectors for e in out]


def pca_spread(release, est, spectrum, n_draws, level, rng, owner):
    """Eigenvalue errors, which components stand above the noise, and how stable the components are."""
    from scipy import linalg  # here: a covariance command never loads scipy.linalg (0.4 CPU-s)

    level, n_draws, law = check_level(level), check_draws(n_draws), noise_law(release)
    d, k, diag = release.n_features, est.n_components_, Diagnostics(owner)
    check_centre(release, diag)
    # With column scales s the estimate is of diag(s) M diag(s), whose noise diag(s) E diag(s) has spectral norm
    # at most max(s)^2 ||E|| (the floor of the whole spectrum); along component v it moves the eigenvalue, to
    # first order, by w' E w, w = s * v, at most ||E|| ||w||^2 (without scales both are ||E||, Weyl's bound).
    s, V = _scales(release), est.components_.T
    top, along = float(np.max(s)) ** 2, np.sum((s[:, None] * V) ** 2, axis=0)
    shift, edge = law.diagonal_mean * top, law.spectral_norm(d) * top
    lam, edges = est.explained_variance_ - law.diagonal_mean * along, law.spectral_norm(d) * along
    snr = np.divide(lam, edges, out=np.full(k, math.inf), where=edges > 0)
    above = lam > edges
    se = np.sqrt(_eigenvalue_se(law, s[:, None] * V) ** 2 + (lam * count_relative_sd(release)) ** 2)  # add-remove
    interval = np.stack([lam - z_value(level) * se, lam + z_value(level) * se])
    gap = spectrum[k - 1] - spectrum[k] if k < d else math.inf
    bound = 0.0 if edge == 0 or k == d else (90.0 if gap <= 0 else math.degrees(math.asin(min(1.0, 2 * edge / gap))))
    identified = _separated(spectrum, k, law.sd * top)
    attrs = {"components_above_noise_": above, "components_identified_": identified, "component_snr_": snr,
             "eigenvalue_noise_floor_": shift + edge,
             "n_eigenvalues_above_noise_": int(np.count_nonzero(spectrum - shift > edge)),
             "subspace_angle_bound_": bound, "component_angles_": None, "subspace_angle_": None}
    method = "closed-form (first order)"
    if n_draws >= fewest_draws(level):  # fewer cannot reach the level's tails: the closed form stands (warned)
        lam_star, V_star = _pca_draws(release, k, est.eigensolver_, n_draws, rng)
        se = bootstrap_se(lam_star)
        interval = basic_interval(est.explained_variance_, lam_star, level) - (est.explained_variance_ - lam)
        angles = np.array([[_angle(V[:, j], W[:, j]) for j in range(k)] for W in V_star])
        sub = [math.degrees(float(np.max(linalg.subspace_angles(V, W)))) for W in V_star]
        attrs.update(component_angles_=np.median(angles, axis=0), subspace_angle_=float(np.median(sub)))
        method = "parametric bootstrap"
    _pca_checks(above, diag, k, edge, attrs["component_angles_"], identified)
    attrs.update({
        "explained_variance_se_": se, "explained_variance_interval_": interval,
        "snr_": float(snr[0]), "diagnostics_": diag.as_list(),
        "uncertainty_": {**_summary(law, level, method, n_draws, float(snr[0]),
                                    "(top eigenvalue - noise mean) / the noise's spectral norm "
                                    "(NoiseLaw.spectral_norm); per component in component_snr_",
                                    "the noise of the released matrix; eigenvalue intervals are for the exact "
                                    "matrix's eigenvalues"),
                         "eigenvalue_noise_floor": float(shift + edge), "components_above_noise": above.tolist(),
                         "components_identified": identified.tolist(),
                         "component_snr": snr.tolist(), "explained_variance_se": se.tolist(),
                         "explained_variance_interval": interval.tolist(),
                         "n_eigenvalues_above_noise": attrs["n_eigenvalues_above_noise_"],
                         "subspace_angle_bound_degrees": bound,
                         "component_angles_degrees": None if attrs["component_angles_"] is None
                         else attrs["component_angles_"].tolist(),
                         "subspace_angle_degrees": attrs["subspace_angle_"]},
    })
    return attrs




# Two equal exact eigenvalues come out of first-order noise E (off-diagonal sd s) a gap sqrt((a - c)^2 + 4 b^2) apart,
# a, c ~ N(0, 2 s^2), b ~ N(0, s^2) in a generic basis: 2 s times a Rayleigh variable, below 2 s sqrt(2 ln 20) = 4.9 s
# 95% of the time (more equal eigenvalues crowd closer). A narrower released gap does not tell the two directions apart.
TIED_GAP = 2.0 * math.sqrt(2.0 * math.log(20.0))


def _separated(spectrum, k, sd):
    """Which of the top ``k`` released eigenvalues stand further than noise would put equal ones from both neighbours."""
    lam = np.asarray(spectrum, dtype=float)
    gaps = np.full(len(lam) + 1, np.inf)
    gaps[1:-1] = lam[:-1] - lam[1:]
    return np.minimum(gaps[:k], gaps[1:k + 1]) > TIED_GAP * sd


def _pca_checks(above, diag, k, edge, angles=None, identified=None):
    if not above.any():
        diag.flag("no-eigenvalue-above-noise", f"none of the {k} leading eigenvalues is above the noise's "
                                               f"spectral norm {edge:.3g}: the components are noise.")
    elif not above.all():
        first = int(np.argmin(above)) + 1
        which = (f"component {k} has an eigenvalue below the noise's spectral norm {edge:.3g}: it is noise"
                 if first == k else f"components {first} to {k} have eigenvalues below the noise's spectral norm "
                                    f"{edge:.3g}: they are noise")
        diag.flag("components-below-noise", which + ".")
    unstable = [] if angles is None else [j + 1 for j in np.flatnonzero(above & (angles > UNSTABLE_DEGREES))]
    if unstable:
        diag.flag("components-unstable", f"component(s) {', '.join(map(str, unstable))} lie more than "
                                         f"{UNSTABLE_DEGREES:g} degrees from their redrawn counterparts (median over "
                                         "the draws): more of each is noise than signal (or their eigenvalues are "
                                         "too close to tell them apart).")
    tied = [] if identified is None else [j + 1 for j in np.flatnonzero(above & ~identified)]
    if tied:
        diag.flag("components-unidentified", f"component(s) {', '.join(map(str, tied))} have an eigenvalue within "
                                             "the noise of a neighbour's (a gap pure noise would put between equal "
                                             "eigenvalues): their directions are noise, only the subspace they span "
                                             "may mean something.")


# -- precision --------------------------------------------------------------------------------------------------
def off_diagonal_level(release):
    """What pure noise stays below 95% of the time in the largest off-diagonal entry (:func:`largest_noise`)."""
    d = release.n_features
    return largest_noise(noise_law(release), d * (d - 1) // 2)


def off_diagonal_snr(release):
    """Largest released off-diagonal ``|S_ij|`` over :func:`off_diagonal_level`: below 1 nothing stands out; NaN
    (printed ``n/a``, ``null`` in the report) with one column, which has no off-diagonal entry."""
    S = release.second_moment
    d = S.shape[0]
    if d < 2:
        return math.nan
    level = off_diagonal_level(release)
    top = float(np.max(np.abs(S[~np.eye(d, dtype=bool)])))
    return math.inf if level == 0 else top / level


def precision_spread(release, est, refit, n_draws, level, rng, owner, graph, parts=None):
    """Edge-inclusion frequencies (graphical lasso) or precision standard errors (ridge), and the checks.

    ``refit(release) -> precision`` reruns the estimator's post-processing
    (projection and solve at the chosen penalty) on one draw. ``parts``
    (:func:`~dpmoments.estimators.error_draws.error_parts`): the draws carry
    every part of the error (error_draws.py), not the noise alone.
    """
    level, n_draws, law = check_level(level), check_draws(n_draws), noise_law(release)
    diag = Diagnostics(owner)
    snr = _precision_checks(release, law, diag, graph)
    attrs = {"edge_frequency_": None, "stable_edges_": None, "precision_se_": None, "precision_interval_": None,
             "partial_correlation_": None, "partial_correlation_interval_": None}
    extra = {}
    covers = "closed-form checks only (n_draws=0)"
    if n_draws:
        noisy, extra = _drawn_spread(release, est, refit, n_draws, level, rng, graph, parts, law, attrs)
        covers = ("the noise of the released matrix, redrawn and refitted at the chosen penalty (the penalty "
                  "choice itself is held fixed)")
        if parts is not None:
            covers = _every_part_scope(parts, noisy, extra)
    attrs.update({"snr_": snr, "diagnostics_": diag.as_list(),
                  "uncertainty_": {**_summary(law, level, "parametric bootstrap" if n_draws else "closed-form",
                                              n_draws, snr, _GRAPH_SNR if graph else _MATRIX_SNR, covers),
                                   **extra}})
    return attrs


def _precision_checks(release, law, diag, graph):
    """The closed-form checks of the released matrix (flagged in ``diag``), and its signal-to-noise ratio:
    of the off-diagonal entries for a graph, of the whole matrix otherwise."""
    # A rescaled release (standardize_release) records the largest noise scale over its entries, an upper
    # bound: its variances were checked before the scaling, and the matrix check would overstate the noise.
    rescaled = any(step.startswith("scaled-to-correlation") for step in release.postprocessing)
    matrix = math.nan if rescaled else check_matrix(_centre(release, law), law, diag, scale=release.column_scale)
    check_centre(release, diag)
    edges = off_diagonal_snr(release)  # ridge too: its edges (thresholded partial correlations) come from the same
    if edges < 1.0:                    # entries, and of pure noise they were presented as a graph
        quoted = in_data_units(off_diagonal_level(release), release.column_scale, pairs=True)
        diag.flag("no-edge-above-noise", f"no off-diagonal entry of the released matrix exceeds its level {quoted}, "
                                         "which its noise alone reaches 5% of the time: the graph cannot be told "
                                         "from noise.")
    return edges if graph else matrix


def _drawn_spread(release, est, refit, n_draws, level, rng, graph, parts, law, attrs):
    """The draws' spread into ``attrs`` (edge frequencies and stable edges, or the precision's standard errors
    and intervals; the partial correlations' intervals): ``(columns whose variance is noise, summary extra)``."""
    gen = bootstrap_generator(rng)
    sets = ([np.array([refit(redraw(release, gen)) for _ in range(n_draws)])] if parts is None
            else every_part_draws(release, parts, refit, n_draws, gen))
    attrs.update(_partial_correlation_spread(est.precision_, sets, level, parts, graph))
    # a column whose released variance is below its noise level is noise at this budget (variance-below-noise):
    # its entries' draws are beyond first order (on a Gaussian table in mixed units, all 4 such ridge entries
    # whose interval excluded 0 missed), so their intervals hold 0 (their sign is not known: structure_bounds.py)
    # and their edges are not stable
    noisy = np.diag(_centre(release, law)) < variance_noise_level(law, release.n_features)
    touched = noisy[:, None] | noisy[None, :]
    extra = {}
    if graph:
        extra = _stable_edges(est.precision_, sets, parts, touched, attrs)
    else:
        attrs["precision_se_"] = np.max([bootstrap_se(draws) for draws in sets], axis=0)
        attrs["precision_interval_"] = hold_zero(hull_interval(est.precision_, sets, level), touched)
        if parts is not None and parts.unseen:
            attrs["precision_interval_"] = np.full_like(attrs["precision_interval_"], np.nan)
    hold_zero(attrs["partial_correlation_interval_"], touched & ~np.eye(len(noisy), dtype=bool))
    return noisy, extra


def _stable_edges(precision, sets, parts, touched, attrs):
    """Edge frequencies and the stable edges into ``attrs``; the edge counts for the summary.

    An edge is stable where 90% of the draws of every set keep it; none is where clipping's loss is unseen."""
    freq = np.min([np.mean(np.abs(draws) > 1e-8, axis=0) for draws in sets], axis=0)
    np.fill_diagonal(freq, 1.0)
    attrs["edge_frequency_"] = freq
    chosen = np.abs(np.triu(precision, 1)) > 1e-8
    stable = chosen & (freq >= 0.9) & (parts is None or not parts.unseen) & ~touched
    attrs["stable_edges_"] = stable | stable.T
    return {"n_edges": int(chosen.sum()), "n_edges_stable_90": int(np.sum(stable)),
            "median_edge_frequency": float(np.median(freq[chosen])) if chosen.any() else None}


def _every_part_scope(parts, noisy, extra):
    """What draws carrying every part of the error cover, and what not (into ``extra``): the summary's ``covers``."""
    counted, left = parts.in_words()
    what = "population" if parts.target == "population" else "full-data"
    scope = f"{what} value of the same analysis at the chosen penalty: {counted}"
    not_covered = "; ".join([*left, "the penalty's choice"])
    covers = (f"the {what} value of the same analysis at the chosen penalty (held fixed): draws carry {counted}"
              + (" -- withheld: rows beyond the clipping-excess release's outer bound lost more than it sees"
                 if parts.unseen else ""))
    extra.update(error_draws=parts.summary(), scope=scope, not_covered=not_covered, draws_count=counted)
    extra["noise_columns"] = {"columns": np.flatnonzero(noisy).tolist(), "why": (
        "released variance below its noise level (variance-below-noise): their entries' intervals hold 0 (their "
        "sign is not known) and their edges are not stable")}
    return covers


def _partial_correlation_spread(precision, sets, level, parts, graph):
    """Basic intervals of the partial correlations (the hull over the sets of draws; the graphical lasso's with the
    percentile interval of a set whose draws drop the edge, structure_bounds.py); withheld (NaN) where the clipping
    loss is not all seen."""
    estimate = partial_correlations(precision)
    drawn = [partial_correlations(draws) for draws in sets]
    interval = hull_interval(estimate, drawn, level)
    if graph:
        interval = with_dropped_draws(interval, drawn, level)
    interval = np.clip(interval, -1.0, 1.0)
    if parts is not None and parts.unseen:
        interval[:] = np.nan
    return {"partial_correlation_": estimate, "partial_correlation_interval_": interval}


def output_perturbation_spread(precision, scale, level, owner):
    """Closed-form spread of Wang et al.'s output perturbation: ``W_d(d+1, scale I)`` added to the precision."""
    d = precision.shape[0]
    law, diag = NoiseLaw(WISHART, float(scale), d + 1), Diagnostics(owner)
    se = np.full((d, d), law.sd)
    np.fill_diagonal(se, law.diagonal_sd)
    snr = check_matrix(precision - law.diagonal_mean * np.eye(d), law, diag, what="the perturbed precision",
                       variances=False)
    return {"edge_frequency_": None, "stable_edges_": None, "precision_se_": se, "precision_interval_": None, "snr_": snr,
            "partial_correlation_": None, "partial_correlation_interval_": None,
            "diagnostics_": diag.as_list(),
            "uncertainty_": {**_summary(law, check_level(level), "closed-form", 0, snr, "signal / noise "
                                        "Frobenius norm of the perturbed precision (matrix_snr)",
                                        "the Wishart noise added to the exact precision (its mean "
                                        "(d+1) scale I is not removed from precision_)")}}
