"""Ctrl-C in the first second, while ``dpmoments`` is still importing: one line and status 130.

A ``sitecustomize`` raises KeyboardInterrupt (what Python's SIGINT handler raises) at the import of a
named module, so that the interrupt lands at a known moment of the start-up: in the package's own
imports, the command line's, or the command's module imported by the parser. Both ways of starting
are run: the console script (a copy of the wrapper pip writes) and ``python -m dpmoments``.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from .helpers import ENV

SITECUSTOMIZE = '''
import os, sys

class _InterruptAt:
    def find_spec(self, name, path=None, target=None):
        if name == os.environ.get("DPMOMENTS_TEST_INTERRUPT_AT"):
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, _InterruptAt())
'''
CONSOLE_SCRIPT = '''import sys
from dpmoments.cli import main
if __name__ == '__main__':
    sys.exit(main())
'''


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    d = tmp_path_factory.mktemp("startup")
    (d / "hook").mkdir()
    (d / "hook" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (d / "bin").mkdir()
    (d / "bin" / "dpmoments").write_text(CONSOLE_SCRIPT)
    np.save(d / "x.npy", np.zeros((10, 2)))
    return d


def _run(place, start, module, *argv):
    env = dict(ENV, DPMOMENTS_TEST_INTERRUPT_AT=module,
               PYTHONPATH=os.pathsep.join([str(place / "hook"), *sys.path]))
    command = {"script": [sys.executable, str(place / "bin" / "dpmoments")],
               "module": [sys.executable, "-m", "dpmoments"], "program": [sys.executable, "-c"]}[start]
    return subprocess.run([*command, *argv], capture_output=True, text=True, env=env, cwd=place, timeout=120)


@pytest.mark.parametrize("start, module", [("script", "dpmoments.moments"), ("module", "dpmoments.moments"),
                                           ("script", "dpmoments.cli._args"), ("module", "dpmoments.cli.covariance")])
def test_ctrl_c_while_importing_is_one_line_and_status_130(place, start, module):
    res = _run(place, start, module, "covariance", "x.npy", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1",
               "--out", "out")
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip().splitlines() == ["dpmoments: interrupted while starting; no results were written"]
    assert not (place / "out").exists()


def test_a_program_that_imports_dpmoments_gets_its_interrupt_as_usual(place):
    # ``import dpmoments`` imports its exceptions and nothing heavy (the rest loads on first use)
    res = _run(place, "program", "dpmoments.exceptions", "import dpmoments")
    assert res.returncode != 130 and "KeyboardInterrupt" in res.stderr
