"""Per-column public ranges across sites: the covariance of a real table split over three sites.

For randhie and fair (statsmodels, n >= 5000, ranges from their documentation: ``benchmarks/ranges.py``)
the rows are split into three sites (consecutive thirds) and CAPE releases the covariance about a private
centre with a private row bound (the defaults) at epsilon = 1 per site: without ranges, with private scales
and no ranges, with ranges for the 0/1 columns only (the mixed case: private scales for the others), with the
stated ranges, and with the oracle ranges (the exact min and max, for free); beside them, the pooled reference
(one machine's release of every row, whose ranged route also draws private scales within the ranges).
Relative Frobenius error against the table's covariance and the share of the pairs with |r| > 0.3 whose
sign is right, median over the seeds.
"""

import math
import warnings

import numpy as np

from .ranges import DELTA, EPSILON, _scores, _tables
from .timing import Table

TABLES = ("randhie", "fair")


def _sites(X, ranges):
    from dpmoments.multisite import Site

    return [Site(f"site{k}", part, row_norm="auto", center="private", ranges=ranges)
            for k, part in enumerate(np.array_split(X, 3))]


def _covariance(X, ranges, protocol, seed, scale=None):
    from dpmoments.estimators import PrivateCovariance
    from dpmoments.multisite import run_pooled
    from dpmoments.multisite.api import analyse

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            sites = _sites(X, ranges)
            release = run_pooled(sites, epsilon=EPSILON, delta=DELTA, rng=seed, scale=scale)[0] \
                if protocol == "pooled" else analyse(sites, "covariance", protocol=protocol, epsilon=EPSILON,
                                                     delta=DELTA, rng=seed, scale=scale)[0]
        except ValueError as exc:
            if "too few rows" in str(exc):
                return None
            raise
        return PrivateCovariance().fit_release(release).covariance_


def run(quick=False):
    seeds = range(1 if quick else 5)
    table = Table(f"Covariance across three sites, epsilon = {EPSILON:g}, delta = {DELTA:g} per site, median over "
                  f"{len(seeds)} seeds", ["table (n x d)", "method", "relative error", "signs right", "refused"])
    for name in TABLES:
        df, stated = _tables()[name]
        X = df.to_numpy()
        S = np.cov(X, rowvar=False, bias=True)
        oracle = {j: (float(X[:, j].min()), float(X[:, j].max())) for j in range(X.shape[1])}
        stated = {list(df.columns).index(c): span for c, span in stated.items()}
        indicators = {j: span for j, span in stated.items() if span[1] - span[0] == 1} or None
        for method, ranges, protocol, scale in (
                ("cape, no ranges", None, "cape", None), ("cape, no ranges, scale private", None, "cape", "private"),
                ("pooled, no ranges, scale private", None, "pooled", "private"),
                ("cape, 0/1 ranges only", indicators, "cape", None),
                ("pooled, 0/1 ranges only", indicators, "pooled", None),
                ("cape, stated ranges", stated, "cape", None), ("cape, oracle ranges", oracle, "cape", None),
                ("pooled, stated ranges", stated, "pooled", None)):
            done = [_scores(S, C) for C in (_covariance(X, ranges, protocol, seed, scale) for seed in seeds)
                    if C is not None]
            err = float(np.median([e for e, _ in done])) if done else math.nan
            signs = float(np.median([s for _, s in done])) if done else math.nan
            table.rows.append([f"{name} ({X.shape[0]} x {X.shape[1]})", method, f"{err:.3g}", f"{signs:.2f}",
                               f"{len(seeds) - len(done)}/{len(seeds)}"])
    table.notes += [
        "stated ranges: from the tables' documentation (benchmarks/ranges.py); oracle: the exact min and max, free",
        "across sites the private scales (0/1 columns their range's, other ranged columns within 0.05 to 2 "
        "half-widths, unranged ones their own) are half the interquartile range of the last location step's noisy "
        "histograms (free); the pooled reference draws the single machine's",
    ]
    return [table]


if __name__ == "__main__":
    print(run()[0].markdown())
