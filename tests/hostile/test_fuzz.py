"""Fuzzing the API and the command line with Hypothesis.

Whatever comes in, the outcome is either a result with no NaN in it or a
``TypeError``/``ValueError`` (the command line: exit 2 with one line, and no
output directory). Never a traceback, a NaN, a hang or half-written output.
"""

import contextlib
import io
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dpmoments as dpm
from dpmoments.cli import main

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
params = st.one_of(st.none(), floats, st.integers(-3, 3), st.text(max_size=3), st.booleans())
arrays = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.float32]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
    elements=st.one_of(st.floats(-1e6, 1e6), st.just(np.nan), st.just(np.inf)),
)


def _finite(release):
    for name in ("second_moment", "cross_moment", "third_moment"):
        value = getattr(release, name)
        if value is not None:
            assert np.all(np.isfinite(value)), f"{name} has non-finite values"


@SETTINGS
@given(X=arrays, epsilon=params, delta=params, row_norm=params,
       mechanism=st.sampled_from(["gaussian", "laplace", "wishart-approx", "nope"]))
def test_release_never_returns_nan_or_an_unexpected_error(X, epsilon, delta, row_norm, mechanism):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            rel = dpm.release_second_moment(X, epsilon=epsilon, delta=delta, row_norm=row_norm,
                                            mechanism=mechanism, rng=0, center=None)
        except (TypeError, ValueError):
            return
    _finite(rel)
    assert isinstance(epsilon, (int, float)) and epsilon > 0


@SETTINGS
@given(X=arrays, y=arrays, bound=params)
def test_cross_moment_inputs(X, y, bound):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            rel = dpm.release_cross_moment(X, y, epsilon=1.0, delta=1e-6, row_norm=1.0, response_bound=bound, rng=0)
        except (TypeError, ValueError):
            return
    _finite(rel)


@SETTINGS
@given(spends=st.lists(st.tuples(st.floats(0, 3), st.floats(0, 1e-5)), max_size=8))
def test_accountant_state_is_never_corrupted(spends):
    acct = dpm.Accountant(dpm.ApproxDP(2.0, 1e-5))
    for eps, delta in spends:
        before = acct.report()
        try:
            acct.spend(dpm.ApproxDP(eps, delta) if eps > 0 else dpm.PureDP(1e-9))
        except (dpm.BudgetExceededError, ValueError):
            # ValueError: a subnormal epsilon is refused before any spend
            assert acct.report() == before
    spent = acct.spent
    assert spent is None or (spent.epsilon <= 2.0 * (1 + 1e-12) and spent.delta <= 1e-5 * (1 + 1e-12))


cells = st.one_of(st.floats(-1e3, 1e3).map(repr), st.sampled_from(["", "nan", "inf", "x", "1e999", "-", " "]))


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(cells, min_size=1, max_size=4), max_size=6),
       header=st.lists(st.sampled_from(["a", "b", "c", "a"]), min_size=0, max_size=4))
def test_cli_on_hostile_csv_exits_cleanly(tmp_path_factory, rows, header):
    tmp = tmp_path_factory.mktemp("fuzz")
    data = tmp / "data.csv"
    data.write_text("\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n")
    out = tmp / "out"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main(["covariance", str(data), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1",
                           "--out", str(out), "--no-figures", "--quiet"])
        except SystemExit as exc:
            status = exc.code
    message = err.getvalue()
    assert status in (0, 2), message
    assert "Traceback" not in message
    if status == 2:
        assert not out.exists(), "a failed run left output behind"
        assert message.strip().count("\n") == 0
        assert not [p for p in tmp.iterdir() if p.name not in ("data.csv",)], "temporary directory left behind"
    else:
        cov = np.load(out / "covariance.npy")
        assert np.all(np.isfinite(cov))
