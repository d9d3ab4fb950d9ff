"""A package's public names, imported from their modules on first use (PEP 562).

Every command pays its imports: ``import dpmoments`` importing every module of
``moments/`` and ``privacy/`` (and with them SciPy) cost ``dpmoments --version``
0.8 CPU-s. A package lists where each of its names lives; the module is imported
when the name is first read, and the name then becomes an ordinary attribute.

``matching_extension`` is the other side of an import: a compiled extension is used only where it was
built from the C source its Python caller was written against.
"""

import sys
import warnings
from importlib import import_module
from importlib.util import find_spec
from types import ModuleType

__all__ = ["lazy_exports", "lazy_module", "matching_extension"]


class _Package(ModuleType):
    """A package whose exported names win over its submodules of the same name (``multisite.run``, the
    function, not ``multisite/run.py``), whatever was imported first -- as when the package imported them all."""

    def __setattr__(self, name, value):
        shadowed = isinstance(value, ModuleType) and value.__name__ == f"{self.__name__}.{name}"
        if shadowed and name in self._lazy_homes and name not in vars(self):
            return  # the import system binding a submodule: the export is resolved on first read instead
        super().__setattr__(name, value)


def lazy_exports(package, where):
    """``(__getattr__, __dir__)`` for ``package``, whose names live in ``where`` (module -> names).

    A submodule not in ``where`` is imported when read as an attribute too
    (``dpmoments.moments.psd`` after ``import dpmoments``), as it was when the
    package imported every module at once.
    """
    home = {name: module for module, names in where.items() for name in names}
    sys.modules[package].__class__ = _Package
    vars(sys.modules[package])["_lazy_homes"] = home

    def __getattr__(name):
        namespace = vars(sys.modules[package])
        if name in home:
            value = getattr(import_module(f"{package}.{home[name]}"), name)
        elif not name.startswith("__") and find_spec(f"{package}.{name}") is not None:
            value = import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # the next look-up is an ordinary attribute
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) - {"_lazy_homes"} | set(home))

    return __getattr__, __dir__


class _LazyModule:
    """A module imported when one of its names is first read; each name is then kept on this object."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = getattr(import_module(self._name), attr)
        setattr(self, attr, value)
        return value


def lazy_module(name):
    """``special = lazy_module("scipy.special")``: ``special.ndtri`` imports ``scipy.special`` on first use.

    ``scipy.special`` costs 0.2-0.4 CPU-s to import (it pulls in SciPy's array-API layer): a module that needs it
    only to compute intervals imports it then, not when the command starts (a refused run never pays it).
    """
    return _LazyModule(name)


def matching_extension(module, abi):
    """``module`` (a compiled extension, or None where it was not built) where its ``ABI`` is ``abi``, else None.

    The caller then takes its NumPy path. A stale build (an editable install whose C was not rebuilt, an
    old wheel's ``.so`` beside new Python) would otherwise be called with arguments it does not expect: at
    best wrong numbers, at worst a crash with no message. Each ``.c`` file states its ABI and when to bump
    it (docs/development.md); a mismatch warns once, naming the module.
    """
    if module is None or getattr(module, "ABI", None) == abi:
        return module
    warnings.warn(f"{module.__name__} was built from another version of its C source (ABI "
                  f"{getattr(module, 'ABI', 'none')}, this code needs {abi}): using the slower NumPy path; "
                  "rebuild the extensions (pip install, or python setup.py build_ext --inplace).",
                  RuntimeWarning, stacklevel=2)
    return None
