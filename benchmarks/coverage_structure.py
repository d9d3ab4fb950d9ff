"""Coverage of the structure analyses: PCA's components, the graphical lasso's partial correlations and edges,
ridge precision (part of ``python -m benchmarks coverage``; ``COVERAGE_ANALYSES=structure`` runs these only).

Each fit uses draws that carry every part of the error (``estimators/error_draws.py``: the added noise, the
private centre's noise, the detected clipping loss, sampling under normal theory) and, for the width and claims
"today", the same number of draws of the noise alone (what the estimators drew before), on the same release:

- **PCA components** (``PrivatePCA(n_components=3, center="private", n_draws=B)``): a component is called
  stable when it is above the noise floor, identified and (today) its median angle to the redrawn ones is within
  45 degrees, (now) its 90% angle across the every-part draws is. A stable claim is *wrong* where the component
  is more than 45 degrees from the full-data component (scikit-learn's ``PCA``; |cos| < 0.71); "angle held" is
  the share of stable components whose angle to the full-data one is within the printed 90% angle.
- **glasso partial correlations** (``PrivateGraphicalLasso(center="private", n_draws=B)``, the command line's
  defaults: the penalty by eBIC on the release): the 90% intervals of every off-diagonal partial correlation
  against the same analysis without privacy, the graphical lasso at the chosen penalty on the full data's
  covariance, and in simulation on the population covariance.
  Edges: an edge is stable where 90% of the draws keep it; a stable edge is wrong where the full-data (or the
  population) graph at that penalty lacks it.
- **ridge precision** (``PrivateRidgePrecision(center="private", n_draws=B)`` fitted on its release with
  ``alpha`` a tenth of the released matrix's mean variance, post-processing: ridge needs a number, and a
  table in raw units has no scale-free one): every entry of the upper triangle against ridge at that
  ``alpha`` on the full data's (population's) covariance.
"""

import os
import time
import warnings

import numpy as np

from .timing import Table, log

LEVEL, DELTA = 0.9, 1e-6
RIDGE_SHARE = 0.1  # ridge's alpha: this share of the released matrix's mean variance
COS45 = np.cos(np.radians(45.0))


def _scales(release):
    return np.ones(release.n_features) if release.column_scale is None else np.asarray(release.column_scale)


def _noise_draws(est, refit, n_draws, seed):
    """The noise-only draws of ``est``'s release refitted (what the intervals counted before the error budget)."""
    from dpmoments.estimators.uncertainty import bootstrap_generator, redraw

    gen = bootstrap_generator(seed + 7919)
    return np.array([refit(redraw(est.release_, gen)) for _ in range(n_draws)])


def _glasso(X, epsilon, seed, n_draws, sigma):
    from dpmoments.estimators import PrivateGraphicalLasso
    from dpmoments.estimators.graph import partial_correlations
    from dpmoments.estimators.uncertainty import basic_interval
    from dpmoments.solvers import graphical_lasso

    est = PrivateGraphicalLasso(epsilon=epsilon, delta=DELTA, center="private", level=LEVEL, n_draws=n_draws,
                                rng=seed).fit(X)
    s = _scales(est.release_)

    def solve(S):
        return partial_correlations(graphical_lasso(S, est.alpha_).precision)

    def refit(release):
        return solve(release.project_psd(0.0).second_moment)

    iu = np.triu_indices(X.shape[1], 1)
    full = solve(np.cov(X / s, rowvar=False))
    pop = None if sigma is None else solve(sigma / np.outer(s, s))
    draws = _noise_draws(est, refit, n_draws, seed)
    noise = np.clip(basic_interval(est.partial_correlation_, draws, LEVEL), -1, 1)
    chosen = np.abs(est.partial_correlation_) > 1e-8
    noise_freq = np.mean(np.abs(draws) > 1e-8, axis=0)
    edges = {"now": est.stable_edges_[iu],
             "today": (chosen & (noise_freq >= 0.9))[iu], "full": np.abs(full[iu]) > 1e-8,
             "pop": None if pop is None else np.abs(pop[iu]) > 1e-8}
    return (est.partial_correlation_interval_[:, iu[0], iu[1]], noise[:, iu[0], iu[1]], full[iu],
            None if pop is None else pop[iu], edges)


def _ridge(X, epsilon, seed, n_draws, sigma):
    from dpmoments.estimators import PrivateRidgePrecision
    from dpmoments.estimators.uncertainty import basic_interval
    from dpmoments.solvers import ridge_precision

    release = PrivateRidgePrecision(alpha=1.0, epsilon=epsilon, delta=DELTA, center="private", rng=seed).fit(X).release_
    alpha = RIDGE_SHARE * float(np.mean(np.diag(release.second_moment)))
    est = PrivateRidgePrecision(alpha=alpha, level=LEVEL, n_draws=n_draws, rng=seed).fit_release(release)
    s = _scales(est.release_)

    def solve(S):
        return ridge_precision(S, alpha) / np.outer(s, s)

    iu = np.triu_indices(X.shape[1])
    full = solve(np.cov(X / s, rowvar=False))
    pop = None if sigma is None else solve(sigma / np.outer(s, s))
    noise = basic_interval(est.precision_, _noise_draws(est, lambda r: solve(r.second_moment), n_draws, seed), LEVEL)
    return (est.precision_interval_[:, iu[0], iu[1]], noise[:, iu[0], iu[1]], full[iu],
            None if pop is None else pop[iu], None)


def _components(X, epsilon, seed, n_draws):
    """(today's stable, now stable, angle to the full-data component, printed 90% angle) per component."""
    from dpmoments.estimators import PrivatePCA
    from sklearn.decomposition import PCA

    k = min(3, X.shape[1])
    est = PrivatePCA(n_components=k, epsilon=epsilon, delta=DELTA, level=LEVEL, center="private", n_draws=n_draws,
                     rng=seed).fit(X)
    full = PCA().fit(X).components_[:k]
    angle = np.degrees(np.arccos(np.minimum(np.abs(np.sum(est.components_ * full, axis=1)), 1.0)))
    above = np.asarray(est.components_above_noise_, bool)
    today = (above & np.asarray(est.uncertainty_.get(  # set only where the draws ran
        "components_identified_closed_form", est.uncertainty_["components_identified"]), bool)
             & (_or_nan(getattr(est, "component_noise_angles_", est.component_angles_), k) <= 45.0))
    now = above & np.asarray(est.components_identified_, bool)
    return today, now, angle, _or_nan(est.uncertainty_.get("component_angle_upper_degrees"), k)


def _or_nan(values, k):
    """``values`` as floats; NaN where the fit withheld them (None)."""
    return np.full(k, np.nan) if values is None else np.asarray(values, dtype=float)


class _Claims:
    def __init__(self):
        self.today, self.today_wrong, self.now, self.now_wrong, self.held, self.pop_today, self.pop_now = (
            0, 0, 0, 0, [], [], [])

    def row(self, name, epsilon, fits, refused):
        def share(wrong, n):
            return f"{wrong / n:.2f} ({n})" if n else "- (0)"

        return [name, f"{epsilon:g}", share(self.today_wrong, self.today), share(self.now_wrong, self.now),
                f"{np.mean(self.held):.2f}" if self.held else "-",
                share(sum(self.pop_today), len(self.pop_today)) if self.pop_today else "-",
                share(sum(self.pop_now), len(self.pop_now)) if self.pop_now else "-", f"{refused}/{fits + refused}"]


def _cases(quick):
    from .coverage import _real, _simulations

    real = _real()
    keep = ("breast_cancer", "diabetes (raw)", "wine", "randhie", "macrodata", "star98", "grunfeld")
    cases = [(name, (lambda rng, X=real[name]: X), None) for name in keep]
    cases += [(name, draw, sigma) for name, (draw, sigma) in _simulations(2000 if quick else 3000).items()]
    data = [a for a in os.environ.get("COVERAGE_DATA", "").lower().split(",") if a]  # as coverage.py reads it
    return [c for c in cases if not data or any(a in c[0].lower() for a in data)]


def _fit_quietly(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args)
        except ValueError as err:  # a refusal (too few rows for a private choice at this epsilon)
            log(f"  refused: {str(err)[:80]}")
            return None


def run(quick=False, epsilons=(1.0, 4.0)):
    from .coverage import _Tally

    seeds, n_draws = range(3 if quick else 6), 10 if quick else 20
    columns = ["data", "analysis", "epsilon", "hold full", "hold pop.", "excl. 0 miss (n)", "width / |full|",
               "noise-only width / |full|", "width / noise-only", "inf", "withheld", "refused"]
    claims_columns = ["data", "epsilon", "today: wrong (stable n)", "now: wrong (stable n)", "angle held",
                      "today: wrong vs pop. (n)", "now: wrong vs pop. (n)", "refused"]
    intervals = Table(f"glasso partial correlations and ridge precision: 90% intervals, delta = {DELTA:g}, "
                      f"{len(seeds)} seeded fits each, {n_draws} draws", columns)
    components = Table(f"PCA components called stable: wrong claims (> 45 degrees from the full-data component), "
                       f"{len(seeds)} fits, {n_draws} draws", claims_columns)
    edges = Table(f"glasso edges called stable (90% of draws): wrong claims (absent from the full-data graph at "
                  f"the same penalty), {len(seeds)} fits, {n_draws} draws", claims_columns)
    for name, draw, sigma in _cases(quick):
        for epsilon in epsilons:
            t0 = time.process_time()
            tallies = {"glasso partial correlations": _Tally(), "ridge precision": _Tally()}
            comp, edge, refused = _Claims(), _Claims(), {"pca": 0, "glasso": 0}
            for seed in seeds:
                X = draw(np.random.default_rng(10_000 + seed))
                for label, fn in (("glasso partial correlations", _glasso), ("ridge precision", _ridge)):
                    out = _fit_quietly(fn, X, epsilon, seed, n_draws, sigma)
                    if out is None:
                        tallies[label].refused += 1
                        refused["glasso"] += label.startswith("glasso")
                        continue
                    interval, noise, full, pop, stable = out
                    tallies[label].add(interval, noise, full, pop)
                    if stable is not None:
                        _count_edges(edge, stable)
                out = _fit_quietly(_components, X, epsilon, seed, n_draws)
                if out is None:
                    refused["pca"] += 1
                    continue
                today, now, angle, upper = out
                comp.today += int(today.sum()); comp.today_wrong += int((today & (angle > 45)).sum())
                comp.now += int(now.sum()); comp.now_wrong += int((now & (angle > 45)).sum())
                comp.held.extend((angle <= upper)[now].tolist())
            for label, tally in tallies.items():
                intervals.rows.append(tally.row(name, label, epsilon))
            fits = len(seeds)
            components.rows.append(comp.row(name, epsilon, fits - refused["pca"], refused["pca"]))
            edge.held = []
            edges.rows.append(edge.row(name, epsilon, fits - refused["glasso"], refused["glasso"]))
            log(f"structure {name} eps={epsilon:g}: {time.process_time() - t0:.1f} s CPU  "
                f"{intervals.rows[-2][3:6]} {intervals.rows[-1][3:6]} {components.rows[-1][2:5]}")
    intervals.notes.append("Full-data value: the same analysis without privacy at the penalty the fit chose, on the "
                           "full data's covariance in the release's units; 'noise-only' is the interval of the same "
                           "number of draws of the added noise alone (what was printed before).")
    components.notes.append("'today': the closed-form identification with the noise-only draws' median angle; "
                            "'now': the every-part draws' 90% angle within 45 degrees, none where clipping's loss "
                            "beyond the outer bound is unseen. 'angle held': share of stable components within "
                            "their printed 90% angle of the full-data component.")
    edges.notes.append("'today': 90% of noise-only draws keep the edge; 'now': 90% of every-part draws, none where "
                       "clipping's loss beyond the outer bound is unseen. 'vs pop.': absent from the population's "
                       "graph at the same penalty (simulations).")
    return [intervals, components, edges]


def _count_edges(claims, stable):
    claims.today += int(stable["today"].sum())
    claims.today_wrong += int((stable["today"] & ~stable["full"]).sum())
    claims.now += int(stable["now"].sum())
    claims.now_wrong += int((stable["now"] & ~stable["full"]).sum())
    if stable["pop"] is not None:
        claims.pop_today.extend((~stable["pop"][stable["today"]]).tolist())
        claims.pop_now.extend((~stable["pop"][stable["now"]]).tolist())
