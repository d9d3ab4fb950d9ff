"""The moment commands on a Dask cluster: ``--scheduler ADDRESS`` (or ``DASK_SCHEDULER_ADDRESS``).

With a scheduler, the data are opened by the workers (:func:`~dpmoments.data.dask_tables.open_dask_table`)
and every pass (the private choices' and the release's) runs as tasks that each return a small
partial sum: no row passes through this process, which holds the sums and the release only. The
workers need dpmoments installed (the same version) and must see the data at the same path; see
``docs/cluster.md``. Progress is the rows the workers report having read (an event per block).
"""

import os
import sys
from contextlib import contextmanager
from pathlib import Path

from ._args import CliError
from ._progress import Progress

__all__ = ["scheduler_address", "ClusterSource", "on_cluster", "print_notes"]

#: How long to wait for the scheduler to answer.
CONNECT_TIMEOUT = "15s"


def scheduler_address(args):
    """``--scheduler``, else ``DASK_SCHEDULER_ADDRESS``, else the dask configuration's; None: run here."""
    text = getattr(args, "scheduler", None)
    if text is not None:
        return None if text.strip().lower() in ("none", "local", "") else text.strip()
    if os.environ.get("DASK_SCHEDULER_ADDRESS"):
        return os.environ["DASK_SCHEDULER_ADDRESS"]
    if not _dask_config_present():
        return None  # dask's configuration is not imported (0.3 s) when it cannot say anything
    import dask.config

    return dask.config.get("scheduler-address", None) or None


def _dask_config_present():
    dirs = [os.environ.get("DASK_CONFIG"), os.path.join(os.path.expanduser("~"), ".config", "dask"), "/etc/dask",
            os.path.join(sys.prefix, "etc", "dask")]
    return any(d and os.path.isdir(d) and os.listdir(d) for d in dirs) or any(
        k.startswith("DASK_") for k in os.environ)


@contextmanager
def on_cluster(address):
    """A ``distributed.Client`` for the run, the default scheduler of every dask computation inside."""
    try:
        from distributed import Client
    except ImportError:
        raise CliError("--scheduler needs dask's distributed package: pip install 'dpmoments[dask]'") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=True)
    except (OSError, TimeoutError, ValueError) as exc:
        raise CliError(f"could not reach the dask scheduler at '{address}' ({type(exc).__name__}); is it running, "
                       "and is the address tcp://HOST:PORT?") from None
    try:
        yield client
    finally:
        client.close()


class ClusterSource:
    """A data source opened by the cluster's workers; the interface of :class:`~._io.DataSource` a run uses."""

    def __init__(self, client, path, columns=None, target=None):
        from ..data.dask_tables import open_dask_table
        from ._args import parse_columns, parse_target
        from ._io import _FILE_OPTIONS, _option, source_names

        listed = isinstance(path, (list, tuple))  # several files given one by one
        self.client, self.given = client, [str(p) for p in path] if listed else str(path)
        self.path = Path(self.given[0] if listed else self.given)
        self.name, self.shown = source_names(self.given)
        self.columns, self.target = parse_columns(columns), parse_target(target)
        try:
            self.table = open_dask_table(self.given, columns=self.columns, target=self.target,
                                         delimiter=_FILE_OPTIONS["delimiter"], header=_FILE_OPTIONS["header"],
                                         exclude=parse_columns(_FILE_OPTIONS["exclude"], "--exclude"),
                                         categories=_option("categories", False), impute=_option("impute", False))
        except FileNotFoundError as exc:  # found missing by a worker, which was given the absolute path
            raise CliError(self._as_given(str(exc))) from None
        except ValueError as exc:  # the reader's (a list of files of other columns or formats): paths as typed
            raise ValueError(self._as_given(str(exc))) from None
        self.kind, self.feature_names = self.table.format, self.table.feature_names
        self.all_names, self.total_rows, self.n_rows = self.table.names, self.table.n_rows, None
        self.delimiter, self.header = _FILE_OPTIONS["delimiter"], _FILE_OPTIONS["header"]
        self.notes = [self._as_given(n) for n in self.table.notes]

    def _as_given(self, text):
        """A message of the workers' reader with the paths as the user typed them (it was given absolute ones)."""
        for given in self.given if isinstance(self.given, list) else [self.given]:
            text = text.replace(os.path.abspath(given), given)
        return text

    @property
    def n_features(self):
        return len(self.feature_names)

    @property
    def data(self):
        """The dask array of the features (or the ``(X, y)`` pair): pass it to a release or an estimator."""
        return self.table.X if self.table.y is None else (self.table.X, self.table.y)

    def fingerprint(self, progress=None):
        raise CliError("--fingerprint reads the file here, which --scheduler avoids; fingerprint it on a machine "
                       "that holds it (sha256sum), or run without --scheduler")

    def nbytes(self):
        return None

    def describe(self):
        return {"path": self.given, "format": self.kind, "columns": self.feature_names,
                "target": None if self.target is None else str(self.target), "scheduler": "distributed"}

    @contextmanager
    def progress(self, label, total, enabled):
        """A progress line fed by the workers' row counts while the passes run."""
        from ..data.dask_tables import PROGRESS_TOPIC

        with Progress(label, total=total, enabled=enabled) as bar:
            self.client.subscribe_topic(PROGRESS_TOPIC, lambda event: bar.update(event[1]))
            try:
                yield bar
            finally:
                self.client.unsubscribe_topic(PROGRESS_TOPIC)


def print_notes(source, quiet):
    """The reader's one-line notes (a hive partition column left out of the numbers) on stderr."""
    if not quiet:
        for note in getattr(source, "notes", ()):
            print(f"note: {note}", file=sys.stderr)
