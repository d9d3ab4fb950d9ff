"""PrivateModelSelection: scores within a public tolerance for every input, no refusal, data-independent work."""

import itertools
import math

import numpy as np
import pytest

import dpmoments.solvers.l1_ball_certified as certified
import dpmoments.solvers.l1_ball_ellipsoid as ellipsoid
from dpmoments.estimators.model_selection import PrivateModelSelection
from dpmoments.solvers.l1_ball import l1_ball_least_squares

BASE = dict(epsilon=1.0, bounds=1.0, response_bound=4.0, R=2.0, phi=50.0)


def _data(n=400, d=4, seed=0, collinear=False):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    if collinear:
        X[:, -1] = X[:, 0]
    return X, np.clip(X @ np.array([1.0, -1.0, 0.0, 0.5])[:d] * 2 + rng.normal(size=n), -4, 4)


def _problem(R, seed=0, collinear=False):
    X, y = _data(seed=seed, collinear=collinear)
    return X.T @ X, X.T @ y, float(y @ y), R


# n_iter 500: the fast path certifies every model; n_iter 1: it certifies none, the ellipsoid answers.
@pytest.mark.parametrize("R,collinear,n_iter", [(0.2, False, 500), (2.0, False, 1), (50.0, False, 500), (1.0, True, 1)])
def test_every_score_is_within_the_certified_gap_of_the_exact_minimum(R, collinear, n_iter):
    G, b, c, R = _problem(R, collinear=collinear)
    family = [m for s in range(5) for m in itertools.combinations(range(4), s)]
    spread = 400 * (4.0 + R) ** 2  # n (r + bR)^2: the rows are clipped to |x| <= 1, |y| <= 4
    reference = np.array([l1_ball_least_squares(G, b, c, R, support=m, tol=1e-15).objective for m in family])
    q, bounds = certified.certified_objectives(G, b, c, R, family, tolerance=1e-6, spread=spread, n_iter=n_iter)
    assert np.all(bounds <= 1e-6)
    np.testing.assert_allclose(q, reference, rtol=0, atol=1e-6 + 1e-12 * c)


def _hostile(seed=41, n=200):
    """Ill-conditioned columns in mixed scales on which the old solver refused (300 steps, tolerance 1e-6 Delta)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) @ (np.eye(3) + rng.normal(size=(3, 3)) * rng.choice([1, 10, 100])).T
    X[:, 0] *= rng.choice([0.01, 1, 30])
    beta = rng.normal(size=3) * rng.choice([0.1, 1, 10])
    y = X @ beta + rng.normal(size=n)
    R = float(rng.choice([0.05, 0.3, 1, 3])) * np.abs(beta).sum() / 2
    return X, y, float(np.abs(X).max()), float(np.abs(y).max()), R


def test_tables_the_old_solver_refused_now_run_within_the_tolerance():
    # Old: the fast path alone, 300 steps: the full model was not certified and fit refused, naming
    # 'qp_iterations' (one unnoised bit of the data). Now the ellipsoid's bound holds whatever the data.
    X, y, B, r, R = _hostile()
    G, b, c = X.T @ X, X.T @ y, float(y @ y)
    tau = 1e-6 * (r + B * R) ** 2
    family = [m for s in range(1, 4) for m in itertools.combinations(range(3), s)]
    q, bounds = certified.certified_objectives(G, b, c, R, family, tolerance=tau, spread=200 * (r + B * R) ** 2,
                                               n_iter=300)
    assert bounds[-1] == tau  # the full model: no certificate from the fast path; the ellipsoid's bound
    reference = np.array([l1_ball_least_squares(G, b, c, R, support=m, tol=1e-15).objective for m in family])
    assert np.all(q - reference <= tau) and np.all(q - reference >= -1e-12 * c)
    sel = PrivateModelSelection(epsilon=1.0, bounds=B, response_bound=r, R=R, phi=0.0, rng=0).fit(X, y)
    assert sel.privacy_report_["sensitivity_Q"] == pytest.approx((r + B * R) ** 2 + tau)


def test_ellipsoid_steps_meet_the_bound_and_depend_on_public_values_only():
    for size in (1, 2, 5, 9):
        steps = ellipsoid.ellipsoid_steps(size, 1e4, 1e-6)
        log_excess = (0.5 * size * np.log(np.pi) - math.lgamma(0.5 * size + 1) + math.lgamma(size + 1)
                      - size * np.log(2.0))
        bound = lambda k: np.exp(log_excess / size - k * ellipsoid._log_shrink(size) / size) * 1e4  # noqa: E731
        assert bound(steps) < 1e-6 <= bound(steps - 1)
        assert ellipsoid._log_shrink(size) >= 1 / (2 * (size + 1))  # the textbook rate, at least
    assert ellipsoid.ellipsoid_steps(0, 1e4, 1e-6) == 0


def test_the_noise_accounts_for_the_certified_gap():
    X, y = _data()
    sel = PrivateModelSelection(**BASE, gap_tolerance=1e-3, rng=0).fit(X, y)
    report = sel.privacy_report_
    exact = (4.0 + 1.0 * 2.0) ** 2
    assert report["sensitivity_Q_exact_minimum"] == exact and report["certified_gap"] == pytest.approx(1e-3 * exact)
    assert report["sensitivity_Q"] == pytest.approx(exact * (1 + 1e-3))
    assert report["selection_noise_scale"] == pytest.approx(2 * exact * (1 + 1e-3) / 1.0)


def _trace(monkeypatch):
    """Record every solver step with the shapes it worked on (never the values)."""
    calls = []
    for module, name in [(certified, n) for n in ("_project", "_polish", "_unconstrained", "_fista", "_objective",
                                                  "_gap", "ellipsoid_objectives")] + [(ellipsoid, "_record_and_cut")]:
        original = getattr(module, name)

        def wrapped(*args, __name=name, __original=original):
            calls.append((__name, tuple(np.shape(a) for a in args)))
            return __original(*args)

        monkeypatch.setattr(module, name, wrapped)
    return calls


def test_the_qp_work_does_not_depend_on_the_data(monkeypatch):
    # Old: a closed form or FISTA ran depending on the exact data (98% of single fits classified by timing),
    # and then whether the fast path certified decided between an answer and a refusal.
    calls = _trace(monkeypatch)
    family = [m for s in range(4) for m in itertools.combinations(range(3), s)]
    traces = []
    X, y, B, r, R = _hostile()  # the fast path leaves the full model uncertified
    hostile = (X.T @ X, X.T @ y, float(y @ y), R)
    for G, b, c, R in (_problem(50.0), _problem(0.05, seed=1), hostile):  # inside the ball / on its boundary
        calls.clear()
        certified.certified_objectives(G[:3, :3], b[:3], c, R, family, tolerance=1e-6, spread=1e3, n_iter=50)
        traces.append(list(calls))
    assert traces[0] == traces[1] == traces[2] and len(traces[0]) > 50
    plan = certified._ellipsoid_plan([len(m) for m in family], 1e3, 1e-6)  # from the family's sizes alone
    assert sum(name == "_record_and_cut" for name, _ in traces[0]) == sum(
        ellipsoid.ellipsoid_steps(max(group), 1e3, 1e-6) + 1 for group in plan)


def test_estimator_refuses_bad_solver_settings():
    X, y = _data()
    for bad in (dict(gap_tolerance=0.0), dict(gap_tolerance=1e-12), dict(gap_tolerance=1.5), dict(qp_iterations=0)):
        with pytest.raises(ValueError):
            PrivateModelSelection(**BASE, **bad).fit(X, y)
