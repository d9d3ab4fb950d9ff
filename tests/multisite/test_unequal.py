"""The §2.4 feasibility problem: constraints hold, equal sites reduce to the closed form."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmoments.multisite import run_cape_unequal, solve_unequal

from .conftest import make_sites


def test_equal_sites_closed_form():
    for S in (2, 3, 10):
        sol = solve_unequal(np.full(S, 2.0), np.full(S, 1 / S))
        np.testing.assert_allclose(sol.tau_e**2, (1 - 1 / S) * 4.0, rtol=1e-10)
        np.testing.assert_allclose(sol.tau_g**2, 4.0 / S, rtol=1e-10)
        np.testing.assert_allclose(sol.tau_f**2, 4.0 / S, rtol=1e-10)
        assert sol.tau_pool == pytest.approx(2.0 / S) and sol.exact


def _assert_constraints(sol, tau, mu):
    assert np.all(sol.tau_e**2 + sol.tau_f**2 + sol.tau_g**2 >= tau**2 * (1 - 1e-9))       # (a)
    assert np.sum(mu**2 * sol.tau_g**2) == pytest.approx(sol.tau_pool**2, rel=1e-9)        # (b)
    assert np.max(np.abs(mu @ sol.e_factor)) <= 1e-12 * np.max(np.abs(sol.e_factor))      # (c)
    assert np.all(sol.tau_pool >= mu * tau * (1 - 1e-12))                                  # (d)
    np.testing.assert_allclose(np.sqrt(np.sum(sol.e_factor**2, 1)), sol.tau_e)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 10), st.floats(0.05, 1)), min_size=2, max_size=8))
def test_constraints_hold(pairs):
    tau = np.array([p[0] for p in pairs])
    mu = np.array([p[1] for p in pairs])
    mu = mu / mu.sum()
    sol = solve_unequal(tau, mu)
    _assert_constraints(sol, tau, mu)
    if sol.exact:
        np.testing.assert_allclose(sol.tau_e**2 + sol.tau_g**2, tau**2, rtol=1e-7)


def test_polygon_infeasible_case_enlarges_e():
    tau, mu = np.array([1.0, 1.0, 100.0]), np.full(3, 1 / 3)
    sol = solve_unequal(tau, mu)
    assert not sol.exact
    _assert_constraints(sol, tau, mu)


def test_unequal_run_reports_constraints_and_per_site_claims():
    sites = make_sites(4, sizes=[50, 100, 200, 400])
    rel, rep = run_cape_unequal(sites, epsilons=[0.5, 1.0, 2.0, 1.0], deltas=[1e-5, 1e-6, 1e-5, 1e-5], rng=0,
                                target="per-site")
    assert rep.constraints["d_min_slack"] >= 0
    assert [r.claimed.epsilon for r in rep.sites] == [0.5, 1.0, 2.0, 1.0]
    for r in rep.sites:
        assert r.output.epsilon <= r.claimed.epsilon * (1 + 1e-9)
    # the smallest epsilon dominates mu_s tau_s: no exact e exists, so e is enlarged, which can even
    # protect some sites better against the aggregator than their own claim
    assert not rep.constraints["exact"]
    assert rel.guarantee.delta == 1e-5
    assert rel.guarantee.epsilon == max(r.joint_view.epsilon for r in rep.sites)


def test_unequal_sizes_common_epsilon_joint_view_exceeds_claim():
    _, rep = run_cape_unequal(make_sites(4, sizes=[50, 100, 200, 400]), epsilons=[1.0] * 4, deltas=[1e-5] * 4,
                              rng=0, target="per-site")
    assert rep.constraints["exact"]
    assert all(r.joint_view.epsilon > r.claimed.epsilon for r in rep.sites)


@pytest.mark.parametrize("tau, mu", [([1.0], [1.0]), ([1.0, -1.0], [0.5, 0.5]), ([1.0, 1.0], [0.7, 0.7]),
                                     ([1.0, 1.0], [1.0, 0.0])])
def test_bad_inputs(tau, mu):
    with pytest.raises(ValueError):
        solve_unequal(tau, mu)
