"""Deployment helpers: the FAB, Flower's CLI config, a test CA, node keys, the commands, and localhost teardown.

These build the exact ``flower-superlink`` / ``flower-supernode`` / ``flwr`` command lines
that the ``dpmoments aggregate|site`` commands run, and that the README documents.
Flower 1.41: one HTTPS port on the SuperLink serves the Fleet (sites), Control
(``flwr run``, ``flwr supernode register``) and Runtime APIs; its certificate needs a
subjectAltName for the address the sites dial.
"""

import datetime
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

__all__ = ["write_fab", "flwr_env", "write_flwr_config", "make_ca", "make_node_key", "superlink_command",
           "supernode_command", "register_command", "run_command", "node_config_string", "executable", "run_flwr",
           "run_flwr_all", "free_port", "wait_for_port", "stop_process_groups"]

FAB_NAME = "dpmoments-cape"


def executable(name):
    """A Flower executable from this Python's environment (flower-superlink spawns flower-superexec by name)."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"'{name}' not found: install the extra with pip install 'dpmoments[flower]'.")
    return found


def flwr_env(flwr_home=None, base=None):
    """Environment for Flower processes: venv bin on PATH, telemetry off, one BLAS thread, fast task polling."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env["FLWR_TELEMETRY_ENABLED"] = "0"
    # flower-superexec polls for a ServerApp/ClientApp to start once a second by default;
    # a tenth of that takes ~1 s off each of the run's three app starts, for negligible load
    env.setdefault("FLWR_SUPEREXEC_TASK_POLL_INTERVAL", "0.1")
    if flwr_home is not None:
        env["FLWR_HOME"] = str(flwr_home)
    return env


def write_fab(directory):
    """A Flower App directory whose components are the site-installed ``dpmoments.flower`` apps.

    The FAB carries no code of its own: sites run the ClientApp of *their* installed
    dpmoments (start the SuperLink with ``--disable-runtime-dependency-installation``).
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "{FAB_NAME}"
        version = "1.0.0"
        description = "dpmoments CAPE second moment across sites (thin wrapper, code is site-installed)"
        dependencies = ["dpmoments[flower]"]

        [tool.hatch.build.targets.wheel]
        packages = ["."]

        [tool.flwr.app]
        publisher = "dpmoments"

        [tool.flwr.app.components]
        serverapp = "dpmoments.flower.server_app:app"
        clientapp = "dpmoments.flower.client_app:app"

        [tool.flwr.app.config]
        plan-path = ""
        out-dir = ""
        min-sites = 2
        on-dropout = "complete"
        colluders = 0
        wait-s = 60.0
        timeout-s = 120.0
        seed = -1
        """))
    return d


def write_flwr_config(flwr_home, address, *, root_certificates=None, insecure=False, name="dpmoments"):
    """``$FLWR_HOME/config.toml`` with one default SuperLink connection."""
    home = Path(flwr_home)
    home.mkdir(parents=True, exist_ok=True)
    lines = ["[superlink]", f'default = "{name}"', "", f"[superlink.{name}]", f'address = "{address}"']
    if insecure:
        lines.append("insecure = true")
    elif root_certificates is not None:
        lines.append(f'root-certificates = "{Path(root_certificates).resolve()}"')
    (home / "config.toml").write_text("\n".join(lines) + "\n")
    return home / "config.toml"


def make_ca(directory, hosts=("127.0.0.1", "localhost"), days=2):
    """A throw-away CA and a server certificate for ``hosts`` (tests and localhost trials only).

    Returns ``{"ca": ca.crt, "cert": server.pem, "key": server.key}``.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    def name(cn):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca = (x509.CertificateBuilder().subject_name(name("dpmoments test CA")).issuer_name(name("dpmoments test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP384R1())
    san = []
    for h in hosts:
        try:
            san.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            san.append(x509.DNSName(h))
    cert = (x509.CertificateBuilder().subject_name(name(hosts[0])).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(san), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    paths = {"ca": d / "ca.crt", "cert": d / "server.pem", "key": d / "server.key"}
    paths["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths["key"].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    paths["key"].chmod(0o600)
    return paths


def make_node_key(path):
    """A SuperNode identity (ECDSA P-384, OpenSSH format, like ``ssh-keygen -t ecdsa -b 384``).

    Writes ``path`` (private, stays at the site) and ``path.pub`` (sent to the SuperLink admin).
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    path = Path(path)
    key = ec.generate_private_key(ec.SECP384R1())
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    pub = Path(str(path) + ".pub")
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                  serialization.PublicFormat.OpenSSH) + b"\n")
    return path, pub


def node_config_string(site, data_path, share_path, seed=None):
    """The ``--node-config`` value of a site's SuperNode."""
    parts = [f"site='{site}'", f"data-path='{Path(data_path).resolve()}'",
             f"share-path='{Path(share_path).resolve()}'"]
    if seed is not None:
        parts.append(f"seed={int(seed)}")
    return " ".join(parts)


def superlink_command(port, *, host="127.0.0.1", certfile=None, keyfile=None, ca_certfile=None,
                      node_auth=True, insecure=False):
    cmd = [executable("flower-superlink"), "--host", host, "--port", str(port),
           "--disable-runtime-dependency-installation"]
    if insecure:
        cmd.append("--insecure")
    else:
        cmd += ["--ssl-certfile", str(certfile), "--ssl-keyfile", str(keyfile), "--ssl-ca-certfile", str(ca_certfile)]
    if node_auth:
        cmd.append("--enable-supernode-auth")
    return cmd


def supernode_command(superlink, node_config, *, port, root_certificates=None, private_key=None, insecure=False,
                      max_retries=None):
    cmd = [executable("flower-supernode"), "--superlink", superlink, "--host", "127.0.0.1", "--port", str(port),
           "--node-config", node_config]
    cmd += ["--insecure"] if insecure else ["--root-certificates", str(root_certificates)]
    if private_key is not None:
        cmd += ["--auth-supernode-private-key", str(private_key)]
    if max_retries is not None:
        cmd += ["--max-retries", str(int(max_retries))]
    return cmd


def register_command(public_key, name=None):
    cmd = [executable("flwr"), "supernode", "register", str(public_key)]
    return cmd + (["--name", name] if name else [])


def run_command(fab_dir, run_config, stream=True):
    """``flwr run FAB --run-config ...`` against the default connection of ``$FLWR_HOME``."""
    rc = " ".join(f"{k}={_toml(v)}" for k, v in run_config.items())
    cmd = [executable("flwr"), "run", str(fab_dir), "--run-config", rc]
    return cmd + (["--stream"] if stream else [])


def _toml(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "") + "'"


def run_flwr(cmd, env, timeout=None, check=True):
    """Run one ``flwr`` CLI command; raise with its output on failure."""
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed ({proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}")
    return proc


def run_flwr_all(cmds, env, timeout=None):
    """Run independent ``flwr`` CLI commands at once (each is a ~1 s Python start); raise naming every failure."""
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for cmd in cmds]
    failed = []
    for cmd, proc in zip(cmds, procs):
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            failed.append(f"{' '.join(cmd[1:4])}: timed out after {timeout} s")
            continue
        if proc.returncode != 0:
            failed.append(f"{' '.join(cmd[1:4])} failed ({proc.returncode}): {out[-1000:]} {err[-1000:]}")
    if failed:
        raise RuntimeError("; ".join(failed))


# -- localhost trials (the deployment test, the overhead benchmark) -------------------------------
def free_port():
    """A TCP port on 127.0.0.1 that is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, timeout=60):
    """Wait until ``port`` on 127.0.0.1 accepts connections; raise if ``proc`` exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"SuperLink exited early ({proc.returncode})")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"port {port} did not open")


def stop_process_groups(procs):
    """Teardown by PID: SIGTERM the process group of each ``Popen(start_new_session=True)``, then SIGKILL
    what is left (the groups also hold flower-superexec children, which outlive their parent ~10 s)."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if p.poll() is None:
            p.wait(timeout=5)
