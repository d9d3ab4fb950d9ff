"""Small real tables split over 2 and 3 sites at epsilon = 1: refused without ranges, run with the ranges a user knows.

``python -m benchmarks small_sites [--quick]``. The small tables of ``small_tables`` (iris 150 rows, wine 178,
macrodata 203, grunfeld 220; raw units, the coverage benchmark's columns), their rows shuffled once and dealt
round-robin to 2 or 3 CAPE sites, with the defaults (``row_norm="auto"``, ``center="private"``) at epsilon = 1,
delta = 1e-6. Without ranges: what the plan's refusal names (the epsilon at which the choosing steps run, and
whether it names every column's range), and the same with a public row bound (the location steps' own floor: the
least a row bound read from their releases could reach, as one machine's reused bound). With every column's range (stated wide from each column's units and scale,
rounded outward, as a user who knows the data would: ``RANGES`` below; each holds every row, so nothing is clipped
to it): the share of fits that ran, and of the covariance's 90% intervals the share that hold the full-data value
(``np.cov(bias=True)`` of all rows), the median width over that value's size, and one machine's (all rows, the same
ranges, ``PrivateCovariance``) beside it.
"""

import re
import warnings

import numpy as np

from .timing import Table, log

EPSILON, DELTA = 1.0, 1e-6
TABLES = ("iris", "wine", "macrodata", "grunfeld")
RANGES = {  # per column, in the coverage benchmark's column order
    "iris": [(0, 10)] * 4,  # centimetres: sepals and petals under 10 cm
    "wine": [(0, 20), (0, 10), (0, 5), (0, 40), (0, 200), (0, 5), (0, 6), (0, 1), (0, 5), (0, 15), (0, 2), (0, 5),
             (0, 2000)],
    "macrodata": [(0, 15000), (0, 10000), (0, 2500), (0, 1200), (0, 12000), (0, 250), (0, 2000), (0, 20), (0, 15),
                  (150, 350), (-10, 15), (-10, 15)],
    "grunfeld": [(0, 2000), (0, 7000), (0, 2500), (1935, 1954)],
}


def _split(X, sites):
    rows = X[np.random.default_rng(0).permutation(len(X))]
    return [rows[i::sites] for i in range(sites)]


def _refusal(parts, row_norm="auto"):
    """What the plan's refusal names at ``EPSILON``; ``row_norm`` a public number: the location steps' own floor (a
    public bound is read from no histogram), the least any reuse of their releases as the row bound could reach."""
    from dpmoments.multisite import Site, run_cape

    try:
        run_cape([Site(f"s{i}", P, row_norm=row_norm, center="private") for i, P in enumerate(parts)],
                 epsilon=EPSILON, delta=DELTA, rng=0)
        return "runs", "-"
    except ValueError as err:
        found = re.search(r"runs from epsilon ([0-9.e+-]+)", str(err))
        return (found.group(1) if found else "?"), ("yes" if "every column's range (ranges=)" in str(err) else "no")


def _intervals(fit, S):
    from dpmoments.estimators import PrivateCovariance

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = fit(PrivateCovariance(epsilon=EPSILON, delta=DELTA))
    lo, hi = np.asarray(est.covariance_interval_)
    iu = np.triu_indices_from(S)
    held = (lo[iu] <= S[iu]) & (S[iu] <= hi[iu])
    size = np.abs(S[iu])
    return held, np.median((hi - lo)[iu][size > 0] / size[size > 0])


def _ranged(name, X, parts, seeds):
    from dpmoments.multisite import Site, run_cape

    S = np.cov(X, rowvar=False, bias=True)
    ranges = dict(enumerate(RANGES[name]))
    held, widths, ran = [], [], 0
    for seed in seeds:
        sites = [Site(f"s{i}", P, row_norm="auto", center="private", ranges=ranges) for i, P in enumerate(parts)]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                release, _ = run_cape(sites, epsilon=EPSILON, delta=DELTA, rng=seed)
        except ValueError as err:
            log(f"{name}: refused with ranges: {err}")
            continue
        ran += 1
        h, w = _intervals(lambda est: est.fit_release(release), S)
        held.append(h)
        widths.append(w)
    if not ran:
        return f"0/{len(seeds)}", "-", "-"
    return f"{ran}/{len(seeds)}", f"{np.mean(np.concatenate(held)):.2f}", f"{np.median(widths):.3g}"


def _one_machine(name, X, seeds):
    from dpmoments.estimators import PrivateCovariance

    S = np.cov(X, rowvar=False, bias=True)
    ranges = dict(enumerate(RANGES[name]))
    runs = [_intervals(lambda est: PrivateCovariance(epsilon=EPSILON, delta=DELTA, ranges=ranges, rng=seed).fit(X),
                       S) for seed in seeds]
    return f"{np.mean(np.concatenate([r[0] for r in runs])):.2f}", f"{np.median([r[1] for r in runs]):.3g}"


def run(quick=False):
    from .coverage import _real

    real = _real()
    seeds = range(3 if quick else 10)
    table = Table(f"Small tables across CAPE sites, defaults, epsilon = {EPSILON:g}, delta = {DELTA:g}, "
                  f"{len(seeds)} seeds", ["data", "rows x columns", "sites", "without ranges: runs from epsilon",
                                          "a public row bound: runs from epsilon", "names ranges", "with ranges: ran", "hold full", "width / |full|",
                                          "one machine, ranges: hold full", "one machine: width / |full|"])
    for name in TABLES:
        X = real[next(k for k in real if k.startswith(name))]
        for sites in (2, 3):
            parts = _split(X, sites)
            least, named = _refusal(parts)
            location_alone = _refusal(parts, row_norm=1.0)[0]
            ran, held, width = _ranged(name, X, parts, seeds)
            one_held, one_width = _one_machine(name, X, seeds)
            table.rows.append([name, f"{X.shape[0]} x {X.shape[1]}", sites, least, location_alone, named, ran, held, width, one_held,
                               one_width])
            log(f"small_sites {name} x{sites}: {table.rows[-1][3:]}")
    table.notes += ["hold full: share of the covariance's 90% intervals (upper triangle) that hold the full-data "
                    "value; width / |full|: median over fits of the median interval width over |full-data value|",
                    "a public row bound: the location steps' own floor (no bound histogram): the least epsilon a "
                    "row bound read from the location's releases (one machine's reused bound) could reach",
                    "ranges (RANGES in benchmarks/small_sites.py) stated wide from the columns' units, each holding "
                    "every row: the sites clip nothing to them"]
    return [table]
