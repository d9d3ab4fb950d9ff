"""Test-wide settings.

Threaded BLAS makes ``X.T @ X`` 15-30x slower on small shared machines, so
the whole suite runs with one BLAS thread whatever the environment says.

``DPMOMENTS_TEST_ORDER`` runs the tests in another order, to catch a test that passes only after
(or before) another: ``reverse`` (the last module first, each module's tests last to first) or
``shuffle:SEED`` (modules in a shuffled order, and the tests within each). A module's tests stay
together, so its fixtures are set up once. ``.ci/fast-lane-twice`` uses it.
"""

import os
import random

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(scope="session", autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1):
        yield


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


def pytest_collection_modifyitems(config, items):
    order = os.environ.get("DPMOMENTS_TEST_ORDER", "")
    if order:
        items[:] = _reordered(items, order)


def pytest_report_header(config):
    order = os.environ.get("DPMOMENTS_TEST_ORDER", "")
    return f"test order: {order}" if order else None
