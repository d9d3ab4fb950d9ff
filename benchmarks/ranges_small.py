"""Where a small table's stated ranges lose to the oracle's: ``python -m benchmarks ranges_small [--quick]``.

scikit-learn's diabetes data in raw units (442 rows), ``PrivateCovariance`` at delta = 1e-6 with the ranges
stated from its documentation (``ranges.DIABETES``) and with the oracle ranges (each column's exact minimum and
maximum, given for free), over epsilon, and without the two-valued ``sex`` column. For each: the median relative
Frobenius error, the drawn row bound R of the standardised rows, the private centre's part of the error
(``||d d^T|| / ||S||``, ``d`` the released centre's error) and which route ran (``ranges alone``: the half-widths are
the scales; ``private scales``: scales drawn within the ranges, which need rows). Entry (i, j)'s noise in the
table's units is ``sigma R^2 h_i h_j``: where the half-widths are the scales, a range wider than the data costs
the square of its over-statement unless R shrinks, and a two-valued column (+-1 in every row) keeps R above 1.
"""

import math
import warnings

import numpy as np

from .ranges import DIABETES
from .timing import Table

DELTA = 1e-6


def _fit(df, ranges, epsilon, seed):
    from dpmoments.estimators import PrivateCovariance

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateCovariance(epsilon=epsilon, delta=DELTA, rng=seed, ranges=ranges).fit(df)


def _cell(df, ranges, epsilon, seeds):
    X = df.to_numpy()
    S = np.cov(X, rowvar=False, bias=True)
    errors, bounds, centres, route = [], [], [], "?"
    for seed in seeds:
        est = _fit(df, ranges, epsilon, seed)
        errors.append(np.linalg.norm(est.covariance_ - S) / np.linalg.norm(S))
        bounds.append(est.release_.row_norm)
        d = est.location_ - X.mean(axis=0)
        centres.append(np.linalg.norm(np.outer(d, d)) / np.linalg.norm(S))
        note = next(p for p in est.release_.postprocessing if p.startswith("public ranges"))
        route = "private scales" if "private scales" in note else "ranges alone"
    return float(np.median(errors)), float(np.median(bounds)), float(np.median(centres)), route


def run(quick=False):
    from sklearn.datasets import load_diabetes

    full = load_diabetes(as_frame=True, scaled=False).data.astype(float)
    seeds = range(2 if quick else 5)
    table = Table(f"diabetes (442 rows), stated ranges against the oracle's, delta = {DELTA:g}, median over "
                  f"{len(seeds)} seeds", ["epsilon", "columns", "stated: error", "oracle: error", "ratio",
                                          "R stated / oracle", "centre's part (stated, oracle)", "route (stated)"])
    runs = [(full, eps) for eps in (1.0, 4.0, 4.5, 8.0, 16.0)] + [(full.drop(columns="sex"), 1.0)]
    for df, eps in runs:
        oracle = {c: (float(df[c].min()), float(df[c].max())) for c in df}
        stated = {c: DIABETES[c] for c in df}
        s, o = _cell(df, stated, eps, seeds), _cell(df, oracle, eps, seeds)
        ratio = s[0] / o[0] if o[0] > 0 else math.nan
        table.rows.append([f"{eps:g}", "all 10" if df.shape[1] == 10 else "without sex", f"{s[0]:.3f}", f"{o[0]:.3f}",
                           f"{ratio:.2f}", f"{s[1]:.2f} / {o[1]:.2f}", f"{s[2]:.3f}, {o[2]:.3f}", s[3]])
    table.notes += ["stated half-widths over the data's (oracle's): 1.0 (sex) to 2.4 (s6)",
                    "error: relative Frobenius error against np.cov(bias=True); R: the row bound drawn on the "
                    "standardised rows"]
    return [table]
