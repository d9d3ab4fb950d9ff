"""Flower deployment of the multi-site protocols (layer 4; optional extra ``dpmoments[flower]``).

One SuperLink (the aggregator's host) and one SuperNode per site. The Flower apps
are thin adapters over the transport-agnostic core :mod:`dpmoments.distributed`:

* :mod:`.noise_generator` -- the trusted dealer: writes one share file per site
  (``e_s``, CAPE's zero-sum shares) and a public ``plan.json``. Share files go to
  the sites *out of band*; they never pass through the aggregator or the SuperLink.
* :mod:`.client_app` -- the site (Flower ``ClientApp``): reads its data file and
  share file from its own node config, answers with a
  :class:`~dpmoments.distributed.SiteMessage` (egress guard) and nothing else.
* :mod:`.server_app` -- the aggregator (Flower ``ServerApp``): collects the site
  messages, combines them with :class:`~dpmoments.distributed.Aggregator` and
  writes the Release and the report with both guarantees (claimed, joint view).
* :mod:`.deploy` -- helpers to start SuperLink/SuperNodes, make a test CA and node
  keys, and submit the run (used by the ``dpmoments site|aggregate`` commands).

Only :mod:`.noise_generator` and :mod:`.plan` work without ``flwr`` installed.
Pinned to flwr 1.41.x (1.42 does not resolve on this project's package index).
"""

from .plan import FlowerPlan, load_plan, load_share
from .noise_generator import deal_shares

__all__ = ["FlowerPlan", "load_plan", "load_share", "deal_shares", "FLWR_SPEC"]

#: The flwr version range the apps were written and tested against.
FLWR_SPEC = ">=1.41,<1.42"
