"""Whatever leaves a site passes one door (issue 12): statistics, errors and metadata, never a data value."""

import json
import logging

import numpy as np
import pytest

from dpmoments.multisite import Site, SiteError, from_wire, run_cape

from .conftest import make_sites
from .transports import KINDS, make

CELL = "JANE-DOE-4711"


def _csv(path, bad=True):
    rows = ["a,b,c"] + [f"{i / 100},{i / 50},{i / 25}" for i in range(50)]
    if bad:
        rows[17] = f"0.1,{CELL},0.3"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_site_whose_file_holds_a_name_fails_locally_without_quoting_it(tmp_path):
    with pytest.raises(ValueError) as info:
        Site.from_file("north", _csv(tmp_path / "north.csv"))
    assert CELL not in str(info.value) and "4711" not in str(info.value) and "north.csv" in str(info.value)
    assert Site.from_file("north", _csv(tmp_path / "ok.csv", bad=False), row_norm=1.0).n == 50


@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_inside_a_site_leaves_only_a_fixed_code(kind, monkeypatch, caplog):
    """A spy on the site's outgoing bytes: the data-bearing exception text never leaves, on any transport."""
    sites = make_sites(3)

    def leaky(*args, **kwargs):
        raise ValueError(f"could not convert string '{CELL}' to float: line 18")

    monkeypatch.setattr(sites[1], "_statistic", leaky)
    sent = []

    def spy(handle):
        def door(data):
            out = handle(data)
            sent.append(out)
            return out
        return door

    handlers = {s.name: (spy(s.handle) if s.name == "site-1" else s.handle) for s in sites}
    with caplog.at_level(logging.INFO, logger="dpmoments.site"):
        rel, rep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, transport=lambda _: make(kind, handlers))
    assert sent and all(CELL.encode() not in b and b"4711" not in b for b in sent)
    codes = [from_wire(b) for b in sent]
    assert any(isinstance(c, SiteError) and c.code == "internal" for c in codes)
    assert rep.dropped == (("site-1", "after-deal"),)
    text = json.dumps(rep.to_dict()) + json.dumps(rel.to_dict()) + " ".join(rep.notes)
    assert CELL not in text and "4711" not in text
    assert CELL not in caplog.text and "ValueError" in caplog.text  # the site's own log: the type, not the text


def test_site_command_refuses_a_bad_file_in_one_line(tmp_path, capsys):
    # in process: both refusals come before the site joins the network (as a subprocess, 2 interpreter starts)
    from dpmoments.multisite import Plan, deal_files

    from ..cli.helpers import assert_one_line_error, in_process

    cli = in_process(capsys)
    plan = Plan.build("cape", ["north", "south"], [50, 50], n_features=3, row_norm=1.0, epsilon=1.0, delta=1e-5)
    shares = deal_files(plan, tmp_path / "shares", rng=0)
    bad = _csv(tmp_path / "north.csv")
    res = cli("site", "--name", "north", "--data", bad, "--share", shares["north"], "--state", tmp_path / "st",
              "--superlink", "127.0.0.1:1", "--insecure")
    assert_one_line_error(res, "north.csv", "not a number")
    assert CELL not in res.stderr and "4711" not in res.stderr
    np.savetxt(tmp_path / "wide.csv", np.ones((50, 4)), delimiter=",", header="a,b,c,d", comments="")
    res = cli("site", "--name", "north", "--data", tmp_path / "wide.csv", "--share", shares["north"], "--state",
              tmp_path / "st", "--superlink", "127.0.0.1:1", "--insecure")
    assert_one_line_error(res, "does not fit the plan", "3 feature columns")  # checked before joining


@pytest.mark.parametrize("damage", ["truncated", "missing"])
def test_site_command_refuses_a_damaged_or_missing_share_file_in_one_line(tmp_path, capsys, damage):
    # a truncated share file was "unexpected BadZipFile in zipfile, a fault of dpmoments"; a missing one was
    # "not a dpmoments share file (FileNotFoundError)"
    from dpmoments.multisite import Plan, deal_files

    from ..cli.helpers import assert_one_line_error, in_process

    cli = in_process(capsys)
    plan = Plan.build("cape", ["north", "south"], [50, 50], n_features=3, row_norm=1.0, epsilon=1.0, delta=1e-5)
    shares = deal_files(plan, tmp_path / "shares", rng=0)
    share = tmp_path / "north-damaged.npz"
    if damage == "truncated":
        share.write_bytes(shares["north"].read_bytes()[:300])
    np.savetxt(tmp_path / "north.csv", np.ones((50, 3)), delimiter=",", header="a,b,c", comments="")
    res = cli("site", "--name", "north", "--data", tmp_path / "north.csv", "--share", share, "--state",
              tmp_path / "st", "--superlink", "127.0.0.1:1", "--insecure")
    assert_one_line_error(res, "north-damaged.npz", "not a dpmoments share file" if damage == "truncated"
                          else "does not exist")


@pytest.mark.parametrize("where", ["at line 41", "at data row 55 (1-based, header excluded)", "at row 55, column 2"])
def test_the_position_of_a_bad_value_never_leaves_the_site(where, monkeypatch, caplog):
    """Issue 29: a position is a function of the raw data: it may help the owner at the site's console, never
    cross the site's boundary, nor enter the run's report or the log lines that go with it (docs/privacy.md)."""
    sites = make_sites(3)

    def positional(*args, **kwargs):  # dpmoments' own readers word their errors like this
        raise ValueError(f"'north.csv': the value in column 'b' {where} is not a number")

    monkeypatch.setattr(sites[1], "_statistic", positional)
    sent = []

    def door(data):
        sent.append(sites[1].handle(data))
        return sent[-1]

    handlers = {s.name: (door if s.name == "site-1" else s.handle) for s in sites}
    with caplog.at_level(logging.DEBUG, logger="dpmoments"):
        rel, rep = run_cape(sites, epsilon=1.0, delta=1e-5, rng=0, transport=lambda _: make("in-process", handlers))
    (reply,) = [from_wire(b) for b in sent]
    assert isinstance(reply, SiteError) and reply.code == "internal"  # a fixed code, the same for every position
    text = json.dumps(rep.to_dict()) + json.dumps(rel.to_dict()) + " ".join(rep.notes) + caplog.text
    for leak in (where, "line 41", "row 55", "column 'b'", "north.csv"):
        assert leak not in text and leak.encode() not in sent[0]
