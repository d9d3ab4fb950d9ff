"""Across sites: do the covariance intervals hold the truth, and what does the bound cost? (issue 25)

Three CAPE sites (the rows split in three, in order), defaults only (private centre, ``row_norm="auto"``),
``PrivateCovariance(level=0.9).fit_release`` on the multi-site release, against:

- **before**: the same run as it was (the fixed 0.95-quantile bound, no clipping-excess round:
  ``AutoBounds(quantile=0.95, bias=0)``, the rounds' ``(epsilon, delta)`` split linearly:
  ``composition="basic"``), whose intervals left the clipping bias out;
- **pooled**: the single machine's release of all the rows (``run_pooled``: its private centre and
  bound by the single-machine procedure, its clipping-excess release), the like-for-like reference;
- **linear split**: today's run (the clipping excess, the auto quantile) with the plan's rounds given
  linear shares of ``(epsilon, delta)`` (``composition="basic"``) instead of the default shares of ``rho``
  (zCDP, as the single machine splits its private choices).

Coverage columns as ``benchmarks/coverage.py`` (the share of 90% intervals holding the full-data covariance
``np.cov(X)`` and, in simulation, the population's; the share of entries excluding 0 that miss it; widths;
withheld). The second table, on RAND HIE (statsmodels, raw units), gives per run the chosen bound, the noisy
clipped-row share the report prints, the relative Frobenius error of the covariance against the full-data one,
and ``mdvis``'s variance (full data 20.29): its median estimate and how often its interval holds 20.29; and a
run with the pooled run's bound given to the sites (public, for free) to show how much of the gap is the bound.
``python -m benchmarks sites_coverage [--quick]`` writes ``benchmarks/results/sites_coverage.md``.
"""

import warnings

import numpy as np

from .coverage import _Tally
from .timing import Table, log

LEVEL, DELTA, SITES = 0.9, 1e-6, 3
EPSILONS = (1.0, 4.0)


def _data(quick):
    import statsmodels.api as sm

    n = 9000 if quick else 15_000
    sigma = np.array([[4.0, 1.0, 0.0], [1.0, 1.0, 0.3], [0.0, 0.3, 0.25]])
    chol = np.linalg.cholesky(sigma)

    def t3(rng):  # covariance sigma: a t_3 has variance 3
        z = rng.standard_normal((n, 3)) @ chol.T
        return z / np.sqrt(rng.chisquare(3, size=(n, 1)) / 3) / np.sqrt(3) + [10.0, -3.0, 0.5]

    def gaussian(rng):
        return rng.standard_normal((n, 3)) @ chol.T + [10.0, -3.0, 0.5]

    randhie = sm.datasets.randhie.load_pandas().data.to_numpy(float)
    return [("randhie", lambda rng: randhie, None), ("t3 (sim.)", t3, sigma), ("Gaussian (sim.)", gaussian, sigma)]


def _sites(X, row_norm="auto"):
    from dpmoments.multisite import Site

    return [Site(f"s{i}", P, row_norm=row_norm, center="private") for i, P in enumerate(np.array_split(X, SITES))]


def _release(method, X, epsilon, seed, row_norm=None):
    from dpmoments.moments import BoundBudget
    from dpmoments.multisite import run_pooled
    from dpmoments.multisite.api import analyse
    from dpmoments.multisite.bounds import AutoBounds

    common = dict(epsilon=epsilon, delta=DELTA, rng=seed)
    if method == "pooled":
        return run_pooled(_sites(X), bound_budget=BoundBudget(), **common)[0]
    if method == "before":
        return analyse(_sites(X), "covariance", bound_budget=AutoBounds(("row_norm",), quantile=0.95, bias=0.0),
                       composition="basic", **common)[0]
    if method == "pooled bound":
        return analyse(_sites(X, row_norm), "covariance", **common)[0]
    if method == "basic":
        return analyse(_sites(X), "covariance", composition="basic", **common)[0]
    return analyse(_sites(X), "covariance", **common)[0]


def _fit(release):
    from dpmoments.estimators import PrivateCovariance

    return PrivateCovariance(level=LEVEL).fit_release(release)


def _method(method, X, epsilon, seed):
    return _fit(_release(method, X, epsilon, seed))


METHODS = (("3 CAPE sites", "sites"), ("3 CAPE sites, before", "before"), ("3 CAPE sites, linear split", "basic"),
           ("pooled (one machine)", "pooled"))


def tally_rows(cases, variants, seeds, estimate, tag):
    """The seeds x epsilon x variants loop both sites benchmarks run: one coverage row (``benchmarks/coverage.py``'s
    tally) per data set, epsilon and ``(label, variant)``, over seeded runs of ``estimate(variant, X, epsilon,
    seed)``, a fitted ``PrivateCovariance``; a run refused in one line (``ValueError``) is counted as refused."""
    rows = []
    for name, draw, sigma in cases:
        for epsilon in EPSILONS:
            for label, variant in variants:
                tally = _Tally()
                for seed in seeds:
                    X = draw(np.random.default_rng(10_000 + seed))
                    iu = np.triu_indices(X.shape[1])
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            est = estimate(variant, X, epsilon, seed)
                    except ValueError as err:
                        tally.refused += 1
                        log(f"  {name} {label} eps={epsilon:g} seed={seed}: refused ({str(err)[:80]})")
                        continue
                    noise = getattr(est, "covariance_noise_interval_", est.covariance_interval_)
                    tally.add(est.covariance_interval_[:, iu[0], iu[1]], noise[:, iu[0], iu[1]],
                              np.cov(X, rowvar=False)[iu], None if sigma is None else sigma[iu])
                rows.append(tally.row(name, label, epsilon))
                log(f"{tag} {name} {label} eps={epsilon:g}: {rows[-1][3:7]}")
    return rows


def _randhie_rows(seeds):
    import statsmodels.api as sm

    X = sm.datasets.randhie.load_pandas().data.to_numpy(float)
    full = np.cov(X, rowvar=False)
    rows = []
    for epsilon in EPSILONS:
        out = {}
        for seed in seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pooled = _release("pooled", X, epsilon, seed)
                for method in ("sites", "before", "basic", "pooled", "pooled bound"):
                    try:
                        rel = pooled if method == "pooled" else _release(method, X, epsilon, seed, pooled.row_norm)
                    except ValueError:  # refused: too few rows for the bound step at this epsilon
                        out.setdefault(method, [])
                        continue
                    est = _fit(rel)
                    lo, hi = est.covariance_interval_[:, 0, 0]
                    clipped = rel.clipped_fraction
                    out.setdefault(method, []).append((
                        rel.row_norm, np.nan if clipped is None else clipped[0],
                        np.linalg.norm(est.covariance_ - full) / np.linalg.norm(full), est.covariance_[0, 0],
                        np.nan if np.isnan(lo) else float(lo <= full[0, 0] <= hi), float(np.isnan(lo))))
        for method, label in (("sites", "3 CAPE sites"), ("before", "3 CAPE sites, before"),
                              ("basic", "3 CAPE sites, linear split"),
                              ("pooled bound", "3 CAPE sites, the pooled bound given (free)"),
                              ("pooled", "pooled (one machine)")):
            if not out[method]:
                rows.append([label, f"{epsilon:g}", "refused", "-", "-", "-", "-", "-"])
                continue
            v = np.array(out[method])
            held = v[:, 4][~np.isnan(v[:, 4])]
            rows.append([label, f"{epsilon:g}", f"{np.median(v[:, 0]):.4g}",
                         "-" if np.all(np.isnan(v[:, 1])) else f"{100 * np.nanmedian(v[:, 1]):.2f}%",
                         f"{np.median(v[:, 2]):.3f}", f"{np.median(v[:, 3]):.2f}",
                         f"{held.mean():.2f} ({held.size})" if held.size else "-", f"{v[:, 5].mean():.2f}"])
            log(f"sites_coverage randhie {label} eps={epsilon:g}: {rows[-1][2:]}")
    return rows


def run(quick=False):
    """Coverage of the covariance intervals across three CAPE sites, beside the run before and the pooled release."""
    seeds = range(3 if quick else 10)
    coverage = Table(f"covariance across {SITES} CAPE sites: 90% intervals, defaults, delta = {DELTA:g}, "
                     f"{len(seeds)} seeded runs each",
                     ["data", "release", "epsilon", "hold full", "hold pop.", "excl. 0 miss (n)", "width / |full|",
                      "noise-only width / |full|", "width / noise-only", "inf", "withheld", "refused"])
    coverage.rows = tally_rows(_data(quick), METHODS, seeds, _method, "sites_coverage")
    coverage.notes.append("'before': the fixed 0.95-quantile bound and no clipping-excess round (the intervals left "
                          "the clipping bias out); 'linear split': today's run with the rounds' (epsilon, delta) "
                          "split linearly (composition='basic'), not the default shares of rho; 'pooled': the single "
                          "machine's release "
                          "of all the rows. RAND HIE is redrawn on the same rows; the simulations draw fresh rows each "
                          "run.")
    randhie = Table(f"RAND HIE (20,190 rows, 10 columns, raw units) across {SITES} CAPE sites: the bound and its cost "
                    f"(median over {len(seeds)} seeded runs)",
                    ["release", "epsilon", "row_norm", "clipped rows (noisy)", "relative error",
                     "mdvis variance (full 20.29)", "mdvis interval holds 20.29 (printed)", "mdvis withheld"])
    randhie.rows = _randhie_rows(seeds)
    randhie.notes.append("relative error: Frobenius norm of (estimate - full-data covariance) over that of the "
                         "full-data covariance. 'the pooled bound given (free)': the sites clip at the bound the "
                         "pooled run chose privately, given to them as a public value at no cost (an oracle, to "
                         "measure how much of the gap the bound makes).")
    return [coverage, randhie]
