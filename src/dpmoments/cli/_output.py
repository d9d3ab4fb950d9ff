"""Where results go: a destination that can never hold an input, written all at once.

:func:`check_destination` runs before the data are touched. It refuses an
``--out`` that is, contains or lies inside an input, that is or contains the
working directory, that is a link, or whose parent cannot be written (the
temporary directory lives in that parent, never elsewhere). An existing
non-empty directory is replaced only with ``--force`` and only when it holds
the marker file :data:`MARKER`, which dpmoments writes into every result, and
nothing but the files that marker lists: a directory of someone's own files,
or an old result someone has since added files to, is never deleted.

:class:`ResultsDir` writes into a marked temporary directory beside the
destination (see :mod:`._temps`), checks that every file is non-empty, and
publishes it with one atomic swap while interrupts are held back. An error,
Ctrl-C or SIGTERM removes the temporary; a SIGKILL leaves it for the next
run to sweep. Large matrices are written as ``.npy`` only; a ``.csv`` copy
is added when the matrix has at most :data:`CSV_MAX_CELLS` entries, or
always with ``--csv``.
"""

import contextlib
import csv
import functools
import json
import os
import shutil
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .._version import __version__
from ._args import DEFAULT_FIGURE_FORMATS, CliError
from ._signals import held
from ._temps import TEMP_PREFIX, exchange, make_temp, rename_noreplace, sweep

__all__ = ["ResultsDir", "check_destination", "figures_ahead", "MARKER", "CSV_MAX_CELLS", "TEMP_PREFIX", "RUN"]

MARKER = ".dpmoments-results"
#: The largest matrix (in entries, e.g. 100 x 100) also written as CSV without --csv.
CSV_MAX_CELLS = 10_000


class _Run:
    """What the command line knows about the current run: its inputs, CSV preference and results."""

    def __init__(self):
        self.begin()

    def begin(self, command=None, inputs=(), csv=False, figure_formats=None):
        self.command, self.csv = command, bool(csv)
        self.figure_formats = tuple(figure_formats or DEFAULT_FIGURE_FORMATS)
        self.inputs = [Path(p) for p in inputs if p]
        self.published = []  # (destination as given, {name: JSON document})
        self.document = None  # the --json document of a command that writes no results directory


RUN = _Run()


def _resolved(path):
    return Path(os.path.abspath(path)).resolve()


def _within(inner, outer):
    return inner == outer or outer in inner.parents


class _Destination(NamedTuple):
    given: str  # as the user typed it: the messages quote it
    out: Path
    force: bool
    inputs: list


def _not_a_link(d):
    if os.path.islink(d.out):
        return f"the output '{d.given}' is a symbolic link; give the directory itself"


def _not_the_working_directory(d):
    target, here = _resolved(d.out), Path.cwd().resolve()
    if _within(here, target):
        what = "is" if target == here else "contains"
        return (f"the output '{d.given}' {what} the working directory; results go into a new directory of their "
                "own: give one, e.g. --out results")


def _apart_from_the_inputs(d):
    target = _resolved(d.out)
    for path in d.inputs:
        source = _resolved(path)
        if _within(source, target) or _within(target, source):
            what = "is" if source == target else "contains" if _within(source, target) else "lies inside"
            return f"the output '{d.given}' {what} the input '{path}'; choose another --out"


def _parent_writable(d):
    parent = _resolved(d.out).parent
    if not parent.is_dir():
        return f"the parent directory of the output '{d.given}' does not exist"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot write into the parent directory of the output '{d.given}' (permission denied)"


def _a_directory(d):
    if d.out.exists() and not d.out.is_dir():
        return f"the output '{d.given}' exists and is not a directory"


def _empty_or_replaceable(d):
    if not (d.out.is_dir() and any(d.out.iterdir())):
        return None
    if not d.force:
        return f"the output directory '{d.given}' exists and is not empty; use --force to replace it"
    written = _marked_files(d.out)
    if written is None:
        return (f"the output directory '{d.given}' was not written by dpmoments (it has no valid {MARKER} file), so "
                "--force will not replace it: choose another --out or empty it yourself")
    # a share's record of its use (multisite/spent.py) goes with the share: a new dealing voids both
    others = sorted(name for name in os.listdir(d.out)
                    if name not in written and name.removesuffix(".spent") not in written)
    if others:  # files someone added to an old result are theirs: replacing it would delete them
        return (f"the output directory '{d.given}' holds {len(others)} file(s) dpmoments did not write there (e.g. "
                f"'{others[0]}'), so --force will not replace it: move them out or choose another --out")


#: Where ``--out`` may go, checked in this order (the first failure is the error) ...
WHERE_CHECKS = (_not_a_link, _not_the_working_directory, _apart_from_the_inputs, _parent_writable)
#: ... then, once the parent is swept of dead runs' leftovers (which may put an old result back), what is there.
WHAT_CHECKS = (_a_directory, _empty_or_replaceable)


def check_destination(out, force=False, inputs=None):
    """Fail early (before touching the data) if ``out`` cannot or may not be written."""
    d = _Destination(str(out), Path(out), force, RUN.inputs if inputs is None else [Path(p) for p in inputs])
    _refuse_first(d, WHERE_CHECKS)
    sweep(_resolved(d.out).parent)
    _refuse_first(d, WHAT_CHECKS)
    return d.out


def _refuse_first(d, checks):
    for check in checks:
        problem = check(d)
        if problem:
            raise CliError(problem)


def _why_not_written(exc, where):
    """The reason a write failed, holding no data: the errno's text, or what a short write means."""
    if exc.errno:
        return exc.strerror or os.strerror(exc.errno)
    try:  # numpy reports a short write as "N requested and M written", with no errno
        free = shutil.disk_usage(where).free
    except OSError:
        free = None
    if free is not None and free < 1 << 20:
        return f"No space left on device ({free} bytes free)"
    return "the file came out short (a full disk or an exceeded quota is the usual cause)"


def _writing(method):
    """A writer whose OSError (a full disk, a quota, a read-only file system) is one line naming the file."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except OSError as exc:
            raise self.write_error(exc) from exc

    return wrapper


def _marked_files(out):
    """The names the marker of a dpmoments result lists (the marker included), or None if it is not one."""
    path = out / MARKER
    if path.is_symlink() or not path.is_file():  # never open a pipe or follow a link planted there
        return None
    try:
        with open(path) as f:
            marker = json.loads(f.read(1 << 20))
        files = marker["files"] if marker.get("written_by") == "dpmoments" else None
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None
    if not isinstance(files, list) or not all(isinstance(name, str) for name in files):
        return None
    return set(files) | {MARKER}


class ResultsDir:
    """``with ResultsDir(out, force) as res: res.save_matrix(...)``: published on a clean exit only."""

    def __init__(self, out, force=False, csv=None, figure_formats=None):
        self.given = str(out)
        self.final = check_destination(out, force)
        self.force, self.csv = force, RUN.csv if csv is None else bool(csv)
        self.figure_formats = tuple(figure_formats or RUN.figure_formats)
        self.files, self.documents, self.tmp, self.adding = [], {}, None, False

    def __enter__(self):
        self.tmp = make_temp(_resolved(self.final).parent)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return False
        try:
            self._finish()
        except OSError as exc:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise self.write_error(exc, finishing=True) from exc
        except BaseException:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        return False

    def _finish(self):
        empty = [name for name in self.files if (self.tmp / name).stat().st_size == 0]
        if empty:
            raise CliError(f"writing the results failed: {', '.join(empty)} came out empty; nothing was published")
        with open(self.tmp / MARKER, "w") as f:
            json.dump(_marker(self.files), f)
        _sync(self.tmp)
        with held():  # Ctrl-C or SIGTERM now would come right after the swap, never half way
            self._publish()
            RUN.published.append((self.given, self.documents))

    @contextlib.contextmanager
    def added(self):
        """``with res.added(): res.save_figure(...)``: files added to the result already published (the figures).

        The result (its files, report and console table) is complete before matplotlib draws a thing: an
        interrupted or failed figure leaves it as it was. The new files are written into a marked temporary
        directory beside it, listed in its marker first (a later ``--force`` may then replace them), then
        moved in while interrupts are held back. Nothing is added when an error or Ctrl-C stops the block.
        """
        final, published = _resolved(self.final), len(self.files)
        self.tmp, self.adding = make_temp(final.parent), True
        try:
            yield self
            with held():
                _write_marker(final, self.files)
                for name in self.files[published:]:
                    os.replace(self.tmp / name, final / name)
        except OSError as exc:
            raise self.write_error(exc) from exc
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.adding = False

    def _publish(self):
        final = _resolved(self.final)
        try:
            rename_noreplace(self.tmp, final)
            return
        except FileExistsError:
            pass
        check_destination(self.given, self.force)  # it may have appeared or changed while we worked
        exchange(self.tmp, final)
        shutil.rmtree(self.tmp, ignore_errors=True)  # now the old result

    def write_error(self, exc, finishing=False):
        """``exc`` (an OSError while writing) as one line naming the file and ``--out``, never a data value."""
        what = "finish the results" if finishing or not self.files else f"write '{self.files[-1]}'"
        if isinstance(exc, CliError):  # already one line (a writer inside added())
            return exc
        after = ("the results were published before it, without the figures" if self.adding else
                 "nothing was published (an old result there is untouched)")
        return CliError(f"could not {what} in --out '{self.given}': {_why_not_written(exc, self.tmp)}; {after}")

    # -- writers ---------------------------------------------------------------------
    def path(self, name):
        self.files.append(name)
        return self.tmp / name

    def wants_csv(self, cells):
        return self.csv or cells <= CSV_MAX_CELLS

    @_writing
    def save_matrix(self, stem, A, labels=None):
        """``stem.npy``, and ``stem.csv`` (with row and column labels) when small or asked for."""
        A = np.asarray(A)
        self.save_array(f"{stem}.npy", A)
        if not self.wants_csv(A.size):
            return
        with open(self.path(f"{stem}.csv"), "w", newline="") as f:
            w = csv.writer(f)
            if labels is not None:
                w.writerow([""] + list(labels))
            for k, row in enumerate(A):
                w.writerow(([labels[k]] if labels is not None else []) + [repr(float(v)) for v in row])

    @_writing
    def save_array(self, name, A):
        """``name`` (a ``.npy``) holding ``A``."""
        with open(self.path(name), "wb") as f:  # np.save(path) lets a full disk pass silently (small arrays)
            np.save(f, np.asarray(A))

    @_writing
    def save_table(self, name, header, rows):
        with open(self.path(name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)

    @_writing
    def save_json(self, name, obj):
        self.documents[name] = obj
        with open(self.path(name), "w") as f:
            json.dump(obj, f, indent=2, default=_jsonable)
            f.write("\n")

    @_writing
    def save_text(self, name, text):
        self.path(name).write_text(text)

    @_writing
    def save_figure(self, stem, ax):
        """``stem.png`` (and ``.svg``, ``.pdf``: ``--figure-format``) of the figure holding ``ax``.

        The layout is computed once, for the first format, then frozen for the others: laying out
        again cost a quarter of the figure's time (a labelled 50 x 50 heat map: about 0.3 s of 1.3 s).
        """
        fig = ax.figure
        with _glyphs_noted(stem):
            for fmt in self.figure_formats:
                fig.savefig(self.path(f"{stem}.{fmt}"), dpi=150 if fmt == "png" else "figure")
                if fig.get_layout_engine() is not None:
                    fig.set_layout_engine("none")  # keeps the positions just computed


@contextlib.contextmanager
def _glyphs_noted(name):
    """matplotlib warns once per character its font lacks (a CJK column name: one line per glyph, per format); say
    it once instead. Other warnings pass on as they came."""
    import sys
    import warnings

    with warnings.catch_warnings(record=True) as caught:  # the filters in force are kept: what they let pass
        yield
    glyph = [w for w in caught if "missing from font" in str(w.message)]
    for w in caught:
        if w not in glyph:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    if glyph:
        print(f"dpmoments: note: the figure's font lacks some characters of the column names, shown as boxes in "
              f"the figure '{name}'; the tables name them in full", file=sys.stderr)


def figures_ahead(args):
    """What to do while the data file is parsed ahead (:class:`~._io.DataSource`): import the figures' modules.

    matplotlib takes 0.6-0.9 s to import; a command that draws figures imports it during its pass over
    the data instead of after it. ``None`` when no figures are drawn.
    """
    if getattr(args, "no_figures", True):
        return None

    def import_figures():
        from .. import plots  # noqa: F401

    return import_figures


def _marker(files):
    return {"written_by": "dpmoments", "version": __version__, "command": RUN.command, "files": sorted(files)}


def _write_marker(directory, files):
    """Replace the marker of a published result at once (a new file renamed over it)."""
    part = directory / f"{MARKER}.part"
    try:
        with open(part, "w") as f:
            json.dump(_marker(files), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, directory / MARKER)
    except BaseException:
        part.unlink(missing_ok=True)  # a stray file would keep a later --force from replacing the result
        raise


def _sync(directory):
    """Flush every file to disk before the swap, so a crash cannot publish empty files."""
    for entry in os.scandir(directory):
        if entry.is_file(follow_symlinks=False):
            fd = os.open(entry.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _jsonable(obj):
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return str(obj)
