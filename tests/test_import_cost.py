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


# ---------------------------------------------------------------- a command imports only what it uses
# scikit-learn (~1.2 s: its import loads scipy.stats and pandas) and matplotlib cost more than reading most
# files: the moment commands fit the estimators' scikit-learn-free cores, draw figures with the Agg canvas
# only when asked, convert zCDP to (epsilon, delta) without scipy.optimize, and read .npy without pyarrow (nor,
# for Parquet, the pandas that pyarrow's to_numpy loads).
UNUSED = ("sklearn", "matplotlib", "pyarrow", "pandas", "scipy.stats", "scipy.optimize")
PUBLIC = ["--row-norm", "10", "--center", "0"]


def _loaded_after(argv, watched):
    code = (f"import sys; from dpmoments.cli import main; status = main({argv!r}); "
            f"print(status, ','.join(m for m in {watched!r} if m in sys.modules))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import numpy as np

    tmp = tmp_path_factory.mktemp("import-cost")
    X = np.random.default_rng(0).standard_normal((4000, 4))
    np.save(tmp / "x.npy", X)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({f"x{j}": X[:, j] for j in range(4)}), tmp / "x.parquet")
    return tmp


@pytest.mark.parametrize("command, bounds", [
    (["covariance"], PUBLIC), (["covariance"], []), (["precision", "--alpha", "0.1"], PUBLIC),
    (["pca", "--n-components", "2"], []), (["tensor", "--model", "mog", "--sigma2", "1", "--n-components", "2"],
                                            ["--row-norm", "10"])], ids=["covariance-public", "covariance-private",
                                                                          "precision", "pca-private", "tensor"])
def test_a_moment_command_on_npy_imports_no_scikit_learn_matplotlib_or_pyarrow(files, command, bounds):
    argv = ["-q", *command, str(files / "x.npy"), "--epsilon", "1", "--delta", "1e-6", "--seed", "0", *bounds,
            "--out", str(files / "out"), "--force", "--no-figures"]
    watched = UNUSED if command[0] != "tensor" else UNUSED[:-1]  # the tensor's draws align components (scipy.optimize)
    assert _loaded_after(argv, watched) == ["0"]


def test_parquet_loads_pyarrow_but_not_pandas_and_figures_only_the_agg_canvas(files):
    argv = ["-q", "covariance", str(files / "x.parquet"), "--epsilon", "1", "--delta", "1e-6", "--seed", "0",
            *PUBLIC, "--out", str(files / "fig"), "--force"]
    assert _loaded_after(argv, UNUSED + ("matplotlib.pyplot",)) == ["0", "matplotlib,pyarrow"]
    assert (files / "fig" / "covariance.png").exists()


# ---------------------------------------------------------------- a command that starts at once
# Counted in modules, not seconds: ``--version`` prints a constant and ``--help`` text; neither reads data, so neither
# loads NumPy's users, SciPy or any module that draws noise (they cost --version 0.8 CPU-s and --help 0.9).
def _modules_after(argv):
    code = ("import sys, io, contextlib; from dpmoments.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try: main(" + repr(argv) + ")\n"
            "    except SystemExit: pass\n"
            "print(' '.join(sorted(sys.modules)))")
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())


def test_import_dpmoments_loads_no_numpy():
    code = "import sys, dpmoments; print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_version_loads_nothing_but_the_command_line_itself():
    loaded = _modules_after(["--version"])
    ours = {m for m in loaded if m.startswith("dpmoments")}
    assert ours <= {"dpmoments", "dpmoments._lazy", "dpmoments._version", "dpmoments.exceptions", "dpmoments.cli",
                    "dpmoments.cli._signals", "dpmoments.cli._numbers", "dpmoments.cli._errors",
                    "dpmoments._startup"}, sorted(ours)
    assert not {m.split(".")[0] for m in loaded} & {"numpy", "scipy"}


# ``--completion`` builds every command's parser, as ``--help`` does.
@pytest.mark.parametrize("argv", [["--help"], ["covariance", "--help"], ["simulate", "--help"], ["demo", "--help"],
                                  ["--completion", "bash"]])
def test_help_loads_no_numpy_nor_what_only_a_run_needs(argv):
    """A command module's parser part (HELP, DESCRIPTION, add_arguments) needs no NumPy: NumPy alone was half of
    ``--help``'s 0.3 CPU-s. The run's imports are made in ``run`` and the functions it calls."""
    loaded = _modules_after(argv)
    assert not [m for m in loaded if m.split(".")[0] in ("numpy", "scipy")], sorted(m for m in loaded if "py" in m[:6])
    run_only = ("dpmoments.estimators._moment_base", "dpmoments.estimators.selection", "dpmoments.moments.private_release",
                "dpmoments.solvers", "dpmoments.datasets", "dpmoments.testing",
                "dpmoments.moments.releases", "dpmoments.moments.release_noise", "dpmoments.moments.auto_release",
                "dpmoments.moments.accumulate",
                "dpmoments.multisite.analyses", "dpmoments.multisite.plan", "dpmoments.plots")
    assert not [m for m in loaded if m.startswith(run_only)], sorted(m for m in loaded if m.startswith(run_only))


def test_the_lazy_packages_export_what_they_list():
    """Every name in a package's ``__all__`` resolves; an exported name wins over a submodule of the same name."""
    code = ("import importlib, dpmoments.multisite.run, dpmoments.solvers.irls\n"
            "bad = [f'{p}.{n}' for p in ('dpmoments', 'dpmoments.moments', 'dpmoments.privacy', 'dpmoments.multisite',"
            " 'dpmoments.solvers', 'dpmoments.datasets', 'dpmoments.mechanisms', 'dpmoments.testing')"
            " for n in importlib.import_module(p).__all__ if getattr(importlib.import_module(p), n) is None]\n"
            "import dpmoments.multisite as m, dpmoments.solvers as s\n"
            "print(bad, callable(m.run) and m.run.__module__, callable(s.irls) and s.irls.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] dpmoments.multisite.api dpmoments.solvers.irls"


def test_a_covariance_command_loads_no_scipy_linalg(files):
    """The covariance command needs no eigenpairs nor pseudo-inverse: scipy.linalg (0.2-0.4 CPU-s) stays unloaded."""
    argv = ["-q", "covariance", str(files / "x.npy"), "--epsilon", "1", "--delta", "1e-6", "--seed", "0", *PUBLIC,
            "--out", str(files / "cov"), "--force", "--no-figures"]
    assert _loaded_after(argv, ("scipy.linalg", "dpmoments.solvers.glasso")) == ["0"]
