"""Collusion is an assumption the operator sees (issue 29): the plan and the run's report show the guarantee against
the aggregator alone and with every other site colluding, and which the deal assumed."""

import json

import pytest

from dpmoments.multisite import Plan, run_cape
from dpmoments.privacy import ApproxDP

from ..cli.helpers import in_process
from .conftest import make_sites

FIVE = "a=200,b=200,c=200,d=200,e=200"


def test_the_plan_prices_the_assumption(tmp_path, capsys):
    res = in_process(capsys)("noise-generator", "--uncentred", "--sites", FIVE, "--n-features", 3, "--epsilon", 1, "--delta", "1e-6",
                             "--row-norm", 1, "--seed", 0, "--out", tmp_path / "shares")
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("collusion:"))
    assert "assumed 0 colluding site(s)" in line and "if all 4 other site(s) collude with it" in line
    assert "delete the share files" in res.stdout  # the dealer's own copies are the ones a site cannot see
    text = (tmp_path / "shares" / "plan.json").read_text()
    shown = json.loads(text)["collusion"]
    assert shown["assumed_colluders"] == 0 and shown["other_sites"] == 4
    alone, all_others = shown["against_aggregator_alone"], shown["against_aggregator_and_all_other_sites"]
    assert alone["epsilon"] == pytest.approx(1.0, rel=1e-6)  # calibrated to meet the budget with 0 colluders
    assert 1.5 < all_others["epsilon"] < 2.5 and all_others["delta"] == alone["delta"] == 1e-6
    plan = Plan.from_json(text)  # the reading aid is not part of the plan: it loads, with its digest
    assert json.loads(text)["collusion"] == json.loads(json.dumps(shown))
    assert plan.collusion["all_other_sites"][1].epsilon == pytest.approx(all_others["epsilon"])


def test_more_assumed_colluders_show_what_they_bought():
    plan = Plan.build("cape", list("abcde"), [200] * 5, n_features=3, row_norm=1.0, epsilon=1.0, delta=1e-6,
                      colluders=4)
    c = plan.collusion
    assert c["assumed"] == 4 and c["all_other_sites"][1].epsilon == pytest.approx(1.0, rel=1e-6)
    assert c["aggregator_alone"].epsilon < 1.0


def test_the_run_report_carries_both_guarantees():
    release, report = run_cape(make_sites(5), epsilon=1.0, delta=1e-6, rng=0)
    shown = report.to_dict()["collusion"]
    assert shown["assumed_colluders"] == 0
    assert shown["against_aggregator_alone"]["epsilon"] == pytest.approx(release.guarantee.epsilon, rel=1e-6)
    assert shown["against_aggregator_and_all_other_sites"]["epsilon"] > 1.5
    assert isinstance(report.collusion["aggregator_alone"], ApproxDP)


def test_simulate_prints_and_reports_the_collusion(tmp_path, capsys):
    import numpy as np

    rng = np.random.default_rng(0)
    paths = []
    for s in "abc":
        np.savetxt(tmp_path / f"{s}.csv", rng.normal(size=(300, 3)) / 3, delimiter=",", header="x,y,z",
                   comments="")
        paths.append(str(tmp_path / f"{s}.csv"))
    res = in_process(capsys)("simulate", "--uncentred", *paths, "--epsilon", 1, "--delta", "1e-6", "--row-norm", 1, "--seed", 0,
                             "--out", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert "if all 2 other site(s) collude with it" in res.stdout
    rep = json.loads((tmp_path / "out" / "privacy_report.json").read_text())
    assert rep["privacy"]["collusion"]["assumed_colluders"] == 0
