"""Test-wide settings.

Threaded BLAS makes ``X.T @ X`` 15-30x slower on small shared machines, so
the whole suite runs with one BLAS thread whatever the environment says.
"""

import atexit
import os
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


@pytest.fixture(autouse=True)
def _private_share_registry(tmp_path_factory, monkeypatch):
    """Each test records spent shares in its own registry, never in the user's (multisite/spent.py)."""
    monkeypatch.setenv("DPMOMENTS_STATE_HOME", str(tmp_path_factory.mktemp("dpmoments-state")))
