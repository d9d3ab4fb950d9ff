"""``row_norm="auto"`` across sites: a bound step of per-site noisy histograms, summed by the aggregator.

What is checked: the bound is near the pooled quantile (which no party computes) and the
error near the oracle's; the report lists the bound's share per site and the composed
guarantee, which each site's ledger charges once; the histogram step is a step of the plan
(answered once, replays and foreign bounds refused); all three transports carry it; a site
that drops out after the bound step leaves the bound standing; bad inputs are one-line
errors; and the histogram mechanism's privacy loss on a neighbouring pair is audited.
"""

import math
import warnings

import numpy as np
import pytest

from dpmoments.multisite import (InProcessTransport, MessageRefused, Plan, Round, Site, SiteLedger, deal, from_wire,
                                 run_cape, spend_per_site, to_wire)
from dpmoments.multisite.api import analyse, irls, run_rounds
from dpmoments.multisite.bounds import AutoBounds, choose_bound, cumulative_estimate, histogram_counts
from dpmoments.multisite.messages import Query, Reply, SiteError
from dpmoments.privacy import Accountant, ApproxDP, calibrate_gaussian, compose

from .transports import KINDS, factory

EPS, DELTA = 4.0, 1e-5


def _parts(n=4000, d=3, sites=3, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, d)) * [1.0, 2.0, 3.0] for _ in range(sites)]


def _sites(parts, **kwargs):
    return [Site(f"s{i}", X, row_norm="auto", **kwargs) for i, X in enumerate(parts)]


def _q95(parts):
    return float(np.quantile(np.linalg.norm(np.vstack(parts), axis=1), 0.95))


# -- the mechanism's post-processing -----------------------------------------------------------------------------
def test_grid_is_coarse_public_and_rounds_up():
    auto = AutoBounds(("row_norm",))
    edges = auto.edges()
    assert edges[0] == 1e-6 and edges[-1] == pytest.approx(1e8) and edges.size == 95
    assert np.all(edges[1:] / edges[:-1] <= np.sqrt(2.0) + 1e-12)
    counts = histogram_counts([0.5, 0.5, 3.0, 1e9], edges)
    assert counts.sum() == 4 and counts[-1] == 1  # beyond the range: the last (open) bin
    value, k, at_end = choose_bound(counts, 4, AutoBounds(("row_norm",), quantile=0.5))
    assert value >= 0.5 and value == edges[k] and value / 0.5 <= np.sqrt(2.0) and not at_end


def test_choice_survives_negative_counts_and_uses_both_sides():
    auto = AutoBounds(("row_norm",), quantile=0.95, low=1.0, high=1024.0, factor=2.0)  # edges 1, 2, ..., 1024
    summed = np.zeros(auto.n_bins)
    summed[5] = 1000.0                       # every row in (16, 32]
    summed[[0, 2, 9]] = [-40.0, -25.0, -30.0]  # noise: negative counts, no clamping needed
    value, _, _ = choose_bound(summed, 1000, auto)
    assert value == pytest.approx(32.0)
    est, var = cumulative_estimate(summed, 1000)
    assert var.max() <= auto.n_bins / 4 + 1e-12 and est.size == auto.edges().size


def test_the_auto_quantile_is_the_highest_the_noise_can_place():
    auto = AutoBounds(("row_norm",))
    assert auto.quantile == "auto" and AutoBounds.from_budget(("row_norm",), 0.2).quantile == "auto"
    worst = 10.0 * np.sqrt(auto.n_bins) / 2.0  # per-bin sd 10: the worst cumulative count's sd
    assert auto.target_quantile(20_000, 10.0) == pytest.approx(1.0 - 3.0 * worst / 20_000)
    assert auto.target_quantile(20_000, 1e4) == 0.95  # never below the fixed default
    assert auto.target_quantile(1000, 0.0) == pytest.approx(0.999)  # no noise: all but one row
    assert AutoBounds(("row_norm",), quantile=0.9).target_quantile(20_000, 10.0) == 0.9
    with pytest.raises(ValueError, match="'quantile'"):
        AutoBounds(("row_norm",), quantile="median")


# -- a run --------------------------------------------------------------------------------------------------------
def test_auto_bound_is_near_the_pooled_quantile_and_the_error_near_the_oracle():
    parts = _parts(n=20_000)
    cov = np.diag([1.0, 4.0, 9.0])
    q95 = _q95(parts)
    errs = {"auto": [], "oracle": []}
    for seed in range(3):
        rel, rep = run_cape(_sites(parts), epsilon=1.0, delta=DELTA, rng=seed,
                            bound_budget=AutoBounds(("row_norm",), quantile=0.95))
        assert q95 * 0.97 <= rel.row_norm <= 1.42 * q95  # rounded up to the grid (factor sqrt 2); rank noise ~1%
        errs["auto"].append(np.linalg.norm(rel.second_moment - cov))
        oracle, _ = run_cape([Site(f"s{i}", X, row_norm=q95) for i, X in enumerate(parts)], epsilon=1.0, delta=DELTA,
                             rng=seed)
        errs["oracle"].append(np.linalg.norm(oracle.second_moment - cov))
    assert np.median(errs["auto"]) <= 1.3 * np.median(errs["oracle"])


def test_report_lists_the_bound_share_per_site_and_the_composed_guarantee():
    sites = _sites(_parts())
    rel, rep = run_cape(sites, epsilon=EPS, delta=DELTA, rng=0, bound_budget=0.2)
    part = rep.parts["bound row_norm"]
    assert [s.status for s in part.sites] == ["ok"] * 3 and part.statistic == "histogram"
    rho = calibrate_gaussian(EPS, DELTA, 1.0, "zcdp")[1].rho  # a plan that chooses privately composes in zCDP
    for s in part.sites:  # each site's own noise: its guarantee against the aggregator is the per-site one
        assert s.joint_view.rho == pytest.approx(s.claimed.rho, rel=1e-9)
        assert s.joint_view.rho == pytest.approx(0.2 * rho, rel=1e-6)
    labels = [p.label for p in rel.parts]
    assert labels == ["row_norm", "second moment", "clipping excess"] and rel.parts[0].share == 0.2
    assert [p.share for p in rel.parts] == pytest.approx([0.2, 0.7, 0.1])  # the excess: AutoBounds.bias
    assert rel.parts[0].released["row_norm"] == rel.row_norm
    assert rel.guarantee.epsilon == pytest.approx(EPS, rel=1e-6) == rep.guarantee.epsilon
    # the ledger charged both rounds, once: the same as the report's composed guarantee
    for site in sites:
        assert len(site.ledger.to_dict()["charged"]) == 1
        charged = site.ledger.spent()
        assert charged.epsilon == pytest.approx(rep.guarantee.epsilon, rel=1e-6)
    acct = spend_per_site(Accountant(ApproxDP(EPS, DELTA)), rep)
    assert acct.spent.epsilon == pytest.approx(EPS, rel=1e-6)
    d = rep.to_dict()
    assert [c["label"] for c in d["private_choices"]] == ["row_norm", "second moment", "clipping excess"]
    assert "bound row_norm" in d["parts"] and d["budget"]["round 0 (histogram of row_norm)"] == 0.2


def test_a_site_with_a_public_bound_refuses_an_auto_plan_and_vice_versa():
    parts = _parts()
    plan = Plan.build("cape", ["s0", "s1", "s2"], [4000] * 3, n_features=3, row_norm="auto", epsilon=EPS,
                      delta=DELTA)
    bundles = deal(plan, 0)
    with pytest.raises(ValueError, match="row_norm differs"):
        Site("s0", parts[0], row_norm=1.0).accept(bundles["s0"])
    public = Plan.build("cape", ["s0", "s1", "s2"], [4000] * 3, n_features=3, row_norm=1.0, epsilon=EPS,
                        delta=DELTA)
    with pytest.raises(ValueError, match="row_norm differs"):
        Site("s0", parts[0], row_norm="auto").accept(deal(public, 0)["s0"])
    Site("s0", parts[0]).accept(bundles["s0"])  # no bound of its own: takes the plan's


def test_plan_round_trips_and_a_resolved_plan_keeps_its_digest():
    plan = Plan.build("cape", ["a", "b"], [9000, 9000], n_features=3, row_norm="auto", epsilon=EPS, delta=DELTA,
                      bound_budget=0.2)
    again = Plan.from_json(plan.to_json())
    assert again.digest == plan.digest and again.auto == plan.auto
    assert [r.statistic for r in plan.rounds] == ["histogram", "second", "excess"] and plan.steps == [0, 1]
    assert [r.share for r in plan.rounds] == pytest.approx([0.2, 0.7, 0.1]) and plan.excess_round == 2
    R = float(plan.auto.edges()[25])
    resolved = plan.resolved({"row_norm": R})
    assert resolved.digest == plan.digest and resolved.row_norm == R and resolved.chosen == (R,)
    assert resolved.noise_factor(1) == pytest.approx(R**2)
    assert resolved.noise[1].g_std == pytest.approx(R**2 * plan.noise[1].g_std)
    assert resolved.noise_factor(2) == pytest.approx(R**2)  # the excess's sensitivity is (kappa^2 - 1) R^2 too
    assert [resolved.cost(s).epsilon for s in "ab"] == pytest.approx([plan.cost(s).epsilon for s in "ab"])
    with pytest.raises(ValueError, match="not an edge"):
        plan.resolved({"row_norm": R * 1.01})


# -- the bound step is a step of the plan: answered once, replays refused -----------------------------------------
def _dealt(parts, protocol="conventional", **kwargs):
    """Sites holding an auto plan (conventional: the queries need no aggregator shares ``f_s``)."""
    sites = _sites(parts)
    plan = Plan.build(protocol, [s.name for s in sites], [s.n for s in sites], n_features=3, row_norm="auto",
                      epsilon=EPS, delta=DELTA, **kwargs)
    for s, (_, b) in zip(sites, deal(plan, 0).items()):
        s.accept(b, rng=1)
    return sites, plan


def _ask(site, query):
    return from_wire(site.handle(to_wire(query)))


def test_a_sites_ledger_refuses_a_repeated_histogram_query():
    sites, plan = _dealt(_parts())
    first = _ask(sites[0], Query(plan.digest, 0, "r-a"))
    assert isinstance(first, Reply) and first.values[0][0] == "histogram"
    assert first.value(0).shape == (plan.auto.n_bins,)
    again = _ask(sites[0], Query(plan.digest, 0, "r-b"))
    assert isinstance(again, SiteError) and again.code == "already-answered"
    assert sites[0].ledger.refusals[-1]["reason"] == "already-answered"


@pytest.mark.parametrize("bounds", [None, [3.0], [1.0, 2.0]], ids=["none", "off-grid", "two"])
def test_a_moment_step_needs_the_chosen_bound_on_the_grid(bounds):
    sites, plan = _dealt(_parts())
    reply = _ask(sites[0], Query(plan.digest, 1, "r-a", bounds=bounds))
    assert isinstance(reply, SiteError) and reply.code == "bad-query"
    good = _ask(sites[0], Query(plan.digest, 1, "r-b", bounds=[plan.auto.edges()[24]]))
    assert isinstance(good, Reply)  # the same query at a grid edge is answered (a refusal spends nothing)


def test_a_histogram_query_carrying_bounds_and_a_changed_bound_are_refused():
    sites, plan = _dealt(_parts(), rounds=(Round("cross", 0.5, 0, response="ones"), Round("second", 0.5, 1)))
    edges = plan.auto.edges()
    assert _ask(sites[0], Query(plan.digest, 0, "r-a", bounds=[edges[20]])).code == "bad-query"
    assert isinstance(_ask(sites[1], Query(plan.digest, 1, "r-b", bounds=[edges[20]])), Reply)
    # the bound is fixed for the plan: a later step at another bound is refused
    assert _ask(sites[1], Query(plan.digest, 2, "r-c", bounds=[edges[21]])).code == "bad-query"
    assert isinstance(_ask(sites[1], Query(plan.digest, 2, "r-d", bounds=[edges[20]])), Reply)


def test_a_replayed_histogram_is_refused_in_the_moment_round():
    sites, plan = _dealt(_parts())
    replies = {}

    def spy(site):
        def handle(data):
            out = site.handle(data)
            replies.setdefault(site.name, []).append(out)
            return out
        return handle

    class Replaying(InProcessTransport):
        def exchange_each(self, messages, timeout_s):
            for site, out in super().exchange_each(messages, timeout_s):
                if site == "s0" and len(replies["s0"]) == 2:  # the moment step: s0's old histogram comes back instead
                    out = replies["s0"][0]
                yield site, out

    from dpmoments.multisite import run_plan

    with pytest.raises(MessageRefused) as info:
        run_plan(plan, Replaying({s.name: spy(s) for s in sites}), rng=0)
    assert info.value.reason == "stale-round"


# -- transports, analyses, dropouts -------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_every_transport_carries_the_bound_step(kind):
    parts = _parts()
    ref, _ = run_cape(_sites(parts), epsilon=EPS, delta=DELTA, rng=3, bound_budget=0.2)
    rel, rep = run_cape(_sites(parts), epsilon=EPS, delta=DELTA, rng=3, bound_budget=0.2, transport=factory(kind))
    assert rel.row_norm == ref.row_norm
    np.testing.assert_array_equal(rel.second_moment, ref.second_moment)
    kinds = [t["type"] for t in rep.parts["second"].transcript if t["type"] in ("Query", "Reply")]
    assert kinds == ["Query", "Reply"] * 3 * 2 or sorted(kinds) == sorted(["Query"] * 6 + ["Reply"] * 6)


def test_irls_chooses_both_bounds_and_composes_in_zcdp():
    rng = np.random.default_rng(5)
    parts = [rng.normal(size=(20_000, 3)) for _ in range(3)]
    sites = [Site(f"s{i}", X, X @ [1.0, -1.0, 0.5] + 0.1 * rng.standard_t(3, size=X.shape[0]), row_norm="auto",
                  response_bound="auto") for i, X in enumerate(parts)]
    fit, rep = irls(sites, epsilon=EPS, delta=1e-6, n_iter=2, w_max=10.0, rng=0, bound_budget=0.2,
                    fit_intercept=False)
    assert {"bound row_norm", "bound response_bound"} <= set(rep.parts) and rep.composition == "zcdp"
    assert fit.n_iter == 2 and len(fit.releases) == 4
    assert rep.guarantee.epsilon == pytest.approx(EPS, rel=1e-3)
    assert np.allclose(fit.coef, [1.0, -1.0, 0.5], atol=0.3)
    assert [p.label for p in rep.choices][:2] == ["row_norm", "response_bound"]
    assert [p.share for p in rep.choices][:2] == pytest.approx([0.1, 0.1])


def test_a_site_dropping_out_after_the_bound_step_leaves_the_bound_standing():
    parts = _parts()
    sites = _sites(parts)
    calls = {"s2": 0}

    def flaky(data):
        calls["s2"] += 1
        if calls["s2"] > 1:
            raise RuntimeError("crashed after sending its histogram")
        return sites[2].handle(data)

    transport = lambda alive: InProcessTransport({"s0": sites[0].handle, "s1": sites[1].handle, "s2": flaky})  # noqa
    result = run_rounds(sites, (Round("second"),), epsilon=EPS, delta=DELTA, rng=0, transport=transport,
                        bound_budget=0.2)
    detail = result.bound.details["row_norm"]
    assert detail["sites"] == 3 and detail["dropped_after_bound_step"] == ["s2"]
    assert "the bound stands" in detail["note"]
    assert result.releases[0].n == 8000 and result.releases[0].row_norm == result.bound.values["row_norm"]


def test_tensor_mog_and_select_run_with_an_auto_bound():
    parts = _parts(n=20_000)
    out, rep = analyse(_sites(parts), "tensor-mog", epsilon=EPS, delta=DELTA, options={"sigma2": 1.0}, rng=0)
    assert out.second.row_norm == out.third.row_norm and "bound row_norm" in rep.parts
    assert rep.guarantee.epsilon == pytest.approx(EPS, rel=1e-6)
    rng = np.random.default_rng(1)
    xy = [Site(f"s{i}", X, X @ [1.0, 0.0, 0.0] + rng.normal(size=X.shape[0]), row_norm="auto")
          for i, X in enumerate(parts)]
    rel, rep = analyse(xy, "select", epsilon=EPS, delta=DELTA, rng=0)
    assert rel.n_features == 4 and rel.parts[0].label == "row_norm"


# -- bad input ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("budget, match", [(0.0, "share in"), (1.0, "share in"), (-0.5, "share in"),
                                           (AutoBounds, "empty")], ids=["zero", "one", "negative", "empty-range"])
def test_bad_bound_budgets_are_one_line_errors(budget, match):
    if budget is AutoBounds:
        with pytest.raises(ValueError, match=match):
            AutoBounds(("row_norm",), low=5.0, high=1.0)
        return
    with pytest.raises(ValueError, match=match) as info:
        run_cape(_sites(_parts()), epsilon=EPS, delta=DELTA, bound_budget=budget)
    assert "\n" not in str(info.value)


def test_auto_with_epsilon_inf_and_with_too_few_rows_are_refused_before_anything_is_sent():
    sites = _sites(_parts(n=300))
    with pytest.raises(ValueError, match="finite epsilon"):
        run_cape(sites, epsilon=math.inf, delta=DELTA)
    with pytest.raises(ValueError, match="too few rows") as info:
        run_cape(sites, epsilon=1.0, delta=DELTA)
    assert "\n" not in str(info.value) and all(not s.ledger.answered for s in sites)
    from dpmoments.multisite import run_pooled

    with warnings.catch_warnings():  # the pooled reference: one machine's private bound, which warns here instead
        warnings.simplefilter("ignore")
        pooled = run_pooled(sites, epsilon=1.0, delta=DELTA, rng=0)
    release, _ = pooled
    assert release.n == 900 and "row_norm" in [p.label for p in release.parts]


@pytest.mark.parametrize("n, d, kwargs, option", [
    ([5000, 5000], 3, dict(row_norm="auto"), "'bound_budget'"),  # hunt4 #13: 2 x 5000 rows at epsilon 1
    ([1000, 1000], 3, dict(row_norm=1.0, center="private"), "CenterBudget.location"),
    ([1000, 1000], 3, dict(row_norm="auto", center="private"), None),  # both options refused: no one share helps
    ([3000, 1500, 2000], 10, dict(row_norm="auto", composition="zcdp", target="per-site"), "'bound_budget'"),
    ([300, 300], 1, dict(row_norm="auto", bound_budget=0.03, center="private"), None),
])
def test_a_refused_choosing_step_names_an_epsilon_and_a_share_that_run_the_whole_plan(n, d, kwargs, option):
    """Like every single-site refusal, the multi-site one names the epsilon at which every choosing step of the
    plan runs (from public facts: row counts, budgets, d, grid), and not 10% below it, and the share of the option
    paying for the refused steps when they are all that option's; each named value builds the plan."""
    import re
    from dataclasses import replace

    from dpmoments.multisite.location import AutoLocation

    def build(**changes):
        args = dict(dict(epsilon=1.0, delta=1e-6), **kwargs, **changes)
        return Plan.build("cape", [f"s{i}" for i in range(len(n))], n, n_features=d, **args)

    with pytest.raises(ValueError, match="too few rows") as info:
        build()
    text = str(info.value)
    assert "\n" not in text
    eps = float(re.search(r"every step of the plan runs from epsilon ([0-9.e+-]+)", text).group(1))
    assert build(epsilon=eps).steps
    with pytest.raises(ValueError, match="too few rows"):
        build(epsilon=0.9 * eps)
    share = re.search(r"or at this epsilon from ('bound_budget'|CenterBudget.location) ([0-9.e+-]+);", text)
    assert (share and share.group(1)) == option
    if option == "'bound_budget'":
        assert build(bound_budget=float(share.group(2))).steps
    elif option:
        assert build(center_budget=replace(AutoLocation(), share=float(share.group(2)))).steps


def test_a_refusal_with_budgets_per_site_names_one_factor_for_every_site():
    n, args = [5000, 5000], dict(row_norm="auto", delta=1e-6, n_features=3)
    with pytest.raises(ValueError, match="every site's epsilon is multiplied by") as info:
        Plan.build("cape", ["a", "b"], n, epsilon=[1.0, 2.0], **args)
    import re
    k = float(re.search(r"multiplied by ([0-9.e+-]+)", str(info.value)).group(1))
    assert Plan.build("cape", ["a", "b"], n, epsilon=[k, 2 * k], **args).auto is not None
    with pytest.raises(ValueError, match="too few rows"):
        Plan.build("cape", ["a", "b"], n, epsilon=[0.9 * k, 1.8 * k], **args)


def test_a_public_bound_plan_is_unchanged_by_the_bound_step_machinery():
    plan = Plan.build("cape", ["a", "b"], [100, 100], n_features=2, row_norm=1.0, epsilon=1.0, delta=1e-5)
    assert plan.auto is None and "auto" not in plan.to_dict() and plan.release_rounds == [0]
    with pytest.raises(ValueError, match="only to an 'auto' bound"):
        Plan.build("cape", ["a", "b"], [100, 100], n_features=2, row_norm=1.0, epsilon=1.0, delta=1e-5,
                   bound_budget=0.1)
    assert compose([plan.cost("a")]).epsilon == pytest.approx(1.0, rel=1e-6)


def test_the_ledger_file_records_the_bound_step_like_every_step(tmp_path):
    parts = _parts()
    sites = [Site(f"s{i}", X, row_norm="auto", ledger=tmp_path / f"s{i}.json") for i, X in enumerate(parts)]
    run_cape(sites, epsilon=EPS, delta=DELTA, rng=0, bound_budget=0.2)
    ledger = SiteLedger("s0", None, tmp_path / "s0.json")
    assert [step for _, step in ledger.answered] == [0, 1]


def test_a_plan_whose_histogram_rounds_do_not_match_its_auto_bounds_does_not_load():
    plan = Plan.build("cape", ["a", "b"], [20_000, 20_000], n_features=3, row_norm="auto", epsilon=EPS, delta=DELTA)
    data = plan.to_dict()
    data.pop("auto")
    with pytest.raises(ValueError, match="histogram rounds"):
        Plan.from_dict(data)
    data = plan.to_dict()
    data["rounds"][1]["step"] = 0
    with pytest.raises(ValueError, match="histogram rounds"):
        Plan.from_dict(data)


def test_a_bound_at_the_end_of_the_search_range_warns_and_is_reported():
    from dpmoments.exceptions import BoundWarning

    parts = [X * 1e4 for X in _parts()]  # norms in the tens of thousands, the range ends at 100
    with pytest.warns(BoundWarning, match="end of the search range"):
        rel, rep = run_cape(_sites(parts), epsilon=EPS, delta=DELTA, rng=0,
                            bound_budget=AutoBounds(("row_norm",), share=0.2, low=1e-2, high=100.0))
    assert rel.row_norm == pytest.approx(100.0) and rel.parts[0].released["at_range_end"]
