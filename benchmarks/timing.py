"""Best-of-k timing and the ratio tables every benchmark returns."""

import sys
import threading
import time
from dataclasses import dataclass, field

__all__ = ["Table", "best_of", "best_of_each", "ratio", "log", "peak_anonymous_memory"]


def best_of(fn, repeat=3, min_total=1.0, max_repeat=20):
    """Fastest of at least ``repeat`` calls of ``fn()``, in seconds.

    Short calls are repeated until ``min_total`` seconds have passed (at
    most ``max_repeat`` calls), so that the minimum is not one lucky or
    unlucky scheduling slot. Returns ``(seconds, calls)``.
    """
    times, start = [], time.perf_counter()
    while len(times) < repeat or (time.perf_counter() - start < min_total and len(times) < max_repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), len(times)


def best_of_each(fns, repeat=3, min_total=1.0, max_repeat=20):
    """Fastest call of each of ``fns`` (a dict name -> callable), timed in turns.

    One round calls every function once, in order; rounds repeat until
    there were at least ``repeat`` of them and ``min_total`` seconds have
    passed (at most ``max_repeat`` rounds). Taking turns spreads a burst of
    load from other processes over all candidates instead of one, so the
    ratios stay fair. Returns ``({name: seconds}, rounds)``.
    """
    best, rounds, start = {name: float("inf") for name in fns}, 0, time.perf_counter()
    while rounds < repeat or (time.perf_counter() - start < min_total and rounds < max_repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
        rounds += 1
    return best, rounds


def ratio(seconds, reference):
    """``seconds / reference`` as ``1.23x``."""
    return f"{seconds / reference:.2f}×"


def log(message):
    """Progress on stderr (the table goes to stdout)."""
    print(message, file=sys.stderr, flush=True)


@dataclass
class Table:
    """One result table: a title, column headers, rows of cells, notes."""

    title: str
    columns: list
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def markdown(self):
        lines = [f"### {self.title}", "", "| " + " | ".join(self.columns) + " |",
                 "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in self.rows]
        if self.notes:
            lines += [""] + [f"- {note}" for note in self.notes]
        return "\n".join(lines)


def _rss_anon_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def peak_anonymous_memory(fn):
    """``(seconds, result, MiB)`` of ``fn()``: the peak of RssAnon above its start, sampled every millisecond.

    File pages (a memory map, the page cache) are not anonymous memory and are left out. Run it in a
    fresh process, so that no earlier allocation is counted or freed during the call.
    """
    base, peak, done = _rss_anon_kib(), [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _rss_anon_kib())
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    return seconds, out, max(0, peak[0] - base) / 1024
