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
the full-data value. A second table gives, on the same sites' releases, the mean's released step ``a`` from the
location over the centre's noise sd ``s`` (median over the columns, then the runs; the smallest column's): where
``|a|`` is many ``s`` the centred term is its part linear in the noise, which is why the covariance's one law of
the centre's noise and bias (``estimators/centre_bias_law.py``) is not used across sites (docs/uncertainty.md).
``python -m benchmarks sites_pca [--quick]`` writes ``benchmarks/results/sites_pca.md``.
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
    return [table, _offsets(seeds)]


def _offsets(seeds):
    from dpmoments.estimators.centre_bias import location_offset
    from dpmoments.estimators.diagnostics import _centre_noise_scale as centre_noise_scale
    from dpmoments.multisite import Site
    from dpmoments.multisite.api import analyse

    table = Table(f"The mean's released step from the location over the centre's noise sd, {SITES} CAPE sites, "
                  f"{len(seeds)} seeded runs", ["data", "epsilon", "median |a_j| / s", "smallest |a_j| / s"])
    for name, X in _data():
        for epsilon in EPSILONS:
            medians, least = [], []
            for seed in seeds:
                sites = [Site(f"s{i}", P, center="private", row_norm="auto")
                         for i, P in enumerate(np.array_split(X, SITES))]
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        release = analyse(sites, "covariance", epsilon=epsilon, delta=DELTA, rng=seed)[0]
                except ValueError:
                    continue
                ratio = np.abs(location_offset(release)) / centre_noise_scale(release)
                medians.append(np.median(ratio))
                least.append(np.min(ratio))
            table.rows.append([name, f"{epsilon:g}", f"{np.median(medians):.1f}" if medians else "refused",
                               f"{np.median(least):.1f}" if least else "-"])
    return table
