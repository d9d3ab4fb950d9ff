"""Temporary directories that say whose they are, an atomic swap, and the sweep of stale ones.

A run writes its results into ``.dpmoments-tmp-<pid>-<start>-<host>-<random>``
beside the destination. The name is the mark: it carries the owning
process (its id and start time, so a recycled process id is recognised)
and the host, from the moment the directory exists, so even a run killed by
SIGKILL one instruction later leaves a temporary that later runs can judge.
:func:`sweep` removes only directories with such a name whose owner, on this
host, is no longer running; it never follows links and never touches
anything else.

Publishing swaps the new directory and the old one in one system call
(``renameat2(RENAME_EXCHANGE)`` on Linux), so at every instant the
destination holds the complete old result or the complete new one. Where
the file system cannot exchange, the old result is first moved aside into
a marked ``.dpmoments-old-*`` directory; a sweep that finds one whose owner
died before the new result arrived puts the old result back.
"""

import ctypes
import errno
import hashlib
import os
import re
import secrets
import shutil
import socket
from pathlib import Path

__all__ = ["TEMP_PREFIX", "ASIDE_PREFIX", "make_temp", "sweep", "exchange", "rename_noreplace"]

TEMP_PREFIX = ".dpmoments-tmp-"
ASIDE_PREFIX = ".dpmoments-old-"
_NAME = re.compile(r"^(\.dpmoments-tmp-|\.dpmoments-old-)(\d+)-(\d+)-([0-9a-f]{8})-[0-9a-f]{8}$")
_AT_FDCWD, _RENAME_NOREPLACE, _RENAME_EXCHANGE = -100, 1, 2


def _host():
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _start_time(pid):
    """The process's start time in clock ticks since boot (Linux), or 0 where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


def make_temp(parent, prefix=TEMP_PREFIX):
    """Create and return a new marked directory in ``parent``."""
    pid = os.getpid()
    while True:
        path = Path(parent) / f"{prefix}{pid}-{_start_time(pid)}-{_host()}-{secrets.token_hex(4)}"
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue


def _owner_alive(pid, start):
    if pid == os.getpid() and start == _start_time(pid):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: alive
    return not (start and _start_time(pid) and _start_time(pid) != start)


def sweep(parent):
    """Remove the marked temporaries in ``parent`` whose owner (on this host) is gone; return how many."""
    removed, host = 0, _host()
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return 0
    for entry in entries:
        match = _NAME.match(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False) or match.group(4) != host:
            continue
        if _owner_alive(int(match.group(2)), int(match.group(3))):
            continue
        if match.group(1) == ASIDE_PREFIX:
            _restore(Path(entry.path), Path(parent))
        shutil.rmtree(entry.path, ignore_errors=True)
        removed += 1
    return removed


def _restore(aside, parent):
    """An old result moved aside by a run that died before the new one arrived goes back."""
    for inner in aside.iterdir():
        target = parent / inner.name
        if not os.path.lexists(target):
            try:
                os.rename(inner, target)
            except OSError:
                pass


_libc = None


def _renameat2(src, dst, flags):
    """``renameat2``; returns False where the system or file system does not offer it."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.renameat2  # noqa: B018 - raises AttributeError when absent
        except (OSError, AttributeError):
            _libc = False
    if _libc is False:
        return False
    if _libc.renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(dst))


def rename_noreplace(src, dst):
    """Move ``src`` to the absent ``dst``; FileExistsError if ``dst`` appeared meanwhile."""
    if _renameat2(src, dst, _RENAME_NOREPLACE):
        return
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, "exists", str(dst))
    os.rename(src, dst)


def exchange(new, final):
    """Put ``new`` at ``final`` (which exists) atomically; afterwards ``new`` holds the old content."""
    if _renameat2(new, final, _RENAME_EXCHANGE):
        return
    aside = make_temp(Path(final).parent, ASIDE_PREFIX)
    os.rename(final, aside / Path(final).name)
    try:
        os.rename(new, final)
    except BaseException:
        os.rename(aside / Path(final).name, final)
        shutil.rmtree(aside, ignore_errors=True)
        raise
    os.rename(aside, new)  # the caller removes the old content, as after an exchange
