"""The site: a Flower ``ClientApp`` that is a thin call into the site-installed dpmoments.

The site operator sets, on its own SuperNode (``--node-config``):

* ``site``        -- the site's name (as in the plan);
* ``data-path``   -- its data file (``.npy`` or numeric ``.csv``); rows never leave;
* ``share-path``  -- its share file from the noise generator (``e_s`` and the plan);
* ``seed``        -- optional, tests only (default: OS entropy for ``g_s``).

Two queries: ``query.describe`` (site name, ``N_s``, ``d``, plan digest: all public)
and ``query.moment`` (the site's :class:`~dpmoments.distributed.SiteMessage`
``A_s + e_s + f_s + g_s``, built by :meth:`~dpmoments.distributed.Site.respond`, so
the egress guard has run). The site takes its local noise ``g_s`` from its *own*
share file's plan, never from the aggregator's request, and refuses a request for
another plan or statistic.
"""

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from ..distributed import NoiseShare, Site, SiteMessage
from .plan import load_share, read_data

__all__ = ["app", "describe_site", "site_message", "pack_message"]

app = ClientApp()


def _config(node_config):
    missing = [k for k in ("site", "data-path", "share-path") if k not in node_config]
    if missing:
        raise ValueError(f"the SuperNode's --node-config lacks {missing} (site, data-path, share-path).")
    return str(node_config["site"]), str(node_config["data-path"]), str(node_config["share-path"])


def _load(node_config):
    name, data_path, share_path = _config(node_config)
    e_share, plan = load_share(share_path, name)
    X = read_data(data_path)
    i = plan.sites.index(name)
    if X.ndim != 2 or X.shape[1] != plan.n_features:
        raise ValueError(f"site {name!r}: data has shape {X.shape}; the plan says {plan.n_features} features.")
    if X.shape[0] != plan.n[i]:
        raise ValueError(f"site {name!r}: data has {X.shape[0]} rows; the plan (public N_s) says {plan.n[i]}.")
    return name, X, e_share, plan


def describe_site(node_config):
    """The public facts a site announces: name, ``N_s``, ``d``, plan digest."""
    name, X, _, plan = _load(node_config)
    return {"site": name, "n": int(X.shape[0]), "n-features": int(X.shape[1]), "digest": plan.digest}


def site_message(node_config, statistic, digest, f=None):
    """This site's :class:`SiteMessage` for the aggregator's request (``f``: its ``f_s`` or None)."""
    name, X, e_share, plan = _load(node_config)
    if digest != plan.digest:
        raise ValueError(f"site {name!r}: the aggregator asked for plan {digest[:12]}, this site holds "
                         f"{plan.digest[:12]}; refused.")
    if statistic != plan.statistic:
        raise ValueError(f"site {name!r}: the plan releases {plan.statistic!r}, not {statistic!r}; refused.")
    noise_plan, _, _ = plan.build()
    g_std = float(noise_plan.g_std[noise_plan.index(name)])
    shares = [e_share]
    if f is not None:
        shares.append(NoiseShare(name, "aggregator", statistic, f))
    seed = node_config.get("seed")
    rng = np.random.default_rng(None if seed is None or int(seed) < 0 else int(seed))
    site = Site(name, X, row_norm=plan.row_norm)
    return site.respond(statistic, shares=shares, g_std=g_std, rng=rng)


def pack_message(msg):
    """The reply content: exactly the fields of one SiteMessage, nothing else."""
    if not isinstance(msg, SiteMessage):
        raise TypeError(f"a site sends only SiteMessage objects; got {type(msg).__name__}.")
    return RecordDict({
        "stat": ArrayRecord({"value": Array(np.array(msg.value))}),
        "meta": ConfigRecord({"site": msg.site, "n": int(msg.n), "statistic": msg.statistic,
                              "n-features": int(msg.n_features)}),
    })


@app.query("describe")
def describe(msg: Message, context: Context) -> Message:
    return Message(RecordDict({"meta": ConfigRecord(describe_site(context.node_config))}), reply_to=msg)


@app.query("moment")
def moment(msg: Message, context: Context) -> Message:
    cfg = msg.content["cfg"]
    f = msg.content["f"]["f"].numpy() if "f" in msg.content else None
    out = site_message(context.node_config, str(cfg["statistic"]), str(cfg["digest"]), f)
    return Message(pack_message(out), reply_to=msg)
