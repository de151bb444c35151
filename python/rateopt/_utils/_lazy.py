"""A read-only sequence whose items are made on first access (:class:`LazyTuple`).

A compiled problem over 10^5 groups names 2 x 10^5 constraints and 10^5 atoms;
their Python objects (a :class:`~rateopt._language._rates.Constraint` with its
expression tree, an ``AtomInfo``) cost more than the whole compile. A
:class:`LazyTuple` holds how to make item ``i`` and makes it when it is read,
once (later reads return the same object), so that a fit that never looks at
them does not pay for them.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LazyTuple"]

_MISSING = object()


class LazyTuple(Sequence):
    """A tuple whose item ``i`` is ``make(i)``, made on first access and kept.

    Parameters
    ----------
    n : int
        The length.
    make : callable
        ``make(i)`` for ``0 <= i < n``: the item.

    Notes
    -----
    It compares equal to a tuple (or another sequence) with the same items,
    pickles as a plain tuple, and is read-only.
    """

    __slots__ = ("_n", "_make", "_items")

    def __init__(self, n, make):
        self._n = int(n)
        self._make = make
        self._items = [_MISSING] * self._n

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(self._n)))
        j = i.__index__()
        if j < 0:
            j += self._n
        if not 0 <= j < self._n:
            raise IndexError("LazyTuple index out of range")
        item = self._items[j]
        if item is _MISSING:
            item = self._items[j] = self._make(j)
        return item

    def __iter__(self):
        for j in range(self._n):
            yield self[j]

    def __eq__(self, other):
        if isinstance(other, (tuple, LazyTuple)):
            return len(other) == self._n and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self):
        return hash(tuple(self))

    def __add__(self, other):
        return tuple(self) + tuple(other)

    def __radd__(self, other):
        return tuple(other) + tuple(self)

    def __reduce__(self):
        return (tuple, (tuple(self),))

    def __repr__(self):
        return repr(tuple(self))
