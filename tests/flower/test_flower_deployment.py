"""A real Flower deployment on localhost: SuperLink + 3 SuperNodes, TLS and SuperNode auth, one fixture for all.

A CA is generated in a temp dir; the SuperLink serves HTTPS with a certificate for 127.0.0.1;
three registered SuperNodes (``dpmoments site``, ECDSA keys registered with
``dpmoments aggregate --register``) each hold three share files (plans A, B and C) and a
budget; a fourth, unregistered SuperNode is refused. Then:

* the honest run of plan A (``dpmoments aggregate``, its ``--out`` a path with a quote and a
  space) must give exactly the bytes the same plan, shares and seeds give in process;
* a hostile ServerApp repeats, replays and re-plans queries of plan B and asks for plan C
  beyond the sites' budget: it gets one answer per share, and each site's ledger says why;
* a run that could only abort exits non-zero and leaves the earlier result intact (the ServerApp's own
  aborts take the same path as gRPC's: ``tests/multisite/test_aggregate.py``).

Every process runs in its own session and is torn down by PID (its process group). About 40 s;
skipped when flwr is not installed.
"""

import json
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower extra is not installed (pip install 'dpmoments[flower]')")
pytest.importorskip("cryptography", reason="cryptography is needed to make the test CA")

from dpmoments.estimators import PrivateCovariance  # noqa: E402
from dpmoments.multisite import InProcessTransport, Plan, Site, deal_files, read_bundle, run_plan  # noqa: E402
from dpmoments.multisite import deploy, tls  # noqa: E402

pytestmark = pytest.mark.slow

D, R = 3, 1.0
SIZES = {"north": 200, "south": 300, "east": 250}


def _cli(argv, env, check=True, timeout=170):
    """``dpmoments ARGV`` in a subprocess, as a user types it."""
    proc = subprocess.run([sys.executable, "-m", "dpmoments", *argv], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0 or not check, f"dpmoments {' '.join(argv)}: {proc.stdout}\n{proc.stderr}"
    return proc


def _plan(epsilon):
    return Plan.build("cape", tuple(SIZES), tuple(SIZES.values()), n_features=D, row_norm=R, epsilon=epsilon,
                      delta=1e-5, analysis="covariance")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("flower")
    litter = set(Path(tempfile.gettempdir()).glob("dpmoments-flwr-*"))  # other programs' are not ours to judge
    rng = np.random.default_rng(0)
    data = {s: rng.normal(size=(n, D)) / 3 for s, n in SIZES.items()}
    shares = {k: deal_files(_plan(eps), tmp / k, rng=seed) for k, eps, seed in (("A", 1.0, 1), ("B", 1.0, 2),
                                                                                 ("C", 1.5, 3))}
    port = deploy.free_port()
    address = f"127.0.0.1:{port}"
    env = deploy.flwr_env(tmp / "flwr-home")
    env["PYTHONPATH"] = str(Path(__file__).parent) + ":" + env.get("PYTHONPATH", "")  # the hostile app's module
    _cli(["aggregate", "--make-test-ca", str(tmp / "tls")], env)
    ca = tmp / "tls" / "ca.crt"
    procs = []

    def start(name, cmd):
        fh = open(tmp / f"{name}.log", "w")
        p = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp)
        procs.append(p)
        return p

    try:
        t0 = time.monotonic()
        link = start("superlink", deploy.superlink_command(port, certfile=tmp / "tls" / "server.pem",
                                                           keyfile=tmp / "tls" / "server.key", ca_certfile=ca))
        deploy.wait_for_port(port, link, timeout=30)
        conn = ["--superlink", address, "--root-certificates", str(ca)]
        keys = {s: tls.make_node_key(tmp / f"{s}_key")[0] for s in SIZES}
        _cli(["aggregate", *conn, *sum((["--register", f"{keys[s]}.pub"] for s in SIZES), [])], env)
        for k, (s, X) in enumerate(data.items()):
            np.save(tmp / f"{s}.npy", X)
            start(s, [sys.executable, "-m", "dpmoments", "site", "--name", s, "--data", str(tmp / f"{s}.npy"),
                      *sum((["--share", str(shares[p][s])] for p in "ABC"), []), "--budget", "2,1e-4",
                      "--state", str(tmp / f"state-{s}"), *conn, "--auth-key", str(keys[s]),
                      "--port", str(deploy.free_port()), "--seed", str(k)])
        stranger_key, _ = tls.make_node_key(tmp / "stranger_key")  # never registered
        deploy.write_toml(tmp / "stranger.toml", {"site-socket": tmp / "nowhere.sock"})
        stranger = start("stranger", deploy.supernode_command(
            address, str(tmp / "stranger.toml"), port=deploy.free_port(), root_certificates=ca,
            private_key=stranger_key, max_retries=0))
        yield dict(tmp=tmp, env=env, conn=conn, data=data, shares=shares, stranger=stranger, t0=t0, litter=litter)
    finally:
        deploy.stop_process_groups(procs)


def _in_process(deployment, plan_key):
    """The same plan, shares and seeds, in this process."""
    tmp, data, shares = deployment["tmp"], deployment["data"], deployment["shares"]
    plan = Plan.from_json((tmp / plan_key / "plan.json").read_text())
    sites = []
    for k, (s, X) in enumerate(data.items()):
        site = Site(s, X)
        site.accept(read_bundle(shares[plan_key][s], s), rng=np.random.SeedSequence([k, "ABC".index(plan_key)]))
        sites.append(site)
    return run_plan(plan, InProcessTransport(sites), rng=7).releases[0]


def test_honest_run_gives_the_in_process_bytes(deployment):
    tmp, env, conn = deployment["tmp"], deployment["env"], deployment["conn"]
    out = tmp / "o'brien result"
    run = _cli(["aggregate", *conn, "--plan", str(tmp / "A" / "plan.json"), "--out", str(out), "--wait", "60",
                "--timeout", "60", "--seed", "7"], env, check=False)
    elapsed = time.monotonic() - deployment["t0"]
    assert run.returncode == 0, (f"rc={run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n"
                                 f"{(tmp / 'north.log').read_text(errors='replace')[-3000:]}")
    got = np.load(out / "covariance.npy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = PrivateCovariance(epsilon=1, delta=1e-6, row_norm=1, psd_floor=0.0).fit_release(
            _in_process(deployment, "A"))
    np.testing.assert_array_equal(got, ref.covariance_)
    report = json.loads((out / "privacy_report.json").read_text())
    assert report["privacy"]["guarantee_detail"]["epsilon"] == pytest.approx(1.0, rel=1e-6)
    assert report["protocol"]["dropped"] == [] and report["plan"]["run_id"]
    assert "against the aggregator" in run.stdout and "per-site claim" in run.stdout
    deployment["stranger"].wait(timeout=30)
    link_log = (tmp / "superlink.log").read_text(errors="replace")
    assert "No SuperNode found with the given public key" in link_log
    assert link_log.count("[Fleet.ActivateNode] Activated") == len(SIZES)
    print(f"deployment up and first run done in {elapsed:.1f}s")


def test_hostile_server_app_gets_one_answer_per_share(deployment):
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


def test_aborted_run_exits_non_zero_and_keeps_the_old_result(deployment):
    tmp, env, conn = deployment["tmp"], deployment["env"], deployment["conn"]
    out = tmp / "o'brien result"
    if not (out / "covariance.npy").exists():
        pytest.skip("needs the honest run's result")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    run = _cli(["aggregate", *conn, "--plan", str(tmp / "A" / "plan.json"), "--out", str(out), "--force",
                "--min-sites", "4"], env, check=False)
    assert run.returncode == 2 and "--min-sites 4 exceeds" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp.iterdir() if p.name.startswith(".dpmoments-tmp-")]
    assert set(Path(tempfile.gettempdir()).glob("dpmoments-flwr-*")) <= deployment["litter"]
    shutil.rmtree(tmp / "hostile-home", ignore_errors=True)
