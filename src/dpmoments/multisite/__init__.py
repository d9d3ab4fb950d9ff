"""Multi-site releases: sites keep their rows; a Release comes out (layer 3).

The wing in one package. Parties: :class:`Site` (holds data; its one door,
:meth:`Site.handle`, lets out only guarded statistics or a fixed error code; it answers
each step of each plan once and owns its budget, :class:`SiteLedger`), the trusted
dealer (:func:`deal`: CAPE's zero-sum shares, out of band) and the untrusted
:class:`Aggregator`. A :class:`Plan` is built once from public facts and shipped (with
``row_norm="auto"`` it starts with a bound step of noisy histograms, :mod:`~dpmoments.multisite.bounds`, and
with ``center="private"`` with location steps of noisy per-coordinate counts, :mod:`~dpmoments.multisite.location`); the
aggregator's run (:func:`run_plan`) is written once and drives any :class:`Transport`:
:class:`InProcessTransport` (default), Flower (:mod:`~dpmoments.multisite.flower`) or gRPC
(:mod:`~dpmoments.multisite.grpc_transport`).

Every run produces :class:`~dpmoments.Release` objects, so every estimator fits
from them with ``fit_release``; :mod:`.analyses` adds the multi-release ones (tensor
moments, IRLS). The headline guarantee is the one that holds against the aggregator, and
by default the noise is calibrated to meet the budget there (``target="aggregator"``).

>>> import numpy as np
>>> from dpmoments.multisite import Site, run_cape
>>> rng = np.random.default_rng(0)
>>> sites = [Site(f"s{i}", rng.normal(size=(500, 3)) / 4, row_norm=1.0) for i in range(4)]
>>> release, report = run_cape(sites, epsilon=1.0, delta=1e-5, rng=1)
>>> release.second_moment.shape, release.n
((3, 3), 2000)
>>> round(report.guarantee.epsilon, 6), report.claimed.epsilon < 1.0
(1.0, True)
"""

from .. import _lazy

# Imported on first use: a site, the dealer or --help needs a few of these, never all (with SciPy).
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "aggregator": ("Aggregator",),
    "bounds": ("AutoBounds",),
    "location": ("AutoLocation",),
    "analyses": ("ANALYSES",),
    "api": ("DistributedResult", "check_sites", "irls", "release_tensor_moments", "run", "run_cape",
            "run_cape_unequal", "run_conventional", "run_dpdispca", "run_local", "run_pooled", "run_rounds",
            "run_secure_aggregation"),
    "dealer": ("Bundle", "deal", "deal_files", "read_bundle", "write_bundle"),
    "ledger": ("SiteLedger",),
    "messages": ("ERRORS", "EgressRefused", "Hello", "MessageRefused", "NoiseShare", "ProtocolAborted", "Query",
                 "Reply", "SiteError", "SiteFailure", "egress_guard", "from_wire", "to_wire"),
    "noise": ("JointView", "NoisePlan", "joint_view"),
    "plan": ("Plan", "Round"),
    "protocols": ("PROTOCOLS", "TRUST"),
    "report": ("AnalysisReport", "ProtocolReport", "SiteReport", "spend_per_site"),
    "run": ("BoundChoice", "LocationChoice", "RunResult", "run_plan"),
    "site": ("Site",),
    "transport": ("Failure", "InProcessTransport", "Transport"),
    "unequal": ("UnequalSolution", "solve_unequal"),
})

__all__ = [
    "Site", "SiteLedger", "Aggregator", "Bundle", "deal", "deal_files", "read_bundle", "write_bundle",
    "Plan", "Round", "PROTOCOLS", "TRUST", "ANALYSES",
    "Transport", "InProcessTransport", "Failure", "run_plan", "RunResult", "AutoBounds", "BoundChoice", "AutoLocation", "LocationChoice",
    "run", "run_rounds", "run_cape", "run_cape_unequal", "run_conventional", "run_secure_aggregation", "run_local",
    "run_dpdispca", "run_pooled", "DistributedResult", "check_sites", "release_tensor_moments", "irls",
    "Query", "Reply", "SiteError", "Hello", "NoiseShare", "ERRORS", "to_wire", "from_wire", "egress_guard",
    "EgressRefused", "MessageRefused", "ProtocolAborted", "SiteFailure",
    "NoisePlan", "JointView", "joint_view", "ProtocolReport", "SiteReport", "AnalysisReport", "spend_per_site",
    "UnequalSolution", "solve_unequal",
]
