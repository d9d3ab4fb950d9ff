"""``dpmoments select`` on real tables in raw units: ``python -m benchmarks select_real [--quick]``.

For each table (statsmodels' randhie, fair, star98, macrodata; scikit-learn's diabetes in raw
units) the command line runs as a new user would, with nothing but the target, epsilon and (for the
tables with more than 10 columns) ``--max-size 3``: private bounds, private radius, ``phi``
'theorem' ("defaults"); and again with the ranges a statistician could state for every column, the
target's included (``--ranges``; the stated ranges of ``benchmarks/ranges.py``: from the
documentation for randhie, fair and diabetes, the column's order of magnitude as a stand-in for
the others), which make the bounds free. Its choice is compared with two non-private answers on the
same rows and the same candidate family: best subset by BIC (ordinary least squares with an
intercept on every candidate) and the LASSO path (``LassoLarsIC(criterion="bic")`` on standardised
columns). Before the data-independent certification of Q_R, ``select`` refused some of these runs
(exit 2) depending on the raw rows; the "refused" column counts exits other than 0: now only the
refusals that depend on n alone (too few rows for the private bounds' draws) remain.
"""

import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from .ranges import DIABETES, FAIR, RANDHIE, _magnitude
from .timing import Table

EPSILONS = (1.0, 4.0)
REFUSED = "refused"
MAX_SIZE = 3  # for the tables with more than 10 columns: C(21, <=3) = 1561 models for star98


def _tables():
    import statsmodels.api as sm
    from sklearn.datasets import load_diabetes

    return {
        "randhie": (sm.datasets.randhie.load_pandas().data, "mdvis"),
        "diabetes (raw)": (load_diabetes(as_frame=True, scaled=False).frame, "target"),
        "fair": (sm.datasets.fair.load_pandas().data, "affairs"),
        "macrodata": (sm.datasets.macrodata.load_pandas().data, "realinv"),
        "star98": (sm.datasets.star98.load_pandas().data, "NABOVE"),
    }


def _family(d, max_size):
    return [m for s in range(1, min(d, max_size) + 1) for m in itertools.combinations(range(d), s)]


def _best_subset(X, y, family):
    """The candidate with the least BIC, n log(RSS / n) + (|M| + 1) log n, of OLS with an intercept."""
    n = len(y)
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    bic = []
    for m in family:
        beta, *_ = np.linalg.lstsq(Xc[:, m], yc, rcond=None)
        rss = float(np.sum((yc - Xc[:, m] @ beta) ** 2))
        bic.append(n * math.log(rss / n) + (len(m) + 1) * math.log(n))
    return tuple(family[int(np.argmin(bic))])


def _lasso_path(X, y):
    from sklearn.linear_model import LassoLarsIC

    Z = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    return tuple(int(j) for j in np.flatnonzero(LassoLarsIC(criterion="bic").fit(Z, y).coef_))


def _jaccard(a, b):
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 1.0


def _stated(name, df):
    stated = {"randhie": RANDHIE, "fair": FAIR, "diabetes (raw)": {**DIABETES, "target": (0, 400)}}.get(name)
    return stated or _magnitude(df)


def _select(path, target, eps, seed, max_size, ranges):
    argv = [sys.executable, "-m", "dpmoments", "select", str(path), "--target", target, "--epsilon", f"{eps:g}",
            "--seed", str(seed), "--json", "--out", str(path.parent / f"out-{eps:g}-{seed}"), "--force"]
    if max_size is not None:
        argv += ["--max-size", str(max_size)]
    if ranges:
        argv += ["--ranges", ",".join(f"{c}={lo:g}:{hi:g}" for c, (lo, hi) in ranges.items())]
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    if proc.returncode != 0:
        return REFUSED, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    chosen = json.loads(proc.stdout)["analysis"]["selected_index"]  # None: withheld as within the noise
    return (None if chosen is None else tuple(chosen)), None


def run(quick=False):
    seeds = range(1 if quick else 3)
    table = Table(f"dpmoments select (defaults: private bounds and radius, phi 'theorem') against the non-private "
                  f"answers, {len(seeds)} seed(s) per cell",
                  ["table (n x d)", "bounds", "epsilon", "refused", "withheld as noise", "= best subset",
                   "Jaccard vs best subset", "Jaccard vs LASSO path", "private choices", "best subset", "LASSO path"])
    reasons = set()
    with tempfile.TemporaryDirectory() as tmp:
        for name, (df, target) in _tables().items():
            df = df.astype(float)
            X, y = df.drop(columns=[target]).to_numpy(), df[target].to_numpy()
            d = X.shape[1]
            max_size = MAX_SIZE if d > 10 else None
            family = _family(d, max_size or d)
            subset, lasso = _best_subset(X, y, family), _lasso_path(X, y)
            path = Path(tmp) / f"{name.split()[0]}.csv"
            df.to_csv(path, index=False)
            for (mode, ranges), eps in itertools.product((("defaults", None), ("ranges", _stated(name, df))),
                                                         EPSILONS):
                runs = [_select(path, target, eps, seed, max_size, ranges) for seed in seeds]
                picks = [pick for pick, _ in runs]
                reasons.update(why for _, why in runs if why)
                ran = [p for p in picks if p != REFUSED]
                named = [p for p in ran if p is not None]
                table.rows.append([
                    f"{name} ({len(y)} x {d})", mode, f"{eps:g}", f"{len(picks) - len(ran)}/{len(seeds)}",
                    f"{len(ran) - len(named)}/{len(seeds)}" if ran else "-",
                    f"{sum(m == subset for m in named)}/{len(named)}" if named else "-",
                    f"{np.mean([_jaccard(m, subset) for m in named]):.2f}" if named else "-",
                    f"{np.mean([_jaccard(m, lasso) for m in named]):.2f}" if named else "-",
                    "; ".join(str(list(m)) for m in named) or "-", str(list(subset)), str(list(lasso))])
    table.notes += [
        "refused: runs that exited non-zero (before this change, 'could not certify every Q_R ... within "
        "qp_iterations' on some seeds, depending on the rows; with the defaults, tables under about 500 rows are "
        "refused for too few rows for the private bounds' draws, which depends on n only); withheld: the run's "
        "choice was within the selection noise and the command named no model",
        f"tables with more than 10 columns: --max-size {MAX_SIZE} (the 'all' family would exceed 20,000 models); "
        "the non-private answers use the same family (best subset) or none (the LASSO path)",
        "columns are 0-based indices of the non-target columns in file order",
    ] + [f"a refusal said: {why}" for why in sorted(reasons)]
    return [table]
