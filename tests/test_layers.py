"""Imports flow downward only (docs/architecture.md, 'Layers').

Walks every module of the package, reads its import statements with ``ast``
and fails on an import of a package that the module's layer may not use.
"""

import ast
import pathlib

import pytest

import dpmoments

ROOT = pathlib.Path(dpmoments.__file__).parent

# top-level name -> layer
LAYER = {
    "_validation": 0, "_rng": 0, "_version": 0, "exceptions": 0,
    "privacy": 1, "mechanisms": 1,
    "moments": 2, "solvers": 2,
    "estimators": 3, "multisite": 3, "distributed": 4,
    "datasets": 4, "metrics": 4, "plots": 4, "reproduce": 4, "cli": 4, "testing": 4, "federated": 4, "flower": 4,
    "__init__": 5, "__main__": 5,
}
# Explicit permissions beyond "any lower layer": what the architecture table allows.
MAY_IMPORT = {
    "privacy": {"_validation", "_rng", "exceptions", "privacy"},
    "mechanisms": {"_validation", "_rng", "exceptions", "mechanisms"},
    "solvers": {"_validation", "_rng", "exceptions", "solvers"},
    "moments": {"_validation", "_rng", "exceptions", "privacy", "mechanisms", "moments"},
    # The command line sits on top of its own layer: it drives datasets, metrics, plots, testing and reproduce.
    "cli": {name for name, layer in LAYER.items() if layer <= 4},
}


def _top(module_path):
    rel = module_path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py")


def _imported_tops(path):
    """Yield (top-level dpmoments subpackage, line) for every import in ``path``."""
    package = ["dpmoments", *path.relative_to(ROOT).parts[:-1]]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [module] if node.module else [f"{module}.{a.name}" for a in node.names]
            if module == "dpmoments":
                targets = [f"dpmoments.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            if parts[0] == "dpmoments" and len(parts) > 1:
                yield parts[1], node.lineno


MODULES = sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_flow_downward(path):
    top = _top(path)
    own = LAYER.get(top)
    assert own is not None, f"{top} has no layer in the table; add it to docs/architecture.md and LAYER"
    allowed = MAY_IMPORT.get(top)
    for name, line in _imported_tops(path):
        if name not in LAYER:
            continue  # a name such as __version__ imported from the root
        if allowed is not None:
            assert name in allowed, f"{path.relative_to(ROOT)}:{line} imports {name!r}; layer {top!r} may import {sorted(allowed)}"
        else:
            # Layer 4 modules (datasets, metrics, plots, reproductions) may use each other; none may use the cli.
            same_top_layer = own == LAYER[name] == 4 and name != "cli"
            assert LAYER[name] < own or name == top or same_top_layer, (
                f"{path.relative_to(ROOT)}:{line} imports {name!r} (layer {LAYER[name]}) from layer {own}"
            )


def test_plots_not_imported_by_root():
    source = (ROOT / "__init__.py").read_text()
    assert "plots" not in source and "matplotlib" not in source
