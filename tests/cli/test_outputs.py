"""Where results go and what they carry: no deleted input, no stale temporary, no raw data.

Each test reproduces a case that lost data or leaked a value before: ``--out`` holding the input,
``--force`` onto one's own directory, ``--out .``, SIGKILL litter, a headerless CSV whose first row
became column names, the absolute path and fingerprint in the report.
"""

import errno
import gzip
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dpmoments.cli import _output, _temps

from .helpers import assert_one_line_error, no_debris, report

PRIVACY = ["--epsilon", "1", "--delta", "1e-6", "--row-norm", "3", "--seed", "0", "--no-figures"]
X = np.random.default_rng(0).normal(size=(400, 3))


@pytest.fixture
def study(tmp_path):
    d = tmp_path / "study"
    d.mkdir()
    np.save(d / "patients.npy", X)
    (d / "notes.txt").write_text("unrelated")
    return d


def _snapshot(d):
    return {p.relative_to(d): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("out", ["study", "study/patients.npy", "study/patients.npy/sub", "."])
def test_out_never_holds_an_input_or_the_working_directory(run, study, monkeypatch, out):
    monkeypatch.chdir(study.parent)
    before = _snapshot(study)
    res = run("covariance", "study/patients.npy", *PRIVACY, "--uncentred", "--out", out, "--force")
    assert_one_line_error(res, "--out" if out != "." else "working directory")
    assert _snapshot(study) == before
    assert "Errno" not in res.stderr
    assert no_debris(study.parent) and no_debris(study)


def test_out_that_contains_the_working_directory(run, study, monkeypatch):
    inner = study / "work"
    inner.mkdir()
    monkeypatch.chdir(inner)
    assert_one_line_error(run("covariance", "../patients.npy", *PRIVACY, "--uncentred", "--out", "..", "--force"),
                          "contains the working directory")
    assert (study / "patients.npy").is_file()


def test_truth_file_is_an_input_too(run, study, tmp_path):
    truth = tmp_path / "res" / "truth.csv"
    truth.parent.mkdir()
    truth.write_text("x0,x1\n")
    res = run("precision", study / "patients.npy", *PRIVACY, "--edges", "1", "--truth", truth,
              "--out", tmp_path / "res", "--force")
    assert_one_line_error(res, "contains the input")
    assert truth.read_text() == "x0,x1\n"


def test_force_replaces_only_what_dpmoments_wrote(run, study, tmp_path):
    out = tmp_path / "cov"
    assert run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", out).returncode == 0
    marker = json.loads((out / _output.MARKER).read_text())
    assert marker["written_by"] == "dpmoments" and "covariance.npy" in marker["files"]
    res = run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", out, "--force")
    assert res.returncode == 0, res.stderr
    (out / _output.MARKER).unlink()  # now it looks like anyone's directory
    assert_one_line_error(run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", out, "--force"),
                          "not written by dpmoments")
    assert (out / "covariance.npy").is_file()


def test_force_never_deletes_files_added_to_an_old_result(run, study, tmp_path):
    # An old result the user has since written notes into, and a planted copy of another result's
    # marker: --force used to delete both directories' foreign files.
    out, planted = tmp_path / "cov", tmp_path / "thesis"
    assert run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", out).returncode == 0
    (out / "my-notes.txt").write_text("mine")
    (out / "figures").mkdir()
    planted.mkdir()
    (planted / "thesis.tex").write_text("precious")
    (planted / _output.MARKER).write_bytes((out / _output.MARKER).read_bytes())
    for target, kept in ((out, "my-notes.txt"), (planted, "thesis.tex")):
        assert_one_line_error(run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", target,
                                  "--force"),
                              "did not write", kept if target == planted else "e.g. 'figures'")
        assert (target / kept).is_file()
    (out / "my-notes.txt").unlink()
    (out / "figures").rmdir()
    assert run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", out, "--force").returncode == 0


def test_a_marker_that_is_not_a_file_is_not_trusted(run, study, tmp_path):
    out = tmp_path / "cov"
    out.mkdir()
    (out / "data.csv").write_text("mine")
    os.mkfifo(out / _output.MARKER)  # opening it would block forever
    assert_one_line_error(run("covariance", study / "patients.npy", *PRIVACY, "--out", out, "--force"),
                          "not written by dpmoments")
    assert (out / "data.csv").is_file()


def test_symlinked_out_is_refused(run, study, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    assert_one_line_error(run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", tmp_path / "link"),
                          "symbolic link")


def test_unwritable_parent_is_refused_before_reading(run, study, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes everywhere")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert_one_line_error(run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", locked / "out"),
                          "permission denied")


def _stale(parent, pid, prefix=_temps.TEMP_PREFIX):
    """A marked temporary as a run with this process id (on this host) would have left it."""
    name = f"{prefix}{pid}-{_temps._start_time(pid) if pid == os.getpid() else 1}-{_temps._host()}-0badf00d"
    path = parent / name
    path.mkdir()
    (path / "covariance.npy").write_bytes(b"partial")
    return path


def test_stale_temporaries_of_dead_runs_are_swept_and_nothing_else(run, study, tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()  # its process id now belongs to no one (until reused, which the start time catches)
    stale = _stale(tmp_path, dead.pid)
    alive = _stale(tmp_path, os.getpid())  # a running run's temporary: kept
    other_host = tmp_path / f"{_temps.TEMP_PREFIX}{dead.pid}-1-00000000-0badf00d"
    other_host.mkdir()  # a run on another machine sharing this directory: not ours to judge
    lookalike = tmp_path / ".dpmoments-tmp-mine"
    lookalike.mkdir()  # not our mark: never touched
    res = run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", tmp_path / "cov")
    assert res.returncode == 0, res.stderr
    assert not stale.exists() and alive.exists() and other_host.exists() and lookalike.exists()


def test_an_old_result_moved_aside_by_a_dead_run_comes_back(run, study, tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    aside = _stale(tmp_path, dead.pid, _temps.ASIDE_PREFIX)
    (aside / "covariance.npy").unlink()
    (aside / "cov").mkdir()
    (aside / "cov" / "covariance.npy").write_bytes(b"the old result")
    assert run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", tmp_path / "other").returncode == 0
    assert (tmp_path / "cov" / "covariance.npy").read_bytes() == b"the old result" and not aside.exists()


def test_exchange_is_atomic_and_the_fallback_restores(tmp_path, monkeypatch):
    new, final = tmp_path / "new", tmp_path / "final"
    new.mkdir()
    final.mkdir()
    (new / "a").write_text("new")
    (final / "a").write_text("old")
    _temps.exchange(new, final)
    assert (final / "a").read_text() == "new" and (new / "a").read_text() == "old"
    monkeypatch.setattr(_temps, "_renameat2", lambda *a: False)  # a file system without RENAME_EXCHANGE
    _temps.exchange(new, final)
    assert (final / "a").read_text() == "old" and (new / "final" / "a").read_text() == "new"


def test_fingerprint_is_opt_in_and_the_path_is_as_given(run, study, monkeypatch):
    monkeypatch.chdir(study.parent)
    assert run("covariance", "study/patients.npy", *PRIVACY, "--uncentred", "--out", "plain").returncode == 0
    info = report(study.parent / "plain")["input"]
    assert info["fingerprint"] is None and info["path"] == "study/patients.npy"
    assert str(study.parent) not in json.dumps(report(study.parent / "plain"))
    assert run("covariance", "study/patients.npy", *PRIVACY, "--uncentred", "--out", "fp", "--fingerprint").returncode == 0
    fp = report(study.parent / "fp")["input"]["fingerprint"]
    assert len(fp["sha256"]) == 64 and fp["bytes"] == (study / "patients.npy").stat().st_size
    assert "tells apart two inputs that differ in a single row" in " ".join(run("covariance", "--help").stdout.split())


def test_headerless_csv_never_puts_a_row_into_the_results(run, tmp_path):
    rows = "\n".join(",".join(f"{v:.2f}" for v in r) for r in X[:, :3] + 13) + "\n"
    (tmp_path / "wine.csv").write_text(rows)
    first = rows.splitlines()[0].split(",")[0]
    res = run("covariance", tmp_path / "wine.csv", *PRIVACY, "--uncentred", "--out", tmp_path / "bad")
    assert_one_line_error(res, "--no-header")
    assert first not in res.stderr and not (tmp_path / "bad").exists()
    res = run("covariance", tmp_path / "wine.csv", "--no-header", *PRIVACY, "--uncentred", "--out", tmp_path / "ok")
    assert res.returncode == 0, res.stderr
    rep = report(tmp_path / "ok")
    assert rep["input"]["columns"] == ["x0", "x1", "x2"] and rep["release"]["n"] == 400
    for name in ("privacy_report.json", "covariance.csv"):
        assert first not in (tmp_path / "ok" / name).read_text()


def test_every_text_format_and_delimiter(run, tmp_path):
    header, body = "a;b;c\n", "\n".join(";".join(repr(float(v)) for v in r) for r in X) + "\n"
    (tmp_path / "x.csv.gz").write_bytes(gzip.compress(("\ufeff" + header + body).replace("\n", "\r\n").encode()))
    (tmp_path / "x.tsv").write_text((header + body).replace(";", "\t"))
    outs = []
    for name, extra in (("x.csv.gz", ["--delimiter", "semicolon"]), ("x.tsv", [])):
        outs.append(tmp_path / name.replace(".", "-"))
        res = run("covariance", tmp_path / name, *extra, *PRIVACY, "--uncentred", "--out", outs[-1])
        assert res.returncode == 0, res.stderr
        assert report(outs[-1])["input"]["columns"] == ["a", "b", "c"]
    np.testing.assert_array_equal(np.load(outs[0] / "covariance.npy"), np.load(outs[1] / "covariance.npy"))


def test_sparse_npz_input(run, tmp_path):
    from scipy import sparse

    A = sparse.random(300, 5, density=0.3, random_state=0, format="csr")
    sparse.save_npz(tmp_path / "s.npz", A)
    np.save(tmp_path / "s.npy", A.toarray())
    for stem in ("s.npz", "s.npy"):
        res = run("covariance", tmp_path / stem, *PRIVACY, "--uncentred", "--out", tmp_path / f"out-{stem}")
        assert res.returncode == 0, res.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out-s.npz" / "covariance.npy"),
                               np.load(tmp_path / "out-s.npy" / "covariance.npy"), rtol=1e-12, atol=1e-15)


def test_large_matrices_are_npy_unless_csv_is_asked(run, tmp_path):
    wide = np.random.default_rng(1).normal(size=(300, 101))  # 101 x 101 > 10000 entries
    np.save(tmp_path / "wide.npy", wide)
    assert run("covariance", tmp_path / "wide.npy", *PRIVACY, "--uncentred", "--out", tmp_path / "a").returncode == 0
    assert (tmp_path / "a" / "covariance.npy").is_file() and not (tmp_path / "a" / "covariance.csv").exists()
    assert "covariance.csv" not in report(tmp_path / "a")["files"]
    assert run("covariance", tmp_path / "wide.npy", *PRIVACY, "--uncentred", "--csv", "--out", tmp_path / "b").returncode == 0
    assert (tmp_path / "b" / "covariance.csv").read_text().count("\n") == 102


def test_console_and_report_use_the_same_names(run, study, tmp_path):
    res = run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", tmp_path / "c")
    p = report(tmp_path / "c")["privacy"]
    line = next(l for l in res.stdout.splitlines() if l.startswith("privacy:"))
    for key in ("guarantee", "neighbouring_relation", "mechanism", "noise_scale", "sensitivity", "calibration",
                "row_norm", "randomness"):
        assert key in line and key in p, key
    assert f"guarantee {p['guarantee']}" in line and f"neighbouring_relation {p['neighbouring_relation']}" in line


@pytest.mark.parametrize("seed_args", [["--seed", "48213"], ["--seed=48213"], ["--see", "48213"]])
def test_the_report_withholds_the_seed_that_would_redraw_the_noise(run, study, tmp_path, seed_args):
    # With the seed, anyone holding the report and the result can regenerate the noise and subtract it.
    out = tmp_path / "res"
    privacy = [a for a in PRIVACY if a not in ("--seed", "0")]
    if seed_args[0] == "--see":  # abbreviations are refused before anything runs (docs/errors.md)
        res = run("covariance", study / "patients.npy", *privacy, *seed_args, "--uncentred", "--out", out)
        assert res.returncode == 2 and "unrecognized arguments: --see" in res.stderr and not out.exists()
        return
    res = run("covariance", study / "patients.npy", *privacy, *seed_args, "--uncentred", "--out", out)
    assert res.returncode == 0, res.stderr
    assert "48213" not in (out / "privacy_report.json").read_text()
    assert report(out)["privacy"]["randomness"] == "seeded" and "<withheld>" in " ".join(report(out)["arguments"])


def test_the_report_says_a_private_row_bound_was_drawn_privately_not_public(run, study, tmp_path):
    privacy = [a for a in PRIVACY if a not in ("--row-norm", "3")]
    big = np.random.default_rng(1).normal(size=(4000, 3))
    np.save(study / "big.npy", big)
    res = run("covariance", study / "big.npy", *privacy, "--uncentred", "--out", tmp_path / "auto")
    assert res.returncode == 0, res.stderr
    clipping = report(tmp_path / "auto")["privacy"]["clipping"]
    assert "drawn privately" in clipping and "PUBLIC" not in clipping
    res = run("covariance", study / "big.npy", *PRIVACY, "--uncentred", "--out", tmp_path / "public")
    assert "PUBLIC" in report(tmp_path / "public")["privacy"]["clipping"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
@pytest.mark.parametrize("full", ["covariance.npy", "privacy_report.json"])
def test_a_full_disk_is_called_a_full_disk(run, study, tmp_path, monkeypatch, full):
    """One file of the results lands on /dev/full: numpy's short write (no errno) and Python's ENOSPC alike
    are one line naming the file and --out, exit 2, and the old result stays."""
    out = tmp_path / "cov"
    assert run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", out).returncode == 0
    before = _snapshot(out)
    real = _output.ResultsDir.path

    def path(self, name):
        where = real(self, name)
        return Path("/dev/full") if name == full else where

    monkeypatch.setattr(_output.ResultsDir, "path", path)
    res = run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", out, "--force")
    assert_one_line_error(res, f"could not write '{full}' in --out", "No space left on device", "nothing was published")
    assert "withheld" not in res.stderr and _snapshot(out) == before


def test_an_errno_while_finishing_is_named_too(run, study, tmp_path, monkeypatch):
    def quota(path):
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    monkeypatch.setattr(_output, "_sync", quota)
    res = run("covariance", study / "patients.npy", *PRIVACY, "--uncentred", "--out", tmp_path / "cov")
    assert_one_line_error(res, "could not finish the results in --out", os.strerror(errno.EDQUOT))
    assert not (tmp_path / "cov").exists()


def test_a_font_without_the_column_names_characters_is_one_note(capsys):
    """matplotlib warned once per missing glyph (two CJK characters: two lines per format); now one note, and any
    other warning passes on."""
    import warnings

    with pytest.warns(RuntimeWarning, match="other"):
        with _output._glyphs_noted("covariance"):
            for glyph in (36523, 38263):
                warnings.warn(f"Glyph {glyph} missing from font(s) DejaVu Sans.", UserWarning)
            warnings.warn("other", RuntimeWarning)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lacks some characters" in err and "'covariance'" in err
