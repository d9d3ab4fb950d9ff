"""``row_norm="auto"`` across sites: the grid's spacing, the bound it gives and the error it costs.

Three CAPE sites, epsilon = 1, delta = 1e-5 per site, the default bound share 0.1 (the
0.95-quantile of the summed noisy histograms, rounded up to a grid edge on 1e-6 to 1e8).
For grid factors 2, sqrt(2) and 1.25 it reports the chosen bound over the exact pooled
0.95-quantile of the row norms (which no party ever computes), and the relative Frobenius
error of the released second moment against the population covariance, beside the oracle
(a public bound equal to the exact pooled 0.95-quantile, given for free with the whole
budget) and a bound 10x too large. Rows: Gaussian and Student t (3 d.o.f.), zero mean,
column scales 1 to 4.
"""

import numpy as np

from .timing import Table, log

SITES, EPS, DELTA, REPS = 3, 1.0, 1e-5, 5
FACTORS = (("2", 2.0), ("sqrt 2", 2.0 ** 0.5), ("1.25", 1.25))


def _rows(kind, n, d, rng):
    scale = np.linspace(1.0, 4.0, d)
    Z = rng.normal(size=(n, d)) if kind == "gaussian" else rng.standard_t(3, size=(n, d)) / np.sqrt(3.0)
    return Z * scale, np.diag(scale**2)


def _error(release, cov):
    return float(np.linalg.norm(release.second_moment - cov) / np.linalg.norm(cov))


def _case(kind, n_s, d, seed):
    from dpmoments.multisite import Site, run_cape
    from dpmoments.multisite.bounds import AutoBounds

    rng = np.random.default_rng(seed)
    parts = [_rows(kind, n_s, d, rng)[0] for _ in range(SITES)]
    cov = _rows(kind, 1, d, rng)[1]
    q95 = float(np.quantile(np.linalg.norm(np.vstack(parts), axis=1), 0.95))  # the oracle's, never the run's
    out = {}
    for label, factor in FACTORS:
        sites = [Site(f"s{i}", X, row_norm="auto") for i, X in enumerate(parts)]
        rel, _ = run_cape(sites, epsilon=EPS, delta=DELTA, rng=seed, bound_budget=AutoBounds(("row_norm",),
                                                                                               factor=factor))
        out[label] = (rel.row_norm / q95, _error(rel, cov))
    for label, R in (("oracle", q95), ("10x", 10 * q95)):
        rel, _ = run_cape([Site(f"s{i}", X, row_norm=R) for i, X in enumerate(parts)], epsilon=EPS, delta=DELTA,
                          rng=seed)
        out[label] = (1.0, _error(rel, cov))
    return out


def _cell(values):
    v = np.asarray(values)
    return f"{np.median(v):.3f} [{v.min():.3f}, {v.max():.3f}]"


def run(quick=False):
    """Multi-site auto bounds: grid factor vs bound error and covariance error (3 CAPE sites)."""
    bound = Table("Chosen bound / exact pooled 0.95-quantile (median [min, max] over seeds)",
                  ["rows", "n per site", "d"] + [f"factor {f}" for f, _ in FACTORS])
    error = Table("Relative Frobenius error of the second moment (median [min, max] over seeds)",
                  ["rows", "n per site", "d"] + [f"auto, factor {f}" for f, _ in FACTORS]
                  + ["oracle bound (free)", "bound 10x too large"])
    reps = 2 if quick else REPS
    for kind in ("gaussian", "student-t"):
        for n_s in ((20_000,) if quick else (20_000, 100_000)):
            for d in (5, 20):
                log(f"multisite_bounds: {kind}, n_s = {n_s}, d = {d}")
                runs = [_case(kind, n_s, d, seed) for seed in range(reps)]
                bound.rows.append([kind, f"{n_s:,}", d] + [_cell([r[f][0] for r in runs]) for f, _ in FACTORS])
                error.rows.append([kind, f"{n_s:,}", d] + [_cell([r[k][1] for r in runs]) for k in
                                                          [f for f, _ in FACTORS] + ["oracle", "10x"]])
    for t in (bound, error):
        t.notes.append(f"{SITES} CAPE sites, epsilon = {EPS:g}, delta = {DELTA:g} per site, bound share 0.1, search "
                       f"range 1e-6 to 1e8; {reps} seeds per row; the oracle bound is the exact pooled quantile, "
                       "given for free with the whole budget.")
    return [bound, error]
