"""Across sites: do the graphical lasso's and ridge precision's intervals hold the truth? (issue 25)

Three CAPE sites, defaults (private centre, ``row_norm="auto"`` with its clipping-excess round), the release fitted
as ``dpmoments simulate --analysis precision | ridge`` now fits it (``cli/present/precision.fit_precision``:
draws that carry the added noise, the private centre's noise, the clipping loss and sampling) against the
intervals of as many draws of the added noise alone (what the multi-site command counted before: the noise).
Truth as ``benchmarks/coverage_structure.py``: the same analysis without privacy at the penalty the fit chose,
on the full data's covariance (and, in simulation, on the population's). Ridge: ``alpha`` a tenth of the
released matrix's mean variance. ``python -m benchmarks sites_structure [--quick]`` writes
``benchmarks/results/sites_structure.md``.
"""

import warnings
from types import SimpleNamespace

import numpy as np

from .coverage import _Tally
from .coverage_structure import RIDGE_SHARE, _noise_draws
from .sites_coverage import DELTA, EPSILONS, LEVEL, _data, _release
from .timing import Table, log


def _fit(release, method, alpha, n_draws, seed):
    from dpmoments.cli.present.precision import fit_precision

    args = SimpleNamespace(draws=n_draws, level=LEVEL, seed=seed, intervals_for="population")
    return fit_precision(release, method, alpha, args)[0]


def _glasso(release, n_draws, seed, X, sigma):
    from dpmoments.estimators.graph import partial_correlations
    from dpmoments.estimators.uncertainty import basic_interval
    from dpmoments.solvers import graphical_lasso

    est = _fit(release, "glasso", "ebic", n_draws, seed)

    def solve(S):
        return partial_correlations(graphical_lasso(S, est.alpha_).precision)

    noise = np.clip(basic_interval(est.partial_correlation_, _noise_draws(
        est, lambda r: solve(r.project_psd(0.0).second_moment), n_draws, seed), LEVEL), -1, 1)
    iu = np.triu_indices(X.shape[1], 1)
    return (est.partial_correlation_interval_[:, iu[0], iu[1]], noise[:, iu[0], iu[1]],
            solve(np.cov(X, rowvar=False))[iu], None if sigma is None else solve(sigma)[iu])


def _ridge(release, n_draws, seed, X, sigma):
    from dpmoments.estimators.uncertainty import basic_interval
    from dpmoments.solvers import ridge_precision

    alpha = RIDGE_SHARE * float(np.mean(np.diag(release.second_moment)))
    est = _fit(release, "ridge", alpha, n_draws, seed)
    noise = basic_interval(est.precision_, _noise_draws(est, lambda r: ridge_precision(r.second_moment, alpha),
                                                        n_draws, seed), LEVEL)
    iu = np.triu_indices(X.shape[1])
    return (est.precision_interval_[:, iu[0], iu[1]], noise[:, iu[0], iu[1]],
            ridge_precision(np.cov(X, rowvar=False), alpha)[iu],
            None if sigma is None else ridge_precision(sigma, alpha)[iu])


def run(quick=False):
    """Coverage of the multi-site glasso and ridge intervals (every part) beside the noise-only ones."""
    seeds, n_draws = range(2 if quick else 4), 10 if quick else 20
    table = Table(f"precision across 3 CAPE sites: 90% intervals, defaults, delta = {DELTA:g}, {len(seeds)} seeded "
                  f"runs each, {n_draws} draws", ["data", "analysis", "epsilon", "hold full", "hold pop.",
                                                  "excl. 0 miss (n)", "width / |full|", "noise-only width / |full|",
                                                  "width / noise-only", "inf", "withheld", "refused"])
    noise_only = Table("the same runs, intervals of the noise alone (what the multi-site command counted before)",
                       table.columns)
    for name, draw, sigma in _data(False):
        for epsilon in EPSILONS:
            tallies = {k: (_Tally(), _Tally()) for k in ("glasso partial correlations", "ridge precision")}
            for seed in seeds:
                X = draw(np.random.default_rng(10_000 + seed))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    release = _release("sites", X, epsilon, seed)
                    for label, fn in (("glasso partial correlations", _glasso), ("ridge precision", _ridge)):
                        interval, noise, full, pop = fn(release, n_draws, seed, X, sigma)
                        tallies[label][0].add(interval, noise, full, pop)
                        tallies[label][1].add(noise, noise, full, pop)
            for label, (every, alone) in tallies.items():
                table.rows.append(every.row(name, label, epsilon))
                noise_only.rows.append(alone.row(name, label, epsilon))
                log(f"sites_structure {name} {label} eps={epsilon:g}: {table.rows[-1][3:6]} "
                    f"(noise only {noise_only.rows[-1][3:6]})")
    table.notes.append("Full-data value: the same analysis without privacy at the penalty the fit chose (ridge: "
                       "at its alpha), on the full data's covariance; population: on the population covariance.")
    return [table, noise_only]
