"""The named rates: the leaves of the rate-expression algebra and the functions that build them.

Every rate of the papers is an affine function of *atoms*, the weighted
positive-prediction rates ``p+(S) = sum_{j in S} w_j 1[h(x_j) >= 0] / sum_{j in S} w_j``
of subsets ``S`` of a dataset. The functions of this module, such as
:func:`true_positive_rate`, build the rate leaves (:class:`Rate` nodes) of
immutable expression trees; the algebra that combines them (``+``, ``-``,
scaling, :func:`sum`, ``<=`` / ``>=`` giving a :class:`Constraint`,
:func:`equal`) is in :mod:`rateopt._language._expressions`, and this module
re-exports it, so ``rateopt._language._rates`` holds the whole language of
rates.

Nothing here touches the data: leaves are turned into affine functions of
atoms by the lowering rules of :mod:`rateopt._language._lowering` when a
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
  (``losses / W(S)``, Cotter et al. (2018) Eq. 13, or ``losses / W(S[b=y])``).
"""

from __future__ import annotations

import re

from rateopt._language._data import Context, Dataset
from rateopt._language._expressions import (
    Constant,
    Constraint,
    Expression,
    RateLeaf,
    Scale,
    Sum,
    equal,
    sum,
)
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



# --------------------------------------------------------------------------- leaves


class Rate(RateLeaf):
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


def _snake_case(class_name):
    """``"TruePositiveRate"`` -> ``"true_positive_rate"``: a node class's function name."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", class_name).lower()


def _leaf(class_name, short, *, labels=False, baseline=False, model=True):
    """A rate node class; its docstring names the function that builds it."""
    func = _snake_case(class_name)
    summary = func.replace("_", " ").capitalize() + (" (data constant)" if not model else "") + " node."
    cls = type(
        class_name,
        (Rate,),
        {
            "__slots__": (),
            "__doc__": _NODE_DOC.format(summary=summary, func=func),
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

PositivePredictionRate = _leaf("PositivePredictionRate", "ppr")
NegativePredictionRate = _leaf("NegativePredictionRate", "npr")
TruePositiveRate = _leaf("TruePositiveRate", "tpr", labels=True)
FalseNegativeRate = _leaf("FalseNegativeRate", "fnr", labels=True)
FalsePositiveRate = _leaf("FalsePositiveRate", "fpr", labels=True)
TrueNegativeRate = _leaf("TrueNegativeRate", "tnr", labels=True)
ErrorRate = _leaf("ErrorRate", "error", labels=True)
Accuracy = _leaf("Accuracy", "accuracy", labels=True)
TruePositiveProportion = _leaf("TruePositiveProportion", "tp_prop", labels=True)
FalsePositiveProportion = _leaf("FalsePositiveProportion", "fp_prop", labels=True)
TrueNegativeProportion = _leaf("TrueNegativeProportion", "tn_prop", labels=True)
FalseNegativeProportion = _leaf("FalseNegativeProportion", "fn_prop", labels=True)
PositivePredictionCount = _leaf("PositivePredictionCount", "pos_count")
NegativePredictionCount = _leaf("NegativePredictionCount", "neg_count")
TruePositiveCount = _leaf("TruePositiveCount", "tp_count", labels=True)
FalsePositiveCount = _leaf("FalsePositiveCount", "fp_count", labels=True)
TrueNegativeCount = _leaf("TrueNegativeCount", "tn_count", labels=True)
FalseNegativeCount = _leaf("FalseNegativeCount", "fn_count", labels=True)
ChurnRate = _leaf("ChurnRate", "churn", baseline=True)
WinRate = _leaf("WinRate", "win_rate", labels=True, baseline=True)
LossRate = _leaf("LossRate", "loss_rate", labels=True, baseline=True)
WinCount = _leaf("WinCount", "win_count", labels=True, baseline=True)
LossCount = _leaf("LossCount", "loss_count", labels=True, baseline=True)
Prevalence = _leaf("Prevalence", "prevalence", labels=True, model=False)
BaselinePositiveRate = _leaf("BaselinePositiveRate", "baseline_ppr", baseline=True, model=False)
BaselineAccuracy = _leaf("BaselineAccuracy", "baseline_accuracy", labels=True, baseline=True, model=False)


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


def _doc(summary, formula, needs="", name="", short=""):
    return f"""{summary}

    {formula}

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


def _make_function(node_cls, summary, formula, needs=""):
    name = _snake_case(node_cls.__name__)

    def f(context):
        return node_cls(context)

    f.__name__ = name
    f.__qualname__ = name
    f.__module__ = __name__
    f.__doc__ = _doc(summary, formula, needs=needs, name=name, short=node_cls.short_name)
    return f


positive_prediction_rate = _make_function(
    PositivePredictionRate, "Positive prediction rate (coverage) on a subset.",
    "``ppr(S) = sum_{j in S} w_j 1[h(x_j) >= 0] / W(S)``, the atom ``p+(S)`` itself.")
negative_prediction_rate = _make_function(
    NegativePredictionRate, "Negative prediction rate on a subset.",
    "``npr(S) = 1 - p+(S)``.")
true_positive_rate = _make_function(
    TruePositiveRate, "True positive rate (recall) on a subset.",
    "``tpr(S) = p+(S[y=1])``: the weighted fraction of positives predicted positive.",
    _NEEDS_LABELS)
false_negative_rate = _make_function(
    FalseNegativeRate, "False negative rate on a subset.",
    "``fnr(S) = 1 - p+(S[y=1])``.",
    _NEEDS_LABELS)
false_positive_rate = _make_function(
    FalsePositiveRate, "False positive rate on a subset.",
    "``fpr(S) = p+(S[y=0])``: the weighted fraction of negatives predicted positive.",
    _NEEDS_LABELS)
true_negative_rate = _make_function(
    TrueNegativeRate, "True negative rate on a subset.",
    "``tnr(S) = 1 - p+(S[y=0])``.",
    _NEEDS_LABELS)
error_rate = _make_function(
    ErrorRate, "Weighted error rate on a subset.",
    "``error(S) = sum_{j in S} w_j 1[pred_j != y_j] / W(S)\n"
    "    = pi1 (1 - p+(S[y=1])) + pi0 p+(S[y=0])`` with the weighted class\n"
    "    proportions ``pi1 = W(S[y=1]) / W(S)``, ``pi0 = W(S[y=0]) / W(S)``.",
    _NEEDS_LABELS)
accuracy = _make_function(
    Accuracy, "Weighted accuracy on a subset.",
    "``accuracy(S) = 1 - error(S)``.",
    _NEEDS_LABELS)
true_positive_proportion = _make_function(
    TruePositiveProportion, "Proportion of true positives in a subset.",
    "``tp_prop(S) = sum_{j in S, y_j=1} w_j pred_j / W(S) = pi1 p+(S[y=1])``.",
    _NEEDS_LABELS)
false_positive_proportion = _make_function(
    FalsePositiveProportion, "Proportion of false positives in a subset.",
    "``fp_prop(S) = sum_{j in S, y_j=0} w_j pred_j / W(S) = pi0 p+(S[y=0])``.",
    _NEEDS_LABELS)
true_negative_proportion = _make_function(
    TrueNegativeProportion, "Proportion of true negatives in a subset.",
    "``tn_prop(S) = pi0 (1 - p+(S[y=0]))``.",
    _NEEDS_LABELS)
false_negative_proportion = _make_function(
    FalseNegativeProportion, "Proportion of false negatives in a subset.",
    "``fn_prop(S) = pi1 (1 - p+(S[y=1]))``.",
    _NEEDS_LABELS)
positive_prediction_count = _make_function(
    PositivePredictionCount, "Weighted count of positive predictions in a subset.",
    "``pos_count(S) = sum_{j in S} w_j pred_j = W(S) p+(S)`` (the number of\n"
    "    positive predictions when all weights are 1).")
negative_prediction_count = _make_function(
    NegativePredictionCount, "Weighted count of negative predictions in a subset.",
    "``neg_count(S) = W(S) (1 - p+(S))``.")
true_positive_count = _make_function(
    TruePositiveCount, "Weighted count of true positives in a subset.",
    "``tp_count(S) = sum_{j in S, y_j=1} w_j pred_j = W(S[y=1]) p+(S[y=1])``.",
    _NEEDS_LABELS)
false_positive_count = _make_function(
    FalsePositiveCount, "Weighted count of false positives in a subset.",
    "``fp_count(S) = W(S[y=0]) p+(S[y=0])``.",
    _NEEDS_LABELS)
true_negative_count = _make_function(
    TrueNegativeCount, "Weighted count of true negatives in a subset.",
    "``tn_count(S) = W(S[y=0]) (1 - p+(S[y=0]))``.",
    _NEEDS_LABELS)
false_negative_count = _make_function(
    FalseNegativeCount, "Weighted count of false negatives in a subset.",
    "``fn_count(S) = W(S[y=1]) (1 - p+(S[y=1]))``.",
    _NEEDS_LABELS)
churn_rate = _make_function(
    ChurnRate, "Churn against the baseline: the weighted fraction of changed decisions.",
    "``churn(S) = sum_{j in S} w_j 1[pred_j != b_j] / W(S)\n"
    "    = P(b=1) (1 - p+(S[b=1])) + P(b=0) p+(S[b=0])`` with weighted\n"
    "    ``P(b=k) = W(S[b=k]) / W(S)`` (Cotter et al., 2018, Eq. 12 divided by ``|D|``).\n"
    "    Needs no labels.",
    _NEEDS_BASELINE)
win_rate = _make_function(
    WinRate, "Proportion of the subset that the model wins against the baseline.",
    "``win_rate(S) = sum_{j in S} w_j 1[pred_j = y_j != b_j] / W(S)``: the model\n"
    "    is right where the baseline was wrong.",
    _NEEDS_BASELINE)
loss_rate = _make_function(
    LossRate, "Proportion of the subset that the model loses against the baseline.",
    "``loss_rate(S) = sum_{j in S} w_j 1[pred_j != y_j = b_j] / W(S)``: the model\n"
    "    is wrong where the baseline was right. Equal to\n"
    "    ``loss_only_churn_rate(S)`` with ``normalize='all'``.",
    _NEEDS_BASELINE)
win_count = _make_function(
    WinCount, "Weighted count of wins against the baseline.",
    "``win_count(S) = sum_{j in S} w_j 1[pred_j = y_j != b_j]``.",
    _NEEDS_BASELINE)
loss_count = _make_function(
    LossCount, "Weighted count of losses against the baseline.",
    "``loss_count(S) = sum_{j in S} w_j 1[pred_j != y_j = b_j]``.",
    _NEEDS_BASELINE)
prevalence = _make_function(
    Prevalence, "Weighted fraction of positive labels in a subset (a data constant).",
    "``prevalence(S) = W(S[y=1]) / W(S)``; used by accurate coverage.",
    _NEEDS_LABELS)
baseline_positive_rate = _make_function(
    BaselinePositiveRate, "Positive rate of the baseline model on a subset (a data constant).",
    "``baseline_ppr(S) = W(S[b=1]) / W(S)``; used by no lost benefits.",
    _NEEDS_BASELINE)
baseline_accuracy = _make_function(
    BaselineAccuracy, "Weighted accuracy of the baseline model on a subset (a data constant).",
    "``baseline_accuracy(S) = W(S[b=y]) / W(S)``; used by not worse off.",
    _NEEDS_BASELINE)


def loss_only_churn_rate(context, normalize="all"):
    """Loss-only churn against the baseline (Cotter et al., 2018, Eq. 13).

    The weighted fraction of examples whose decision changes *and* on which
    the baseline was right:
    ``sum_{j in S} w_j 1[pred_j != b_j, b_j = y_j] / denominator``.

    Parameters
    ----------
    context : Context or Dataset
        The subset ``S`` (a dataset means all of it).
    normalize : {"all", "baseline_correct"}, default="all"
        The denominator. ``"all"``: ``W(S)``, as in Cotter et al. (2018) Eq. 13 (then the
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
