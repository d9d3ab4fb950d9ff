"""Test-wide settings.

Threaded BLAS makes ``X.T @ X`` 15-30x slower on small shared machines, so
the whole suite runs with one BLAS thread whatever the environment says.
"""

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(scope="session", autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1):
        yield
