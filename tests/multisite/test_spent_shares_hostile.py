"""A share is spent once against an operator or aggregator who tries to get a second answer (issue 29, audit).

Each test is a case that got a second answer (fresh local noise for the same step) before its fix: a symlink
or a hard link to the share, a bundle answered in memory and then written to a file. The other cases of the
audit (docs/multisite.md, "A share is spent once") held already and are covered in test_spent_shares.py or
here: a replayed query, a site killed between recording and answering.
"""

import dataclasses
import json
import multiprocessing
import os
import shutil
import signal

import pytest

from dpmoments.multisite import Aggregator, Plan, Reply, Site, SiteError, deal, deal_files, read_bundle, write_bundle
from dpmoments.multisite import spent
from dpmoments.multisite.messages import from_wire, to_wire
from dpmoments.multisite.spent import ShareRecordError

from .conftest import make_sites


def _plan():
    return Plan.build("cape", ["site-0", "site-1"], [200, 200], n_features=3, row_norm=1.0, epsilon=1.0,
                      delta=1e-5)


def _query(plan, step=0, seed=0):
    return Aggregator(plan, rng=seed).open_step(step, plan.sites)["site-0"]


def _started(path, ledger=None):
    site = make_sites(1, ledger=ledger)[0]
    site.accept(read_bundle(path, "site-0"), rng=1)
    return site


@pytest.fixture
def dealt(tmp_path):
    plan = _plan()
    deal_files(plan, tmp_path / "shares", rng=0)
    return plan, tmp_path / "shares" / "site-0.npz"


@pytest.fixture
def another_machine_registry(tmp_path, monkeypatch):
    """A second process with a fresh registry: only what travels with the share file is left to it."""
    def fresh(name):
        monkeypatch.setattr(spent, "_PROCESS", {})
        monkeypatch.setenv("DPMOMENTS_STATE_HOME", str(tmp_path / name))
    return fresh


def test_a_share_used_through_a_symlink_is_spent_at_its_target(tmp_path, dealt, another_machine_registry):
    plan, share = dealt
    link = tmp_path / "elsewhere" / "link.npz"
    link.parent.mkdir()
    shutil.copy(share.with_name("plan.json"), link.parent)  # the public plan travels beside every share
    link.symlink_to(share)
    assert isinstance(_started(link).answer(_query(plan)), Reply)
    assert link.is_symlink()  # the mark went to the file, not over the link
    assert spent.is_opened(share) and (share.parent / "site-0.npz.spent").is_dir()
    another_machine_registry("registry-2")  # the record is beside the target, where the original finds it
    assert _started(share).answer(_query(plan, seed=1)).code == "already-answered"


def test_a_share_file_with_another_hard_link_is_refused(tmp_path, dealt, another_machine_registry):
    plan, share = dealt
    shutil.copy(share.with_name("plan.json"), tmp_path)  # the public plan travels beside every share
    os.link(share, tmp_path / "hard.npz")
    for name in (share, tmp_path / "hard.npz"):  # either name would be marked alone; the other looks unused
        with pytest.raises(ShareRecordError, match="hard link"):
            _started(name)
    os.unlink(tmp_path / "hard.npz")
    assert isinstance(_started(share).answer(_query(plan)), Reply)


def test_a_bundle_answered_in_memory_cannot_be_written_to_a_file(tmp_path):
    plan = _plan()
    bundles = deal(plan, rng=0)
    write_bundle(bundles["site-1"], tmp_path / "site-1.npz")  # unused: fine
    site = make_sites(1)[0]
    site.accept(bundles["site-0"], rng=1)
    assert isinstance(site.answer(_query(plan)), Reply)
    with pytest.raises(ValueError, match="answered in this process"):
        write_bundle(bundles["site-0"], tmp_path / "site-0.npz")
    assert not (tmp_path / "site-0.npz").exists()


def test_a_replayed_or_reordered_query_gets_no_second_answer(dealt):
    plan, share = dealt
    site = _started(share)
    query = _query(plan)
    assert isinstance(from_wire(site.handle(to_wire(query))), Reply)
    for again in (query, dataclasses.replace(query, round_id="another-round"), _query(plan, seed=7)):
        reply = from_wire(site.handle(to_wire(again)))
        assert isinstance(reply, SiteError) and reply.code == "already-answered"
    # a second Site object of the same process, with its own fresh ledger, is refused the same way
    assert from_wire(_started(share).handle(to_wire(query))).code == "already-answered"


def _killed_while_answering(share, ledger):
    site = _started(share, ledger)
    Site._noisy = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)  # after the record, before the answer
    site.answer(_query(read_bundle(share).plan))


def test_a_site_killed_between_recording_and_answering_does_not_answer_the_step_again(tmp_path, dealt,
                                                                                         monkeypatch):
    plan, share = dealt
    child = multiprocessing.get_context("fork").Process(target=_killed_while_answering,
                                                        args=(share, tmp_path / "state" / "ledger.json"))
    child.start()
    child.join(30)
    assert child.exitcode == -signal.SIGKILL
    monkeypatch.setattr(spent, "_PROCESS", {})  # a restart: another process, another state directory
    restarted = _started(share, tmp_path / "other-state" / "ledger.json")
    assert restarted.answered(plan.digest) == [0]
    assert restarted.answer(_query(plan, seed=1)).code == "already-answered"  # an answer lost, none repeated


def test_a_read_only_share_file_stays_read_only_once_marked(dealt):
    plan, share = dealt
    share.chmod(0o400)
    assert isinstance(_started(share).answer(_query(plan)), Reply)
    assert spent.is_opened(share) and share.stat().st_mode & 0o777 == 0o400  # it was made writable (0o600)


def test_a_record_edited_to_leave_out_the_opening_step_is_refused(dealt, another_machine_registry):
    """The sidecar rewritten by hand to name another step (registry gone) let step 0 be answered again."""
    plan, share = dealt
    assert isinstance(_started(share).answer(_query(plan)), Reply)
    another_machine_registry("registry-2")
    steps = share.with_name("site-0.npz.spent") / "steps.json"
    steps.write_text(json.dumps(dict(json.loads(steps.read_text()), steps=[999])))
    with pytest.raises(ShareRecordError, match="does not match"):
        _started(share)


def test_a_share_read_from_a_file_cannot_be_written_out_again(tmp_path, dealt, another_machine_registry):
    """write_bundle(read_bundle(used)) wrote a copy without the mark: with a fresh registry it answered again."""
    plan, share = dealt
    assert isinstance(_started(share).answer(_query(plan)), Reply)
    with pytest.raises(ValueError, match="is not written again"):
        write_bundle(read_bundle(share, "site-0"), tmp_path / "copy.npz")
    assert not (tmp_path / "copy.npz").exists()
