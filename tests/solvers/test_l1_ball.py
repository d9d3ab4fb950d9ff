"""L1-ball constrained least squares from sufficient statistics (Lei et al.'s Q_R)."""

import numpy as np
import pytest
from scipy.optimize import minimize

from dpmoments.moments import clip_entries, clip_responses
from dpmoments.solvers.l1_ball import l1_ball_duality_gap, l1_ball_least_squares, project_l1_ball


def _scipy_qr(G, b, c, R):
    """Generic QP on the split beta = u - v, u, v >= 0, sum(u + v) <= R (SLSQP)."""
    d = b.size

    def beta(z):
        return z[:d] - z[d:]

    def f(z):
        x = beta(z)
        return c - 2 * b @ x + x @ G @ x

    def grad(z):
        g = 2 * (G @ beta(z) - b)
        return np.r_[g, -g]

    cons = [{"type": "ineq", "fun": lambda z: R - z.sum(), "jac": lambda z: -np.ones(2 * d)}]
    res = minimize(f, np.full(2 * d, 1e-3), jac=grad, method="SLSQP", bounds=[(0, None)] * (2 * d),
                   constraints=cons, options={"ftol": 1e-15, "maxiter": 2000})
    x = project_l1_ball(beta(res.x), R)  # make SLSQP's point exactly feasible
    return c - 2 * b @ x + x @ G @ x


def _problem(rng, n=40, d=5, collinear=False):
    X = rng.uniform(-1, 1, (n, d))
    if collinear:
        X[:, -1] = X[:, 0]
    y = X @ rng.normal(size=d) * 2 + rng.normal(size=n)
    return X.T @ X, X.T @ y, float(y @ y)


@pytest.mark.parametrize("seed", range(12))
def test_agrees_with_generic_qp(seed):
    rng = np.random.default_rng(seed)
    G, b, c = _problem(rng, collinear=seed % 3 == 0)
    R = rng.uniform(0.1, 5.0)
    support = None if seed % 2 else sorted(rng.choice(5, size=3, replace=False))
    res = l1_ball_least_squares(G, b, c, R, support=support)
    idx = np.arange(5) if support is None else np.array(support)
    ref = _scipy_qr(G[np.ix_(idx, idx)], b[idx], c, R)
    scale = max(1.0, abs(ref))
    assert res.objective <= ref + 1e-8 * scale  # never worse than the generic solver
    assert abs(res.objective - ref) <= 1e-8 * scale
    assert np.abs(res.coef).sum() <= R * (1 + 1e-12)
    assert np.all(res.coef[np.setdiff1d(np.arange(5), idx)] == 0)
    assert res.gap <= 1e-9 * scale  # certified on the sub-problem over the support
    if support is None:
        assert l1_ball_duality_gap(G, b, res.coef, R) <= 1e-9 * scale


def test_singular_gram_with_a_zero_residual_stops_well_before_the_cap():
    # A PSD-projected noisy Gram matrix can have a zero eigenvalue with y in its span: the optimum
    # residual is 0, the problem only convex, and a gap relative to |objective| (~1e-12, rounding)
    # was unreachable, so every such call ran all 20 000 iterations (about 0.7 s).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    X[:, 2] = X[:, 0] - X[:, 1]
    y = X @ np.array([9.0, -6.0, 2.0])
    G, b, c = X.T @ X, X.T @ y, float(y @ y)
    res = l1_ball_least_squares(G, b, c, 30.0)
    assert res.n_iter < 200
    assert abs(res.objective) <= 1e-12 * c and res.gap <= 1e-12 * c  # the optimum, 0, to rounding of c
    assert abs(np.sum(y * y) - 2 * y @ X @ res.coef + res.coef @ G @ res.coef) <= 1e-12 * c


def test_unconstrained_inside_ball_is_least_squares():
    rng = np.random.default_rng(0)
    G, b, c = _problem(rng)
    ols = np.linalg.solve(G, b)
    res = l1_ball_least_squares(G, b, c, np.abs(ols).sum() + 1.0)
    assert res.method == "unconstrained"
    np.testing.assert_allclose(res.coef, ols, rtol=1e-10)


def test_empty_support_and_bad_inputs():
    G, b = np.eye(2), np.ones(2)
    res = l1_ball_least_squares(G, b, 3.0, 1.0, support=[])
    assert res.objective == 3.0 and not res.coef.any()
    with pytest.raises(ValueError, match="radius"):
        l1_ball_least_squares(G, b, 3.0, 0.0)
    with pytest.raises(ValueError, match="support"):
        l1_ball_least_squares(G, b, 3.0, 1.0, support=[2])
    with pytest.raises(ValueError, match="'b'"):
        l1_ball_least_squares(G, np.ones(3), 3.0, 1.0)


def test_projection_properties():
    rng = np.random.default_rng(1)
    for _ in range(50):
        v = rng.normal(size=6) * 3
        R = rng.uniform(0.1, 4)
        x = project_l1_ball(v, R)
        assert np.abs(x).sum() <= R * (1 + 1e-12)
        # optimality: <v - x, z - x> <= 0 for the ball's vertices z = +-R e_j
        for z in np.vstack([R * np.eye(6), -R * np.eye(6)]):
            assert (v - x) @ (z - x) <= 1e-9


def test_sensitivity_over_random_neighbours():
    """|Q_R(M, D) - Q_R(M, D')| <= (r + bR)^2 over random replace-one pairs (docs/algorithms.md §4.2)."""
    rng = np.random.default_rng(2)
    r, R, bound = 2.0, 1.5, 1.0
    worst = 0.0
    for _ in range(200):
        n, d = 8, 3
        X = clip_entries(rng.normal(size=(n, d)) * 2, bound)
        y = clip_responses(rng.normal(size=n) * 3, r)
        X2, y2 = X.copy(), y.copy()
        X2[0] = clip_entries(rng.normal(size=(1, d)) * 3, bound)[0]
        y2[0] = clip_responses(rng.normal(size=1) * 5, r)[0]
        support = sorted(rng.choice(d, size=rng.integers(1, d + 1), replace=False))
        q1 = l1_ball_least_squares(X.T @ X, X.T @ y, y @ y, R, support=support).objective
        q2 = l1_ball_least_squares(X2.T @ X2, X2.T @ y2, y2 @ y2, R, support=support).objective
        worst = max(worst, abs(q1 - q2))
    assert worst <= (r + bound * R) ** 2
