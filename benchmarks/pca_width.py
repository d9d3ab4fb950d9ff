"""Where PCA's eigenvalue widths come from: each part of the upper end against the error it has to hold.

For each data set (raw units) and epsilon, ``PrivatePCA(n_components=3, center="private")`` (the command line's
default centre, as ``benchmarks/coverage.py``) is fitted at seeded draws. Every printed eigenvalue interval's
upper end is split into its parts at the level (``uncertainty_["error_budget"]["upper_end"]``: noise and
sampling, the clipping loss's estimate times the tail factor, the loss release's own noise, the centre's bias, a
tied group's spread, and ``turn``, the turn-proof bound's excess where clipping may turn the first component),
each in units of the noise-only half-width, beside what actually happened: the realised
error of the released eigenvalue (full-data less released, the same units; positive where clipping shrank it) and,
from the rows (this benchmark only: never in the library), what the rows beyond twice the bound lost along the
component against what the band ``[R, 2R]`` lost (the ratio taken as at most 2 on the first component,
``EIGEN_TAIL_RATIO``, and 1 on the later ones, the covariance's ``TAIL_RATIO``).

Columns: medians over the printed intervals of one component across the fits. ``width`` is the printed width over
the noise-only width (FCR included). ``loss x tail`` and ``loss noise`` are the clipping allowance (what it adds in
quadrature with noise and sampling); ``realised`` the error the whole interval has to hold above the released
value. ``far / band`` is the exact ratio (max over the fits in brackets).

``python -m benchmarks pca_width [--quick]`` (``COVERAGE_DATA`` and ``COVERAGE_EPSILONS`` select, as coverage).
Two variants measure what was tried and not adopted: ``PCA_WIDTH_BIAS=0.35`` gives the clipping-loss release that
share of the budget (``BoundBudget(bias=...)``, public; the default 0.1), ``PCA_WIDTH_TAIL_RATIO=1`` takes what rows
beyond 2R lose as at most once the band's on the first component too (the module constant ``EIGEN_TAIL_RATIO``,
2, set for this run only).
"""

import os
import warnings

import numpy as np

from .coverage import DELTA, LEVEL, _real, _simulations, chosen_epsilons
from .timing import Table, log

DATA = ("breast_cancer", "diabetes (raw)", "randhie", "star98", "anes96", "Gaussian (sim.)", "t3 (sim.)")
PARTS = ("noise_and_sampling", "clipping_loss", "clipping_loss_noise", "centre_bias", "ties", "turn")


def _cases(n):
    real, sims = _real(), _simulations(n)
    chosen = [a for a in os.environ.get("COVERAGE_DATA", "").lower().split(",") if a]
    for name in DATA:
        if chosen and not any(a in name.lower() for a in chosen):
            continue
        yield name, (lambda rng, X=real[name]: X) if name in real else sims[name][0]


def _far_to_band(X, est):
    """What rows beyond 2R lost beyond it along each released component, over what the band [R, 2R] lost along it:
    exact, from the rows (a benchmark's check of the tail assumption, never an output)."""
    from dpmoments.moments.clipping_bias import clipping_excess_sums

    rel = est.release_
    scale = None if rel.column_scale is None else np.asarray(rel.column_scale)
    band = clipping_excess_sums(X, rel.center, scale, rel.row_norm, 2.0, matrix=True)[3]
    whole = clipping_excess_sums(X, rel.center, scale, rel.row_norm, 1e150, matrix=True)[3]
    W = est.components_ * (1.0 if scale is None else scale)
    along = np.sum((W @ band) * W, axis=1)
    return np.sum((W @ (whole - band)) * W, axis=1) / np.where(along > 0, along, np.inf)


def _fit(X, epsilon, seed):
    from dpmoments.estimators import PrivatePCA
    from sklearn.decomposition import PCA

    from dpmoments.moments.auto_release import BoundBudget

    share = os.environ.get("PCA_WIDTH_BIAS")
    budget = {} if not share else {"bound_budget": BoundBudget(bias=float(share))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivatePCA(n_components=3, epsilon=epsilon, delta=DELTA, level=LEVEL, center="private", rng=seed,
                         **budget).fit(X)
    return est, PCA().fit(X).explained_variance_[:3]


def _rows(name, draw, epsilon, seeds):
    k = 3
    each = [dict(width=[], realised=[], far=[], hold=[], **{p: [] for p in PARTS}) for _ in range(k)]
    for seed in seeds:
        X = draw(np.random.default_rng(10_000 + seed))
        est, full = _fit(X, epsilon, seed)
        lo, hi = est.explained_variance_interval_
        nlo, nhi = est.explained_variance_noise_interval_
        nh = (nhi - nlo) / 2
        upper = est.uncertainty_["error_budget"]["upper_end"]
        far = _far_to_band(X, est)
        for j in np.flatnonzero(~np.isnan(lo)):
            row = each[j]
            row["width"].append((hi[j] - lo[j]) / (2 * nh[j]))
            row["realised"].append((full[j] - upper["from"][j]) / nh[j])
            row["far"].append(far[j])
            row["hold"].append(lo[j] <= full[j] <= hi[j])
            for p in PARTS:
                row[p].append(upper[p][j] / nh[j])
    out = []
    for j, row in enumerate(each):
        if not row["width"]:
            out.append([name, f"{epsilon:g}", f"pc{j + 1}", 0] + ["-"] * (len(PARTS) + 4))
            continue
        med = {key: float(np.median(v)) for key, v in row.items() if key not in ("hold", "far")}
        far = np.asarray(row["far"])
        out.append([name, f"{epsilon:g}", f"pc{j + 1}", len(row["width"]), f"{np.mean(row['hold']):.2f}",
                    f"{med['width']:.1f}", *(f"{med[p]:.2f}" for p in PARTS), f"{med['realised']:.2f}",
                    f"{np.median(far):.2f} ({np.max(far):.2f})"])
    return out


def run(quick=False):
    """Each part of PCA's eigenvalue upper ends in noise-only half-widths, beside the realised error."""
    from dpmoments.estimators import eigenvalue_budget

    seeds = range(3 if quick else 10)
    kept = eigenvalue_budget.EIGEN_TAIL_RATIO
    eigenvalue_budget.EIGEN_TAIL_RATIO = float(os.environ.get("PCA_WIDTH_TAIL_RATIO") or kept)
    table = Table(f"PCA eigenvalue upper ends, parts in noise-only half-widths (medians over {len(seeds)} fits; "
                  "90% intervals, delta = 1e-6)",
                  ["data", "epsilon", "component", "printed", "hold full", "width / noise-only", "noise + sampling",
                   "loss x tail", "loss noise", "centre bias", "ties", "turn", "realised", "far / band (max)"])
    try:
        for name, draw in _cases(2000 if quick else 5000):
            for epsilon in chosen_epsilons():
                table.rows += _rows(name, draw, epsilon, seeds)
                log(f"pca_width {name} eps={epsilon:g}")
    finally:
        eigenvalue_budget.EIGEN_TAIL_RATIO = kept
    table.notes.append("Real data: the same rows at every seed; simulations draw fresh rows. Withheld intervals "
                       "(NaN) are left out ('printed' counts the others).")
    return [table]
