"""``dpmoments select`` with the defaults on small real tables: does it run, and what does it choose?

Tables of 21 to 442 rows in raw units (scikit-learn's diabetes and iris, statsmodels' macrodata, grunfeld and
stackloss), the command line as a new user runs it (the target and epsilon only), at epsilon 1, 2 and 4 over
``SEEDS`` seeds: refused runs, runs whose choice was within the selection noise (no model named), and the named
models against the non-private best subset by BIC on the same rows and family (``select_real._best_subset``).
With ``DPM_BASELINE_SRC=/path/to/other/src`` (label ``DPM_BASELINE_LABEL``) the same cells run on that tree
first (the "before"). ``python -m benchmarks select_small`` writes ``benchmarks/results/select_small.md``.
"""

import os
import tempfile
from pathlib import Path

from .select_real import REFUSED, _best_subset, _family, _select
from .timing import Table, log

SEEDS = 5
EPSILONS = (1.0, 2.0, 4.0)
COLUMNS = {"macrodata": ["realgdp", "realcons", "realgovt", "realdpi", "realinv"],
           "grunfeld": ["value", "capital", "invest"]}


def _tables():
    import statsmodels.api as sm
    from sklearn.datasets import load_diabetes, load_iris

    iris = load_iris(as_frame=True).frame.drop(columns=["target"])
    iris.columns = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
    return {"diabetes (raw)": (load_diabetes(as_frame=True, scaled=False).frame, "target"),
            "iris": (iris, "petal_width"),
            "macrodata": (sm.datasets.macrodata.load_pandas().data[COLUMNS["macrodata"]], "realinv"),
            "grunfeld": (sm.datasets.grunfeld.load_pandas().data[COLUMNS["grunfeld"]], "invest"),
            "stackloss": (sm.datasets.stackloss.load_pandas().data, "STACKLOSS")}


def _trees():
    """``(label, PYTHONPATH or None)``: the baseline tree where given, then this one."""
    base = os.environ.get("DPM_BASELINE_SRC")
    label = os.environ.get("DPM_BASELINE_LABEL", "baseline")
    return ([(f"before ({label})", base)] if base else []) + [("this tree", None)]


def _cell(path, target, eps, src, subset):
    env = dict(os.environ)
    if src:
        os.environ["PYTHONPATH"] = src
    try:
        runs = [_select(path, target, eps, seed, None, None) for seed in range(SEEDS)]
    finally:
        os.environ.clear()
        os.environ.update(env)
    picks = [pick for pick, _ in runs]
    why = next((w for _, w in runs if w), "")
    named = [p for p in picks if p not in (REFUSED, None)]
    ran = [p for p in picks if p != REFUSED]
    return [f"{len(picks) - len(ran)}/{SEEDS}", f"{len(ran) - len(named)}/{SEEDS}",
            f"{sum(m == subset for m in named)}/{len(named)}" if named else "-",
            "; ".join(str(list(m)) for m in named) or "-"], why


def run(quick=False):
    table = Table(f"dpmoments select, defaults, {SEEDS} seeds per cell, against the non-private best subset (BIC)",
                  ["table (n x d)", "tree", "epsilon", "refused", "noise (no model named)", "= best subset",
                   "models named", "best subset"])
    refusals = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (df, target) in _tables().items():
            df = df.astype(float)
            X, y = df.drop(columns=[target]).to_numpy(), df[target].to_numpy()
            subset = _best_subset(X, y, _family(X.shape[1], X.shape[1]))
            path = Path(tmp) / f"{name.split()[0]}.csv"
            df.to_csv(path, index=False)
            for label, src in _trees():
                for eps in EPSILONS:
                    cells, why = _cell(path, target, eps, src, subset)
                    if why:
                        refusals.setdefault(label, set()).add(why)
                    table.rows.append([f"{name} ({len(y)} x {X.shape[1]})", label, f"{eps:g}", *cells,
                                       str(list(subset))])
                    log(f"{name} {label} eps={eps}")
    table.notes += ["columns are 0-based indices of the non-target columns in file order; noise: the run said the "
                    "choice was within the selection noise and named no model"]
    table.notes += [f"{label} refused with: {why}" for label, whys in refusals.items() for why in sorted(whys)]
    return [table]
