"""The site's SuperNode supervisor: a restart after a crash waits (one line) for the old session to lapse.

A fake SuperNode (a small script) prints what flwr 1.41's prints: the refusal of a held node or an
unknown key (the same words), or its node id once it has joined. No flwr, no network.
"""

import json
import os
import signal
import sys
import threading
import time

import pytest

from dpmoments.multisite import supernode
from dpmoments.multisite.supernode import JOINED, REFUSED, SessionRefused, keep_up

FAKE = """
import os, sys, time
from pathlib import Path
tries = Path(sys.argv[1])
n = int(tries.read_text()) if tries.exists() else 0
tries.write_text(str(n + 1))
if n < int(sys.argv[2]):
    print("[code: 2004] %s." , flush=True)
    sys.exit(1)
print("%s 42", flush=True)
time.sleep(float(sys.argv[3]))
""" % (REFUSED, JOINED)


def _fake(tmp_path, refusals, runs_s=0.0):
    script = tmp_path / "fake_supernode.py"
    script.write_text(FAKE)
    return [sys.executable, str(script), str(tmp_path / "tries"), str(refusals), str(runs_s)]


class Out:
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_refused_without_a_previous_session_is_one_line_about_registration(tmp_path):
    with pytest.raises(SessionRefused) as info:
        keep_up(_fake(tmp_path, refusals=1), None, tmp_path, interval=0.5, retry_s=0.1, out=Out(), err=Out())
    assert "register its public key" in info.value.one_line and "\n" not in info.value.one_line
    assert (tmp_path / "tries").read_text() == "1"  # not retried: nothing says an old session is held


def test_a_restart_after_a_crash_retries_until_the_old_session_lapses(tmp_path):
    (tmp_path / "supernode.json").write_text(json.dumps({"interval": 0.5, "seen_at": time.time(), "pid": 1}))
    err, out = Out(), Out()
    assert keep_up(_fake(tmp_path, refusals=2), None, tmp_path, interval=0.5, retry_s=0.1, out=out, err=err) == 0
    lines = err.text.strip().splitlines()
    assert len(lines) == 1 and "still holds this site's previous session" in lines[0] and "lets it go by" in lines[0]
    assert (tmp_path / "tries").read_text() == "3" and f"{JOINED} 42" in out.text
    assert "Failed to activate" in (tmp_path / "supernode.log").read_text()  # Flower's own words: in its log
    assert not (tmp_path / "supernode.json").exists()  # it ended normally: signed off


def test_refused_past_the_time_the_old_session_must_have_lapsed(tmp_path):
    long_ago = time.time() - 3600
    (tmp_path / "supernode.json").write_text(json.dumps({"interval": 10, "seen_at": long_ago, "pid": 1}))
    with pytest.raises(SessionRefused, match="register"):
        keep_up(_fake(tmp_path, refusals=5), None, tmp_path, interval=10, retry_s=0.1, out=Out(), err=Out())


def test_a_supernode_killed_outright_leaves_the_record_for_the_next_start(tmp_path, monkeypatch):
    monkeypatch.setattr(supernode, "SEEN_EVERY_S", 0.1)
    cmd = _fake(tmp_path, refusals=0, runs_s=30)

    def kill_when_joined():  # the OOM killer, say: the SuperNode alone, no exit of its own
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if (tmp_path / "supernode.json").exists():
                os.kill(json.loads((tmp_path / "supernode.json").read_text())["pid"], signal.SIGKILL)
                return
            time.sleep(0.05)

    threading.Thread(target=kill_when_joined, daemon=True).start()
    assert keep_up(cmd, None, tmp_path, interval=10, out=Out(), err=Out()) == -signal.SIGKILL
    record = json.loads((tmp_path / "supernode.json").read_text())
    assert record["interval"] == 10 and time.time() - record["seen_at"] < 5
    seen, until = supernode.previous_session(tmp_path / "supernode.json")
    assert until - seen >= 20 and until > time.time() + 15


def test_a_supernode_that_stops_before_joining_is_not_restarted(tmp_path):
    """Flower's panel for a key it cannot parse, then exit: one line naming the log, no restart."""
    script = tmp_path / "bad_supernode.py"
    script.write_text("import sys\nprint('ERROR: Exit Code: 302')\nprint('Unable to parse the private key file.')\n"
                      "sys.exit(1)\n")
    with pytest.raises(SessionRefused, match=r"stopped at start \(exit status 1\) before joining") as info:
        keep_up([sys.executable, str(script)], None, tmp_path, interval=0.5, retry_s=0.1, out=Out(), err=Out())
    assert str(tmp_path / "supernode.log") in info.value.one_line and "\n" not in info.value.one_line


def test_refusals_stop_after_a_bounded_number_of_starts_naming_the_key(tmp_path):
    """A held session's wait is bounded in starts as well as in time; the line names the key and what to do."""
    (tmp_path / "supernode.json").write_text(json.dumps({"interval": 10, "seen_at": time.time(), "pid": 1}))
    with pytest.raises(SessionRefused) as info:
        keep_up(_fake(tmp_path, refusals=100), None, tmp_path, interval=10, retry_s=0.05, out=Out(), err=Out(),
                key="keys/north_key", max_starts=3)
    assert (tmp_path / "tries").read_text() == "3"
    line = info.value.one_line
    assert "'keys/north_key'" in line and "after 3 start(s)" in line and "--register keys/north_key.pub" in line


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    pytest.importorskip("cryptography", reason="cryptography makes the keys")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from dpmoments.multisite import tls

    d = tmp_path_factory.mktemp("keys")
    good, pub = tls.make_node_key(d / "north_key")
    (d / "junk").write_text("not a key\n")
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    (d / "rsa_key").write_bytes(rsa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                      serialization.NoEncryption()))
    return {"good": good, "pub": pub, "junk": d / "junk", "rsa": d / "rsa_key"}


@pytest.mark.parametrize("which, words", [("junk", "is not a private key"), ("pub", "the public half"),
                                          ("rsa", "not an elliptic-curve key")])
def test_a_node_key_flower_cannot_use_is_named_before_the_supernode_starts(keys, which, words):
    from dpmoments.multisite import tls

    tls.check_node_key(keys["good"])
    with pytest.raises(ValueError, match=words) as info:
        tls.check_node_key(keys[which])
    assert f"'{keys[which]}'" in str(info.value)


def test_site_with_an_unusable_key_exits_2_in_one_line(keys, tmp_path, capsys):
    """No SuperLink is needed: the key is refused before the SuperNode would start."""
    import numpy as np

    from dpmoments.multisite import Plan, deal_files

    from ..cli.helpers import assert_one_line_error, in_process

    X = np.random.default_rng(0).normal(size=(50, 2)) / 3
    np.save(tmp_path / "north.npy", X)
    plan = Plan.build("cape", ("north", "south"), (50, 50), n_features=2, row_norm=1.0, epsilon=1.0, delta=1e-5,
                      analysis="covariance")
    shares = deal_files(plan, tmp_path / "shares", rng=0)
    res = in_process(capsys)("-q", "site", "--name", "north", "--data", tmp_path / "north.npy", "--share",
                             shares["north"], "--state", tmp_path / "state", "--superlink", "127.0.0.1:9", "--insecure",
                             "--auth-key", keys["junk"])
    assert_one_line_error(res, f"the key '{keys['junk']}' is not a private key")
    assert not (tmp_path / "state" / "supernode.log").exists()  # the SuperNode never started
