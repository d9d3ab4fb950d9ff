"""Private column scales on the columns real tables have: ``python -m benchmarks private_scales [--quick]``.

Each row fits ``PrivateCovariance`` (delta = 1e-6, ``target="sample"``, 90% intervals) over 30 seeds of the
estimator (the table fixed) and scores it against the table's own covariance (``np.cov(bias=True)``):

* relative error: the Frobenius norm of the error over that of the full-data covariance (median, and the worst);
* "> 10x off": the seeds whose error exceeds 10 times the median error of the same table with the public oracle
  ranges (each column's exact minimum and maximum, given for free: the reference, its own row);
* coverage: the share of the upper triangle's entries (all seeds; entries withheld as biased left out) whose 90%
  interval holds the full-data value;
* digest: the first 8 hex digits of a hash of every seed's ``covariance_`` bytes (a seeded release that did not
  change keeps its digest).

The tables: a simulated 2000-row table of five 0/1 columns (P(1) = .02, ranged 0:1, .9, .99, .3 and a balanced
.5: the others are scaled privately beside the ranged one), at epsilon = 2; a hostile zero-inflated column (52%
zeros, the rest in {3.26, 3.93, 4.56}, as randhie's ``lncoins``) beside a normal, a t3 and a 0/1 column, 5000
rows, ``scale="private"``, epsilon = 1; a table of several 0/1 columns (P(1) = .5, .5, .4, .6, .15) beside two
normal ones, 3000 rows, ``scale="private"``, epsilon = 1; statsmodels' RAND HIE with ``ranges={"idp": (0, 1)}``,
with ``scale="private"`` and with the defaults (no private scales: its digest must not move); statsmodels' fair
with ``scale="private"``; and a normal table with ``scale="private"`` (no such column).
"""

import hashlib
import warnings

import numpy as np

from .timing import Table, log

DELTA, LEVEL = 1e-6, 0.9


def _zero_one(n=2000):
    X = (np.random.default_rng(0).random((n, 5)) < [0.02, 0.9, 0.99, 0.3, 0.5]).astype(float)
    return X, {0: (0.0, 1.0)}


def _zero_inflated(n=5000):
    rng = np.random.default_rng(1)
    z = np.where(rng.random(n) < 0.52, 0.0, rng.choice([3.26, 3.93, 4.56], size=n))
    X = np.column_stack([z, rng.normal(10, 2, n), rng.standard_t(3, n), (rng.random(n) < 0.3).astype(float)])
    return X, None


def _several_zero_one(n=3000):
    rng = np.random.default_rng(2)
    B = (rng.random((n, 5)) < [0.5, 0.5, 0.4, 0.6, 0.15]).astype(float)
    return np.column_stack([B, rng.normal(0, 1, n), rng.normal(50, 5, n) + 3 * B[:, 0]]), None


def _normal(n=3000):
    rng = np.random.default_rng(3)
    return rng.normal(size=(n, 4)) @ np.array([[2, 0, 0, 0], [1, 1, 0, 0], [0, 0.5, 3, 0], [0, 0, 1, 0.2]]), None


def _statsmodels(name):
    import statsmodels.api as sm

    return getattr(sm.datasets, name).load_pandas().data.astype(float).to_numpy()


def _cases():
    """(table, X, epsilon, the options)."""
    zero_one, ranged = _zero_one()
    zi, _ = _zero_inflated()
    several, _ = _several_zero_one()
    normal, _ = _normal()
    randhie, fair = _statsmodels("randhie"), _statsmodels("fair")
    return [
        ("five 0/1 columns (2000 x 5)", zero_one, 2.0, {"ranges": ranged}),
        ("zero-inflated 52% (5000 x 4)", zi, 1.0, {"scale": "private"}),
        ("several 0/1 (3000 x 7)", several, 1.0, {"scale": "private"}),
        ("randhie (20190 x 10)", randhie, 1.0, {"ranges": {2: (0.0, 1.0)}}),
        ("randhie (20190 x 10)", randhie, 1.0, {"scale": "private"}),
        ("randhie (20190 x 10)", randhie, 1.0, {}),
        ("fair (6366 x 9)", fair, 1.0, {"scale": "private"}),
        ("normal (3000 x 4)", normal, 1.0, {"scale": "private"}),
    ]


def _fit(X, epsilon, options, seed):
    from dpmoments.estimators import PrivateCovariance

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateCovariance(epsilon=epsilon, delta=DELTA, rng=seed, target="sample", level=LEVEL,
                                 **options).fit(X)


def _covered(S, est):
    lo, hi = est.covariance_interval_
    iu = np.triu_indices(len(S))
    judged = ~getattr(est, "covariance_biased_", np.zeros(S.shape, bool))[iu] & np.isfinite(lo[iu] + hi[iu])
    s = S[iu][judged]
    return int(np.sum((lo[iu][judged] <= s) & (s <= hi[iu][judged]))), int(judged.sum())


def _oracle(X):
    return {j: (float(X[:, j].min()), float(X[:, j].max())) for j in range(X.shape[1]) if np.ptp(X[:, j]) > 0}


def _options_text(options):
    if "ranges" in options:
        return "ranges " + ", ".join(f"{j}={lo:g}:{hi:g}" for j, (lo, hi) in options["ranges"].items())
    return ", ".join(f"{k}={v}" for k, v in options.items()) or "defaults"


def run(quick=False):
    seeds = range(4 if quick else 30)
    table = Table(f"Private column scales, PrivateCovariance, delta = {DELTA:g}, {len(seeds)} seeds",
                  ["table", "epsilon", "options", "median error", "worst error", "> 10x off", "coverage",
                   "digest"])
    oracle = {}
    for name, X, epsilon, options in _cases():
        log(f"{name} {options}")
        S = np.cov(X, rowvar=False, bias=True)
        key = (name, epsilon)
        if key not in oracle:
            ref = [np.linalg.norm(_fit(X, epsilon, {"ranges": _oracle(X)}, s).covariance_ - S) for s in seeds]
            oracle[key] = float(np.median(ref)) / np.linalg.norm(S)
            table.rows.append([name, f"{epsilon:g}", "oracle ranges (reference)", f"{oracle[key]:.3g}",
                               f"{max(ref) / np.linalg.norm(S):.3g}", "-", "-", "-"])
        digest, errors, held, judged = hashlib.sha256(), [], 0, 0
        for seed in seeds:
            est = _fit(X, epsilon, options, seed)
            digest.update(np.ascontiguousarray(est.covariance_).tobytes())
            errors.append(float(np.linalg.norm(est.covariance_ - S) / np.linalg.norm(S)))
            h, j = _covered(S, est)
            held, judged = held + h, judged + j
        off = sum(e > 10 * oracle[key] for e in errors)
        table.rows.append([name, f"{epsilon:g}", _options_text(options), f"{np.median(errors):.3g}",
                           f"{max(errors):.3g}", f"{off}/{len(seeds)}",
                           f"{held / judged:.3f}" if judged else "-", digest.hexdigest()[:8]])
    table.notes += [
        "error: relative Frobenius error against the table's own covariance; > 10x off: seeds over 10 times the "
        "oracle ranges' median error on the same table",
        "coverage: share of the 90% intervals (target='sample', upper triangle, all seeds, withheld entries left "
        "out) that hold the full-data value",
        "digest: sha256 of the seeds' covariance_ bytes, first 8 hex digits (unchanged digest: byte-identical)",
        f"{len(seeds)} seeds of the estimator's rng; each table fixed",
    ]
    return [table]


if __name__ == "__main__":
    print(run()[0].markdown())
