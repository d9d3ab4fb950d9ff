"""Output conventions: ``--json`` on every command, shell completion generated from the parser."""

import json
import shutil
import subprocess

import numpy as np
import pytest

from dpmoments.cli import COMMANDS, build_parser

from .helpers import cli

GAUSS = ["--epsilon", "1", "--delta", "1e-6", "--seed", "0", "--no-figures"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("json")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)) / 2
    y = X @ np.array([1.0, -1.0, 0.0]) + 0.05 * rng.normal(size=400)
    np.save(d / "x.npy", X)
    (d / "xy.csv").write_text("a,b,c,y\n" + "\n".join(",".join(f"{v:.6f}" for v in r) for r in np.c_[X, y]) + "\n")
    for s in range(2):
        (d / f"s{s}.csv").write_text("a,b,c\n" + "\n".join(",".join(f"{v:.6f}" for v in r)
                                                           for r in X[s * 200:(s + 1) * 200]) + "\n")
    return d


def _argv(name, d):
    return {
        "covariance": ["covariance", d / "x.npy", *GAUSS, "--row-norm", "2", "--uncentred"],
        "precision": ["precision", d / "x.npy", *GAUSS, "--row-norm", "2", "--uncentred", "--edges", "1"],
        "pca": ["pca", d / "x.npy", *GAUSS, "--row-norm", "2", "--uncentred", "--n-components", "1"],
        "tensor": ["tensor", d / "x.npy", *GAUSS, "--row-norm", "2", "--model", "mog", "--sigma2", "0.1",
                   "--n-components", "2", "--n-restarts", "2"],
        "regress": ["regress", d / "xy.csv", "--target", "y", *GAUSS, "--row-norm", "2", "--response-bound", "2",
                    "--n-iter", "2", "--w-max", "10"],
        "select": ["select", d / "xy.csv", "--target", "y", "--epsilon", "1", "--seed", "0", "--bounds", "1",
                   "--response-bound", "2", "--R", "2"],
        "simulate": ["simulate", "--uncentred", d / "s0.csv", d / "s1.csv", *GAUSS, "--row-norm", "2"],
        "demo": ["demo", "--seed", "0", "--no-figures"],
    }[name]


@pytest.mark.parametrize("name", ["covariance", "precision", "pca", "tensor", "regress", "select", "simulate", "demo"])
def test_json_prints_the_report_and_nothing_else(run, data, tmp_path, name):
    out = tmp_path / "res"
    res = run("--json", *_argv(name, data), "--out", out)
    assert res.returncode == 0, res.stderr
    document = json.loads(res.stdout)  # stdout is exactly one JSON document
    assert document == json.loads((out / "privacy_report.json").read_text())
    assert document["command"] == name and "guarantee" in document["privacy"]
    # stderr may carry warnings (e.g. that the noise dominates), never anything else
    assert all(line.startswith("dpmoments: warning: ") for line in res.stderr.splitlines()), res.stderr


def test_json_after_the_command_and_for_audit_and_reproduce(run, data, tmp_path):
    res = run("covariance", "--json", *_argv("covariance", data)[1:], "--out", tmp_path / "c")
    assert json.loads(res.stdout)["command"] == "covariance"
    res = run("--json", "audit", "--epsilon", "1", "--delta", "1e-5", "--dim", "2", "--n-samples", "20000",
              "--seed", "1")
    assert res.returncode == 0 and json.loads(res.stdout)["consistent_with_claim"] is True
    res = run("--json", "reproduce", "--list")
    assert "park_welling" in json.loads(res.stdout)["reproductions"]


def test_json_on_an_error_leaves_stdout_empty(run, data, tmp_path):
    res = run("--json", "precision", data / "x.npy", "--epsilon", "0.3", "--delta", "1e-6", "--out", tmp_path / "o")
    assert res.returncode == 2 and res.stdout == "" and "too few rows" in res.stderr


def test_json_in_a_subprocess_is_pipeable(data, tmp_path):
    res = cli("--json", *_argv("covariance", data), "--out", tmp_path / "c")
    assert res.returncode == 0 and json.loads(res.stdout)["input"]["shape"] == [400, 3]


def _complete(script, words):
    """What bash completes for ``words`` (the last one being completed)."""
    line = " ".join(words)
    program = (f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _dpmoments; "
               'printf "%s\\n" "${COMPREPLY[@]}"')
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_bash_completion_is_generated_from_the_parser(run):
    res = run("--completion", "bash")
    assert res.returncode == 0
    script = res.stdout
    assert _complete(script, ["dpmoments", "cov"]) == ["covariance"]
    assert set(_complete(script, ["dpmoments", "--js"])) == {"--json"}
    assert "--mechanism" in _complete(script, ["dpmoments", "covariance", "--mech"])
    assert set(_complete(script, ["dpmoments", "covariance", "--mechanism", ""])) == {"gaussian", "laplace"}
    assert set(_complete(script, ["dpmoments", "select", "--mechanism", ""])) == {"noisy-min", "exponential"}
    assert "--no-header" in _complete(script, ["dpmoments", "regress", "--no-h"])
    for name in COMMANDS:
        assert name.replace("_", "-") in script
    options = {o for a in build_parser()._actions for o in a.option_strings if o.startswith("--")}
    assert options - {"--help"} <= set(_complete(script, ["dpmoments", "--"]))


def test_zsh_completion_uses_bashcompinit(run):
    res = run("--completion", "zsh")
    assert res.returncode == 0 and "bashcompinit" in res.stdout and "complete -o filenames" in res.stdout


@pytest.mark.parametrize("name", ["covariance", "precision", "pca", "tensor", "regress", "select", "simulate"])
def test_every_command_lists_the_files_it_wrote(run, data, tmp_path, name):
    # precision ended with "results in DIR/" alone, where every other command lists its files
    out = tmp_path / "o"
    res = run(*_argv(name, data), "--out", out)
    assert res.returncode == 0, res.stderr
    line = [s for s in res.stdout.splitlines() if s.startswith("results in ")][-1]
    assert "privacy_report.json" in line and all(f.name in line for f in out.iterdir() if not f.name.startswith("."))


def test_select_names_its_options_when_the_family_is_too_large(run, tmp_path):
    X = np.random.default_rng(0).normal(size=(50, 21))
    np.savetxt(tmp_path / "wide.csv", X, delimiter=",", comments="",
               header=",".join([f"c{j}" for j in range(20)] + ["y"]))
    res = run("select", tmp_path / "wide.csv", "--target", "y", "--R", "5", "--epsilon", "1", "--out", tmp_path / "o")
    assert res.returncode == 2 and "lower --max-size (to at most 4 for 20 columns)" in res.stderr
    assert "'max_size'" not in res.stderr


def test_traceback_is_taken_after_the_command_too(run, tmp_path):
    # the withheld-message hint says "--traceback shows it"; after the command it was refused as unrecognized
    # (argparse's refusal is a SystemExit, which this does not catch: the error itself propagates, traceback and all)
    with pytest.raises(Exception, match="missing.csv"):
        run("covariance", tmp_path / "missing.csv", "--epsilon", "1", "--delta", "1e-6", "--traceback",
            "--out", tmp_path / "o")


def test_warnings_turned_into_errors_are_a_user_choice_not_a_fault():
    """Under ``python -W error`` a dpmoments warning ended the run as "unexpected BoundWarning ..., a fault of
    dpmoments" (exit 1); it is the user's filter: exit 2, dpmoments' own (data-free) message; others withheld."""
    import warnings

    from dpmoments.cli._errors import describe_error
    from dpmoments.exceptions import BoundWarning

    def raised(exc):
        try:
            raise exc
        except Warning as caught:
            return caught

    status, line = describe_error(raised(BoundWarning("the private row_norm fell at an end of its search range")))
    assert status == 2 and line == ("BoundWarning turned into an error (-W error): the private row_norm fell at an "
                                    "end of its search range")
    status, line = describe_error(raised(RuntimeWarning("overflow encountered in multiply: 424242.5")))
    assert status == 2 and "RuntimeWarning turned into an error" in line and "424242" not in line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            warnings.warn("x", BoundWarning)
        except BoundWarning as exc:
            assert describe_error(exc)[0] == 2


def test_out_of_memory_names_the_width_as_well_as_the_chunks():
    """60,000 columns (a 29 GB matrix) were told only to lower --chunk-size, which cannot help."""
    from dpmoments.cli._errors import describe_error

    status, line = describe_error(MemoryError())
    assert status == 2 and "--columns" in line and "--chunk-size" in line and "\n" not in line


def test_an_errno_is_its_system_text_with_the_file_or_where_it_came_from():
    """A full disk met outside the results' writers (no file name on the error) is still called a full disk."""
    import errno
    import os

    from dpmoments.cli._errors import describe_error

    def raised(exc):
        try:
            raise exc
        except OSError as caught:
            return caught

    status, line = describe_error(raised(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
    assert status == 2 and line.startswith(os.strerror(errno.ENOSPC) + " (in ") and "withheld" not in line
    status, line = describe_error(raised(PermissionError(errno.EACCES, os.strerror(errno.EACCES), "/srv/out")))
    assert status == 2 and line == f"{os.strerror(errno.EACCES)}: '/srv/out'"


def test_another_packages_deprecation_notice_is_not_a_dpmoments_warning(capsys):
    from dpmoments.cli import _warning_shower
    from dpmoments.exceptions import NotPrivateWarning

    handed_on = []
    show = _warning_shower(lambda *a: handed_on.append(a[1]))
    show(DeprecationWarning("'click.utils.x' is deprecated"), DeprecationWarning, "/site-packages/typer/__init__.py", 1)
    show(PendingDeprecationWarning("later"), PendingDeprecationWarning, "/site-packages/flwr/x.py", 1)
    show(RuntimeWarning("from numpy"), RuntimeWarning, "/site-packages/numpy/x.py", 1)  # user-relevant: kept
    show(DeprecationWarning("our own"), DeprecationWarning, __import__("dpmoments.cli").cli.__file__, 1)
    show(NotPrivateWarning("not private"), NotPrivateWarning, "/anywhere.py", 1)
    assert handed_on == [DeprecationWarning, PendingDeprecationWarning]  # to Python's handler: -W default shows them
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["dpmoments: warning: from numpy", "dpmoments: warning: our own", "dpmoments: warning: not private"]
