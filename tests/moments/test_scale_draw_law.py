"""The column-scale draw follows the law docs/privacy.md states (issue 29), on a table with rows tied at the centre.

docs/privacy.md: bin k of the public grid scores u_k = -max(0, L_k - T, T - U_k) with T = Z + q(n - Z) for Z rows
tied at the centre; P(k) is proportional to exp(epsilon_each u_k / 2), times the base measure (G + 1) e^5 on the
lowest bin; the value released is bin k's upper edge (the top edge for the bin beyond it). epsilon_each is the
one the release records for the part (its ``draws``). A chi-squared test at a fixed seed on 2000 draws
(p > 0.001 at this seed; the law with the ties left out, or without the base measure, gives p < 1e-6).
"""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dpmoments.moments.choice_budget import PrivateChoiceBudget
from dpmoments.moments.private_passes import column_scales
from dpmoments.moments.private_bounds import TIE_PRIOR
from dpmoments.moments.quantile_grid import SearchRange

SEARCH = SearchRange(0.5, 8.0, steps=5)
# 30 rows exactly at the centre 0, and 36 spread over the grid
X = np.array([0.0] * 30 + [0.7, -1.5, 1.5, -3, 3, 5.0, -6, 9, 0.3, -0.2, 1.2, 2.5] * 3)[:, None]


def documented_law(values, epsilon_each, q=0.5, ties=True, base=True):
    """P(value) by docs/privacy.md's formula, from the table alone."""
    edges = SEARCH.edges()
    counts = np.bincount(np.searchsorted(edges, values, side="left"), minlength=edges.size + 1)
    n, Z = values.size, int(np.sum(values == 0)) if ties else 0
    T = Z + q * (n - Z)
    upper = np.cumsum(counts)
    lower = upper - counts
    u = -np.maximum(0, np.maximum(lower - T, T - upper))
    w = np.exp(epsilon_each * u / 2)
    if base:
        w[0] *= (edges.size + 1) * math.exp(TIE_PRIOR)
    p = w / w.sum()
    return np.r_[p[:-2], p[-2:].sum()]  # the bin beyond the grid releases the top edge


def test_the_column_scale_draw_has_the_documented_law():
    rng = np.random.default_rng(2029)
    K, draws, each = 2000, [], None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(K):
            budget = PrivateChoiceBudget(1.6, 1e-6, "gaussian", "analytic")  # zCDP shares, as in the estimators
            draws.append(column_scales(X, np.zeros(1), budget, 0.5, SEARCH, rng)[0])
            each = budget.parts[-1].draws["epsilon_each"]  # what the report records for the draw
    observed = np.array([np.sum(np.asarray(draws) == e) for e in SEARCH.edges()])
    assert observed.sum() == K
    values = np.abs(X[:, 0])
    assert stats.chisquare(observed, documented_law(values, each) * K).pvalue > 1e-3
    # the test has the power to see a law that forgets the ties or the base measure
    assert stats.chisquare(observed, documented_law(values, each, ties=False) * K).pvalue < 1e-6
    assert stats.chisquare(observed, documented_law(values, each, base=False) * K).pvalue < 1e-6
    assert each == pytest.approx(math.sqrt(8 * 0.5 * budget.rho))  # one column: the share's rho in one draw
