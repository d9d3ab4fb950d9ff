"""Flower deployment helpers: the FAB, Flower's CLI config, the commands, children that die with their parent.

These build the exact ``flower-superlink`` / ``flower-supernode`` / ``flwr`` command lines
that the ``dpmoments aggregate|site`` commands run, and that the README documents.
Flower 1.41: one HTTPS port on the SuperLink serves the Fleet (sites), Control
(``flwr run``, ``flwr supernode register``) and Runtime APIs; its certificate needs a
subjectAltName for the address the sites dial. Configuration travels as TOML files
(``--run-config FILE.toml``, ``--node-config FILE.toml``) written with proper string
escaping, so paths with quotes and spaces arrive intact.
"""

import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

__all__ = ["HEARTBEAT_S", "HEARTBEAT_PATIENCE", "write_fab", "flwr_env", "write_flwr_config", "superlink_command",
           "supernode_command", "register_command", "run_command", "write_toml", "executable", "run_flwr", "run_flwr_all", "orphan_proof",
           "FlwrFailed", "flwr_reason", "watch_flwr",
           "free_port", "wait_for_port", "stop_process_groups"]

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
    """A Flower App directory whose components are the site-installed dpmoments apps.

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
        serverapp = "dpmoments.cli._serverapp:app"
        clientapp = "dpmoments.multisite.flower:app"

        [tool.flwr.app.config]
        request = ""
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


def write_toml(path, values):
    """A flat TOML file of strings, numbers and booleans (strings escaped, so any path survives)."""
    lines = []
    for key, value in values.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ValueError(f"{key}: TOML here takes finite numbers only.")
            text = repr(value)
        else:
            text = json.dumps(str(value))  # a TOML basic string: the same escapes as JSON
        lines.append(f"{json.dumps(key)} = {text}")
    Path(path).write_text("\n".join(lines) + "\n")
    return Path(path)


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


#: The SuperNode's heartbeat interval (s) that dpmoments asks for: the SuperLink's minimum. The SuperLink forgets a
#: node that fell silent after HEARTBEAT_PATIENCE intervals (flwr's default interval, 30 s, makes that a minute).
HEARTBEAT_S = 10.0
HEARTBEAT_PATIENCE = 2


def supernode_command(superlink, node_config, *, port, root_certificates=None, private_key=None, insecure=False,
                      max_retries=None, heartbeat_s=HEARTBEAT_S):
    """``flower-supernode`` with these options; with ``heartbeat_s`` (default) through :mod:`._supernode`,
    which sets the interval flwr has no option for (None: Flower's own 30 s)."""
    start = [executable("flower-supernode")] if heartbeat_s is None else \
        [sys.executable, str(Path(__file__).with_name("_supernode.py")), repr(float(heartbeat_s))]
    cmd = [*start, "--superlink", superlink, "--host", "127.0.0.1", "--port", str(port), "--node-config", node_config]
    cmd += ["--insecure"] if insecure else ["--root-certificates", str(root_certificates)]
    if private_key is not None:
        cmd += ["--auth-supernode-private-key", str(private_key)]
    if max_retries is not None:
        cmd += ["--max-retries", str(int(max_retries))]
    return cmd


def register_command(public_key, name=None):
    cmd = [executable("flwr"), "supernode", "register", str(public_key)]
    return cmd + (["--name", name] if name else [])


def run_command(fab_dir, run_config_toml, stream=True):
    """``flwr run FAB --run-config FILE.toml`` against the default connection of ``$FLWR_HOME``."""
    cmd = [executable("flwr"), "run", str(fab_dir), "--run-config", str(run_config_toml)]
    return cmd + (["--stream"] if stream else [])


def orphan_proof(cmd):
    """``cmd`` run through a shim that asks the kernel to end it when its parent ends (Linux ``PDEATHSIG``).

    Without it, a child of a killed ``dpmoments site`` or ``dpmoments aggregate`` (a SuperNode,
    ``flwr run``) keeps running; a ``preexec_fn`` would do the same but is unsafe with threads.
    """
    return [sys.executable, "-I", str(Path(__file__).with_name("_orphan.py")), *map(str, cmd)]


class FlwrFailed(RuntimeError):
    """A ``flwr`` command failed; ``one_line`` says why in one line (its own output can be a panel or a traceback)."""

    def __init__(self, message, one_line):
        super().__init__(message)
        self.one_line = one_line


_REASONS = (("already", "this public key is already registered with the SuperLink"),
            ("certificate verify failed", "TLS: the SuperLink's certificate is not signed by the given CA"),
            ("ssl", "TLS failed: check the CA certificate and the SuperLink's address"),
            ("unavailable", "the SuperLink is not reachable at the given address"),
            ("connection refused", "the SuperLink is not reachable at the given address"))


def flwr_reason(proc):
    """One line for a failed ``flwr`` command: a known cause in words, else its last line of output."""
    text = (proc.stdout or "") + "\n" + (proc.stderr or "")
    lowered = text.lower()
    for needle, say in _REASONS:
        if needle in lowered:
            return say
    lines = [ln.strip(" \u2502|\u256d\u2570\u2500") for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    return lines[-1][:200] if lines else f"exit status {proc.returncode}"


def run_flwr(cmd, env, timeout=None, check=True):
    """Run one ``flwr`` CLI command (ended with its parent); raise :class:`FlwrFailed` on failure if ``check``."""
    proc = subprocess.run(orphan_proof(cmd), env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise FlwrFailed(f"{' '.join(cmd[1:3])} failed ({proc.returncode})", flwr_reason(proc))
    return proc


def watch_flwr(cmd, env, status, superlink, limit_s, lost_s=15.0):
    """Run ``flwr run`` until ``status`` is written, the SuperLink stops answering for ``lost_s``, or ``limit_s``.

    ``flwr run --stream`` itself retries a vanished SuperLink for minutes; the run's own status
    file and a check that the SuperLink still answers end the wait promptly. Returns the finished process
    (its output captured); raises :class:`FlwrFailed` when the SuperLink went away or time ran out.
    """
    host, _, port = str(superlink).rpartition(":")
    proc = subprocess.Popen(orphan_proof(cmd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        reason = _watch(proc, status, host, int(port), superlink, limit_s, lost_s)
    finally:  # also on Ctrl-C or SIGTERM: flwr run never outlives the command that started it
        end(proc)
    out, err = proc.communicate()
    if reason is not None and not Path(status).exists():
        raise FlwrFailed(reason, reason)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _watch(proc, status, host, port, superlink, limit_s, lost_s):
    start = last_seen = time.monotonic()
    while proc.poll() is None:
        now = time.monotonic()
        if Path(status).exists():
            try:
                proc.wait(timeout=10)  # it has the result: let it finish streaming
            except subprocess.TimeoutExpired:
                pass
            return None
        if _reachable(host, port):
            last_seen = now
        elif now - last_seen > lost_s:
            return f"the SuperLink at {superlink} stopped answering"
        if now - start > limit_s:
            return f"no result within {limit_s:.0f} s"
        time.sleep(0.5)
    return None


def end(proc, grace_s=5.0):
    """Terminate ``proc`` if it still runs; kill it after ``grace_s`` (flwr may sit in its own retries)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _reachable(host, port):
    """Whether a server answers on ``host:port``: it replies or closes within 3 s.

    A connect alone is not enough: a killed SuperLink's children may still hold its listening
    socket, so the kernel accepts connections that nobody will ever serve.
    """
    try:
        with socket.create_connection((host or "127.0.0.1", port), timeout=3) as sock:
            sock.settimeout(3)
            sock.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
            sock.recv(1)  # bytes or EOF: someone is serving
            return True
    except OSError:  # refused, or silence (a timeout)
        return False


def run_flwr_all(cmds, env, timeout=None):
    """Run independent ``flwr`` CLI commands at once (each is a ~1 s Python start); raise naming the first failure."""
    procs = [subprocess.Popen(orphan_proof(cmd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for cmd in cmds]
    failed = None
    for cmd, proc in zip(cmds, procs):
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            failed = failed or FlwrFailed(f"{' '.join(cmd[1:4])} timed out", f"timed out after {timeout} s")
            continue
        if proc.returncode != 0 and failed is None:
            done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
            failed = FlwrFailed(f"{' '.join(cmd[1:4])} failed ({proc.returncode})", flwr_reason(done))
    if failed is not None:
        raise failed


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
