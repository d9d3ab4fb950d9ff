"""CAPE's headline guarantee is the one that holds against the aggregator, and is met by default (issue 12)."""

import math

import pytest

from dpmoments.multisite import irls, release_tensor_moments, run_cape, run_conventional, run_secure_aggregation
from dpmoments.datasets.mixtures import make_mog

from .conftest import make_sites


def test_epsilon_one_is_one_against_the_aggregator_by_default():
    """Today's default gave (1.245, 1e-6) against the aggregator for 3 sites at epsilon = 1."""
    rel, rep = run_cape(make_sites(3), epsilon=1.0, delta=1e-6, rng=0)
    assert rep.guarantee.epsilon == pytest.approx(1.0, abs=1e-6) and rep.guarantee.epsilon <= 1.0
    assert rel.guarantee == rep.guarantee and rep.target == "aggregator"
    assert rep.claimed.epsilon < 1.0  # each message alone now carries more noise than the paper's claim needs
    assert rep.to_dict()["guarantee"]["epsilon"] == rep.guarantee.epsilon
    assert "aggregator" in rep.to_dict()["guarantee_is"] and "per site" in rep.to_dict()["claimed_is"]


def test_five_sites_with_four_colluders():
    """Per-site calibration leaves the joint view at 2.40 for a claimed 1 (equal sites, delta = 1e-6)."""
    sites = make_sites(5)
    _, paper = run_cape(sites, epsilon=1.0, delta=1e-6, colluders=4, rng=0, target="per-site")
    assert paper.guarantee.epsilon == pytest.approx(2.40, abs=0.01)
    _, rep = run_cape(sites, epsilon=1.0, delta=1e-6, colluders=4, rng=0)
    assert rep.guarantee.epsilon == pytest.approx(1.0, abs=1e-6) and rep.guarantee.epsilon <= 1.0
    # only g_s (variance tau^2 / S) is left to protect a site when all others collude: sqrt(S) more noise
    assert rep.aggregate_std == pytest.approx(paper.aggregate_std * math.sqrt(5), rel=1e-9)


@pytest.mark.parametrize("runner", [run_cape, run_secure_aggregation, run_conventional])
@pytest.mark.parametrize("colluders", [0, 1, 3])
def test_every_protocol_meets_the_target_with_colluders(runner, colluders):
    sites = make_sites(4, sizes=[100, 150, 300, 450])
    _, rep = runner(sites, epsilon=0.7, delta=1e-5, colluders=colluders, rng=0)
    assert rep.guarantee.epsilon <= 0.7 * (1 + 1e-9)
    assert rep.guarantee.epsilon == pytest.approx(0.7, rel=1e-6)
    assert all(r.joint_view.epsilon <= 0.7 * (1 + 1e-9) for r in rep.sites)


def test_per_site_target_reproduces_the_papers_claim():
    _, rep = run_cape(make_sites(3), epsilon=1.0, delta=1e-6, rng=0, target="per-site")
    assert rep.claimed.epsilon == pytest.approx(1.0) and rep.guarantee.epsilon == pytest.approx(1.245, abs=1e-3)


def test_multi_release_analyses_meet_the_target_composed():
    m = make_mog(4000, 4, 2, sigma2=0.02, rng=0)
    sites = [make_sites(1)[0].__class__(f"s{i}", X, row_norm=2.0) for i, X in enumerate(
        [m.X[:1000], m.X[1000:2500], m.X[2500:]])]
    _, rep = release_tensor_moments(sites, model="mog", epsilon=1.0, delta=1e-5, sigma2=0.02, rng=0)
    assert rep.guarantee.epsilon == pytest.approx(1.0, rel=1e-6) and rep.guarantee.delta == pytest.approx(1e-5)
    xy = make_sites(3, y=True)
    _, rep = irls(xy, epsilon=1.0, delta=1e-6, n_iter=3, w_max=5.0, rng=0)
    assert rep.guarantee.epsilon == pytest.approx(1.0, rel=1e-6) and rep.claimed.epsilon < 1.0


def test_a_site_may_assume_more_colluders_than_the_dealer(tmp_path, capsys):
    """The site charges its budget with the larger of its own and the plan's colluders: more caution, never less."""
    import dataclasses

    import numpy as np

    from dpmoments.multisite import Aggregator, Plan, Site, deal, deal_files
    from dpmoments.multisite.messages import SiteError

    from ..cli.helpers import assert_one_line_error, in_process

    cli = in_process(capsys)  # refused before it dials the aggregator: no subprocess needed
    plan = Plan.build("cape", ["a", "b", "c", "d"], [100] * 4, n_features=3, row_norm=1.0, epsilon=1.0, delta=1e-6)
    bundles = deal(plan, rng=0)
    X = np.random.default_rng(0).normal(size=(100, 3)) / 3
    trusting, cautious = Site("a", X, budget=(1.0, 1e-6)), Site("a", X, budget=(1.0, 1e-6), colluders=3)
    assert trusting.cost(plan).epsilon == pytest.approx(1.0, rel=1e-6)
    assert cautious.cost(plan).epsilon > 1.5  # with every other site helping the aggregator, g_a alone is left
    for site in (trusting, cautious):
        site.accept(bundles["a"], rng=1)
    query = Aggregator(plan, rng=0).open_step(0, plan.sites)["a"]
    assert not isinstance(trusting.answer(query), SiteError)
    refused = cautious.answer(query)
    assert isinstance(refused, SiteError) and refused.code == "over-budget"
    assert cautious.ledger.refusals[-1]["reason"] == "over-budget"
    plan = dataclasses.replace(plan, run_id="another-dealing")  # the shares answered above are not written out
    paths = deal_files(plan, tmp_path / "shares", rng=0)
    np.savetxt(tmp_path / "a.csv", X, delimiter=",", header="x,y,z", comments="")
    res = cli("site", "--name", "a", "--data", tmp_path / "a.csv", "--share", paths["a"], "--colluders", 3,
              "--state", tmp_path / "st", "--transport", "grpc", "--aggregator", "127.0.0.1:1", "--insecure")
    assert_one_line_error(res, "would exceed this site's budget")
