"""gRPC start-up failures a user can cause: one line naming the file or the address, exit 2.

A key that is not the certificate's, a file that is no key or certificate, and a port in use were
"unexpected RuntimeError in grpc ... message withheld" (exit 1), with gRPC's own C-core log lines
beside it; a second aggregator on a port in use shared it silently (gRPC's SO_REUSEPORT).
"""

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("grpc", reason="grpcio is not installed")
pytest.importorskip("cryptography", reason="cryptography is needed to make the test CA")

from dpmoments.multisite import tls  # noqa: E402
from dpmoments.multisite.grpc_transport import GrpcSite, GrpcTransport  # noqa: E402

from ..cli.helpers import ENV, assert_one_line_error, in_process  # noqa: E402


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    paths = tls.make_ca(d)
    paths["site_cert"], paths["site_key"] = tls.make_site_cert(paths, "north", d)
    (d / "junk.pem").write_text("not a key\n")
    paths["junk"] = d / "junk.pem"
    return paths


def _bytes(pki, cert="cert", key="key", ca="ca"):
    return dict(certificate=pki[cert].read_bytes(), private_key=pki[key].read_bytes(),
                root_certificates=pki[ca].read_bytes())


@pytest.mark.parametrize("cert, key, ca, words", [
    ("cert", "site_key", "ca", "'private_key' does not match 'certificate'"),
    ("cert", "junk", "ca", "'private_key' is not a PEM private key"),
    ("junk", "key", "ca", "'certificate' is not a PEM certificate"),
    ("cert", "key", "junk", "'root_certificates' holds no PEM certificate"),
])
def test_the_library_names_the_wrong_credential(pki, cert, key, ca, words):
    with pytest.raises(ValueError, match=words):
        GrpcTransport("127.0.0.1:0", **_bytes(pki, cert, key, ca))
    with pytest.raises(ValueError, match=words):
        GrpcSite(lambda b: b, "127.0.0.1:1", "north", **_bytes(pki, cert, key, ca))


def test_a_port_in_use_is_named_and_never_shared():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"could not listen on '127.0.0.1:{port}': Address already in use"):
            GrpcTransport(f"127.0.0.1:{port}", insecure=True)
    first = GrpcTransport("127.0.0.1:0", insecure=True)
    try:  # gRPC's default SO_REUSEPORT let a second server share the first one's port
        with pytest.raises(OSError, match="could not listen on"):
            GrpcTransport(f"127.0.0.1:{first.port}", insecure=True)
    finally:
        first.close()


@pytest.fixture(scope="module")
def shares(tmp_path_factory):
    d = tmp_path_factory.mktemp("grpc-cli")
    np.savetxt(d / "north.csv", np.random.default_rng(0).normal(size=(50, 2)) / 3, delimiter=",", header="a,b",
               comments="")
    res = subprocess.run([sys.executable, "-m", "dpmoments", "noise-generator", "--sites", "north=50,south=50",
                          "--n-features", "2", "--epsilon", "1", "--delta", "1e-5", "--row-norm", "1", "--uncentred",
                          "--seed", "0", "--out", str(d / "shares")], capture_output=True, text=True, env=ENV, timeout=120)
    assert res.returncode == 0, res.stderr
    return d


def test_the_command_line_names_the_key_that_does_not_match(pki, shares, capsys):
    call = in_process(capsys)

    def run(*args):  # in this process, pytest shows the DeprecationWarnings of Flower's imports (click)
        res = call(*args)
        res.stderr = "".join(line for line in res.stderr.splitlines(True) if "deprecated" not in line)
        return res

    res = run("aggregate", "--transport", "grpc", "--listen", "127.0.0.1:0", "--cert", pki["cert"], "--key",
              pki["site_key"], "--root-certificates", pki["ca"], "--plan", shares / "shares" / "plan.json", "--out",
              shares / "out")
    assert_one_line_error(res, f"the key '{pki['site_key']}' does not match the certificate '{pki['cert']}'")
    res = run("site", "--name", "north", "--data", shares / "north.csv", "--share", shares / "shares" / "north.npz",
              "--state", shares / "state", "--transport", "grpc", "--aggregator", "127.0.0.1:1", "--cert",
              pki["site_cert"], "--key", pki["junk"], "--root-certificates", pki["ca"])
    assert_one_line_error(res, f"the key '{pki['junk']}' is not a PEM private key")


def test_a_port_in_use_from_the_command_line_is_one_line_without_grpc_log(pki, shares):
    env = {k: v for k, v in ENV.items() if k != "GRPC_VERBOSITY"}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = subprocess.run([sys.executable, "-m", "dpmoments", "aggregate", "--transport", "grpc", "--listen",
                              f"127.0.0.1:{port}", "--cert", str(pki["cert"]), "--key", str(pki["key"]),
                              "--root-certificates", str(pki["ca"]), "--plan", str(shares / "shares" / "plan.json"),
                              "--out", str(shares / "out2")], capture_output=True, text=True, env=env, timeout=120)
    assert_one_line_error(res, f"could not listen on '127.0.0.1:{port}'", "Address already in use")


def test_grpc_c_core_lines_stay_off_the_console():
    """Credentials gRPC itself rejects: its C core logs "E... Invalid private key" unless told not to."""
    code = ("import dpmoments.multisite.grpc_transport, grpc\n"
            "s = grpc.server(None)\n"
            "try:\n"
            "    s.add_secure_port('127.0.0.1:0', grpc.ssl_server_credentials([(b'junk', b'junk')]))\n"
            "except RuntimeError:\n"
            "    pass\n")
    env = {k: v for k, v in ENV.items() if k != "GRPC_VERBOSITY"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert os.environ.get("GRPC_VERBOSITY")  # this process imported the transport too
