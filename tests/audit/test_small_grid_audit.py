"""Audit of a private quantile drawn on the coarsest small-table grid (``moments/small_grid.py``: 30 steps over
the default 1e-6 to 1e8).

The grid is public and fixed from the public ``n``, shares and grid alone, so the draw is the audited exponential
mechanism on other edges (``test_bounds_audits.py``): one row moved from below the data to above them shifts the
score of every bin in between by one. A replica (Gumbel-max on the same scores) is checked draw for draw against
``select_quantiles`` on that grid; the audit projects onto the exact privacy loss of the drawn bin and must not
refute epsilon. Negative control: the scores without the mechanism's factor 1/2, which the audit refutes.
"""

import numpy as np
import pytest

from dpmoments.moments.private_bounds import SearchRange, _scores, quantile_pass, select_quantiles
from dpmoments.moments.small_grid import COARSE_STEPS
from dpmoments.testing import audit

from ._exponential import pair_loss, replica

EPS, Q = 1.0, 0.5
SEARCH = SearchRange(steps=min(COARSE_STEPS))
EDGES = SEARCH.edges()
SMALL = np.array([[0.7, 0.0], [0.0, 30.0], [1.3, 1.3], [-250.0, 0.0], [0.0, -4.0]])  # norms across several bins
PAIR = {"A": np.array([1e-5, 0.0]), "B": np.array([0.0, 3e3])}


def _bins(name):
    (bins,), _ = quantile_pass(np.vstack([SMALL, PAIR[name]]), [("row-norm", None, None)], search=SEARCH)
    return bins


def _scores_of():
    return {name: _scores(_bins(name).counts[0], Q * _bins(name).counts[0].sum()) for name in PAIR}


def test_replica_reproduces_the_draw_on_the_coarse_grid():
    draw, _ = replica(_scores_of(), EPS)
    for name in PAIR:
        for seed in range(10):
            value, _ = select_quantiles(_bins(name), EDGES, epsilon_each=EPS, quantile=Q,
                                        rng=np.random.default_rng(seed))
            assert value[0] == EDGES[min(draw(name, np.random.default_rng(seed), 1)[0], EDGES.size - 1)]


@pytest.mark.statistical
def test_the_coarse_grids_draw_audit_and_its_negative_control():
    scores = _scores_of()
    draw, loss = replica(scores, EPS)
    result = audit(draw, "A", "B", delta=0.0, n_samples=50_000, batch=50_000, projection=loss, rng=51)
    result.check(EPS)  # this pair's exact worst loss is 0.527; observed 0.486 (0.471-0.492 at seeds 52-54)
    assert result.consistent_with(pair_loss(scores, EPS))
    draw, loss = replica(scores, EPS, factor=1.0)
    result = audit(draw, "A", "B", delta=0.0, n_samples=50_000, batch=50_000, projection=loss, rng=52)
    assert not result.consistent_with(pair_loss(scores, EPS))  # observed 1.039 (1.024-1.044 at seeds 51, 53, 54)
