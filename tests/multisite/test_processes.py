"""Every process dpmoments starts ends when its parent ends (issue 16: a ServerApp ran 13 minutes on)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from dpmoments.multisite import deploy

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PDEATHSIG is Linux's")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped) counts as ended
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_a_child_started_through_the_shim_ends_when_its_parent_is_killed(tmp_path):
    """The parent (like `dpmoments site` or `aggregate`) is SIGKILLed; its child (a SuperNode, `flwr run`) ends."""
    pidfile = tmp_path / "child.pid"
    parent = textwrap.dedent(f"""
        import subprocess, sys, time
        sys.path.insert(0, {str(os.path.dirname(deploy.__file__))!r})
        cmd = {deploy.orphan_proof([sys.executable, "-c", "import time; time.sleep(120)"])!r}
        p = subprocess.Popen(cmd)
        open({str(pidfile)!r}, "w").write(str(p.pid))
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", parent], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the shim has exec'd the child
        child = int(pidfile.read_text())
        assert _alive(child)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_the_server_apps_watchdog_ends_it_when_the_aggregate_command_is_gone(tmp_path):
    """The ServerApp stops (status written) once the `dpmoments aggregate` that asked for the run has gone."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    status = tmp_path / "status.json"
    script = textwrap.dedent(f"""
        import time
        from dpmoments.cli._serverapp import _watchdog
        _watchdog({{"nonce": "n1", "pid": {gone.pid}}}, {str(status)!r}, 600.0)
        time.sleep(60)
    """)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script], timeout=60)
    assert proc.returncode == 3 and time.monotonic() - t0 < 30
    outcome = json.loads(status.read_text())
    assert outcome == {"ok": False, "nonce": "n1", "error": "the aggregator stopped: the process that started it "
                                                              "ended; no release was made"}


def test_flwr_run_ends_when_aggregate_is_stopped_while_waiting(tmp_path, monkeypatch):
    """SIGTERM reaches aggregate as an exception while it waits on `flwr run`: the child is ended, not orphaned."""
    from dpmoments.cli._signals import Stopped

    started, calls = [], []
    real = subprocess.Popen
    monkeypatch.setattr(deploy.subprocess, "Popen", lambda *a, **k: started.append(real(*a, **k)) or started[-1])

    def reachable(host, port):  # the SuperLink answers once; then the stop signal arrives
        calls.append(port)
        if len(calls) > 1:
            raise Stopped(signal.SIGTERM)
        return True

    monkeypatch.setattr(deploy, "_reachable", reachable)
    with pytest.raises(Stopped):
        deploy.watch_flwr([sys.executable, "-c", "import time; time.sleep(120)"], dict(os.environ),
                          tmp_path / "status.json", "127.0.0.1:9", 300)
    assert len(started) == 1 and started[0].poll() is not None  # ended and reaped by the time it raised
