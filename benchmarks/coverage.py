"""Do the printed intervals hold the truth? Coverage of 90% intervals, defaults only, real and simulated data.

For each data set (raw units, as a new user loads them) and epsilon in {1, 4} (delta = 1e-6), the
estimators are fitted with their defaults (private centre, private row bound) at seeded draws:

- **covariance** (``PrivateCovariance``): every entry of the upper triangle against the full-data
  (non-private) covariance ``np.cov(X)`` and, in simulation, the population covariance;
- **IRLS** (``PrivateIRLS``, p = 1, the defaults: private bounds, an intercept, ``n_iter`` and
  ``w_max`` defaults): the coefficient intervals against the full-data least absolute
  deviations fit (statsmodels' ``QuantReg`` at 0.5) and, in simulation, the population coefficients;
- **PCA** (``PrivatePCA(n_components=3, center="private")``, the command line's default centre; the
  library's default is the uncentred second moment): the eigenvalue intervals against the full-data
  eigenvalues (scikit-learn's ``PCA().explained_variance_``) and, in simulation, the population's.

Columns: ``hold full`` is the share of 90% intervals that hold the full-data value; ``hold pop.`` the
share that hold the population value (simulations); ``excl. 0 miss`` the share of the entries whose
interval excludes 0 that do not hold the full-data value (what a user who reports those entries gets
wrong; ``n`` of them in brackets); ``width`` the median interval width over the full-data value's
absolute size (median over entries; large where many full-data values are near 0); ``noise-only
width`` the same for the interval of the added noise alone (what the estimators printed before the
error budget); ``width / noise-only`` the median ratio of the two, entry by entry; ``inf`` the count of infinite
intervals; ``withheld`` the share of entries whose interval was withheld because a part of its error
could not be bounded (the entry is marked ``biased`` instead; the other columns are over the printed
intervals only). A fit refused (too few rows for a private choice) is counted in ``refused``.

``python -m benchmarks coverage [--quick]`` writes ``benchmarks/results/coverage.md``
(``COVERAGE_ANALYSES=covariance`` runs that analysis only, ``COVERAGE_DATA=grunfeld,t3`` the data sets whose
names contain one of those, ``COVERAGE_EPSILONS=1`` those epsilons only, ``COVERAGE_FITS=100`` that many seeded
fits per cell instead of 20, for the rarer 'excludes 0' misses; ``structure``: PCA's components, the graphical
lasso's partial correlations and edges and ridge precision, ``benchmarks/coverage_structure.py``).
"""

import os
import time
import warnings

import numpy as np

from .timing import Table, log

LEVEL = 0.9
EPSILONS = (1.0, 4.0)


def chosen_epsilons():
    """``COVERAGE_EPSILONS=1,4`` (the default: EPSILONS)."""
    given = [float(e) for e in os.environ.get("COVERAGE_EPSILONS", "").split(",") if e.strip()]
    return tuple(given) or EPSILONS
DELTA = 1e-6


# -- data ---------------------------------------------------------------------------------------------------------
def _real():
    """Real data sets in raw units that ship offline with scikit-learn and statsmodels."""
    from sklearn import datasets as skd
    import statsmodels.api as sm

    def frame(name, drop=()):
        data = getattr(sm.datasets, name).load_pandas().data
        return data.drop(columns=list(drop)).select_dtypes("number").to_numpy(float)

    return {
        "breast_cancer": skd.load_breast_cancer().data,
        "diabetes (raw)": skd.load_diabetes(scaled=False).data,
        "wine": skd.load_wine().data,
        "iris": skd.load_iris().data,
        "randhie": frame("randhie"),
        "macrodata": frame("macrodata", drop=("year", "quarter")),
        "star98": frame("star98"),
        "grunfeld": frame("grunfeld"),
        # audited first in benchmarks/real_unseen.py: mixed units with a 0/1 column; a wide table of integers 0-16
        "anes96": frame("anes96"),
        "digits": skd.load_digits().data,
    }


def _binary_population(p, q):
    """x_j = u (a shared Bernoulli(1/2)) with probability q_j, else its own Bernoulli(p_j): mean and covariance."""
    mean = q / 2 + (1 - q) * p
    second = (np.outer(q, q) * 0.5 + np.outer(q, (1 - q) * p) * 0.5 + np.outer((1 - q) * p, q) * 0.5
              + np.outer((1 - q) * p, (1 - q) * p))
    np.fill_diagonal(second, mean)
    return second - np.outer(mean, mean)


def _simulations(n):
    """name -> (draw(rng) -> X, population covariance): Gaussian, t with 3 df, 0/1 columns; mixed units."""
    d = 5
    units = np.array([1.0, 10.0, 0.1, 100.0, 3.0])
    corr = 0.5 ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
    sigma = corr * np.outer(units, units)
    chol = np.linalg.cholesky(sigma)
    shift = np.array([5.0, -20.0, 0.3, 1000.0, 0.0])
    p, q = np.array([0.1, 0.3, 0.5, 0.7, 0.9]), np.array([0.6, 0.5, 0.4, 0.3, 0.0])

    def gaussian(rng):
        return rng.standard_normal((n, d)) @ chol.T + shift

    def t3(rng):  # scaled so that its covariance is sigma: a t_3 has variance 3
        z = rng.standard_normal((n, d)) @ chol.T
        return z / np.sqrt(rng.chisquare(3, size=(n, 1)) / 3) / np.sqrt(3) + shift

    def binary(rng):
        u = rng.random((n, 1)) < 0.5
        own = rng.random((n, d)) < p
        return np.where(rng.random((n, d)) < q, u, own).astype(float)

    return {"Gaussian (sim.)": (gaussian, sigma), "t3 (sim.)": (t3, sigma),
            "0/1 columns (sim.)": (binary, _binary_population(p, q))}


# -- one fit --------------------------------------------------------------------------------------------------------
def _noise_only(est):
    """The interval of the added noise alone (what was printed before the error budget), where recorded."""
    return getattr(est, "covariance_noise_interval_", est.covariance_interval_)


class Ranged(tuple):
    """``(X, ranges)``: a simulated table whose columns' ranges are public (0/1 columns, as an opened table's)."""


def _covariance(X, epsilon, seed, ranges=None):
    from dpmoments.estimators import PrivateCovariance

    est = PrivateCovariance(epsilon=epsilon, delta=DELTA, level=LEVEL, rng=seed, ranges=ranges).fit(X)
    iu = np.triu_indices(X.shape[1])
    full = np.atleast_2d(np.cov(X, rowvar=False))  # one column: a 0-d array
    return est.covariance_interval_[:, iu[0], iu[1]], _noise_only(est)[:, iu[0], iu[1]], full[iu], iu


def _pca(X, epsilon, seed, ranges=None):
    from dpmoments.estimators import PrivatePCA
    from sklearn.decomposition import PCA

    k = min(3, X.shape[1])
    est = PrivatePCA(n_components=k, epsilon=epsilon, delta=DELTA, level=LEVEL, center="private", rng=seed,
                     ranges=ranges).fit(X)
    full = PCA().fit(X).explained_variance_[:k]
    noise = getattr(est, "explained_variance_noise_interval_", est.explained_variance_interval_)
    return est.explained_variance_interval_, noise, full, k


def _irls(data, epsilon, seed):
    """LAD by IRLS (p = 1), the defaults (private bounds, an intercept, n_iter and w_max): coefficients, intercept last."""
    import statsmodels.api as sm
    from dpmoments.estimators import PrivateIRLS

    X, y, *known = data
    ranges = dict(ranges=known[0], response_range=known[1]) if known else {}
    est = PrivateIRLS(epsilon=epsilon, delta=DELTA, level=LEVEL, rng=seed, **ranges).fit(X, y)
    full = np.asarray(sm.QuantReg(y, sm.add_constant(X, has_constant="add")).fit(q=0.5).params)
    interval = np.c_[est.coef_interval_, est.intercept_interval_]
    z = 1.6448536269514722  # the 90% normal quantile
    noise = np.stack([est.coef_ - z * est.coef_noise_se_, est.coef_ + z * est.coef_noise_se_])
    noise = np.c_[noise, est.intercept_interval_]  # the intercept's noise-only part is not kept apart
    return interval, noise, np.r_[full[1:], full[0]], None


ANALYSES = {"covariance": _covariance, "PCA eigenvalues": _pca, "IRLS coefficients": _irls}


def _regressions():
    """name -> (draw(rng) -> (X, y), population LAD coefficients or None): real data in raw units, one simulation."""
    from sklearn import datasets as skd
    import statsmodels.api as sm

    def frame(name, target, drop=()):
        data = getattr(sm.datasets, name).load_pandas().data.drop(columns=list(drop)).select_dtypes("number")
        return data.drop(columns=[target]).to_numpy(float), data[target].to_numpy(float)

    diabetes = skd.load_diabetes(scaled=False)
    real = {"diabetes (raw): y": (diabetes.data, diabetes.target), "randhie: lncoins": frame("randhie", "lncoins"),
            "macrodata: realinv": frame("macrodata", "realinv", ("year", "quarter")),
            "grunfeld: invest": frame("grunfeld", "invest")}
    beta = np.array([1.0, -2.0, 0.5, 0.0])

    def laplace(rng, n=5000):
        X = rng.standard_normal((n, 4)) * [1.0, 0.5, 2.0, 1.0]
        return X, X @ beta + rng.laplace(size=n)

    cases = [(name, (lambda rng, d=d: d), None) for name, d in real.items()]
    # the same tables with per-column ranges: each column's exact min and max, given for free (the oracle a
    # statistician's documented ranges approach)
    cases += [(name + ", ranges", (lambda rng, d=d: (*d, _oracle_ranges(d[0]), (d[1].min(), d[1].max()))), None)
              for name, d in real.items()]
    return cases + [("Laplace errors (sim.)", laplace, beta)]


def _oracle_ranges(X):
    return {j: (lo, hi) for j, (lo, hi) in enumerate(zip(X.min(axis=0), X.max(axis=0))) if lo < hi}


def _selected(argv_analyses):
    return {k: v for k, v in ANALYSES.items() if not argv_analyses or k.split()[0].lower() in argv_analyses}


def _population(analysis, sigma, extra):
    if analysis == "IRLS coefficients":
        return np.r_[sigma, 0.0]  # the simulation's intercept is 0
    if analysis == "covariance":
        return sigma[extra]
    return np.linalg.eigvalsh(sigma)[::-1][:extra]


class _Tally:
    def __init__(self):
        self.hold, self.hold_pop, self.excl, self.excl_miss = [], [], 0, 0
        self.width, self.noise_width, self.ratio, self.infinite, self.refused, self.fits = [], [], [], 0, 0, 0
        self.withheld, self.entries = 0, 0

    def add(self, interval, noise, full, pop=None):
        lo, hi = interval
        self.fits += 1
        self.infinite += int(np.sum(np.isinf(lo) | np.isinf(hi)))
        printed = ~(np.isnan(lo) | np.isnan(hi))  # withheld (NaN): the entry says 'biased' instead
        self.withheld += int((~printed).sum())
        self.entries += int(printed.size)
        lo, hi, full, noise = lo[printed], hi[printed], full[printed], noise[:, printed]
        pop = None if pop is None else pop[printed]
        holds = (lo <= full) & (full <= hi)
        self.hold.extend(holds.tolist())
        if pop is not None:
            self.hold_pop.extend(((lo <= pop) & (pop <= hi)).tolist())
        excludes = (lo > 0) | (hi < 0)
        self.excl += int(excludes.sum())
        self.excl_miss += int((excludes & ~holds).sum())
        # Widths relative to the full-data value and to the noise-only width, over the entries where those are not
        # 0: a graphical lasso's partial correlation set exactly to 0 (in the full data, or in every noise draw) has
        # no relative width, and dividing by a floor printed 1e+299.
        sized, noisy = np.abs(full) > 0, (noise[1] - noise[0]) > 0
        self.width.extend(((hi - lo)[sized] / np.abs(full[sized])).tolist())
        self.noise_width.extend(((noise[1] - noise[0])[sized] / np.abs(full[sized])).tolist())
        self.ratio.extend(((hi - lo)[noisy] / (noise[1] - noise[0])[noisy]).tolist())

    def row(self, name, analysis, epsilon):
        def share(xs):
            return f"{np.mean(xs):.2f}" if xs else "-"

        miss = f"{self.excl_miss / self.excl:.2f} ({self.excl})" if self.excl else "- (0)"
        finite = [w for w in self.width if np.isfinite(w)]
        return [name, analysis, f"{epsilon:g}", share(self.hold), share(self.hold_pop), miss,
                f"{np.median(finite):.3g}" if finite else "-", f"{np.median(self.noise_width):.3g}"
                if self.noise_width else "-",
                f"{np.median(self.ratio):.2f}" if self.ratio else "-", self.infinite,
                f"{self.withheld / self.entries:.2f}" if self.entries else "-", f"{self.refused}/{self.fits + self.refused}"]


def _run_case(name, draw, sigma, analysis, epsilon, seeds):
    tally = _Tally()
    for seed in seeds:
        rng = np.random.default_rng(10_000 + seed)
        X, known = draw(rng), {}
        if isinstance(X, Ranged):
            X, known = X[0], {"ranges": X[1]}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                interval, noise, full, extra = ANALYSES[analysis](X, epsilon, seed, **known)
        except ValueError as err:  # a refusal (too few rows for a private choice at this epsilon)
            tally.refused += 1
            log(f"  {name} {analysis} eps={epsilon:g} seed={seed}: refused ({str(err)[:80]})")
            continue
        pop = None if sigma is None else _population(analysis, sigma, extra)
        tally.add(interval, noise, full, pop)
    return tally.row(name, analysis, epsilon)


def run(quick=False):
    """Coverage of the 90% intervals of covariance and PCA, defaults only, real data and simulations."""
    seeds = range(int(os.environ.get("COVERAGE_FITS") or (4 if quick else 20)))  # more fits: rarer events
    cases = [(name, (lambda rng, X=X: X), None) for name, X in _real().items()]
    cases += [(name, draw, sigma) for name, (draw, sigma) in _simulations(2000 if quick else 5000).items()]
    binary, sigma = _simulations(2000 if quick else 5000)["0/1 columns (sim.)"]
    cases.append(("0/1 columns, ranges 0:1 (sim.)", lambda rng: Ranged((binary(rng), {j: (0, 1) for j in range(5)})),
                  sigma))  # as an opened table's one-hot columns carry them
    columns = ["data", "analysis", "epsilon", "hold full", "hold pop.", "excl. 0 miss (n)", "width / |full|",
               "noise-only width / |full|", "width / noise-only", "inf", "withheld", "refused"]
    tables = []
    only = [a for a in os.environ.get("COVERAGE_ANALYSES", "").lower().split(",") if a]
    data = [a for a in os.environ.get("COVERAGE_DATA", "").lower().split(",") if a]
    cases = [c for c in cases if not data or any(a in c[0].lower() for a in data)]
    for analysis in ([] if only == ["structure"] else _selected(only)):
        table = Table(f"{analysis}: 90% intervals, defaults, delta = {DELTA:g}, {len(seeds)} seeded fits each",
                      columns)
        regressions = [c for c in _regressions() if not data or any(a in c[0].lower() for a in data)]
        for name, draw, sigma in (regressions if analysis.startswith("IRLS") else cases):
            for epsilon in chosen_epsilons():
                t0 = time.process_time()
                table.rows.append(_run_case(name, draw, sigma, analysis, epsilon, seeds))
                log(f"{analysis} {name} eps={epsilon:g}: {time.process_time() - t0:.1f} s CPU  {table.rows[-1][3:7]}")
        table.notes.append("Real data: the fits are redrawn on the same rows (seeds); simulations draw fresh rows "
                           "each time, so 'hold pop.' includes sampling variability.")
        tables.append(table)
    if not only or "structure" in only:  # PCA's components, the graphical lasso, ridge precision
        from .coverage_structure import run as run_structure

        tables += run_structure(quick, chosen_epsilons())
    return tables
