"""Deprecated: the Flower deployment is part of :mod:`dpmoments.multisite` (kept for one release).

The transport is :mod:`dpmoments.multisite.flower`; plans are :class:`dpmoments.multisite.Plan`
(built once, shipped in ``plan.json`` and in each site's share file); the deployment helpers
are :mod:`dpmoments.multisite.deploy` and :mod:`dpmoments.multisite.tls`.
"""

import json
import warnings
from pathlib import Path
from types import SimpleNamespace

from ..multisite import Plan, Round, deal_files, read_bundle
from ..multisite import deploy as _deploy
from ..multisite import tls as _tls

warnings.warn("dpmoments.flower is deprecated: use dpmoments.multisite (Plan, deal_files, read_bundle, deploy, "
              "tls); this alias is removed in the next release.", DeprecationWarning, stacklevel=2)

__all__ = ["FlowerPlan", "load_plan", "load_share", "deal_shares", "deploy", "FLWR_SPEC"]

#: The flwr version range the apps were written and tested against.
FLWR_SPEC = ">=1.41,<1.42"

deploy = SimpleNamespace(**{n: getattr(_deploy, n) for n in _deploy.__all__},
                         **{n: getattr(_tls, n) for n in _tls.__all__})


def FlowerPlan(sites, n, n_features, epsilon, delta, row_norm, statistic="second", neighbours="replace-one",  # noqa: N802
               calibration="analytic", protocol="cape", **kwargs):
    """A :class:`~dpmoments.multisite.Plan` of one release (the old constructor's arguments)."""
    return Plan.build(protocol, sites, n, n_features=n_features, row_norm=row_norm, epsilon=epsilon, delta=delta,
                      rounds=(Round(statistic),), neighbours=neighbours, calibration=calibration, **kwargs)


def load_plan(path):
    """Read a public ``plan.json``."""
    return Plan.from_dict(json.loads(Path(path).read_text()))


def load_share(path, site=None):
    """Read a share file: ``(bundle, plan)``."""
    bundle = read_bundle(path, site)
    return bundle, bundle.plan


def deal_shares(plan, out_dir, rng=None):
    """Write ``plan.json`` and one share file per site (see :func:`dpmoments.multisite.deal_files`)."""
    return deal_files(plan, out_dir, rng)
