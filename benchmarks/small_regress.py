"""Small real tables through regression and model selection with the defaults: which run, and what the
regression intervals hold.

Five statsmodels tables in raw units (engel 235 rows, longley 16, stackloss 21, macrodata 203 with four of its
columns, grunfeld 220 with three), each with its response: for ``PrivateIRLS(epsilon, delta=1e-6)`` (LAD, the
command line's ``dpmoments regress``) and ``PrivateModelSelection(epsilon)`` (``dpmoments select``) at epsilon 1
and 4, whether the defaults run or are refused (and from which epsilon the refusal says they run); where the
regression runs, over ``SEEDS`` seeded fits, the 90% intervals that hold the full-data LAD fit (statsmodels
``QuantReg`` at q = 0.5, with an intercept), those that miss it, and those withheld (NaN: floored directions).

``python -m benchmarks small_regress`` writes ``benchmarks/results/small_regress.md``; run it with ``PYTHONPATH``
at another tree's ``src`` for that tree's numbers.
"""

import re
import warnings

import numpy as np

from .timing import Table, log

SEEDS = 10
EPSILONS = (1.0, 4.0)
DELTA = 1e-6
TABLES = {"engel": ("foodexp", None), "longley": ("TOTEMP", None), "stackloss": ("STACKLOSS", None),
          "macrodata": ("realinv", ["realgdp", "realcons", "realgovt"]),
          "grunfeld": ("invest", ["value", "capital"])}


def _table(name):
    import statsmodels.api as sm

    frame = getattr(sm.datasets, name).load_pandas().data.select_dtypes("number")
    target, columns = TABLES[name]
    X = frame[columns] if columns else frame.drop(columns=[target])
    return X.to_numpy(float), frame[target].to_numpy(float)


def _lad(X, y):
    import statsmodels.api as sm

    fit = sm.QuantReg(y, np.column_stack([X, np.ones(len(y))])).fit(q=0.5)
    return np.asarray(fit.params)


def _refused(fit):
    """``""`` where ``fit()`` runs, else the refusal's "from epsilon E" (public facts only)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "", fit()
    except ValueError as err:
        found = re.search(r"runs from epsilon ([0-9.e+-]+)", str(err))
        return f"refused (runs from {found.group(1) if found else '?'})", None


def _regress(X, y, eps, truth):
    from dpmoments.estimators import PrivateIRLS

    held = missed = withheld = runs = 0
    status = ""
    for seed in range(SEEDS):
        status, est = _refused(lambda: PrivateIRLS(epsilon=eps, delta=DELTA, rng=seed).fit(X, y))
        if est is None:
            return status
        runs += 1
        lo = np.append(est.coef_interval_[0], est.intercept_interval_[0])
        hi = np.append(est.coef_interval_[1], est.intercept_interval_[1])
        nan = np.isnan(lo) | np.isnan(hi)
        withheld += int(nan.sum())
        inside = (lo <= truth) & (truth <= hi)
        held += int(inside[~nan].sum())
        missed += int((~inside[~nan]).sum())
    return f"ran {runs}/{SEEDS}: {held} held, {missed} missed, {withheld} withheld"


def _select(X, y, eps):
    from dpmoments.estimators import PrivateModelSelection

    status, _ = _refused(lambda: PrivateModelSelection(epsilon=eps, rng=0).fit(X, y))
    return status or "ran"


def run(quick=False):
    table = Table(f"Small tables, defaults (regress: delta = {DELTA:g}, {SEEDS} seeds)",
                  ["table", "rows", "epsilon", "regress: 90% intervals against the full-data LAD fit", "select"])
    for name in TABLES:
        X, y = _table(name)
        truth = _lad(X, y)
        for eps in EPSILONS:
            table.rows.append([name, len(y), eps, _regress(X, y, eps, truth), _select(X, y, eps)])
            log(f"{name} eps={eps}")
    return [table]
