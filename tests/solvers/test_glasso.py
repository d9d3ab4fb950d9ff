"""Graphical lasso: the fast solver, the paper ADMM, screening, paths, bad inputs."""

import time
import warnings

import numpy as np
import pytest

from dpmoments.solvers import (GlassoInfeasibleError, GlassoResult, glasso_blocks, glasso_objective,
                               graphical_lasso, graphical_lasso_admm, graphical_lasso_path)


def ar2(p):
    return (np.eye(p) + 0.5 * (np.eye(p, k=1) + np.eye(p, k=-1))
            + 0.25 * (np.eye(p, k=2) + np.eye(p, k=-2)))


def sample_cov(p, n, seed=0, precision=None):
    rng = np.random.default_rng(seed)
    T = ar2(p) if precision is None else precision
    L = np.linalg.cholesky(np.linalg.inv(T))
    X = rng.standard_normal((n, p)) @ L.T
    return X.T @ X / n


def kkt_violation(S, Theta, alpha, penalize_diagonal):
    """max over entries of the distance of (Θ⁻¹ − S) to α ∂‖Θ‖₁."""
    G = np.linalg.inv(Theta) - S
    nz = Theta != 0
    sub = np.where(nz, np.abs(G - alpha * np.sign(Theta)), np.maximum(np.abs(G) - alpha, 0.0))
    if not penalize_diagonal:
        np.fill_diagonal(sub, np.abs(np.diag(G)))
    return float(sub.max())


@pytest.fixture(scope="module")
def S40():
    return sample_cov(40, 400, seed=1)


# ---------------------------------------------------------------- objective


def test_objective_values():
    S = np.array([[2.0, 0.3], [0.3, 1.0]])
    T = np.array([[1.0, -0.2], [-0.2, 0.5]])
    expected = -np.log(np.linalg.det(T)) + np.trace(S @ T) + 0.1 * np.abs(T).sum()
    assert glasso_objective(S, T, 0.1) == pytest.approx(expected, rel=1e-12)
    assert glasso_objective(S, T, 0.1, penalize_diagonal=False) == pytest.approx(expected - 0.1 * 1.5, rel=1e-12)
    assert glasso_objective(S, -T, 0.1) == np.inf


# ---------------------------------------------------------------- correctness


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.3])
def test_matches_sklearn_diagonal_excluded(S40, alpha):
    sk = pytest.importorskip("sklearn.covariance")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, P = sk.graphical_lasso(S40, alpha, mode="cd", tol=1e-10, enet_tol=1e-10, max_iter=500)
    P = 0.5 * (P + P.T)
    res = graphical_lasso(S40, alpha, penalize_diagonal=False, tol=1e-14)
    assert res.converged and res.solver == "bcd"
    np.testing.assert_allclose(res.precision, P, atol=1e-6)
    f_sk = glasso_objective(S40, P, alpha, penalize_diagonal=False)
    assert res.objective <= f_sk + 1e-9 * abs(f_sk)
    assert kkt_violation(S40, res.precision, alpha, False) < 1e-6


@pytest.mark.parametrize("alpha", [0.02, 0.1, 0.25])
def test_papers_penalty_kkt(S40, alpha):
    res = graphical_lasso(S40, alpha, tol=1e-14)
    assert res.converged and res.penalize_diagonal
    assert kkt_violation(S40, res.precision, alpha, True) < 1e-6
    assert -1e-10 <= res.duality_gap <= 1e-14 * max(1.0, abs(res.objective)) * 1.0001
    np.testing.assert_array_equal(res.precision, res.precision.T)
    np.testing.assert_allclose(res.covariance @ res.precision, np.eye(40), atol=1e-6)
    assert np.all(np.isfinite(res.precision)) and np.all(np.linalg.eigvalsh(res.precision) > 0)
    # sparse: exact zeros where |Θ⁻¹ − S| < α strictly
    assert (res.precision == 0).sum() > 0


def test_default_tol_reaches_relative_gap_1e7():
    S = sample_cov(60, 600, seed=3)
    ref = graphical_lasso(S, 0.1, tol=1e-13)
    res = graphical_lasso(S, 0.1)
    assert (res.objective - ref.objective) / abs(ref.objective) <= 1e-7
    assert res.duality_gap <= 1e-7 * abs(res.objective)


def test_alpha_zero_is_inverse():
    S = sample_cov(8, 200, seed=4)
    for pen in (True, False):
        res = graphical_lasso(S, 0.0, penalize_diagonal=pen, tol=1e-12)
        np.testing.assert_allclose(res.precision, np.linalg.inv(S), rtol=1e-7, atol=1e-8)


def test_one_by_one_and_diagonal_closed_forms():
    res = graphical_lasso([[2.0]], 0.5)
    assert res.precision[0, 0] == pytest.approx(1 / 2.5)
    res = graphical_lasso([[2.0]], 0.5, penalize_diagonal=False)
    assert res.precision[0, 0] == pytest.approx(1 / 2.0)
    D = np.diag([1.0, 2.0, 4.0])
    res = graphical_lasso(D, 0.1)
    np.testing.assert_allclose(res.precision, np.diag(1 / (np.diag(D) + 0.1)))
    assert res.n_blocks == 3


# ---------------------------------------------------------------- ADMM


def test_admm_reaches_the_same_optimum(S40):
    alpha = 0.1
    ref = graphical_lasso(S40, alpha, tol=1e-12)
    res = graphical_lasso_admm(S40, alpha, rho=1.0, abs_tol=1e-9, rel_tol=1e-9, max_iter=5000,
                               over_relaxation=1.5, residual_balancing=True)
    assert res.converged and res.solver == "admm"
    assert res.info["returned"] == "Z"
    assert abs(res.objective - ref.objective) <= 1e-8 * abs(ref.objective)
    np.testing.assert_allclose(res.precision, ref.precision, atol=1e-5)
    np.testing.assert_allclose(res.covariance @ res.precision, np.eye(40), atol=1e-8)


def test_admm_paper_settings_and_objective_decreases(S40):
    alpha = 0.1
    ref = graphical_lasso(S40, alpha, tol=1e-12)
    objs = [graphical_lasso_admm(S40, alpha, rho=100.0, max_iter=k, abs_tol=1e-12, rel_tol=1e-12).objective
            for k in (50, 200, 800)]
    assert objs[0] >= objs[1] - 1e-9 and objs[1] >= objs[2] - 1e-9
    assert objs[-1] - ref.objective < 1e-3 * abs(ref.objective)
    paper = graphical_lasso_admm(S40, alpha)  # rho=100, Boyd tolerances
    assert paper.converged and np.isfinite(paper.objective)
    assert (paper.objective - ref.objective) / abs(ref.objective) < 1e-2


def test_admm_diagonal_excluded_and_warm_start(S40):
    ref = graphical_lasso(S40, 0.1, penalize_diagonal=False, tol=1e-12)
    res = graphical_lasso_admm(S40, 0.1, rho=1.0, penalize_diagonal=False, abs_tol=1e-9, rel_tol=1e-9,
                               max_iter=5000, residual_balancing=True)
    assert abs(res.objective - ref.objective) <= 1e-8 * abs(ref.objective)
    rho = res.info["rho"]
    warm = graphical_lasso_admm(S40, 0.1, rho=rho, penalize_diagonal=False, abs_tol=1e-9, rel_tol=1e-9,
                                max_iter=5000, Z0=res.precision, U0=(res.covariance - S40) / rho)
    assert warm.n_iter <= 5 < res.n_iter


# ---------------------------------------------------------------- screening


def test_screening_gives_exactly_the_same_answer():
    rng = np.random.default_rng(5)
    blocks = [ar2(k) for k in (10, 1, 7, 1, 12)]
    p = sum(b.shape[0] for b in blocks)
    T = np.zeros((p, p))
    i = 0
    for b in blocks:
        T[i:i + b.shape[0], i:i + b.shape[0]] = b
        i += b.shape[0]
    perm = rng.permutation(p)
    S = sample_cov(p, 5000, seed=6, precision=T[np.ix_(perm, perm)])
    alpha = 0.12
    n_blocks, labels = glasso_blocks(S, alpha)
    assert n_blocks > 1
    for pen in (True, False):
        a = graphical_lasso(S, alpha, penalize_diagonal=pen, tol=1e-14)
        b = graphical_lasso(S, alpha, penalize_diagonal=pen, tol=1e-14, screen=False)
        assert a.n_blocks == n_blocks and b.n_blocks == 1
        np.testing.assert_allclose(a.precision, b.precision, atol=1e-6)
        np.testing.assert_array_equal(a.precision == 0, b.precision == 0)
        assert a.objective == pytest.approx(b.objective, rel=1e-12)
        # exact block structure: zero between blocks
        cross = labels[:, None] != labels[None, :]
        assert np.all(a.precision[cross] == 0) and np.all(b.precision[cross] == 0)
        assert kkt_violation(S, a.precision, alpha, pen) < 1e-7


# ---------------------------------------------------------------- path


def test_path_equals_independent_solves(S40):
    alphas = [0.05, 0.3, 0.1, 0.2]
    path = graphical_lasso_path(S40, alphas, tol=1e-12)
    assert len(path) == 4 and all(isinstance(r, GlassoResult) for r in path)
    for a, r in zip(alphas, path):
        ind = graphical_lasso(S40, a, tol=1e-12)
        assert r.alpha == a and r.converged
        assert r.objective == pytest.approx(ind.objective, rel=1e-12)
        np.testing.assert_allclose(r.precision, ind.precision, atol=1e-5)
    path_sk = graphical_lasso_path(S40, alphas, penalize_diagonal=False, tol=1e-12)
    for a, r in zip(alphas, path_sk):
        ind = graphical_lasso(S40, a, penalize_diagonal=False, tol=1e-12)
        assert r.objective == pytest.approx(ind.objective, rel=1e-12)
        np.testing.assert_allclose(r.precision, ind.precision, atol=1e-5)


def test_warm_start_from_array(S40):
    ref = graphical_lasso(S40, 0.1, tol=1e-12)
    res = graphical_lasso(S40, 0.1, tol=1e-12, warm_start=ref.precision)
    np.testing.assert_allclose(res.precision, ref.precision, atol=1e-6)
    assert res.n_iter < ref.n_iter


# ---------------------------------------------------------------- indefinite S


def noisy(S, sigma, seed):
    rng = np.random.default_rng(seed)
    E = rng.normal(0, sigma, S.shape)
    E = np.triu(E) + np.triu(E, 1).T
    return S + E


def test_indefinite_but_feasible_is_solved():
    S = noisy(sample_cov(30, 300, seed=7), 0.1, seed=8)
    assert np.linalg.eigvalsh(S)[0] < 0
    res = graphical_lasso(S, 0.2, tol=1e-14)
    assert res.converged and np.all(np.isfinite(res.precision))
    assert kkt_violation(S, res.precision, 0.2, True) < 1e-6


@pytest.mark.parametrize("pen", [True, False])
def test_infeasible_raises_quickly_without_nan(pen):
    S = -2.0 * np.eye(5) + 0.01
    t0 = time.perf_counter()
    with pytest.raises(GlassoInfeasibleError, match="no graphical-lasso solution.*project"):
        graphical_lasso(S, 0.1, penalize_diagonal=pen)
    S = noisy(sample_cov(30, 60, seed=9), 0.5, seed=10)  # heavy noise, small alpha
    with pytest.raises(ValueError, match="no graphical-lasso solution"):
        graphical_lasso(S, 0.01, penalize_diagonal=pen)
    assert time.perf_counter() - t0 < 5


def test_admm_on_infeasible_stops_finite():
    S = noisy(sample_cov(20, 40, seed=11), 0.5, seed=12)
    t0 = time.perf_counter()
    res = graphical_lasso_admm(S, 0.01, max_iter=2000)
    assert time.perf_counter() - t0 < 10
    assert not res.converged
    assert np.all(np.isfinite(res.precision)) and np.all(np.isfinite(res.covariance))
    assert np.isfinite(res.objective) or res.objective == np.inf
    assert "no graphical-lasso solution" in res.message or "max_iter" in res.message


# ---------------------------------------------------------------- bad inputs


@pytest.mark.parametrize("fn", [graphical_lasso, graphical_lasso_admm,
                                lambda S, a: graphical_lasso_path(S, [a])])
def test_bad_inputs(fn):
    good = np.eye(3)
    with pytest.raises(ValueError, match="'S'"):
        fn(np.ones((3, 2)), 0.1)
    with pytest.raises(ValueError, match="'S'"):
        fn(np.array([[1.0, np.nan], [np.nan, 1.0]]), 0.1)
    with pytest.raises(ValueError, match="'S'.*symmetric"):
        fn(np.array([[1.0, 0.5], [0.0, 1.0]]), 0.1)
    with pytest.raises(ValueError, match="'alpha'"):
        fn(good, -0.1)
    with pytest.raises(ValueError, match="'alpha'"):
        fn(good, float("nan"))
    # tiny asymmetry is symmetrised
    S = np.array([[1.0, 0.5 + 1e-13], [0.5, 1.0]])
    assert np.all(np.isfinite(fn(S, 0.1).precision if not isinstance(fn(S, 0.1), list) else fn(S, 0.1)[0].precision))


def test_bad_solver_options():
    with pytest.raises(ValueError, match="'rho'"):
        graphical_lasso_admm(np.eye(2), 0.1, rho=0)
    with pytest.raises(ValueError, match="'over_relaxation'"):
        graphical_lasso_admm(np.eye(2), 0.1, over_relaxation=2.5)
    with pytest.raises(ValueError, match="'tol'"):
        graphical_lasso(np.eye(2), 0.1, tol=-1)
    with pytest.raises(ValueError, match="'warm_start'"):
        graphical_lasso(np.eye(2), 0.1, warm_start=np.eye(3))
    with pytest.raises(ValueError, match="'alphas'"):
        graphical_lasso_path(np.eye(2), [])


# ---------------------------------------------------------------- gap certificate and path warm starts


def test_sparse_gap_bound_certifies_the_exact_gap():
    """Above the exact-check size the stopping rule is a factorisation-free bound: it must bound the gap."""
    from dpmoments.solvers import glasso_bcd
    p = glasso_bcd._DENSE_CERT_P + 20
    S = sample_cov(p, 10 * p, seed=13)
    ref = graphical_lasso(S, 0.1, tol=1e-13, max_iter=200)
    for pen in (True, False):
        res = graphical_lasso(S, 0.1, penalize_diagonal=pen)
        assert res.converged
        exact = res.objective - (np.linalg.slogdet(res.covariance)[1] + p)
        assert res.duality_gap >= exact - 1e-9 * abs(res.objective)
        assert res.duality_gap <= 1e-7 * abs(res.objective)
        assert res.objective == pytest.approx(glasso_objective(S, res.precision, 0.1, pen), rel=1e-12)
        assert 0 <= res.info["rho"] < 0.5
        if pen:
            assert (res.objective - ref.objective) / abs(ref.objective) <= 1e-7


def test_gap_bound_against_two_factorisations():
    from dpmoments.solvers.glasso_certificate import assemble, gap_bound
    from scipy.sparse import csr_matrix
    S = sample_cov(30, 300, seed=14)
    res = graphical_lasso(S, 0.1, tol=1e-14)
    rng = np.random.default_rng(15)
    for scale in (1e-6, 1e-4, 1e-3):
        E = scale * rng.standard_normal((30, 30))
        T = res.precision + (E + E.T) * (res.precision != 0)
        exact = glasso_objective(S, T, 0.1) - (np.linalg.slogdet(res.covariance)[1] + 30)
        bound, rho = gap_bound(S, res.covariance, csr_matrix(T), 0.1, True)
        R = T @ res.covariance - np.eye(30)
        slack = 0.5 * (np.vdot(R, R) - np.trace(R @ R))  # what the Frobenius norm adds to tr E²
        assert rho ** 2 == pytest.approx(np.vdot(R, R), rel=1e-6)
        assert exact - 1e-12 <= bound <= exact + slack * (1 + 2 * rho) + 10 * rho ** 3 + 1e-12
    active = (np.array([0, 1, 1]), np.array([1]), np.array([0.5]))
    assert assemble(2, active, np.array([2.0, 4.0]))[0, 1] == pytest.approx(-0.5)


@pytest.mark.parametrize("pen", [True, False])
def test_large_path_meets_tol_at_every_alpha(pen):
    """The path's warm starts (certified-PD dual start, sparse gap bound) keep every λ within tol."""
    p = 320
    S = sample_cov(p, 10 * p, seed=16)
    off = np.abs(S - np.diag(np.diag(S))).max()
    alphas = np.geomspace(off, 0.08, 5)
    path = graphical_lasso_path(S, alphas, penalize_diagonal=pen)
    for a, r in zip(alphas, path):
        ref = graphical_lasso(S, a, penalize_diagonal=pen, tol=1e-13, max_iter=200)
        assert r.converged and np.all(np.isfinite(r.precision))
        assert (r.objective - ref.objective) / abs(ref.objective) <= 1e-7
        assert r.objective == pytest.approx(glasso_objective(S, r.precision, a, pen), rel=1e-12)


def test_path_on_indefinite_noisy_S_stays_finite():
    S = noisy(sample_cov(30, 300, seed=17), 0.1, seed=18)
    path = graphical_lasso_path(S, [0.5, 0.3, 0.2])
    for a, r in zip([0.5, 0.3, 0.2], path):
        ref = graphical_lasso(S, a, tol=1e-13, max_iter=200)
        assert r.converged and np.all(np.isfinite(r.precision))
        assert (r.objective - ref.objective) / abs(ref.objective) <= 1e-7


def test_path_extrapolated_starts_take_one_sweep_per_penalty():
    """The extrapolated dual start makes most penalties one sweep (the previous dual alone needed two)."""
    S = sample_cov(120, 1200, seed=30)
    off = np.abs(S - np.diag(np.diag(S))).max()
    alphas = np.geomspace(off, 0.1, 20)
    path = graphical_lasso_path(S, alphas)
    assert sum(r.n_iter for r in path) <= 26  # 33 when warm-started from the previous dual only
    ref = graphical_lasso(S, 0.1, tol=1e-13, max_iter=200)
    assert path[-1].converged and (path[-1].objective - ref.objective) / abs(ref.objective) <= 1e-7


def test_path_survives_a_start_that_is_not_positive_definite(monkeypatch):
    """A bad extrapolation costs time, never the result: the next start (or a cold one) takes over."""
    from dpmoments.solvers import glasso_path
    calls = []

    def bad(S, W1, W0, r, alpha, out=None):  # inside the dual box, but with a large negative eigenvalue along ones
        calls.append(alpha)
        return S - alpha * (1 - np.eye(len(S)))

    monkeypatch.setattr(glasso_path, "_extrapolate", bad)
    S = sample_cov(40, 400, seed=31)
    alphas = [0.4, 0.3, 0.2, 0.15, 0.1]
    for a, r in zip(alphas, graphical_lasso_path(S, alphas)):
        ref = graphical_lasso(S, a, tol=1e-13, max_iter=200)
        assert r.converged and (r.objective - ref.objective) / abs(ref.objective) <= 1e-7
    assert calls  # the bad start was tried


def test_iter_path_lets_go_of_the_precisions_it_yielded():
    """Between penalties only the duals are kept: a caller that drops each result frees its precision."""
    import gc
    import weakref
    from dpmoments.solvers import iter_graphical_lasso_path
    S = sample_cov(40, 400, seed=32)
    refs = []
    for _, res in iter_graphical_lasso_path(S, [0.4, 0.3, 0.2, 0.15, 0.1]):
        refs.append(weakref.ref(res.precision))
        del res
        gc.collect()
        assert all(r() is None for r in refs[:-1])  # the last is still the generator's until it resumes


# ---------------------------------------------------------------- compiled sweep and its NumPy fallback


def test_compiled_sweep_is_built_where_a_compiler_is():
    """`pip install .` builds the C sweep when a compiler exists; its build is optional, so check it happened."""
    import shutil
    from dpmoments.solvers import glasso_bcd
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the pure-NumPy sweep is used")
    assert glasso_bcd._glasso_sweep is not None


@pytest.mark.parametrize("p, pen", [(40, True), (40, False), (330, True)])
def test_numpy_fallback_matches_the_compiled_sweep(monkeypatch, p, pen):
    """Without a compiler the solver runs the same algorithm in NumPy: same answers, same certificate."""
    from dpmoments.solvers import glasso_bcd, glasso_certificate
    if glasso_bcd._glasso_sweep is None:
        pytest.skip("the compiled sweep was not built")
    S = sample_cov(p, 5 * p, seed=21)
    alphas = [0.3, 0.1]
    fast = graphical_lasso_path(S, alphas, penalize_diagonal=pen)
    monkeypatch.setattr(glasso_bcd, "USE_COMPILED", False)
    monkeypatch.setattr(glasso_certificate, "_compiled", None)
    slow = graphical_lasso_path(S, alphas, penalize_diagonal=pen)
    for a, b in zip(fast, slow):
        assert a.converged and b.converged
        assert abs(a.objective - b.objective) <= 1e-7 * abs(b.objective)
        assert np.array_equal(a.precision != 0, b.precision != 0)
        np.testing.assert_allclose(a.covariance, b.covariance, atol=1e-6)


def test_compiled_residual_matches_numpy():
    from scipy.sparse import csr_matrix
    from dpmoments.solvers import glasso_certificate
    if glasso_certificate._compiled is None:
        pytest.skip("the compiled sweep was not built")
    S = sample_cov(300, 3000, seed=22)
    res = graphical_lasso(S, 0.1)
    T = csr_matrix(res.precision)
    fast = glasso_certificate._residual(res.covariance, T)
    compiled, glasso_certificate._compiled = glasso_certificate._compiled, None
    try:
        slow = glasso_certificate._residual(res.covariance, T)
    finally:
        glasso_certificate._compiled = compiled
    np.testing.assert_allclose(fast, slow, rtol=1e-12)


def test_compiled_residual_every_row_length():
    """The C residual takes four rows of W per pass and then the remainder: rows of Θ with 1 to 9
    non-zeros exercise every branch; the result is ``tr(ΘW)`` and ``‖ΘW − I‖_F²`` computed densely."""
    from scipy.sparse import csr_matrix
    from dpmoments.solvers import glasso_certificate
    if glasso_certificate._compiled is None:
        pytest.skip("the compiled sweep was not built")
    rng = np.random.default_rng(23)
    p = 37
    T = np.zeros((p, p))
    for i in range(p):
        cols = rng.choice(p, size=1 + i % 9, replace=False)
        T[i, cols] = rng.standard_normal(cols.size)
    W = rng.standard_normal((p, p))
    W = W + W.T
    E = T @ W - np.eye(p)
    tr, fro = glasso_certificate._residual(np.ascontiguousarray(W), csr_matrix(T))
    assert tr == pytest.approx(np.trace(T @ W), rel=1e-12, abs=1e-12)
    assert fro == pytest.approx(float((E * E).sum()), rel=1e-12)


def test_sweep_refuses_inconsistent_buffers():
    from dpmoments.solvers import glasso_bcd
    if glasso_bcd._glasso_sweep is None:
        pytest.skip("the compiled sweep was not built")
    W = np.eye(3)
    with pytest.raises(ValueError, match="sweep"):
        glasso_bcd._glasso_sweep.sweep(W, np.eye(2), np.ones(3), 0.1, 0.1, 10, 2, np.zeros(4, np.int64),
                                       np.zeros(0, np.int64), np.zeros(0), np.zeros(4, np.int64),
                                       np.zeros(9, np.int64), np.zeros(9), np.zeros(3), 0, False)


@pytest.mark.parametrize("p, pen", [(40, True), (230, False)])
def test_sparse_path_equals_the_dense_path(p, pen):
    """sparse=True returns the same precisions as CSR (exactly: the same iterates), no duals, and
    reuses its own duals for the extrapolated starts without changing any result; the path spans
    many blocks (bundled, isolated) at large penalties and one block below (dense and sparse
    certificates on either side of _DENSE_CERT_P)."""
    from scipy import sparse
    S = sample_cov(p, 10 * p, seed=40)
    off = np.abs(S - np.diag(np.diag(S))).max()
    alphas = np.geomspace(off, 0.05, 12)[::-1]  # any order
    dense = graphical_lasso_path(S, alphas, penalize_diagonal=pen)
    thin = graphical_lasso_path(S, alphas, penalize_diagonal=pen, sparse=True)
    assert len({r.n_blocks for r in dense}) > 2 and dense[0].n_blocks == 1
    for d, t in zip(dense, thin):
        assert sparse.isspmatrix_csr(t.precision) and t.covariance is None
        assert np.array_equal(t.precision.toarray(), d.precision)
        assert (t.objective, t.duality_gap, t.n_iter, t.n_blocks, t.converged) == \
            (d.objective, d.duality_gap, d.n_iter, d.n_blocks, d.converged)


def test_sparse_path_results_do_not_share_the_recycled_duals():
    """The duals the sparse path overwrites are never reachable from a result it yielded."""
    from dpmoments.solvers import iter_graphical_lasso_path
    S = sample_cov(80, 800, seed=41)
    kept = [(i, r.precision.toarray()) for i, r in iter_graphical_lasso_path(S, np.geomspace(0.5, 0.05, 10),
                                                                              sparse=True)]
    again = graphical_lasso_path(S, np.geomspace(0.5, 0.05, 10))
    for i, P in kept:
        assert np.array_equal(P, again[i].precision)
