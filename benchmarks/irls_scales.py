"""Why IRLS withholds on real tables: the raw units' scale mismatch, or too few rows for 20 releases?

For statsmodels' randhie (20190 x 9, ``lncoins``), fair (6366 x 8, ``affairs``), anes96 (944 x 10, ``selfLR``), modechoice (840 x 8, ``invt``) and
scikit-learn's diabetes (442 x 10, raw units), :class:`~dpmoments.estimators.irls.PrivateIRLS` with the defaults
at epsilon 4 and 64 (delta 1e-6), on three designs: the raw columns; every column's exact min and max as public
``ranges`` (and the response's); and the columns standardised by their exact (non-private) mean and standard
deviation, an oracle no private per-column scale can beat (what scaling could at best give). Per design: the share
of the coefficients (and intercept) withheld, the eigenvalues of the final B~ raised to the floor (median over the
seeds, of d + 1), and the share of the printed 90% intervals that hold the full-data LAD fit on the same design
(statsmodels' ``QuantReg``), and the fits whose sign-score check found the ``w_max`` knot
(``uncertainty_["w_max_knot"]``). ``python -m benchmarks irls_scales [--quick]`` writes
``benchmarks/results/irls_scales.md``.

A second table: the ``w_max`` knot on few-valued responses (RAND HIE ``lncoins``, fair ``affairs``, exact ranges, so
``w_max`` is in the response's mapped units, where the default is 5) against a continuous control (Laplace errors,
20,000 x 3, exact ranges, the population coefficients (1, -0.5, 0)): ``w_max`` = 5 (the default), 20 and 100.
"""

import warnings

import numpy as np

from .timing import Table, log

EPSILONS = (4.0, 64.0)
W_MAX = ("auto", 20.0, 100.0)
BETA = np.array([1.0, -0.5, 0.0])


def _tables():
    import statsmodels.api as sm
    from sklearn.datasets import load_diabetes

    def frame(name, target):
        f = getattr(sm.datasets, name).load_pandas().data.select_dtypes("number").dropna()
        return f.drop(columns=[target]).to_numpy(float), f[target].to_numpy(float)

    d = load_diabetes(scaled=False)
    return {"randhie: lncoins": frame("randhie", "lncoins"), "fair: affairs": frame("fair", "affairs"), "anes96: selfLR": frame("anes96", "selfLR"),
            "modechoice: invt": frame("modechoice", "invt"), "diabetes (raw): y": (d.data, d.target)}


def _design(X, y, how):
    """The rows the fit sees and its keyword arguments."""
    if how == "standardised (exact, oracle)":
        sd = X.std(0)
        return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0), {}
    if how == "exact ranges":
        return X, {"ranges": {j: (X[:, j].min(), X[:, j].max()) for j in range(X.shape[1])},
                   "response_range": (float(y.min()), float(y.max()))}
    return X, {}


def _lad(X, y):
    from statsmodels.regression.quantile_regression import QuantReg
    params = QuantReg(y, np.column_stack([X, np.ones(len(y))])).fit(q=0.5).params
    return params[:-1], params[-1]


def _cell(X, y, how, epsilon, seeds):
    from dpmoments.estimators.irls import PrivateIRLS
    Xd, kwargs = _design(X, y, how)
    coef, intercept = _lad(Xd, y)
    full = np.r_[coef, intercept]
    withheld, floored, held, knot = [], [], [], 0
    for seed in range(seeds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = PrivateIRLS(epsilon=epsilon, delta=1e-6, rng=seed, **kwargs).fit(Xd, y)
        biased = np.r_[est.coef_biased_, est.intercept_biased_]
        low = np.r_[est.coef_interval_[0], est.intercept_interval_[0]]
        high = np.r_[est.coef_interval_[1], est.intercept_interval_[1]]
        withheld.append(biased.mean())
        knot += bool(est.uncertainty_.get("w_max_knot", {}).get("found"))
        floored.append(est.n_psd_clipped_[-1])
        shown = ~biased & np.isfinite(low)
        held += list((low[shown] <= full[shown]) & (full[shown] <= high[shown]))
    return (f"{np.mean(withheld):.2f}", f"{np.median(floored):g} of {full.size}",
            f"{np.mean(held):.2f} ({len(held)})" if held else "- (0)", f"{knot} of {seeds}")


def _ranged(X, y):
    return {"ranges": {j: (X[:, j].min(), X[:, j].max()) for j in range(X.shape[1])},
            "response_range": (float(y.min()), float(y.max()))}


def _laplace(seed):
    g = np.random.default_rng(100 + seed)
    X = g.normal(size=(20_000, 3))
    return X, X @ BETA + g.laplace(size=20_000)


def _knot_cell(rows, truth, epsilon, w_max, seeds):
    """Withheld, hold (n), wrong 'excludes 0' (n), the printed widths, fits whose knot check fired."""
    from dpmoments.estimators.irls import PrivateIRLS
    withheld, held, wrong, widths, knot = [], [], [], [], 0
    for seed in range(seeds):
        X, y = rows(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = PrivateIRLS(epsilon=epsilon, delta=1e-6, rng=seed, w_max=w_max, **_ranged(X, y)).fit(X, y)
        low, high, biased = est.coef_interval_[0], est.coef_interval_[1], est.coef_biased_
        withheld.append(biased.mean())
        hold = (low <= truth) & (truth <= high)
        held += list(hold[~biased])
        wrong += list(~hold[~biased & ((low > 0) | (high < 0))])
        widths.append(np.where(biased, np.nan, high - low))
        knot += bool(est.uncertainty_.get("w_max_knot", {}).get("found"))
    share = lambda v: f"{np.mean(v):.2f} ({len(v)})" if v else "- (0)"  # noqa: E731
    return np.mean(withheld), share(held), share(wrong), np.array(widths), knot


def _knot_table(seeds):
    tables = _tables()
    cases = [("Laplace errors (sim.), population", _laplace, BETA)]
    for name in ("randhie: lncoins", "fair: affairs"):
        X, y = tables[name]
        cases.append((f"{name}, full-data LAD", lambda seed, X=X, y=y: (X, y), _lad(X, y)[0]))
    table = Table(f"The w_max knot: slopes' 90% intervals, exact ranges, {seeds} seeded fits each",
                  ["data", "epsilon", "w_max", "withheld", "hold (n)", "excl. 0 miss (n)",
                   "width / default's (median)", "knot check fired"])
    for name, rows, truth in cases:
        for epsilon in EPSILONS:
            base = None
            for w_max in W_MAX:
                withheld, held, wrong, widths, knot = _knot_cell(rows, truth, epsilon, w_max, seeds)
                base = widths if base is None else base
                ratio = np.nanmedian(widths / base) if np.isfinite(widths / base).any() else np.nan
                table.rows.append([name, f"{epsilon:g}", "5 (default)" if w_max == "auto" else f"{w_max:g}",
                                   f"{withheld:.2f}", held, wrong, "-" if np.isnan(ratio) else f"{ratio:.2f}",
                                   f"{knot} of {seeds}"])
                log(f"irls_scales {table.rows[-1]}")
    table.notes.append("w_max in the response's mapped units (its range's half-width is 1): the default is 5; width "
                       "ratio per slope printed at both, against the default's in the same seed")
    return table


def run(quick=False):
    seeds = 2 if quick else 5
    table = Table(f"IRLS withheld by design, defaults, delta = 1e-6, {seeds} seeded fits each",
                  ["data", "epsilon", "design", "withheld", "B~ eigenvalues floored (median)",
                   "printed hold full LAD (n)", "knot check fired"])
    for name, (X, y) in _tables().items():
        for epsilon in EPSILONS:
            for how in ("raw", "exact ranges", "standardised (exact, oracle)"):
                table.rows.append([f"{name} ({X.shape[0]} x {X.shape[1]})", f"{epsilon:g}", how,
                                   *_cell(X, y, how, epsilon, seeds)])
                log(f"irls_scales {table.rows[-1]}")
    table.notes += [
        "standardised: centred and divided by the exact standard deviations (not private): an upper bound on what "
        "private per-column scales could give; the LAD fit it is compared with is on the same standardised design.",
        "the floor is 2 sqrt(d) times B's noise sd; a coefficient with over 5% of its square loading on floored "
        "directions is withheld (docs/regression.md)."]
    return [table, _knot_table(seeds)]
