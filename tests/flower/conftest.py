"""The real Flower deployment on localhost that tests/flower shares: SuperLink + 3 SuperNodes, TLS, SuperNode auth.

A CA is generated in a temp dir; the SuperLink serves HTTPS with a certificate for 127.0.0.1;
three registered SuperNodes (``dpmoments site``, ECDSA keys registered with
``dpmoments aggregate --register``) each hold four share files (plans A, B, C and D) and a
budget of (3, 1e-4); a fourth site, whose key was never registered, is refused in one line. The test modules use it in
order: the honest and hostile runs (``test_flower_deployment.py``), then the fault drill
(``test_flower_faults.py``), which kills a site and, last, the SuperLink.

Every process runs in its own session and is torn down by PID (its process group); skipped
when flwr is not installed.
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from dpmoments.multisite import Plan, deal_files, deploy

D, R = 3, 1.0
SIZES = {"north": 200, "south": 300, "east": 250}


def cli(argv, env, check=True, timeout=170):
    """``dpmoments ARGV`` in a subprocess, as a user types it."""
    proc = subprocess.run([sys.executable, "-m", "dpmoments", *argv], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0 or not check, f"dpmoments {' '.join(argv)}: {proc.stdout}\n{proc.stderr}"
    return proc


def _plan(epsilon, ranges=None):
    return Plan.build("cape", tuple(SIZES), tuple(SIZES.values()), n_features=D, row_norm=R, epsilon=epsilon,
                      delta=1e-5, analysis="covariance", ranges=ranges)


@pytest.fixture(scope="package")
def deployment(tmp_path_factory):
    pytest.importorskip("flwr", reason="the Flower extra is not installed (pip install 'dpmoments[flower]')")
    pytest.importorskip("cryptography", reason="cryptography is needed to make the test CA")
    from dpmoments.multisite import tls

    tmp = tmp_path_factory.mktemp("flower")
    litter = set(Path(tempfile.gettempdir()).glob("dpmoments-flwr-*"))  # other programs' are not ours to judge
    rng = np.random.default_rng(0)
    data = {s: rng.normal(size=(n, D)) / 3 for s, n in SIZES.items()}
    # the honest run's plan carries a public range: each site maps its rows over the real Flower processes
    shares = {k: deal_files(_plan(eps, {0: (-1.0, 1.0)} if k == "A" else None), tmp / k, rng=seed)
              for k, eps, seed in (("A", 1.0, 1), ("B", 1.0, 2), ("C", 1.5, 3), ("D", 1.0, 4))}
    port = deploy.free_port()
    address = f"127.0.0.1:{port}"
    env = deploy.flwr_env(tmp / "flwr-home")
    env["PYTHONPATH"] = str(Path(__file__).parent) + ":" + env.get("PYTHONPATH", "")  # the hostile app's module
    cli(["aggregate", "--make-test-ca", str(tmp / "tls")], env)
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
        cli(["aggregate", *conn, *sum((["--register", f"{keys[s]}.pub"] for s in SIZES), [])], env)
        site_cmd, sites = {}, {}
        for k, (s, X) in enumerate(data.items()):
            np.save(tmp / f"{s}.npy", X)
            site_cmd[s] = [sys.executable, "-m", "dpmoments", "site", "--name", s, "--data", str(tmp / f"{s}.npy"),
                           *sum((["--share", str(shares[p][s])] for p in "ABCD"), []), "--budget", "3,1e-4",
                           "--state", str(tmp / f"state-{s}"), *conn, "--auth-key", str(keys[s]),
                           "--port", str(deploy.free_port()), "--seed", str(k)]
            sites[s] = start(s, site_cmd[s])
        stranger_key, _ = tls.make_node_key(tmp / "stranger_key")  # never registered: north's data, a foreign key
        cmd = site_cmd["north"]
        stranger = start("stranger", cmd[:cmd.index("--state")] + [
            "--state", str(tmp / "state-stranger"), *conn, "--auth-key", str(stranger_key),
            "--port", str(deploy.free_port())])
        yield dict(tmp=tmp, env=env, conn=conn, data=data, shares=shares, stranger=stranger, t0=t0, litter=litter,
                   link=link, sites=sites, site_cmd=site_cmd, start=start)
    finally:
        deploy.stop_process_groups(procs)
