"""The deployed run's commands write like every other command (issue 16): atomically, with the results marker,
never over an input or the working directory, and a later run sweeps what a killed one left.

``noise-generator`` deals all the shares of one plan or none; ``aggregate``'s staging directory is named so that
the next run recognises it as debris once its owner is dead; add-remove is refused in one line before anything
is dealt (each site's row count is public in the plan).
"""

import subprocess
import sys
import time

import pytest

from dpmoments.cli import _output
from dpmoments.multisite import Plan, read_bundle

from ..cli.helpers import ENV, assert_one_line_error, in_process, no_debris

# Flower's and click's own deprecation notices (importing the transports) are not ours to judge here.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SITES = "north=200,south=300,east=250"
DEAL = ("noise-generator", "--uncentred", "--sites", SITES, "--n-features", 3, "--epsilon", 1, "--delta", "1e-5", "--row-norm", 1,
        "--seed", 3)


@pytest.fixture
def run(capsys):
    return in_process(capsys)


def test_noise_generator_writes_one_marked_dealing(run, tmp_path):
    out = tmp_path / "shares"
    res = run(*DEAL, "--out", out)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == [_output.MARKER, "east.npz", "north.npz", "plan.json", "south.npz"]
    plan = Plan.from_json((out / "plan.json").read_text())
    assert all(read_bundle(out / f"{s}.npz", s).plan.digest == plan.digest for s in plan.sites)
    assert oct((out / "north.npz").stat().st_mode & 0o777) == "0o600"  # secret: its owner only
    assert no_debris(tmp_path)
    # a second dealing needs --force, and then replaces every share at once: never a mix of two plans
    assert_one_line_error(run(*DEAL, "--out", out), "exists and is not empty", "--force")
    res = run(*DEAL[:-2], "--out", out, "--force")
    assert res.returncode == 0, res.stderr
    fresh = Plan.from_json((out / "plan.json").read_text())
    assert fresh.digest != plan.digest
    assert all(read_bundle(out / f"{s}.npz", s).plan.digest == fresh.digest for s in fresh.sites)


def test_noise_generator_refuses_a_foreign_directory_and_the_working_directory(run, tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("not dpmoments'")
    assert_one_line_error(run(*DEAL, "--out", mine, "--force"), "was not written by dpmoments")
    assert (mine / "notes.txt").read_text() == "not dpmoments'"
    monkeypatch.chdir(mine)
    assert_one_line_error(run(*DEAL, "--out", tmp_path, "--force"), "contains the working directory")
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_aggregate_refuses_an_out_that_holds_its_plan(run, tmp_path):
    shares = tmp_path / "shares"
    assert run(*DEAL, "--out", shares).returncode == 0
    res = run("aggregate", "--transport", "grpc", "--listen", "127.0.0.1:0", "--insecure", "--plan",
              shares / "plan.json", "--out", shares, "--force")
    assert_one_line_error(res, "contains the input", "plan.json")
    assert (shares / "north.npz").is_file()


def test_add_remove_is_refused_in_one_line_before_anything_is_dealt(run, tmp_path):
    res = run(*DEAL, "--neighbours", "add-remove", "--out", tmp_path / "s")
    assert_one_line_error(res, "add-remove is not supported across sites", "row count is public")
    assert not (tmp_path / "s").exists()


def test_a_killed_aggregates_staging_is_swept_by_the_next_run(run, tmp_path):
    """aggregate stages beside --out in a directory named for its process: once SIGKILL ends it, it is debris."""
    assert run(*DEAL, "--out", tmp_path / "shares").returncode == 0
    argv = ["aggregate", "--transport", "grpc", "--listen", "127.0.0.1:0", "--insecure", "--plan",
            tmp_path / "shares" / "plan.json", "--out", tmp_path / "res", "--wait", 60]
    proc = subprocess.Popen([sys.executable, "-m", "dpmoments", *map(str, argv)], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while no_debris(tmp_path) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)  # waiting for the sites, with its staging directory made
    finally:
        proc.kill()
        proc.wait()
    assert not no_debris(tmp_path), "aggregate never staged"
    res = run(*DEAL, "--out", tmp_path / "again")  # any later run writing beside it
    assert res.returncode == 0, res.stderr
    assert no_debris(tmp_path) and not (tmp_path / "res").exists()
