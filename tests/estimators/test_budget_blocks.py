"""The covariance error budget made a block of rows at a time (budget_rows.py, clipping_blocks.py) joins bit for bit:
every output with one-row blocks equals the one with the whole matrix in one block."""

import numpy as np
import pytest

from dpmoments import PrivateCovariance
from dpmoments.estimators import uncertainty


def _outputs(X, **kw):
    est = PrivateCovariance(**({"epsilon": 4.0, "delta": 1e-6, "rng": 0} | kw)).fit(X)
    return est, [est.covariance_, np.asarray(est.covariance_se_), np.asarray(est.covariance_interval_),
                 est.covariance_biased_]


@pytest.mark.parametrize("kw", [{}, {"mechanism": "laplace", "delta": 0.0}])
def test_blocks_of_one_row_give_the_same_bytes(monkeypatch, kw):
    rng = np.random.default_rng(1)
    n = 800  # a heavy-tailed column in units 100 times the others': the private bound clips it (a detected loss); one entry
    # excludes 0
    X = np.column_stack([rng.standard_normal(n) * 100, rng.integers(0, 2, n), rng.exponential(1, n),
                         rng.standard_t(2, n) * 5, rng.standard_normal((n, 2))])
    whole, expected = _outputs(X, **kw)
    monkeypatch.setattr(uncertainty, "ROW_BLOCK_ELEMENTS", 1)  # one row a block
    blocked, got = _outputs(X, **kw)
    for a, b in zip(expected, got):
        assert a.tobytes() == b.tobytes()
    assert whole.uncertainty_["error_budget"] == blocked.uncertainty_["error_budget"]
