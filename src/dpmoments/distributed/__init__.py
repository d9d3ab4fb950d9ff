"""Multi-site protocols: sites keep their rows; a Release comes out (layer 3).

Roles (:mod:`.roles`): :class:`Site` (holds data, sends only noisy statistics
through the egress guard), :class:`NoiseGenerator` (trusted dealer of CAPE's
zero-sum shares), :class:`Aggregator` (untrusted). Messages (:mod:`.messages`)
are frozen dataclasses of small arrays. Protocols (:mod:`.protocols`) run on the
in-process engine (:mod:`.engine`) and return ``(release, report)``: a foundation
:class:`~dpmoments.Release` any estimator can ``fit_release`` from, whose
guarantee is the honest *joint-view* one (:mod:`.accounting`), and a
:class:`ProtocolReport` with the paper's per-site claim beside it.

>>> import numpy as np
>>> from dpmoments.distributed import Site, run_cape
>>> rng = np.random.default_rng(0)
>>> sites = [Site(f"s{i}", rng.normal(size=(500, 3)) / 4, row_norm=1.0) for i in range(4)]
>>> release, report = run_cape(sites, epsilon=1.0, delta=1e-5, rng=1)
>>> release.second_moment.shape, release.n
((3, 3), 2000)
>>> report.joint_view.epsilon > report.claimed.epsilon
True
"""

from .accounting import JointView, NoisePlan, ProtocolReport, SiteReport, joint_view, spend_per_site
from .engine import InProcessEngine
from .messages import (
    EgressRefused,
    FactorMessage,
    MessageRefused,
    NoiseShare,
    ProtocolAborted,
    SiteFailure,
    SiteMessage,
    egress_guard,
)
from .protocols import (
    TRUST,
    DistributedResult,
    run_cape,
    run_cape_unequal,
    run_conventional,
    run_dpdispca,
    run_local,
    run_pooled,
    run_secure_aggregation,
)
from .roles import Aggregator, NoiseGenerator, Site
from .unequal import UnequalSolution, solve_unequal

__all__ = [
    "Site", "NoiseGenerator", "Aggregator",
    "NoiseShare", "SiteMessage", "FactorMessage",
    "MessageRefused", "egress_guard",
    "EgressRefused", "SiteFailure", "ProtocolAborted",
    "InProcessEngine",
    "run_conventional", "run_cape", "run_cape_unequal", "run_secure_aggregation", "run_local", "run_dpdispca",
    "run_pooled", "DistributedResult", "TRUST",
    "NoisePlan", "JointView", "SiteReport", "ProtocolReport", "joint_view", "spend_per_site",
    "UnequalSolution", "solve_unequal",
]
