"""The metrics of an assessment: names, rate-language functions and callables, resolved into one form.

Three kinds, by how a cell's value and interval are computed:

* :class:`RateMetric`: ``sum a_i b_i / sum a_i`` over the cell's rows (see
  :mod:`rateopt._assess._intervals`), with a Clopper–Pearson interval. The
  names (``"tpr"``, ``"recall[c]"``, ...) and the rate-language functions whose
  value is one such ratio (``rateopt.true_positive_rate``, ...) resolve to it.
* :class:`ExpressionMetric`: any other function of a context returning a rate
  expression (``lambda S: ro.true_positive_rate(S) - ro.false_positive_rate(S)``),
  evaluated by the rate language on a dataset of the cell's rows; bootstrap
  interval.
* :class:`CallableMetric`: a function ``(y_true, y_pred)`` such as a
  scikit-learn metric, called with ``sample_weight=`` when weights are given;
  bootstrap interval.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping

import numpy as np

from ..exceptions import RateoptError
from .._language import _rates as R
from .._language._data import Dataset
from .._language._evaluation import expression_value

__all__ = ["RATE_NAMES", "CLASS_RATE_NAMES", "RateMetric", "ExpressionMetric", "CallableMetric", "resolve_metrics",
           "default_metrics"]


def _positive(inp):
    return inp.P[:, 1]


def _label_is(inp, k):
    return (inp.y == k).astype(np.float64)


def _hit(inp):
    """The probability that each row's decision is its label."""
    return inp.P[np.arange(inp.n), inp.y]


#: Two-class rates: name -> (needs labels, a(inputs) without the weight, b(inputs)); the positive class is the
#: second class. ``error`` and ``accuracy`` hold for K classes too.
_TWO_CLASS = {
    "selection_rate": (False, None, _positive),
    "negative_rate": (False, None, lambda i: 1.0 - _positive(i)),
    "tpr": (True, lambda i: _label_is(i, 1), _positive),
    "fnr": (True, lambda i: _label_is(i, 1), lambda i: 1.0 - _positive(i)),
    "fpr": (True, lambda i: _label_is(i, 0), _positive),
    "tnr": (True, lambda i: _label_is(i, 0), lambda i: 1.0 - _positive(i)),
    "precision": (True, _positive, lambda i: _label_is(i, 1)),
    "prevalence": (True, None, lambda i: _label_is(i, 1)),
}
_ANY_CLASSES = {
    "accuracy": (True, None, _hit),
    "error": (True, None, lambda i: 1.0 - _hit(i)),
}
_ALIASES = {
    "positive_rate": "selection_rate", "ppr": "selection_rate", "positive_prediction_rate": "selection_rate",
    "npr": "negative_rate", "negative_prediction_rate": "negative_rate",
    "recall": "tpr", "true_positive_rate": "tpr", "sensitivity": "tpr",
    "false_negative_rate": "fnr", "false_positive_rate": "fpr",
    "true_negative_rate": "tnr", "specificity": "tnr", "ppv": "precision",
    "error_rate": "error",
}
#: Per-class rates on K classes, ``name[c]``: a and b of class position k.
_PER_CLASS = {
    "proportion": (False, None, lambda i, k: i.P[:, k]),
    "recall": (True, lambda i, k: _label_is(i, k), lambda i, k: i.P[:, k]),
    "precision": (True, lambda i, k: i.P[:, k], lambda i, k: _label_is(i, k)),
    "prevalence": (True, None, lambda i, k: _label_is(i, k)),
}

#: The names of rates (aliases included) for two classes.
RATE_NAMES = tuple(sorted(set(_TWO_CLASS) | set(_ANY_CLASSES) | set(_ALIASES)))
#: The per-class rate names on K classes (``name[c]``, or ``name`` for every class).
CLASS_RATE_NAMES = tuple(sorted(_PER_CLASS))

#: Rate-language functions whose value is one ratio, and the name they resolve to.
_LANGUAGE = {
    R.positive_prediction_rate: "selection_rate", R.negative_prediction_rate: "negative_rate",
    R.true_positive_rate: "tpr", R.false_negative_rate: "fnr", R.false_positive_rate: "fpr",
    R.true_negative_rate: "tnr", R.error_rate: "error", R.accuracy: "accuracy", R.prevalence: "prevalence",
}


class RateMetric:
    """A weighted ratio ``sum a_i b_i / sum a_i`` (Clopper–Pearson interval).

    Parameters
    ----------
    name : str
        The metric's column name.
    needs_labels : bool
        Whether it reads labels.
    a, b : callable
        ``Inputs -> ndarray (n,)``: the denominator weight (without the
        sample weight; None: 1) and the success in [0, 1].
    """

    method = "clopper-pearson"

    def __init__(self, name, needs_labels, a, b):
        self.name, self.needs_labels, self._a, self._b = name, needs_labels, a, b

    def parts(self, inp):
        """``(a, b)`` over all rows: the denominator weights (sample weight included) and successes."""
        a = inp.w if self._a is None else inp.w * self._a(inp)
        return a, self._b(inp)


class ExpressionMetric:
    """A function of a context returning a rate expression (bootstrap interval).

    Parameters
    ----------
    name : str
    fn : callable
        ``Context -> Expression`` (two classes).
    """

    method = "bootstrap"
    needs_labels = False
    takes_counts = True  # a resample is the cell's rows, each weighted by its count

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def value(self, inp, rows, counts=None, weighted=False):
        """The value on ``rows`` (each weighted ``counts`` times; NaN where the expression is undefined).

        The rate language always reads the sample weights, so ``weighted`` is
        not used.
        """
        w = inp.w[rows] if counts is None else inp.w[rows] * counts
        y = None if inp.y is None else inp.y[rows]
        ds = Dataset(np.zeros((len(rows), 0)), y, weights=w, positive_label=None if y is None else 1)
        try:
            return float(expression_value(self.fn(ds.context()), _positive(inp)[rows], kind="probabilities"))
        except (RateoptError, ZeroDivisionError):
            return np.nan


class CallableMetric:
    """A metric function ``(y_true, y_pred[, sample_weight])`` (bootstrap interval).

    Parameters
    ----------
    name : str
    fn : callable
    """

    method = "bootstrap"
    needs_labels = False
    takes_counts = False  # a resample is its rows, repeated

    def __init__(self, name, fn):
        self.name, self.fn = name, fn
        self._arrays = None

    def value(self, inp, rows, counts=None, weighted=False):
        """The value on ``rows`` (a resample repeats rows; ``weighted``: pass ``sample_weight=``)."""
        if counts is not None:
            rows = np.repeat(rows, counts)
        if self._arrays is None or self._arrays[0] is not inp:
            self._arrays = (inp, None if inp.y_given is None else np.asarray(inp.y_given),
                            np.asarray(inp.predictions_given))
        _, y_all, pred_all = self._arrays
        y = None if y_all is None else y_all[rows]
        pred = pred_all[rows]
        try:
            out = self.fn(y, pred, sample_weight=inp.w[rows]) if weighted else self.fn(y, pred)
            return float(out)
        except ZeroDivisionError:
            return np.nan


def _context_function(fn):
    """Whether ``fn`` takes one required positional argument (a context), not ``(y_true, y_pred)``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    required = [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(required) == 1 and not any(p.kind == p.VAR_POSITIONAL for p in params)


def _named(label, name, inp):
    """The :class:`RateMetric` list of a metric name (a per-class name without ``[c]`` gives one per class)."""
    m = re.fullmatch(r"(\w+)\[(.+)\]", name)
    if m and m.group(1) in _PER_CLASS:
        base, cls = m.groups()
        names = [str(c) for c in inp.classes]
        if cls not in names:
            raise RateoptError(f"assess: metrics names class {cls!r} in {name!r}, which is not among classes "
                               f"{inp.classes!r}")
        needs, a, b = _PER_CLASS[base]
        k = names.index(cls)
        return [RateMetric(label, needs, None if a is None else (lambda i, a=a, k=k: a(i, k)),
                           lambda i, b=b, k=k: b(i, k))]
    if inp.arity.multiclass and name in _PER_CLASS:
        return [x for c in inp.classes for x in _named(f"{name}[{c}]", f"{name}[{c}]", inp)]
    key = _ALIASES.get(name, name)
    if key in _ANY_CLASSES:
        return [RateMetric(label, *_ANY_CLASSES[key])]
    if key in _TWO_CLASS:
        if inp.arity.multiclass:
            raise RateoptError(f"assess: metric {name!r} is a two-class rate, but there are {inp.n_classes} classes: use "
                               f"per-class rates ({', '.join(f'{b}[c]' for b in CLASS_RATE_NAMES)}) or accuracy/error")
        return [RateMetric(label, *_TWO_CLASS[key])]
    raise RateoptError(f"assess: unknown metric name {name!r}; known: {', '.join(RATE_NAMES)}, and per class "
                       f"{', '.join(f'{b}[c]' for b in CLASS_RATE_NAMES)}")


def _one(label, metric, inp):
    if isinstance(metric, str):
        return _named(label, metric, inp)
    if not callable(metric):
        raise RateoptError(f"assess: metrics must be names, rate-language functions or callables, got "
                           f"{type(metric).__name__} for {label!r}")
    if metric in _LANGUAGE:
        return _named(label, _LANGUAGE[metric], inp)
    if _context_function(metric):
        if inp.arity.multiclass:
            raise RateoptError(f"assess: metric {label!r} is a function of a context (a rate of the rate language), "
                               f"which needs two classes; there are {inp.n_classes}")
        return [ExpressionMetric(label, metric)]
    return [CallableMetric(label, metric)]


def _label_of(metric):
    if isinstance(metric, str):
        return metric
    return getattr(metric, "__name__", None) or type(metric).__name__


def default_metrics(inp):
    """The default metrics: the common rates for two classes, accuracy and per-class rates for K."""
    if inp.classes == [0, 1]:
        return ("selection_rate",) if inp.y is None else ("selection_rate", "tpr", "fpr", "accuracy")
    return ("proportion",) if inp.y is None else ("accuracy", "proportion", "recall")


def resolve_metrics(metrics, inp):
    """The resolved metrics of ``metrics`` (a name, a function, a sequence of them, or a mapping name -> metric).

    Parameters
    ----------
    metrics : str, callable, sequence or mapping, or None
        None: :func:`default_metrics`.
    inp : Inputs

    Returns
    -------
    list of RateMetric, ExpressionMetric or CallableMetric
        In order, with distinct names.

    Raises
    ------
    RateoptError
        On an unknown name, a two-class rate on K classes, a label metric
        without labels, or two metrics of one name.
    """
    if metrics is None:
        metrics = default_metrics(inp)
    if isinstance(metrics, Mapping):
        items = [(str(k), v) for k, v in metrics.items()]
    elif isinstance(metrics, str) or callable(metrics):
        items = [(_label_of(metrics), metrics)]
    else:
        try:
            items = [(_label_of(m), m) for m in metrics]
        except TypeError:
            raise RateoptError(f"assess: metrics must be names, rate-language functions or callables (or a sequence "
                               f"or dict of them), got {type(metrics).__name__}") from None
    if not items:
        raise RateoptError("assess: metrics is empty")
    out = [x for label, m in items for x in _one(label, m, inp)]
    names = [m.name for m in out]
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise RateoptError(f"assess: metrics repeat the name(s) {dup!r}; pass a dict to name them")
    if inp.y is None:
        bad = [m.name for m in out if m.needs_labels]
        if bad:
            raise RateoptError(f"assess: metrics {bad!r} need labels, but y is None")
    return out
