"""Flower deployment overhead against the in-process engine (issue 7).

Target: the real localhost deployment costs a fixed overhead (<= 30 s) over
:func:`dpmoments.multisite.run_cape` in process, one that does not grow with n.

For each n per site (3 sites, d = 10) the same data go through

* ``run_cape`` in process (the sites' arrays in memory), and
* a real deployment on 127.0.0.1, started exactly as ``tests/flower/test_flower_deployment.py`` does:
  a test CA, ``flower-superlink`` with TLS and SuperNode auth, three ``dpmoments site`` SuperNodes
  (registered ECDSA keys, each reading its own ``.npy`` and share file) and ``dpmoments aggregate``
  (``flwr run`` of the dpmoments FAB). Timed from starting the SuperLink to the result on disk.
  Every process runs in its own session and is torn down by PID (its process group) in a ``finally``.

Overhead = deployment - in process. Setup that a real deployment does once, outside the run (the CA,
the keys' generation, dealing the shares, writing the sites' data), is done before the clock starts.
flwr and cryptography are imported lazily: ``python -m benchmarks --list`` works without them.
"""

import math
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from .timing import Table, log

SITES = ("north", "south", "east")
D = 10
R = 1.0
EPSILON, DELTA = 1.0, 1e-5
SIZES = (1_000, 100_000)
QUICK_SIZES = (1_000,)
REPEATS = 2       # deployments per n (the best is kept); quick: 1


def _cli(argv, env, timeout=300):
    proc = subprocess.run([sys.executable, "-m", "dpmoments", *argv], env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"dpmoments {' '.join(argv[:2])} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    return {s: rng.normal(size=(n, D)) / math.sqrt(D) for s in SITES}


def _in_process(data):
    from dpmoments.estimators import PrivateCovariance
    from dpmoments.multisite import Site, run_cape

    t0 = time.perf_counter()
    out = run_cape([Site(s, X, row_norm=R) for s, X in data.items()], epsilon=EPSILON, delta=DELTA, rng=0)
    PrivateCovariance(epsilon=EPSILON, delta=DELTA, row_norm=R, psd_floor=0.0).fit_release(out.release)  # as aggregate
    return time.perf_counter() - t0, out


def _deployment(data, tmp):
    """One real localhost deployment; returns ``(seconds e2e, seconds of the run alone, result)``."""
    from dpmoments.multisite import Plan, deal_files, deploy

    tmp = Path(tmp)
    n = next(iter(data.values())).shape[0]
    plan = Plan.build("cape", SITES, tuple(X.shape[0] for X in data.values()), n_features=D, row_norm=R,
                      epsilon=EPSILON, delta=DELTA, analysis="covariance")
    shares = deal_files(plan, tmp / "shares", rng=1)
    env = deploy.flwr_env(tmp / "flwr-home")
    env["OPENBLAS_NUM_THREADS"] = "1"
    _cli(["aggregate", "--make-test-ca", str(tmp / "tls")], env)
    tls = {k: tmp / "tls" / f for k, f in (("ca", "ca.crt"), ("cert", "server.pem"), ("key", "server.key"))}
    keys = {}
    for s, X in data.items():
        np.save(tmp / f"{s}.npy", X)
        _cli(["site", "--make-key", str(tmp / f"{s}_key")], env)
        keys[s] = tmp / f"{s}_key"
    port = deploy.free_port()
    address = f"127.0.0.1:{port}"
    conn = ["--superlink", address, "--root-certificates", str(tls["ca"])]
    procs = []

    def start(name, cmd):
        fh = open(tmp / f"{name}.log", "w")
        p = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp)
        fh.close()
        procs.append(p)
        return p

    out = tmp / "result"
    try:
        t0 = time.perf_counter()
        link = start("superlink", deploy.superlink_command(port, certfile=tls["cert"], keyfile=tls["key"],
                                                           ca_certfile=tls["ca"]))
        deploy.wait_for_port(port, link, timeout=60)
        _cli(["aggregate", *conn, *sum((["--register", f"{keys[s]}.pub"] for s in SITES), [])], env)
        for k, s in enumerate(SITES):
            start(s, [sys.executable, "-m", "dpmoments", "site", "--name", s, "--data", str(tmp / f"{s}.npy"),
                      "--share", str(shares[s]), "--state", str(tmp / f"state-{s}"), *conn, "--auth-key",
                      str(keys[s]), "--port", str(deploy.free_port()), "--seed", str(k)])
        t_run = time.perf_counter()
        _cli(["aggregate", *conn, "--plan", str(shares["plan"]), "--out", str(out), "--wait", "120",
              "--timeout", "300", "--no-figures"], env, timeout=600)
        t1 = time.perf_counter()
        if not (out / "covariance.npy").exists():
            raise RuntimeError(f"no result for n = {n}: {(tmp / 'superlink.log').read_text()[-3000:]}")
        result = np.load(out / "covariance.npy")
    finally:
        deploy.stop_process_groups(procs)
    return t1 - t0, t1 - t_run, result


def run(quick=False):
    """Flower localhost deployment (TLS, SuperNode auth) vs run_cape in process: fixed overhead vs n."""
    for mod in ("flwr", "cryptography"):
        __import__(mod)  # fail early, with the usual ImportError, if the extra is missing
    from dpmoments.exceptions import NotPrivateWarning

    sizes = QUICK_SIZES if quick else SIZES
    repeats = 1 if quick else REPEATS
    table = Table(
        f"CAPE second moment, {len(SITES)} sites, d = {D}: real Flower deployment on localhost vs in process",
        ["n per site", "in process `run_cape` (s)", "deployment end to end (s)", "of which `dpmoments aggregate` "
         "(flwr run) (s)", "overhead = deployment − in process (s)", "largest entry of abs(released − pooled unclipped XᵀX/N)"],
    )
    overheads = []
    for n in sizes:
        data = _data(n)
        best_local, best_e2e, best_run, worst_diff = math.inf, math.inf, math.inf, 0.0
        for k in range(repeats):
            log(f"flower_overhead: n = {n} per site, round {k + 1}/{repeats}: in process")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NotPrivateWarning)
                local, ref = _in_process(data)
            log(f"flower_overhead: n = {n} per site, round {k + 1}/{repeats}: localhost deployment")
            with tempfile.TemporaryDirectory(prefix="dpmoments-flower-bench-") as tmp:
                e2e, run_s, got = _deployment(data, tmp)
            # noise differs (other seeds); both must estimate the same pooled second moment
            pooled = sum(X.T @ X for X in data.values()) / (len(SITES) * n)
            worst_diff = max(worst_diff, float(np.max(np.abs(got - pooled))),
                             float(np.max(np.abs(ref.release.second_moment - pooled))))
            best_local, best_e2e, best_run = min(best_local, local), min(best_e2e, e2e), min(best_run, run_s)
        overheads.append(best_e2e - best_local)
        table.rows.append([f"{n:,}", f"{best_local:.3f}", f"{best_e2e:.1f}", f"{best_run:.1f}",
                           f"{best_e2e - best_local:.1f}", f"{worst_diff:.2g}"])
    table.notes += [
        f"Best of {repeats} deployment(s) per n (a fresh SuperLink, 3 SuperNodes and `flwr run` each), best of the "
        f"same number of in-process calls; epsilon = {EPSILON}, delta = {DELTA}, R = {R}, rows of norm about 1.",
        "Deployment clock: from starting `flower-superlink` (TLS, `--enable-supernode-auth`) through "
        "`dpmoments aggregate --register` (3 keys), starting 3 `dpmoments site` SuperNodes, to "
        "`dpmoments aggregate --plan --no-figures` returning with the result on disk (the covariance analysis fitted "
        "to the release and its privacy report, written atomically; the in-process column fits the same). Not "
        "timed: the test CA, the node keys, dealing the shares, writing each site's `.npy`, and the teardown.",
        "Last column: over both paths (different noise draws), a sanity check that both released the pooled "
        "second moment; it is dominated by the clipping bias (R = 1 clips about half the rows), not the noise.",
    ]
    if len(overheads) > 1:
        table.notes.append(f"Overhead change from n = {sizes[0]:,} to n = {sizes[-1]:,} per site: "
                           f"{overheads[-1] - overheads[0]:+.1f} s.")
    return [table]
