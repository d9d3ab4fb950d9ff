"""Joint-view accounting: closed forms, Monte-Carlo of the aggregator's view, colluders, composition."""

import dataclasses
import itertools
import math

import numpy as np
import pytest

from dpmoments import Accountant, ApproxDP, BudgetExceededError
from dpmoments.multisite import (InProcessTransport, Plan, deal, joint_view, run_cape, run_conventional,
                                 run_secure_aggregation, spend_per_site)
from dpmoments.multisite.aggregator import Aggregator
from dpmoments.multisite.protocols import noise_for
from dpmoments.mechanisms import upper_triangle
from dpmoments.privacy import gaussian_epsilon

from .conftest import make_sites


def _equal_plan(S, tau=1.0, secure=False, d=2):
    sites = make_sites(S, n=20, d=d)
    plan, _ = noise_for("pairwise" if secure else "dealer", [s.name for s in sites], [s.n for s in sites],
                        np.full(S, 1 / S), np.full(S, tau), np.full(S, 1.0), np.full(S, 1e-5))
    return sites, plan


@pytest.mark.parametrize("S", [2, 3, 10, 25])
def test_mahalanobis_closed_form(S):
    _, plan = _equal_plan(S, tau=2.0)
    cov = plan.view_covariance()
    expected = 4.0 * ((1 + 1 / S) * np.eye(S) - np.ones((S, S)) / S)
    np.testing.assert_allclose(cov, expected, atol=1e-12)
    assert plan.mahalanobis(0) == pytest.approx(math.sqrt(2 * S / (S + 1)) / 2.0, rel=1e-10)
    # all other sites colluding: only g_s (variance tau^2/S) protects site s
    assert plan.mahalanobis(0, tuple(range(1, S))) == pytest.approx(math.sqrt(S) / 2.0, rel=1e-8)


def test_joint_epsilon_exceeds_claim_for_ten_sites():
    _, rep = run_cape(make_sites(10), epsilon=1.0, delta=1e-5, rng=0, target="per-site")
    s = rep.sites[0]
    assert s.joint_delta_m * s.tau / s.sensitivity == pytest.approx(math.sqrt(20 / 11), rel=1e-9)
    ratio = rep.joint_view.epsilon / rep.claimed.epsilon
    assert 1.3 < ratio < 1.45  # ~ sqrt(2S/(S+1)) = 1.348 in the Gaussian limit
    assert rep.joint_view.epsilon == pytest.approx(gaussian_epsilon(1.0, 1e-5, s.joint_delta_m))
    assert rep.output.epsilon == pytest.approx(1.0, rel=1e-6)  # the published aggregate alone


def test_colluders_make_it_worse_and_secure_aggregation_more_so():
    sites = make_sites(6)
    kw = dict(epsilon=1.0, delta=1e-5, rng=0, target="per-site")
    eps_cape = [run_cape(sites, colluders=c, **kw)[1].joint_view.epsilon for c in range(6)]
    eps_sec = [run_secure_aggregation(sites, colluders=c, **kw)[1].joint_view.epsilon for c in range(6)]
    assert all(b > a for a, b in zip(eps_cape, eps_cape[1:]))
    assert eps_sec[0] == pytest.approx(eps_cape[0], rel=1e-9)
    assert all(s > c for s, c in zip(eps_sec[1:-1], eps_cape[1:-1]))
    assert eps_sec[-1] == pytest.approx(eps_cape[-1], rel=1e-6)  # all others: only g_s is left either way


def test_conventional_joint_view_equals_claim():
    _, rep = run_conventional(make_sites(5), epsilon=1.0, delta=1e-5, colluders=3, rng=0)
    assert rep.joint_view.epsilon == pytest.approx(rep.claimed.epsilon, rel=1e-6)


def test_worst_colluders_found_for_unequal_sites():
    sites = make_sites(5, sizes=[30, 60, 100, 200, 400])
    _, rep = run_cape(sites, epsilon=1.0, delta=1e-5, colluders=2, rng=0, target="per-site")
    plan = rep.plan
    for s in range(5):
        jv = joint_view(plan, plan.sites[s], 2)
        others = [t for t in range(5) if t != s]
        brute = max(plan.mahalanobis(s, (a, b)) for i, a in enumerate(others) for b in others[i + 1:])
        assert jv.delta_m == pytest.approx(brute) and jv.exhaustive


def _views(sites, noise, runs, masking, seed):
    """Monte-Carlo of the aggregator's view: y_s - f_s - A_s on every upper-triangle coordinate."""
    plan = Plan.build("secure-aggregation" if masking == "pairwise" else "cape", [s.name for s in sites],
                      [s.n for s in sites], n_features=sites[0].n_features, row_norm=1.0, epsilon=1.0, delta=1e-5)
    plan = dataclasses.replace(plan, noise=(noise,))
    out, gen = [], np.random.default_rng(seed)
    for r in range(runs):
        pairs = {pair: np.random.SeedSequence(int(gen.integers(2**63))) for pair in
                 itertools.combinations(plan.sites, 2)}
        p = dataclasses.replace(plan, run_id=f"mc{seed}-{r}")
        for s, b in zip(sites, deal(p, gen, pairs).values()):
            s.accept(b, rng=gen)
        agg = Aggregator(p, gen)
        replies = InProcessTransport(sites).ask(agg.open_step(0, p.sites), 60.0)
        rows = [upper_triangle(replies[s.name].value(0) - agg.f_share(0, s.name) - s._exact("second")) for s in sites]
        out.append(np.array(rows).T)
    return np.concatenate(out)


@pytest.mark.statistical
@pytest.mark.parametrize("secure", [False, True])
def test_joint_view_matches_monte_carlo_of_the_view(secure):
    S = 4
    sites, plan = _equal_plan(S, tau=1.0, secure=secure, d=8)
    views = _views(sites, plan, 125, "pairwise" if secure else "dealer", 100)  # 125 x 36 = 4500 draws of an S-vector
    emp = np.cov(views.T)
    np.testing.assert_allclose(emp, plan.view_covariance(), atol=0.12)
    unit = np.eye(S)[0]
    dm_emp = math.sqrt(unit @ np.linalg.solve(emp, unit))
    assert dm_emp == pytest.approx(plan.mahalanobis(0), rel=0.06)
    # privacy-loss random variable of the optimal test: mean Dm^2/2, variance Dm^2
    w = np.linalg.solve(plan.view_covariance(), unit)
    loss = views @ w + 0.5 * plan.mahalanobis(0) ** 2
    assert np.mean(loss) == pytest.approx(plan.mahalanobis(0) ** 2 / 2, abs=0.05)
    assert np.var(loss) == pytest.approx(plan.mahalanobis(0) ** 2, rel=0.08)


@pytest.mark.statistical
def test_colluder_conditioning_matches_monte_carlo():
    """Condition the honest sites' view on a colluder's e_3 (dealt by the real dealer) by regression."""
    S, d = 4, 6
    sites, noise = _equal_plan(S, tau=1.0)
    plan = Plan.build("cape", [s.name for s in sites], [s.n for s in sites], n_features=d, row_norm=1.0,
                      epsilon=1.0, delta=1e-5)
    plan = dataclasses.replace(plan, noise=(noise,))
    gen = np.random.default_rng(7)
    e = np.concatenate([np.array([upper_triangle(b.shares[0]) for b in deal(plan, gen).values()]).T
                        for _ in range(1000)])  # 21 000 draws
    g = np.random.default_rng(8).standard_normal(e.shape) * noise.g_std
    y, known = (e + g)[:, :3], e[:, [3]]
    resid = y - known @ np.linalg.lstsq(known, y, rcond=None)[0]
    np.testing.assert_allclose(np.cov(resid.T), noise.conditional_covariance([0, 1, 2], (3,)), atol=0.04)
    unit = np.eye(3)[0]
    dm_emp = math.sqrt(unit @ np.linalg.solve(np.cov(resid.T), unit))
    assert dm_emp == pytest.approx(noise.mahalanobis(0, (3,)), rel=0.05)


def test_parallel_composition_over_sites():
    _, rep = run_cape(make_sites(4, sizes=[100, 200, 300, 400]), epsilon=1.0, delta=1e-5, rng=0, target="per-site")
    sites = [s.site for s in rep.sites]
    acct = Accountant(ApproxDP(3.0, 1e-4)).partitioning("sites", sites)
    spend_per_site(acct, rep)
    assert len(acct.ledger) == 4 and sorted(e.partition for e in acct.ledger) == [s.site for s in rep.sites]
    assert acct.spent.epsilon == pytest.approx(max(r.joint_view.epsilon for r in rep.sites))
    spend_per_site(acct, rep, which="claimed")
    assert acct.spent.epsilon == pytest.approx(max(r.joint_view.epsilon + 1.0 for r in rep.sites))
    small = Accountant(ApproxDP(1.2, 1e-4)).partitioning("sites", sites)
    with pytest.raises(BudgetExceededError):
        spend_per_site(small, rep)  # joint view > 1.2 for every site
    assert small.ledger == [] or len(small.ledger) == 0
    with pytest.raises(ValueError, match="which"):
        spend_per_site(small, rep, which="paper")


def test_spend_per_site_declares_the_sites_and_records_the_relation():
    """The sites become the accountant's one partitioning; each spend says which relation it holds under."""
    sites = make_sites(3, sizes=[100, 200, 300])
    _, rep = run_cape(sites, epsilon=1.0, delta=1e-5, neighbours="zero-out", rng=0)
    acct = spend_per_site(Accountant(ApproxDP(2.0, 1e-4), neighbours="zero-out"), rep)
    assert acct.partitions == ("sites", tuple(sorted(s.name for s in sites)))
    assert {e.neighbours for e in acct.ledger} == {"zero-out"} and len(acct.ledger) == 3
    assert acct.spent.epsilon == pytest.approx(1.0, rel=1e-6)  # the worst site, not the sum (disjoint rows)
    with pytest.raises(ValueError, match="cannot mix neighbouring relations"):
        spend_per_site(Accountant(ApproxDP(2.0, 1e-4)), rep)  # a replace-one ledger refuses zero-out spends
    other = Accountant(ApproxDP(2.0, 1e-4), neighbours="zero-out").partitioning("hospitals", ["x", "y"])
    with pytest.raises(ValueError, match="not a block"):
        spend_per_site(other, rep)
    assert len(other.ledger) == 0
