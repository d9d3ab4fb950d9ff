"""Privacy's price: the sample size a private estimate needs to match the non-private one at n = 1e4.

For each analysis, on the standard simulation of its paper, the target is the
mean metric of the **non-private** estimate at ``n = 1e4``; for each private
method at ``(epsilon, delta) = (1, 1e-6)`` (or ``epsilon = 1`` for pure-DP
mechanisms), ``n*`` is the smallest ``n`` at which its mean metric reaches the
target: the grid is walked upwards and ``n*`` interpolated (in ``log n``)
between the last grid point that misses and the first that reaches it.
``n* / 1e4`` is the price of privacy in sample size. Every method sees the
same data sets (common random numbers).

``python -m benchmarks utility [--quick]`` writes ``benchmarks/results/utility.md``.
The designs are in :mod:`benchmarks.utility_gaussian` (covariance, graphical
lasso, PCA), :mod:`benchmarks.utility_models` (tensor mixtures, IRLS, model
selection) and :mod:`benchmarks.utility_external` (diffprivlib, OpenDP).
"""

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .timing import Table, log

N_REF = 10_000
EPSILON, DELTA = 1.0, 1e-6


@dataclass
class Method:
    """One private (or reference) way of computing the analysis: ``fit(n, seed) -> metric``."""

    label: str
    guarantee: str
    fit: Callable
    grid: tuple
    reps: int
    note: str = ""


@dataclass
class Analysis:
    name: str
    metric: str
    higher: bool  # is a larger metric better?
    reference: Callable  # the non-private estimate: (n, seed) -> metric
    reps: int
    methods: list
    design: str
    external: list = field(default_factory=list)  # (library, text) rows measured elsewhere


@dataclass
class Outcome:
    n_star: Optional[float]
    text: str
    at_ref: Optional[float]
    seconds: float


def _mean(fit, n, reps):
    return float(np.mean([fit(n, seed) for seed in range(reps)]))


def _reaches(value, target, higher):
    return value >= target if higher else value <= target


def sample_size(method, target, higher):
    """Walk ``method.grid`` upwards; ``n*`` by log-linear interpolation at the first grid point reaching ``target``."""
    t0, at_ref, previous = time.perf_counter(), None, None
    for n in method.grid:
        value = _mean(method.fit, n, method.reps)
        if n == N_REF:
            at_ref = value
        log(f"    {method.label}: n = {n:,}: {value:.4g} (target {target:.4g})")
        if _reaches(value, target, higher):
            if previous is None:
                return Outcome(n, f"≤ {n:,}", at_ref, time.perf_counter() - t0)
            (n0, v0) = previous
            frac = 1.0 if value == v0 else (target - v0) / (value - v0)
            n_star = math.exp(math.log(n0) + min(max(frac, 0.0), 1.0) * (math.log(n) - math.log(n0)))
            return Outcome(n_star, f"{_round(n_star):,}", at_ref, time.perf_counter() - t0)
        previous = (n, value)
    return Outcome(None, f"> {method.grid[-1]:,}", at_ref, time.perf_counter() - t0)


def _round(x):
    return int(float(f"{x:.2g}"))


def geometric(lo, hi, per_decade=3):
    """A log-spaced grid of integers from ``lo`` to ``hi`` with N_REF on it."""
    k = round(math.log10(hi / lo) * per_decade)
    grid = {int(round(v)) for v in np.geomspace(lo, hi, k + 1)} | ({N_REF} if lo <= N_REF <= hi else set())
    return tuple(sorted(grid))


def evaluate(analysis):
    log(f"{analysis.name}: the non-private reference at n = {N_REF:,} ({analysis.reps} data sets)")
    target = _mean(analysis.reference, N_REF, analysis.reps)
    rows = []
    for method in analysis.methods:
        out = sample_size(method, target, analysis.higher)
        ratio = "–" if out.n_star is None else f"{out.n_star / N_REF:.2g}×"
        at_ref = "–" if out.at_ref is None else f"{out.at_ref:.4g}"
        rows.append([analysis.name, method.label, method.guarantee, at_ref, out.text, ratio, method.reps,
                     f"{out.seconds:.0f}", method.note])
    for library, text in analysis.external:
        rows.append([analysis.name, library, "", "", text, "", "", "", ""])
    return target, rows


def run(quick=False):
    """Privacy's price per analysis: ``n*`` for ours, the papers' mechanisms and diffprivlib / OpenDP."""
    from . import utility_external, utility_gaussian, utility_models

    t0 = time.perf_counter()
    analyses = utility_gaussian.analyses(quick) + utility_models.analyses(quick)
    utility_external.attach(analyses, quick)
    main = Table(title=f"Sample size n* at which the private estimate matches the non-private one at n = {N_REF:,}",
                 columns=["analysis", "method", "guarantee", f"metric at n = {N_REF:,}", "n*", "n* / 1e4",
                          "data sets per n", "seconds", "note"])
    targets = Table(title="Designs and non-private targets", columns=["analysis", "metric", "target at n = 1e4",
                                                                      "simulation"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # noise warnings are the point here; uncertified ones are labelled
        for analysis in analyses:
            target, rows = evaluate(analysis)
            main.rows += rows
            better = "higher" if analysis.higher else "lower"
            targets.rows.append([analysis.name, f"{analysis.metric} ({better} is better)", f"{target:.4g}",
                                 analysis.design])
    main.notes = [
        "n* is interpolated in log n between the last grid point whose mean metric misses the target and the "
        "first that reaches it; '≤ g' means the first grid point g already reaches it, '> g' that the largest "
        "grid point g does not.",
        "Gaussian designs (covariance, graphical lasso, PCA) draw the exact second moment of n rows from its "
        "Wishart law and release it through the library's own calibration and mechanisms "
        "(benchmarks/utility_gaussian.py checks that release against release_second_moment on real rows); "
        "their public bounds clip a row with probability below 1e-5, so clipping is left out.",
        f"Total wall time {time.perf_counter() - t0:.0f} s on the shared 2-core machine (see the load average).",
    ]
    return [main, targets]
