"""Private quantiles on a public grid (moments/private_bounds.py): accuracy, atoms, sensitivity, sources."""

import math

import numpy as np
import pytest

from dpmoments.mechanisms import exponential_mechanism_probabilities
from dpmoments.moments.private_bounds import (BinCounts, SearchRange, _scores, exponential_budget,
                                              noisy_clipped_count, private_quantiles, quantile_pass,
                                              select_quantiles)
from dpmoments.privacy import ApproxDP, PureDP, ZCDP

RNG = np.random.default_rng(0)
X = RNG.normal(size=(20_000, 3)) * [1.0, 10.0, 100.0] + [5.0, -50.0, 500.0]
EDGES = SearchRange().edges()


def test_search_range_is_public_and_checked():
    grid = SearchRange()
    assert (grid.low, grid.high, grid.steps) == (1e-6, 1e8, 1000)
    assert np.all(np.diff(grid.edges()) > 0) and grid.edges(signed=True)[1000] == 0.0
    with pytest.raises(ValueError, match="search range is empty"):
        SearchRange(10.0, 1.0)
    with pytest.raises(ValueError, match="search range is empty"):
        SearchRange(1.0, 1.0)
    with pytest.raises(ValueError, match="'low'"):
        SearchRange(0.0, 1.0)
    with pytest.raises(ValueError, match="'steps'"):
        SearchRange(steps=1)


@pytest.mark.parametrize("q", [0.5, 0.95])
def test_row_norm_quantile_is_within_a_grid_step_and_a_few_ranks(q):
    norms = np.linalg.norm(X - X.mean(0), axis=1)
    r = private_quantiles(X, epsilon=1.0, quantile=q, center=X.mean(0), rng=1)
    lo, hi = np.quantile(norms, [q - 0.01, q + 0.01])  # a few ranks off, and then up to one grid step (3.3%) up
    assert lo <= r.values[0] <= hi * 1.034
    assert r.guarantee == PureDP(1.0) and r.target == f"{q:g}-quantile" and not r.outside.any()


def test_column_medians_and_scales_recover_mixed_units():
    med = private_quantiles(X, statistic="column", epsilon=1.0, delta=1e-6, quantile=0.5, rng=2).values
    np.testing.assert_allclose(med, [5.0, -50.0, 500.0], rtol=0.05, atol=0.1)
    scale = private_quantiles(X, statistic="abs-column", epsilon=1.0, delta=1e-6, quantile=0.5, center=med,
                              rng=3).values
    np.testing.assert_allclose(scale / [1.0, 10.0, 100.0], 0.674, rtol=0.15)  # the normal MAD


def test_atoms_stay_next_to_the_atom():
    equal = np.full((5000, 2), 3.0)
    assert np.all(np.abs(private_quantiles(equal, statistic="column", epsilon=1.0, quantile=0.5,
                                           rng=0).values - 3.0) < 0.04 * 3.0)
    # a column at its centre everywhere gets the lowest edge, not a uniform draw
    zero = private_quantiles(np.zeros((5000, 2)), statistic="abs-column", epsilon=1.0, quantile=0.5, rng=0)
    np.testing.assert_array_equal(zero.values, [1e-6, 1e-6])
    # a binary column tied at its median: the scale is that of the other rows (1), not 0
    binary = (RNG.random((5000, 1)) < 0.3).astype(float)
    s = private_quantiles(binary, statistic="abs-column", epsilon=1.0, quantile=0.5, center=[0.0], rng=0)
    assert 1.0 <= s.values[0] < 1.04


def test_exponential_budget_uses_zcdp_for_many_draws():
    each, g = exponential_budget(0.1, 1e-7, 1)
    assert each == 0.1 and g == PureDP(0.1)
    each, g = exponential_budget(0.1, 1e-7, 50)
    assert each > 0.1 / 50 and isinstance(g, ApproxDP) and g.rho == pytest.approx(50 * each**2 / 8)
    assert g.epsilon == 0.1 and g.delta == 1e-7
    assert exponential_budget(math.inf, None, 3) == (math.inf, PureDP(math.inf))


def _neighbours(values, rng):
    """Random replace-one, add and remove neighbours of a 1-D statistic."""
    other = values.copy()
    other[rng.integers(values.size)] = rng.choice([0.0, values.max() * 2, rng.uniform(0, values.max())])
    yield other
    yield np.append(values, rng.uniform(0, 2 * values.max()))
    yield np.delete(values, rng.integers(values.size))


def _bin(values, ties=False):
    idx = np.searchsorted(EDGES, values, side="left")
    counts = np.bincount(idx, minlength=EDGES.size + 1)[None, :]
    return BinCounts(counts, np.array([np.sum(values == 0)]) if ties else None)


@pytest.mark.parametrize("target", ["quantile", "clipped", "ties"])
def test_scores_have_sensitivity_one_under_every_relation(target):
    rng = np.random.default_rng(4)
    for _ in range(200):
        values = np.abs(rng.standard_t(3, size=rng.integers(5, 60))) * rng.choice([1e-3, 1.0, 1e3])
        if target == "ties":
            values[rng.random(values.size) < 0.4] = 0.0
        for other in _neighbours(values, rng):
            scores = []
            for v in (values, other):
                bins = _bin(v, ties=target == "ties")
                n, q = v.size, 0.7
                t = {"quantile": q * n, "clipped": max(n - 3.0, 0.5 * n),
                     "ties": bins.ties[0] + q * (n - bins.ties[0]) if target == "ties" else 0}[target]
                scores.append(_scores(bins.counts[0], t))
            assert np.max(np.abs(scores[0] - scores[1])) <= 1.0 + 1e-12


def test_selection_probabilities_match_the_exponential_mechanism():
    bins = _bin(np.abs(RNG.normal(size=400)))
    scores = _scores(bins.counts[0], 0.5 * 400)
    p = exponential_mechanism_probabilities(scores, 0.5, 1.0, minimise=False)
    draws = [select_quantiles(bins, EDGES, epsilon_each=0.5, quantile=0.5, rng=s)[0][0] for s in range(3000)]
    empirical = np.mean(np.asarray(draws) == EDGES[np.argmax(p)])
    assert abs(empirical - p.max()) < 4 * math.sqrt(p.max() * (1 - p.max()) / 3000)


def test_one_pass_gives_the_same_counts_for_every_source(tmp_path):
    import dask.array as da

    np.save(tmp_path / "X.npy", X)
    request = [("row-norm", None, None), ("column", None, None), ("abs-column", np.zeros(3), None)]
    ref, d = quantile_pass(X, request, search=SearchRange())
    assert d == 3
    for source in (tmp_path / "X.npy", [X[:7000], X[7000:]], da.from_array(X, chunks=(3000, 3)),
                   (c for c in np.array_split(X, 4))):
        got, _ = quantile_pass(source, request, search=SearchRange())
        for a, b in zip(ref, got):
            np.testing.assert_array_equal(a.counts, b.counts)


def test_pass_errors_name_the_problem_not_the_data():
    with pytest.raises(ValueError, match="no rows"):
        quantile_pass(np.empty((0, 2)), [("row-norm", None, None)], search=SearchRange())
    bad = X[:10].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite") as err:
        quantile_pass(bad, [("row-norm", None, None)], search=SearchRange())
    assert str(bad[3, 0])[:6] not in str(err.value)
    with pytest.raises(ValueError, match="needs 'y'"):
        quantile_pass(X, [("abs-response", None, None)], search=SearchRange())
    with pytest.raises(ValueError, match="'statistic'"):
        private_quantiles(X, statistic="norm", epsilon=1.0)
    with pytest.raises(ValueError, match="'quantile'"):
        private_quantiles(X, epsilon=1.0, quantile=1.0)


def test_noisy_clipped_count_releases_only_a_noisy_value():
    bins = _bin(np.arange(1.0, 1001.0))
    bound = EDGES[np.searchsorted(EDGES, 900.0)]
    exact = np.sum(np.arange(1.0, 1001.0) > bound)
    lap = [noisy_clipped_count(bins, EDGES, bound, epsilon=0.5, rng=s) for s in range(2000)]
    assert all(c.value != exact for c in lap[:20]) and lap[0].guarantee == PureDP(0.5)
    assert np.mean([c.value for c in lap]) == pytest.approx(exact, abs=0.5)
    assert np.std([c.value for c in lap]) == pytest.approx(lap[0].noise_sd, rel=0.1)
    gauss = noisy_clipped_count(bins, EDGES, bound, rho=0.5, rng=0)
    assert gauss.guarantee == ZCDP(0.5) and gauss.noise_sd == 1.0
