"""The summaries of the decompositions: a PCA's eigenpairs and a tensor decomposition's means or topics.

As :mod:`.summaries` (the matrices' tables): each component with its noise, the components whose
loadings mean nothing withheld, the noise rule's lines (:class:`.summary.Noise`), the privacy line
and the private choices; ``est.summary()`` returns them and the command line prints the same lines.
"""

import numpy as np

from ..mechanisms.laws import NONE
from ..privacy.relations import describe_relation
from .summary import (Noise, Summary, choices_lines, feature_labels, interval_text, num, of_data, randomness_text,
                      release_lines, rows_text, table)

__all__ = ["pca_summary", "component_lines", "pca_noise", "noise_floor", "spectrum_against_floor", "shown",
           "tensor_summary", "tensor_lines", "tensor_noise"]


def noise_floor(release):
    """What no signal eigenvalue can hide in: the noise's diagonal mean plus about its spectral norm.

    ``2 sd sqrt(d)`` for symmetric i.i.d. noise (the semicircle edge); for Wishart noise its mean
    ``df c`` plus the Marchenko-Pastur edge: the floor ``PrivatePCA`` reports as ``eigenvalue_noise_floor_``.
    """
    law = release.law
    if law is NONE or not release.noise_scale:
        return 0.0
    scale, df = release.noise_scale, release.noise_df
    return law.diagonal_mean(scale, df) + law.spectral_norm(scale, df, release.n_features)


def spectrum_against_floor(est):
    """``(spectrum, floor, above, note)``: the fitted PCA's spectrum in the data's units against its own floor
    (``eigenvalue_noise_floor_``), the count above it and what the floor is, for the title and the report.

    Without column scales the floor is :func:`noise_floor`'s and the spectrum the released matrix's. With them (ranges, private scales)
    those two are of the standardised matrix, which the table does not show: on a 0/1 column beside a population
    in millions the title once counted 1 eigenvalue "above the noise floor 0.135" over a table whose components were
    all 1e7 below the noise (3.7e8). The floor is then the largest scale's; each component is judged along its own
    direction (``components_above_noise_``), so one may stand above its noise and still be below this floor.
    """
    floor = float(est.eigenvalue_noise_floor_)
    spectrum_ = np.asarray(est.spectrum_)
    above = int(np.count_nonzero(spectrum_ > floor))
    scaled = est.release_.column_scale is not None
    note = " (along the widest-scaled column; each component judged along its own direction)" if scaled else ""
    return spectrum_, floor, above, note


def shown(est):
    """Which components' loadings mean something: above the noise floor, apart from their neighbours' eigenvalues
    and, with draws, stable."""
    from .uncertainty import UNSTABLE_DEGREES

    ok = np.array(est.components_above_noise_, dtype=bool) & np.array(est.components_identified_, dtype=bool)
    if est.component_angles_ is not None:
        ok &= est.component_angles_ <= UNSTABLE_DEGREES
    return ok


def pca_noise(est):
    """The noise of a PCA: the loadings of components below the noise floor, or unstable, are withheld."""
    from .uncertainty import UNSTABLE_DEGREES

    noise = Noise(est)
    below = [f"pc{j + 1}" for j in np.flatnonzero(~est.components_above_noise_)]
    if below:
        noise.withhold(f"the loadings of {', '.join(below)} (below the noise floor)", "components.csv",
                       "no-eigenvalue-above-noise", "components-below-noise")
    tied = est.components_above_noise_ & ~np.array(est.components_identified_, dtype=bool)
    if tied.any():
        noise.withhold(f"the loadings of {', '.join(f'pc{j + 1}' for j in np.flatnonzero(tied))} (an eigenvalue "
                       "within the noise, or the centre's, clipping's and sampling's pull, of a neighbour's)",
                       "components.csv", "components-unidentified")
    unstable = [f"pc{j + 1}" for j in np.flatnonzero(est.components_above_noise_ & ~tied & ~shown(est))]
    if unstable:
        noise.withhold(f"the loadings of {', '.join(unstable)} (more than {UNSTABLE_DEGREES:g} degrees from their "
                       "counterparts in the draws)", "components.csv", "components-unstable")
    return noise


def component_lines(est, names, top=3):
    """Each eigenvalue with its noise; the loadings only of components above the noise floor."""
    lo, hi = est.explained_variance_interval_
    level = f"{100 * est.level:g}% interval"
    angles = est.component_angles_
    header = ["component", "eigenvalue", "se", level, "signal_to_noise"] + ([] if angles is None else ["angle"])
    withheld = np.isnan(lo) | np.isnan(hi)  # the error budget could not bound the clipping (rows beyond 2R)
    rows = [[f"pc{j + 1}", num(v, 4), num(est.explained_variance_se_[j]),
             "withheld" if withheld[j] else interval_text(lo[j], hi[j]),
             num(est.component_snr_[j])] + ([] if angles is None else [f"{angles[j]:.0f} deg"])
            for j, v in enumerate(est.explained_variance_)]
    out = table(header, rows)
    if withheld.any():
        out.append("  withheld: clipping removed more than can be measured (rows beyond twice the row bound, seen or "
                   "not ruled out) along " + ("every component" if withheld.all() else
                                              ", ".join(f"pc{j + 1}" for j in np.flatnonzero(withheld))) +
                   ", so no interval for " + ("them" if withheld.sum() > 1 else "it") + " is complete")
    pushed = [f"pc{j + 1}" for j in np.flatnonzero(hi < est.explained_variance_)]
    if pushed:  # a basic bootstrap interval corrects the noise's bias; an interval beside its estimate puzzles
        out.append(f"  {', '.join(pushed)}: the interval lies below the eigenvalue: noise pushes the top eigenvalues "
                   "of a noisy matrix up, and the interval, for the exact eigenvalue, takes that bias out")
    for j, row in enumerate(est.components_):
        if shown(est)[j]:
            lead = np.argsort(-np.abs(row))[:top]
            out.append(f"  pc{j + 1} loads on " + ", ".join(f"{names[i]} ({row[i]:+.2f})" for i in lead)
                       + ("" if angles is None else f"; {angles[j]:.0f} degrees from its counterparts in the draws"))
    bound = est.subspace_angle_bound_
    out.append(f"subspace: the top-{est.n_components_} subspace is within {bound:.0f} degrees of the exact one "
               "(Davis-Kahan bound from the released eigengap)" if bound < 90 else
               f"subspace: no bound on the top-{est.n_components_} subspace's angle (the released eigengap is within "
               "the noise)")
    if est.subspace_angle_ is not None:
        out.append(f"stability: the median largest angle between the fitted subspace and those of releases redrawn "
                   f"with the noise alone is "
                   f"{est.subspace_angle_:.0f} degrees ('angle' above: each component's median, across draws carrying "
                   f"{_angles_count(est)})")
    return out


def _angles_count(est):
    """What the component angles' draws carry: every part of the error (pca.py) where it was drawn, else the noise."""
    counted = est.uncertainty_.get("angles_count", "the noise alone")
    return counted[len("every part: "):] if counted.startswith("every part: ") else counted


def pca_summary(est, names=None, data_name=None, release=None):
    """The summary of a PCA: each eigenvalue with its noise, and the loadings of the components that mean something."""
    release = est.release_ if release is None else release
    _, floor, above, note = spectrum_against_floor(est)
    title = (f"PCA of {rows_text(release)} x {release.n_features} columns{of_data(data_name)}: "
             f"{est.n_components_} component(s), {above} eigenvalue(s) above the noise floor {floor:.3g}{note}")
    lines = component_lines(est, feature_labels(est, names)) + pca_noise(est).lines() + release_lines(release)
    return Summary(title, tuple(lines))


#: The console shows at most this many coordinates of each mean, or words of each topic.
CONSOLE_COORDS = 6


def tensor_noise(est):
    """A failed decomposition (whitening, sigma2, weights) is withheld (see :class:`.summary.Noise`)."""
    noise = Noise(est)
    if noise.withholds:
        what = "means" if est.model == "mog" else "topics"
        noise.withhold(f"the {what} and weights", "components.csv, weights.csv", "whitening-failure",
                       "sigma2-above-spectrum", "weights-outside-unit-interval",
                       fields=("weights", "weights_se", "weights_interval", "eigenvalues"))
    return noise


def tensor_lines(est, names, what, top=CONSOLE_COORDS):
    """Each weight with its noise, and each mean's (topic's) leading coordinates with theirs."""
    w, se, iv = est.weights_, est.weights_se_, est.weights_interval_
    K = len(w)
    if se is None:
        rows = [[f"c{j + 1}", num(w[j]), "", ""] for j in range(K)]
        note = ["  (no standard errors without draws: run with --draws B)"]
    else:  # each line names the parts its interval counts (estimators/tensor_error.py), one machine or sites
        parts = est.uncertainty_.get("parts", "noise only")
        # a weight lies in [0, 1]: its interval is cut to [0, 1] and to the estimate, which it therefore holds
        outside = lambda j: "" if 0.0 <= w[j] <= 1.0 else \
            f"; estimate {'above 1' if w[j] > 1 else 'below 0'} (noise)"  # noqa: E731
        rows = [[f"c{j + 1}", num(w[j]), num(se[j]),
                 "withheld" if not np.isfinite(iv[0, j]) else interval_text(iv[0, j], iv[1, j]), parts + outside(j)]
                for j in range(K)]
        note = [f"'{parts}': {est.uncertainty_.get('scope', '')}; not covered: "
                f"{est.uncertainty_.get('not_covered', 'sampling variability and clipping bias')}"]
    out = table(["component", "weight", "se", f"{100 * est.level:g}% interval"] + ([] if se is None else [""]),
                rows) + note
    stm = est.model == "stm"
    out.append(f"{what} ({'the most probable words' if stm else 'coordinates'}"
               + ("" if est.components_se_ is None else ", each with its se") + "):")
    for j, row in enumerate(est.components_):
        lead = np.argsort(-row)[:top] if stm else range(min(len(row), top))
        cells = [f"{names[i]} {num(row[i])}" + ("" if est.components_se_ is None
                                               else f" ({num(est.components_se_[j, i], 2)})") for i in lead]
        more = "" if stm or len(row) <= top else f", ... ({len(row) - top} more in components.csv)"
        out.append(f"  c{j + 1}: " + ", ".join(cells) + more)
    return out


def tensor_summary(est, names=None, data_name=None):
    """The summary of a tensor decomposition: each weight and mean (topic) with its noise, unless withheld."""
    m, stm = est.moments_, est.model == "stm"
    if names is None:
        names = getattr(est, "feature_names_in_", None)
    if names is None or stm:
        names = [f"{'w' if stm else 'x'}{j}" for j in range(est.components_.shape[1])]
    noise = tensor_noise(est)
    what = "topics" if stm else "means"
    n = f"{m.second.n}" if m.second.n_public else f"about {m.second.n} (noisy count)"
    title = f"{est.model}: {est.n_components} {what} from {n} {'documents' if stm else 'rows'}{of_data(data_name)}"
    lines = [] if noise.withholds else tensor_lines(est, [str(v) for v in names], what)
    lines += noise.lines()
    count = "" if m.second.n_public else \
        f"the noisy count ({m.second.count_guarantee}, noise_scale {m.second.count_noise_scale:.3g}), "
    lines.append(f"privacy: guarantee {m.guarantee}, neighbouring_relation {describe_relation(m.second.neighbours)}; "
                 f"composed from {count}the second-moment release (noise_scale {m.second.noise_scale:.3g}) and the "
                 f"third-moment release (noise_scale {m.third.noise_scale:.3g}); "
                 + ("" if stm else f"row_norm {m.second.row_norm:g} (rows clipped to it); ")
                 + randomness_text(m.second.randomness, m.second.secure))
    lines += choices_lines(est.privacy_parts_, m.guarantee) if est.privacy_parts_ else []
    return Summary(title, tuple(lines))
