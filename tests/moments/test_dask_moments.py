"""Moments of dask collections: equal to the numpy path, never materialised, on threads and on a LocalCluster.

Covers ``dpmoments.moments.dask_moments`` (per-block partial sums), ``dpmoments.data.dask_files`` (Zarr / ``.npy`` / Parquet readers), the
routing of dask input in the ``release_*`` functions and the moment-based estimators.
"""

import contextlib
import math
import os
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from dask.callbacks import Callback  # noqa: E402

from dpmoments.exceptions import NotPrivateWarning  # noqa: E402
from dpmoments.moments import (  # noqa: E402
    accumulate_moments, release_cross_moment, release_second_moment, release_third_moment,
)
from dpmoments.data.dask_files import open_npy_array, open_parquet_frame, open_zarr_array  # noqa: E402
from dpmoments.data import is_dask_collection  # noqa: E402
from dpmoments.moments.dask_moments import dask_moment_sums, row_ones  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::dpmoments.exceptions.NotPrivateWarning")

TOL = 1e-10
ROWS = (700, 0, 1300, 1, 999)  # uneven, with an empty block and a one-row block
N, D = sum(ROWS), 6


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D)) / 2 + 0.1
    y = X @ np.linspace(1, -1, D) + rng.standard_normal(N)
    return X, y


@pytest.fixture(autouse=True)
def threaded():
    with dask.config.set(scheduler="threads", num_workers=2):
        yield


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


def _same_sums(s, r):
    assert s.n == r.n and s.n_features == r.n_features
    _close(s.xtx, r.xtx)
    for name in ("xty", "yty", "third"):
        a, b = getattr(s, name), getattr(r, name)
        assert (a is None) == (b is None)
        if a is not None:
            _close(a, b)
    assert (s.row_norm, s.entry_bound, s.response_bound) == (r.row_norm, r.entry_bound, r.response_bound)


KW = [dict(row_norm=1.5), dict(entry_bound=0.7), dict(row_norm=1.5, third=True), dict(row_norm=1.5, center=[0.1] * D)]


# -- dask arrays -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", KW, ids=["rows", "entries", "third", "center"])
def test_uneven_row_and_column_blocks_match_numpy(data, kw):
    X, _ = data
    x = da.from_array(X, chunks=(ROWS, (2, 4)))  # column blocks are merged into one
    _same_sums(dask_moment_sums(x, **kw), accumulate_moments(X, **kw))


def test_cross_moment_with_dask_and_numpy_y(data):
    X, y = data
    x = da.from_array(X, chunks=(ROWS, D))
    ref = accumulate_moments((X, y), row_norm=1.5, response_bound=2.0, third=True)
    for yy in (da.from_array(y, chunks=(ROWS,)), da.from_array(y, chunks=500), y):
        _same_sums(dask_moment_sums(x, yy, row_norm=1.5, response_bound=2.0, third=True), ref)


def test_float32_and_integer_blocks(data):
    X, _ = data
    for A in (X.astype(np.float32), np.round(10 * X).astype(np.int64)):
        _same_sums(dask_moment_sums(da.from_array(A, chunks=(ROWS, D)), row_norm=1.5),
                   accumulate_moments(A.astype(np.float64), row_norm=1.5))


def test_releases_route_dask_input_to_partial_sums(data):
    X, y = data
    x = da.from_array(X, chunks=(ROWS, D))
    yy = da.from_array(y, chunks=(ROWS,))
    a = release_second_moment(x, epsilon=math.inf, row_norm=1.5, center=None)
    b = release_second_moment(X, epsilon=math.inf, row_norm=1.5, center=None)
    _close(a.second_moment, b.second_moment)
    assert a.n == b.n == N
    a = release_cross_moment(x, yy, epsilon=math.inf, row_norm=1.5, response_bound=2.0)
    b = release_cross_moment(X, y, epsilon=math.inf, row_norm=1.5, response_bound=2.0)
    _close(a.cross_moment, b.cross_moment)
    a = release_third_moment(x, epsilon=math.inf, row_norm=1.5)
    b = release_third_moment(X, epsilon=math.inf, row_norm=1.5)
    _close(a.third_moment, b.third_moment)
    # With noise: the same seed gives the same release (the noise does not depend on the input's type).
    a = release_second_moment(x, epsilon=1.0, delta=1e-6, row_norm=1.5, rng=3, center=None)
    b = release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=1.5, rng=3, center=None)
    _close(a.second_moment, b.second_moment)
    assert a.guarantee == b.guarantee


def test_errors_name_the_block(data):
    X, y = data
    Xb = X.copy()
    Xb[2000, 3] = np.nan  # blocks: 0 = rows 0..699, 1 empty, 2 = rows 700..1999, 3 = row 2000
    with pytest.raises(ValueError, match=r"dask block 3 .*NaN"):
        dask_moment_sums(da.from_array(Xb, chunks=(ROWS, D)), row_norm=1.0)
    with pytest.raises(ValueError, match="Exactly one of"):
        dask_moment_sums(da.from_array(X, chunks=(ROWS, D)))
    with pytest.raises(ValueError, match="one entry per row"):
        dask_moment_sums(da.from_array(X, chunks=(ROWS, D)), da.from_array(y[:-1]), row_norm=1.0,
                         response_bound=1.0)
    with pytest.raises(ValueError, match="response_bound"):
        dask_moment_sums(da.from_array(X, chunks=(ROWS, D)), da.from_array(y), row_norm=1.0)
    with pytest.raises(ValueError, match="2-D"):
        dask_moment_sums(da.from_array(y), row_norm=1.0)
    with pytest.raises(ValueError, match="no rows"):
        dask_moment_sums(da.zeros((0, 3), chunks=(1, 3)), row_norm=1.0)
    with pytest.raises(TypeError, match="dask array"):
        dask_moment_sums(X, row_norm=1.0)


def test_is_dask_collection(data):
    X, _ = data
    assert is_dask_collection(da.from_array(X)) and not is_dask_collection(X) and not is_dask_collection("x.npy")


# -- no full materialisation ---------------------------------------------------------------------------------------
class _LargestResult(Callback):
    """Records the largest array any task returned."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def _posttask(self, key, result, dsk, state, id):
        self.largest = max(self.largest, getattr(result, "nbytes", 0))


def test_no_task_holds_more_than_one_block(monkeypatch):
    block = 2000
    x = da.random.default_rng(0).standard_normal((20 * block, 8), chunks=(block, 8))
    ref = accumulate_moments(x.compute(), row_norm=2.0)

    def forbidden(*args, **kwargs):
        raise AssertionError("the whole dask array was materialised")

    monkeypatch.setattr(da.Array, "__array__", forbidden)
    monkeypatch.setattr(da.Array, "compute", forbidden)
    with _LargestResult() as cb:
        s = dask_moment_sums(x, row_norm=2.0)
        r = release_second_moment(x, epsilon=math.inf, row_norm=2.0, center=None)
    _same_sums(s, ref)
    _close(r.second_moment, ref.xtx / ref.n)
    assert 0 < cb.largest <= block * 8 * 8  # one block; the sums are far smaller


# -- dask DataFrames and Parquet -------------------------------------------------------------------------------
def _frame(X, y, npartitions):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    cols = [f"x{j}" for j in range(D)]
    df = pd.DataFrame(X, columns=cols).assign(t=y)
    return dd.from_pandas(df, npartitions=npartitions), cols


def test_dask_dataframe_partitions(data):
    X, y = data
    ddf, cols = _frame(X, y, 5)
    _same_sums(dask_moment_sums(ddf[cols], row_norm=1.5, third=True), accumulate_moments(X, row_norm=1.5, third=True))
    _same_sums(dask_moment_sums(ddf[cols], ddf["t"], row_norm=1.5, response_bound=2.0),
               accumulate_moments((X, y), row_norm=1.5, response_bound=2.0))
    a = release_cross_moment(ddf[cols], ddf["t"], epsilon=math.inf, row_norm=1.5, response_bound=2.0)
    _close(a.cross_moment, release_cross_moment(X, y, epsilon=math.inf, row_norm=1.5, response_bound=2.0).cross_moment)
    # A frame turned into an array without counting rows (unknown block lengths) works too.
    x = ddf[cols].to_dask_array()
    assert any(math.isnan(c) for c in x.chunks[0])
    _same_sums(dask_moment_sums(x, row_ones(x), row_norm=1.5, response_bound=1.0),
               accumulate_moments((X, np.ones(N)), row_norm=1.5, response_bound=1.0))


@pytest.mark.parametrize("cells", [["JANE-DOE-4711"] * 4, ["1.5"] * 4])
def test_dask_dataframe_text_is_refused_without_quoting_it(cells):
    # pandas' own conversion error quoted the cell ("could not convert string to float: 'JANE-DOE-4711'"),
    # and numeric strings were parsed silently where every other entry point refuses them.
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = dd.from_pandas(pd.DataFrame({"a": cells, "b": np.arange(4.0)}), npartitions=2)
    for call in (lambda: release_second_moment(frame, epsilon=1.0, delta=1e-6, row_norm=1.0, center=None),
                 lambda: release_cross_moment(frame[["b"]], frame["a"], epsilon=1.0, delta=1e-6, row_norm=1.0,
                                              response_bound=1.0)):
        with pytest.raises(TypeError, match="not text") as info:
            call()
        assert cells[0] not in str(info.value)


def test_parquet_frame(tmp_path, data):
    pytest.importorskip("pyarrow")
    X, y = data
    ddf, cols = _frame(X, y, 4)
    ddf.to_parquet(tmp_path / "pq")
    frame = open_parquet_frame(tmp_path / "pq", columns=cols + ["t"])
    assert frame.npartitions == 4
    _same_sums(dask_moment_sums(frame[cols], frame["t"], row_norm=1.5, response_bound=2.0, third=True),
               accumulate_moments((X, y), row_norm=1.5, response_bound=2.0, third=True))
    only = open_parquet_frame(tmp_path / "pq", columns=cols[:2])
    assert list(only.columns) == cols[:2]
    _same_sums(dask_moment_sums(only, row_norm=1.5), accumulate_moments(X[:, :2], row_norm=1.5))


# -- Zarr and .npy -------------------------------------------------------------------------------------------------
def test_zarr_round_trip(tmp_path, data):
    pytest.importorskip("zarr")
    X, _ = data
    da.from_array(X, chunks=(800, 3)).to_zarr(str(tmp_path / "X.zarr"))
    x = open_zarr_array(tmp_path / "X.zarr")
    assert x.shape == (N, D) and x.chunks[0][0] == 800
    _same_sums(dask_moment_sums(x, row_norm=1.5, third=True), accumulate_moments(X, row_norm=1.5, third=True))
    da.from_array(X[:, 0], chunks=800).to_zarr(str(tmp_path / "v.zarr"))
    with pytest.raises(ValueError, match="2-D"):
        open_zarr_array(tmp_path / "v.zarr")


def test_npy_reader_reads_only_its_rows(tmp_path, data):
    X, _ = data
    path = tmp_path / "X.npy"
    np.save(path, X)
    x = open_npy_array(path, chunk_rows=700)
    assert x.shape == (N, D) and x.chunks[0] == (700, 700, 700, 700, 200)
    np.testing.assert_array_equal(x[1000:1500].compute(), X[1000:1500])
    # The graph holds the path, not the data (da.from_array of a memmap would embed a copy of it).
    graph = dict(x.__dask_graph__())
    assert len(pickle.dumps(graph)) < 20_000
    _same_sums(dask_moment_sums(x, row_norm=1.5, third=True), accumulate_moments(X, row_norm=1.5, third=True))
    assert open_npy_array(path).chunks[0] == (N,)  # default: ~64 MiB blocks
    for A in (np.asfortranarray(X), X.astype(np.float32)):  # Fortran order goes through a memory map
        np.save(tmp_path / "A.npy", A)
        a = open_npy_array(tmp_path / "A.npy", chunk_rows=1000)
        assert a.dtype == A.dtype
        np.testing.assert_array_equal(a.compute(), A)
    np.save(tmp_path / "v.npy", X[:, 0])
    with pytest.raises(ValueError, match="2-D"):
        open_npy_array(tmp_path / "v.npy")
    with pytest.raises(ValueError, match="chunk_rows"):
        open_npy_array(path, chunk_rows=0)


# -- a distributed LocalCluster ------------------------------------------------------------------------------------
@contextlib.contextmanager
def _real_distributed():
    """Import dask's ``distributed`` package for the duration of a test.

    pytest (prepend import mode, no ``tests/__init__.py``) puts ``tests/`` on ``sys.path`` and imports
    ``tests/distributed`` (dpmoments' own protocol tests) as the top-level package ``distributed``, which
    shadows dask's. The real one is imported with ``tests/`` off the path and the test package is put back
    afterwards, so neither test module sees the other's. (A ``tests/__init__.py`` or
    ``--import-mode=importlib`` would remove the clash.)
    """
    def ours():
        return [k for k in sys.modules if k == "distributed" or k.startswith("distributed.")]

    import dask.base

    shadow = {k: sys.modules.pop(k) for k in ours()}
    dask.base._DISTRIBUTED_AVAILABLE = None  # dask caches a failed "import distributed" (the shadow)
    tests_root = str(Path(__file__).resolve().parents[1])
    saved_path = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != tests_root]
    try:
        try:
            import distributed
        except ImportError:
            pytest.skip("distributed is not installed")
        if not hasattr(distributed, "LocalCluster"):
            pytest.skip(f"'distributed' resolves to {distributed.__file__}, not dask's package")
        yield distributed
    finally:
        sys.path[:] = saved_path
        dask.base._DISTRIBUTED_AVAILABLE = None
        if shadow:
            for k in ours():
                del sys.modules[k]
            sys.modules.update(shadow)


def test_local_cluster(tmp_path, data):
    X, y = data
    np.save(tmp_path / "X.npy", X)
    with warnings.catch_warnings(), _real_distributed() as distributed:
        warnings.simplefilter("ignore")  # port / resource warnings of a throw-away cluster
        # processes=False: in-process "inproc://" transport, nothing listens on a network interface.
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) \
                as cluster, distributed.Client(cluster):
            s_npy = dask_moment_sums(open_npy_array(tmp_path / "X.npy", chunk_rows=500), row_norm=1.5, third=True)
            s_xy = dask_moment_sums(da.from_array(X, chunks=(ROWS, D)), da.from_array(y, chunks=(ROWS,)),
                                    row_norm=1.5, response_bound=2.0)
            rel = release_second_moment(da.from_array(X, chunks=(ROWS, D)), epsilon=math.inf, row_norm=1.5, center=None)
    _same_sums(s_npy, accumulate_moments(X, row_norm=1.5, third=True))
    _same_sums(s_xy, accumulate_moments((X, y), row_norm=1.5, response_bound=2.0))
    _close(rel.second_moment, release_second_moment(X, epsilon=math.inf, row_norm=1.5, center=None).second_moment)


# -- estimators ---------------------------------------------------------------------------------------------------
def _estimators():
    from dpmoments.estimators import (
        CenterBudget, PrivateCovariance, PrivateGraphicalLasso, PrivatePCA, PrivateRidgePrecision,
    )

    common = dict(epsilon=2.0, delta=1e-6, row_norm=2.0, rng=0)
    return [
        (PrivateCovariance(**common, center=None), "covariance_"),
        (PrivateCovariance(**common, center="private", center_budget=CenterBudget(0.3)), "covariance_"),
        (PrivateCovariance(epsilon=2.0, delta=1e-6, scale="private", rng=0), "covariance_"),
        (PrivateGraphicalLasso(alpha=0.1, psd_floor=1e-3, **common), "precision_"),
        (PrivateRidgePrecision(alpha=0.1, psd_floor=1e-3, **common), "precision_"),
        (PrivatePCA(n_components=2, **common), "components_"),
    ]


@pytest.mark.parametrize("kind", ["array", "frame", "npy"])
def test_moment_estimators_accept_dask_input(tmp_path, data, kind, monkeypatch):
    X, y = data
    if kind == "array":
        source = da.from_array(X, chunks=(ROWS, D))
    elif kind == "frame":
        ddf, cols = _frame(X, y, 3)
        source = ddf[cols]
    else:
        np.save(tmp_path / "X.npy", X)
        source = open_npy_array(tmp_path / "X.npy", chunk_rows=600)

    def forbidden(*args, **kwargs):
        raise AssertionError("an estimator materialised the dask input")

    for est, attr in _estimators():
        ref = getattr(est.__class__(**est.get_params()).fit(X), attr)
        with monkeypatch.context() as m:
            m.setattr(da.Array, "__array__", forbidden)
            m.setattr(da.Array, "compute", forbidden)
            got = getattr(est.fit(source), attr)
        np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-10, err_msg=type(est).__name__)
        assert est.n_features_in_ == D


def test_estimators_accept_a_npy_path(tmp_path, data):
    from dpmoments.estimators import CenterBudget, PrivateCovariance, PrivatePCA

    X, _ = data
    np.save(tmp_path / "X.npy", X)
    for est in (PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=2.0, rng=1, center="private",
                                  center_budget=CenterBudget()),
                PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=2.0, rng=1)):
        a = est.fit(str(tmp_path / "X.npy"))
        b = est.__class__(**est.get_params()).fit(X)
        attr = "covariance_" if hasattr(a, "covariance_") else "components_"
        np.testing.assert_allclose(getattr(a, attr), getattr(b, attr), rtol=1e-8, atol=1e-10)


def test_multi_pass_estimators_take_dask_input_in_memory(data):
    """PrivateIRLS and PrivateModelSelection need several passes / the whole array: they load dask input
    (np.asarray computes it) and then fit exactly as on numpy. Documented in dask_moments.py."""
    from dpmoments.estimators import PrivateIRLS

    X, y = data
    Xs = X / (2 * math.sqrt(D))
    kw = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, response_bound=1.0, n_iter=2, w_max=5.0, rng=0)
    a = PrivateIRLS(**kw).fit(da.from_array(Xs, chunks=(ROWS, D)), da.from_array(y, chunks=(ROWS,)))
    b = PrivateIRLS(**kw).fit(Xs, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-10, atol=1e-12)


def test_numpy_estimator_input_is_unchanged(data):
    """The dask routing must not change what happens to numpy input (validation included)."""
    from dpmoments.estimators import PrivateCovariance

    X, _ = data
    bad = X.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError):
        PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=2.0).fit(bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotPrivateWarning)
        PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=2.0, rng=0).fit(X.tolist())


def test_a_centre_of_the_wrong_length_is_refused_before_any_task():
    """(hunt6) it was refused from inside the first block: "In dask block 0 (0-based, along rows): 'center' ..."."""
    import pandas as pd

    dd = pytest.importorskip("dask.dataframe")
    X = np.random.default_rng(0).normal(size=(100, 3))
    for data in (da.from_array(X, chunks=50), dd.from_pandas(pd.DataFrame(X, columns=list("abc")), npartitions=2)):
        with pytest.raises(ValueError, match=r"^'center' must have one entry per feature \(3\); got 2\.$"):
            release_second_moment(data, epsilon=1.0, delta=1e-6, row_norm=3.0, center=np.zeros(2))


def test_a_response_of_ones_is_made_in_the_blocks_tasks_so_the_rows_are_read_once(data):
    """A dask vector of ones over the rows read every block a second time (the tensor's first moment, the mean,
    CoinPress's steps: two passes on a cluster where one machine makes one)."""
    from dpmoments.estimators import PrivateCovariance
    from dpmoments.moments.tensor_moments import release_mog_moments

    X, _ = data
    rows = []

    def counted(block):
        rows.append(block.shape[0])
        return block

    x = da.from_array(X, chunks=(ROWS, D)).map_blocks(counted, dtype=float)
    _same_sums(dask_moment_sums(x, row_ones(x), row_norm=1.5, response_bound=1.0),
               accumulate_moments((X, np.ones(N)), row_norm=1.5, response_bound=1.0))
    assert sum(rows) == N
    rows.clear()
    release_mog_moments(x, sigma2=0.1, epsilon=1.0, delta=1e-6, row_norm=1.5, rng=0)
    assert sum(rows) == N
    with pytest.raises(ValueError, match="row_ones"):
        dask_moment_sums(x, row_ones(x + 1.0), row_norm=1.5, response_bound=1.0)
    # CoinPress on a dask DataFrame (it was refused by a raw TypeError: a frame has no product with a matrix)
    kw = dict(epsilon=1.0, delta=1e-6, method="coinpress", row_norm=2.0, rng=0)
    ddf, cols = _frame(X, None, 5)
    a = PrivateCovariance(**kw).fit(ddf[cols]).covariance_
    np.testing.assert_allclose(a, PrivateCovariance(**kw).fit(X).covariance_, rtol=1e-9, atol=1e-12)


def test_the_workers_table_leaves_out_the_excluded_columns(tmp_path, data):
    """``--exclude`` was not passed to the workers' reader: with --scheduler the excluded column was summed."""
    zarr = pytest.importorskip("zarr")
    from dpmoments.data.dask_tables import open_dask_table

    X, _ = data
    z = zarr.create_array(str(tmp_path / "x.zarr"), shape=X.shape, chunks=(1000, D), dtype="f8")
    z[:] = X
    table = open_dask_table(str(tmp_path / "x.zarr"), exclude=["x1", 4])
    assert table.feature_names == ["x0", "x2", "x3", "x5"]
    np.testing.assert_array_equal(table.X.compute(), X[:, [0, 2, 3, 5]])
    with pytest.raises(ValueError, match="'columns' or 'exclude'"):
        open_dask_table(str(tmp_path / "x.zarr"), columns=["x0"], exclude=["x1"])


def test_a_bad_value_in_a_private_choice_pass_is_named_by_its_row_overall():
    """The bound's pass over dask blocks named a block's own row as the row overall ("row 3000 overall" for 15000)."""
    from dpmoments.estimators import PrivateCovariance

    X = np.random.default_rng(0).normal(size=(2000, 3)) + 5
    X[1500, 1] = np.nan
    with pytest.raises(ValueError, match=r"in chunk 3 at row 300, column 1 of the chunk \(row 1500 overall\)"):
        PrivateCovariance(epsilon=1.0, delta=1e-6, rng=0).fit(da.from_array(X, chunks=(400, 3)))
