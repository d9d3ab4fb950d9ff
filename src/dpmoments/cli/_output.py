"""An atomic results directory: everything or nothing.

Results are written into a temporary directory next to the destination
(``tempfile.mkdtemp(dir=parent)``, so both are on one file system), which is
renamed to the final name with ``os.replace`` only once every file is
written. An error or an interrupt removes the temporary directory, so a
failed run leaves neither a half-written result nor debris. An existing
non-empty destination is refused unless ``force`` is given; then it is moved
aside, replaced, and deleted only after the rename succeeded.
"""

import csv
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ._args import CliError
from ._io import ensure_parent

__all__ = ["ResultsDir", "check_destination"]

TEMP_PREFIX = ".dpmoments-tmp-"


def check_destination(out, force=False):
    """Fail early (before touching the data) if ``out`` cannot be written."""
    out = Path(out)
    ensure_parent(out)
    if out.exists() and not out.is_dir():
        raise CliError(f"the output '{out}' exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise CliError(f"the output directory '{out}' exists and is not empty; use --force to replace it")
    return out


class ResultsDir:
    """``with ResultsDir(out, force) as res: res.save_matrix(...)``: published on a clean exit only."""

    def __init__(self, out, force=False):
        self.final = check_destination(out, force)
        self.force = force
        self.files = []
        self.tmp = None

    def __enter__(self):
        self.tmp = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=self.final.resolve().parent))
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return False
        try:
            self._publish()
        except BaseException:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        return False

    def _publish(self):
        old = None
        if self.final.exists():
            check_destination(self.final, self.force)  # it may have appeared while we worked
            old = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=self.tmp.parent))
            os.replace(self.final, old / "old")
        try:
            os.replace(self.tmp, self.final)
        except BaseException:
            if old is not None:
                os.replace(old / "old", self.final)
            raise
        finally:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)

    # -- writers ---------------------------------------------------------------------
    def path(self, name):
        self.files.append(name)
        return self.tmp / name

    def save_matrix(self, stem, A, labels=None):
        """``stem.npy`` and ``stem.csv`` (with row and column labels when given)."""
        A = np.asarray(A)
        np.save(self.path(f"{stem}.npy"), A)
        with open(self.path(f"{stem}.csv"), "w", newline="") as f:
            w = csv.writer(f)
            if labels is not None:
                w.writerow([""] + list(labels))
            for k, row in enumerate(A):
                w.writerow(([labels[k]] if labels is not None else []) + [repr(float(v)) for v in row])

    def save_table(self, name, header, rows):
        with open(self.path(name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)

    def save_json(self, name, obj):
        with open(self.path(name), "w") as f:
            json.dump(obj, f, indent=2, default=_jsonable)
            f.write("\n")

    def save_text(self, name, text):
        self.path(name).write_text(text)

    def save_figure(self, stem, ax):
        """``stem.png`` and ``stem.svg`` of the figure holding ``ax``."""
        fig = ax.figure
        fig.savefig(self.path(f"{stem}.png"), dpi=150)
        fig.savefig(self.path(f"{stem}.svg"))


def _jsonable(obj):
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)
