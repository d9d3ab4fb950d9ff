"""Where a share's use is recorded: with the share, so that it is spent once wherever and however the site runs.

A share is one site's part of one plan, so its identity is the pair (plan digest, site name): every plan
carries a fresh random ``run_id``, and two dealings of one plan are one share as far as answering goes (a
step of a plan is answered once per site, whatever ``e_s`` it was dealt). The steps a share has answered
are recorded, before the answer, in every place a second answer could come from:

* **this process** -- a table keyed by the share's identity, seen by every :class:`~.site.Site` object of
  the process (two sites built from one bundle do not answer a step twice);
* **beside the share file** -- ``<share>.spent/steps.json``, so the record travels with the file and does
  not depend on the directory the site was started from, nor on ``--state``;
* **this user's registry on this machine** -- ``$DPMOMENTS_STATE_HOME/shares/<id>/steps.json`` (default
  ``$XDG_STATE_HOME/dpmoments``, else ``~/.local/state/dpmoments``), so a copy of the share in another
  directory, or a second process for the same site, finds it;
* **the share file itself** -- rewritten atomically on first use with an ``opened`` mark, so that a share
  whose records were deleted is refused loudly, never served fresh.

Check and record happen under exclusive ``flock`` locks on the registry entry and the sidecar, the records
are written to a temporary file, flushed to disk and renamed (then the directory is flushed), and only then
is anything computed or sent: a crash after recording loses an answer, never grants a second one.

What the site alone cannot see: a copy of the share carried to another machine (or another user's
registry) *before* its first use. See docs/multisite.md for what the dealer and operator do about it.
"""

import contextlib
import datetime
import fcntl
import hashlib
import io
import json
import os
import tempfile
import threading
import zipfile
from pathlib import Path

import numpy as np

from .ledger import Refused

__all__ = ["ShareRecord", "ShareRecordError", "share_id", "registry_root", "check_writable", "answered_in_process"]

_PROCESS = {}  # share id -> set of answered steps (every Site of this process)
_PROCESS_LOCK = threading.Lock()
_MARK = "opened"  # the entry an opened share file carries


class ShareRecordError(ValueError):
    """A share whose record is missing, damaged or cannot be written: the site refuses to serve it."""


def share_id(plan_digest, site):
    """The identity a share's records are kept under (no data: the public plan's digest and the site's name)."""
    return hashlib.sha256(f"{plan_digest}/{site}".encode()).hexdigest()


def registry_root():
    """This user's machine-wide record of spent shares (``$DPMOMENTS_STATE_HOME`` overrides it)."""
    if os.environ.get("DPMOMENTS_STATE_HOME"):
        return Path(os.environ["DPMOMENTS_STATE_HOME"])
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "dpmoments"


def check_writable(directory, what):
    """Create ``directory`` if needed and prove a file can be written and flushed there; one line if not."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory) as fh:
            fh.write(b"x")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise ShareRecordError(f"{what} '{directory}' cannot be written ({exc.strerror or type(exc).__name__}): "
                               "the site records every answer there before it sends it; nothing was sent") from None
    return directory


def _fsync_dir(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(path, data, mode=0o600):
    """Write ``data`` to ``path`` atomically and durably (temporary file, fsync, rename, fsync of the directory)."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


class _Place:
    """One directory holding a share's answered steps (``steps.json``) and the lock that guards them."""

    def __init__(self, directory, what):
        self.dir, self.what = Path(directory), what

    @contextlib.contextmanager
    def locked(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def steps(self, share):
        path = self.dir / "steps.json"
        if not path.exists():
            return set()
        try:
            record = json.loads(path.read_text())
            assert record["share"] == share
            return {int(s) for s in record["steps"]}
        except (OSError, ValueError, KeyError, TypeError, AssertionError):
            raise ShareRecordError(f"the record of a share in {self.what} '{self.dir}' is damaged: refusing to "
                                   "answer without it (a share answers once)") from None

    def write(self, share, steps):
        record = {"share": share, "steps": sorted(steps),
                  "updated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        _replace(self.dir / "steps.json", json.dumps(record, indent=1).encode())


def is_opened(path):
    """Whether the share file at ``path`` carries the mark of a first use."""
    try:
        with zipfile.ZipFile(path) as z:
            return any(n.split(".")[0] == _MARK for n in z.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def _opening_step(path):
    """The step whose answer opened the share file (``None``: not opened, or opened before marks named it)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return json.loads(str(z[_MARK])).get("step") if _MARK in z.files else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _mark_opened(path, share, step):
    """Rewrite the share file with the ``opened`` mark (atomically; the same shares, the file's own mode)."""
    mode = os.stat(path).st_mode & 0o777  # an operator's read-only share stays read-only
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays[_MARK] = np.array(json.dumps({"share": share, "step": int(step), "time": datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec="seconds")}))
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    _replace(Path(path), buf.getvalue(), mode)


def _one_name(path):
    """Refuse a share file with other hard links: its mark would go to this name only, the others stay unused."""
    links = os.stat(path).st_nlink
    if links > 1:
        raise ShareRecordError(f"share file '{path}' has {links - 1} other hard link(s): a share is one file "
                               "(another name would look unused); keep one name and remove the others")


def answered_in_process(plan_digest, site):
    """Whether this process's sites answered a step of the share (its in-memory record)."""
    return bool(_PROCESS.get(share_id(plan_digest, site)))


class ShareRecord:
    """The steps one share has answered, kept with the share (see the module's text); one per accepted bundle.

    ``path`` is the share file the bundle was read from (``None``: a bundle dealt in this process, recorded
    in the process only -- it exists nowhere else).
    """

    def __init__(self, plan_digest, site, path=None):
        self.id = share_id(plan_digest, site)
        # a symlink's target is the share: its record and its mark belong beside the file, not the link
        self.path = None if path is None else Path(path).resolve()
        self._places = []
        if self.path is not None:
            _one_name(self.path)
            sidecar = self.path.with_name(self.path.name + ".spent")
            registry = check_writable(registry_root() / "shares", "the share registry (DPMOMENTS_STATE_HOME)")
            self._places = [_Place(registry / self.id, "the share registry"),
                            _Place(check_writable(sidecar, "the share's record"), "the share's record")]
            check_writable(self.path.parent, "the share file's directory")  # the opened mark is renamed in there
            with self._locked():
                self._answered()  # refuses at once a share whose record is missing

    @contextlib.contextmanager
    def _locked(self):
        with _PROCESS_LOCK, contextlib.ExitStack() as stack:
            for place in self._places:  # always in this order: the registry, then the sidecar
                stack.enter_context(place.locked())
            yield

    def _answered(self):
        steps = set(_PROCESS.get(self.id, ()))
        for place in self._places:
            steps |= place.steps(self.id)
        if self.path is not None and is_opened(self.path):
            opening = _opening_step(self.path)  # records without the step that opened it were deleted or edited
            if not steps or (opening is not None and opening not in steps):
                raise ShareRecordError(f"share file '{self.path}' was used before and its record is missing or does "
                                       f"not match it ('{self._places[1].dir}' and the registry): refusing it (a share "
                                       "answers once)")
        return steps

    def answered(self):
        """The steps this share has answered, wherever it was used on this machine."""
        with self._locked():
            return sorted(self._answered())

    def spend(self, step):
        """Record ``step`` as answered, durably, before any answer; :class:`~.ledger.Refused` if it was."""
        with self._locked():
            steps = self._answered()
            if int(step) in steps:
                raise Refused("already-answered")
            steps.add(int(step))
            for place in self._places:
                place.write(self.id, steps)
            if self.path is not None and not is_opened(self.path):
                _mark_opened(self.path, self.id, step)
            _PROCESS[self.id] = steps
