"""The rate-expression algebra: expressions, their arithmetic, and constraints.

Every rate of the papers is an affine function of *atoms*, the weighted
positive-prediction rates ``p+(S) = sum_{j in S} w_j 1[h(x_j) >= 0] / sum_{j in S} w_j``
of subsets ``S`` of a dataset. Expressions are immutable trees (cvxpy style):
the rate leaves of :mod:`rateopt._language._rates` (such as
:func:`~rateopt.true_positive_rate`) and constants, combined with ``+``, ``-``,
multiplication and division by a scalar and :func:`sum`. ``<=`` and ``>=``
give :class:`Constraint` objects; ``==`` is refused in favour of
:func:`equal`, which gives two inequalities with a slack.

Nothing here touches the data: leaves are turned into affine functions of
atoms by the lowering rules of :mod:`rateopt._language._lowering` when a
:class:`~rateopt.Problem` is compiled, which is also where data errors (empty
subsets, missing labels) are reported, naming the constraint.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

__all__ = ["Expression", "RateLeaf", "Constant", "Sum", "Scale", "Constraint", "equal", "sum", "as_scalar", "lift"]


def _fmt(c: float) -> str:
    return f"{c:.6g}"


def as_scalar(x):
    """Return ``x`` as a finite float if it is a real scalar, else None.

    Parameters
    ----------
    x : object
        A number, a one-element numeric array, or anything else.

    Returns
    -------
    float or None
        The value; ``None`` for booleans and non-numbers.

    Raises
    ------
    ValueError
        If ``x`` is a real scalar but not finite.
    """
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, numbers.Real):
        v = float(x)
    elif isinstance(x, np.ndarray) and x.size == 1 and x.dtype.kind in "iuf":
        v = float(x.reshape(()))
    else:
        return None
    if not math.isfinite(v):
        raise ValueError(f"rate expressions only combine with finite numbers, got {x!r}")
    return v


def lift(x):
    """Lift numbers to :class:`Constant`; arrays and other objects are refused.

    Parameters
    ----------
    x : object
        An expression, a number, or anything else.

    Returns
    -------
    Expression or NotImplemented
        ``x`` itself if it is an expression, a :class:`Constant` for a number,
        ``NotImplemented`` for any other object (so that a binary operator can
        defer to the other operand).

    Raises
    ------
    TypeError
        If ``x`` is an array (rates are scalars).
    ValueError
        If ``x`` is a number but not finite.
    """
    if isinstance(x, Expression):
        return x
    v = as_scalar(x)
    if v is not None:
        return Constant(v)
    if isinstance(x, np.ndarray) or hasattr(x, "__array__"):
        raise TypeError(
            "cannot combine an array with a rate expression; rates are scalars "
            "(use a number, or build one constraint per entry)"
        )
    return NotImplemented


def _cast_other(method):
    """Decorator lifting the second operand of a binary method to an Expression."""

    @functools.wraps(method)
    def wrapper(self, other):
        other = lift(other)
        if other is NotImplemented:
            return NotImplemented
        return method(self, other)

    return wrapper


# --------------------------------------------------------------------------- nodes


class Expression:
    """Base class of rate expressions: affine functions of atoms.

    Expressions are immutable trees whose children are in :attr:`args`. They
    support ``+``, ``-``, unary ``-``, multiplication and division by a
    (nonzero) scalar, and ``<=`` / ``>=``, which build a :class:`Constraint`.
    ``==``, ``!=``, ``<``, ``>``, ``bool()``, the product of two expressions
    and division by an expression raise, so that mistakes fail loudly (a
    chained ``0.1 <= r <= 0.2`` raises because it needs ``bool`` of a
    constraint). NumPy arrays never hijack the comparison
    (``__array_ufunc__ = None``).

    Parameters
    ----------
    args : sequence of Expression, default=()
        The child expressions.

    Attributes
    ----------
    args : tuple of Expression
        The child expressions.

    See Also
    --------
    Constraint : What ``<=`` and ``>=`` build.
    equal : Two-sided constraint with a slack.
    """

    __array_priority__ = 100.0
    __array_ufunc__ = None
    __slots__ = ("args",)
    __hash__ = object.__hash__

    def __init__(self, args=()):
        object.__setattr__(self, "args", tuple(args))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self):
        return (_rebuild, (type(self), self._state()))

    def _state(self):
        return {k: getattr(self, k) for k in _all_slots(type(self))}

    # -- semantic predicates (derived from args) -------------------------------

    def leaves(self):
        """Iterate over the rate leaves of the expression (depth first).

        Yields
        ------
        Rate
            Each rate leaf, in order of appearance (repeats included).
        """
        for a in self.args:
            yield from a.leaves()

    @property
    def is_constant(self) -> bool:
        """True when the value cannot depend on the model's decisions.

        That is, when no leaf depends on the model (only constants and data
        constants such as :func:`prevalence`).
        """
        return all(not leaf.depends_on_model for leaf in self.leaves())

    @property
    def is_linear_in_rates(self) -> bool:
        """Always True: every expression is affine in the atoms."""
        return all(a.is_linear_in_rates for a in self.args)

    @property
    def needs_labels(self) -> bool:
        """True when some leaf needs labels."""
        return any(leaf.needs_labels for leaf in self.leaves())

    @property
    def needs_baseline(self) -> bool:
        """True when some leaf needs baseline decisions."""
        return any(leaf.needs_baseline for leaf in self.leaves())

    @property
    def datasets(self) -> tuple:
        """The datasets the expression refers to, in order of appearance."""
        seen = {}
        for leaf in self.leaves():
            seen.setdefault(id(leaf.context.dataset), leaf.context.dataset)
        return tuple(seen.values())

    # -- algebra ---------------------------------------------------------------

    @_cast_other
    def __add__(self, other):
        return Sum((self, other))

    @_cast_other
    def __radd__(self, other):
        return Sum((other, self))

    @_cast_other
    def __sub__(self, other):
        return Sum((self, -other))

    @_cast_other
    def __rsub__(self, other):
        return Sum((other, -self))

    def __neg__(self):
        return Scale(self, -1.0)

    def __pos__(self):
        return self

    @_cast_other
    def __mul__(self, other):
        if isinstance(self, Constant):
            return Scale(other, self.value)
        if not isinstance(other, Constant):
            raise TypeError(
                f"cannot multiply two rate expressions ({self} * {other}): the product "
                "is not linear in the rates; multiply by a number instead"
            )
        return Scale(self, other.value)

    @_cast_other
    def __rmul__(self, other):
        return self.__mul__(other)

    @_cast_other
    def __truediv__(self, other):
        if not isinstance(other, Constant):
            raise TypeError(
                f"cannot divide by a rate expression ({self} / {other}): the ratio is not "
                "linear in the rates; for a ratio floor such as precision >= k write "
                "tp - k*(tp + fp) >= 0 (see rateopt.goals.precision_floor)"
            )
        if other.value == 0.0:
            raise ZeroDivisionError(f"division of {self} by zero")
        return Scale(self, 1.0 / other.value)

    def __rtruediv__(self, other):
        raise TypeError(
            f"cannot divide by a rate expression ({other!r} / {self}): not linear in the rates"
        )

    # -- comparisons -----------------------------------------------------------

    @_cast_other
    def __le__(self, other):
        return Constraint(self, "<=", other)

    @_cast_other
    def __ge__(self, other):
        return Constraint(self, ">=", other)

    def __eq__(self, other):
        raise TypeError(
            "'==' is not supported on rate expressions: an exact equality of rates is "
            "rarely attainable; use rateopt.equal(a, b, slack), which gives the two "
            "inequalities a <= b + slack and a >= b - slack"
        )

    def __ne__(self, other):
        raise TypeError("'!=' is not supported on rate expressions")

    def __lt__(self, other):
        raise TypeError(
            "strict inequalities '<' and '>' are not supported on rate expressions; use '<=' or '>='"
        )

    __gt__ = __lt__

    def __bool__(self):
        raise TypeError(
            f"the truth value of a rate expression ({self}) is undefined; rates are only "
            "known once a model is evaluated"
        )

    # -- display ---------------------------------------------------------------

    def _terms(self):
        """Flattened (coefficient, expression) terms for display."""
        return [(1.0, self)]

    def __str__(self) -> str:
        terms = self._terms()
        out = []
        for c, e in terms:
            if isinstance(e, Constant):
                v = c * e.value
                body, neg = _fmt(abs(v)), v < 0
            else:
                neg = c < 0
                mag = abs(c)
                body = str(e) if mag == 1.0 else f"{_fmt(mag)}*{e}"
            if not out:
                out.append(f"-{body}" if neg else body)
            else:
                out.append(f" - {body}" if neg else f" + {body}")
        return "".join(out) if out else "0"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"


def _all_slots(cls):
    names = []
    for k in reversed(cls.__mro__):
        for s in getattr(k, "__slots__", ()):
            if s not in names and not s.startswith("__"):
                names.append(s)
    return names


def _rebuild(cls, state):
    obj = cls.__new__(cls)
    for k, v in state.items():
        object.__setattr__(obj, k, v)
    return obj


class RateLeaf(Expression):
    """Base of the rate leaves, two-class (``Rate``) and K-class (``ClassRate``): a rate on one subset.

    A subclass holds ``context`` (the subset) and ``short_name``; the leaf is
    its own only leaf and is named ``short_name[subset]``.
    """

    __slots__ = ()

    def leaves(self):
        """Iterate over the rate leaves: the leaf itself.

        Yields
        ------
        Rate
            ``self``.
        """
        yield self

    @property
    def name(self) -> str:
        """The rate's name in reports, e.g. ``"tpr[sex=Female]"`` or ``"recall(2)[sex=F]"``."""
        return f"{self.short_name}[{self.context.label}]"

    def __str__(self) -> str:
        return self.name

class Constant(Expression):
    """A constant term.

    Parameters
    ----------
    value : float
        A finite number.

    Attributes
    ----------
    value : float
        The constant.
    """

    __slots__ = ("value",)

    def __init__(self, value):
        v = as_scalar(value)
        if v is None:
            raise TypeError(f"Constant needs a real number, got {value!r}")
        super().__init__(())
        object.__setattr__(self, "value", v)

    def __str__(self) -> str:
        return _fmt(self.value)


class Sum(Expression):
    """The sum of expressions (nested sums are flattened).

    Parameters
    ----------
    args : sequence of Expression
        The terms.
    """

    __slots__ = ()

    def __init__(self, args):
        flat = []
        for a in args:
            a = lift(a)
            if a is NotImplemented:
                raise TypeError("Sum terms must be rate expressions or numbers")
            flat.extend(a.args if isinstance(a, Sum) else (a,))
        super().__init__(flat)

    def _terms(self):
        out = []
        for a in self.args:
            out.extend(a._terms())
        return out


class Scale(Expression):
    """An expression multiplied by a scalar.

    Parameters
    ----------
    arg : Expression
        The scaled expression.
    factor : float
        A finite number.

    Attributes
    ----------
    factor : float
        The multiplier.
    """

    __slots__ = ("factor",)

    def __init__(self, arg, factor):
        f = as_scalar(factor)
        if f is None:
            raise TypeError(f"Scale factor must be a real number, got {factor!r}")
        super().__init__((arg,))
        object.__setattr__(self, "factor", f)

    def _terms(self):
        return [(self.factor * c, e) for c, e in self.args[0]._terms()]


# --------------------------------------------------------------------------- constraints


class Constraint:
    """A rate constraint ``lhs <= rhs`` or ``lhs >= rhs``, with a name.

    Built by comparing expressions with ``<=`` or ``>=``. Its normal form is
    ``g <= 0`` with ``g = lhs - rhs`` (for ``<=``) or ``g = rhs - lhs`` (for
    ``>=``); :meth:`rateopt.Problem.evaluate` reports ``g`` (positive values
    are violations).

    Parameters
    ----------
    lhs : Expression or float
        Left-hand side.
    sense : {"<=", ">="}
        The comparison.
    rhs : Expression or float
        Right-hand side.
    name : str, default=None
        The name in reports; default: the readable form, e.g.
        ``"tpr[sex=Female] >= tpr[all] - 0.05"``.

    Attributes
    ----------
    lhs, rhs : Expression
        The two sides.
    sense : str
        ``"<="`` or ``">="``.
    name : str
        The constraint's name.

    Raises
    ------
    TypeError
        If ``bool()`` is taken (e.g. a chained ``0.1 <= r <= 0.2``).

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ctx = ro.Dataset(np.zeros((3, 1))).context()
    >>> c = ro.positive_prediction_rate(ctx) <= 0.3
    >>> c.name
    'ppr[all] <= 0.3'
    >>> c.named("budget").name
    'budget'
    """

    __slots__ = ("lhs", "rhs", "sense", "_name")

    def __init__(self, lhs, sense, rhs, *, name=None):
        if sense not in ("<=", ">="):
            raise ValueError(f"sense must be '<=' or '>=', got {sense!r}")
        lhs_e, rhs_e = lift(lhs), lift(rhs)
        if lhs_e is NotImplemented or rhs_e is NotImplemented:
            raise TypeError("constraint sides must be rate expressions or numbers")
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"a constraint name must be a non-empty string, got {name!r}")
        self.lhs, self.rhs, self.sense, self._name = lhs_e, rhs_e, sense, name

    @property
    def name(self) -> str:
        """The constraint's name (user-given or the readable default)."""
        return self._name if self._name is not None else self.default_name

    @property
    def default_name(self) -> str:
        """The readable form ``"<lhs> <= <rhs>"``."""
        return f"{self.lhs} {self.sense} {self.rhs}"

    @property
    def has_custom_name(self) -> bool:
        """Whether a name was given."""
        return self._name is not None

    @property
    def expression(self) -> Expression:
        """Expression: ``g`` of the normal form ``g <= 0``."""
        if self.sense == "<=":
            return Sum((self.lhs, -self.rhs))
        return Sum((self.rhs, -self.lhs))

    def named(self, name: str) -> Constraint:
        """Return the same constraint under another name.

        Parameters
        ----------
        name : str
            The new name.

        Returns
        -------
        Constraint
            A new constraint; ``self`` is unchanged.
        """
        return Constraint(self.lhs, self.sense, self.rhs, name=name)

    def __bool__(self):
        raise TypeError(
            f"the truth value of a constraint ({self.name}) is undefined. A chained "
            "comparison such as '0.1 <= r <= 0.2' is not supported: write two "
            "constraints, [r >= 0.1, r <= 0.2]"
        )

    def __setattr__(self, name, value):
        if hasattr(self, "_name"):
            raise AttributeError("Constraint is immutable; use .named() for a new name")
        object.__setattr__(self, name, value)

    def __reduce__(self):
        return (_rebuild_constraint, (self.lhs, self.sense, self.rhs, self._name))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        if self._name is None:
            return f"Constraint({self.default_name!r})"
        return f"Constraint({self.default_name!r}, name={self._name!r})"


def _rebuild_constraint(lhs, sense, rhs, name):
    return Constraint(lhs, sense, rhs, name=name)


def equal(a, b, slack=0.0, *, name=None):
    """Two-sided constraint ``|a - b| <= slack``, as two inequalities.

    ``a == b`` is refused on expressions because an exact equality of rates
    is rarely attainable and makes optimization unstable; this function gives
    ``a <= b + slack`` and ``a >= b - slack`` instead.

    Parameters
    ----------
    a, b : Expression or float
        The two sides (at least one an expression).
    slack : float, default=0.0
        Non-negative additive slack.
    name : str, default=None
        Base name; the two constraints are named ``"<name> (<=)"`` and
        ``"<name> (>=)"``. Default: their readable forms.

    Returns
    -------
    list of Constraint
        ``[a <= b + slack, a >= b - slack]``.

    Raises
    ------
    ValueError
        If ``slack`` is negative or not finite.
    TypeError
        If neither side is an expression.

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ds = ro.Dataset(np.zeros((4, 1)), groups={"g": [0, 0, 1, 1]})
    >>> ctx = ds.context()
    >>> [c.name for c in ro.equal(ro.positive_prediction_rate(ctx.subset(group="g", value=1)),
    ...                           ro.positive_prediction_rate(ctx), 0.05)]
    ['ppr[g=1] <= ppr[all] + 0.05', 'ppr[g=1] >= ppr[all] - 0.05']
    """
    s = as_scalar(slack)
    if s is None or s < 0:
        raise ValueError(f"slack must be a non-negative number, got {slack!r}")
    ea, eb = lift(a), lift(b)
    if ea is NotImplemented or eb is NotImplemented:
        raise TypeError("equal() needs rate expressions or numbers")
    if isinstance(ea, Constant) and isinstance(eb, Constant):
        raise TypeError("equal() needs at least one rate expression")
    if isinstance(eb, Constant):
        hi, lo = Constant(eb.value + s), Constant(eb.value - s)
    else:
        hi, lo = (eb + s, eb - s) if s else (eb, eb)
    upper = Constraint(ea, "<=", hi)
    lower = Constraint(ea, ">=", lo)
    if name is not None:
        upper, lower = upper.named(f"{name} (<=)"), lower.named(f"{name} (>=)")
    return [upper, lower]


def sum(expressions, start=0.0):  # noqa: A001 - mirrors numpy.sum / builtins.sum
    """Sum of rate expressions (and numbers).

    Parameters
    ----------
    expressions : iterable of Expression or float
        The terms.
    start : float, default=0.0
        A constant added to the sum.

    Returns
    -------
    Expression
        The sum; a :class:`Constant` if there are no expression terms.

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ctx = ro.Dataset(np.zeros((2, 1)), y=[0, 1]).context()
    >>> str(ro.sum([ro.false_positive_proportion(ctx), ro.false_negative_proportion(ctx)]))
    'fp_prop[all] + fn_prop[all]'
    """
    terms = [] if as_scalar(start) == 0.0 else [start]
    terms.extend(expressions)
    if not terms:
        return Constant(0.0)
    if len(terms) == 1:
        t = lift(terms[0])
        if t is NotImplemented:
            raise TypeError("sum() needs rate expressions or numbers")
        return t
    return Sum(terms)

