"""Real tables the coverage benchmark does not use, run as a new user would: ``python -m benchmarks real_unseen``.

An audit of every analysis on real data that the error budget was not tuned on (statsmodels' anes96,
modechoice, engel, statecrime, ccard, spector, cpunish, longley, stackloss, fertility, heart,
china_smoking, committee, copper, scotland, strikes, danish_data, co2; scikit-learn's linnerud and
digits), in raw units, with their mixed units, 0/1 columns, text columns, pandas indexes and missing
values as shipped.

**The command line** (second table): each table is written to CSV (its index too, where it is not a plain
range) and Parquet, and every command runs with defaults only (``covariance``, ``pca --n-components 3``,
``precision``, ``regress --target``, ``select --target``, ``tensor --model mog --sigma2 1 --n-components 2``,
the one public number each needs) at epsilon 1 and 4, delta 1e-6, seed 0, from the CSV; ``covariance`` also
from the Parquet file, whose printed estimates must equal the CSV's. Counted: exits other than 0 and 2
(crashes), tracebacks, a number of the table (4 or more digits, as written in the CSV) in the output
that is not in the command line, ``inf`` printed, refusals (exit 2) that name no way on (an option, a
larger epsilon, a public value).

**Coverage** (first table): the library's estimators with their defaults on the numeric columns (columns
missing over 10%, then rows with a missing value, dropped), at epsilon 1 and 4, ``SEEDS`` seeded fits:
the share of 90% intervals that hold the full-data value and the share of the entries whose interval
excludes 0 that miss it, as in ``benchmarks/coverage.py`` (covariance, PCA eigenvalues, LAD by IRLS; whose functions it reuses).
``--quick`` runs 3 seeds and the command line at epsilon 4 only (as it does on tables under 200 rows);
``REAL_UNSEEN_TABLES=digits,co2`` runs the command line on those tables only.
"""

import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from .timing import Table, log

EPSILONS = (1.0, 4.0)
SEEDS = 10
TIMEOUT = 180  # seconds for one command
SMALL = 200  # rows: the command line runs at epsilon 4 only (every table this small is refused there)
# table -> its target (regress and select); None: one column, no regression
TARGETS = {"anes96": "selfLR", "modechoice": "invt", "engel": "foodexp", "statecrime": "murder", "ccard": "AVGEXP",
           "spector": "GRADE", "cpunish": "EXECUTIONS", "longley": "TOTEMP", "stackloss": "STACKLOSS",
           "fertility": "2010", "heart": "survival", "china_smoking": "smoking_yes_cancer_yes", "committee": "BILLS104",
           "copper": "WORLDCONSUMPTION", "scotland": "YES", "strikes": "duration", "danish_data": "lrm",
           "co2": None, "linnerud": "Pulse", "digits": "target"}
COMMANDS = {"covariance": [], "pca": ["--n-components", "3"], "precision": [], "regress": ["--target"],
            "select": ["--target"], "tensor": ["--model", "mog", "--sigma2", "1", "--n-components", "2"]}
WAY_ON = re.compile(r"--[a-z]|give |runs? from|remove|impute|rename|read it|public|larger|name them", re.I)


def tables():
    """name -> DataFrame, as each package ships it (index, text columns and missing values kept)."""
    import pandas as pd
    import statsmodels.api as sm
    from sklearn import datasets as skd

    out = {name: getattr(sm.datasets, name).load_pandas().data for name in TARGETS
           if name not in ("linnerud", "digits")}
    linnerud = skd.load_linnerud(as_frame=True)
    out["linnerud"] = pd.concat([linnerud.data, linnerud.target], axis=1)
    out["digits"] = skd.load_digits(as_frame=True).frame
    return out


# -- the command line -----------------------------------------------------------------------------------------------
def _write(frame, folder, name):
    import pandas as pd

    plain = isinstance(frame.index, pd.RangeIndex)
    csv, parquet = folder / f"{name}.csv", folder / f"{name}.parquet"
    frame.to_csv(csv, index=not plain)
    frame.to_parquet(parquet)
    return csv, parquet


def _data_numbers(csv):
    """Every number of 4 or more digits as the CSV writes it (what a leak of a data value would print)."""
    text = csv.read_text().split("\n", 1)[-1]  # the header's names (a column named 2012) are not data
    return {t for t in re.findall(r"-?\d+(?:\.\d+)?", text) if sum(c.isdigit() for c in t) >= 4}


def _run(path, command, epsilon, target, out):
    argv = [sys.executable, "-m", "dpmoments", command, str(path), "--epsilon", f"{epsilon:g}", "--delta", "1e-6",
            "--seed", "0", "--out", str(out), "--no-figures", "--force"]
    argv += [*COMMANDS[command], target] if COMMANDS[command][-1:] == ["--target"] else COMMANDS[command]
    if command == "select":
        argv.remove("--delta"), argv.remove("1e-6")  # pure epsilon-DP: no delta
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {TIMEOUT} s", argv
    return done.returncode, done.stdout, done.stderr, argv


def _findings(rc, stdout, stderr, argv, numbers):
    said = stdout + stderr
    found = []
    if rc is None:
        found.append("timeout")
    elif rc not in (0, 2):
        found.append(f"exit {rc}")
    if "Traceback" in said:
        found.append("traceback")
    given = " ".join(argv)
    leaked = sorted({t for t in re.findall(r"-?\d+(?:\.\d+)?", said) if t in numbers and t not in given})
    if leaked:
        found.append("data value? " + ",".join(leaked[:3]))
    if re.search(r"(?<![\w.])-?inf(?![\w])", stdout, re.I):
        found.append("inf printed")
    if rc == 2 and not WAY_ON.search(stderr):
        found.append("refusal names no way on")
    return found


def _printed_estimates(stdout):
    return [line for line in stdout.splitlines() if not line.startswith(("results in", "covariance about"))]


def cli_table(quick=False):
    table = Table("the command line, defaults only, seed 0 (exit: 0 ran, 2 refused in one line)",
                  ["table", "n x d", "command", "epsilon", "exit", "findings", "first line of the refusal"])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        chosen = [t for t in os.environ.get("REAL_UNSEEN_TABLES", "").split(",") if t]
        for name, frame in tables().items():
            if chosen and name not in chosen:
                continue
            csv, parquet = _write(frame, folder, name)
            numbers = _data_numbers(csv)
            for command in COMMANDS:
                target = TARGETS[name]
                if COMMANDS[command][-1:] == ["--target"] and target is None:
                    continue
                small = len(frame) < SMALL  # refused at epsilon 4 (runs from 8 to 160): so at 1
                for epsilon in (EPSILONS[-1:] if quick or small else EPSILONS):
                    t0 = time.time()
                    rc, out, err, argv = _run(csv, command, epsilon, target, folder / "out")
                    found = _findings(rc, out, err, argv, numbers)
                    if command == "covariance" and rc == 0:
                        rc_p, out_p, err_p, argv_p = _run(parquet, command, epsilon, target, folder / "out")
                        found += [f"parquet: {f}" for f in _findings(rc_p, out_p, err_p, argv_p, numbers)]
                        if rc_p != rc or _printed_estimates(out_p) != _printed_estimates(out):
                            found.append("parquet differs from csv")
                    refusal = next((line for line in err.splitlines() if "error:" in line), "") if rc else ""
                    refusal = refusal.split("error: ", 1)[-1][:110]
                    table.rows.append([name, "x".join(map(str, frame.shape)), command, f"{epsilon:g}", rc,
                                       "; ".join(found) or "-", refusal.replace("|", "/")])
                    log(f"{name} {command} eps={epsilon:g}: exit {rc} {found} ({time.time() - t0:.1f} s)")
    table.notes.append("n x d: the table as shipped (text columns and the index included); the command line leaves "
                       "out text columns and a pandas index, with a note.")
    return table


# -- coverage of the library's intervals -----------------------------------------------------------------------------
def _numeric(frame, target=None):
    data = frame.select_dtypes("number")
    data = data.loc[:, data.isna().mean() <= 0.1].dropna()  # fertility: every row misses a year somewhere
    if target is None:
        return data.to_numpy(float)
    return data.drop(columns=[target]).to_numpy(float), data[target].to_numpy(float)


def coverage_table(quick=False):
    from .coverage import ANALYSES, _Tally

    seeds = range(3 if quick else SEEDS)
    table = Table(f"the library's 90% intervals, defaults, delta = 1e-6, {len(seeds)} seeded fits each",
                  ["table", "n x d", "analysis", "epsilon", "hold full", "excl. 0 miss (n)", "width / |full|",
                   "noise-only width / |full|", "width / noise-only", "inf", "withheld", "refused"])
    for name, frame in tables().items():
        for analysis, fit in ANALYSES.items():
            target = TARGETS[name] if analysis.startswith("IRLS") else None
            if analysis.startswith("IRLS") and target is None:
                continue
            data = _numeric(frame, target)
            X = data[0] if isinstance(data, tuple) else data
            for epsilon in EPSILONS:
                tally = _Tally()
                for seed in seeds:
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            interval, noise, full, _ = fit(data, epsilon, seed)
                    except ValueError:
                        tally.refused += 1
                        continue
                    tally.add(interval, noise, full)
                row = tally.row(name, analysis, epsilon)
                table.rows.append([row[0], "x".join(map(str, X.shape)), *row[1:4], *row[5:]])
                log(f"{name} {analysis} eps={epsilon:g}: {row[3:6]}, refused {row[-1]}")
    table.notes.append("n x d: the numeric columns without the target (columns missing over 10%, then rows with a "
                       "missing value, dropped).")
    return table


def run(quick=False):
    return [coverage_table(quick), cli_table(quick)]
