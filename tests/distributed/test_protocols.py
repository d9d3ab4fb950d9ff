"""Pooled equals distributed without noise; shares cancel; releases are foundation Releases."""

import warnings

import numpy as np
import pytest

from dpmoments import Release
from dpmoments.distributed import (InProcessEngine, NoiseGenerator, run_cape, run_cape_unequal, run_conventional,
                                   run_dpdispca, run_local, run_pooled, run_secure_aggregation)
from dpmoments.distributed.planning import plan_cape, plan_secure
from dpmoments.exceptions import NotPrivateWarning

from .conftest import make_sites

INF = float("inf")
RUNS = [run_cape, run_conventional, run_secure_aggregation]


@pytest.mark.parametrize("statistic", ["second", "cross", "third"])
@pytest.mark.parametrize("run", RUNS)
def test_pooled_equals_distributed_with_noise_off(run, statistic):
    sites = make_sites(3, sizes=[50, 120, 300], y=True)
    with pytest.warns(NotPrivateWarning):
        rel, rep = run(sites, epsilon=INF, delta=1e-5, statistic=statistic, rng=0)
    with pytest.warns(NotPrivateWarning):
        pooled, _ = run_pooled(sites, epsilon=INF, delta=1e-5, statistic=statistic)
    a, b = getattr(rel, f"{statistic}_moment"), getattr(pooled, f"{statistic}_moment")
    np.testing.assert_allclose(a, b, atol=1e-10, rtol=0)
    assert rel.n == 470 and rel.mechanism == "none" and not rel.is_private


def test_pooled_reference_is_the_concatenated_data():
    sites = make_sites(3, sizes=[40, 60, 80])
    with pytest.warns(NotPrivateWarning):
        pooled, _ = run_pooled(sites, epsilon=INF, delta=1e-5)
    expected = sum(s._exact("second") * s.n for s in sites) / 180
    np.testing.assert_allclose(pooled.second_moment, expected, atol=1e-12)


def test_dpdispca_full_rank_equals_pooled_with_noise_off():
    sites = make_sites(3)
    with pytest.warns(NotPrivateWarning):
        rel, _ = run_dpdispca(sites, epsilon=INF, delta=1e-5, rank=3, rng=0)
        pooled, _ = run_pooled(sites, epsilon=INF, delta=1e-5)
    np.testing.assert_allclose(rel.second_moment, pooled.second_moment, atol=1e-10)


def test_zero_sum_shares_and_f_cancels_exactly():
    sites = make_sites(5, sizes=[30, 50, 70, 90, 110])
    mu = np.array([s.n for s in sites], float) / 350
    tau = np.array([1.0 / s.n for s in sites])
    plan, _ = plan_cape(sites, mu, tau, tau, np.full(5, 1e-5))
    shares = NoiseGenerator(np.random.default_rng(0)).deal(plan, "second", 3)
    total = sum(m * shares[s.name].matrix for m, s in zip(mu, sites))
    assert np.max(np.abs(total)) < 1e-14 * max(np.max(np.abs(sh.matrix)) for sh in shares.values()) * 10
    assert all(np.array_equal(sh.matrix, sh.matrix.T) for sh in shares.values())
    # no local noise: the aggregate is exact, so e cancels and f is removed exactly
    plan_no_g = type(plan)(**{**plan.__dict__, "g_std": np.zeros(5)})
    engine = InProcessEngine(rng=1)
    out = engine.run_additive(sites, plan_no_g, "second", masking="dealer")
    exact = sum(m * s._exact("second") for m, s in zip(mu, sites))
    np.testing.assert_allclose(out.aggregate, exact, atol=1e-12)
    assert any(h["from"] == "aggregator" for h in engine.transcript)  # f was really sent


def test_secure_aggregation_masks_cancel():
    sites = make_sites(6)
    mu = np.full(6, 1 / 6)
    tau = np.full(6, 0.3)
    plan, info = plan_secure(sites, mu, tau, tau, np.full(6, 1e-5))
    assert info["max_weighted_sum"] < 1e-12
    plan_no_g = type(plan)(**{**plan.__dict__, "g_std": np.zeros(6)})
    out = InProcessEngine(rng=2).run_additive(sites, plan_no_g, "second", masking="pairwise")
    exact = sum(s._exact("second") for s in sites) / 6
    np.testing.assert_allclose(out.aggregate, exact, atol=1e-10)
    # equal sites: the aggregator's view has exactly CAPE's covariance
    cape, _ = plan_cape(sites, mu, tau, tau, np.full(6, 1e-5))
    np.testing.assert_allclose(plan.view_covariance(), cape.view_covariance(), atol=1e-14)


@pytest.mark.parametrize("run", RUNS + [run_cape_unequal])
def test_release_is_a_foundation_release(run):
    sites = make_sites(4, sizes=[100, 200, 300, 400])
    kw = dict(epsilons=[1.0, 0.5, 2.0, 1.0], deltas=[1e-5] * 4) if run is run_cape_unequal else \
        dict(epsilon=1.0, delta=1e-5)
    rel, rep = run(sites, rng=0, **kw)
    assert isinstance(rel, Release)
    assert rel.second_moment.shape == (3, 3) and np.array_equal(rel.second_moment, rel.second_moment.T)
    assert rel.n == 1000 and rel.guarantee == rep.joint_view
    assert rel.noise_scale == pytest.approx(rep.aggregate_std)
    assert rel.randomness == "seeded" and rel.to_dict()["certified"]
    assert rep.to_dict()["sites"][0]["claimed"]["type"] == "approx-dp"


def test_estimator_fits_from_a_cape_release():
    est_mod = pytest.importorskip("dpmoments.estimators.covariance")
    rel, _ = run_cape(make_sites(4, n=2000), epsilon=1.0, delta=1e-5, rng=0)
    est = est_mod.PrivateCovariance(epsilon=1.0, delta=1e-5, row_norm=1.0).fit_release(rel)
    assert est.covariance_.shape == (3, 3) and est.privacy_ == rel.guarantee


def test_cape_matches_pooled_noise_and_beats_conventional():
    sites = make_sites(10)
    cape, crep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    pooled, prep = run_pooled(sites, epsilon=1.0, delta=1e-5, rng=0)
    conv, vrep = run_conventional(sites, epsilon=1.0, delta=1e-5, rng=0)
    assert crep.aggregate_std == pytest.approx(prep.aggregate_std, rel=1e-9)
    assert vrep.aggregate_std**2 == pytest.approx(10 * crep.aggregate_std**2, rel=1e-9)


def test_cape_any_sizes_reach_pooled_noise():
    sites = make_sites(4, sizes=[20, 80, 300, 600])
    _, crep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    _, prep = run_pooled(sites, epsilon=1.0, delta=1e-5, rng=0)
    assert crep.aggregate_std == pytest.approx(prep.aggregate_std, rel=1e-9)
    assert crep.constraints["exact"]


def test_local_and_classic_calibration():
    site = make_sites(1)[0]
    rel, rep = run_local(site, epsilon=1.0, delta=1e-5, rng=0)
    assert rel.n == 200 and rep.joint_view.epsilon == pytest.approx(1.0, rel=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, rep = run_cape(make_sites(4), epsilon=20.0, delta=1e-5, calibration="classic", rng=0)
    assert not rep.claimed.certified  # the paper's classic formula at epsilon >= 1, not rescued by the exact analysis
    assert rep.joint_view.certified   # the honest guarantee always is


def test_zero_out_reproduces_papers_sensitivity():
    sites = make_sites(4)
    _, rep = run_cape(sites, epsilon=1.0, delta=1e-5, neighbours="zero-out", rng=0)
    assert rep.sites[0].sensitivity == pytest.approx(1.0 / 200)
    _, rep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    assert rep.sites[0].sensitivity == pytest.approx(np.sqrt(2) / 200)
    with pytest.raises(ValueError, match="add-remove"):  # each site's exact n would be released
        run_cape(sites, epsilon=1.0, delta=1e-5, neighbours="add-remove", rng=0)


def test_seeded_runs_are_reproducible_and_sites_independent():
    sites = make_sites(4)
    a, _ = run_cape(sites, epsilon=1.0, delta=1e-5, rng=5)
    b, _ = run_cape(sites, epsilon=1.0, delta=1e-5, rng=5)
    c, _ = run_cape(sites, epsilon=1.0, delta=1e-5, rng=6)
    assert np.array_equal(a.second_moment, b.second_moment)
    assert not np.array_equal(a.second_moment, c.second_moment)
    gens = InProcessEngine(rng=0).site_generators(sites)
    draws = [g.standard_normal(3) for g in gens.values()]
    assert len({tuple(x) for x in draws}) == 4
