"""The gRPC transport from the command line: noise generator, three sites and the aggregator as real processes.

Mutual TLS with a throw-away CA (``dpmoments aggregate --make-test-ca --site-certs``); the result must be
the bytes the same plan, shares and seeds give in process. About 10 s each, run beside the other tests (the
processes' work, in a thread: ``tests/background.py``); the sites end with their run.
"""

import atexit
import json
import subprocess
import sys
import tempfile

import numpy as np
import pytest

pytest.importorskip("grpc", reason="grpcio is not installed")
pytest.importorskip("cryptography", reason="cryptography is needed to make the test CA")

from dpmoments.estimators import PrivateCovariance  # noqa: E402
from dpmoments.multisite import InProcessTransport, Plan, Site, deploy, read_bundle, run_plan  # noqa: E402
from dpmoments.multisite.analyses import finish_analysis  # noqa: E402

from ..background import Steps  # noqa: E402
from ..cli.helpers import ENV  # noqa: E402

pytestmark = pytest.mark.slow

SIZES = {"north": 200, "south": 300, "east": 250}


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "dpmoments", *map(str, argv)], capture_output=True, text=True,
                          env=ENV, timeout=120, cwd=tempfile.gettempdir())


# a public bound; or one chosen across sites by the plan's bound step (a large epsilon: 750 rows in all); or that
# and a private centre (location steps and a mean round before and beside the moment) with public ranges for two
# columns: each site maps its rows, and the third column gets a private scale (the queries carry the scales read
# off the location steps' histograms)
PRIVACY = {"public": ("--epsilon", 1, "--row-norm", 1, "--uncentred"),
           "auto": ("--epsilon", 20, "--row-norm", "auto", "--bound-share", 0.5, "--uncentred"),
           "center": ("--epsilon", 40, "--row-norm", "auto", "--bound-share", 0.3, "--center", "private",
                      "--location-share", 0.3, "--ranges", "x0=-2:2,x2=-1:1")}


def _prepare(tmp):
    rng = np.random.default_rng(0)
    data = {s: rng.normal(size=(n, 3)) / 3 for s, n in SIZES.items()}
    for s, X in data.items():
        np.savetxt(tmp / f"{s}.csv", X, delimiter=",", header="a,b,c", comments="")
    return tmp


def _make_ca(tmp):
    res = _cli("aggregate", "--make-test-ca", tmp / "tls", "--site-certs", ",".join(SIZES))
    assert res.returncode == 0, res.stderr


# the deployments run beside the other tests (tests/background.py): their work is other processes'
DEPLOYMENTS = Steps("grpc-cli", _prepare, _make_ca)


def _deployment(bound):
    """Noise generator, three sites and the aggregator for this bound, in ``tmp/bound``: the aggregator's stdout."""
    def run(tmp):
        here = tmp / bound
        here.mkdir()
        sites = ",".join(f"{s}={n}" for s, n in SIZES.items())
        res = _cli("noise-generator", "--sites", sites, "--n-features", 3, *PRIVACY[bound], "--delta", "1e-5",
                   "--seed", 3, "--out", here / "shares")
        assert res.returncode == 0 and "against the aggregator" in res.stdout, res.stderr
        tls = tmp / "tls"
        port = deploy.free_port()
        procs = []
        atexit.register(deploy.stop_process_groups, procs)  # should the test run end first (its thread is a daemon)
        try:
            for k, s in enumerate(SIZES):
                argv = ["site", "--name", s, "--data", tmp / f"{s}.csv", "--share", here / "shares" / f"{s}.npz",
                        "--state", here / f"state-{s}", "--transport", "grpc", "--aggregator", f"127.0.0.1:{port}",
                        "--root-certificates", tls / "ca.crt", "--cert", tls / f"{s}.pem", "--key", tls / f"{s}.key",
                        "--seed", k]
                procs.append(subprocess.Popen([sys.executable, "-m", "dpmoments", *map(str, argv)], env=ENV,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                              start_new_session=True, cwd=tmp))
            res = _cli("aggregate", "--transport", "grpc", "--listen", f"127.0.0.1:{port}", "--cert",
                       tls / "server.pem", "--key", tls / "server.key", "--root-certificates", tls / "ca.crt", "--plan",
                       here / "shares" / "plan.json", "--out", here / "result dir", "--seed", 7, "--wait", 60,
                       "--timeout", 60)
            assert res.returncode == 0, res.stderr
        finally:
            deploy.stop_process_groups(procs)
        return res.stdout
    return run


for _bound in PRIVACY:
    DEPLOYMENTS.step(f"test_grpc_deployment_from_the_command_line[{_bound}]")(_deployment(_bound))


@pytest.mark.prestart(DEPLOYMENTS)
@pytest.mark.parametrize("bound", PRIVACY)
def test_grpc_deployment_from_the_command_line(request, bound):
    stdout = DEPLOYMENTS.outcome(request.node.name)
    tmp = DEPLOYMENTS.state
    data = {s: np.loadtxt(tmp / f"{s}.csv", delimiter=",", skiprows=1) for s in SIZES}
    tmp_path, out = tmp / bound, tmp / bound / "result dir"
    assert ("row_norm: share 0.5" in stdout) == (bound == "auto"), stdout
    plan = Plan.from_json((tmp_path / "shares" / "plan.json").read_text())
    local = []
    for k, (s, X) in enumerate(data.items()):
        site = Site(s, X)
        site.accept(read_bundle(tmp_path / "shares" / f"{s}.npz", s), rng=np.random.SeedSequence([k, 0]), throwaway=True)
        local.append(site)
    result = run_plan(plan, InProcessTransport(local), rng=7)
    ref = finish_analysis(plan, result)[0]
    expected = PrivateCovariance(epsilon=1, delta=1e-6, row_norm=1, psd_floor=0.0).fit_release(ref).covariance_
    np.testing.assert_array_equal(np.load(out / "covariance.npy"), expected)
    report = json.loads((out / "privacy_report.json").read_text())
    assert report["analysis"]["transport"] == "grpc"
    assert report["privacy"]["guarantee_detail"]["epsilon"] == pytest.approx(PRIVACY[bound][1], rel=1e-6)
    ledger = json.loads((tmp_path / "state-north" / "ledger.json").read_text())
    if bound == "public":
        assert ledger["answered"] == [[plan.digest, 0]]
        return
    # the choosing steps crossed the wire like every step: answered once, charged with the plan, reported
    assert ledger["answered"] == [[plan.digest, k] for k in plan.steps] and len(ledger["charged"]) == 1
    if bound == "center":
        assert ref.column_scale is not None and report["ranges"]["given"] == {"x0": [-2.0, 2.0], "x2": [-1.0, 1.0]}
        labels = [p["label"] for p in report["private_choices"]["parts"]]
        steps = [f"location (step {k + 1} of {len(plan.location_steps)})" for k in plan.location_steps]
        assert labels == steps + ["row_norm", "second moment", "clipping excess", "mean"]
        assert report["analysis"]["statistic"] == "covariance about the private mean"
        return
    choice = report["private_choices"]["parts"][0]
    assert choice["label"] == "row_norm" and choice["share"] == 0.5 and choice["released"]["row_norm"] == ref.row_norm
