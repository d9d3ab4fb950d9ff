"""A site's Flower SuperNode, run and watched: its log, its session, and a prompt rejoin after a crash.

The SuperLink knows a site by its key's node. A SuperNode that ends normally (Ctrl-C, SIGTERM, its
``dpmoments site`` ending) signs that node off, and a restart with the same key joins at once. One
that is killed outright (SIGKILL of the process group, the OOM killer, a power cut) never signs off:
the SuperLink holds the node online until it has missed ``HEARTBEAT_PATIENCE`` heartbeats, and
meanwhile refuses the restarted SuperNode with the very words it gives an unregistered key.

The site tells the two apart by its own record, ``STATE/supernode.json``: written while a session is
up (with the heartbeat interval and when the SuperNode was last seen running), removed once it has
ended normally. With a record left over, a refusal means the old session is still held: the site says
so in one line, with the time by which the SuperLink must have let it go, and retries until then.
Without one, the key is not registered (or was revoked): one line, and it stops.

Nothing here reads data or carries a message; the SuperNode's own log goes to ``STATE/supernode.log``
and is echoed to this process's output.
"""

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from . import deploy

__all__ = ["SessionRefused", "keep_up", "previous_session", "REFUSED", "JOINED"]

REFUSED = "Failed to activate SuperNode"  # flwr 1.41: a held node and an unknown key alike (code 2004)
JOINED = "SuperNode ID:"
SEEN_EVERY_S = 2.0  # how often the record's "seen_at" is refreshed while the SuperNode runs


class SessionRefused(RuntimeError):
    """The SuperLink refused this site's key; ``one_line`` says why and what to do."""

    def __init__(self, one_line):
        super().__init__(one_line)
        self.one_line = one_line


def _clock(t):
    return datetime.fromtimestamp(t).strftime("%H:%M:%S")


def previous_session(record):
    """``(last seen, held until)`` of a session the record says was not signed off (None: no such record).

    "Held until" is when the SuperLink must have let it go.
    """
    try:
        r = json.loads(Path(record).read_text())
        interval, seen = float(r["interval"]), float(r["seen_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    # its last heartbeat came at most SEEN_EVERY_S after it was last seen (plus this loop's lag on a loaded machine,
    # and a heartbeat still in flight): a few seconds more, so that a refusal past this time is not the old session
    return seen, seen + SEEN_EVERY_S + deploy.HEARTBEAT_PATIENCE * interval + 5.0


def _write(record, **fields):
    tmp = Path(str(record) + ".tmp")
    tmp.write_text(json.dumps(fields) + "\n")
    os.replace(tmp, record)


def keep_up(cmd, env, state, *, interval, retry_s=2.0, out=None, err=None, key=None, max_starts=None):
    """Run the SuperNode ``cmd`` until it ends; return its exit status.

    A refusal while a previous session of this site may still be held is retried (every ``retry_s``,
    after one line on ``err``) until the SuperLink must have forgotten it, and at most ``max_starts``
    times in all (default: as many as fit in that wait, plus two); otherwise, or past that,
    :class:`SessionRefused` is raised, naming ``key`` (the private key's path). A SuperNode that ends
    with an error before it ever joined (a key it cannot use, a bad option) is not restarted either.
    """
    out, err = out or sys.stdout, err or sys.stderr
    record, log = Path(state) / "supernode.json", Path(state) / "supernode.log"
    which = f"this site's key '{key}'" if key else "this site's key"
    told, starts = False, 0
    while True:
        code, refused, joined = _run(cmd, env, record, log, interval, out)
        starts += 1
        if not refused:
            if code != 0 and not joined:
                raise SessionRefused(f"Flower's SuperNode stopped at start (exit status {code}) before joining the "
                                     f"SuperLink; its reason is in {log}")
            return code
        seen, until = previous_session(record) or (None, 0.0)
        limit = max_starts if max_starts is not None else int(max(0.0, until - time.time()) / retry_s) + 2
        if time.time() >= until or starts >= limit:
            raise SessionRefused(
                f"the SuperLink refused {which} after {starts} start(s): register its public key with the "
                f"aggregator (dpmoments aggregate --register {key or 'KEY'}.pub); if a SuperNode with this key was "
                "killed less than a minute ago with another state directory, start again after that")
        if not told:
            print(f"dpmoments site: the SuperLink still holds this site's previous session (it ended without "
                  f"signing off; last seen at {_clock(seen)}) and lets it go by {_clock(until)} at the latest: "
                  f"retrying every {retry_s:g} s until then", file=err, flush=True)
            told = True
        time.sleep(retry_s)


def _run(cmd, env, record, log, interval, out):
    """One SuperNode: ``(exit status, refused?, joined?)``; its log echoed; the session record kept."""
    with open(log, "ab") as fh:
        start = fh.tell()
        proc = subprocess.Popen(deploy.orphan_proof(cmd), env=env, stdout=fh, stderr=subprocess.STDOUT)
    joined = refused = False
    offset, pending, seen = start, b"", 0.0
    try:
        while True:
            code = proc.poll()
            offset, lines, pending = _tail(log, offset, pending)
            for line in lines:
                out.write(line + "\n")
                joined = joined or JOINED in line
                refused = refused or REFUSED in line
            out.flush()
            if code is not None:
                break
            if joined and time.monotonic() - seen >= SEEN_EVERY_S:
                _write(record, interval=interval, seen_at=time.time(), pid=proc.pid)
                seen = time.monotonic()
            time.sleep(0.2)
    finally:  # also on Ctrl-C or SIGTERM: the SuperNode signs off before this process ends
        deploy.end(proc, grace_s=15.0)
        if joined and proc.returncode != -signal.SIGKILL:
            record.unlink(missing_ok=True)  # it ran its own exit, which signs the node off
        elif joined:
            _write(record, interval=interval, seen_at=time.time(), pid=proc.pid)
    return proc.returncode, refused and not joined, joined


def _tail(path, offset, pending):
    """New complete lines of ``path`` after ``offset``: ``(new offset, lines, partial last line)``."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read()
    lines = (pending + data).split(b"\n")
    return offset + len(data), [ln.decode("utf-8", "replace").rstrip("\r") for ln in lines[:-1]], lines[-1]
