"""PrivateGraphicalLasso's penalty path: sparse solutions at large p, eBIC read off the certified objective."""

import numpy as np
import pytest

from dpmoments.estimators import PrivateGraphicalLasso, precision
from dpmoments.estimators.selection import ebic, ebic_of_solution
from dpmoments.solvers import graphical_lasso

RNG = np.random.default_rng(2)
P_TRUE = np.eye(12) + np.diag(np.full(11, 0.4), 1) + np.diag(np.full(11, 0.4), -1)
X = RNG.multivariate_normal(np.zeros(12), np.linalg.inv(P_TRUE), size=4000) / 8


def _fit(monkeypatch, sparse_from, **kwargs):
    monkeypatch.setattr(precision, "SPARSE_PATH_FROM", sparse_from)
    args = dict(alpha="ebic", alphas=10, alpha_floor=0, epsilon=4.0, delta=1e-6, row_norm=1.0, rng=0)
    return PrivateGraphicalLasso(**{**args, **kwargs}).fit(X)


@pytest.mark.parametrize("kwargs", [{}, {"penalize_diagonal": False}, {"alpha": "edges", "max_edges": 6},
                                    {"n_draws": 3}])
def test_the_sparse_path_gives_the_dense_paths_entries(monkeypatch, kwargs):
    dense, sparse = _fit(monkeypatch, 10**9, **kwargs), _fit(monkeypatch, 2, **kwargs)
    assert sparse.alpha_ == dense.alpha_ and sparse.path_.chosen == dense.path_.chosen
    np.testing.assert_array_equal(sparse.path_.n_edges, dense.path_.n_edges)
    for a, b in zip(sparse.path_.precisions, dense.path_.precisions):
        assert isinstance(a, np.ndarray) and a.shape == (12, 12)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sparse.precision_, dense.precision_, rtol=1e-9, atol=1e-12)
    if dense.ebic_ is not None:
        np.testing.assert_allclose(sparse.ebic_, dense.ebic_, rtol=1e-9)
    np.testing.assert_array_equal(sparse.path_.precisions[sparse.path_.chosen], sparse.precision_)
    if kwargs.get("n_draws"):
        np.testing.assert_array_equal(sparse.edge_frequency_, dense.edge_frequency_)


@pytest.mark.parametrize("penalize_diagonal", [True, False])
def test_ebic_from_the_objective_equals_ebic_from_the_determinant(penalize_diagonal):
    S = np.cov(X.T, bias=True)
    for alpha in (0.001, 0.003, 0.01):
        res = graphical_lasso(S, alpha, penalize_diagonal=penalize_diagonal, tol=1e-10)
        assert ebic_of_solution(res, 4000, 0.5, penalize_diagonal) == pytest.approx(
            ebic(S, res.precision, 4000, 0.5), rel=1e-9)


def test_the_kept_path_reads_back_dense_one_solution_at_a_time(monkeypatch):
    est = _fit(monkeypatch, 2)
    path = est.path_
    assert len(path.precisions) == 10 and all(P.nnz < 144 for P in path.sparse_precisions)
    assert [P.shape for P in path.precisions[2:4]] == [(12, 12), (12, 12)]


def test_alpha_defaults_to_ebic_as_on_the_command_line():
    """``PrivateGraphicalLasso()`` without ``alpha`` said "GraphicalLassoFit.__init__() missing 1 required
    keyword-only argument"; the command line's default is eBIC, and so is the library's now."""
    import inspect

    from dpmoments import PrivateGraphicalLasso
    from dpmoments.cli import build_parser

    assert PrivateGraphicalLasso().alpha == "ebic"
    assert inspect.signature(PrivateGraphicalLasso).parameters["alpha"].default == "ebic"
    args = build_parser("precision").parse_args(["precision", "x.csv", "--epsilon", "1", "--out", "o"])
    from dpmoments.cli.precision import _alpha

    assert _alpha(args) == "ebic"
