"""The real Flower deployment on localhost that tests/flower shares: SuperLink + 3 SuperNodes, TLS, SuperNode auth.

A CA is generated in a temp dir; the SuperLink serves HTTPS with a certificate for 127.0.0.1;
three registered SuperNodes (``dpmoments site``, ECDSA keys registered with
``dpmoments aggregate --register``) each hold four share files (plans A, B, C and D) and a
budget of (3, 1e-4); a fourth site, whose key was never registered, is refused in one line. The test modules use it in
order: the honest and hostile runs (``test_flower_deployment.py``), then the fault drill
(``test_flower_faults.py``), which kills a site and, last, the SuperLink.

The deployment and the runs are :class:`tests.background.Steps` that start when collection ends and run in a
thread beside the other tests (their work is other processes', and the suite's one process leaves a core idle):
each test's step runs there, in the order above, and the test waits for its step and re-raises what the
step raised (a failed assertion, a skip), then checks in the test's own thread what needs this
process's warnings filters (the in-process reference run). Only the steps of the selected tests run.

Every process runs in its own session and is torn down by PID (its process group); skipped
when flwr is not installed.
"""

import atexit
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from dpmoments.multisite import Plan, deal_files, deploy

from ..background import Steps

D, R = 3, 1.0
SIZES = {"north": 200, "south": 300, "east": 250}


def cli(argv, env, check=True, timeout=170):
    """``dpmoments ARGV`` in a subprocess, as a user types it."""
    proc = subprocess.run([sys.executable, "-m", "dpmoments", *argv], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=tempfile.gettempdir())  # never a test's monkeypatched cwd
    assert proc.returncode == 0 or not check, f"dpmoments {' '.join(argv)}: {proc.stdout}\n{proc.stderr}"
    return proc


def _plan(epsilon, ranges=None):
    return Plan.build("cape", tuple(SIZES), tuple(SIZES.values()), n_features=D, row_norm=R, epsilon=epsilon,
                      delta=1e-5, analysis="covariance", ranges=ranges)


def _prepare(tmp):
    """What the deployment needs from this process (data, shares, keys): made before any test runs, so the
    thread's work is other processes' only. The environment is this moment's, never a test's monkeypatched one."""
    pytest.importorskip("cryptography", reason="cryptography is needed to make the test CA")
    from dpmoments.multisite import tls

    litter = set(Path(tempfile.gettempdir()).glob("dpmoments-flwr-*"))  # other programs' are not ours to judge
    rng = np.random.default_rng(0)
    data = {s: rng.normal(size=(n, D)) / 3 for s, n in SIZES.items()}
    # the honest run's plan carries a public range: each site maps its rows over the real Flower processes
    shares = {k: deal_files(_plan(eps, {0: (-1.0, 1.0)} if k == "A" else None), tmp / k, rng=seed)
              for k, eps, seed in (("A", 1.0, 1), ("B", 1.0, 2), ("C", 1.5, 3), ("D", 1.0, 4))}
    for s, X in data.items():
        np.save(tmp / f"{s}.npy", X)
    keys = {s: tls.make_node_key(tmp / f"{s}_key")[0] for s in SIZES}
    stranger_key, _ = tls.make_node_key(tmp / "stranger_key")  # never registered: north's data, a foreign key
    env = deploy.flwr_env(tmp / "flwr-home")
    env["PYTHONPATH"] = str(Path(__file__).parent) + ":" + env.get("PYTHONPATH", "")  # the hostile app's module
    procs = []
    atexit.register(deploy.stop_process_groups, procs)  # should the run end before the steps do
    return dict(tmp=tmp, env=env, data=data, shares=shares, litter=litter, keys=keys, stranger_key=stranger_key,
                procs=procs)


def _deploy(dep):
    """Start the SuperLink, register the sites' keys, start the three sites and the stranger."""
    tmp, env = dep["tmp"], dep["env"]
    port = deploy.free_port()
    address = f"127.0.0.1:{port}"
    cli(["aggregate", "--make-test-ca", str(tmp / "tls")], env)
    ca = tmp / "tls" / "ca.crt"
    procs = dep["procs"]

    def start(name, cmd):
        fh = open(tmp / f"{name}.log", "w")
        p = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp)
        procs.append(p)
        return p

    t0 = time.monotonic()
    link = start("superlink", deploy.superlink_command(port, certfile=tmp / "tls" / "server.pem",
                                                       keyfile=tmp / "tls" / "server.key", ca_certfile=ca))
    deploy.wait_for_port(port, link, timeout=30)
    conn = ["--superlink", address, "--root-certificates", str(ca)]
    keys = dep["keys"]
    cli(["aggregate", *conn, *sum((["--register", f"{keys[s]}.pub"] for s in SIZES), [])], env)
    site_cmd, sites = {}, {}
    for k, s in enumerate(SIZES):
        site_cmd[s] = [sys.executable, "-m", "dpmoments", "site", "--name", s, "--data", str(tmp / f"{s}.npy"),
                       *sum((["--share", str(dep["shares"][p][s])] for p in "ABCD"), []), "--budget", "3,1e-4",
                       "--state", str(tmp / f"state-{s}"), *conn, "--auth-key", str(keys[s]),
                       "--port", str(deploy.free_port()), "--seed", str(k)]
        sites[s] = start(s, site_cmd[s])
    cmd = site_cmd["north"]
    stranger = start("stranger", cmd[:cmd.index("--state")] + [
        "--state", str(tmp / "state-stranger"), *conn, "--auth-key", str(dep["stranger_key"]),
        "--port", str(deploy.free_port())])
    dep.update(conn=conn, stranger=stranger, t0=t0, link=link, sites=sites, site_cmd=site_cmd, start=start)


def _stop(dep):
    deploy.stop_process_groups(dep["procs"])


SCENARIO = Steps("flower", _prepare, _deploy, _stop)
