"""What the command-line tests share: the subprocess runner and the checks on errors and results."""

import json
import os
import subprocess
import sys

from dpmoments.cli import _output, main

ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")


def cli(*args, cwd=None):
    """A real subprocess: ``python -m dpmoments ARGS`` (slow to start; used for the main paths)."""
    return subprocess.run([sys.executable, "-m", "dpmoments", *map(str, args)], capture_output=True, text=True,
                          env=ENV, cwd=cwd, timeout=120)


def in_process(capsys):
    """A runner through the same ``main`` as the console script: fast, same output and exit status."""

    def call(*args):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse's own exits (--help, bad flags)
            code = exc.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    return call


def assert_one_line_error(res, *words):
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    for w in words:
        assert w in lines[0], lines[0]


def report(out):
    return json.loads((out / "privacy_report.json").read_text())


def no_debris(parent):
    return not [p for p in parent.iterdir() if p.name.startswith(_output.TEMP_PREFIX)]
