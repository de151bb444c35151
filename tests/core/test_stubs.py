"""The type stub of the compiled core (rateopt/_core.pyi) matches the binding.

The reference is the compiled module itself: pybind11 writes each function's
signature as the first line of its ``__doc__`` (``name(a: T, b: U = 0.0) -> R``).
The stub is read with :mod:`ast`. Every function (and class, with its methods)
must appear in both, with the same parameter names in the same order, the same
parameters defaulted (and the same default where the stub spells one out), and
parameter and return types of the same kind. A binding added, removed or renamed
without the stub fails here.
"""

import ast
import inspect
import pathlib
import re

import pytest

from rateopt import _core

STUB = pathlib.Path(_core.__file__).with_name("_core.pyi")


# --------------------------------------------------------------------------- the binding's signatures


def _split_top_level(text):
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def _binding_signature(name, doc):
    """``([(param, type, default or None)], return type)`` from a pybind11 docstring's first line."""
    first = (doc or "").strip().splitlines()[0] if doc else ""
    m = re.fullmatch(rf"{re.escape(name)}\((.*)\) -> (.+)", first)
    assert m, f"_core.{name}: no pybind11 signature line in its docstring: {first!r}"
    params = []
    for part in _split_top_level(m.group(1)):
        head, _, default = part.partition(" = ")
        pname, _, ptype = head.partition(": ")
        params.append((pname.strip(), ptype.strip(), default.strip() or None))
    return params, m.group(2).strip()


def _binding_functions(namespace):
    return {name: obj for name, obj in vars(namespace).items()
            if not name.startswith("__") and callable(obj) and not isinstance(obj, type)}


# --------------------------------------------------------------------------- the stub's signatures


def _stub_tree():
    if not STUB.exists():  # pragma: no cover - the stub ships next to the module (wheel.packages)
        pytest.fail(f"{STUB} is missing: the package ships the stub of its compiled core")
    return ast.parse(STUB.read_text())


def _stub_params(fn):
    a = fn.args
    assert not (a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs), f"{fn.name}: *args/**kwargs in the stub"
    defaults = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults)
    return [(arg.arg, arg.annotation, d) for arg, d in zip(a.args, defaults)]


# --------------------------------------------------------------------------- kinds of types

# A pybind11 type (as printed by 2.12 to 3.x) and a stub annotation are compared by kind.
_BINDING_KINDS = [
    (r"numpy\.ndarray|NDArray", "array"),
    (r"^(typing\.)?SupportsFloat|^float$", "float"),
    (r"^(typing\.)?SupportsInt|^int$", "int"),
    (r"^bool$", "bool"),
    (r"^(list|typing\.List)\b", "list"),
    (r"^(dict|typing\.Dict)\b", "dict"),
    (r"^(tuple|typing\.Tuple)\b", "tuple"),
    (r"Callable", "callable"),
    (r"^None$", "none"),
    (r"^object$", "any"),
]


def _binding_kind(text):
    for pattern, kind in _BINDING_KINDS:
        if re.search(pattern, text):
            return kind
    raise AssertionError(f"unknown pybind11 type {text!r}: teach tests/core/test_stubs.py its kind")


def _stub_kinds(node):
    """The kinds an annotation admits (``X | None`` admits X's kind and "none")."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _stub_kinds(node.left) | _stub_kinds(node.right)
    if isinstance(node, ast.Constant) and node.value is None:
        return {"none"}
    base = node.value if isinstance(node, ast.Subscript) else node
    name = ast.unparse(base).split(".")[-1]
    kinds = {"NDArray": "array", "ndarray": "array", "float": "float", "int": "int", "bool": "bool",
             "list": "list", "dict": "dict", "tuple": "tuple", "Callable": "callable", "Any": "any"}
    assert name in kinds, f"stub annotation {ast.unparse(node)!r}: teach tests/core/test_stubs.py its kind"
    return {kinds[name]}


def _check_kind(where, binding_type, stub_annotation):
    assert stub_annotation is not None, f"{where}: the stub has no annotation"
    expected = _binding_kind(binding_type)
    stub = _stub_kinds(stub_annotation)
    if expected == "any" or stub == {"any"}:
        return  # py::object takes anything: the stub narrows it (e.g. an array or None)
    assert expected in stub and stub <= {expected, "none"} | ({"int"} if expected == "float" else set()), (
        f"{where}: the binding takes/returns {binding_type!r}, the stub says {ast.unparse(stub_annotation)!r}"
    )


# --------------------------------------------------------------------------- the tests


def _compare_function(qualname, obj, stub_fn, skip_self=False):
    params, returns = _binding_signature(obj.__name__, obj.__doc__)
    stub_params = _stub_params(stub_fn)
    if skip_self:
        params, stub_params = params[1:], stub_params[1:]
    assert [p[0] for p in stub_params] == [p[0] for p in params], f"{qualname}: parameter names or order differ"
    for (pname, ptype, default), (_, annotation, stub_default) in zip(params, stub_params):
        where = f"{qualname}({pname})"
        assert (default is None) == (stub_default is None), f"{where}: defaulted in one and not the other"
        if stub_default is not None and not (isinstance(stub_default, ast.Constant) and stub_default.value is ...):
            assert ast.literal_eval(stub_default) == ast.literal_eval(default), f"{where}: defaults differ"
        _check_kind(where, ptype, annotation)
    _check_kind(f"{qualname} -> ", returns, stub_fn.returns)


def test_stub_declares_exactly_the_compiled_functions():
    tree = _stub_tree()
    stub = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    compiled = set(_binding_functions(_core))
    assert not compiled - stub, f"bound in _core but not in _core.pyi: {sorted(compiled - stub)}"
    assert not stub - compiled, f"in _core.pyi but not bound in _core: {sorted(stub - compiled)}"


def test_stub_declares_exactly_the_compiled_classes():
    tree = _stub_tree()
    stub = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    compiled = {name: obj for name, obj in vars(_core).items() if isinstance(obj, type)}
    assert set(stub) == set(compiled)
    for name, cls in compiled.items():
        methods = {n.name: n for n in stub[name].body if isinstance(n, ast.FunctionDef)}
        bound = {k: v for k, v in _binding_functions(cls).items() if k == "__init__" or not k.startswith("_")}
        assert set(methods) >= set(bound), f"{name}: methods missing from the stub: {set(bound) - set(methods)}"
        for mname, method in bound.items():
            _compare_function(f"{name}.{mname}", method, methods[mname], skip_self=True)


@pytest.mark.parametrize("name", sorted(_binding_functions(_core)))
def test_stub_signature_matches_the_binding(name):
    tree = _stub_tree()
    stub = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if name not in stub:
        pytest.fail(f"_core.{name} is not in _core.pyi")
    _compare_function(f"_core.{name}", getattr(_core, name), stub[name])


def test_the_signature_reader_sees_what_python_sees():
    """The parsed names agree with inspect where Python can read a signature itself."""
    params, returns = _binding_signature("swap_update_multiplicative", _core.swap_update_multiplicative.__doc__)
    assert [p[0] for p in params] == ["log_M", "delta", "lam", "eta", "floor"]
    assert params[-1][2] == "0.0"
    assert _binding_kind(params[0][1]) == "array" and _binding_kind(returns) == "array"
    try:
        sig = inspect.signature(_core.swap_update_multiplicative)
    except (TypeError, ValueError):
        return  # pybind11 functions carry no __text_signature__ in most versions
    assert list(sig.parameters) == [p[0] for p in params]


def test_a_renamed_parameter_is_caught():
    """The comparison fails on a stub that renames one parameter (it is not vacuous)."""
    fn = ast.parse("def project_simplex(w: NDArray[np.float64], radius: float) -> NDArray[np.float64]: ...").body[0]
    with pytest.raises(AssertionError, match="parameter names"):
        _compare_function("_core.project_simplex", _core.project_simplex, fn)
    fn = ast.parse("def project_simplex(v: NDArray[np.float64], radius: int) -> NDArray[np.float64]: ...").body[0]
    with pytest.raises(AssertionError, match="radius"):
        _compare_function("_core.project_simplex", _core.project_simplex, fn)
