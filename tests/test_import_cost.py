"""Start-up cost: ``import dpmoments``, the CLI and the Flower apps stay free of the heavy SciPy modules.

Every ``dpmoments`` command and every Flower ServerApp / ClientApp process (one per message)
pays its imports; scipy.stats and scipy.optimize alone once doubled them. They are
imported inside the few functions that need them.
"""

import importlib.util
import subprocess
import sys

import pytest

HEAVY = ("scipy.stats", "scipy.optimize", "scipy.integrate", "sklearn", "matplotlib")


@pytest.mark.parametrize("module", ["dpmoments", "dpmoments.cli", "dpmoments.multisite", "dpmoments.multisite.flower",
                                    "dpmoments.cli._serverapp"])
def test_no_heavy_imports(module):
    if module in ("dpmoments.multisite.flower", "dpmoments.cli._serverapp") and \
            importlib.util.find_spec("flwr") is None:
        pytest.skip("the flower extra is not installed")
    code = (f"import sys, {module}, dpmoments.cli; dpmoments.cli.build_parser(); "  # the parser imports every command
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"import {module} loads {out}"
