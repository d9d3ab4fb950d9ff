"""``python -m benchmarks NAME [--quick]`` / ``python -m benchmarks --list``.

Runs one benchmark with BLAS pinned to one thread, prints its tables of
ratios (each measured against a reference timed in the same run) and writes
``benchmarks/results/NAME.md`` (``NAME-quick.md`` with ``--quick``, so a
quick check never overwrites the full-size record) with the command, the
date and the machine.
"""

import argparse
import datetime
import os
import platform
import shlex
import sys
from pathlib import Path

from . import BENCHMARKS  # sets OPENBLAS_NUM_THREADS=1 before numpy loads

import numpy as np  # noqa: E402
import scipy  # noqa: E402
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


# environment variables that choose what a benchmark runs
SELECTING = ("COVERAGE_ANALYSES", "COVERAGE_DATA", "COVERAGE_EPSILONS", "COVERAGE_FITS", "DPM_ROWS", "DPM_REPEAT", "DPM_OFFSET",
             "DPM_BASELINE_SRC", "DPM_BASELINE_LABEL", "PCA_WIDTH_BIAS", "PCA_WIDTH_TAIL_RATIO")


def _command(argv):
    """The command that reruns this benchmark, as a user types it: ``python``, not this machine's interpreter path
    (the results are read on other machines, and the repository names no path outside itself)."""
    chosen = [f"{k}={shlex.quote(_shown_value(k))}" for k in SELECTING if os.environ.get(k)]  # they change the run
    return " ".join([*chosen, "python", "-m", "benchmarks", *map(shlex.quote, argv)])


def _shown_value(key):
    """A selecting variable's value as the results file shows it: a baseline tree's path is this machine's, so the
    file names what it was (``DPM_BASELINE_LABEL`` says which commit), not where."""
    return "<baseline checkout>/src" if key == "DPM_BASELINE_SRC" else os.environ[key]


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _machine():
    """Machine facts, read while the thread limit is in force."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    blas = [f"{p['internal_api']} {p.get('version') or ''} ({p['user_api']}): {p['num_threads']} thread(s)"
            for p in threadpool_info()]
    import dpmoments

    return {
        "CPU": f"{_cpu_model()}; os.cpu_count() = {os.cpu_count()}, usable = {usable}",
        "load average at start (1, 5, 15 min)": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "platform": platform.platform(),
        "Python": platform.python_version(),
        "numpy / scipy / dpmoments": f"{np.__version__} / {scipy.__version__} / {dpmoments.__version__}",
        "BLAS threads (threadpoolctl)": "; ".join(blas) or "none found",
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
    }


def _report(name, command, started, machine, tables):
    lines = [f"# Benchmark `{name}`", "", "Command (from the repository root):", "", "```", command, "```", "",
             f"Date: {started:%Y-%m-%d %H:%M:%S %Z}", "", "Machine:", ""]
    lines += [f"- {k}: {v}" for k, v in machine.items()]
    lines += ["", "Ratios are measured in this run against the reference of each row; absolute seconds are "
              "for context only (they drift with load).", ""]
    for table in tables:
        lines += [table.markdown(), ""]
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="Run one dpmoments benchmark (BLAS pinned to one thread) "
                                     "and write benchmarks/results/NAME.md.")
    parser.add_argument("name", nargs="?", help="benchmark to run (see --list)")
    parser.add_argument("--quick", action="store_true", help="sizes 10x smaller, for a smoke check")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, fn in BENCHMARKS.items():
            doc = (fn.__doc__ or sys.modules[fn.__module__].__doc__ or "").strip()  # a run without a docstring
            print(f"{name}: {doc.splitlines()[0] if doc else ''}")
        return 0
    if args.name not in BENCHMARKS:
        given = "no benchmark named" if args.name is None else f"unknown benchmark {args.name!r}"
        parser.error(f"{given}; choose one of: {', '.join(BENCHMARKS)}")
    started = datetime.datetime.now().astimezone()
    with threadpool_limits(1):
        machine = _machine()
        tables = BENCHMARKS[args.name](quick=args.quick)
    machine["load average at end (1, 5, 15 min)"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    report = _report(args.name, _command(argv), started, machine, tables)
    print("\n\n".join(t.markdown() for t in tables))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{args.name}{'-quick' if args.quick else ''}.md"
    path.write_text(report)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
