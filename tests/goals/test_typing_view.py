"""What type checkers see of each goal's constructor matches the runtime dataclass.

goal_fields and bound_goal build the recipes' fields at import time; type checkers
(PEP 681, dataclass_transform) see only annotations, so each recipe declares the
fields those decorators add under ``if TYPE_CHECKING:``. This test rebuilds the
type checker's view from the source (annotated fields of the class and its bases,
TYPE_CHECKING blocks included, in dataclass order: keyword-only fields after the
positional ones) and compares it with ``inspect.signature`` of the runtime class:
names, order, positional or keyword-only, and which have defaults.
"""

import ast
import inspect
import pathlib

import pytest

import rateopt.goals as goals_module
from rateopt.goals import Goal

_TREES = {}


def _class_node(cls):
    path = pathlib.Path(inspect.getsourcefile(cls))
    if path not in _TREES:
        _TREES[path] = ast.parse(path.read_text())
    return next(n for n in ast.walk(_TREES[path]) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)


def _annotated(body):
    """The annotated assignments of a class body, ``if TYPE_CHECKING:`` blocks included, in order."""
    for stmt in body:
        if isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "TYPE_CHECKING":
            yield from _annotated(stmt.body)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if not ast.unparse(stmt.annotation).startswith("ClassVar"):
                yield stmt


def _kw_only(stmt):
    v = stmt.value
    return (isinstance(v, ast.Call) and ast.unparse(v.func) == "field"
            and any(k.arg == "kw_only" and getattr(k.value, "value", None) is True for k in v.keywords))


def _static_view(cls):
    """``[(name, keyword_only, has_default)]`` as a dataclass-aware type checker orders them."""
    fields = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not issubclass(klass, Goal):
            continue
        for stmt in _annotated(_class_node(klass).body):
            fields[stmt.target.id] = (_kw_only(stmt), stmt.value is not None)
    positional = [(n, kw, d) for n, (kw, d) in fields.items() if not kw]
    keyword = [(n, kw, d) for n, (kw, d) in fields.items() if kw]
    return positional + keyword


def _runtime_view(cls):
    params = list(inspect.signature(cls).parameters.values())
    return [(p.name, p.kind is inspect.Parameter.KEYWORD_ONLY, p.default is not inspect.Parameter.empty)
            for p in params]


_RECIPES = sorted({obj for obj in vars(goals_module).values()
                   if isinstance(obj, type) and issubclass(obj, Goal) and obj is not Goal}, key=lambda c: c.__name__)


def test_every_recipe_is_covered():
    assert len(_RECIPES) >= 20


@pytest.mark.parametrize("cls", _RECIPES, ids=lambda c: c.__name__)
def test_type_checkers_see_the_runtime_signature(cls):
    runtime = _runtime_view(cls)
    static = _static_view(cls)
    # Keyword-only fields may come in any order (they are passed by name); positional ones in order.
    assert [f for f in static if not f[1]] == [f for f in runtime if not f[1]]
    assert sorted(f for f in static if f[1]) == sorted(f for f in runtime if f[1])
