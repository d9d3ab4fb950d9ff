"""PrivateModelSelection scores only certified minima, accounts for the gap, and does data-independent work."""

import itertools

import numpy as np
import pytest

import dpmoments.solvers.l1_ball_certified as certified
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


@pytest.mark.parametrize("R,collinear", [(0.2, False), (2.0, False), (50.0, False), (1.0, True)])
def test_every_score_is_within_the_certified_gap_of_the_exact_minimum(R, collinear):
    G, b, c, R = _problem(R, collinear=collinear)
    family = [m for s in range(5) for m in itertools.combinations(range(4), s)]
    q, gaps = certified.certified_objectives(G, b, c, R, family, tolerance=1e-6)
    assert np.all(gaps <= 1e-6)
    reference = np.array([l1_ball_least_squares(G, b, c, R, support=m, tol=1e-15).objective for m in family])
    np.testing.assert_allclose(q, reference, rtol=0, atol=1e-6 + 1e-12 * c)


def test_an_uncertified_minimum_is_refused_in_one_line():
    # Old: FISTA's objective was returned at max_iter without its certificate, and fit ignored the gap.
    G, b, c, _ = _problem(0.3, collinear=True)
    with pytest.raises(ValueError, match="could not certify every Q_R .* raise it") as err:
        certified.certified_objectives(G, b, c, 0.3, [(0, 1, 2, 3)], tolerance=1e-30, n_iter=1)
    assert "\n" not in str(err.value)
    X, y = _data(collinear=True)
    with pytest.raises(ValueError, match="'qp_iterations'"):
        PrivateModelSelection(**BASE, gap_tolerance=1e-30, qp_iterations=1, rng=0).fit(X, y)


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
    for name in ("_project", "_polish", "_unconstrained", "_fista", "_objective", "_gap"):
        original = getattr(certified, name)

        def wrapped(*args, __name=name, __original=original):
            calls.append((__name, tuple(np.shape(a) for a in args)))
            return __original(*args)

        monkeypatch.setattr(certified, name, wrapped)
    return calls


def test_the_qp_work_does_not_depend_on_the_data(monkeypatch):
    # Old: a closed form or FISTA ran depending on the exact data (98% of single fits classified by timing).
    calls = _trace(monkeypatch)
    family = [m for s in range(5) for m in itertools.combinations(range(4), s)]
    traces = []
    for R, seed in ((50.0, 0), (0.05, 1)):  # every model closed-form inside the ball / every one on its boundary
        G, b, c, R = _problem(R, seed=seed)
        assert l1_ball_least_squares(G, b, c, R).method == ("unconstrained" if R > 1 else "polished")
        calls.clear()
        certified.certified_objectives(G, b, c, R, family, tolerance=1e-6, n_iter=50)
        traces.append(list(calls))
    assert traces[0] == traces[1] and len(traces[0]) > 50


def test_estimator_refuses_bad_solver_settings():
    X, y = _data()
    for bad in (dict(gap_tolerance=0.0), dict(gap_tolerance=1.5), dict(qp_iterations=0)):
        with pytest.raises(ValueError):
            PrivateModelSelection(**BASE, **bad).fit(X, y)
