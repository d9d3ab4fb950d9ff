"""Where each public object of dpmoments is documented: one page per public module, each object once.

The package re-exports most of its API from the package ``__init__`` files
(``dpmoments.moments.Release`` is defined in ``dpmoments.moments.release``). Documenting
it on both pages would give two targets for every cross-reference, so each public object
gets one *home*: the deepest public package whose ``__all__`` exports it (how users import
it), else the public module that defines it. Objects defined in private modules
(``_budget.py``) and exported by no public package are private and not documented.

The maps are computed by importing the package, at every build, so the API pages follow
the code with no hand-kept list; ``conf.py`` hands them to the autosummary template
(``_templates/autosummary/module.rst``).
"""

import importlib
import inspect
import pkgutil

__all__ = ["api_map"]

SKIP = {"__main__"}  # importing it would start the command line
# The command line's modules implement its subcommands; users read `dpmoments COMMAND --help`
# (the package page itself, with main and build_parser, is kept).
INTERNAL_TREES = ("dpmoments.cli.",)


def _public_modules(root):
    names = [root.__name__]
    for info in pkgutil.walk_packages(root.__path__, prefix=root.__name__ + "."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]) or parts[-1] in SKIP or info.name.startswith(INTERNAL_TREES):
            continue
        names.append(info.name)
    return {name: importlib.import_module(name) for name in names}


def _kind(obj):
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    return "data"


def _exports(module):
    """(name, object) pairs a module offers: its ``__all__``, else what it defines itself."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, o in vars(module).items()
                 if not n.startswith("_") and getattr(o, "__module__", None) == module.__name__]
    return [(n, getattr(module, n)) for n in names if not n.startswith("__") and hasattr(module, n)]


def api_map(root_name):
    """``(documented, links, submodules)``, each a dict keyed by module name.

    ``documented[m]``: ``(name, kind)`` pairs whose home is module ``m``;
    ``links[m]``: full names of what ``m`` exports but documents elsewhere;
    ``submodules[m]``: its public submodules (packages only).
    """
    modules = _public_modules(importlib.import_module(root_name))
    packages = {n for n, m in modules.items() if hasattr(m, "__path__")}
    home = {}  # id(obj) -> module name
    # Deepest exporting package first; then the defining public module.
    for name in sorted(packages, key=lambda n: -n.count(".")):
        for member, obj in _exports(modules[name]):
            if f"{name}.{member}" not in modules:  # solvers.irls is both a function and a module
                home.setdefault(id(obj), name)
    for name, module in modules.items():
        for _, obj in _exports(module):
            if getattr(obj, "__module__", None) == name:
                home.setdefault(id(obj), name)
    documented, links, submodules = {}, {}, {}
    for name, module in modules.items():
        documented[name], links[name] = [], []
        for member, obj in _exports(module):
            where = home.get(id(obj))
            if where == name:
                documented[name].append((member, _kind(obj)))
            elif where is not None and inspect.getmodule(obj) is not None:
                links[name].append(f"{where}.{member}")
        submodules[name] = sorted(m for m in modules if m.rpartition(".")[0] == name)
    return documented, links, submodules
