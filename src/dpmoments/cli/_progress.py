"""A one-line progress indicator on stderr (no dependency).

Shown only when stderr is a terminal and ``--quiet`` was not given, so logs,
pipes and tests see nothing. Redrawn at most ten times a second.
"""

import sys
import time

__all__ = ["Progress"]


class Progress:
    """``with Progress("reading", total=n) as bar: bar.update(k)``; ``total`` may be unknown (None)."""

    def __init__(self, label, total=None, unit="rows", enabled=True, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled and _isatty(self.stream)
        self.label, self.total, self.unit = label, total, unit
        self.done, self._last, self._start = 0, 0.0, time.monotonic()

    def __enter__(self):
        self._draw(force=True)
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def update(self, k=1):
        self.done += k
        self._draw()

    def close(self):
        if self.enabled:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False

    def _draw(self, force=False):
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        elapsed = now - self._start
        if self.total:
            frac = min(self.done / self.total, 1.0)
            bar = "#" * int(24 * frac)
            text = f"{self.label} [{bar:<24s}] {100 * frac:5.1f}% {_fmt(self.done)}/{_fmt(self.total)} {self.unit}"
        else:
            text = f"{self.label} {_fmt(self.done)} {self.unit}"
        self.stream.write(f"\r{text} {elapsed:5.1f}s\x1b[K")
        self.stream.flush()


def _fmt(x):
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= size:
            return f"{x / size:.1f}{unit}"
    return f"{x:g}"


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
