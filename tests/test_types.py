"""The seams are type-checked: guarantees, the accountant, the Release, the Transport and the messages.

A wrong type at one of these seams would turn into a wrong report (a guarantee that is not one, a
spend of the wrong thing), so their hints are checked by mypy over the files listed in
``pyproject.toml`` ([tool.mypy]); the package ships ``py.typed``.
"""

import pathlib
import sys

import pytest

from .background import Job

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _type_check(scratch, background):
    return [sys.executable, "-m", "mypy", "--no-incremental", "--config-file", str(ROOT / "pyproject.toml")], ROOT


TYPE_CHECK = Job("mypy", _type_check, timeout=300)


@pytest.mark.prestart(TYPE_CHECK)
def test_the_seams_type_check():
    pytest.importorskip("mypy")
    proc, _ = TYPE_CHECK.result()
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_package_ships_its_hints():
    assert (ROOT / "src" / "dpmoments" / "py.typed").is_file()
