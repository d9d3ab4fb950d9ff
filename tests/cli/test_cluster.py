"""The moment commands on a real dask cluster: a LocalCluster of two worker processes (one thread each).

``--scheduler`` must give what the in-memory path gives (same seed: the same numbers, to rounding),
read a hive-partitioned Parquet directory on the workers (as often as the local run reads it), and survive a worker killed as
the blocks are read with the same sums to the bit, charged once. One cluster serves the module (its start is most of the cost).
"""

import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
distributed = pytest.importorskip("distributed")

from dpmoments.cli import main  # noqa: E402
from dpmoments.moments.dask_moments import dask_moment_sums, row_ones  # noqa: E402
from dpmoments.data.dask_tables import PROGRESS_TOPIC, open_dask_table  # noqa: E402

pytestmark = pytest.mark.slow

PRIVATE = ["--epsilon", "1", "--delta", "1e-6", "--seed", "7", "--no-figures", "--quiet", "--force"]


@pytest.fixture(scope="module")
def cluster():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      host="127.0.0.1", env={"OPENBLAS_NUM_THREADS": "1"}) as c:
            yield c


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """1200 rows of 4 columns in 12 files under year=/site= directories, row groups of 25 rows."""
    root = tmp_path_factory.mktemp("cluster") / "lake"
    X = np.random.default_rng(3).normal(size=(1200, 4)) @ np.diag([1.0, 2.0, 0.5, 1.5])
    for k in range(12):
        folder = root / f"year={2020 + k % 3}" / f"site=s{k // 3}"
        folder.mkdir(parents=True, exist_ok=True)
        part = X[100 * k:100 * (k + 1)]
        pq.write_table(pa.table({c: part[:, j] for j, c in enumerate("abcd")}), folder / f"part-{k}.parquet",
                       row_group_size=25)
    order = sorted(root.rglob("*.parquet"))  # the reader's order: sorted paths
    X_sorted = np.concatenate([pq.read_table(p, columns=list("abcd")).to_pandas().to_numpy() for p in order])
    return root, X_sorted


def _run(*args):
    try:
        return main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code


# The public-bound covariance runs on the cluster in the next test; the default path below makes every pass on
# the workers, the moment pass included, and reads the table once (the later passes replay each block from the
# disk of the worker that parsed it, data/dask_spill.py).
@pytest.mark.parametrize("command, extra, result, reads_once", [
    ("covariance", [], "covariance.npy", True),  # the private choices: every pass on the workers
    ("tensor", ["--model", "mog", "--n-components", "2", "--row-norm", "12", "--sigma2", "1"], "components.npy",
     False),
])
def test_scheduler_gives_what_the_local_run_gives(cluster, lake, tmp_path, monkeypatch, command, extra, result,
                                                  reads_once):
    """... and reads the data no more often than the local run: the workers' row reports against the passes over
    the local file (its parse and its replays; issue 28: no more passes on a cluster than on one machine); the
    covariance's several passes read the files once (issue 27)."""
    from dpmoments.cli import _io, _release

    root, X = lake
    passes, streams = [], []  # the passes of a private choice's Rereadable; else the one stream of the file

    def counted(read, into):
        def wrapper(*args, **kwargs):
            yield from read(*args, **kwargs)
            into.append(1)
        return wrapper

    monkeypatch.setattr(_release.Rereadable, "__iter__", counted(_release.Rereadable.__iter__, passes))
    monkeypatch.setattr(_io.DataSource, "chunks", counted(_io.DataSource.chunks, streams))
    assert _run(command, root, *extra, *PRIVATE, "--out", tmp_path / "here", "--scheduler", "none") == 0
    with distributed.Client(cluster) as client:
        rows = []
        client.subscribe_topic(PROGRESS_TOPIC, lambda event: rows.append(event[1]))
        assert _run(command, root, *extra, *PRIVATE, "--out", tmp_path / "there", "--scheduler",
                    cluster.scheduler_address) == 0
        expected = len(X) * (1 if reads_once else len(passes) or len(streams))
        for _ in range(50):  # the events travel on their own: wait for the last ones
            if sum(rows) >= expected:
                break
            time.sleep(0.1)
        time.sleep(0.2)
        client.unsubscribe_topic(PROGRESS_TOPIC)
    here, there = np.load(tmp_path / "here" / result), np.load(tmp_path / "there" / result)
    np.testing.assert_allclose(there, here, rtol=1e-9, atol=1e-12)
    assert sum(rows) == expected > 0
    assert not reads_once or len(passes) > 1  # several passes here, one read there


def test_a_scheduler_that_does_not_answer_is_one_line(lake, tmp_path, monkeypatch, capsys):
    """(The environment variable naming a live scheduler: the CSV glob's test.)"""
    root, _ = lake
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setattr("dpmoments.cli._cluster.CONNECT_TIMEOUT", "1s")
    capsys.readouterr()
    assert _run("covariance", root, "--row-norm", "12", *PRIVATE, "--out", tmp_path / "b") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not reach the dask scheduler at 'tcp://127.0.0.1:9'" in err[0]


def test_categories_and_impute_on_the_cluster_give_the_local_release(cluster, tmp_path):
    """A hive partition column and a file's text column one-hot encoded, a column with missing values imputed
    with its indicator (their 0:1 ranges added as locally): the workers encode each block as the local reader
    does, so the same seed gives the same release."""
    rng = np.random.default_rng(5)
    root = tmp_path / "typed"
    for k, region in enumerate(["north", "south", "east", "north"]):
        folder = root / f"region={region}"
        folder.mkdir(parents=True, exist_ok=True)
        income = rng.normal(size=40)
        income[rng.random(40) < 0.25] = np.nan
        pq.write_table(pa.table({"a": rng.normal(size=40), "income": income,
                                 "firm": rng.choice(["GM", "IBM", "other"], 40)}), folder / f"p{k}.parquet",
                       row_group_size=15)
    typed = ["--categories", "region=north,south", "--categories", "firm=GM,IBM", "--impute", "income=0",
             "--ranges", "a=-4:4,income=-4:4"]
    assert _run("covariance", root, *typed, *PRIVATE, "--out", tmp_path / "here", "--scheduler", "none") == 0
    assert _run("covariance", root, *typed, *PRIVATE, "--out", tmp_path / "there", "--scheduler",
                cluster.scheduler_address) == 0
    here, there = (np.load(tmp_path / d / "covariance.npy") for d in ("here", "there"))
    assert here.shape == (7, 7)  # a, income, income:missing, firm=GM, firm=IBM, region=north, region=south
    np.testing.assert_allclose(there, here, rtol=1e-9, atol=1e-12)


def test_a_csv_glob_on_the_cluster_counts_its_rows_as_the_local_run(cluster, lake, tmp_path, monkeypatch):
    """CSV blocks have no row counts before they are parsed; the private choices plan their draws on the count the
    local reader makes, so the cluster's blocks are counted too (else the same seed differed by 0.8-2.4%). The same
    rows are read (shape and sums), and dask's threaded scheduler counts them as well. The cluster is named by
    DASK_SCHEDULER_ADDRESS (``--scheduler none`` runs here), and ``--exclude`` is applied there as here."""
    import json

    import dask

    from dpmoments.data import open_table
    from dpmoments.data.dask_spill import parsed_once, replayed_blocks

    _, X = lake
    folder = tmp_path / "csv"
    folder.mkdir()
    for k in range(3):
        np.savetxt(folder / f"part-{k}.csv", X[100 * k:100 * (k + 1)], delimiter=",", header="a,b,c,d", comments="",
                   fmt="%.6f")
    glob = str(folder / "*.csv")
    local = np.concatenate(list(open_table(glob).chunks(64)))
    with dask.config.set(scheduler="sync"), parsed_once(open_dask_table(glob).X) as threaded:
        assert threaded.chunks[0] == (100, 100, 100)
        np.testing.assert_array_equal(threaded.compute(), local)
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
    assert _run("covariance", glob, "--exclude", "c", *PRIVATE, "--out", tmp_path / "here", "--scheduler",
                "none") == 0
    assert _run("covariance", glob, "--exclude", "c", *PRIVATE, "--out", tmp_path / "there") == 0
    here, there = (np.load(tmp_path / d / "covariance.npy") for d in ("here", "there"))
    np.testing.assert_allclose(there, here, rtol=1e-9, atol=1e-12)
    report = json.loads((tmp_path / "there" / "privacy_report.json").read_text())["input"]
    assert report["scheduler"] == "distributed" and report["columns"] == ["a", "b", "d"]


def test_a_shell_expanded_list_of_files_on_the_cluster_is_the_directory(cluster, lake, tmp_path, capsys,
                                                                         monkeypatch):
    """``covariance part-*.parquet --scheduler ADDRESS``: the workers read the listed files as the directory; a
    file listed twice is refused in one line with the path as typed (the workers were given absolute ones)."""
    root, _ = lake
    monkeypatch.chdir(root)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*.parquet"))
    public = ["--row-norm", "12", "--center", "0", *PRIVATE, "--scheduler", cluster.scheduler_address]
    assert _run("covariance", *files, *public, "--out", tmp_path / "list") == 0
    assert _run("covariance", root, *public, "--out", tmp_path / "dir") == 0
    np.testing.assert_allclose(np.load(tmp_path / "list" / "covariance.npy"),
                               np.load(tmp_path / "dir" / "covariance.npy"), rtol=1e-12, atol=1e-12)
    capsys.readouterr()
    assert _run("covariance", *files, files[0], *public, "--out", tmp_path / "twice") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"'{files[0]}' is listed twice" in err[0] and str(root) not in err[0]


def test_spilled_passes_are_the_graphs_bit_for_bit_with_a_worker_killed_and_the_release_is_charged_once(cluster,
                                                                                                        lake):
    """A spilled table's passes run one task a worker and merge in the graph's tree (12 blocks: two levels): the
    moment sums with the clipping loss tapped, a mean's sums and the binned sums equal the graph's over the files to
    the bit, with a worker killed as the blocks are first read (its blocks are read again); a release there is
    charged once."""
    from dpmoments import Accountant
    from dpmoments.data.dask_spill import parsed_once, replayed_blocks
    from dpmoments.estimators import PrivateCovariance
    from dpmoments.moments.binned_sums import binned_pass
    from dpmoments.moments.clipping_bias import ExcessTap
    from dpmoments.moments.private_bounds import SearchRange
    from dpmoments.privacy import ApproxDP

    root, _ = lake
    search, centre = SearchRange(0.05, 200.0, steps=80), np.array([0.1, -0.2, 0.0, 0.3])

    def passes(X):
        tap = ExcessTap(X, centre, 2.0)
        sums, binned = tap.moment_sums(), binned_pass(X, moment="mean", search=search, center=centre)
        mean = dask_moment_sums(X, row_ones(X), row_norm=2.0, response_bound=1.0, center=centre)
        return [sums.n, sums.xtx, *tap.sums(), mean.xty, binned.counts, binned.inside, binned.outside]

    with distributed.Client(cluster) as client:
        graph = passes(open_dask_table(root).X)
        pids = client.run(os.getpid)
        killed = threading.Event()

        def kill_one(event):
            if not killed.is_set():
                killed.set()
                os.kill(next(iter(pids.values())), signal.SIGKILL)

        client.subscribe_topic(PROGRESS_TOPIC, kill_one)
        with parsed_once(open_dask_table(root).X) as X:
            assert X.numblocks[0] > 8 and replayed_blocks(X) is not None
            spilled = passes(X)
        client.unsubscribe_topic(PROGRESS_TOPIC)
        assert killed.is_set() and graph[0] == 1200
        for a, b in zip(graph, spilled):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
        acct = Accountant(ApproxDP(1.5, 1e-5))
        est = PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=6.0, center=None, accountant=acct, rng=0)
        est.fit(open_dask_table(root).X)
        assert len(acct.ledger) == 1  # the last test of the module: the restarted worker is not waited for
