"""A site that fails: completion with more (never less) noise, or a clean abort.

The comparisons with the pooled reference calibrate per site (``target="per-site"``), the
papers' setting; the dropout rules are the same for either target.
"""

import numpy as np
import pytest

from dpmoments.multisite import ProtocolAborted, run_cape, run_conventional, run_pooled, run_secure_aggregation
from dpmoments.mechanisms import upper_triangle

from .conftest import make_sites


@pytest.mark.parametrize("run", [run_cape, run_secure_aggregation])
def test_failure_after_deal_adds_noise_and_is_reported(run):
    sites = make_sites(5, sizes=[100, 150, 200, 250, 300])
    _, full = run(sites, epsilon=1.0, delta=1e-5, rng=0, target="per-site")
    rel, rep = run(sites, epsilon=1.0, delta=1e-5, rng=0, failures={"site-1": "after-deal"}, target="per-site")
    survivors = [s for s in sites if s.name != "site-1"]
    _, pooled_survivors = run_pooled(survivors, epsilon=1.0, delta=1e-5, rng=0)
    assert rep.dropped == (("site-1", "after-deal"),)
    assert rel.n == 850 and rep.site("site-1").status == "failed-after-deal"
    assert rep.aggregate_std >= pooled_survivors.aggregate_std * (1 - 1e-12)  # never less noise
    assert rep.target_std == pytest.approx(pooled_survivors.aggregate_std)
    assert rep.extra_std > 0
    assert rel.noise_scale == pytest.approx(rep.aggregate_std)
    for r in rep.sites:
        if r.status == "ok":  # a marginal of the full view: never worse against the aggregator
            assert r.joint_view.epsilon <= full.site(r.site).joint_view.epsilon * (1 + 1e-9)
            assert r.output.epsilon <= r.claimed.epsilon * (1 + 1e-9)


@pytest.mark.statistical
def test_dropout_noise_is_really_there():
    sites = make_sites(4, d=12)  # 78 independent coordinates a run: 26 runs give 2028 (sd of the ratio ~ 0.031)
    survivors = sites[1:]
    exact = sum(s._exact("second") for s in survivors) / 3
    noise = np.concatenate([upper_triangle(run_cape(sites, epsilon=1.0, delta=1e-5, rng=r,
                                                    failures={"site-0": "after-deal"})[0].second_moment - exact)
                            for r in range(26)])
    _, rep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, failures={"site-0": "after-deal"})
    assert abs(np.var(noise) / rep.aggregate_std**2 - 1) < 0.12


def test_failure_before_deal_replans_for_survivors():
    sites = make_sites(5)
    rel, rep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, failures={"site-4": "before-deal"}, target="per-site")
    _, pooled = run_pooled(sites[:4], epsilon=1.0, delta=1e-5, rng=0)
    assert rep.dropped == (("site-4", "before-deal"),) and rel.n == 800
    assert rep.aggregate_std == pytest.approx(pooled.aggregate_std) and rep.extra_std == 0
    assert rep.output.epsilon == pytest.approx(1.0, rel=1e-6)
    assert {h["to"] for h in rep.transcript} | {h["from"] for h in rep.transcript} >= {"site-0"}
    assert all("site-4" not in (h["from"], h["to"]) for h in rep.transcript)


def test_clean_aborts():
    sites = make_sites(3)
    with pytest.raises(ProtocolAborted, match="min_sites"):
        run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, min_sites=3, failures={"site-0": "after-deal"})
    with pytest.raises(ProtocolAborted, match="abort"):
        run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, on_dropout="abort", failures={"site-0": "after-deal"})
    with pytest.raises(ProtocolAborted, match="at least 2"):
        run_cape(sites, epsilon=1.0, delta=1e-5, rng=0,
                 failures={"site-0": "before-deal", "site-1": "before-deal"})
    with pytest.raises(ProtocolAborted) as info:
        run_secure_aggregation(sites, epsilon=1.0, delta=1e-5, rng=0,
                               failures={"site-0": "after-deal", "site-1": "after-deal"})
    assert info.value.report["dropped"]


def test_conventional_dropout_keeps_every_claim():
    sites = make_sites(3)
    rel, rep = run_conventional(sites, epsilon=1.0, delta=1e-5, rng=0, failures={"site-2": "after-deal"})
    assert rel.n == 400 and rep.extra_std == 0
    assert rep.joint_view.epsilon == pytest.approx(1.0, rel=1e-6)
