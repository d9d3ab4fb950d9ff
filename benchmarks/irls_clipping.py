"""One machine's IRLS at large n: does clipping at the private bounds keep the intervals from covering? (issue 25)

LAD regression (``PrivateIRLS``, defaults: private row and response bounds, an intercept, ``target="population"``)
on ``y = x.beta + b0 + e`` with ``x`` three standard normal columns (or t_4 columns, heavier than a normal's
tails), ``beta = (1, -0.5, 0.25)``, ``b0 = 0.3`` and ``e`` Gaussian or t_3 (median 0: the population LAD
coefficients are ``(beta, b0)``). Two bound rules, the same seeds:

- **0.95-quantile** (before): ``bound_budget=BoundBudget(quantile=0.95)``, the fixed quantile IRLS drew its bounds
  at until this change (5% of the rows clipped at every n);
- **default** (``sampling_quantile``: the larger of about ``sqrt(n)`` clipped rows and twice the norm of one
  iteration's noise at n = 1, as the covariance balances its bound; never more than 5%, lowered only to leave the
  draw's own rank error above it).

Columns: the share of the four 90% intervals (three slopes, intercept) that hold the population value and the
full-data LAD fit's (statsmodels' ``QuantReg`` at q = 0.5), their median width, and the median absolute error of
the noiseless fit (epsilon = inf) at the bounds each rule drew (clipping's own error, with sampling's).
``python -m benchmarks irls_clipping [--quick]`` writes ``benchmarks/results/irls_clipping.md``.
"""

import warnings

import numpy as np

from .timing import Table, log

LEVEL, DELTA = 0.9, 1e-6
BETA, B0 = np.array([1.0, -0.5, 0.25]), 0.3


def _draw(n, errors, rows, rng):
    X = rng.normal(size=(n, BETA.size)) if rows == "normal" else rng.standard_t(4, size=(n, BETA.size))
    e = rng.standard_t(3, size=n) if errors == "t3" else rng.normal(size=n)
    return X, X @ BETA + B0 + e


def _full_data_lad(X, y):
    import statsmodels.api as sm

    params = sm.QuantReg(y, sm.add_constant(X)).fit(q=0.5).params
    return np.r_[params[1:], params[0]]


def _rules():
    from dpmoments.moments.auto_release import BoundBudget

    return {"0.95-quantile (before)": BoundBudget(quantile=0.95), "default (sqrt(n) rows or the noise's balance)": 0.1}


def _fit(X, y, epsilon, seed, bound_budget):
    from dpmoments.estimators import PrivateIRLS

    est = PrivateIRLS(epsilon=epsilon, delta=DELTA, level=LEVEL, rng=seed, bound_budget=bound_budget).fit(X, y)
    exact = PrivateIRLS(epsilon=float("inf"), delta=DELTA, row_norm=est.row_norm_, response_bound=est.response_bound_,
                        w_max=est.w_max_).fit(X, y)
    lo = np.r_[est.coef_interval_[0], est.intercept_interval_[0]]
    hi = np.r_[est.coef_interval_[1], est.intercept_interval_[1]]
    return lo, hi, np.r_[exact.coef_, exact.intercept_]


def _cases(quick):
    if quick:
        return [(30_000, 4.0, "t3", "normal")]
    cases = [(n, eps, errors, "normal") for n in (30_000, 300_000) for eps in (1.0, 4.0) for errors in ("t3", "gauss")]
    return cases + [(n, 4.0, "t3", "t4") for n in (30_000, 300_000)]


def run(quick=False):
    """Coverage of one machine's IRLS intervals at 30,000 and 300,000 rows: the 0.95-quantile bounds, the default."""
    seeds = range(3 if quick else 10)
    table = Table(f"LAD regression (IRLS), one machine, 90% intervals, delta = {DELTA:g}, "
                  f"{len(seeds)} seeded runs each",
                  ["rows", "epsilon", "errors", "x", "bound rule", "hold pop.", "hold full", "median width",
                   "median abs. error of the exact fit at the drawn bounds"])
    truth = np.r_[BETA, B0]
    for n, epsilon, errors, rows in _cases(quick):
        tally = {}
        for seed in seeds:
            X, y = _draw(n, errors, rows, np.random.default_rng(2000 + seed))
            full = _full_data_lad(X, y)
            for name, budget in _rules().items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    lo, hi, exact = _fit(X, y, epsilon, seed, budget)
                tally.setdefault(name, []).append((np.mean((lo <= truth) & (truth <= hi)),
                                                   np.mean((lo <= full) & (full <= hi)), np.median(hi - lo),
                                                   np.median(np.abs(exact - truth))))
        for name, values in tally.items():
            v = np.array(values)
            table.rows.append([f"{n:,}", f"{epsilon:g}", errors, rows, name, f"{v[:, 0].mean():.2f}",
                               f"{v[:, 1].mean():.2f}", f"{np.median(v[:, 2]):.3g}", f"{np.median(v[:, 3]):.3g}"])
            log(f"irls_clipping {table.rows[-1]}")
    table.notes.append("The population LAD coefficients' sampling sd is about 1.36 / sqrt(n) per coefficient with "
                       "t_3 errors (0.008 at 30,000 rows, 0.0025 at 300,000), 1.25 / sqrt(n) with Gaussian ones.")
    return [table]
