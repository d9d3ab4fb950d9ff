"""Flower as a transport (optional extra ``dpmoments[flower]``, flwr 1.41.x).

One SuperLink (the aggregator's host) and one SuperNode per site; every message is one
``query.dpmoments`` carrying the bytes of a :mod:`~.messages` message, nothing else.

* :class:`FlowerTransport` -- the aggregator's side on a ServerApp's ``Grid``: a hello to
  every node maps Flower's opaque node ids to site names; each step pushes one message per
  site and polls the replies (every ``poll_s``, not ``send_and_receive``'s 3 s). Once a second
  it asks the SuperLink which nodes heartbeat, and since when: a pending message's node that
  went offline, or came back as a new session (a restart with the same key), is a crash,
  noticed without waiting for the step's timeout.
* :data:`app` -- the site's ClientApp: it forwards the bytes to the site's own long-lived
  process (``node_config["site-socket"]``, :mod:`.door`) and returns that process's bytes.
  It never reads data, and what it raises is a fixed sentence.

The ServerApp that drives :func:`~.run.run_plan` over this transport and writes the result
is the command line's (:mod:`dpmoments.cli._serverapp`).
"""

import time

from flwr.app import Array, ArrayRecord, Message, RecordDict
from flwr.clientapp import ClientApp

from .door import ask_site
from .messages import Hello, SiteError, from_wire, to_wire
from .transport import Failure, Transport

__all__ = ["FlowerTransport", "app", "pack", "unpack", "MESSAGE_TYPE", "WINDOW"]

MESSAGE_TYPE = "query.dpmoments"
#: Bytes of queries packed into one push (at least one query), and of replies pulled at once (about): the
#: aggregator's ServerApp holds a few messages at a time, not a step's S of them.
WINDOW = 4 << 20


#: How the bytes travel in an Array: as they are, not as a NumPy ``.npy`` file. Reading a ``.npy``
#: header parses it with ``ast.literal_eval``, which on CPython 3.11 can fail at random ("AST constructor
#: recursion depth mismatch", python/cpython#106905) while other threads parse too.
STYPE = "dpmoments.bytes"


def pack(data):
    """Bytes as the one array of a RecordDict (Flower splits a large Array into chunks in transit)."""
    data = bytes(data)
    return RecordDict({"m": ArrayRecord({"b": Array("uint8", (len(data),), STYPE, data)})})


def unpack(content):
    """The bytes :func:`pack` carried; ``ValueError`` for anything else (the caller refuses it)."""
    try:
        array = content["m"]["b"]
    except (KeyError, TypeError):
        array = None
    if not isinstance(array, Array) or (array.stype, array.dtype, tuple(array.shape)) != \
            (STYPE, "uint8", (len(array.data),)):
        raise ValueError("not a dpmoments message")
    return bytes(array.data)


class FlowerTransport(Transport):
    """The aggregator's side over a Flower ``Grid`` (in a ServerApp)."""

    name = "flower"

    def __init__(self, grid, poll_s=0.1):
        super().__init__()
        self.grid, self.poll_s = grid, poll_s
        self.node_of = {}

    def _sessions(self):
        """``{node: its session}`` for the nodes the SuperLink counts online (heartbeating) now.

        A site restarted with the same key comes back as the same node with a new activation time: a
        message its old SuperNode took died with it (a changed session counts as a crash), while the
        messages of later steps reach the new one (the site rejoins; its ledger, on disk, still refuses
        any step it answered before).
        """
        return {n.node_id: n.last_activated_at for n in self.grid.get_nodes()}

    def connect(self, plan, wait_s):
        deadline = time.monotonic() + float(wait_s)
        nodes = sorted(self._sessions())
        while len(nodes) < plan.n_sites and time.monotonic() < deadline:
            time.sleep(self.poll_s)
            nodes = sorted(self._sessions())
        hello = to_wire(Hello(plan.digest))
        replies = self._push({nid: hello for nid in nodes}, max(1.0, deadline - time.monotonic()))
        for nid, data in replies.items():
            try:
                msg = from_wire(data, kinds=("Hello", "SiteError")) if isinstance(data, bytes) else None
            except ValueError:
                msg = None
            if isinstance(msg, Hello) and msg.site in plan.sites and msg.site not in self.node_of:
                self.node_of[msg.site] = nid
            elif isinstance(msg, SiteError):
                self.reasons[msg.site] = msg.code
        return [s for s in plan.sites if s in self.node_of]

    def exchange(self, messages, timeout_s):
        return dict(self.exchange_each(messages.items(), timeout_s))

    def exchange_each(self, messages, timeout_s):
        """Each query built when its batch is pushed (:data:`WINDOW` bytes a push), each reply pulled in batches
        of about as many bytes and handed on one at a time: this process holds a few messages at once, whatever
        the number of sites (the SuperLink, a process of its own, keeps each until it is taken: docs/cluster.md)."""
        site_of = {nid: s for s, nid in self.node_of.items()}
        by_node = ((self.node_of[s], data) for s, data in messages)
        for nid, answer in self._push_each(by_node, timeout_s):
            yield site_of[nid], answer

    def _push(self, by_node, timeout_s):
        return dict(self._push_each(iter(by_node.items()), timeout_s))

    def _push_each(self, by_node, timeout_s):
        """One message per ``(node, bytes)``; yields ``(node, bytes or Failure)`` as each reply is pulled, until all
        replied or ``timeout_s``."""
        deadline, sent_to = time.monotonic() + float(timeout_s), self._sessions()
        pending, asked, batch, size, largest = {}, set(), [], 0, 1  # pending: message id -> node
        for nid, data in by_node:
            if batch and size + len(data) > WINDOW:
                yield from self._pushed(batch, pending)
                batch, size = [], 0
                yield from self._pulled(pending, asked, largest)
            asked.add(nid)
            batch.append(Message(pack(data), dst_node_id=nid, message_type=MESSAGE_TYPE))
            size, largest = size + len(data), max(largest, len(data))
            del data
        yield from self._pushed(batch, pending)
        del batch
        roll_call = time.monotonic() + 1.0
        while pending:
            yield from self._pulled(pending, asked, largest)
            if pending and time.monotonic() >= roll_call:  # a node that left or restarted will not answer: do not wait
                now = self._sessions()
                for mid in [m for m, n in pending.items() if n not in now or now[n] != sent_to.get(n)]:
                    yield pending.pop(mid), Failure("crashed")
                roll_call = time.monotonic() + 1.0
            if not pending or time.monotonic() >= deadline:
                break
            time.sleep(self.poll_s)
        for nid in pending.values():
            yield nid, Failure("timeout")

    def _pushed(self, batch, pending):
        """Push ``batch``; a message the SuperLink did not take is a node out of reach."""
        for mid, msg in zip(self.grid.push_messages(batch), batch):
            if mid is None:
                yield msg.metadata.dst_node_id, Failure("unreachable")
            else:
                pending[mid] = msg.metadata.dst_node_id

    def _pulled(self, pending, asked, largest):
        """The replies in now, pulled about :data:`WINDOW` bytes at a time and handed on one by one."""
        ids, each = list(pending), max(1, WINDOW // largest)
        for start in range(0, len(ids), each):
            replies = list(self.grid.pull_messages(ids[start:start + each]))
            while replies:
                r = replies.pop()
                if pending.pop(r.metadata.reply_to_message_id, None) is None:
                    continue
                nid = r.metadata.src_node_id
                if nid in asked:  # an error reply's text is the node's, not ours to forward
                    asked.discard(nid)
                    yield nid, Failure("crashed") if r.has_error() else _payload(r.content)
                del r


def _payload(content):
    """A reply's bytes; ``b""`` (which no decoder accepts: the reply is refused) when it is not ours."""
    try:
        return unpack(content)
    except ValueError:
        return b""


app = ClientApp()


@app.query("dpmoments")
def _forward(msg, context):
    try:
        reply = ask_site(str(context.node_config["site-socket"]), unpack(msg.content), timeout=3600)
    except (ConnectionError, KeyError):
        raise RuntimeError("the site's own process (dpmoments site) is not running") from None
    return Message(pack(reply), reply_to=msg)
