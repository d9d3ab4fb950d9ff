"""Deprecated: :mod:`dpmoments.multisite` replaces this package (kept for one release).

The names users called keep working and warn; the in-process engine's internals
(``InProcessEngine``, ``NoiseGenerator``, ``SiteMessage``, ``FactorMessage``) became
:class:`~dpmoments.multisite.InProcessTransport`, :func:`~dpmoments.multisite.deal` and
:class:`~dpmoments.multisite.Reply`. Note the new default: the noise is calibrated so that
the guarantee against the aggregator meets ``(epsilon, delta)`` (``target="aggregator"``);
pass ``target="per-site"`` for the papers' calibration.
"""

import warnings

from ..multisite import (TRUST, Aggregator, DistributedResult, EgressRefused, JointView, MessageRefused, NoisePlan,
                         NoiseShare, ProtocolAborted, ProtocolReport, Site, SiteFailure, SiteReport, UnequalSolution,
                         egress_guard, joint_view, run_cape, run_cape_unequal, run_conventional, run_dpdispca,
                         run_local, run_pooled, run_secure_aggregation, solve_unequal, spend_per_site)

warnings.warn("dpmoments.distributed is deprecated: use dpmoments.multisite (the same names); this alias is "
              "removed in the next release.", DeprecationWarning, stacklevel=2)

__all__ = ["Site", "Aggregator", "NoiseShare", "MessageRefused", "egress_guard", "EgressRefused", "SiteFailure",
           "ProtocolAborted", "run_conventional", "run_cape", "run_cape_unequal", "run_secure_aggregation",
           "run_local", "run_dpdispca", "run_pooled", "DistributedResult", "TRUST", "NoisePlan", "JointView",
           "SiteReport", "ProtocolReport", "joint_view", "spend_per_site", "UnequalSolution", "solve_unequal"]

_MOVED = {"InProcessEngine": "dpmoments.multisite.InProcessTransport", "NoiseGenerator": "dpmoments.multisite.deal",
          "SiteMessage": "dpmoments.multisite.Reply", "FactorMessage": "dpmoments.multisite.Reply"}


def __getattr__(name):
    if name in _MOVED:
        raise AttributeError(f"dpmoments.distributed.{name} was replaced by {_MOVED[name]}.")
    raise AttributeError(f"module 'dpmoments.distributed' has no attribute {name!r}")
