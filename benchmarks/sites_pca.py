"""Across sites: PCA's eigenvalue lower ends where the private centre may drive a component (issue 25).

Three CAPE sites (the rows split in three, in order), defaults (private centre, ``row_norm="auto"``), the
multi-site covariance release read by ``PrivatePCA(n_components=3, level=0.9, target="sample")``, in three ways:

- **sites**: as the library reads it now: Weyl's and interlacing's lower ends where the centre's term
  ``a d' + d a' + d d'`` (``a`` the mean's released step from the location, ``d`` the centre's error) may reorder
  the spectrum (``estimators/eigenvalue_weyl.py``);
- **sites, first order only**: the same release read as before, with the lower end first order only (a
  diagnosis: the Weyl step left out of the reading, never the release);
- **pooled (one machine)**: the single machine's release of all the rows (``run_pooled``), the reference.

Against the full-data eigenvalues (``np.cov``): the share of 90% intervals that hold them, the entries whose
interval excludes 0 and how many of those miss, withheld and refused runs, and the median lower end and width over
the full-data value. ``python -m benchmarks sites_pca [--quick]`` writes ``benchmarks/results/sites_pca.md``.
"""

import warnings
from unittest import mock

import numpy as np

from .sites_coverage import DELTA, EPSILONS, LEVEL, SITES
from .timing import Table, log

K = 3
READINGS = (("3 CAPE sites", "sites"), ("3 CAPE sites, first order only", "first"),
            ("pooled (one machine)", "pooled"))


def _data():
    import statsmodels.api as sm

    rng = np.random.default_rng(7)
    spiked = rng.standard_normal((3000, 50)) * np.sqrt(np.r_[20.0, 10.0, 5.0, np.ones(47)]) + 3.0
    null = rng.standard_normal((20_000, 100))
    return [("randhie", sm.datasets.randhie.load_pandas().data.to_numpy(float)),
            ("spiked Gaussian d=50 (sim.)", spiked), ("N(0, I) d=100 (sim.)", null)]


def _eigenvalue_interval(X, epsilon, seed, reading):
    from dpmoments.estimators import PrivatePCA
    from dpmoments.moments import BoundBudget
    from dpmoments.multisite import Site, run_pooled
    from dpmoments.multisite.api import analyse

    sites = [Site(f"s{i}", P, center="private", row_norm="auto") for i, P in enumerate(np.array_split(X, SITES))]
    common = dict(epsilon=epsilon, delta=DELTA, rng=seed)
    release = (run_pooled(sites, bound_budget=BoundBudget(), **common) if reading == "pooled"
               else analyse(sites, "covariance", **common))[0]
    pca = PrivatePCA(n_components=K, level=LEVEL, target="sample")
    if reading != "first":
        return pca.fit_release(release).explained_variance_interval_
    with mock.patch("dpmoments.estimators.eigenvalue_budget.WeylCentre", lambda *args, **kwargs: None):
        return pca.fit_release(release).explained_variance_interval_


def _row(name, label, epsilon, X, full, seeds, reading):
    held = n = excludes = wrong = withheld = refused = 0
    lows, widths = [], []
    for seed in seeds:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                interval = _eigenvalue_interval(X, epsilon, seed, reading)
        except ValueError as err:
            refused += 1
            log(f"  {name} {label} eps={epsilon:g} seed={seed}: refused ({str(err)[:80]})")
            continue
        for j in range(K):
            low, high = interval[:, j]
            if np.isnan(low):
                withheld += 1
                continue
            hit = low <= full[j] <= high
            n, held = n + 1, held + hit
            if low > 0:
                excludes, wrong = excludes + 1, wrong + (not hit)
            lows.append(low / full[j])
            widths.append((high - low) / full[j])
    median = (lambda v: f"{np.median(v):.2f}" if v else "-")
    return [name, label, f"{epsilon:g}", f"{held}/{n}", f"{wrong} of {excludes}", withheld, refused,
            median(lows), median(widths)]


def run(quick=False):
    """Eigenvalue intervals across sites, read with and without the Weyl step, and the pooled reference."""
    seeds = range(2 if quick else 4)
    table = Table(f"PCA across {SITES} CAPE sites: the top {K} eigenvalues' {LEVEL:.0%} intervals against the "
                  f"full-data ones, defaults, {len(seeds)} seeded runs each",
                  ["data", "reading", "epsilon", "held", "wrong 'excludes 0'", "withheld", "refused",
                   "median lower end / full", "median width / full"])
    for name, X in _data():
        full = np.sort(np.linalg.eigvalsh(np.cov(X, rowvar=False)))[::-1][:K]
        for epsilon in EPSILONS:
            for label, reading in READINGS:
                table.rows.append(_row(name, label, epsilon, X, full, seeds, reading))
                log(f"sites_pca {name} {label} eps={epsilon:g}: {table.rows[-1][3:]}")
    table.notes.append("'first order only' reads the same release with the Weyl step left out (as the sites' "
                       "intervals were before): a diagnosis, not an interval to use")
    return [table]
