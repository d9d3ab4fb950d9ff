"""Small real tables with the defaults: from which epsilon each runs, and what its intervals hold there.

The six small tables of the coverage benchmark (iris 150 rows, wine 178, macrodata 203, grunfeld 220,
star98 303, diabetes 442; raw units, as a new user loads them). For each, the smallest epsilon at which the
defaults run (``PrivateCovariance(epsilon, delta=1e-6)``: the private location and row bound that PCA and the
graphical lasso draw too), read from the refusal at epsilon = 1, which names it from the public ``n`` and grid
alone; 1 where it runs. Then the coverage benchmark's rows (``benchmarks/coverage.py``: 20 seeded fits of
covariance and PCA, 6 of the graphical lasso and ridge precision with 20 draws) at that epsilon: the share of
90% intervals that hold the full-data value, and the share of the entries whose interval excludes 0 that miss it. Beside them, the coverage benchmark's simulations (Gaussian, t with 3 degrees
of freedom, 0/1 columns) at 350 rows and epsilon = 1.

``python -m benchmarks small_tables`` writes ``benchmarks/results/small_tables.md``; run it with
``PYTHONPATH`` at another tree's ``src`` for that tree's numbers (the comparison in the CHANGELOG).
"""

import math
import os
import re
import warnings

from .timing import Table, log

SIMULATED_ROWS = 350
TABLES = ("iris", "wine", "macrodata", "grunfeld", "star98", "diabetes")
DELTA = 1e-6


def _smallest_epsilon(X):
    """1.0 where the defaults run at epsilon = 1, else the epsilon their refusal names (public facts only)."""
    from dpmoments.estimators import PrivateCovariance

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            PrivateCovariance(epsilon=1.0, delta=DELTA, rng=0).fit(X)
        return 1.0
    except ValueError as err:
        found = re.search(r"runs from epsilon ([0-9.e+-]+)", str(err))
        return float(found.group(1)) if found else math.nan


def run(quick=False):
    from . import coverage, coverage_structure
    from .coverage import _real, _run_case

    seeds = range(4 if quick else 20)
    real = _real()
    starts = Table(f"Where the defaults run (delta = {DELTA:g})", ["data", "rows x columns", "runs from epsilon"])
    rows = Table(f"covariance and PCA eigenvalues: 90% intervals, defaults, delta = {DELTA:g}, {len(seeds)} seeded "
                 "fits each", ["data", "analysis", "epsilon", "hold full", "hold pop.", "excl. 0 miss (n)",
                               "width / |full|", "noise-only width / |full|", "width / noise-only", "inf",
                               "withheld", "refused"])
    structure = None
    for short in TABLES:
        name = next(k for k in real if k.startswith(short))
        X = real[name]
        least = _smallest_epsilon(X)
        starts.rows.append([name, f"{X.shape[0]} x {X.shape[1]}", f"{least:g}"])
        epsilons = [least] if math.isfinite(least) else []  # 1 where it runs; below it every fit is refused
        for analysis in ("covariance", "PCA eigenvalues"):
            for epsilon in epsilons:
                rows.rows.append(_run_case(name, lambda rng, X=X: X, None, analysis, epsilon, seeds))
                log(f"{name} {analysis} eps={epsilon:g}: {rows.rows[-1][3:6]}")
        if short == "iris":  # the structure benchmark leaves iris out (4 columns)
            continue
        os.environ["COVERAGE_DATA"] = short
        try:
            tables = coverage_structure.run(quick, tuple(epsilons))
        finally:
            del os.environ["COVERAGE_DATA"]
        if structure is None:
            structure = tables
        else:
            for into, more in zip(structure, tables):
                into.rows.extend(more.rows)
    from .coverage import _simulations

    for name, (draw, sigma) in _simulations(SIMULATED_ROWS).items():  # fresh rows each fit: 'hold pop.' too
        for analysis in ("covariance", "PCA eigenvalues"):
            rows.rows.append(_run_case(f"{name}, {SIMULATED_ROWS} rows", draw, sigma, analysis, 1.0, seeds))
    rows.notes.append("The real tables' fits are redrawn on the same rows (seeds); the simulations (the coverage "
                      f"benchmark's, at {SIMULATED_ROWS} rows: refused at epsilon 1 before the choices were widened) "
                      "draw fresh rows each fit. A refused fit (too few rows for a private choice at that epsilon) "
                      "is counted in 'refused'. Columns as in benchmarks/coverage.py.")
    assert coverage.DELTA == DELTA
    return [starts, rows, *(structure or [])]
