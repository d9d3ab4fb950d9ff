"""Plain gRPC as a transport: no framework, mutual TLS, sites dial out (grpcio; installed with the flower extra).

Why gRPC and not Ray: grpcio is a small, well-kept library already present with Flower; it
gives TLS with client certificates (each site is authenticated by the certificate its CA
signed, common name = site name), and it lets the sites *dial out* to the aggregator, so no
site opens a port. Ray would bring ~260 MB, start in seconds, and let any client run code
on every node, which no institution can accept.

The aggregator's server runs on grpc's asyncio API: one thread serves every site's stream, so a
thousand sites cost a thousand streams, not a thousand threads (the threaded server took 64 and
queued the rest unseen). Past :data:`MAX_SITES` a site is refused by name and the run stops.

One bidirectional stream per site on ``/dpmoments.Sites/Serve``, raw bytes, no protobuf:
the site's first frame is its name; after that each frame is a 16-byte request id and the
bytes of one :mod:`~.messages` message (queries down, replies up). The aggregator matches
replies to queries by id, so a reply to an old query is never mistaken for a new one.

* :class:`GrpcTransport` -- the aggregator's side: a server on ``address``;
* :class:`GrpcSite` -- a site's side: dials the aggregator and answers with its door.
"""

import asyncio
import collections
import os
import queue
import socket
import threading
import time
import uuid

# gRPC's C core writes its own log lines (E1128 12:00:00 ssl_transport_security.cc ...] Invalid private key)
# straight to stderr, beside our one-line errors; it reads this before its first use, so it is set before
# grpc is imported. A user who wants them sets GRPC_VERBOSITY=ERROR (or debug) themselves.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

import grpc  # noqa: E402 - after GRPC_VERBOSITY

from .messages import Hello, ProtocolAborted, SiteError, from_wire, to_wire  # noqa: E402
from .tls import check_pair, check_roots  # noqa: E402
from .transport import Failure, Transport  # noqa: E402

__all__ = ["GrpcTransport", "GrpcSite", "METHOD", "MAX_SITES", "SEND_WINDOW"]

SERVICE, METHOD = "dpmoments.Sites", "/dpmoments.Sites/Serve"
_OPTIONS = [("grpc.max_send_message_length", 1 << 30), ("grpc.max_receive_message_length", 1 << 30)]
#: The most sites one aggregator serves at once (each an open stream and a socket); more are refused by name.
MAX_SITES = 4096
#: Bytes of queries waiting to be handed to gRPC at once (at least one query): a step's next query is built
#: when there is room, so the aggregator holds O(d^2) of them whatever the number of sites.
SEND_WINDOW = 4 << 20
# gRPC sets SO_REUSEPORT by default: a second aggregator on a port in use would share it silently.
_SERVER_OPTIONS = [*_OPTIONS, ("grpc.so_reuseport", 0)]


def _boxed(data):
    return [data]


def _unboxed(box):
    return box.pop()


def _why_not_bound(address):
    """Why ``HOST:PORT`` cannot be bound, from a plain socket (gRPC says only "Failed to bind")."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or None
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (ValueError, socket.gaierror):
        return "not a HOST:PORT this machine can listen on"
    for family, kind, proto, _, where in infos:
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(where)
            except OSError as exc:
                return exc.strerror or "it cannot be bound"
    return "gRPC could not bind it"


class _Link:
    """One site's stream at the aggregator: frames out (an asyncio queue of the server's loop; ``unsent``
    bytes of them not yet handed to gRPC), replies in (both under the transport's ``arrived`` condition)."""

    def __init__(self):
        self.out, self.replies, self.alive, self.unsent = asyncio.Queue(), {}, True, 0


class GrpcTransport(Transport):
    """The aggregator's gRPC server (asyncio: one thread serves every site's stream).

    Parameters
    ----------
    address : str
        ``HOST:PORT`` to listen on (port 0: any free port, see :attr:`port`).
    certificate, private_key, root_certificates : bytes, optional
        The server's PEM certificate and key, and the CA that signs the sites' certificates
        (mutual TLS, required unless ``insecure``).
    insecure : bool
        No TLS, and a site's name is taken on its word (local trials and tests only).
    max_sites : int
        The most sites served at once (default :data:`MAX_SITES`). A site beyond it is refused
        (``RESOURCE_EXHAUSTED``, which the site logs), and :meth:`connect` raises, naming how
        many of the plan's sites were refused: a run never goes on without them silently.
    """

    name = "grpc"

    def __init__(self, address="127.0.0.1:0", *, certificate=None, private_key=None, root_certificates=None,
                 insecure=False, max_sites=MAX_SITES):
        super().__init__()
        self._links, self._lock, self._joined = {}, threading.Lock(), threading.Condition()
        self._arrived = threading.Condition()  # a reply came in, a query went out, or a stream ended: look again
        self._unsent = 0  # bytes of queries queued and not yet handed to gRPC, over every stream
        self._news = collections.deque()  # links with a reply in, or whose stream ended, not yet looked at
        self.peak_held = 0  # the most bytes of messages held here at once (queries unsent, replies not taken)
        self._held, self._waiting = 0, 0  # ... and of them, the replies not taken
        self._insecure, self.max_sites, self.refused, self._closed = insecure, int(max_sites), set(), False
        if not insecure:
            if not (certificate and private_key and root_certificates):
                raise ValueError("gRPC over TLS needs the server certificate, its key and the sites' CA "
                                 "(or insecure=True for a local trial).")
            check_pair(certificate, private_key, cert_name="'certificate'", key_name="'private_key'")
            check_roots(root_certificates, name="'root_certificates'")
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, name="grpc-aggregator", daemon=True).start()
        try:
            self.port = self._call(self._start(address, certificate, private_key, root_certificates))
        except Exception:
            self._loop.call_soon_threadsafe(self._loop.stop)
            raise
        if not self.port:
            self._loop.call_soon_threadsafe(self._loop.stop)
            raise OSError(f"could not listen on '{address}': {_why_not_bound(address)}")

    def _call(self, coroutine, timeout=None):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    async def _start(self, address, certificate, private_key, root_certificates):
        """The server, in the loop's thread; its port (0: the address could not be bound)."""
        self._reply_room = asyncio.Event()  # set while fewer than SEND_WINDOW bytes of replies wait to be taken
        self._reply_room.set()
        self._server = grpc.aio.server(options=_SERVER_OPTIONS)
        # Frames travel in one-item boxes emptied as gRPC takes them (_unboxed): gRPC's loops keep their last
        # message until the next one, so bytes would stay alive per stream, S of them in all, between steps.
        handler = grpc.method_handlers_generic_handler(SERVICE, {"Serve": grpc.stream_stream_rpc_method_handler(
            self._serve, request_deserializer=_boxed, response_serializer=_unboxed)})
        self._server.add_generic_rpc_handlers((handler,))
        try:
            if self._insecure:
                port = self._server.add_insecure_port(address)
            else:
                creds = grpc.ssl_server_credentials([(private_key, certificate)],
                                                    root_certificates=root_certificates, require_client_auth=True)
                port = self._server.add_secure_port(address, creds)
        except RuntimeError:  # "Failed to bind to address": the credentials were checked above
            return 0
        if port:
            await self._server.start()
        return port

    # -- the server side of one site's stream (in the server's event loop) ---------------------------------
    async def _serve(self, frames, context):
        try:
            name = (await frames.__anext__()).pop().decode()
        except (StopAsyncIteration, UnicodeDecodeError):
            return
        if not self._insecure:
            names = [n.decode() for n in context.auth_context().get("x509_common_name", [])]
            if name not in names:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, "the site's name is not its certificate's")
        link = _Link()
        with self._lock:
            old = self._links.get(name)
            full = old is None and sum(k.alive for k in self._links.values()) >= self.max_sites
            if full:
                self.refused.add(name)
            else:
                self._links[name] = link  # a restarted site replaces its old stream
        if full:
            with self._joined:
                self._joined.notify_all()
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"this aggregator serves at most {self.max_sites} sites at once")
        if old is not None:
            self._drop(old)
        with self._joined:
            self._joined.notify_all()
        reader = asyncio.ensure_future(self._read(frames, link))
        try:
            while True:
                frame = await link.out.get()
                if frame is None:
                    return
                size = len(frame)
                yield [frame]
                del frame
                self._handed(link, size)  # gRPC asks for the next frame once it has taken this one
        finally:
            reader.cancel()
            self._drop(link)

    async def _read(self, frames, link):
        try:
            async for box in frames:
                frame = box.pop()
                with self._arrived:
                    link.replies[bytes(frame[:16])] = bytes(frame[16:])
                    self._taken(-(len(frame) - 16))
                    self._news.append(link)
                    self._arrived.notify_all()
                del frame
                # Replies that arrive faster than the run sums them wait in gRPC's flow control, not here
                await self._reply_room.wait()
        except (grpc.RpcError, asyncio.CancelledError):
            pass
        finally:
            self._drop(link)

    def _hold(self, size):
        """Count ``size`` bytes more (or fewer) of messages held here (under ``_arrived``)."""
        self._held += size
        self.peak_held = max(self.peak_held, self._held)

    def _taken(self, size):
        """``size`` bytes of replies taken (a negative size: arrived), under ``_arrived``; the readers pause while
        more than :data:`SEND_WINDOW` bytes of replies wait."""
        self._hold(-size)
        self._waiting -= size
        # every time, in order (under the lock): a skipped "set" behind a pending "clear" would stop the readers
        try:
            self._loop.call_soon_threadsafe(self._reply_room.set if self._waiting <= SEND_WINDOW else
                                            self._reply_room.clear)
        except RuntimeError:  # the loop is closed: the transport is closing
            pass

    def _handed(self, link, size):
        with self._arrived:
            if link.alive:  # a dropped link's unsent bytes were given back when it dropped
                link.unsent -= size
                self._unsent -= size
                self._hold(-size)
            self._arrived.notify_all()

    def _drop(self, link):
        with self._arrived:
            was_alive, link.alive = link.alive, False
            if was_alive:
                self._unsent -= link.unsent
                self._hold(-link.unsent)
                link.unsent = 0
                self._news.append(link)
            self._arrived.notify_all()
        if was_alive:
            self._put(link, None)

    def _put(self, link, frame):
        """Queue a frame for a site's stream, from any thread."""
        try:
            self._loop.call_soon_threadsafe(link.out.put_nowait, frame)
        except RuntimeError:  # the loop is closed: the transport is closing
            pass

    # -- Transport ------------------------------------------------------------------------------------------
    def connect(self, plan, wait_s):
        deadline = time.monotonic() + float(wait_s)
        with self._joined:
            while not set(plan.sites) <= self._live() | self.refused and time.monotonic() < deadline:
                self._joined.wait(timeout=max(0.0, deadline - time.monotonic()))
        refused = [s for s in plan.sites if s in self.refused and s not in self._live()]
        if refused:
            raise ProtocolAborted(f"the gRPC transport serves at most {self.max_sites} sites at once and refused "
                                  f"{len(refused)} of the plan's {len(plan.sites)} (first: {refused[0]!r}); raise "
                                  "max_sites or split the run")
        present = [s for s in plan.sites if s in self._live()]
        replies = self.exchange({s: to_wire(Hello(plan.digest)) for s in present}, max(1.0, deadline -
                                                                                       time.monotonic()))
        out = []
        for site, data in replies.items():
            try:
                msg = from_wire(data, kinds=("Hello", "SiteError")) if isinstance(data, bytes) else None
            except ValueError:
                msg = None
            if isinstance(msg, Hello) and msg.site == site:
                out.append(site)
            elif isinstance(msg, SiteError):
                self.reasons[site] = msg.code
        return [s for s in plan.sites if s in out]

    def _live(self):
        with self._lock:
            return {n for n, link in self._links.items() if link.alive}

    def exchange(self, messages, timeout_s):
        return dict(self.exchange_each(messages.items(), timeout_s))

    def exchange_each(self, messages, timeout_s):
        """Each query built and queued when there is room (:data:`SEND_WINDOW`), each reply handed back as it
        arrives, while the rest are still being sent (and forgotten here): a few messages are held at once,
        whatever the number of sites. Every reply is due ``timeout_s`` after the step starts."""
        sent, deadline = {}, time.monotonic() + float(timeout_s)
        for site, data in messages:
            frame, late = None, False
            while frame is None and not late:
                with self._lock:
                    link = self._links.get(site)
                with self._arrived:
                    ready = self._ready(sent)  # first: the replies in make room for more (the readers wait on it)
                    gone = link is None or not link.alive
                    if not gone and (self._unsent == 0 or self._unsent + 16 + len(data) <= SEND_WINDOW):
                        frame = self._queued(link, data)
                    elif not gone and time.monotonic() < deadline:
                        self._arrived.wait(timeout=max(0.0, deadline - time.monotonic()))
                        ready += self._ready(sent)
                    else:
                        late = not gone
                yield from ready
                if gone:
                    break
            if frame is None:
                yield site, Failure("unreachable" if gone else "timeout")
                continue
            sent[link] = (site, frame[:16])  # before it goes: its reply is this step's the moment it comes
            self._put(link, frame)
            del frame, data
        while sent:
            with self._arrived:
                ready = self._ready(sent)
                while not ready and time.monotonic() < deadline:
                    self._arrived.wait(timeout=max(0.0, deadline - time.monotonic()))
                    ready = self._ready(sent)
            if not ready:
                break
            yield from ready
        for link, (site, _) in sent.items():
            yield site, Failure("timeout" if link.alive else "crashed")

    def _queued(self, link, data):
        """A frame for ``link`` (a fresh request id and ``data``), counted as unsent (under ``_arrived``)."""
        frame = uuid.uuid4().bytes + bytes(data)
        link.unsent += len(frame)
        self._unsent += len(frame)
        self._hold(len(frame))
        return frame

    def _ready(self, sent):
        """The answers in (replies, and sites whose stream ended), taken out of ``sent`` (``{link: (site, request
        id)}``) as the news of them comes (under ``_arrived``); a reply to an earlier step's query is dropped."""
        out = []
        while self._news:
            link = self._news.popleft()
            site, rid = sent.get(link, (None, None))  # not asked in this step: an ended link is found out when asked
            reply = link.replies.pop(rid, None)
            for stale in list(link.replies):
                self._taken(len(link.replies.pop(stale)))
            if site is not None and (reply is not None or not link.alive):
                del sent[link]
                if reply is not None:
                    self._taken(len(reply))
                out.append((site, reply if reply is not None else Failure("crashed")))
        return out

    def close(self):
        """Stop serving (a second call does nothing: the run closes its transport, and so may its caller)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            links = list(self._links.values())
        for link in links:
            self._drop(link)
        try:
            self._call(self._server.stop(grace=None), timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)


class GrpcSite:
    """A site's side: dial ``address`` and answer every query with ``handler`` (a site's door).

    ``start()`` runs it in a background thread (tests); ``run()`` blocks (``dpmoments site``).
    Reconnects every ``retry_s`` while the aggregator is away, until :meth:`stop`.
    """

    def __init__(self, handler, address, name, *, certificate=None, private_key=None, root_certificates=None,
                 insecure=False, retry_s=0.5):
        self.handler, self.address, self.name, self.retry_s = handler, address, name, retry_s
        if insecure:
            self._credentials = None
        else:  # a wrong key would fail every handshake, retried forever without a word
            check_pair(certificate, private_key, cert_name="'certificate'", key_name="'private_key'")
            check_roots(root_certificates, name="'root_certificates'")
            self._credentials = grpc.ssl_channel_credentials(root_certificates, private_key, certificate)
        self._stop = threading.Event()
        self._thread = None
        self._call = None

    def start(self):
        self._thread = threading.Thread(target=self.run, name=f"grpc-site-{self.name}", daemon=True)
        self._thread.start()
        return self

    def run(self):
        while not self._stop.is_set():
            try:
                self._session()
            except grpc.RpcError:
                pass
            except Exception:  # the site itself failed: it is down, as a crashed process would be
                self._stop.set()
            self._stop.wait(self.retry_s)

    def _session(self):
        channel = (grpc.insecure_channel(self.address, options=_OPTIONS) if self._credentials is None else
                   grpc.secure_channel(self.address, self._credentials, options=_OPTIONS))
        with channel:
            out = queue.Queue()
            out.put(self.name.encode())

            def frames():
                while True:
                    item = out.get()
                    if item is None:
                        return
                    yield item

            self._call = channel.stream_stream(METHOD)(frames())
            try:
                for frame in self._call:
                    out.put(bytes(frame[:16]) + self.handler(bytes(frame[16:])))
            finally:
                out.put(None)

    def stop(self):
        self._stop.set()
        if self._call is not None:
            self._call.cancel()
        if self._thread is not None:
            self._thread.join(timeout=5)
