"""A share is spent once wherever and however the site runs (issue 29): its use is recorded with the share.

Each case below got a second answer from one share before: another directory (a fresh ledger), a second
process, a deleted ledger, a copied share file, a second Site object built from one bundle in memory.
"""

import multiprocessing
import os
import shutil

import numpy as np
import pytest

from dpmoments.multisite import Aggregator, Plan, Reply, SiteError, deal, deal_files, read_bundle
from dpmoments.multisite import spent
from dpmoments.multisite.spent import ShareRecordError

from ..cli.helpers import assert_one_line_error, in_process
from .conftest import make_sites


def _plan(n_sites=2):
    return Plan.build("cape", [f"site-{i}" for i in range(n_sites)], [200] * n_sites, n_features=3, row_norm=1.0,
                      epsilon=1.0, delta=1e-5)


def _ask(site, plan, step=0, seed=0):
    return site.answer(Aggregator(plan, rng=seed).open_step(step, plan.sites)[site.name])


def _dealt(tmp_path):
    plan = _plan()
    deal_files(plan, tmp_path / "shares", rng=0)
    return plan, tmp_path / "shares" / "site-0.npz"


def _restarted(path, ledger=None):
    """The same site started again: a new Site object (a new ledger where ``ledger`` says), the share read anew."""
    site = make_sites(1, ledger=ledger)[0]
    site.accept(read_bundle(path, "site-0"), rng=1)
    return site


@pytest.fixture
def new_process(monkeypatch):
    """What a second process of the site has: no in-process table (only what is on this machine's disk)."""
    monkeypatch.setattr(spent, "_PROCESS", {})


def test_two_sites_built_from_one_bundle_in_memory_answer_a_step_once():
    plan = _plan()
    bundle = deal(plan, rng=0)["site-0"]
    first, second = make_sites(1)[0], make_sites(1)[0]
    first.accept(bundle, rng=1)
    second.accept(bundle, rng=2)
    assert isinstance(_ask(first, plan), Reply)
    refused = _ask(second, plan, seed=1)
    assert isinstance(refused, SiteError) and refused.code == "already-answered"
    assert [r["reason"] for r in second.ledger.refusals] == ["already-answered"]


def test_a_throwaway_recomputation_is_an_explicit_opt_in():
    plan = _plan()
    bundle = deal(plan, rng=0)["site-0"]
    first, check = make_sites(1)[0], make_sites(1)[0]
    first.accept(bundle, rng=1)
    check.accept(bundle, rng=1, throwaway=True)
    assert isinstance(_ask(first, plan), Reply)
    assert isinstance(_ask(check, plan), Reply)  # records nothing, reads nothing
    assert _ask(check, plan, seed=1).code == "already-answered"  # its own ledger still answers once


@pytest.mark.parametrize("how", ["fresh ledger (another directory)", "second process", "ledger deleted"])
def test_a_restarted_site_does_not_answer_its_share_again(tmp_path, new_process, how):
    plan, share = _dealt(tmp_path)
    ledger = tmp_path / "state-a" / "ledger.json"
    assert isinstance(_ask(_restarted(share, ledger), plan), Reply)
    spent._PROCESS.clear()  # every case below is a new process
    if how == "ledger deleted":
        ledger.unlink()
    again = _restarted(share, ledger if how != "fresh ledger (another directory)" else tmp_path / "b" / "l.json")
    assert again.answered(plan.digest) == [0]  # what dpmoments site prints at start, whatever its --state
    assert _ask(again, plan, seed=1).code == "already-answered"
    assert isinstance(_ask(again, plan, step=0, seed=2), SiteError)


def test_a_copied_share_is_spent_with_its_original(tmp_path, new_process, monkeypatch):
    plan, share = _dealt(tmp_path)
    before = tmp_path / "elsewhere" / "copy-before.npz"
    before.parent.mkdir()
    shutil.copy(share.with_name("plan.json"), before.parent)  # the public plan travels beside every share
    shutil.copy(share, before)  # a copy made before the first use, on this machine: the registry finds it
    assert isinstance(_ask(_restarted(share), plan), Reply)
    spent._PROCESS.clear()
    assert _ask(_restarted(before), plan, seed=1).code == "already-answered"
    after = tmp_path / "elsewhere" / "copy-after.npz"
    shutil.copy(share, after)  # a copy after first use carries the 'opened' mark ...
    spent._PROCESS.clear()
    monkeypatch.setenv("DPMOMENTS_STATE_HOME", str(tmp_path / "another-machine"))
    with pytest.raises(ShareRecordError, match=r"share file '.*copy-after.npz' was used before and its record is "
                                               r"missing"):
        _restarted(after)  # ... so on a machine without its record it is refused, never served fresh


def test_a_share_whose_records_were_deleted_is_refused_loudly(tmp_path, new_process):
    plan, share = _dealt(tmp_path)
    assert isinstance(_ask(_restarted(share, tmp_path / "l.json"), plan), Reply)
    spent._PROCESS.clear()
    shutil.rmtree(share.with_name("site-0.npz.spent"))
    assert _ask(_restarted(share), plan, seed=1).code == "already-answered"  # the registry still knows
    spent._PROCESS.clear()
    shutil.rmtree(spent.registry_root() / "shares")
    (tmp_path / "l.json").unlink()
    with pytest.raises(ShareRecordError, match="was used before and its record is missing"):
        _restarted(share)
    assert read_bundle(share, "site-0").shares.keys() == deal(plan, rng=0)["site-0"].shares.keys()  # still a share


def test_later_steps_of_a_plan_are_answered_after_a_restart(tmp_path, new_process):
    """Recording each step, not the share as a whole: a restart between steps goes on with the next step."""
    from dpmoments.multisite.analyses import plan_analysis

    plan = plan_analysis("regress", "cape", ("site-0", "site-1"), (200, 200), n_features=3, options={"n_iter": 2,
                         "w_max": 10.0}, row_norm=1.0, epsilon=1.0, delta=1e-5, response_bound=2.0)
    deal_files(plan, tmp_path / "shares", rng=0)
    path = tmp_path / "shares" / "site-0.npz"
    record = spent.ShareRecord(plan.digest, "site-0", path)
    record.spend(0)
    spent._PROCESS.clear()
    again = spent.ShareRecord(plan.digest, "site-0", path)
    assert again.answered() == [0]
    again.spend(1)
    with pytest.raises(spent.Refused):
        again.spend(0)
    assert spent.is_opened(path) and not spent.is_opened(tmp_path / "shares" / "site-1.npz")


def _spend_in_a_process(path, digest, queue):
    spent._PROCESS.clear()
    try:
        spent.ShareRecord(digest, "site-0", path).spend(0)
        queue.put("answered")
    except spent.Refused:
        queue.put("refused")


def test_concurrent_processes_of_one_site_answer_a_step_once(tmp_path):
    plan, share = _dealt(tmp_path)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_spend_in_a_process, args=(share, plan.digest, queue)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert sorted(queue.get(timeout=5) for _ in procs) == ["answered"] + ["refused"] * 3


# -- the command line: refused at start, in one line, before joining ----------------------------------------------
@pytest.fixture
def site_files(tmp_path):
    plan, share = _dealt(tmp_path)
    rng = np.random.default_rng(0)
    np.savetxt(tmp_path / "site-0.csv", rng.normal(size=(200, 3)) / 3, delimiter=",", header="a,b,c", comments="")
    return plan, share, tmp_path / "site-0.csv"


def _site_cli(capsys, share, data, state):
    return in_process(capsys)("site", "--name", "site-0", "--data", data, "--share", share, "--state", state,
                              "--transport", "grpc", "--aggregator", "127.0.0.1:1", "--insecure")


def test_the_command_line_refuses_a_used_share_without_its_record(capsys, tmp_path, site_files, new_process):
    plan, share, data = site_files
    spent.ShareRecord(plan.digest, "site-0", share).spend(0)  # answered once, then its records were lost
    spent._PROCESS.clear()
    shutil.rmtree(spent.registry_root() / "shares")
    shutil.rmtree(share.with_name("site-0.npz.spent"))
    assert_one_line_error(_site_cli(capsys, share, data, tmp_path / "state"), f"share file '{share}' was used before")


def test_a_state_directory_that_cannot_be_written_is_refused_at_start(capsys, tmp_path, site_files):
    _, share, data = site_files
    (tmp_path / "a-file").write_text("")
    assert_one_line_error(_site_cli(capsys, share, data, tmp_path / "a-file" / "state"), "--state",
                          "cannot be written")
    assert not spent.is_opened(share)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_read_only_state_or_share_directory_is_refused_at_start(capsys, tmp_path, site_files):
    _, share, data = site_files
    (tmp_path / "ro").mkdir(mode=0o555)
    assert_one_line_error(_site_cli(capsys, share, data, tmp_path / "ro"), "--state", "cannot be written")
    share.parent.chmod(0o555)
    try:
        assert_one_line_error(_site_cli(capsys, share, data, tmp_path / "state"), "cannot be written")
    finally:
        share.parent.chmod(0o755)


def test_a_registry_that_cannot_be_written_is_refused_at_start(capsys, tmp_path, site_files, monkeypatch):
    _, share, data = site_files
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("DPMOMENTS_STATE_HOME", str(tmp_path / "a-file" / "registry"))
    assert_one_line_error(_site_cli(capsys, share, data, tmp_path / "state"), "the share registry",
                          "DPMOMENTS_STATE_HOME", "cannot be written")


def test_a_new_dealing_with_force_replaces_the_shares_and_their_records(capsys, tmp_path):
    run = in_process(capsys)
    deal_args = ("noise-generator", "--uncentred", "--sites", "north=200,south=300", "--n-features", 3, "--epsilon", 1, "--delta",
                 "1e-5", "--row-norm", 1, "--out", tmp_path / "shares")
    assert run(*deal_args).returncode == 0
    share = tmp_path / "shares" / "north.npz"
    spent.ShareRecord(read_bundle(share, "north").plan.digest, "north", share).spend(0)
    assert (tmp_path / "shares" / "north.npz.spent").is_dir()
    res = run(*deal_args, "--force")  # the old shares are void: their records go with them
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "shares" / "north.npz.spent").exists() and not spent.is_opened(share)

