"""The rate-expression algebra: rates, affine combinations and constraints.

Every rate of the papers is an affine function of *atoms*, the weighted
positive-prediction rates ``p+(S) = sum_{j in S} w_j 1[h(x_j) >= 0] / sum_{j in S} w_j``
of subsets ``S`` of a dataset. The functions of this module build immutable
expression trees (cvxpy style): rate leaves such as :func:`true_positive_rate`,
combined with ``+``, ``-``, multiplication and division by a scalar and
:func:`sum`. ``<=`` and ``>=`` give :class:`Constraint` objects; ``==`` is
refused in favour of :func:`equal`, which gives two inequalities with a slack.

Nothing here touches the data: leaves are turned into affine functions of
atoms by the lowering rules of :mod:`rateopt._compiler._problem` when a
:class:`~rateopt.Problem` is compiled, which is also where data errors (empty
subsets, missing labels) are reported, naming the constraint.

Definitions (``S`` a subset, ``w`` the weights, ``W(A) = sum_{j in A} w_j``,
``S1 = S[y=1]``, ``S0 = S[y=0]``, ``b`` the baseline decision, ``pred`` the
model's decision ``1[h(x) >= 0]``):

* rates conditioned on a subset: ``ppr = p+(S)``, ``npr = 1 - p+(S)``,
  ``tpr = p+(S1)``, ``fnr = 1 - p+(S1)``, ``fpr = p+(S0)``, ``tnr = 1 - p+(S0)``;
* proportions of ``S``: ``error = (W(S1)(1 - p+(S1)) + W(S0) p+(S0)) / W(S)``,
  ``accuracy = 1 - error``, ``tp_prop = W(S1) p+(S1) / W(S)`` (and ``fp``,
  ``tn``, ``fn`` alike);
* weighted counts ``sum_{j in S} w_j 1[...]`` (the number of examples when
  all weights are 1): ``tp_count = W(S1) p+(S1)``, ...;
* against the baseline: ``churn = sum_{S} w [pred != b] / W(S)``, wins
  (``pred = y != b``), losses (``pred != y = b``), loss-only churn
  (``losses / W(S)``, seed 000 Eq. 13, or ``losses / W(S[b=y])``).
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from rateopt._language._data import Context, Dataset
from rateopt.exceptions import RateoptError

__all__ = [
    "Expression",
    "Constant",
    "Sum",
    "Scale",
    "Rate",
    "Constraint",
    "equal",
    "sum",
    # rate functions
    "positive_prediction_rate",
    "negative_prediction_rate",
    "true_positive_rate",
    "false_negative_rate",
    "false_positive_rate",
    "true_negative_rate",
    "error_rate",
    "accuracy",
    "true_positive_proportion",
    "false_positive_proportion",
    "true_negative_proportion",
    "false_negative_proportion",
    "positive_prediction_count",
    "negative_prediction_count",
    "true_positive_count",
    "false_positive_count",
    "true_negative_count",
    "false_negative_count",
    "churn_rate",
    "loss_only_churn_rate",
    "win_rate",
    "loss_rate",
    "win_count",
    "loss_count",
    "prevalence",
    "baseline_positive_rate",
    "baseline_accuracy",
    # rate node types
    "PositivePredictionRate",
    "NegativePredictionRate",
    "TruePositiveRate",
    "FalseNegativeRate",
    "FalsePositiveRate",
    "TrueNegativeRate",
    "ErrorRate",
    "Accuracy",
    "TruePositiveProportion",
    "FalsePositiveProportion",
    "TrueNegativeProportion",
    "FalseNegativeProportion",
    "PositivePredictionCount",
    "NegativePredictionCount",
    "TruePositiveCount",
    "FalsePositiveCount",
    "TrueNegativeCount",
    "FalseNegativeCount",
    "ChurnRate",
    "LossOnlyChurnRate",
    "WinRate",
    "LossRate",
    "WinCount",
    "LossCount",
    "Prevalence",
    "BaselinePositiveRate",
    "BaselineAccuracy",
]


def _fmt(c: float) -> str:
    return f"{c:.6g}"


def _as_scalar(x):
    """Return ``x`` as a finite float if it is a real scalar, else None."""
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


def _lift(x):
    """Lift numbers to :class:`Constant`; arrays and other objects are refused."""
    if isinstance(x, Expression):
        return x
    v = _as_scalar(x)
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
        other = _lift(other)
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
        v = _as_scalar(value)
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
            a = _lift(a)
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
        f = _as_scalar(factor)
        if f is None:
            raise TypeError(f"Scale factor must be a real number, got {factor!r}")
        super().__init__((arg,))
        object.__setattr__(self, "factor", f)

    def _terms(self):
        return [(self.factor * c, e) for c, e in self.args[0]._terms()]


# --------------------------------------------------------------------------- leaves


class Rate(Expression):
    """Base class of rate leaves: a named rate on one subset of one dataset.

    Parameters
    ----------
    context : Context or Dataset
        The subset (a dataset means all of it).

    Attributes
    ----------
    context : Context
        The subset the rate is measured on.
    short_name : str
        Abbreviation used in names, e.g. ``"tpr"``.
    needs_labels : bool
        Whether the rate needs labels.
    needs_baseline : bool
        Whether the rate needs baseline decisions.
    depends_on_model : bool
        False for data constants such as :func:`prevalence`.
    """

    __slots__ = ("context",)
    short_name = "rate"
    needs_labels = False
    needs_baseline = False
    depends_on_model = True

    def __init__(self, context):
        if isinstance(context, Dataset):
            context = context.context()
        if not isinstance(context, Context):
            raise TypeError(
                f"{type(self).__name__} takes a Context (e.g. dataset.context()), "
                f"got {type(context).__name__}"
            )
        super().__init__(())
        object.__setattr__(self, "context", context)

    def leaves(self):
        """Iterate over the rate leaves: the leaf itself.

        Yields
        ------
        Rate
            ``self``.
        """
        yield self

    @property
    def is_linear_in_rates(self) -> bool:
        """Always True."""
        return True

    @property
    def name(self) -> str:
        """The rate's name in reports, e.g. ``"tpr[sex=Female]"``."""
        return f"{self.short_name}[{self.context.label}]"

    def __str__(self) -> str:
        return self.name


def _leaf(class_name, short, doc, *, labels=False, baseline=False, model=True):
    cls = type(
        class_name,
        (Rate,),
        {
            "__slots__": (),
            "__doc__": doc,
            "short_name": short,
            "needs_labels": labels,
            "needs_baseline": baseline,
            "depends_on_model": model,
            "__module__": __name__,
        },
    )
    return cls


_NODE_DOC = """{summary}

    Expression node built by :func:`{func}`; see that function.

    Parameters
    ----------
    context : Context or Dataset
        The subset the rate is measured on.
    """

PositivePredictionRate = _leaf(
    "PositivePredictionRate", "ppr",
    _NODE_DOC.format(summary="Positive prediction rate node.", func="positive_prediction_rate"))
NegativePredictionRate = _leaf(
    "NegativePredictionRate", "npr",
    _NODE_DOC.format(summary="Negative prediction rate node.", func="negative_prediction_rate"))
TruePositiveRate = _leaf(
    "TruePositiveRate", "tpr",
    _NODE_DOC.format(summary="True positive rate node.", func="true_positive_rate"), labels=True)
FalseNegativeRate = _leaf(
    "FalseNegativeRate", "fnr",
    _NODE_DOC.format(summary="False negative rate node.", func="false_negative_rate"), labels=True)
FalsePositiveRate = _leaf(
    "FalsePositiveRate", "fpr",
    _NODE_DOC.format(summary="False positive rate node.", func="false_positive_rate"), labels=True)
TrueNegativeRate = _leaf(
    "TrueNegativeRate", "tnr",
    _NODE_DOC.format(summary="True negative rate node.", func="true_negative_rate"), labels=True)
ErrorRate = _leaf(
    "ErrorRate", "error",
    _NODE_DOC.format(summary="Error rate node.", func="error_rate"), labels=True)
Accuracy = _leaf(
    "Accuracy", "accuracy",
    _NODE_DOC.format(summary="Accuracy node.", func="accuracy"), labels=True)
TruePositiveProportion = _leaf(
    "TruePositiveProportion", "tp_prop",
    _NODE_DOC.format(summary="True positive proportion node.", func="true_positive_proportion"),
    labels=True)
FalsePositiveProportion = _leaf(
    "FalsePositiveProportion", "fp_prop",
    _NODE_DOC.format(summary="False positive proportion node.", func="false_positive_proportion"),
    labels=True)
TrueNegativeProportion = _leaf(
    "TrueNegativeProportion", "tn_prop",
    _NODE_DOC.format(summary="True negative proportion node.", func="true_negative_proportion"),
    labels=True)
FalseNegativeProportion = _leaf(
    "FalseNegativeProportion", "fn_prop",
    _NODE_DOC.format(summary="False negative proportion node.", func="false_negative_proportion"),
    labels=True)
PositivePredictionCount = _leaf(
    "PositivePredictionCount", "pos_count",
    _NODE_DOC.format(summary="Positive prediction count node.", func="positive_prediction_count"))
NegativePredictionCount = _leaf(
    "NegativePredictionCount", "neg_count",
    _NODE_DOC.format(summary="Negative prediction count node.", func="negative_prediction_count"))
TruePositiveCount = _leaf(
    "TruePositiveCount", "tp_count",
    _NODE_DOC.format(summary="True positive count node.", func="true_positive_count"), labels=True)
FalsePositiveCount = _leaf(
    "FalsePositiveCount", "fp_count",
    _NODE_DOC.format(summary="False positive count node.", func="false_positive_count"),
    labels=True)
TrueNegativeCount = _leaf(
    "TrueNegativeCount", "tn_count",
    _NODE_DOC.format(summary="True negative count node.", func="true_negative_count"), labels=True)
FalseNegativeCount = _leaf(
    "FalseNegativeCount", "fn_count",
    _NODE_DOC.format(summary="False negative count node.", func="false_negative_count"),
    labels=True)
ChurnRate = _leaf(
    "ChurnRate", "churn",
    _NODE_DOC.format(summary="Churn rate node.", func="churn_rate"), baseline=True)
WinRate = _leaf(
    "WinRate", "win_rate",
    _NODE_DOC.format(summary="Win rate node.", func="win_rate"), labels=True, baseline=True)
LossRate = _leaf(
    "LossRate", "loss_rate",
    _NODE_DOC.format(summary="Loss rate node.", func="loss_rate"), labels=True, baseline=True)
WinCount = _leaf(
    "WinCount", "win_count",
    _NODE_DOC.format(summary="Win count node.", func="win_count"), labels=True, baseline=True)
LossCount = _leaf(
    "LossCount", "loss_count",
    _NODE_DOC.format(summary="Loss count node.", func="loss_count"), labels=True, baseline=True)
Prevalence = _leaf(
    "Prevalence", "prevalence",
    _NODE_DOC.format(summary="Prevalence (data constant) node.", func="prevalence"),
    labels=True, model=False)
BaselinePositiveRate = _leaf(
    "BaselinePositiveRate", "baseline_ppr",
    _NODE_DOC.format(summary="Baseline positive rate (data constant) node.",
                     func="baseline_positive_rate"),
    baseline=True, model=False)
BaselineAccuracy = _leaf(
    "BaselineAccuracy", "baseline_accuracy",
    _NODE_DOC.format(summary="Baseline accuracy (data constant) node.", func="baseline_accuracy"),
    labels=True, baseline=True, model=False)


class LossOnlyChurnRate(Rate):
    """Loss-only churn rate node.

    Expression node built by :func:`loss_only_churn_rate`; see that function.

    Parameters
    ----------
    context : Context or Dataset
        The subset the rate is measured on.
    normalize : {"all", "baseline_correct"}, default="all"
        The denominator: ``W(S)`` or ``W(S[baseline = y])``.

    Attributes
    ----------
    normalize : str
        The denominator choice.
    """

    __slots__ = ("normalize",)
    short_name = "loss_churn"
    needs_labels = True
    needs_baseline = True

    def __init__(self, context, normalize="all"):
        if normalize not in ("all", "baseline_correct"):
            raise RateoptError(
                f"normalize must be 'all' or 'baseline_correct', got {normalize!r}"
            )
        super().__init__(context)
        object.__setattr__(self, "normalize", normalize)

    @property
    def name(self) -> str:
        """The rate's name in reports."""
        if self.normalize == "all":
            return super().name
        return f"{self.short_name}_bc[{self.context.label}]"


# --------------------------------------------------------------------------- functions

_CTX_DOC = """context : Context or Dataset
        The subset ``S`` (a dataset means all of it)."""


def _doc(summary, formula, extra="", needs="", name="", short=""):
    return f"""{summary}

    {formula}{extra}

    Parameters
    ----------
    {_CTX_DOC}

    Returns
    -------
    Rate
        An expression node; its value for a model is computed by
        :meth:`rateopt.Problem.evaluate`.

    See Also
    --------
    rateopt.Problem : Compiles expressions and evaluates them.
    {needs}
    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ds = ro.Dataset(np.zeros((4, 1)), y=[0, 1, 1, 0], baseline=[1, 1, 0, 0],
    ...                 groups={{"sex": ["F", "M", "F", "M"]}})
    >>> r = ro.{name}(ds.context().subset(group="sex", value="F"))
    >>> r.name
    '{short}[sex=F]'
    >>> value = ro.Problem(objective=r).evaluate(np.array([1, 0, 1, 0])).objective
    """


_NEEDS_LABELS = """
    Notes
    -----
    Needs labels: a :class:`~rateopt.Problem` using it on an unlabeled dataset
    raises :class:`~rateopt.exceptions.MissingLabelsError` naming the constraint.
"""
_NEEDS_BASELINE = """
    Notes
    -----
    Needs baseline decisions (and labels where they appear in the formula): a
    :class:`~rateopt.Problem` using it without them raises
    :class:`~rateopt.exceptions.MissingBaselineError` (or
    :class:`~rateopt.exceptions.MissingLabelsError`) naming the constraint.
"""


def _make_function(name, node_cls, summary, formula, needs=""):
    def f(context):
        return node_cls(context)

    f.__name__ = name
    f.__qualname__ = name
    f.__module__ = __name__
    f.__doc__ = _doc(summary, formula, needs=needs, name=name, short=node_cls.short_name)
    return f


positive_prediction_rate = _make_function(
    "positive_prediction_rate", PositivePredictionRate,
    "Positive prediction rate (coverage) on a subset.",
    "``ppr(S) = sum_{j in S} w_j 1[h(x_j) >= 0] / W(S)``, the atom ``p+(S)`` itself.")
negative_prediction_rate = _make_function(
    "negative_prediction_rate", NegativePredictionRate,
    "Negative prediction rate on a subset.",
    "``npr(S) = 1 - p+(S)``.")
true_positive_rate = _make_function(
    "true_positive_rate", TruePositiveRate,
    "True positive rate (recall) on a subset.",
    "``tpr(S) = p+(S[y=1])``: the weighted fraction of positives predicted positive.",
    _NEEDS_LABELS)
false_negative_rate = _make_function(
    "false_negative_rate", FalseNegativeRate,
    "False negative rate on a subset.",
    "``fnr(S) = 1 - p+(S[y=1])``.",
    _NEEDS_LABELS)
false_positive_rate = _make_function(
    "false_positive_rate", FalsePositiveRate,
    "False positive rate on a subset.",
    "``fpr(S) = p+(S[y=0])``: the weighted fraction of negatives predicted positive.",
    _NEEDS_LABELS)
true_negative_rate = _make_function(
    "true_negative_rate", TrueNegativeRate,
    "True negative rate on a subset.",
    "``tnr(S) = 1 - p+(S[y=0])``.",
    _NEEDS_LABELS)
error_rate = _make_function(
    "error_rate", ErrorRate,
    "Weighted error rate on a subset.",
    "``error(S) = sum_{j in S} w_j 1[pred_j != y_j] / W(S)\n"
    "    = pi1 (1 - p+(S[y=1])) + pi0 p+(S[y=0])`` with the weighted class\n"
    "    proportions ``pi1 = W(S[y=1]) / W(S)``, ``pi0 = W(S[y=0]) / W(S)``.",
    _NEEDS_LABELS)
accuracy = _make_function(
    "accuracy", Accuracy,
    "Weighted accuracy on a subset.",
    "``accuracy(S) = 1 - error(S)``.",
    _NEEDS_LABELS)
true_positive_proportion = _make_function(
    "true_positive_proportion", TruePositiveProportion,
    "Proportion of true positives in a subset.",
    "``tp_prop(S) = sum_{j in S, y_j=1} w_j pred_j / W(S) = pi1 p+(S[y=1])``.",
    _NEEDS_LABELS)
false_positive_proportion = _make_function(
    "false_positive_proportion", FalsePositiveProportion,
    "Proportion of false positives in a subset.",
    "``fp_prop(S) = sum_{j in S, y_j=0} w_j pred_j / W(S) = pi0 p+(S[y=0])``.",
    _NEEDS_LABELS)
true_negative_proportion = _make_function(
    "true_negative_proportion", TrueNegativeProportion,
    "Proportion of true negatives in a subset.",
    "``tn_prop(S) = pi0 (1 - p+(S[y=0]))``.",
    _NEEDS_LABELS)
false_negative_proportion = _make_function(
    "false_negative_proportion", FalseNegativeProportion,
    "Proportion of false negatives in a subset.",
    "``fn_prop(S) = pi1 (1 - p+(S[y=1]))``.",
    _NEEDS_LABELS)
positive_prediction_count = _make_function(
    "positive_prediction_count", PositivePredictionCount,
    "Weighted count of positive predictions in a subset.",
    "``pos_count(S) = sum_{j in S} w_j pred_j = W(S) p+(S)`` (the number of\n"
    "    positive predictions when all weights are 1).")
negative_prediction_count = _make_function(
    "negative_prediction_count", NegativePredictionCount,
    "Weighted count of negative predictions in a subset.",
    "``neg_count(S) = W(S) (1 - p+(S))``.")
true_positive_count = _make_function(
    "true_positive_count", TruePositiveCount,
    "Weighted count of true positives in a subset.",
    "``tp_count(S) = sum_{j in S, y_j=1} w_j pred_j = W(S[y=1]) p+(S[y=1])``.",
    _NEEDS_LABELS)
false_positive_count = _make_function(
    "false_positive_count", FalsePositiveCount,
    "Weighted count of false positives in a subset.",
    "``fp_count(S) = W(S[y=0]) p+(S[y=0])``.",
    _NEEDS_LABELS)
true_negative_count = _make_function(
    "true_negative_count", TrueNegativeCount,
    "Weighted count of true negatives in a subset.",
    "``tn_count(S) = W(S[y=0]) (1 - p+(S[y=0]))``.",
    _NEEDS_LABELS)
false_negative_count = _make_function(
    "false_negative_count", FalseNegativeCount,
    "Weighted count of false negatives in a subset.",
    "``fn_count(S) = W(S[y=1]) (1 - p+(S[y=1]))``.",
    _NEEDS_LABELS)
churn_rate = _make_function(
    "churn_rate", ChurnRate,
    "Churn against the baseline: the weighted fraction of changed decisions.",
    "``churn(S) = sum_{j in S} w_j 1[pred_j != b_j] / W(S)\n"
    "    = P(b=1) (1 - p+(S[b=1])) + P(b=0) p+(S[b=0])`` with weighted\n"
    "    ``P(b=k) = W(S[b=k]) / W(S)`` (seed 000 Eq. 12 divided by ``|D|``).\n"
    "    Needs no labels.",
    _NEEDS_BASELINE)
win_rate = _make_function(
    "win_rate", WinRate,
    "Proportion of the subset that the model wins against the baseline.",
    "``win_rate(S) = sum_{j in S} w_j 1[pred_j = y_j != b_j] / W(S)``: the model\n"
    "    is right where the baseline was wrong.",
    _NEEDS_BASELINE)
loss_rate = _make_function(
    "loss_rate", LossRate,
    "Proportion of the subset that the model loses against the baseline.",
    "``loss_rate(S) = sum_{j in S} w_j 1[pred_j != y_j = b_j] / W(S)``: the model\n"
    "    is wrong where the baseline was right. Equal to\n"
    "    ``loss_only_churn_rate(S)`` with ``normalize='all'``.",
    _NEEDS_BASELINE)
win_count = _make_function(
    "win_count", WinCount,
    "Weighted count of wins against the baseline.",
    "``win_count(S) = sum_{j in S} w_j 1[pred_j = y_j != b_j]``.",
    _NEEDS_BASELINE)
loss_count = _make_function(
    "loss_count", LossCount,
    "Weighted count of losses against the baseline.",
    "``loss_count(S) = sum_{j in S} w_j 1[pred_j != y_j = b_j]``.",
    _NEEDS_BASELINE)
prevalence = _make_function(
    "prevalence", Prevalence,
    "Weighted fraction of positive labels in a subset (a data constant).",
    "``prevalence(S) = W(S[y=1]) / W(S)``; used by accurate coverage.",
    _NEEDS_LABELS)
baseline_positive_rate = _make_function(
    "baseline_positive_rate", BaselinePositiveRate,
    "Positive rate of the baseline model on a subset (a data constant).",
    "``baseline_ppr(S) = W(S[b=1]) / W(S)``; used by no lost benefits.",
    _NEEDS_BASELINE)
baseline_accuracy = _make_function(
    "baseline_accuracy", BaselineAccuracy,
    "Weighted accuracy of the baseline model on a subset (a data constant).",
    "``baseline_accuracy(S) = W(S[b=y]) / W(S)``; used by not worse off.",
    _NEEDS_BASELINE)


def loss_only_churn_rate(context, normalize="all"):
    """Loss-only churn against the baseline (seed 000 Eq. 13).

    The weighted fraction of examples whose decision changes *and* on which
    the baseline was right:
    ``sum_{j in S} w_j 1[pred_j != b_j, b_j = y_j] / denominator``.

    Parameters
    ----------
    context : Context or Dataset
        The subset ``S`` (a dataset means all of it).
    normalize : {"all", "baseline_correct"}, default="all"
        The denominator. ``"all"``: ``W(S)``, as in seed 000 Eq. 13 (then the
        rate equals :func:`loss_rate`). ``"baseline_correct"``:
        ``W(S[b=y])``, the examples the baseline got right, as in the paper's
        Table 1 and its Filtering experiment.

    Returns
    -------
    Rate
        An expression node.

    Raises
    ------
    RateoptError
        If ``normalize`` is not one of the two choices.

    Notes
    -----
    Needs labels and baseline decisions.
    """
    return LossOnlyChurnRate(context, normalize)


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
        lhs_e, rhs_e = _lift(lhs), _lift(rhs)
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
    s = _as_scalar(slack)
    if s is None or s < 0:
        raise ValueError(f"slack must be a non-negative number, got {slack!r}")
    ea, eb = _lift(a), _lift(b)
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
    terms = [] if _as_scalar(start) == 0.0 else [start]
    terms.extend(expressions)
    if not terms:
        return Constant(0.0)
    if len(terms) == 1:
        t = _lift(terms[0])
        if t is NotImplemented:
            raise TypeError("sum() needs rate expressions or numbers")
        return t
    return Sum(terms)

