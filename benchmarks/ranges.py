"""Per-column public ranges on real tables in raw units: ``python -m benchmarks ranges [--quick]``.

For each table (statsmodels' randhie, fair, star98, macrodata; scikit-learn's
breast cancer, wine and diabetes in raw units) at epsilon = 1, delta = 1e-6,
``PrivateCovariance`` with:

* ``default``: nothing but epsilon and delta (private centre and row bound);
* ``scale private``: private per-column scales too;
* ``ranges (stated)``: the ranges a statistician could state before seeing the
  data -- 0/1 for indicators, a generous range for the rest. For randhie, fair
  and diabetes they are written below from the data sets' documentation; for
  the others (dozens of columns in mixed units) a stand-in: 0 (or minus the
  same, for signed columns) to the next power of ten above the column's largest
  absolute value, i.e. the column's order of magnitude, up to 10x wider than
  the data (this stand-in reads the data: it is the benchmark's, not a method);
* ``ranges (indicators)``: ranges for the 0/1 columns only, private choices
  for the rest (the mixed case);
* ``ranges (oracle)``: each column's exact minimum and maximum, given for free
  (the target's reference).

Scores, against the data's own covariance (``np.cov(bias=True)``): the
relative Frobenius error, and the share of the pairs with |r| > 0.3 whose
correlation has the right sign; medians over the seeds that ran (a refused run,
too few rows for a private draw, is counted apart). Coverage, with the
intervals for the value on these rows (``target="sample"``, 90%): the share of
the entries (upper triangle, those withheld as biased left out) whose interval
misses the data's value, over all seeds, and the worst miss, as the distance
from the interval's midpoint in half-widths (1 = at its end).
"""

import math
import warnings

import numpy as np

from .timing import Table

EPSILON, DELTA = 1.0, 1e-6

RANDHIE = {"mdvis": (0, 100), "lncoins": (0, math.log(101)), "idp": (0, 1), "lpi": (0, 8), "fmde": (0, 10),
           "physlm": (0, 1), "disea": (0, 60), "hlthg": (0, 1), "hlthf": (0, 1), "hlthp": (0, 1)}
FAIR = {"rate_marriage": (1, 5), "age": (16, 70), "yrs_married": (0, 50), "children": (0, 10),
        "religious": (1, 4), "educ": (6, 20), "occupation": (1, 6), "occupation_husb": (1, 6), "affairs": (0, 100)}
DIABETES = {"age": (0, 100), "sex": (1, 2), "bmi": (10, 60), "bp": (40, 160), "s1": (50, 400), "s2": (0, 300),
            "s3": (10, 120), "s4": (0, 12), "s5": (3, 7), "s6": (40, 200)}


def _tables():
    import statsmodels.api as sm
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

    out = {
        "randhie": (sm.datasets.randhie.load_pandas().data, RANDHIE),
        "fair": (sm.datasets.fair.load_pandas().data, FAIR),
        "star98": (sm.datasets.star98.load_pandas().data, None),
        "macrodata": (sm.datasets.macrodata.load_pandas().data, None),
        "breast cancer": (load_breast_cancer(as_frame=True).data, None),
        "wine": (load_wine(as_frame=True).data, None),
        "diabetes (raw)": (load_diabetes(as_frame=True, scaled=False).data, DIABETES),
    }
    return {name: (df.astype(float), stated or _magnitude(df)) for name, (df, stated) in out.items()}


def _indicator(column):
    return set(np.unique(column)) <= {0.0, 1.0}


def _magnitude(df):
    """The stand-in for documented ranges: 0/1 for indicators, else the column's order of magnitude."""
    ranges = {}
    for name in df:
        x = df[name].to_numpy(dtype=float)
        if _indicator(x):
            ranges[name] = (0.0, 1.0)
            continue
        top = 10.0 ** math.ceil(math.log10(max(np.abs(x).max(), 1e-12)))
        ranges[name] = (-top if x.min() < 0 else 0.0, top)
    return ranges


def _methods(df, stated):
    oracle = {c: (float(df[c].min()), float(df[c].max())) for c in df if df[c].max() > df[c].min()}
    indicators = {c: (0.0, 1.0) for c in df if _indicator(df[c].to_numpy())}
    methods = {"default": {}, "scale private": {"scale": "private"}, "ranges (stated)": {"ranges": stated},
               "ranges (oracle)": {"ranges": oracle}}
    if indicators and len(indicators) < df.shape[1]:
        methods["ranges (indicators)"] = {"ranges": indicators}
    return methods


def _scores(S, C):
    err = np.linalg.norm(C - S) / np.linalg.norm(S)
    sd, sd_hat = np.sqrt(np.diag(S)), np.sqrt(np.abs(np.diag(C)))
    r, r_hat = S / np.outer(sd, sd), C / np.maximum(np.outer(sd_hat, sd_hat), 1e-300)
    big = (np.abs(r) > 0.3) & ~np.eye(len(S), dtype=bool)
    return err, (np.mean(np.sign(r[big]) == np.sign(r_hat[big])) if big.any() else math.nan)


def _coverage(S, est):
    """``(entries whose interval misses S, entries judged, worst |S - midpoint| / half-width)``, upper triangle."""
    lo, hi = est.covariance_interval_
    iu = np.triu_indices(len(S))
    judged = ~getattr(est, "covariance_biased_", np.zeros(S.shape, bool))[iu] & np.isfinite(lo[iu]) & \
        np.isfinite(hi[iu])
    lo, hi, s = lo[iu][judged], hi[iu][judged], S[iu][judged]
    wide = hi > lo  # zero width only where no noise was added (a variance keeps [0, h]: docs/uncertainty.md)
    distance = np.abs(s - (lo + hi) / 2)[wide] / ((hi - lo) / 2)[wide]
    return int(np.sum((s < lo) | (s > hi))), int(judged.sum()), float(distance.max(initial=0.0))


def _fit(df, kwargs, seed):
    from dpmoments.estimators import PrivateCovariance

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return PrivateCovariance(epsilon=EPSILON, delta=DELTA, rng=seed, target="sample", **kwargs).fit(df)
        except ValueError as exc:
            if "too few rows" in str(exc):
                return None
            raise


def run(quick=False):
    seeds = range(2 if quick else 5)
    table = Table(f"Relative covariance error / correlation signs right (|r| > 0.3), epsilon = {EPSILON:g}, "
                  f"delta = {DELTA:g}, median over {len(seeds)} seeds", ["table (n x d)", "method", "relative error",
                                                                         "signs right", "refused", "vs oracle",
                                                                         "outside interval", "worst miss"])
    for name, (df, stated) in _tables().items():
        S = np.cov(df.to_numpy(), rowvar=False, bias=True)
        cells, oracle_error = {}, None
        for method, kwargs in _methods(df, stated).items():
            runs = [est for est in (_fit(df, kwargs, seed) for seed in seeds) if est is not None]
            done = [_scores(S, est.covariance_) for est in runs]
            err = float(np.median([e for e, _ in done])) if done else math.nan
            signs = float(np.median([s for _, s in done])) if done else math.nan
            covered = np.array([_coverage(S, est) for est in runs]).reshape(-1, 3)
            cells[method] = (err, signs, len(seeds) - len(done), covered)
            if method == "ranges (oracle)":
                oracle_error = err
        for method, (err, signs, refused, covered) in cells.items():
            ratio = err / oracle_error if oracle_error and math.isfinite(err) else math.nan
            outside = f"{covered[:, 0].sum() / covered[:, 1].sum():.3f}" if covered[:, 1].sum() else "-"
            worst = f"{covered[:, 2].max():.2f}" if len(covered) else "-"
            table.rows.append([f"{name} ({df.shape[0]} x {df.shape[1]})", method, f"{err:.3g}", f"{signs:.2f}",
                               f"{refused}/{len(seeds)}", f"{ratio:.2f}", outside, worst])
    table.notes += [
        "stated ranges: randhie, fair and diabetes from their documentation (this module); the others 0/1 for "
        "indicators and the column's order of magnitude (0 or -10^k to 10^k) as a stand-in",
        "signs right: share of the pairs with |r| > 0.3 in the data whose released correlation has the same sign",
        "vs oracle: relative error over that of the oracle ranges (the exact min and max, given for free)",
        "outside interval: share of the entries (all seeds) whose 90% interval for the value on these rows "
        "(target='sample') misses it, entries withheld as biased left out; worst miss: the largest distance of the "
        "value from its interval's midpoint, in half-widths (above 1: outside), over the intervals of positive width",
    ]
    return [table]


if __name__ == "__main__":
    print(run()[0].markdown())
