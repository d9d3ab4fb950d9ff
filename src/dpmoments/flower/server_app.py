"""The aggregator: a Flower ``ServerApp`` over the core's :class:`~dpmoments.distributed.Aggregator`.

Run config (``flwr run ... --run-config``):

* ``plan-path``  -- the public ``plan.json`` from the noise generator (required);
* ``out-dir``    -- where the result is written (required);
* ``min-sites`` (2), ``on-dropout`` (``"complete"`` or ``"abort"``), ``colluders`` (0);
* ``wait-s`` (60) -- how long to wait for the sites to connect;
* ``timeout-s`` (120) -- how long to wait for the replies of each round;
* ``seed`` (-1: OS entropy) -- the aggregator's ``f_s`` and top-up noise (tests only).

Rounds: ``query.describe`` maps Flower's opaque node ids to site names and checks that
every site holds a share of *this* plan (digest); ``query.moment`` sends each site its
``f_s`` and collects one :class:`~dpmoments.distributed.SiteMessage` per site.

Dropout: a site that never connects, errs, or does not answer in ``timeout-s`` has
received its ``e_s`` (dealt before the run), so it counts as failed *after the deal*.
The core's accounting then completes with the survivors (the missing ``e_s`` leaves
*extra* noise, reported in ``report.extra_std``; the aggregator tops up if a claim
needs it) or aborts cleanly (``on-dropout="abort"``, or fewer than ``min-sites``):
``aborted.json`` is written, no release, and the run fails. Never less noise than claimed.

Writes ``<statistic>_moment.npy`` and ``report.json`` (the Release's metadata, the
:class:`~dpmoments.distributed.ProtocolReport` with the claimed and joint-view guarantees,
the plan and its digest).
"""

import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.serverapp import Grid, ServerApp

from .._rng import as_generator
from ..distributed import Aggregator, ProtocolAborted, SiteMessage
from ..distributed.engine import Outcome
from ..distributed.messages import describe
from ..distributed.completion import abort_if_needed, finish
from .plan import load_plan

__all__ = ["app", "run_aggregator", "DEFAULTS"]

DEFAULTS = {"min-sites": 2, "on-dropout": "complete", "colluders": 0, "wait-s": 60.0, "timeout-s": 120.0,
            "seed": -1}

POLL_S = 0.1  # seconds between pulls of the replies (and of the connected nodes)

app = ServerApp()


def _options(run_config):
    cfg = dict(DEFAULTS)
    cfg.update({k: v for k, v in dict(run_config).items()})
    for key in ("plan-path", "out-dir"):
        if not cfg.get(key):
            raise ValueError(f"the run config needs {key!r}.")
    if cfg["on-dropout"] not in ("complete", "abort"):
        raise ValueError(f"'on-dropout' must be 'complete' or 'abort'; got {cfg['on-dropout']!r}.")
    return cfg


def _wait_for_nodes(grid, want, wait_s):
    deadline = time.monotonic() + float(wait_s)
    nodes = list(grid.get_node_ids())
    while len(nodes) < want and time.monotonic() < deadline:
        time.sleep(POLL_S)
        nodes = list(grid.get_node_ids())
    return sorted(nodes)


def _ask(grid, contents, message_type, timeout):
    """Send one message per node; return {node_id: reply or None (error or timeout)} and the errors.

    Polls every ``POLL_S`` rather than through ``grid.send_and_receive``, which sleeps 3 s
    between pulls (up to 3 s lost per round).
    """
    msgs = [Message(content, dst_node_id=nid, message_type=message_type) for nid, content in contents.items()]
    replies = {nid: None for nid in contents}
    errors = {}
    pending = set(grid.push_messages(msgs))
    deadline = time.monotonic() + float(timeout)
    while pending:
        for r in grid.pull_messages(list(pending)):
            pending.discard(r.metadata.reply_to_message_id)
            nid = r.metadata.src_node_id
            if r.has_error():
                errors[nid] = str(r.error.reason)
            else:
                replies[nid] = r
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(POLL_S)
    return replies, errors


def run_aggregator(grid, run_config):
    """The aggregator's whole run on a Flower ``Grid``; returns ``(release, report)`` and writes ``out-dir``."""
    cfg = _options(run_config)
    out = Path(str(cfg["out-dir"]))
    out.mkdir(parents=True, exist_ok=True)
    plan = load_plan(str(cfg["plan-path"]))
    noise_plan, claimed, extra = plan.build()
    seed = int(cfg["seed"])
    rng = None if seed < 0 else seed
    aggregator = Aggregator(as_generator(rng))
    transcript, notes = [], []
    try:
        # -- round 1: who is who (public facts only) ---------------------------------------------
        nodes = _wait_for_nodes(grid, len(plan.sites), cfg["wait-s"])
        replies, errors = _ask(grid, {nid: RecordDict({"cfg": ConfigRecord({"digest": plan.digest})})
                                      for nid in nodes}, "query.describe", cfg["timeout-s"])
        node_of = {}
        for nid in nodes:
            if replies[nid] is None:
                notes.append(f"node {nid} did not describe itself ({errors.get(nid, 'timeout')})")
                continue
            meta = replies[nid].content["meta"]
            name = str(meta["site"])
            if name not in plan.sites:
                raise ProtocolAborted(f"cape/flower: a node calls itself {name!r}, which is not a site of the plan "
                                      f"{list(plan.sites)}. No release was made.")
            if name in node_of:
                raise ProtocolAborted(f"cape/flower: two nodes call themselves {name!r}. No release was made.")
            if str(meta["digest"]) != plan.digest:
                raise ProtocolAborted(f"cape/flower: site {name!r} holds shares of another plan "
                                      f"({str(meta['digest'])[:12]} != {plan.digest[:12]}). No release was made.")
            if int(meta["n"]) != plan.n[plan.sites.index(name)] or int(meta["n-features"]) != plan.n_features:
                raise ProtocolAborted(f"cape/flower: site {name!r} reports n={meta['n']}, d={meta['n-features']}; "
                                      "the plan disagrees. No release was made.")
            node_of[name] = nid
        dropped = [(s, "after-deal") for s in plan.sites if s not in node_of]
        abort_if_needed("cape", [s for s in plan.sites if s in node_of], dropped, int(cfg["min-sites"]),
                        cfg["on-dropout"])

        # -- round 2: f_s out, one SiteMessage back per site ----------------------------------------
        f = aggregator.masks(noise_plan, plan.statistic, plan.n_features)
        contents = {}
        for name, nid in node_of.items():
            rd = RecordDict({"cfg": ConfigRecord({"statistic": plan.statistic, "digest": plan.digest,
                                                  "site": name})})
            if name in f:
                rd["f"] = ArrayRecord({"f": Array(np.array(f[name].matrix))})
                transcript.append({"from": "aggregator", "to": name, **describe(f[name])})
            contents[nid] = rd
        replies, errors = _ask(grid, contents, "query.moment", cfg["timeout-s"])
        messages = {}
        for name in plan.sites:  # plan order: the same summation order as the in-process engine
            nid = node_of.get(name)
            if nid is None:
                continue
            if replies[nid] is None:
                dropped.append((name, "after-deal"))
                notes.append(f"site {name!r} failed during the moment round ({errors.get(nid, 'timeout')})")
                continue
            content = replies[nid].content
            meta = content["meta"]
            msg = SiteMessage(str(meta["site"]), int(meta["n"]), str(meta["statistic"]),
                              content["stat"]["value"].numpy(), int(meta["n-features"]))
            if msg.site != name or msg.n != plan.n[plan.sites.index(name)] or msg.statistic != plan.statistic:
                raise ProtocolAborted(f"cape/flower: node of site {name!r} answered as {msg.site!r} "
                                      f"(n={msg.n}, {msg.statistic}). No release was made.")
            transcript.append({"from": name, "to": "aggregator", **describe(msg)})
            messages[name] = msg
        weights = dict(zip(noise_plan.sites, noise_plan.weights))
        dropped_after = tuple(d for d in dropped)
        outcome = Outcome(aggregator.combine(messages, weights) if messages else None, tuple(messages),
                          dropped_after, messages)
        ctx = dict(protocol="cape", statistic=plan.statistic, calibration=plan.calibration,
                   colluders=int(cfg["colluders"]), min_sites=int(cfg["min-sites"]), on_dropout=cfg["on-dropout"],
                   neighbours=plan.neighbours, rng=rng, notes=tuple(notes),
)
        engine = SimpleNamespace(aggregator=aggregator, transcript=transcript)
        release, report = finish(ctx, plan.public_sites(), noise_plan, outcome, (), claimed, engine, extra)
    except ProtocolAborted as exc:
        (out / "aborted.json").write_text(json.dumps({"error": str(exc), "notes": notes,
                                                      "report": _jsonable(exc.report)}, indent=2) + "\n")
        raise
    stat = getattr(release, f"{plan.statistic}_moment")
    np.save(out / f"{plan.statistic}_moment.npy", stat)
    (out / "report.json").write_text(json.dumps(
        {"release": release.to_dict(), "report": report.to_dict(), "plan": plan.to_dict(),
         "plan_digest": plan.digest, "transport": "flower"}, indent=2, default=_default) + "\n")
    return release, report


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=_default)) if obj is not None else None


def _default(obj):
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (np.floating, np.integer, np.bool_)):
        return obj.item()
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    return str(obj)


@app.main()
def main(grid: Grid, context: Context) -> None:
    run_aggregator(grid, context.run_config)
