"""The package's imports point one way: down the layers of docs/architecture.md.

Read from the source with :mod:`ast` (nothing is imported), so the test sees
function-level imports too. It fails on

* an import cycle between modules of ``rateopt`` (any import, at any depth);
* an import from a module of a higher layer than the importer's;
* an import of the compiled module ``rateopt._core`` outside ``rateopt.core``;
* a function-level import of a ``rateopt`` module (those stay lazy only for
  optional third-party dependencies: matplotlib, dask, pyarrow, pandas, tqdm);
* an import of a ``_private`` name from another module (a module that lends a
  name to another makes it public in its own, private, module);
* ``__all__ +=`` or a ``# noqa: E402`` import in the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "rateopt"

#: The layers, lowest first. A module may import modules of its own layer or
#: of lower ones; the longest matching prefix decides a module's layer.
LAYERS = (
    ("rateopt.exceptions", "rateopt._version", "rateopt._utils"),
    ("rateopt.core", "rateopt._core"),
    ("rateopt._language",),
    ("rateopt.metrics",),
    ("rateopt.goals",),
    ("rateopt._compiler",),
    ("rateopt._predictors",),
    ("rateopt._postprocess",),
    ("rateopt._training",),
    ("rateopt.oracles", "rateopt.games"),
    ("rateopt._solutions",),
    ("rateopt._params",),
    ("rateopt._train",),
    ("rateopt._methods",),
    ("rateopt._estimator", "rateopt._threshold_classifier", "rateopt._io", "rateopt._demo", "rateopt._group_rates", "rateopt._assess",
     "rateopt.datasets"),
    ("rateopt.plot",),
    ("rateopt.report",),
    ("rateopt.cli", "rateopt.dask"),
    ("rateopt", "rateopt.__main__"),
)


def _modules():
    """``{dotted name: (path, is_package)}`` of every module of the package (plus the compiled core)."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


MODULES = _modules()
KNOWN = set(MODULES) | {"rateopt._core"}


def layer_of(module):
    best, rank = -1, None
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    return rank


class _Import:
    def __init__(self, source, target, line, nested, name=None):
        self.source, self.target, self.line, self.nested, self.name = source, target, line, nested, name

    def __repr__(self):
        what = f"{self.target}.{self.name}" if self.name else self.target
        return f"{self.source}:{self.line} imports {what}"


def _known_prefix(name):
    while name and name not in KNOWN:
        name = name.rpartition(".")[0]
    return name


def _imports(module, path, is_pkg):
    """Every import of a ``rateopt`` module in ``module``, with its line and whether it is in a function."""
    tree = ast.parse(path.read_text(), str(path))
    found = []

    def visit(node, nested):
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    target = _known_prefix(alias.name)
                    if target:
                        found.append(_Import(module, target, child.lineno, nested))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = module.split(".") if is_pkg else module.split(".")[:-1]
                    base = base[:len(base) - (child.level - 1)]
                    source = ".".join(base + ([child.module] if child.module else []))
                else:
                    source = child.module or ""
                for alias in child.names:
                    full = f"{source}.{alias.name}"
                    if full in KNOWN:
                        found.append(_Import(module, full, child.lineno, nested))
                    elif _known_prefix(source):
                        found.append(_Import(module, _known_prefix(source), child.lineno, nested, alias.name))
            visit(child, inner)

    visit(tree, False)
    return [imp for imp in found if imp.target != module]


IMPORTS = [imp for module, (path, is_pkg) in sorted(MODULES.items()) for imp in _imports(module, path, is_pkg)]


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) is None] == []


def test_no_upward_import():
    upward = [imp for imp in IMPORTS if layer_of(imp.target) > layer_of(imp.source)]
    assert upward == [], "imports from a higher layer:\n" + "\n".join(map(repr, upward))


def test_no_import_cycle():
    graph = {m: set() for m in KNOWN}
    for imp in IMPORTS:
        graph[imp.source].add(imp.target)
    # Tarjan's strongly connected components, iteratively.
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert cycles == []


def test_only_core_imports_the_compiled_module():
    outside = [imp for imp in IMPORTS if imp.target == "rateopt._core" and not imp.source.startswith("rateopt.core")]
    assert outside == []


def test_no_function_level_import_of_the_package():
    nested = [imp for imp in IMPORTS if imp.nested]
    assert nested == [], "function-level imports of rateopt modules:\n" + "\n".join(map(repr, nested))


#: The optional dependencies a module may import lazily (inside a function), so rateopt imports without them.
OPTIONAL = frozenset({"pandas", "matplotlib", "tqdm", "dask", "distributed", "pyarrow"})
#: The required dependencies (or parts of them) that are slow to import: imported inside the functions that
#: need them, so that ``import rateopt`` stays fast (issue 34; tests/test_lazy_imports.py checks the result).
SLOW_TO_IMPORT = frozenset({"sklearn", "highspy", "scipy.stats", "scipy.optimize", "scipy.special"})
#: Function-level imports of other modules that must stay where they are, with the reason.
LAZY_BY_DESIGN = {
    ("rateopt.dask._cluster", "importlib"): "the worker probe is shipped by value and imports rateopt there",
    ("rateopt._assess._intervals", "scipy"): "scipy.special (~0.4 s) loads when an interval is computed, not with "
                                             "import rateopt",
}


def _function_level_imports(module, path):
    """``(module name, line)`` of every absolute import inside a function of ``module``."""
    found = []

    def visit(node, nested):
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if nested and isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno) for alias in child.names)
            elif nested and isinstance(child, ast.ImportFrom) and not child.level:
                found.append((child.module or "", child.lineno))
            visit(child, inner)

    visit(ast.parse(path.read_text(), str(path)), False)
    return found


def _may_be_lazy(name):
    """An optional dependency, or a slow-to-import part of a required one (the name or a package above it)."""
    parts = name.split(".")
    prefixes = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return parts[0] in OPTIONAL or bool(prefixes & SLOW_TO_IMPORT)


def test_function_level_imports_are_for_optional_dependencies_only():
    lazy = [f"{module}:{line} imports {name}" for module, (path, _) in sorted(MODULES.items())
            for name, line in _function_level_imports(module, path)
            if not _may_be_lazy(name) and (module, name.partition(".")[0]) not in LAZY_BY_DESIGN]
    assert lazy == [], "function-level imports of required modules:\n" + "\n".join(lazy)


def test_no_private_name_crosses_modules():
    private = [imp for imp in IMPORTS if imp.name and imp.name.startswith("_") and not imp.name.startswith("__")]
    assert private == [], "private names imported from another module:\n" + "\n".join(map(repr, private))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_appended_exports_or_late_imports(module):
    text = MODULES[module][0].read_text()
    assert "__all__ +=" not in text
    assert "noqa: E402" not in text


# --- the checker itself, on a made-up package ------------------------------ #


def test_layer_of_takes_the_longest_prefix():
    assert layer_of("rateopt.core._loop") == layer_of("rateopt.core")
    assert layer_of("rateopt._train") > layer_of("rateopt._training._spec")
    assert layer_of("rateopt") == len(LAYERS) - 1
    assert layer_of("rateopt.cli._commands") > layer_of("rateopt._params")


def test_imports_are_resolved_relative_to_the_module(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("from .._language._rates import Expression\nfrom . import _no_such_module\n"
                    "def f():\n    from ..exceptions import _Hidden\n")
    found = _imports("rateopt.core._matrix", path, False)
    assert [(i.target, i.nested, i.name) for i in found] == [
        ("rateopt._language._rates", False, "Expression"), ("rateopt.core", False, "_no_such_module"),
        ("rateopt.exceptions", True, "_Hidden")]
    assert layer_of(found[0].target) > layer_of("rateopt.core._matrix")  # an upward import is seen as one



def test_function_level_imports_are_found_with_their_package(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import json\ndef f():\n    import scipy.optimize\n    from pandas import DataFrame\n"
                    "    import scipy.linalg\n    from sklearn.base import clone\n    import numpy\n")
    found = _function_level_imports("rateopt.x", path)
    assert found == [("scipy.optimize", 3), ("pandas", 4), ("scipy.linalg", 5), ("sklearn.base", 6), ("numpy", 7)]
    assert [name for name, _ in found if not _may_be_lazy(name)] == ["scipy.linalg", "numpy"]  # the check flags them
