"""Private column scales across sites: ``python -m benchmarks site_scales [--quick]``.

Three CAPE sites (the table's rows dealt round-robin), ``center="private"``, ``row_norm="auto"``, epsilon = 1,
delta = 1e-6, covariance (``dpmoments.multisite.analyse``), 8 seeds (4 with ``--quick``) of the run's rng. Each
release is read by ``PrivateCovariance(level=0.9, target="sample").fit_release`` and scored against the table's
own covariance (``np.cov(bias=True)``): the relative Frobenius error (median, worst, seeds over 1) and the share
of the upper triangle's 90% intervals (withheld entries left out) that hold the full-data value; digest: the
first 8 hex digits of a hash of the seeds' covariances (an unchanged digest: byte-identical releases).

The tables: statsmodels' RAND HIE in raw units with ``scale="private"``, with the public range ``idp`` 0:1 (the
other columns scaled privately beside it), and with the defaults (no column scales: its digest must not move);
a 30000-row table with a 52%-zeros column (the rest 3.26, 3.93 or 4.56) beside a normal, a t3 and a 0/1 column,
``scale="private"``; and a normal table with ``scale="private"``.
"""

import hashlib
import warnings

import numpy as np

from .private_scales import _covered, _normal, _statsmodels, _zero_inflated
from .timing import Table, log

EPSILON, DELTA, LEVEL, SITES = 1.0, 1e-6, 0.9, 3


def _cases():
    randhie = _statsmodels("randhie")
    return [("randhie (20190 x 10)", randhie, {"scale": "private"}),
            ("randhie (20190 x 10)", randhie, {"ranges": [None, None, (0.0, 1.0)] + [None] * 7}),
            ("randhie (20190 x 10)", randhie, {}),
            ("zero-inflated 52% (30000 x 4)", _zero_inflated(30000)[0], {"scale": "private"}),
            ("normal (30000 x 4)", _normal(30000)[0], {"scale": "private"})]


def _fit(X, options, seed):
    from dpmoments.estimators import PrivateCovariance
    from dpmoments.multisite import Site
    from dpmoments.multisite.api import analyse

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sites = [Site(f"s{k}", X[k::SITES], row_norm="auto", center="private", ranges=options.get("ranges"))
                 for k in range(SITES)]
        release, _ = analyse(sites, "covariance", epsilon=EPSILON, delta=DELTA, rng=seed, scale=options.get("scale"))
        return PrivateCovariance(level=LEVEL, target="sample").fit_release(release)


def _options_text(options):
    if options.get("ranges"):
        return "ranges idp=0:1"
    return ", ".join(f"{k}={v}" for k, v in options.items()) or "defaults"


def run(quick=False):
    seeds = range(4 if quick else 8)
    table = Table(f"Private column scales across {SITES} sites, covariance, epsilon = {EPSILON:g}, {len(seeds)} seeds",
                  ["table", "options", "median error", "worst error", "seeds over 1", "coverage", "digest"])
    for name, X, options in _cases():
        log(f"{name} {options}")
        S = np.cov(X, rowvar=False, bias=True)
        digest, errors, held, judged = hashlib.sha256(), [], 0, 0
        for seed in seeds:
            est = _fit(X, options, seed)
            digest.update(np.ascontiguousarray(est.covariance_).tobytes())
            errors.append(float(np.linalg.norm(est.covariance_ - S) / np.linalg.norm(S)))
            h, j = _covered(S, est)
            held, judged = held + h, judged + j
        table.rows.append([name, _options_text(options), f"{np.median(errors):.3g}", f"{max(errors):.3g}",
                           f"{sum(e > 1 for e in errors)}/{len(seeds)}", f"{held / judged:.3f}" if judged else "-",
                           digest.hexdigest()[:8]])
    table.notes += ["error: relative Frobenius error against the table's own covariance",
                    "coverage: share of the 90% intervals (target='sample', upper triangle, all seeds, withheld "
                    "entries left out) that hold the full-data value",
                    "digest: sha256 of the seeds' covariance_ bytes, first 8 hex digits"]
    return [table]
