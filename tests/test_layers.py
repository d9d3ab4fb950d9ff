"""The house rules of docs/architecture.md ('Layers'), read from the source with ``ast``.

Imports flow downward only; noise is drawn only in ``mechanisms/``; no module
reaches a private name or an underscored module of another package; no import
circles, not even through imports inside functions; ``importlib`` loads modules
only where a layer dispatches by name; third-party packages stay where they
are needed.
"""

import ast
import functools
import pathlib
import sys

import pytest

import dpmoments
from tests.source_tree import parse

ROOT = pathlib.Path(dpmoments.__file__).parent

# top-level name -> layer
LAYER = {
    "_validation": 0, "_rng": 0, "_version": 0, "_lazy": 0, "_startup": 0, "exceptions": 0,
    "privacy": 1, "mechanisms": 1, "data": 1,
    "moments": 2, "solvers": 2,
    "estimators": 3, "multisite": 3,
    "datasets": 4, "metrics": 4, "plots": 4, "reproduce": 4, "cli": 4, "testing": 4,
    "__init__": 5, "__main__": 5,
}
# Explicit permissions beyond "any lower layer": what the architecture table allows.
MAY_IMPORT = {
    "privacy": {"_validation", "_rng", "_lazy", "exceptions", "privacy"},
    "mechanisms": {"_validation", "_rng", "_lazy", "exceptions", "mechanisms"},
    "data": {"_validation", "_rng", "_lazy", "exceptions", "data"},
    "solvers": {"_validation", "_rng", "_lazy", "exceptions", "solvers"},
    "moments": {"_validation", "_rng", "_lazy", "exceptions", "privacy", "mechanisms", "data", "moments"},
    # The command line sits on top of its own layer: it drives datasets, metrics, plots, testing and reproduce.
    "cli": {name for name, layer in LAYER.items() if layer <= 4},
}


@functools.lru_cache(maxsize=None)
def _tree(path):
    return parse(path.read_text())


def _top(module_path):
    rel = module_path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py")


def _imported_tops(path):
    """Yield (top-level dpmoments subpackage, line) for every import in ``path``."""
    package = ["dpmoments", *path.relative_to(ROOT).parts[:-1]]
    for node in ast.walk(_tree(path)):
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


def _rel(path):
    return str(path.relative_to(ROOT))


def _allowed_in(path, places):
    """Whether ``path`` is in one of ``places``: a top-level package or module name, or a relative file path."""
    return _top(path) in places or _rel(path) in places


def _calls(path, *, methods_only=False):
    """Yield (called name, line): ``f`` of ``f(...)`` and of ``x.f(...)``, or only the latter."""
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                yield func.attr, node.lineno
            elif isinstance(func, ast.Name) and not methods_only:
                yield func.id, node.lineno


# ---------------------------------------------------------------- noise only in mechanisms/
# Methods of numpy's Generator (and the stdlib's random) that draw random numbers.
SAMPLERS = {
    "normal", "standard_normal", "multivariate_normal", "lognormal", "laplace", "gumbel", "logistic",
    "exponential", "standard_exponential", "gamma", "standard_gamma", "beta", "chisquare", "standard_t",
    "standard_cauchy", "uniform", "random", "integers", "choice", "permutation", "permuted", "shuffle",
    "binomial", "negative_binomial", "poisson", "geometric", "multinomial", "dirichlet", "bytes",
    "random_raw", "randint", "randrange", "randbelow", "getrandbits", "rand", "randn", "sample",
}
# Privacy noise is drawn in mechanisms/. Other draws, none of them noise: _rng derives a child
# generator's seed; solvers draw random starts that depend on no data and release nothing; datasets,
# reproductions and the auditor simulate data.
MAY_SAMPLE = {"mechanisms", "_rng", "solvers", "datasets", "reproduce", "testing"}


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_noise_is_drawn_only_in_mechanisms(path):
    if _allowed_in(path, MAY_SAMPLE):
        return
    draws = [f"{_rel(path)}:{line} calls .{name}()" for name, line in _calls(path, methods_only=True)
             if name in SAMPLERS]
    assert not draws, f"draw noise through dpmoments.mechanisms, not here: {draws}"


# ---------------------------------------------------------------- no private names across packages
def _imports(path):
    """Yield (module, name or None, line) for every dpmoments import in ``path``, inside functions too."""
    package = ["dpmoments", *path.relative_to(ROOT).parts[:-1]]
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "dpmoments":
                    yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if module.split(".")[0] == "dpmoments":
                for alias in node.names:
                    yield module, alias.name, node.lineno


def _private(name):
    return name.startswith("_") and not name.startswith("__")


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_no_private_names_across_packages(path):
    """Another package's ``_name`` or ``_module`` is its own business (the layer-0 ``_validation``, ``_rng``
    and ``_lazy`` are modules every layer may use, but not their private names)."""
    own = _top(path)
    for module, name, line in _imports(path):
        parts = module.split(".")[1:] + ([name] if name else [])
        if not parts or parts[0] == own:
            continue
        assert not any(_private(part) for part in parts[1:]), (
            f"{_rel(path)}:{line} imports the private {'.'.join(parts)} of another package; make it public"
        )


# ---------------------------------------------------------------- no import circles
def _module_name(path):
    parts = ["dpmoments", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph():
    """Module -> the dpmoments modules it imports (a name that is a submodule counts as that submodule)."""
    modules = {_module_name(p): p for p in MODULES}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for module, imported, _ in _imports(path):
            sub = f"{module}.{imported}" if imported else None
            if sub in modules:
                targets.add(sub)
            elif not (imported and any(ROOT.joinpath(*module.split(".")[1:]).glob(f"{imported}.*"))):
                targets.add(module)  # a name from the module (a compiled extension is a leaf: no edge)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _circles(graph):
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_circles():
    """A package's ``__init__`` imports its modules, so a module may not import its own package either."""
    assert _circles(_import_graph()) == []


def test_a_circle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]


# ---------------------------------------------------------------- what kind of input is this? asked once
# data/ answers it (as_source); dask's own engine tells a dask DataFrame from a dask array; the command
# line opens its own files.
MAY_ASK_THE_KIND = {"data", "moments/dask_moments.py", "cli"}


def _kind_probes(path):
    """Calls of ``is_dask_collection`` and ``isinstance(x, (..., os.PathLike))``: the input-kind questions."""
    for node in ast.walk(_tree(path)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", None))
        if name == "is_dask_collection":
            yield node.lineno
        elif name == "isinstance" and len(node.args) == 2 and "PathLike" in ast.unparse(node.args[1]):
            yield node.lineno


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_the_kind_of_input_is_asked_in_one_place(path):
    if _allowed_in(path, MAY_ASK_THE_KIND):
        return
    probes = [f"{_rel(path)}:{line}" for line in _kind_probes(path)]
    assert not probes, f"ask dpmoments.data.as_source(X) what the input is, not here: {probes}"


# ---------------------------------------------------------------- importlib only where a layer dispatches by name
MAY_IMPORT_BY_NAME = {"__init__", "_lazy", "cli"}  # the packages' lazy attributes; the commands and the reproductions


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_modules_are_imported_by_name_only_by_the_dispatchers(path):
    if _allowed_in(path, MAY_IMPORT_BY_NAME):
        return
    calls = [f"{_rel(path)}:{line}" for name, line in _calls(path) if name in ("import_module", "__import__")]
    assert not calls, f"import_module hides an import from the layer test: {calls}"


# ---------------------------------------------------------------- third-party packages where they are needed
# NumPy and SciPy are used throughout; everything else only where the architecture puts it.
THIRD_PARTY = {
    "sklearn": {"estimators", "reproduce", "cli"},
    "matplotlib": {"plots", "reproduce"},
    "statsmodels": {"reproduce"},
    # The readers; dask (and pandas, its own dependency) also where moments are summed per block.
    "pyarrow": {"data"},
    "pandas": {"data", "moments/dask_moments.py"},
    "dask": {"data", "moments", "cli/_io.py", "cli/_cluster.py"},
    # The cluster scheduler: the command line's --scheduler client, the workers' progress events, and the active
    # client whose workers keep the blocks of one release parsed once (data/dask_spill.py).
    "distributed": {"cli/_cluster.py", "data/dask_tables.py", "data/dask_spill.py"},
    # Remote files (s3://, gs://, https://) for the one reader's file sets.
    "fsspec": {"data/file_sets.py"},
    "zarr": {"data"},
    # The transports of the multi-site wing.
    "flwr": {"multisite/flower.py", "multisite/_supernode.py", "cli/_serverapp.py"},
    "grpc": {"multisite/grpc_transport.py"},
    "cryptography": {"multisite/tls.py"},
}


def _third_party(path):
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ("dpmoments", "numpy", "scipy"):
                yield top, node.lineno


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_third_party_packages_stay_where_they_are_needed(path):
    for name, line in _third_party(path):
        assert name in THIRD_PARTY, f"{_rel(path)}:{line} imports {name!r}, which has no place in THIRD_PARTY"
        assert _allowed_in(path, THIRD_PARTY[name]), (
            f"{_rel(path)}:{line} imports {name!r}; only {sorted(THIRD_PARTY[name])} may"
        )


def test_plots_not_imported_by_root():
    source = (ROOT / "__init__.py").read_text()
    assert "plots" not in source and "matplotlib" not in source


# ---------------------------------------------------------------- commands stand on shared code, never on each other
def _commands():
    from dpmoments.cli import COMMANDS

    return set(COMMANDS)


@pytest.mark.parametrize("path", sorted((ROOT / "cli").rglob("*.py")), ids=_rel)
def test_no_command_imports_another(path):
    """A command module (a name in ``cli.COMMANDS``) is imported only by the dispatcher, ``cli/__init__.py``
    (by name). What two commands share lives in ``cli/_*.py`` or ``cli/present/``, which are for everyone."""
    if _rel(path) == "cli/__init__.py":
        return
    commands = {f"dpmoments.cli.{name}" for name in _commands()}
    found = [f"{_rel(path)}:{line} imports {module}{'.' + name if name else ''}"
             for module, name, line in _imports(path)
             if module in commands or (module == "dpmoments.cli" and name in _commands())]
    assert not found, f"a command imports another command; move what they share to cli/_*.py or cli/present/: {found}"


def test_a_command_import_is_found(tmp_path, monkeypatch):
    """The rule above sees ``from .regress import x`` and ``from . import regress``."""
    fake = ROOT / "cli" / "select.py"
    source = "from .regress import read_in_memory\nfrom . import precision\n"
    real = _tree  # the cache of parsed modules stays warm for the other rules
    monkeypatch.setitem(globals(), "_tree", lambda path: parse(source) if path == fake else real(path))
    found = [(m, n) for m, n, _ in _imports(fake)]
    assert ("dpmoments.cli.regress", "read_in_memory") in found and ("dpmoments.cli", "precision") in found


def test_every_multisite_analysis_has_a_presenter():
    from dpmoments.cli.present import PRESENTERS
    from dpmoments.multisite.analyses import ANALYSES

    assert set(PRESENTERS) == set(ANALYSES)
    from dpmoments.cli._multisite import ANALYSES as OFFERED
    assert OFFERED == tuple(ANALYSES)  # the multi-site commands offer the wing's table, in its order
    assert all(callable(getattr(module, "across_sites", None)) for module in PRESENTERS.values())


# ---------------------------------------------------------------- small files, short functions
MAX_LINES = 500  # no source file over this (docs/architecture.md, 'Size and style')
MAX_COMPLEXITY = 20  # McCabe complexity 21 and above is radon's rank D: split such a function into named steps
# Parsers, whose branches are the grammar they accept: one long decision list reads better than pieces.
COMPLEX_PARSERS = {"multisite/messages.py:from_wire"}  # decodes a wire message of each kind, refusing the rest


def _sources():
    return sorted(ROOT.rglob("*.py"))


def test_no_source_file_is_over_500_lines():
    long = {_rel(p): n for p in _sources() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"files over {MAX_LINES} lines; split them along a seam: {long}"


def _match_points(node):
    wildcard = any(getattr(case.pattern, "pattern", False) is None for case in node.cases)
    return max(0, len(node.cases) - wildcard)


# The branches a node itself adds to a function's McCabe complexity, counted as radon counts them.
_POINTS = {
    ast.If: lambda node: 1, ast.IfExp: lambda node: 1, ast.Assert: lambda node: 1,
    ast.For: lambda node: 1 + bool(node.orelse), ast.AsyncFor: lambda node: 1 + bool(node.orelse),
    ast.While: lambda node: 1 + bool(node.orelse),
    ast.Try: lambda node: len(node.handlers) + bool(node.orelse),
    ast.BoolOp: lambda node: len(node.values) - 1,
    ast.comprehension: lambda node: 1 + len(node.ifs),
    ast.Match: _match_points,
}
_DEFS = {ast.FunctionDef, ast.AsyncFunctionDef}


def _walk(nodes, counter, prefix, found):
    """Add each node's decision points under ``nodes`` to ``counter`` (a one-item list; None outside a function);
    a function met on the way is measured on its own, from its body (radon: its decorators and defaults count
    nowhere), into ``found`` as ``(qualified name, complexity)``."""
    for node in nodes:
        kind = type(node)
        if kind is ast.ClassDef:
            _walk(node.body, None, f"{prefix}{node.name}.", found)
        elif kind in _DEFS:
            found.append((f"{prefix}{node.name}", complexity(node, f"{prefix}{node.name}.", found)))
        else:
            if counter is not None and kind in _POINTS:
                counter[0] += _POINTS[kind](node)
            _walk(ast.iter_child_nodes(node), counter, prefix, found)


def complexity(function, prefix="", found=None):
    """McCabe complexity of a function's body: 1 + its branches, boolean operators, comprehension loops and
    ifs, and exception handlers, as radon's ``cc`` counts them (nested functions are measured on their own:
    ``found`` collects them)."""
    counter = [1]
    _walk(function.body, counter, prefix, [] if found is None else found)
    return counter[0]


def _functions(tree):
    """``[(qualified name, complexity)]`` of every function and method of a module, nested ones too."""
    found = []
    _walk(tree.body, None, "", found)
    return found


def test_no_function_outside_the_parsers_reaches_complexity_21():
    found = {f"{_rel(p)}:{name}": c for p in _sources() for name, c in _functions(_tree(p)) if c > MAX_COMPLEXITY}
    over = {k: c for k, c in found.items() if k not in COMPLEX_PARSERS}
    assert not over, f"functions of McCabe complexity > {MAX_COMPLEXITY}; extract named steps: {over}"
    assert set(found) == COMPLEX_PARSERS, "a parser on the allow-list is simple now: take it off"


# Each case's complexity as radon 6 (``radon cc``) reports it, so the counter above measures what radon does.
RADON_CASES = {
    "def f(x):\n    return x\n": 1,
    "def f(x):\n    if x and y or z:\n        return 1\n    elif x:\n        return 2\n    return 3 if x else 4\n": 6,
    "def f(xs):\n    for x in xs:\n        while x:\n            x -= 1\n        else:\n            pass\n"
    "    return [a for a in xs if a if not a] + [b for c in xs for b in c]\n": 9,
    "def f():\n    try:\n        g()\n    except ValueError:\n        pass\n    except (KeyError, TypeError):\n"
    "        pass\n    else:\n        h()\n    finally:\n        k()\n    assert g()\n    with g():\n        pass\n": 5,
    "def f(x=1 if a else 2):\n    def inner(y):\n        if y:\n            return y\n    h = lambda z: z if z else 0\n"
    "    return {k: v for k, v in x.items() if v}\n": 4,
    "def f(x):\n    match x:\n        case 1:\n            return 1\n        case [a, b] if a:\n            return 2\n"
    "        case _:\n            return 3\n": 3,
}


@pytest.mark.parametrize("source", RADON_CASES, ids=range(len(RADON_CASES)))
def test_the_complexity_counter_agrees_with_radon(source):
    tree = parse(source)
    assert complexity(tree.body[0]) == RADON_CASES[source]
    if "inner" in source:  # a nested function is measured on its own, as radon measures it
        assert dict(_functions(tree)) == {"f": 4, "f.inner": 2}
