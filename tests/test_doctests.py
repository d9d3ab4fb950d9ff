"""Every docstring example in the installed package runs.

The examples are collected from the *imported* package (not from ``src/``),
so they test what a user installed, data files included.
"""

import doctest
import importlib
import pkgutil
import warnings

import pytest

import dpmoments

SKIP = {"dpmoments.__main__"}  # running it would start the command line
MODULES = sorted(
    m.name for m in pkgutil.walk_packages(dpmoments.__path__, prefix="dpmoments.") if m.name not in SKIP
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
