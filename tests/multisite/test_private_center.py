"""``center="private"`` across sites: location steps of noisy per-coordinate counts, then a mean round.

The plan asks the location steps first (each site's own noise; the aggregator moves the
location by the per-coordinate medians of the rows centred at it), every later query carries
the location ``m``, and the second moment ``S`` and the mean ``a`` of the rows clipped about
``m`` give ``S - a a^T`` about ``m + a``.
"""

import math

import numpy as np
import pytest

from dpmoments.estimators import CenterBudget
from dpmoments.multisite import Plan, Query, Reply, Site, SiteError, deal, from_wire, to_wire
from dpmoments.multisite.api import analyse, run, run_cape
from dpmoments.multisite.location import AutoLocation

from .transports import factory

EPS, DELTA = 1.0, 1e-6
MEAN = np.array([100.0, 0.0, -5.0])
COV = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 2.0]])


def _parts(n=12000, seed=0, sites=3):
    rng = np.random.default_rng(seed)
    L = np.linalg.cholesky(COV)
    return [rng.normal(size=(n, 3)) @ L.T + MEAN for _ in range(sites)]


def _sites(parts, center="private", row_norm="auto", ranges=None):
    return [Site(f"s{i}", X, row_norm=row_norm, center=center, ranges=ranges) for i, X in enumerate(parts)]


# -- the release: a covariance about the private mean -------------------------------------------------------------
def test_a_private_centre_gives_the_covariance_as_well_as_a_public_one():
    """Data with mean 100 in one column: the released matrix is the covariance, not the second moment."""
    errs = {"private": [], "public": [], "uncentred": []}
    for seed in range(2):  # two seeds (three before: test time); the uncentred release is far off on any one
        parts = _parts(seed=seed)
        for key, center in (("private", "private"), ("public", MEAN), ("uncentred", None))[:3 - seed]:
            rel, _ = analyse(_sites(parts, center), "covariance", epsilon=EPS, delta=DELTA, rng=seed)
            errs[key].append(np.linalg.norm(rel.second_moment - COV))
    private, public = np.median(errs["private"]), np.median(errs["public"])
    assert private <= 2.0 * public and private < 0.5  # the public centre is the true mean, given for free
    assert min(errs["uncentred"]) > 1000  # the second moment about the origin is not a covariance


def test_a_mean_far_from_the_origin_against_its_spread_is_found():
    """A column whose mean is 300 times its spread: two location steps left it about 80 away (R 78, error above 1,
    where the true mean as a public centre gives 0.05); the plan now takes as many steps as the rows allow."""
    rng = np.random.default_rng(5)
    cov = np.diag([4.0, 1.0, 9.0])
    parts = [rng.multivariate_normal([100.0, -5.0, 1000.0], cov, size=15000) for _ in range(3)]
    rel, _ = analyse(_sites(parts), "covariance", epsilon=EPS, delta=DELTA, rng=1)
    assert sum(p.label.startswith("location (step") for p in rel.parts) == 4
    assert rel.row_norm < 15 and np.linalg.norm(rel.second_moment - cov) / np.linalg.norm(cov) < 0.2


def test_the_steps_are_as_many_as_the_rows_allow():
    def steps(n):
        return Plan.build("cape", ["a", "b", "c"], [n] * 3, n_features=3, row_norm=5.0, epsilon=1.0, delta=1e-5,
                          center="private").location.steps

    assert [steps(n) for n in (2500, 4500, 9000)] == [1, 2, 4]  # public facts only: n, budgets, d, grid
    with pytest.raises(ValueError, match="too few rows"):
        steps(1500)
    fixed = Plan.build("cape", ["a", "b", "c"], [9000] * 3, n_features=3, row_norm=5.0, epsilon=1.0, delta=1e-5,
                       center="private", center_budget=AutoLocation(steps=2))
    assert fixed.location.steps == 2 and Plan.from_json(fixed.to_json()).location.steps == 2


def test_the_report_lists_every_share_and_the_parts_compose_to_the_budget():
    rel, rep = analyse(_sites(_parts()), "covariance", epsilon=EPS, delta=DELTA, rng=0, bound_budget=0.1,
                       center_budget=CenterBudget(mean=0.25, location=0.1))
    steps = [f"location (step {k} of 4)" for k in (1, 2, 3, 4)]  # 36,000 rows at d = 3 allow four
    assert [p.label for p in rel.parts] == steps + ["row_norm", "second moment", "clipping excess", "mean"]
    assert [p.share for p in rel.parts] == pytest.approx([0.025] * 4 + [0.1, 0.45, 0.1, 0.25])
    assert rep.guarantee.epsilon == pytest.approx(EPS, rel=1e-6) and rep.guarantee.delta <= DELTA * (1 + 1e-9)
    assert rel.guarantee.epsilon == pytest.approx(EPS, rel=1e-6)
    assert set(rep.parts) == {"location 1", "location 2", "location 3", "location 4", "bound row_norm", "second",
                              "excess", "mean"}
    assert np.allclose(rel.center, MEAN, atol=0.1)  # the private mean m + a
    assert rel.parts[0].released["rows"] == 36000 and rel.parts[0].released["coordinates_at_range_end"] == 0
    assert "m + a" in rel.postprocessing[-1]


def test_public_row_norm_and_every_centred_analysis_take_a_private_centre():
    parts = _parts(n=6000)
    rel, rep = analyse(_sites(parts, row_norm=12.0), "covariance", epsilon=EPS, delta=DELTA, rng=1)
    assert [p.label for p in rel.parts][-3:] == ["location (step 4 of 4)", "second moment", "mean"]  # zCDP: four
    assert rel.row_norm == 12.0 and np.linalg.norm(rel.second_moment - COV) < 0.5
    for analysis in ("pca", "precision", "ridge"):
        out, rep = analyse(_sites(parts, row_norm=12.0), analysis, epsilon=EPS, delta=DELTA, rng=2)
        assert rep.guarantee.epsilon == pytest.approx(EPS, rel=1e-6) and out.center is not None


@pytest.mark.parametrize("kind", ["in-process", "flower", "grpc"])
def test_every_transport_carries_the_location_step(kind):
    """And the private column scales that the public range of one column brings (every later query carries them)."""
    parts, ranges = _parts(), {0: (90.0, 110.0)}
    ref, _ = run_cape(_sites(parts, ranges=ranges), epsilon=EPS, delta=DELTA, rng=3)
    rel, rep = run_cape(_sites(parts, ranges=ranges), epsilon=EPS, delta=DELTA, rng=3, transport=factory(kind))
    np.testing.assert_array_equal(rel.second_moment, ref.second_moment)
    np.testing.assert_array_equal(rel.center, ref.center)
    np.testing.assert_array_equal(rel.column_scale, ref.column_scale)
    assert "private location and scale for x1, x2" in rel.postprocessing[-1]
    queries = [t for t in rep.parts["second"].transcript if t["type"] == "Query"]
    assert len(queries) == 6 * 3  # four location steps, the bound and moment steps, three sites each


# -- the plan ---------------------------------------------------------------------------------------------------------
def test_the_plan_records_the_location_and_round_trips():
    plan = Plan.build("cape", ["a", "b"], [20000, 20000], n_features=3, row_norm="auto", center="private",
                      epsilon=EPS, delta=DELTA, center_budget=AutoLocation(mean=0.3, steps=2))
    assert [(r.statistic, r.step) for r in plan.rounds] == [("location", 0), ("location", 1), ("histogram", 2),
                                                            ("second", 3), ("excess", 3), ("cross", 3)]
    assert plan.location_steps == (0, 1) and plan.bound_step == 2 and plan.mean_round == 5
    assert plan.location == AutoLocation(mean=0.3, steps=2) and plan.to_dict()["location"]["mean"] == 0.3
    again = Plan.from_json(plan.to_json())
    assert again.digest == plan.digest and again.location == plan.location
    public = Plan.build("cape", ["a", "b"], [9000, 9000], n_features=3, row_norm=1.0, epsilon=EPS, delta=DELTA)
    assert "location" not in public.to_dict()  # a plan without a private centre keeps its digest
    m = plan.location.edges()[[100, 96, 90]]
    located = plan.resolved(center=m)
    assert located.digest == plan.digest and located.chosen_center == tuple(m) and located.chosen is None
    R = float(plan.auto.edges()[40])
    both = located.resolved(bounds={"row_norm": R}, center=m)  # always from the plan as built: both are given
    assert both.chosen_center == tuple(m) and both.chosen == (R,) and both.digest == plan.digest
    assert located.resolved(bounds={"row_norm": R}).chosen_center is None
    with pytest.raises(ValueError, match="finite vector"):
        plan.resolved(center=m[:2])


# -- a site: the location step once, then the same centre on the grid ------------------------------------------------
def _dealt(parts, protocol="conventional"):
    sites = _sites(parts, row_norm=10.0)
    plan = Plan.build(protocol, [s.name for s in sites], [s.n for s in sites], n_features=3, row_norm=10.0,
                      center="private", epsilon=EPS, delta=DELTA)
    for s, (_, b) in zip(sites, deal(plan, 0).items()):
        s.accept(b, rng=1)
    return sites, plan


def _ask(site, query):
    return from_wire(site.handle(to_wire(query)))


def test_a_sites_ledger_refuses_a_repeated_location_query():
    sites, plan = _dealt(_parts())
    first = _ask(sites[0], Query(plan.digest, 0, "r-a"))
    assert isinstance(first, Reply) and first.values[0][0] == "location"
    assert first.value(0).shape == (3, plan.location.n_bins)
    again = _ask(sites[0], Query(plan.digest, 0, "r-b"))
    assert isinstance(again, SiteError) and again.code == "already-answered"
    assert sites[0].ledger.refusals[-1]["reason"] == "already-answered"


def test_a_site_refuses_a_centre_missing_out_of_order_or_moved_off_the_grid():
    sites, plan = _dealt(_parts())
    edges = plan.location.edges()
    m = edges[[100, 96, 90]]
    s = sites[0]
    assert _ask(s, Query(plan.digest, 0, "r-a", center=m)).code == "bad-query"  # the first step: counted about 0
    assert _ask(s, Query(plan.digest, 1, "r-b", center=m)).code == "bad-query"  # step 0 not answered yet
    assert isinstance(_ask(s, Query(plan.digest, 0, "r-c")), Reply)
    assert _ask(s, Query(plan.digest, 1, "r-d")).code == "bad-query"  # later: the centre is needed
    assert _ask(s, Query(plan.digest, 1, "r-e", center=m + 0.5)).code == "bad-query"  # a move off the grid
    assert _ask(s, Query(plan.digest, 1, "r-f", center=m[:2])).code == "bad-query"
    assert isinstance(_ask(s, Query(plan.digest, 1, "r-g", center=m)), Reply)
    m2 = m + edges[[80, 96, 110]]  # the next move: one grid edge per coordinate, from m
    assert _ask(s, Query(plan.digest, 2, "r-h", center=m2 + edges[100])).code == "bad-query"
    assert isinstance(_ask(s, Query(plan.digest, 2, "r-i", center=m2)), Reply)  # the moment step after the last move
    assert _ask(s, Query(plan.digest, 2, "r-j", center=m2)).code == "already-answered"


def test_after_the_location_steps_the_centre_is_fixed():
    sites = _sites(_parts())
    plan = Plan.build("conventional", [s.name for s in sites], [s.n for s in sites], n_features=3, row_norm="auto",
                      center="private", epsilon=EPS, delta=DELTA, center_budget=AutoLocation(steps=1))
    for s, (_, b) in zip(sites, deal(plan, 0).items()):
        s.accept(b, rng=1)
    edges, grid = plan.location.edges(), plan.auto.edges()
    m, other = edges[[100, 96, 90]], edges[[101, 96, 90]]
    s = sites[0]
    assert isinstance(_ask(s, Query(plan.digest, 0, "r-0")), Reply)
    assert isinstance(_ask(s, Query(plan.digest, 1, "r-a", center=m)), Reply)  # the bound step at m
    assert _ask(s, Query(plan.digest, 2, "r-b", center=other, bounds=[grid[60]])).code == "bad-query"
    assert isinstance(_ask(s, Query(plan.digest, 2, "r-c", center=m, bounds=[grid[60]])), Reply)


def test_a_site_with_a_public_centre_refuses_a_private_plan_and_vice_versa():
    parts = _parts(n=5000)
    plan = Plan.build("cape", ["s0", "s1", "s2"], [5000] * 3, n_features=3, row_norm=10.0, center="private",
                      epsilon=EPS, delta=DELTA)
    with pytest.raises(ValueError, match="centre differs"):
        Site("s0", parts[0], center=MEAN).accept(deal(plan, 0)["s0"])
    public = Plan.build("cape", ["s0", "s1", "s2"], [5000] * 3, n_features=3, row_norm=10.0, center=MEAN,
                        epsilon=EPS, delta=DELTA)
    with pytest.raises(ValueError, match="centre differs"):
        Site("s0", parts[0], center="private").accept(deal(public, 0)["s0"])
    Site("s0", parts[0]).accept(deal(plan, 0)["s0"])  # no centre of its own: takes the plan's


# -- refusals --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("analysis, options", [("tensor-mog", {"sigma2": 0.1}), ("select", {}),
                                               ("regress", {"n_iter": 2, "w_max": 5.0})])
def test_analyses_not_taken_about_a_centre_refuse_a_private_one(analysis, options):
    rng = np.random.default_rng(0)
    sites = [Site(f"s{i}", rng.normal(size=(3000, 3)), rng.normal(size=3000), row_norm=3.0, center="private",
                  response_bound=None if analysis != "regress" else 3.0) for i in range(3)]
    with pytest.raises(ValueError, match=f"center='private' across sites is for covariance.*{analysis}"):
        analyse(sites, analysis, epsilon=EPS, delta=DELTA, options=options, rng=0)


def test_bad_uses_of_a_private_centre_are_one_line_refusals():
    parts = _parts(n=3000)
    with pytest.raises(ValueError, match="too few rows"):
        analyse(_sites([p[:300] for p in parts]), "covariance", epsilon=EPS, delta=DELTA, rng=0)
    with pytest.raises(ValueError, match="finite epsilon"):
        analyse(_sites(parts, row_norm=10.0), "covariance", epsilon=math.inf, delta=DELTA, rng=0)
    with pytest.raises(ValueError, match="one second moment"):
        run(_sites(parts, row_norm=10.0), epsilon=EPS, delta=DELTA, protocol="dpdispca", rank=2)
    with pytest.raises(ValueError, match="'center_budget' applies only"):
        run_cape(_sites(parts, center=None, row_norm=10.0), epsilon=EPS, delta=DELTA, center_budget=0.2)
    with pytest.raises(ValueError, match="add up to 1"):
        run_cape(_sites(parts), epsilon=EPS, delta=DELTA, center_budget=CenterBudget(mean=0.6, location=0.3),
                 bound_budget=0.2)
    with pytest.raises(ValueError, match="no 'prior'"):
        run_cape(_sites(parts), epsilon=EPS, delta=DELTA, center_budget=CenterBudget(prior=(0, 0, 0)))
    with pytest.raises(ValueError, match="'center' must be a public vector"):
        Plan.build("cape", ["a", "b"], [9000, 9000], n_features=3, row_norm=1.0, center="median", epsilon=EPS,
                   delta=DELTA)


def test_a_site_failing_after_the_deal_is_dropped_and_the_centre_stands():
    parts = _parts()
    rel, rep = analyse(_sites(parts), "covariance", epsilon=EPS, delta=DELTA, rng=0, failures={"s1": "after-deal"})
    assert ("s1", "after-deal") in rep.dropped and rel.n == 24000
    assert rel.parts[0].released["rows"] == 24000 and np.allclose(rel.center, MEAN, atol=0.2)
    assert np.linalg.norm(rel.second_moment - COV) < 0.5


def test_a_location_payload_of_another_shape_does_not_leave_a_site():
    from dpmoments.multisite import EgressRefused

    digest = "0" * 64
    for bad in (np.ones((4, 10)), np.ones(30), np.ones((3, 2000)), np.full((3, 10), np.nan)):
        with pytest.raises(EgressRefused):
            Reply("s0", digest, 0, "r-a", 100, 3, {0: ("location", bad)})
    assert Reply("s0", digest, 0, "r-a", 100, 3, {0: ("location", np.ones((3, 10)))}).value(0).shape == (3, 10)
    with pytest.raises(ValueError, match="finite vector"):
        Query(digest, 1, "r-b", center=[np.nan, 0.0, 0.0])
    q = from_wire(to_wire(Query(digest, 1, "r-b", center=[1.0, 2.0, 3.0])))
    assert q.center.tolist() == [1.0, 2.0, 3.0]


def test_the_mean_round_carries_its_noise_scale_for_the_centre_check():
    """hunt7 #8: across sites the "mean" part carried no noise scale, so the covariance's centre check (variances
    below 10 s^2 measure the private mean's error, s its noise scale) never ran; with a 1% mean share its noise
    (s ~ 0.4) is most of every variance, flagged as single-site."""
    import warnings

    from dpmoments.estimators import PrivateCovariance
    from dpmoments.exceptions import NoiseDominatesWarning

    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(3000, 3)) + 5.0 for _ in range(3)]
    rel, _ = run(_sites(parts, row_norm=10.0), epsilon=3.0, delta=DELTA, rng=0, center_budget=0.0001)  # zCDP
    (mean,) = [p for p in rel.parts if p.label == "mean"]
    assert mean.released["noise_scale"] > 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoiseDominatesWarning)
        est = PrivateCovariance().fit_release(rel)
    assert "centre-noise" in {d["code"] for d in est.diagnostics_}
