"""Predicates: the small trees that describe a subset of a dataset.

A :class:`~rateopt.Context` is a dataset and a predicate: a group value, a
label, a baseline decision, a boolean mask, or an intersection, union or
complement of predicates. Predicates are small immutable value objects with
structural equality, so two contexts built the same way compare equal (and
share a cached mask at compile time); :class:`Mask` compares by the identity of
its (private, read-only) array. A predicate is evaluated to a boolean mask over
its dataset (``evaluate(ds)``, vectorized NumPy) only when a problem is
compiled.
"""

from __future__ import annotations

import numpy as np

from rateopt.exceptions import MissingBaselineError, MissingLabelsError

__all__ = ["Predicate", "All", "Mask", "GroupIs", "LabelIs", "BaselineIs", "And", "Or", "Not", "wrap",
           "intersection", "union", "describe_group_value", "group_columns"]


def _format_value(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, np.generic):
        v = v.item()
    return str(v)


def describe_group_value(column, value) -> str:
    """The name of the subset ``column = value`` (what ``GroupIs(column, (value,)).describe()`` gives).

    Parameters
    ----------
    column : str
        The group column.
    value : object
        One group value.

    Returns
    -------
    str
        ``"<column>=<value>"``.
    """
    return f"{column}={_format_value(value)}"


class Predicate:
    """Base of the predicates: ``evaluate(ds)`` gives the members' mask, ``describe()`` the name."""

    __slots__ = ()
    #: True when the predicate is the whole dataset.
    is_all = False

    def evaluate(self, ds) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _key(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__, self._key()))


class All(Predicate):
    """The whole dataset."""

    __slots__ = ()
    is_all = True

    def evaluate(self, ds):
        return np.ones(ds.n_samples, dtype=bool)

    def describe(self):
        return "all"

    def _key(self):
        return ()


class Mask(Predicate):
    """A boolean mask given by the user (read-only, private), under a label."""

    __slots__ = ("mask", "label")

    def __init__(self, mask: np.ndarray, label: str):
        self.mask = mask
        self.label = label

    def evaluate(self, ds):
        return self.mask

    def describe(self):
        return self.label

    def _key(self):
        return (id(self.mask),)


class GroupIs(Predicate):
    """The rows whose group column ``column`` holds one of ``values``."""

    __slots__ = ("column", "values")

    def __init__(self, column, values: tuple):
        self.column = column
        self.values = values

    def evaluate(self, ds):
        factorized = getattr(ds, "group_factorization", None)
        if factorized is None:
            return self._members(ds.groups[self.column])
        values, codes = factorized(self.column)  # one factorization per column, an integer compare per group
        position = getattr(ds, "group_positions", None)
        where = position(self.column) if position is not None else None
        try:
            found = None if where is None else [where.get(v) for v in self.values]
        except TypeError:  # an unhashable value: compare it
            found = None
        if found is not None and all(f is not None for f in found):
            hit = np.unique(np.array(found, dtype=np.int64))
        else:
            hit = np.flatnonzero(self._members(values))
        if hit.size == 1:
            return codes == hit[0]
        return np.isin(codes, hit)

    def _members(self, col):
        """Which entries of ``col`` equal one of the values (elementwise ``==``)."""
        if len(self.values) == 1:
            hits = np.asarray(col == self.values[0], dtype=bool)
            return hits if hits.shape == col.shape else np.broadcast_to(hits, col.shape).copy()
        return np.isin(col, np.array(self.values, dtype=object if col.dtype.kind == "O" else None))

    def describe(self):
        if len(self.values) == 1:
            return describe_group_value(self.column, self.values[0])
        inner = ", ".join(_format_value(v) for v in self.values)
        return f"{self.column} in {{{inner}}}"

    def _key(self):
        return (self.column, self.values)


class _BinaryIs(Predicate):
    """The rows whose 0/1 column ``_column`` (the label, the baseline's decision) is ``value``."""

    __slots__ = ("value",)
    _column = ""

    def __init__(self, value: int):
        self.value = value

    def describe(self):
        return f"{self._column}={self.value}"

    def _key(self):
        return (self.value,)


class LabelIs(_BinaryIs):
    """The rows labeled ``value`` (0 or 1)."""

    __slots__ = ()
    _column = "y"

    def evaluate(self, ds):
        if ds.y is None:
            raise MissingLabelsError(f"dataset {ds.name!r} has no labels")
        return ds.y == self.value


class BaselineIs(_BinaryIs):
    """The rows the baseline model decides ``value`` (0 or 1) on."""

    __slots__ = ()
    _column = "baseline"

    def evaluate(self, ds):
        if ds.baseline is None:
            raise MissingBaselineError(f"dataset {ds.name!r} has no baseline")
        return ds.baseline if self.value == 1 else ~ds.baseline


class _Joined(Predicate):
    """The intersection or union (``_combine``) of ``parts``, named by joining theirs with ``_sep``."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple):
        self.parts = parts

    def evaluate(self, ds):
        out = np.array(self.parts[0].evaluate(ds), dtype=bool, copy=True)
        for p in self.parts[1:]:
            self._combine(out, p.evaluate(ds), out=out)
        return out

    def describe(self):
        return f" {self._sep} ".join(wrap(p.describe(), self._other) for p in self.parts)

    def _key(self):  # intersection and union are commutative: order only matters for the name
        return frozenset(self.parts)


class And(_Joined):
    """The intersection of ``parts``."""

    __slots__ = ()
    _combine, _sep, _other = np.bitwise_and, "&", "|"


class Or(_Joined):
    """The union of ``parts``."""

    __slots__ = ()
    _combine, _sep, _other = np.bitwise_or, "|", "&"


class Not(Predicate):
    """The complement of ``part`` within the dataset."""

    __slots__ = ("part",)

    def __init__(self, part: Predicate):
        self.part = part

    def evaluate(self, ds):
        return ~np.asarray(self.part.evaluate(ds), dtype=bool)

    def describe(self):
        return f"not({self.part.describe()})"

    def _key(self):
        return (self.part,)


def wrap(text: str, op: str) -> str:
    """``text`` in parentheses if it holds the operator ``op`` (for names of combined subsets)."""
    return f"({text})" if f" {op} " in text else text


def intersection(a: Predicate, b: Predicate) -> Predicate:
    """``a & b``, flattened (nested intersections, repeats and the whole dataset drop out)."""
    if a.is_all:
        return b
    if b.is_all:
        return a
    if a == b:
        return a
    return _joined(And, a, b)


def union(a: Predicate, b: Predicate) -> Predicate:
    """``a | b``, flattened (nested unions and repeats drop out; the whole dataset absorbs)."""
    if a.is_all or b.is_all:
        return All()
    if a == b:
        return a
    return _joined(Or, a, b)


def _joined(cls, a, b):
    """``cls`` (And or Or) of ``a``'s and ``b``'s parts, nested ones flattened, repeats dropped."""
    pa = a.parts if isinstance(a, cls) else (a,)
    pb = b.parts if isinstance(b, cls) else (b,)
    return cls(pa + tuple(p for p in pb if p not in pa))


def group_columns(predicate) -> list:
    """The group columns a predicate reads (its ``GroupIs`` parts), in order of first appearance."""
    if isinstance(predicate, GroupIs):
        return [predicate.column]
    if isinstance(predicate, Not):
        return group_columns(predicate.part)
    parts = predicate.parts if isinstance(predicate, _Joined) else ()
    return list(dict.fromkeys(c for p in parts for c in group_columns(p)))
