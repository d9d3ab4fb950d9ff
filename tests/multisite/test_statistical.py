"""Statistical tests: noise variances through the engine, and privacy audits of every release."""

import math

import numpy as np
import pytest

from dpmoments.multisite import (run_cape, run_conventional, run_dpdispca, run_local, run_pooled,
                                   run_secure_aggregation)
from dpmoments.mechanisms import upper_triangle
from dpmoments.testing import audit

from .conftest import make_sites

pytestmark = pytest.mark.statistical


# Twenty-four features: 300 upper-triangle coordinates a run, each an independent draw of the aggregate noise,
# so a dozen runs give the thousands of coordinates a variance ratio needs (a run costs about the same at d=4).
D = 24


def _aggregate_noise(run, sites, runs, seed, **kw):
    exact = sum(s.n * s._exact("second") for s in sites) / sum(s.n for s in sites)
    out = [upper_triangle(run(sites, epsilon=1.0, delta=1e-5, rng=seed + r, **kw)[0].second_moment - exact)
           for r in range(runs)]
    return np.concatenate(out)


@pytest.mark.parametrize("run", [run_cape, run_secure_aggregation])
def test_aggregate_noise_variance_equals_pooled(run):
    sites = make_sites(5, d=D, sizes=[100, 150, 200, 250, 300])
    _, prep = run_pooled(sites, epsilon=1.0, delta=1e-5, rng=0)
    noise = _aggregate_noise(run, sites, 11, 1000, target="per-site")  # 3300 independent coordinates
    ratio = np.var(noise) / prep.aggregate_std**2
    assert abs(ratio - 1) < 0.1, ratio  # sd of the ratio ~ 0.026
    assert abs(np.mean(noise)) < 4 * prep.aggregate_std / math.sqrt(noise.size)


def test_aggregate_noise_variance_is_what_the_report_says_for_the_aggregator_target():
    sites = make_sites(5, d=D, sizes=[100, 150, 200, 250, 300])
    _, rep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, colluders=2)
    noise = _aggregate_noise(run_cape, sites, 6, 2000, colluders=2)  # 1800 coordinates: sd of the ratio ~ 0.033
    assert abs(np.var(noise) / rep.aggregate_std**2 - 1) < 0.12


def test_conventional_variance_is_S_times_larger():
    sites = make_sites(5, d=D)
    _, prep = run_pooled(sites, epsilon=1.0, delta=1e-5, rng=0)
    ratio = np.var(_aggregate_noise(run_conventional, sites, 6, 3000)) / prep.aggregate_std**2  # 1800 coordinates
    assert abs(ratio / 5 - 1) < 0.12, ratio


def _gaussian_mechanism(shift, cov):
    """mechanism(flag, rng, size): flag * shift + N(0, cov), vectorised for the auditor."""
    chol = np.linalg.cholesky(np.atleast_2d(cov))

    def mech(flag, rng, size=None):
        z = rng.standard_normal((size, chol.shape[0])) @ chol.T
        return z + flag * np.asarray(shift)
    return mech


def _audit(shift, cov, delta, seed):
    cov = np.atleast_2d(cov)
    direction = np.linalg.solve(cov, np.atleast_1d(shift))  # the optimal (likelihood-ratio) projection
    return audit(_gaussian_mechanism(np.atleast_1d(shift), cov), 1, 0, delta=delta, n_samples=400_000,
                 batch=200_000, projection=lambda out: out @ direction, rng=seed)


def _runs():
    sites = make_sites(4, d=3, sizes=[100, 150, 200, 250])
    kw = dict(epsilon=1.0, delta=1e-3, rng=0)
    return {
        "cape": run_cape(sites, **kw)[1],
        "cape-c2": run_cape(sites, colluders=2, **kw)[1],
        "secure": run_secure_aggregation(sites, **kw)[1],
        "secure-c1": run_secure_aggregation(sites, colluders=1, **kw)[1],
        "conventional": run_conventional(sites, **kw)[1],
        "dropout": run_cape(sites, failures={"site-2": "after-deal"}, **kw)[1],
    }


RUNS = _runs()


@pytest.mark.parametrize("name", sorted(RUNS))
def test_audit_joint_view_and_output(name):
    rep = RUNS[name]
    plan = rep.plan
    received = [plan.index(r.site) for r in rep.sites if r.status == "ok"]
    for k, r in enumerate(rep.sites):
        if r.status != "ok":
            continue
        s = plan.index(r.site)
        col = tuple(plan.index(c) for c in r.joint_colluders)
        observed = [t for t in received if t not in col]
        cov = plan.conditional_covariance(observed, col)
        shift = np.zeros(len(observed))
        shift[observed.index(s)] = r.sensitivity
        res = _audit(shift, cov, r.joint_view.delta, seed=10 + k)
        res.check(r.joint_view.epsilon)
        out = _audit(r.weight / sum(rep.sites[t].weight for t in received) * r.sensitivity,
                     rep.aggregate_std**2, r.output.delta, seed=20 + k)
        out.check(r.output.epsilon)
        assert r.output.epsilon <= r.claimed.epsilon * (1 + 1e-9)


def test_audit_refutes_the_per_site_claim_against_colluders():
    """Negative control: with every other site colluding, the aggregator beats the paper's claim."""
    rep = run_cape(make_sites(4), epsilon=1.0, delta=1e-3, colluders=3, rng=0)[1]
    r, plan = rep.sites[0], rep.plan
    cov = plan.conditional_covariance([0], (1, 2, 3))
    res = _audit([r.sensitivity], cov, 1e-3, seed=3)
    assert not res.consistent_with(r.claimed.epsilon)
    res.check(r.joint_view.epsilon)


def test_audit_local_pooled_and_dpdispca_sites():
    sites = make_sites(3)
    for rep in (run_local(sites[0], epsilon=1.0, delta=1e-3, rng=0)[1],
                run_pooled(sites, epsilon=1.0, delta=1e-3, rng=0)[1],
                run_dpdispca(sites, epsilon=1.0, delta=1e-3, rank=2, rng=0)[1]):
        r = rep.sites[0]
        sens = r.sensitivity if r.sensitivity else math.sqrt(2) / 600  # pooled: sensitivity at N
        tau = r.tau if r.tau else rep.aggregate_std
        # dpdispca's factor is post-processing of this site-level Gaussian release
        _audit([sens], tau**2, 1e-3, seed=5).check(r.joint_view.epsilon)
