"""A hostile Flower ServerApp (tests only): it repeats, replays and re-plans queries against real SuperNodes.

The attack of issue 12: ask a site K times for the same plan and average its fresh local
noise away. The honest ClientApp runs at every site; only the aggregator misbehaves. The app
writes what every site answered (reply kinds and error codes) to the JSON file named in its
run config ``out``; it never writes a payload.
"""

import json
import time
import uuid
from pathlib import Path

import numpy as np
from flwr.app import Message
from flwr.serverapp import ServerApp

from dpmoments.multisite import Hello, Plan, Query, Reply, SiteError, from_wire, to_wire
from dpmoments.multisite.flower import MESSAGE_TYPE, pack, unpack

app = ServerApp()


def _ask(grid, by_node, timeout=60.0):
    msgs = [Message(pack(data), dst_node_id=nid, message_type=MESSAGE_TYPE) for nid, data in by_node.items()]
    ids, out = set(grid.push_messages(msgs)), {}
    deadline = time.monotonic() + timeout
    while ids and time.monotonic() < deadline:
        for r in grid.pull_messages(list(ids)):
            ids.discard(r.metadata.reply_to_message_id)
            out[r.metadata.src_node_id] = None if r.has_error() else from_wire(unpack(r.content))
        time.sleep(0.05)
    return out


def _kind(msg):  # what came back, never a payload
    if isinstance(msg, Reply):
        return "reply"
    return msg.code if isinstance(msg, SiteError) else "no answer"


def _query(plan, digest=None, step=0):
    i_shares = {}
    for r in plan.rounds_of(step) or [0]:
        i_shares[r] = np.zeros((plan.n_features,) * 2)  # f_s = 0: the aggregator's own noise, dropped on purpose
    return Query(digest or plan.digest, step, f"r-{uuid.uuid4().hex[:12]}", None, i_shares)


@app.main()
def main(grid, context):
    cfg = context.run_config
    plan = Plan.from_json(Path(str(cfg["plan"])).read_text())
    other = Plan.from_json(Path(str(cfg["other-plan"])).read_text())
    nodes = []
    while len(nodes) < plan.n_sites:
        nodes = sorted(grid.get_node_ids())
        time.sleep(0.1)
    names = {nid: m.site for nid, m in _ask(grid, {n: to_wire(Hello(plan.digest)) for n in nodes}).items()}
    log = {name: [] for name in names.values()}
    node_of = {name: nid for nid, name in names.items()}

    def attempt(wire):
        for nid, msg in _ask(grid, wire).items():
            log[names[nid]].append(_kind(msg))

    first = {nid: to_wire(_query(plan)) for nid in names}
    attempt(first)  # the one answer each share allows
    # one Flower round, three attacks: ask again with a fresh round id (to average the noise away), replay the
    # very same bytes, and ask for a plan no dealer made
    attempt({node_of["north"]: to_wire(_query(plan)), node_of["south"]: first[node_of["south"]],
             node_of["east"]: to_wire(_query(plan, digest="f" * 64))})
    attempt({nid: to_wire(_query(other)) for nid in names})  # a real plan each site holds, beyond its budget
    Path(str(cfg["out"])).write_text(json.dumps(log))
