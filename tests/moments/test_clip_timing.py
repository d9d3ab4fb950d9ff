"""The release path does the same work whether or not (and how many) rows were clipped.

Timing is not asserted (timed tests are flaky); the work is counted instead: every NumPy
function the pass calls, with the shapes it is called on, and the peak of NumPy's
allocations. A neighbouring data set in which one row crosses the bound must give the
same trace. Before the fix, a chunk with no clipped row skipped its multiply and its
copy (11.5 vs 18.4 ms on a neighbouring pair).
"""

import tracemalloc
import types

import numpy as np
import pytest
from scipy import sparse

from dpmoments.moments import accumulate as acc_module
from dpmoments.moments import sparse_sums as sparse_module
from dpmoments.moments.accumulate import accumulate_moments


class _Recorder(types.ModuleType):
    """Stands in for ``numpy`` inside one module and records each call: name and argument shapes."""

    def __init__(self, log):
        super().__init__("numpy")
        self._log = log

    def __getattr__(self, name):
        attr = getattr(np, name)
        if not callable(attr) or isinstance(attr, type):
            return attr
        return _Recorded(name, attr, self._log)


class _Recorded:
    def __init__(self, name, fn, log):
        self._name, self._fn, self._log = name, fn, log

    def __call__(self, *args, **kwargs):
        shapes = tuple(getattr(a, "shape", type(a).__name__) for a in args)
        self._log.append((self._name, shapes, tuple(sorted(kwargs))))
        return self._fn(*args, **kwargs)

    def __getattr__(self, attr):  # ufunc methods (np.maximum.at) are recorded too
        return _Recorded(f"{self._name}.{attr}", getattr(self._fn, attr), self._log)


def _trace(monkeypatch, module, fn):
    log = []
    monkeypatch.setattr(module, "np", _Recorder(log))
    compiled = getattr(module, "_compiled", None)
    if compiled is not None:  # the compiled row clipping (and its loop fused with the Gram product) is recorded too
        monkeypatch.setattr(module, "_compiled", types.SimpleNamespace(**{
            name: _Recorded(name, getattr(compiled, name), log) for name in ("clip_rows", "clip_gram")
            if hasattr(compiled, name)}))
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        monkeypatch.undo()
    return log, peak


def _neighbours(n=10000, d=50, seed=0):
    """Rows well inside the ball, and the same data with one row replaced by one far outside it."""
    X = np.random.default_rng(seed).standard_normal((n, d)) * 0.01
    Y = X.copy()
    Y[123] = 100.0
    return X, Y


@pytest.mark.parametrize("kwargs", [dict(row_norm=1.0), dict(entry_bound=0.5), dict(row_norm=1.0, third=True),
                                    dict(row_norm=1.0, center=np.full(50, 0.001))])
def test_dense_pass_does_the_same_work_whether_a_row_is_clipped(monkeypatch, kwargs):
    X, Y = _neighbours(n=3000 if kwargs.get("third") else 10000)
    kwargs = dict(kwargs)
    if kwargs.get("third"):
        X, Y = X[:, :12], Y[:, :12]
        kwargs.pop("center", None)
    log_x, peak_x = _trace(monkeypatch, acc_module, lambda: accumulate_moments(X, **kwargs))
    log_y, peak_y = _trace(monkeypatch, acc_module, lambda: accumulate_moments(Y, **kwargs))
    assert log_x == log_y
    assert any(name in ("multiply", "clip", "clip_rows", "clip_gram") for name, _, _ in log_x)  # the scaling is traced
    assert abs(peak_x - peak_y) < 64 * 1024  # no copy made only for a clipped chunk


@pytest.mark.parametrize("center", [None, np.full(10, 0.001)])
def test_narrow_rows_fused_pass_does_the_same_work_whether_a_row_is_clipped(monkeypatch, center):
    """Where the compiled loop clips and sums in one call per block (d <= 96): the same calls either way."""
    X, Y = _neighbours(d=10)
    log_x, peak_x = _trace(monkeypatch, acc_module, lambda: accumulate_moments(X, row_norm=1.0, center=center))
    log_y, peak_y = _trace(monkeypatch, acc_module, lambda: accumulate_moments(Y, row_norm=1.0, center=center))
    assert log_x == log_y
    if getattr(acc_module._compiled, "clip_gram", None) is not None:
        assert [name for name, _, _ in log_x].count("clip_gram") == 1  # 10000 x 10: one block
    assert abs(peak_x - peak_y) < 64 * 1024


def test_dense_pass_work_does_not_depend_on_how_many_rows_are_clipped(monkeypatch):
    X, Y = _neighbours()
    Z = X * 1000.0  # every row clipped
    logs = [_trace(monkeypatch, acc_module, lambda A=A: accumulate_moments(A, row_norm=1.0)) for A in (X, Y, Z)]
    assert logs[0][0] == logs[1][0] == logs[2][0]
    assert max(p for _, p in logs) - min(p for _, p in logs) < 64 * 1024


def test_sparse_pass_does_the_same_work_whether_a_row_is_clipped(monkeypatch):
    X = sparse.random(5000, 40, density=0.1, random_state=2, format="csr") * 0.01
    row = int(np.flatnonzero(np.diff(X.indptr))[0])
    Y = X.copy()
    Y.data[X.indptr[row]] = 100.0  # same sparsity pattern, one row now far outside the ball
    for kwargs in (dict(row_norm=1.0), dict(entry_bound=0.5)):
        log_x, peak_x = _trace(monkeypatch, sparse_module, lambda: accumulate_moments(X, **kwargs))
        log_y, peak_y = _trace(monkeypatch, sparse_module, lambda: accumulate_moments(Y, **kwargs))
        assert log_x == log_y
        assert abs(peak_x - peak_y) < 64 * 1024


def test_clipped_sums_are_unchanged_by_the_fused_loop():
    """The branch-free pass gives the sums of clip_rows / clip_entries (a row inside is multiplied by 1)."""
    from dpmoments.moments.bounds import clip_entries, clip_rows
    X, Y = _neighbours(n=5000, d=30)
    for A in (X, Y):
        for kw, clip in ((dict(row_norm=1.0), lambda M: clip_rows(M, 1.0)),
                         (dict(entry_bound=0.5), lambda M: clip_entries(M, 0.5))):
            C = clip(A)
            np.testing.assert_allclose(accumulate_moments(A, **kw).xtx, C.T @ C, rtol=1e-12, atol=1e-15)
