"""Test-wide settings.

Threaded BLAS makes ``X.T @ X`` 15-30x slower on small shared machines, so
the whole suite runs with one BLAS thread whatever the environment says.

``DPMOMENTS_TEST_ORDER`` runs the tests in another order, to catch a test that passes only after
(or before) another: ``reverse`` (the last module first, each module's tests last to first) or
``shuffle:SEED`` (modules in a shuffled order, and the tests within each). A module's tests stay
together, so its fixtures are set up once. ``.ci/fast-lane-twice`` uses it.

A test marked ``prestart`` has its work (a subprocess, a deployment) started when collection ends, to run on
the core the suite's one process leaves idle (``tests/background.py``); in the default order those tests
run last, so that work has the whole run to finish.

``DPMOMENTS_TEST_UNSEEDED=1`` lists, at the end of the run, the tests whose dpmoments calls drew
fresh OS entropy (``rng=None``): each is either meant to (it checks the unseeded path, with a verdict
that does not depend on the draw) or a test to seed.
"""

import atexit
import os
import random
import shutil
import tempfile

import pytest
from threadpoolctl import threadpool_limits

# Spent shares are recorded in a registry of this test run, never the user's (multisite/spent.py); set at
# import so that the command lines the tests start inherit it too.
os.environ["DPMOMENTS_STATE_HOME"] = tempfile.mkdtemp(prefix="dpmoments-state-")
atexit.register(shutil.rmtree, os.environ["DPMOMENTS_STATE_HOME"], ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="session")
def _share_registries(tmp_path_factory):
    return tmp_path_factory.mktemp("dpmoments-state")


@pytest.fixture(autouse=True)
def _private_share_registry(_share_registries, monkeypatch):
    """Each test records spent shares in its own registry, never in the user's (multisite/spent.py).

    A fresh directory in one session-wide folder: ``tmp_path_factory.mktemp`` per test lists the whole base
    temporary directory each time to number the new one (O(tests) a call), which over the suite's ~4600 tests
    cost ~20 s of CPU, and made every ``tmp_path`` after it slower the same way."""
    monkeypatch.setenv("DPMOMENTS_STATE_HOME", tempfile.mkdtemp(dir=_share_registries))


def _reordered(items, order):
    modules = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    blocks = list(modules.values())
    if order == "reverse":
        return [item for block in reversed(blocks) for item in reversed(block)]
    kind, _, seed = order.partition(":")
    if kind != "shuffle" or not seed.isdigit():
        raise pytest.UsageError(f"DPMOMENTS_TEST_ORDER must be 'reverse' or 'shuffle:SEED'; got {order!r}")
    rng = random.Random(int(seed))
    rng.shuffle(blocks)
    for block in blocks:
        rng.shuffle(block)
    return [item for block in blocks for item in block]


def pytest_configure(config):
    config.addinivalue_line("markers", "prestart(job): start this test's subprocess (tests/background.py) when "
                                       "collection ends, to run beside the other tests")


def pytest_collection_finish(session):
    if not session.config.option.collectonly:
        from tests.background import start_marked

        start_marked(session.items)


def pytest_collection_modifyitems(config, items):
    order = os.environ.get("DPMOMENTS_TEST_ORDER", "")
    if order:
        items[:] = _reordered(items, order)
    else:  # the tests whose work runs in the background (tests/background.py) come last: it has the run to finish
        items[:] = sorted(items, key=lambda item: item.get_closest_marker("prestart") is not None)


def pytest_report_header(config):
    order = os.environ.get("DPMOMENTS_TEST_ORDER", "")
    return f"test order: {order}" if order else None


_UNSEEDED = {}


@pytest.fixture(autouse=True)
def _record_unseeded_draws(request, monkeypatch):
    if not os.environ.get("DPMOMENTS_TEST_UNSEEDED"):
        yield
        return
    import sys

    import numpy as np

    real = np.random.default_rng

    def default_rng(seed=None):
        caller = sys._getframe(1).f_code.co_filename
        if seed is None and caller.endswith(os.path.join("dpmoments", "_rng.py")):
            _UNSEEDED[request.node.nodeid] = _UNSEEDED.get(request.node.nodeid, 0) + 1
        return real(seed)

    monkeypatch.setattr(np.random, "default_rng", default_rng)
    yield


def pytest_terminal_summary(terminalreporter):
    if _UNSEEDED:
        terminalreporter.write_sep("-", f"{len(_UNSEEDED)} test(s) drew OS entropy through dpmoments (rng=None)")
        for nodeid, count in sorted(_UNSEEDED.items()):
            terminalreporter.write_line(f"{count:5d}  {nodeid}")
