"""Across sites: which part of the error budget makes the covariance intervals wide? (issue 25)

The same runs as ``benchmarks/sites_coverage.py`` (three CAPE sites, defaults: private centre, ``row_norm="auto"``,
the clipping-excess round) and the pooled single-machine release, each interval's width over the noise-only
one (median over the entries and runs), with every part, then with one part taken out of the *reading* of the
same release (never the release itself): sampling (``target="sample"``), the clipping-excess part (the release
without it), the private centre's noise (its mean's noise scale read as 0). A part whose removal narrows the
interval most is the one that dominates. ``rows clipped`` and the clipping-excess noise sd over the second
moment's noise scale are from the releases.
The second table tries the two levers the multi-site plan has: the clipping-excess round's share
(``AutoBounds(bias=...)``, 0.1 by default, as the single machine's ``BoundBudget.bias``) and the bound step's
quantile (``"auto"``, the highest its noise can place, against a fixed 0.95), with coverage beside the width.
``python -m benchmarks sites_width [--quick]`` writes ``benchmarks/results/sites_width.md``.
"""

import dataclasses
import warnings

import numpy as np

from .sites_coverage import DELTA, EPSILONS, LEVEL, _data, _fit, _release, _sites, tally_rows
from .timing import Table, log


def _without(release, label):
    return dataclasses.replace(release, parts=tuple(p for p in release.parts if p.label != label))


def _centre_read_as_exact(release):
    return dataclasses.replace(release, parts=tuple(
        dataclasses.replace(p, released=dict(p.released, noise_scale=0.0)) if p.label == "mean" else p
        for p in release.parts))


VARIANTS = (("every part", lambda r: r, "population"), ("without sampling", lambda r: r, "sample"),
            ("without clipping", lambda r: _without(r, "clipping excess"), "population"),
            ("without the centre", _centre_read_as_exact, "population"))


def _ratios(release):
    from dpmoments.estimators import PrivateCovariance

    iu = np.triu_indices(release.n_features)
    out = []
    for _, read, target in VARIANTS:
        est = PrivateCovariance(level=LEVEL, target=target).fit_release(read(release))
        width = (est.covariance_interval_[1] - est.covariance_interval_[0])[iu]
        noise = (est.covariance_noise_interval_[1] - est.covariance_noise_interval_[0])[iu]
        out.append(np.nanmedian(width / noise))
    excess = next((p.released for p in release.parts if p.label == "clipping excess"), None)
    out.append(np.nan if excess is None else excess["noise_sd"] / release.noise_scale)
    return out


def run(quick=False):
    """Width over the noise-only width with each part of the error budget, then without each, across sites."""
    seeds = range(2 if quick else 5)
    table = Table(f"covariance across 3 CAPE sites and pooled: median width / noise-only width, {LEVEL:.0%} "
                  f"intervals, defaults, {len(seeds)} seeded runs each",
                  ["data", "release", "epsilon", *[v[0] for v in VARIANTS], "clipping-excess noise sd / noise scale"])
    for name, draw, _ in _data(False):
        for epsilon in EPSILONS:
            for label, method in (("3 CAPE sites", "sites"), ("pooled (one machine)", "pooled")):
                values = []
                for seed in seeds:
                    X = draw(np.random.default_rng(10_000 + seed))
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        values.append(_ratios(_release(method, X, epsilon, seed)))
                v = np.nanmedian(np.array(values), axis=0)
                table.rows.append([name, label, f"{epsilon:g}", *[f"{x:.2f}" for x in v]])
                log(f"sites_width {name} {label} eps={epsilon:g}: {table.rows[-1][3:]}")
    table.notes.append("each 'without' column reads the same release with one part left out (a diagnosis, not an "
                       "interval to use): the part whose removal narrows the interval most dominates its width")
    return [table, _levers(seeds)]


LEVERS = (("excess share 0.1, quantile auto (default)", {}), ("excess share 0.2", {"bias": 0.2}),
          ("excess share 0.3", {"bias": 0.3}), ("quantile 0.95", {"quantile": 0.95}))


def _with_lever(lever, X, epsilon, seed):
    """The covariance of a CAPE run whose bound step has ``lever`` (too few rows for it: refused, counted)."""
    from dpmoments.multisite.api import analyse
    from dpmoments.multisite.bounds import AutoBounds

    return _fit(analyse(_sites(X), "covariance", epsilon=epsilon, delta=DELTA, rng=seed,
                        bound_budget=AutoBounds(("row_norm",), **lever))[0])


def _levers(seeds):
    table = Table(f"the plan's levers across 3 CAPE sites: covariance, 90% intervals, {len(seeds)} seeded runs each",
                  ["data", "plan", "epsilon", "hold full", "hold pop.", "excl. 0 miss (n)", "width / |full|",
                   "noise-only width / |full|", "width / noise-only", "inf", "withheld", "refused"])
    table.rows = tally_rows(_data(False), LEVERS, seeds, _with_lever, "sites_width levers")
    table.notes.append("'width / |full|' is the absolute width (median over entries of width over |full-data value|), "
                       "which a larger excess share lowers while the noise-only width grows with the smaller share "
                       "left to the second moment")
    return table
