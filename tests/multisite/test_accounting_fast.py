"""The joint-view accounting read from one factorisation per plan gives the numbers solving per site gave.

``_reference_*`` below is the accounting as it was (one conditional covariance solved per site and colluder
set, O(S^4) for a report): every fast answer is checked against it to relative 1e-10.
"""

import dataclasses
import itertools
import math

import numpy as np
import pytest

from dpmoments.multisite import Plan, joint_view
from dpmoments.multisite.noise import NoisePlan, guarantee_from_ratio
from dpmoments.privacy import compose, parallel

REL = 1e-10


def _reference_covariance(plan, observed, colluders):
    L = plan.e_factor
    rows = [L[t] for t in colluders]
    for t in colluders:
        rows.extend(np.eye(L.shape[1])[plan.known[t]])
    L_obs = L[list(observed)]
    if rows:
        K = np.array(rows)
        L_obs = L_obs - (L_obs @ np.linalg.pinv(K)) @ K
    return L_obs @ L_obs.T + np.diag(plan.g_std[list(observed)] ** 2)


def _reference_mahalanobis(plan, s, colluders, survivors):
    if plan.tau[s] == 0:
        return math.inf
    seen = range(plan.n_sites) if survivors is None else survivors
    observed = [t for t in seen if t not in colluders]
    cov = _reference_covariance(plan, observed, colluders)
    unit = np.zeros(len(observed))
    unit[observed.index(s)] = 1.0
    try:
        return float(plan.sensitivity[s] * math.sqrt(unit @ np.linalg.solve(cov, unit)))
    except np.linalg.LinAlgError:
        return math.inf


def _reference_joint_view(plan, s, c, survivors=None, calibration="analytic", max_subsets=5000):
    others = [t for t in range(plan.n_sites) if t != s]
    exhaustive = math.comb(len(others), c) <= max_subsets
    best = -1.0
    for subset in itertools.combinations(others, c) if exhaustive else [tuple(others)]:
        best = max(best, _reference_mahalanobis(plan, s, subset, survivors))
    return best, guarantee_from_ratio(best, float(plan.deltas[s]), calibration)


def _same(a, b):
    assert (math.isinf(a) and math.isinf(b)) or a == pytest.approx(b, rel=REL, abs=0), (a, b)


def _same_guarantee(a, b):
    assert type(a) is type(b)
    for field in ("epsilon", "delta", "rho"):
        x, y = getattr(a, field, None), getattr(b, field, None)
        assert (x is None) == (y is None)
        if x is not None:
            _same(x, y)


def _random_plan(rng, protocol):
    S = int(rng.integers(2, 26 if protocol == "cape" else 8))  # pairwise masks: S(S-1)/2 components
    weights = rng.uniform(0.2, 5.0, S) if rng.random() < 0.5 else None
    epsilon = rng.uniform(0.3, 3.0, S) if rng.random() < 0.5 else 1.0
    plan = Plan.build(protocol, [f"s{i}" for i in range(S)], rng.integers(15, 400, S).tolist(), n_features=3,
                      row_norm=1.0, epsilon=epsilon, delta=1e-5,
                      weights=None if weights is None else weights / weights.sum(),
                      target=str(rng.choice(["aggregator", "per-site"])),
                      colluders=int(rng.integers(0, 2)))  # zCDP composition: its conversions, not this, cost time
    return plan


def _check_noise(noise, rng):
    """Every site's Delta_M (and, where cheap, its guarantee) for c = 0 and S - 1, all or some sites surviving."""
    S = noise.n_sites
    alive = sorted(rng.choice(S, size=int(rng.integers(1, S + 1)), replace=False).tolist())
    for s, name in list(enumerate(noise.sites))[:6]:  # the fast answers are read for every site at once
        cases = [(0, None), (S - 1, None)] + ([(0, alive), (S - 1, alive)] if s in alive else [])
        if S <= 6:
            cases.append((1, None))
        for c, survivors in cases:
            calibration = "analytic" if s == 0 and survivors is None else "zcdp"  # (epsilon, delta) is a search
            fast = joint_view(noise, name, c, survivors=survivors, calibration=calibration)
            best, guarantee = _reference_joint_view(noise, s, c, survivors, calibration)
            _same(fast.delta_m, best)
            _same_guarantee(fast.guarantee, guarantee)


def test_random_built_plans_match_solving_per_site():
    rng = np.random.default_rng(20261207)
    for protocol in ["cape", "secure-aggregation", "cape", "conventional", "cape", "secure-aggregation"]:
        plan = _random_plan(rng, protocol)
        for noise in plan.noise:
            _check_noise(noise, rng)
        if plan.n_sites > 8:  # the report's lines compose every site's (epsilon, delta): kept to small plans
            continue
        worst = {c: parallel([compose([_reference_joint_view(p, plan.index(s), c, None, plan._round_calibration)[1]
                                       for p in plan.noise], composition=plan.composition,
                                      delta=plan.delta[plan.index(s)] if plan.composition == "zcdp" else None)
                              for s in plan.sites]) for c in (0, plan.n_sites - 1)}
        _same_guarantee(plan.collusion["aggregator_alone"], worst[0])
        _same_guarantee(plan.collusion["all_other_sites"][1], worst[plan.n_sites - 1])


def test_cape_all_others_is_read_from_one_factorisation():
    plan = Plan.build("cape", [f"s{i}" for i in range(9)], list(range(20, 29)), n_features=3, row_norm=1.0,
                      epsilon=1.0, delta=1e-5)
    noise = plan.noise[0]
    assert all(v is not None for v in noise._all_others_variance())  # the fast path, not the fallback
    np.testing.assert_allclose(noise._all_others_variance(), noise.g_std**2, rtol=1e-12)  # zero-sum shares


def test_hand_made_plans_with_silent_sites_lone_holders_and_full_rank_noise():
    """tau = 0 sites, no local noise, components one site alone holds, a full-rank factor (nothing cancels)."""
    rng = np.random.default_rng(7)
    for S in (2, 3, 6):
        plan = Plan.build("cape", [f"s{i}" for i in range(S)], [50] * S, n_features=3, row_norm=1.0, epsilon=1.0,
                          delta=1e-5).noise[0]
        silent = plan.tau.copy()
        silent[0] = 0.0
        _check_noise(dataclasses.replace(plan, tau=silent), rng)
        no_local = plan.g_std.copy()
        no_local[-1] = 0.0
        _check_noise(dataclasses.replace(plan, g_std=no_local), rng)
        m = S + 2
        known = np.zeros((S, m), bool)
        known[0, 0] = True  # a component site 0 alone holds: solved per site
        full = NoisePlan(plan.sites, plan.n, plan.weights, plan.tau, plan.sensitivity, plan.deltas,
                         rng.normal(size=(S, m)), known, plan.g_std, plan.f_std)
        _check_noise(full, rng)
        _check_noise(dataclasses.replace(full, known=np.zeros((S, m), bool)), rng)
        assert all(v is not None for v in dataclasses.replace(full, known=np.zeros((S, m), bool))
                   ._all_others_variance())


def test_no_colluders_gives_the_bits_of_solving_per_site():
    """A plan is met against the aggregator from these values: the same bits keep every seeded release unchanged."""
    plan = Plan.build("cape", [f"s{i}" for i in range(30)], list(range(40, 70)), n_features=3, row_norm=1.0,
                      epsilon=1.0, delta=1e-5)
    noise, alive = plan.noise[0], tuple(range(0, 30, 2))
    for s in range(30):
        assert noise.mahalanobis(s) == noise._mahalanobis_direct(s, (), tuple(range(30)))
        if s in alive:
            assert noise.mahalanobis(s, survivors=alive) == noise._mahalanobis_direct(s, (), alive)
