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


def test_estimators_are_exported_lazily_from_the_top_level():
    """``dpmoments.PrivateCovariance`` works, ``import dpmoments`` still loads no scikit-learn, and the
    estimators are listed where users look (``__all__``, ``dir``)."""
    code = ("import sys, dpmoments as dpm; "
            "before = [m for m in ('sklearn', 'dpmoments.estimators') if m in sys.modules]; "
            "listed = 'PrivateCovariance' in dir(dpm) and 'PrivateGraphicalLasso' in dpm.__all__; "
            "from dpmoments.estimators import PrivateCovariance; "
            "print(before, listed, dpm.PrivateCovariance is PrivateCovariance, "
            "all(getattr(dpm, n) is not None for n in dpm.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] True True True"


def test_an_unknown_top_level_name_is_an_attribute_error():
    import dpmoments

    with pytest.raises(AttributeError, match="has no attribute 'PrivateNothing'"):
        dpmoments.PrivateNothing  # noqa: B018
    assert not hasattr(dpmoments, "PrivateNothing")
