"""Extreme numbers and unexpected failures end in one line, within seconds, never a traceback.

``--epsilon 1e-300`` raised OverflowError, ``1e-320`` ZeroDivisionError, ``--row-norm 1e200`` and
``--epsilon-grid 1e-300,1`` tracebacks, and ``regress --epsilon 1e-300`` ran for more than 300 s in
a calibration loop. Every case runs under a watchdog.
"""

import signal

import numpy as np
import pytest

from dpmoments.cli import _errors

from .helpers import assert_one_line_error

WATCHDOG_S = 30


@pytest.fixture
def watchdog():
    def expire(signum, frame):
        raise TimeoutError(f"the command line did not answer within {WATCHDOG_S} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(WATCHDOG_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("extremes")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    np.save(d / "x.npy", X)
    (d / "xy.csv").write_text("a,b,y\n" + "\n".join(",".join(f"{v:.5f}" for v in r) for r in X) + "\n")
    return d


COV = ["covariance", "{d}/x.npy", "--delta", "1e-6", "--row-norm", "1"]
REGRESS = ["regress", "{d}/xy.csv", "--target", "y", "--delta", "1e-6", "--row-norm", "1", "--response-bound", "1",
           "--n-iter", "3", "--w-max", "10"]


@pytest.mark.parametrize("argv, words", [
    (COV + ["--epsilon", "1e-300"], ["--epsilon", "at least 1e-12"]),
    (COV + ["--epsilon", "1e-320"], ["--epsilon", "at least 1e-12"]),
    (COV + ["--epsilon", "5e-324"], ["--epsilon"]),
    (COV + ["--epsilon", "1", "--row-norm", "1e200"], ["--row-norm", "rescale"]),
    (COV + ["--epsilon", "1", "--row-norm", "1e-300"], ["--row-norm", "rescale"]),
    (COV + ["--epsilon", "1", "--epsilon-grid", "1e-300,1"], ["--epsilon-grid", "at least 1e-12"]),
    (COV + ["--epsilon", "1", "--epsilon-grid", "nan,1"], ["--epsilon-grid"]),
    (COV + ["--epsilon", "1", "--delta", "1e-320"], ["--delta", "smallest normal"]),
    (COV + ["--epsilon", "inf"], ["--epsilon", "finite"]),
    (COV + ["--epsilon", "nan"], ["--epsilon"]),
    (COV + ["--epsilon", "1", "--center", "1e300"], ["--center", "rescale"]),
    (COV + ["--epsilon", "1", "--psd-floor", "inf"], ["--psd-floor"]),
    (COV + ["--epsilon", "1", "--chunk-size", "99999999999"], ["--chunk-size"]),
    (COV + ["--epsilon", "1", "--seed", "-1"], ["--seed"]),
    (REGRESS + ["--epsilon", "1e-300"], ["--epsilon", "at least 1e-12"]),
    (REGRESS + ["--epsilon", "1", "--w-max", "1e300"], ["--w-max"]),
    (["precision", "{d}/x.npy", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--n-alphas", "0"],
     ["--n-alphas"]),
    (["precision", "{d}/x.npy", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--threshold", "nan"],
     ["--threshold"]),
    (["tensor", "{d}/x.npy", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--sigma2", "1e300",
      "--n-components", "2"], ["--sigma2"]),
    (["demo", "--epsilon", "1e-300"], ["--epsilon"]),
    (["audit", "--epsilon", "1", "--delta", "1e-5", "--rows", "1000000000"], ["--rows"]),
])
def test_extreme_numbers_end_in_one_line(run, files, tmp_path, watchdog, argv, words):
    res = run(*[a.format(d=files) for a in argv], "--out", tmp_path / "out")
    assert_one_line_error(res, *words)
    assert not (tmp_path / "out").exists()


def _raising(exc):
    def boom(*args, **kwargs):
        raise exc

    return boom


def test_library_messages_that_may_quote_data_are_withheld(run, files, tmp_path, monkeypatch):
    import dpmoments.cli._release as cov  # the command imports it when it runs (its --help loads no numpy)

    def leak(*args, **kwargs):
        return float("JANE-DOE-4711")  # a ValueError raised by Python itself, quoting the value

    monkeypatch.setattr(cov, "second_moment_release", leak)
    res = run(*[a.format(d=files) for a in COV], "--epsilon", "1", "--out", tmp_path / "o")
    assert_one_line_error(res, "ValueError in", "withheld", "--traceback")
    assert "JANE" not in res.stderr


def test_arithmetic_and_unexpected_errors_are_one_line(run, files, tmp_path, monkeypatch):
    import dpmoments.cli._release as cov  # the command imports it when it runs (its --help loads no numpy)

    monkeypatch.setattr(cov, "second_moment_release", lambda args: 1.0 / 0.0)
    res = run(*[a.format(d=files) for a in COV], "--epsilon", "1", "--out", tmp_path / "o")
    assert_one_line_error(res, "floating-point range", "ZeroDivisionError")
    monkeypatch.setattr(cov, "second_moment_release", _raising(RuntimeError("row 7 is 3.14159")))
    res = run(*[a.format(d=files) for a in COV], "--epsilon", "1", "--out", tmp_path / "o")
    assert res.returncode == _errors.EXIT_INTERNAL and len(res.stderr.strip().splitlines()) == 1
    assert "3.14159" not in res.stderr and "RuntimeError" in res.stderr
    monkeypatch.setattr(cov, "second_moment_release", _raising(PermissionError(13, "Permission denied", "x.npy")))
    assert_one_line_error(run(*[a.format(d=files) for a in COV], "--epsilon", "1", "--out", tmp_path / "o"),
                          "Permission denied: 'x.npy'")


def test_our_own_messages_still_show(run, files, tmp_path):
    res = run(*[a.format(d=files) for a in COV], "--epsilon", "1", "--columns", "zz", "--out", tmp_path / "o")
    assert_one_line_error(res, "no column named 'zz'")
