"""A site's door served to the processes of its own machine, on a Unix socket only its owner can open.

Flower runs a site's ClientApp as a fresh process for every message; the site's state (its
rows, read once; its shares; its ledger) lives instead in one long-lived process, the one
``dpmoments site`` starts, which serves :meth:`~.site.Site.handle` here. The ClientApp only
carries bytes between Flower and this socket: it never reads data, so nothing but what the
site's door lets out can reach Flower. Frames are a 4-byte length and the bytes.
"""

import contextlib
import os
import socket
import stat
import threading
from pathlib import Path

__all__ = ["SiteServer", "ask_site", "MAX_FRAME"]

MAX_FRAME = 1 << 31  # 2 GiB: a (3D)^3 tensor for D = 400 fits; anything larger is refused


def _send(sock, data):
    sock.sendall(len(data).to_bytes(4, "big") + data)


def _recv_exact(sock, size):
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv(sock):
    size = int.from_bytes(_recv_exact(sock, 4), "big")
    if size >= MAX_FRAME:
        raise ConnectionError("frame too large")
    return _recv_exact(sock, size)


def ask_site(path, data, timeout=None):
    """Send ``data`` to the site serving on ``path``; return its reply (``ConnectionError``: no site there)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(path))
            _send(sock, bytes(data))
            return _recv(sock)
    except OSError:
        raise ConnectionError("the site's own process is not answering on its local socket") from None


class SiteServer:
    """Serve ``handler(bytes) -> bytes`` on the Unix socket ``path`` (mode 600) in a background thread."""

    def __init__(self, handler, path):
        self.handler = handler
        self.path = Path(path)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(self.path.stat().st_mode):
                self.path.unlink()  # a stale socket of an earlier run of this site
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self._sock.bind(str(self.path))
        finally:
            os.umask(old)
        self._sock.listen(16)
        self._lock = threading.Lock()  # one answer at a time: the ledger's order is the order of answers
        self._thread = threading.Thread(target=self._serve, name=f"site-door-{self.path.name}", daemon=True)
        self._closed = False
        self._thread.start()

    def _serve(self):
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        with conn:
            try:
                data = _recv(conn)
                with self._lock:
                    reply = self.handler(data)
                _send(conn, reply)
            except Exception:  # a handler that fails has crashed for this query: no reply, no text
                pass

    def close(self):
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
