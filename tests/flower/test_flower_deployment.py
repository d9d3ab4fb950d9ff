"""The honest and hostile runs on the real Flower deployment (``conftest.py``: SuperLink + 3 SuperNodes, TLS, auth).

* the honest run of plan A (``dpmoments aggregate``, its ``--out`` a path with a quote and a
  space) must give exactly the bytes the same plan, shares and seeds give in process;
* a hostile ServerApp repeats, replays and re-plans queries of plan B and asks for plan C
  beyond the sites' budget: it gets one answer per share, and each site's ledger says why;
* a run that could only abort exits non-zero and leaves the earlier result intact (the ServerApp's own
  aborts take the same path as gRPC's: ``tests/multisite/test_aggregate.py``).

About 40 s with the deployment's start, beside the other tests (``conftest.py``).
"""

import json
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower extra is not installed (pip install 'dpmoments[flower]')")

from dpmoments.estimators import PrivateCovariance  # noqa: E402
from dpmoments.multisite import InProcessTransport, Plan, Site, deploy, read_bundle, run_plan  # noqa: E402
from dpmoments.multisite.analyses import finish_analysis  # noqa: E402

from .conftest import SCENARIO, SIZES, cli  # noqa: E402

pytestmark = pytest.mark.slow


def _in_process(tmp, data, shares, plan_key):
    """The same plan, shares and seeds, in this process."""
    plan = Plan.from_json((tmp / plan_key / "plan.json").read_text())
    sites = []
    for k, (s, X) in enumerate(data.items()):
        site = Site(s, X)
        site.accept(read_bundle(shares[plan_key][s], s), rng=np.random.SeedSequence([k, "ABC".index(plan_key)]),
                    throwaway=True)  # a recomputation of the deployed run, in process
        sites.append(site)
    return finish_analysis(plan, run_plan(plan, InProcessTransport(sites), rng=7))[0]  # in the columns' units


@SCENARIO.step("test_honest_run_gives_the_in_process_bytes")
def _honest_run_gives_the_in_process_bytes(deployment):
    tmp, env, conn = deployment["tmp"], deployment["env"], deployment["conn"]
    out = tmp / "o'brien result"
    run = cli(["aggregate", *conn, "--plan", str(tmp / "A" / "plan.json"), "--out", str(out), "--wait", "60",
                "--timeout", "60", "--seed", "7"], env, check=False)
    elapsed = time.monotonic() - deployment["t0"]
    assert run.returncode == 0, (f"rc={run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n"
                                 f"{(tmp / 'north.log').read_text(errors='replace')[-3000:]}")
    got = np.load(out / "covariance.npy")
    report = json.loads((out / "privacy_report.json").read_text())
    assert report["privacy"]["guarantee_detail"]["epsilon"] == pytest.approx(1.0, rel=1e-6)
    assert report["protocol"]["dropped"] == [] and report["plan"]["run_id"]
    assert "against the aggregator" in run.stdout and "per-site claim" in run.stdout
    assert deployment["stranger"].wait(timeout=30) == 2  # its SuperNode refused: one line, no retry (no old session)
    said = (tmp / "stranger.log").read_text(errors="replace").strip().splitlines()[-1]
    assert said.startswith("dpmoments site: error: the SuperLink refused this site's key") and \
        "register its public key" in said
    link_log = (tmp / "superlink.log").read_text(errors="replace")
    assert "No SuperNode found with the given public key" in link_log
    assert link_log.count("[Fleet.ActivateNode] Activated") == len(SIZES)
    # the same plan, shares and seeds in this process: left to the test, whose thread may touch warnings filters
    return got, (deployment["tmp"], deployment["data"], deployment["shares"]), elapsed


@pytest.mark.prestart(SCENARIO)
def test_honest_run_gives_the_in_process_bytes():
    got, deployment, elapsed = SCENARIO.outcome("test_honest_run_gives_the_in_process_bytes")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = PrivateCovariance(epsilon=1, delta=1e-6, row_norm=1, psd_floor=0.0).fit_release(
            _in_process(*deployment, "A"))
    np.testing.assert_array_equal(got, ref.covariance_)
    print(f"deployment up and first run done in {elapsed:.1f}s")


@SCENARIO.step("test_hostile_server_app_gets_one_answer_per_share")
def _hostile_server_app_gets_one_answer_per_share(deployment):
    tmp, env = deployment["tmp"], deployment["env"]
    fab = deploy.write_fab(tmp / "hostile-fab")
    text = (fab / "pyproject.toml").read_text().replace("dpmoments.cli._serverapp:app", "hostile_app:app")
    (fab / "pyproject.toml").write_text(text.replace('request = ""', 'plan = ""\nother-plan = ""\nout = ""'))
    config = deploy.write_toml(tmp / "hostile.toml", {"plan": tmp / "B" / "plan.json",
                                                      "other-plan": tmp / "C" / "plan.json",
                                                      "out": tmp / "hostile.json"})
    home = tmp / "hostile-home"
    deploy.write_flwr_config(home, deployment["conn"][1], root_certificates=deployment["conn"][3])
    env = dict(deploy.flwr_env(home, base=env))
    proc = deploy.run_flwr(deploy.run_command(fab, config), env, timeout=300, check=False)
    assert (tmp / "hostile.json").exists(), f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    log = json.loads((tmp / "hostile.json").read_text())
    # north was asked again, south got its first query replayed, east was asked for a plan nobody dealt
    refused = {"north": "already-answered", "south": "already-answered", "east": "plan-unknown"}
    assert log == {s: ["reply", refused[s], "over-budget"] for s in SIZES}  # one answer per share
    plan_b = Plan.from_json((tmp / "B" / "plan.json").read_text())
    for s in SIZES:
        ledger = json.loads((tmp / f"state-{s}" / "ledger.json").read_text())
        assert [plan_b.digest, 0] in ledger["answered"]
        assert [r["reason"] for r in ledger["refusals"]][-2:] == [refused[s], "over-budget"]


@SCENARIO.step("test_aborted_run_exits_non_zero_and_keeps_the_old_result")
def _aborted_run_exits_non_zero_and_keeps_the_old_result(deployment):
    tmp, env, conn = deployment["tmp"], deployment["env"], deployment["conn"]
    out = tmp / "o'brien result"
    if not (out / "covariance.npy").exists():
        pytest.skip("needs the honest run's result")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    run = cli(["aggregate", *conn, "--plan", str(tmp / "A" / "plan.json"), "--out", str(out), "--force",
                "--min-sites", "4"], env, check=False)
    assert run.returncode == 2 and "--min-sites 4 exceeds" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp.iterdir() if p.name.startswith(".dpmoments-tmp-")]
    assert set(Path(tempfile.gettempdir()).glob("dpmoments-flwr-*")) <= deployment["litter"]
    shutil.rmtree(tmp / "hostile-home", ignore_errors=True)


@pytest.mark.prestart(SCENARIO)
def test_hostile_server_app_gets_one_answer_per_share():
    SCENARIO.outcome("test_hostile_server_app_gets_one_answer_per_share")


@pytest.mark.prestart(SCENARIO)
def test_aborted_run_exits_non_zero_and_keeps_the_old_result():
    SCENARIO.outcome("test_aborted_run_exits_non_zero_and_keeps_the_old_result")
