"""A real Flower deployment on localhost: SuperLink + 3 SuperNodes, TLS and SuperNode auth.

A CA is generated in a temp dir; the SuperLink serves HTTPS with a certificate for
127.0.0.1; three registered SuperNodes (ECDSA keys registered with
``flwr supernode register``) each point at their own data and share file through
``--node-config``; a fourth, unregistered, SuperNode is refused. ``flwr run`` submits
the dpmoments FAB; the result must equal :func:`run_cape`'s (noise off: exactly).
Every process is started in its own session and torn down by PID (its process group)
in a ``finally``. About 30 s; skipped when flwr is not installed.
"""

import json
import math
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower extra is not installed (pip install 'dpmoments[flower]')")
pytest.importorskip("cryptography", reason="cryptography is needed to make the test CA")

from dpmoments.distributed import Site, run_cape  # noqa: E402
from dpmoments.exceptions import NotPrivateWarning  # noqa: E402
from dpmoments.flower import FlowerPlan, deal_shares  # noqa: E402
from dpmoments.flower import deploy  # noqa: E402

pytestmark = pytest.mark.slow

D, R = 3, 1.0
SIZES = {"north": 200, "south": 300, "east": 250}


def _cli(argv, env, check=True):
    """``dpmoments ARGV`` in a subprocess, as a user types it."""
    proc = subprocess.run([sys.executable, "-m", "dpmoments", *argv], env=env, capture_output=True, text=True,
                          timeout=170)
    assert proc.returncode == 0 or not check, f"dpmoments {' '.join(argv)}: {proc.stdout}\n{proc.stderr}"
    return proc


def _log(tmp_path, name):
    return (tmp_path / f"{name}.log").read_text(errors="replace")[-3000:]


def test_localhost_deployment_tls_auth(tmp_path):
    rng = np.random.default_rng(0)
    data = {s: rng.normal(size=(n, D)) / 3 for s, n in SIZES.items()}
    plan = FlowerPlan(tuple(SIZES), tuple(SIZES.values()), D, math.inf, 1e-5, R)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        shares = deal_shares(plan, tmp_path / "shares", rng=1)
    tls = {k: tmp_path / "tls" / f for k, f in (("ca", "ca.crt"), ("cert", "server.pem"), ("key", "server.key"))}
    port = deploy.free_port()
    address = f"127.0.0.1:{port}"
    env = deploy.flwr_env(tmp_path / "flwr-home")
    _cli(["aggregate", "--make-test-ca", str(tmp_path / "tls")], env)
    procs = []

    def start(name, cmd):
        fh = open(tmp_path / f"{name}.log", "w")
        p = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                             cwd=tmp_path)
        procs.append(p)
        return p

    try:
        t0 = time.monotonic()
        link = start("superlink", deploy.superlink_command(port, certfile=tls["cert"], keyfile=tls["key"],
                                                           ca_certfile=tls["ca"]))
        deploy.wait_for_port(port, link, timeout=30)
        conn = ["--superlink", address, "--root-certificates", str(tls["ca"])]
        keys = {}
        for s, X in data.items():
            np.save(tmp_path / f"{s}.npy", X)
            _cli(["site", "--make-key", str(tmp_path / f"{s}_key")], env)
            keys[s] = tmp_path / f"{s}_key"
        _cli(["aggregate", *conn, *sum((["--register", f"{keys[s]}.pub"] for s in SIZES), [])], env)
        for k, s in enumerate(SIZES):
            start(s, [sys.executable, "-m", "dpmoments", "site", "--name", s, "--data", str(tmp_path / f"{s}.npy"),
                      "--share", str(shares[s]), *conn, "--auth-key", str(keys[s]), "--port", str(deploy.free_port()),
                      "--seed", str(k)])
        stranger_key, _ = deploy.make_node_key(tmp_path / "stranger_key")  # never registered
        stranger = start("stranger", deploy.supernode_command(
            address, deploy.node_config_string("north", tmp_path / "north.npy", shares["north"]),
            port=deploy.free_port(), root_certificates=tls["ca"], private_key=stranger_key, max_retries=0))
        out = tmp_path / "result"
        run = _cli(["aggregate", *conn, "--plan", str(shares["plan"]), "--out", str(out), "--wait", "60",
                    "--timeout", "60"], env, check=False)
        elapsed = time.monotonic() - t0
        assert (out / "second_moment.npy").exists(), (
            f"no result; dpmoments aggregate rc={run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n"
            f"superlink: {_log(tmp_path, 'superlink')}\nnorth: {_log(tmp_path, 'north')}")
        got = np.load(out / "second_moment.npy")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            ref = run_cape([Site(s, X, row_norm=R) for s, X in data.items()], epsilon=math.inf, delta=1e-5)
        np.testing.assert_allclose(got, ref.release.second_moment, rtol=0, atol=1e-15)
        report = json.loads((out / "report.json").read_text())
        assert report["plan_digest"] == plan.digest and report["report"]["dropped"] == []
        assert report["release"]["n"] == sum(SIZES.values())
        # the unregistered node was refused and never took part
        try:
            stranger.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        link_log = (tmp_path / "superlink.log").read_text(errors="replace")
        assert "ApiError:2004" in link_log and "No SuperNode found with the given public key" in link_log
        assert link_log.count("[Fleet.ActivateNode] Activated") == len(SIZES)
        print(f"deployment e2e {elapsed:.1f}s; unregistered node refused (2004), rc={stranger.poll()}")
    finally:
        deploy.stop_process_groups(procs)
