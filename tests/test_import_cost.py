"""Start-up cost: ``import dpmoments``, the CLI and the Flower apps stay free of the heavy SciPy modules.

Every ``dpmoments`` command and every Flower ServerApp / ClientApp process (one per message)
pays its imports; scipy.stats and scipy.optimize alone once doubled them. They are
imported inside the few functions that need them.
"""

import importlib.util
import sys

import pytest

from .background import Job

HEAVY = ("scipy.stats", "scipy.optimize", "scipy.integrate", "sklearn", "matplotlib")


# Each check is one fresh interpreter (``python -c CODE``): a Job (tests/background.py) started when collection ends,
# on the core the suite leaves idle; its test waits for it and checks its output as it did a subprocess.run's.
def _python(name, code, files=False):
    """The Job running ``python -c code``; ``code`` is a string, or with ``files`` a function of the directory
    holding x.npy and x.parquet (written first, by :func:`_write_files`)."""
    def prepare(scratch, background):
        if files:
            _write_files(scratch)
        return [sys.executable, "-c", code(scratch) if files else code], None
    return Job(f"import-cost-{name}", prepare, timeout=300)


def _stdout(job):
    """The job's stdout once it has exited 0 (as ``subprocess.run(..., check=True).stdout``)."""
    proc, _ = job.result()
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# The parser imports every command.
NO_HEAVY = {module: _python(module, f"import sys, {module}, dpmoments.cli; dpmoments.cli.build_parser(); "
                                    f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
            for module in ["dpmoments", "dpmoments.cli", "dpmoments.multisite", "dpmoments.multisite.flower",
                           "dpmoments.cli._serverapp"]}


@pytest.mark.parametrize("module", [pytest.param(m, marks=pytest.mark.prestart(job)) for m, job in NO_HEAVY.items()])
def test_no_heavy_imports(module):
    if module in ("dpmoments.multisite.flower", "dpmoments.cli._serverapp") and \
            importlib.util.find_spec("flwr") is None:
        pytest.skip("the flower extra is not installed")
    out = _stdout(NO_HEAVY[module]).strip()
    assert out == "", f"import {module} loads {out}"


LAZY_ESTIMATORS = _python("lazy-estimators", (
    "import sys, dpmoments as dpm; "
    "before = [m for m in ('sklearn', 'dpmoments.estimators') if m in sys.modules]; "
    "listed = 'PrivateCovariance' in dir(dpm) and 'PrivateGraphicalLasso' in dpm.__all__; "
    "from dpmoments.estimators import PrivateCovariance; "
    "print(before, listed, dpm.PrivateCovariance is PrivateCovariance, "
    "all(getattr(dpm, n) is not None for n in dpm.__all__))"))


@pytest.mark.prestart(LAZY_ESTIMATORS)
def test_estimators_are_exported_lazily_from_the_top_level():
    """``dpmoments.PrivateCovariance`` works, ``import dpmoments`` still loads no scikit-learn, and the
    estimators are listed where users look (``__all__``, ``dir``)."""
    assert _stdout(LAZY_ESTIMATORS).strip() == "[] True True True"


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


def _loaded_after(name, argv, watched):
    """The Job running the command line ``argv`` (a function of the files' directory) in a fresh interpreter; its
    output is ``[status, 'module,module...']`` (the watched modules it loaded), read by :func:`_loaded`."""
    return _python(name, lambda d: (f"import sys; from dpmoments.cli import main; status = main({argv(d)!r}); "
                                    f"print(status, ','.join(m for m in {watched!r} if m in sys.modules))"), files=True)


def _loaded(job):
    return _stdout(job).split()


def _write_files(tmp):
    import numpy as np

    X = np.random.default_rng(0).standard_normal((4000, 4))
    np.save(tmp / "x.npy", X)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({f"x{j}": X[:, j] for j in range(4)}), tmp / "x.parquet")


def _command_on_npy(command, bounds):
    def argv(d):
        return ["-q", *command, str(d / "x.npy"), "--epsilon", "1", "--delta", "1e-6", "--seed", "0", *bounds,
                "--out", str(d / "out"), "--force", "--no-figures"]
    watched = UNUSED if command[0] != "tensor" else UNUSED[:-1]  # the tensor's draws align components (scipy.optimize)
    return _loaded_after(command[0], argv, watched)


ON_NPY = {name: _command_on_npy(command, bounds) for name, command, bounds in [
    ("covariance-public", ["covariance"], PUBLIC), ("covariance-private", ["covariance"], []),
    ("precision", ["precision", "--alpha", "0.1"], PUBLIC), ("pca-private", ["pca", "--n-components", "2"], []),
    ("tensor", ["tensor", "--model", "mog", "--sigma2", "1", "--n-components", "2"], ["--row-norm", "10"])]}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.prestart(job)) for n, job in ON_NPY.items()])
def test_a_moment_command_on_npy_imports_no_scikit_learn_matplotlib_or_pyarrow(name):
    assert _loaded(ON_NPY[name]) == ["0"]


PARQUET_FIGURES = _loaded_after("parquet", lambda d: ["-q", "covariance", str(d / "x.parquet"), "--epsilon", "1",
                                                      "--delta", "1e-6", "--seed", "0", *PUBLIC, "--out",
                                                      str(d / "fig"), "--force"], UNUSED + ("matplotlib.pyplot",))


@pytest.mark.prestart(PARQUET_FIGURES)
def test_parquet_loads_pyarrow_but_not_pandas_and_figures_only_the_agg_canvas():
    assert _loaded(PARQUET_FIGURES) == ["0", "matplotlib,pyarrow"]
    assert (PARQUET_FIGURES.scratch / "fig" / "covariance.png").exists()


# ---------------------------------------------------------------- a command that starts at once
# Counted in modules, not seconds: ``--version`` prints a constant and ``--help`` text; neither reads data, so neither
# loads NumPy's users, SciPy or any module that draws noise (they cost --version 0.8 CPU-s and --help 0.9).
def _modules_after(argv):
    """The Job running the command line ``argv`` in a fresh interpreter; it prints every module it loaded."""
    return _python(" ".join(argv).replace(" ", "-").lstrip("-"),
                   "import sys, io, contextlib; from dpmoments.cli import main\n"
                   "with contextlib.redirect_stdout(io.StringIO()):\n"
                   "    try: main(" + repr(argv) + ")\n"
                   "    except SystemExit: pass\n"
                   "print(' '.join(sorted(sys.modules)))")


def _modules(job):
    return set(_stdout(job).split())


NO_NUMPY = _python("no-numpy", "import sys, dpmoments; "
                               "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy')))")


@pytest.mark.prestart(NO_NUMPY)
def test_import_dpmoments_loads_no_numpy():
    assert _stdout(NO_NUMPY).strip() == "[]"


VERSION = _modules_after(["--version"])


@pytest.mark.prestart(VERSION)
def test_version_loads_nothing_but_the_command_line_itself():
    loaded = _modules(VERSION)
    ours = {m for m in loaded if m.startswith("dpmoments")}
    assert ours <= {"dpmoments", "dpmoments._lazy", "dpmoments._version", "dpmoments.exceptions", "dpmoments.cli",
                    "dpmoments.cli._signals", "dpmoments.cli._numbers", "dpmoments.cli._errors",
                    "dpmoments._startup"}, sorted(ours)
    assert not {m.split(".")[0] for m in loaded} & {"numpy", "scipy"}


# ``--completion`` builds every command's parser, as ``--help`` does.
HELP = [(argv, _modules_after(argv)) for argv in [["--help"], ["covariance", "--help"], ["simulate", "--help"],
                                                  ["demo", "--help"], ["--completion", "bash"]]]


@pytest.mark.parametrize("argv, job", [pytest.param(argv, job, marks=pytest.mark.prestart(job), id=f"argv{i}")
                                       for i, (argv, job) in enumerate(HELP)])
def test_help_loads_no_numpy_nor_what_only_a_run_needs(argv, job):
    """A command module's parser part (HELP, DESCRIPTION, add_arguments) needs no NumPy: NumPy alone was half of
    ``--help``'s 0.3 CPU-s. The run's imports are made in ``run`` and the functions it calls."""
    loaded = _modules(job)
    assert not [m for m in loaded if m.split(".")[0] in ("numpy", "scipy")], sorted(m for m in loaded if "py" in m[:6])
    run_only = ("dpmoments.estimators._moment_base", "dpmoments.estimators.selection", "dpmoments.moments.private_release",
                "dpmoments.solvers", "dpmoments.datasets", "dpmoments.testing",
                "dpmoments.moments.releases", "dpmoments.moments.release_noise", "dpmoments.moments.auto_release",
                "dpmoments.moments.accumulate",
                "dpmoments.multisite.analyses", "dpmoments.multisite.plan", "dpmoments.plots")
    assert not [m for m in loaded if m.startswith(run_only)], sorted(m for m in loaded if m.startswith(run_only))


LAZY_PACKAGES = _python("lazy-packages", (
    "import importlib, dpmoments.multisite.run, dpmoments.solvers.irls\n"
    "bad = [f'{p}.{n}' for p in ('dpmoments', 'dpmoments.moments', 'dpmoments.privacy', 'dpmoments.multisite',"
    " 'dpmoments.solvers', 'dpmoments.datasets', 'dpmoments.mechanisms', 'dpmoments.testing')"
    " for n in importlib.import_module(p).__all__ if getattr(importlib.import_module(p), n) is None]\n"
    "import dpmoments.multisite as m, dpmoments.solvers as s\n"
    "print(bad, callable(m.run) and m.run.__module__, callable(s.irls) and s.irls.__module__)"))


@pytest.mark.prestart(LAZY_PACKAGES)
def test_the_lazy_packages_export_what_they_list():
    """Every name in a package's ``__all__`` resolves; an exported name wins over a submodule of the same name."""
    assert _stdout(LAZY_PACKAGES).strip() == "[] dpmoments.multisite.api dpmoments.solvers.irls"


NO_LINALG = _loaded_after("no-linalg", lambda d: ["-q", "covariance", str(d / "x.npy"), "--epsilon", "1", "--delta",
                                                  "1e-6", "--seed", "0", *PUBLIC, "--out", str(d / "cov"), "--force",
                                                  "--no-figures"], ("scipy.linalg", "dpmoments.solvers.glasso"))


@pytest.mark.prestart(NO_LINALG)
def test_a_covariance_command_loads_no_scipy_linalg():
    """The covariance command needs no eigenpairs nor pseudo-inverse: scipy.linalg (0.2-0.4 CPU-s) stays unloaded."""
    assert _loaded(NO_LINALG) == ["0"]
