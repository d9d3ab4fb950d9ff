"""The three transports, each with its site side, for the protocol and fault tests.

* ``in-process`` -- :class:`~dpmoments.multisite.InProcessTransport`;
* ``flower`` -- :class:`~dpmoments.multisite.flower.FlowerTransport` over a Grid that hands each
  message to the real ClientApp object, which forwards it to the site's door on a real Unix
  socket (:mod:`dpmoments.multisite.door`): every byte takes the deployed path except the
  SuperLink's hop (``tests/flower`` runs that too);
* ``grpc`` -- :class:`~dpmoments.multisite.grpc_transport.GrpcTransport` on a localhost port with
  mutual TLS, the sites as :class:`~dpmoments.multisite.grpc_transport.GrpcSite` threads.

``make(kind, handlers)`` returns a transport whose ``close()`` also stops its sites.
"""

import itertools
import shutil
import threading
import tempfile
from pathlib import Path

import pytest

KINDS = ("in-process", "flower", "grpc")
_TLS = {}


def make(kind, handlers):
    """A live transport of ``kind`` whose sites answer with ``handlers`` (name -> callable(bytes) -> bytes)."""
    handlers = dict(handlers)
    if kind == "in-process":
        from dpmoments.multisite import InProcessTransport

        return InProcessTransport(handlers)
    if kind == "flower":
        return _flower(handlers)
    if kind == "grpc":
        return _grpc(handlers)
    raise ValueError(kind)


def factory(kind):
    """For the API's ``transport=``: sites -> a live transport of ``kind`` over their doors."""
    return lambda sites: make(kind, {s.name: s.handle for s in sites})


def _flower(handlers):
    pytest.importorskip("flwr", reason="the Flower extra is not installed")
    from flwr.app import Context, Error, Message, RecordDict
    from flwr.serverapp import Grid
    from flwr.supercore.task_identity import TaskIdentity  # internal: Message() outside a run

    from dpmoments.multisite import flower
    from dpmoments.multisite.door import SiteServer

    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 0
    tmp = Path(tempfile.mkdtemp(prefix="dpms-t-"))
    servers = {name: SiteServer(h, tmp / f"{k}.sock") for k, (name, h) in enumerate(handlers.items())}

    class FakeGrid(Grid):
        """Delivers each message to the ClientApp in this process (no SuperLink)."""

        def __init__(self):
            self._nodes = {100 + k: {"site-socket": str(s.path)} for k, s in enumerate(servers.values())}
            self._replies, self._ids, self._run = {}, itertools.count(), None

        def set_run(self, run):
            self._run = run

        @property
        def run(self):
            return self._run

        def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
            return Message(content, dst_node_id=dst_node_id, message_type=message_type, group_id=group_id)

        def get_node_ids(self):
            return list(self._nodes)

        def push_messages(self, messages):
            ids = []
            for m in messages:
                mid = str(next(self._ids))
                m.metadata.__dict__.update(_message_id=mid, _src_node_id=0)  # the SuperLink's job
                threading.Thread(target=self._deliver, args=(mid, m), daemon=True).start()  # nodes answer at once
                ids.append(mid)
            return ids

        def _deliver(self, mid, m):
            nid = m.metadata.dst_node_id
            try:
                reply = flower.app(m, Context(run_id=1, node_id=nid, node_config=self._nodes[nid],
                                              state=RecordDict(), run_config={}))
            except Exception as exc:  # what a SuperNode does: an error reply
                reply = Message(error=Error(code=0, reason=str(exc)), reply_to=m)
            reply.metadata.__dict__["_src_node_id"] = nid
            self._replies[mid] = reply

        def pull_messages(self, ids):
            return [self._replies.pop(i) for i in list(ids) if i in self._replies]

        def send_and_receive(self, messages, *, timeout=None):
            raise AssertionError("the transport pushes and pulls")

    class Link(flower.FlowerTransport):
        def close(self):
            for s in servers.values():
                s.close()
            shutil.rmtree(tmp, ignore_errors=True)

    return Link(FakeGrid(), poll_s=0.005)


def _credentials(names):
    pytest.importorskip("cryptography", reason="cryptography makes the test CA")
    from dpmoments.multisite.tls import make_ca, make_site_cert

    if "ca" not in _TLS:
        d = Path(tempfile.mkdtemp(prefix="dpms-ca-"))
        _TLS.update(ca=make_ca(d), dir=d)
    for name in names:
        if name not in _TLS:
            _TLS[name] = make_site_cert(_TLS["ca"], name, _TLS["dir"])
    read = lambda p: Path(p).read_bytes()  # noqa: E731
    return read(_TLS["ca"]["ca"]), read(_TLS["ca"]["cert"]), read(_TLS["ca"]["key"]), \
        {n: tuple(read(p) for p in _TLS[n]) for n in names}


def _grpc(handlers):
    pytest.importorskip("grpc", reason="grpcio is not installed")
    from dpmoments.multisite.grpc_transport import GrpcSite, GrpcTransport

    ca, cert, key, sites = _credentials(list(handlers))
    link = GrpcTransport("127.0.0.1:0", certificate=cert, private_key=key, root_certificates=ca)
    clients = [GrpcSite(h, f"127.0.0.1:{link.port}", name, certificate=sites[name][0], private_key=sites[name][1],
                        root_certificates=ca).start() for name, h in handlers.items()]
    return closing_together(link, clients)


def closing_together(link, clients):
    """``link``, whose ``close()`` first stops the sites dialling it (``clients``): one call ends the deployment."""
    close = link.close

    def close_all():
        for c in clients:
            c.stop()
        close()

    link.close = close_all
    return link
