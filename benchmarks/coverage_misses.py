"""Why do covariance intervals that exclude 0 miss the full-data value? Each miss attributed to its cause.

A diagnostic for ``python -m benchmarks coverage`` (issue 25), reading the rows the benchmark has (a
benchmark may; the estimators never do): for every covariance entry whose 90% interval excludes 0 and does
not hold the full-data value, at the defaults and delta = 1e-6, in the release's centre ``c``, bound ``R``
and units:

- **centre bias**: the private centre is off the rows' mean by more than 3 times its noise scale in
  one of the entry's columns (what the error budget counts of the centre is its noise; the
  private mean is of rows clipped about the private *location*, and where that location is still far off
  in a column of small spread -- a tenth of its bound is 'settled' -- the clipped rows pull the centre
  with it: the entry then carries ``(x̄ - c)_i (x̄ - c)_j`` uncounted);
- **loss beyond 2R**: adding back what the rows beyond the clipping-excess release's outer bound ``2R``
  lost (unseen by that release) brings the full-data value into the interval;
- **both**: only the two corrections together bring it into the interval;
- **noise or other**: neither.

``python -m benchmarks coverage_misses`` writes ``benchmarks/results/coverage_misses.md``.
"""

import warnings

import numpy as np

from .coverage import DELTA, LEVEL, _real, _simulations
from .timing import Table, log

CENTRE_SDS = 3.0


def _causes(X, est):
    rel = est.release_
    scale = np.ones(X.shape[1]) if rel.column_scale is None else np.asarray(rel.column_scale)
    Z = X / scale - rel.center
    norms = np.linalg.norm(Z, axis=1)
    outer = np.minimum(1.0, 2.0 * rel.row_norm / np.maximum(norms, 1e-300))
    beyond = (Z * (1.0 - outer**2)[:, None]).T @ Z / len(Z) * np.outer(scale, scale)  # loss beyond 2R, original units
    offset = np.abs(X.mean(axis=0) / scale - rel.center)
    noise = est.uncertainty_["error_budget"]["centre_noise_scale"] or 0.0
    off_centre = offset > CENTRE_SDS * max(noise, 1e-300)
    shift = np.outer(offset, offset) * np.sign(np.outer(X.mean(axis=0) / scale - rel.center,
                                                        X.mean(axis=0) / scale - rel.center)) * np.outer(scale, scale)
    full = np.cov(X, rowvar=False)
    lo, hi = est.covariance_interval_
    counts = {"claims": 0, "misses": 0, "centre bias": 0, "loss beyond 2R": 0, "both": 0, "noise or other": 0}
    for i, j in zip(*np.triu_indices(X.shape[1])):
        if np.isnan(lo[i, j]) or not (lo[i, j] > 0 or hi[i, j] < 0):
            continue
        counts["claims"] += 1
        if lo[i, j] <= full[i, j] <= hi[i, j]:
            continue
        counts["misses"] += 1
        centred = full[i, j] + shift[i, j]  # the entry about the centre: what the budget's centre part expects
        held = [lo[i, j] <= v <= hi[i, j] for v in (centred, full[i, j] - beyond[i, j], centred - beyond[i, j])]
        if (off_centre[i] or off_centre[j]) and held[0]:
            counts["centre bias"] += 1
        elif held[1]:
            counts["loss beyond 2R"] += 1
        elif (off_centre[i] or off_centre[j]) and held[2]:
            counts["both"] += 1
        else:
            counts["noise or other"] += 1
    return counts


def run(quick=False):
    """Attribute every 'excludes 0' miss of the covariance's 90% intervals, epsilon 4, 20 seeded fits."""
    from dpmoments.estimators import PrivateCovariance

    seeds = range(4 if quick else 20)
    cases = [(name, (lambda rng, X=X: X)) for name, X in _real().items()]
    cases += [(name, draw) for name, (draw, _) in _simulations(2000 if quick else 5000).items()]
    columns = ["data", "claims", "misses", "centre bias", "loss beyond 2R", "both", "noise or other"]
    table = Table(f"covariance, epsilon 4, delta = {DELTA:g}: the entries whose 90% interval excludes 0 and misses "
                  f"the full-data value, by cause, {len(seeds)} seeded fits each", columns)
    for name, draw in cases:
        total = dict.fromkeys(columns[1:], 0)
        for seed in seeds:
            X = draw(np.random.default_rng(10_000 + seed))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = PrivateCovariance(epsilon=4.0, delta=DELTA, level=LEVEL, rng=seed).fit(X)
            except ValueError:
                continue
            for key, value in _causes(X, est).items():
                total[key] += value
        table.rows.append([name, *total.values()])
        log(f"coverage_misses {name}: {total}")
    table.notes.append(f"'centre bias': the private centre is more than {CENTRE_SDS:g} noise scales off the rows' mean "
                       "in one of the entry's columns and the interval holds the entry about the centre, (x̄ - c)_i (x̄ - c)_j "
                       "added; 'loss beyond 2R': the interval holds the full-data value less what the rows beyond "
                       "twice the bound lost beyond it; 'both': only both corrections together bring it in. Read from the rows: a diagnostic only.")
    return [table]
