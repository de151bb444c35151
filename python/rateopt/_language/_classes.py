"""K-class rates: a dataset with K-class labels and the confusion-matrix rates of a K-class classifier.

A :class:`ClassDataset` is a :class:`~rateopt.Dataset` whose labels take any
number ``K >= 2`` of values (its ``classes``, sorted). Its contexts are the
binary language's (:meth:`~rateopt.Dataset.context`, ``subset``, ``&``,
``|``, ``~``), without the label predicates: the K-class rates below take the
class conditions themselves.

Every rate of a K-class classifier is linear in its decision distribution
``P[i, k] = P(yhat_i = k)``. With ``S`` a subset, ``w`` the weights,
``W(A) = sum_{i in A} w_i`` and ``S[y=k]`` the rows of ``S`` labeled ``k``:

* prediction rate ``P(yhat=k | S) = sum_{i in S} w_i P[i, k] / W(S)``
  (:func:`class_prediction_rate`);
* recall ``P(yhat=k | y=k, S)`` (:func:`class_recall`), false-positive rate
  ``P(yhat=k | y!=k, S)`` (:func:`class_false_positive_rate`);
* confusion entry ``P(yhat=j, y=k | S) = sum_{i in S[y=k]} w_i P[i, j] / W(S)``
  (:func:`confusion_rate`);
* error ``1 - sum_k P(yhat=k, y=k | S)`` and accuracy
  (:func:`multiclass_error_rate`, :func:`multiclass_accuracy`).

Each is a :class:`ClassRate` leaf ``W(S[label] & yhat=j) / W(S[denominator label])``
of the same expression algebra as the binary rates (``+``, ``-``, scaling,
``<=``, ``>=``, :func:`~rateopt.equal`); the multiclass
:class:`~rateopt.Problem` on a ClassDataset lowers them to tensors over (group cell,
true class, predicted class). Class precision ``P(y=k | yhat=k, S)`` is a ratio
of two such rates: a floor on it is linear (``P(yhat=k, y=k | S) >= tau
P(yhat=k | S)``), see :func:`rateopt.goals.class_precision_floor`.
"""

from __future__ import annotations

import numpy as np

from rateopt._language._data import Context, Dataset
from rateopt._language._expressions import Constant, Expression, RateLeaf, sum
from rateopt._language._validation import as_1d, missing_mask, readonly, unique
from rateopt.exceptions import RateoptError

__all__ = [
    "ClassDataset",
    "ClassRate",
    "class_prediction_rate",
    "class_recall",
    "class_false_positive_rate",
    "confusion_rate",
    "multiclass_error_rate",
    "multiclass_accuracy",
    "class_index",
    "class_positions",
]


class ClassDataset(Dataset):
    """A dataset with K-class labels (K >= 2): what K-class rates are measured on.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        Features, kept as given (as :class:`~rateopt.Dataset`).
    y : array-like of shape (n_samples,)
        The labels, any K values that sort (numbers, strings, ...), no missing value.
    weights : array-like of shape (n_samples,), default=None
        Non-negative, finite per-example weights (default 1).
    groups : DataFrame, mapping, ndarray or None, default=None
        Group columns, as :class:`~rateopt.Dataset` reads them.
    name : str, default="train"
        The dataset's name.
    classes : sequence, default=None
        The classes, in the order of the score columns (default: the sorted
        distinct labels). Give them when a class may be absent from ``y``
        (e.g. a small test split); every label must be one of them.
    group_names : sequence of str, default=None
        Column names when ``groups`` is a plain array.

    Attributes
    ----------
    classes : ndarray of shape (n_classes,)
        The class labels; column ``k`` of every K-class output is ``classes[k]``.
    n_classes : int
        K.
    label_index : ndarray of shape (n_samples,) of int32
        Each row's class position in ``classes`` (read-only).

    Raises
    ------
    RateoptError
        If ``y`` is missing, not 1-D, has missing values, fewer than two
        classes, or a label outside ``classes``; or, without ``classes``, if
        ``y`` holds float labels that are not whole numbers (a continuous
        target would otherwise make one class per distinct value).

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ds = ro.ClassDataset(np.zeros((4, 1)), ["a", "b", "c", "a"], groups={"g": [0, 0, 1, 1]})
    >>> ds.classes.tolist(), ds.label_index.tolist()
    (['a', 'b', 'c'], [0, 1, 2, 0])
    """

    _named_objectives: dict = {}  # filled by rateopt.goals (see Dataset)
    _objective_refusal = "objective {spec!r} is not a K-class objective; choose one of {names}"

    def __init__(self, X, y, weights=None, groups=None, *, name="train", classes=None, group_names=None):
        super().__init__(X, None, weights, groups, name=name, group_names=group_names)
        if y is None:
            raise RateoptError("ClassDataset needs labels y")
        a = as_1d(y, self.n_samples, "y")
        if missing_mask(a).any():
            raise RateoptError("y contains missing values (NaN or None); drop or label them")
        if classes is None:
            _check_categorical(a)
            cls = unique(a)
        else:
            cls = np.asarray(classes)
            if cls.ndim != 1:
                raise RateoptError(f"classes must be 1-D, got shape {cls.shape}")
            if len(unique(cls)) != len(cls):
                raise RateoptError("classes has repeated values")
        if len(cls) < 2:
            raise RateoptError(f"y needs at least two classes, got {len(cls)}: {cls.tolist()!r}")
        idx = class_positions(cls, a, "y")
        if np.any(idx < 0):
            raise RateoptError(
                f"y has labels that are not among classes {cls.tolist()!r}: {unique(a[idx < 0])[:5].tolist()!r}")
        self.classes = readonly(np.array(cls, copy=True))
        self.n_classes = int(len(cls))
        self.label_index = readonly(np.asarray(idx, dtype=np.int32))

    def _as_class_dataset(self, goal):
        return self

    def __repr__(self) -> str:
        parts = [f"name={self.name!r}", f"n_samples={self.n_samples}", f"n_classes={self.n_classes}"]
        if self.groups:
            parts.append(f"groups={list(self.groups)!r}")
        return f"ClassDataset({', '.join(parts)})"


def _check_categorical(y):
    """Refuse float labels that are not whole numbers: a continuous target, not K classes."""
    if y.dtype.kind == "f":
        frac = y[np.isfinite(y) & (y != np.round(y))]
        if frac.size:
            raise RateoptError(
                f"y holds non-integral float labels (e.g. {frac[0]!r}): K-class labels are categories, not "
                "a continuous target; bin or round y, or give the labels with classes=")


def class_positions(classes, values, what) -> np.ndarray:
    """Each value's position in ``classes``, -1 where it is none (one lookup per distinct value, not per row).

    Parameters
    ----------
    classes : ndarray of shape (n_classes,)
    values : ndarray of shape (n,)
        Labels, each one of ``classes``.
    what : str
        The argument's name in messages.

    Returns
    -------
    ndarray of int64 of shape (n,)
        -1 for a value that is not a class (the caller says so in its words).

    Raises
    ------
    RateoptError
        If the values cannot be sorted.
    """
    try:
        uniq, inverse = np.unique(values, return_inverse=True)
    except TypeError:
        raise RateoptError(f"{what}: labels of mixed types cannot be matched with the classes "
                           f"{np.asarray(classes).tolist()!r}") from None
    lookup = {v: i for i, v in enumerate(np.asarray(classes).tolist())}
    pos = np.array([lookup.get(v, -1) for v in uniq.tolist()], dtype=np.int64)
    return pos[inverse.reshape(-1)]


def class_index(dataset, label, what="class") -> int:
    """The position of a class label in ``dataset.classes``.

    Parameters
    ----------
    dataset : ClassDataset
    label : scalar
        A class label.
    what : str, default="class"
        The argument's name in the message.

    Returns
    -------
    int

    Raises
    ------
    RateoptError
        If the label is not a class of the dataset.
    """
    matches = np.flatnonzero(dataset.classes == label) if not isinstance(label, (list, tuple)) else []
    if len(matches) != 1:
        raise RateoptError(
            f"{what}={label!r} is not a class of dataset {dataset.name!r}; classes: {dataset.classes.tolist()!r}")
    return int(matches[0])


def _class_context(context):
    if isinstance(context, ClassDataset):
        context = context.context()
    if not isinstance(context, Context) or not isinstance(context.dataset, ClassDataset):
        raise TypeError(
            "K-class rates take a context of a ClassDataset (e.g. rateopt.ClassDataset(X, y).context()), "
            f"got {type(context).__name__}"
            + (f" of a {type(context.dataset).__name__}" if isinstance(context, Context) else ""))
    return context


class ClassRate(RateLeaf):
    """A K-class rate leaf: ``W(S & label & yhat = predicted) / W(S & denominator)``.

    Parameters
    ----------
    context : Context
        The subset ``S`` (of a :class:`ClassDataset`).
    predicted : int
        The predicted class's position in ``classes``.
    label : tuple or None
        The numerator's label condition: ``None`` (any label), ``("=", k)`` or ``("!=", k)``.
    denominator : tuple or None
        The denominator's label condition, the same forms; the numerator's rows
        must be among the denominator's (``label`` implies ``denominator``).
    short_name : str
        The rate's abbreviation in names.

    Attributes
    ----------
    context, predicted, label, denominator, short_name
        As given.
    """

    __slots__ = ("context", "predicted", "label", "denominator", "short_name")
    needs_labels = True
    needs_baseline = False
    depends_on_model = True

    def __init__(self, context, predicted, label, denominator, short_name):
        context = _class_context(context)
        K = context.dataset.n_classes
        for cond, what in ((label, "label"), (denominator, "denominator")):
            if cond is not None and not (isinstance(cond, tuple) and len(cond) == 2 and cond[0] in ("=", "!=")
                                         and isinstance(cond[1], (int, np.integer)) and 0 <= cond[1] < K):
                raise RateoptError(f"ClassRate: {what} must be None, ('=', k) or ('!=', k) with 0 <= k < {K}")
        if not (isinstance(predicted, (int, np.integer)) and 0 <= predicted < K):
            raise RateoptError(f"ClassRate: predicted must be a class position in [0, {K}), got {predicted!r}")
        if denominator is not None and label != denominator:
            raise RateoptError("ClassRate: the numerator's label condition must imply the denominator's")
        super().__init__(())
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "predicted", int(predicted))
        object.__setattr__(self, "label", None if label is None else (label[0], int(label[1])))
        object.__setattr__(self, "denominator", None if denominator is None else (denominator[0], int(denominator[1])))
        object.__setattr__(self, "short_name", str(short_name))

    def label_mask(self, which="label"):
        """The true classes the numerator (or the denominator) counts.

        Parameters
        ----------
        which : {"label", "denominator"}

        Returns
        -------
        ndarray of shape (n_classes,) of bool
        """
        cond = self.label if which == "label" else self.denominator
        K = self.context.dataset.n_classes
        if cond is None:
            return np.ones(K, dtype=bool)
        out = np.zeros(K, dtype=bool) if cond[0] == "=" else np.ones(K, dtype=bool)
        out[cond[1]] = cond[0] == "="
        return out


def _label(ds, k):
    v = ds.classes[k]
    return repr(v.item() if isinstance(v, np.generic) else v)


def _one_class_rate(context, k, sense, short) -> ClassRate:
    """Class ``k``'s rate among the rows whose true class is (``sense="="``), is not (``"!="``) or may be
    (None) ``k``, named ``short(k)``."""
    ctx = _class_context(context)
    j = class_index(ctx.dataset, k)
    cond = None if sense is None else (sense, j)
    return ClassRate(ctx, j, cond, cond, f"{short}({_label(ctx.dataset, j)})")


def class_prediction_rate(context, k) -> ClassRate:
    """``P(yhat = k | S)``: the share of ``S`` predicted as class ``k``.

    Parameters
    ----------
    context : Context or ClassDataset
        The subset ``S``.
    k : scalar
        A class label (one of ``dataset.classes``).

    Returns
    -------
    ClassRate

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ds = ro.ClassDataset(np.zeros((3, 1)), [0, 1, 2])
    >>> str(ro.class_prediction_rate(ds.context(), 2))
    'ppr(2)[all]'
    """
    return _one_class_rate(context, k, None, "ppr")


def class_recall(context, k) -> ClassRate:
    """``P(yhat = k | y = k, S)``: class ``k``'s recall (true-positive rate) on ``S``.

    Parameters
    ----------
    context : Context or ClassDataset
    k : scalar
        A class label.

    Returns
    -------
    ClassRate
    """
    return _one_class_rate(context, k, "=", "recall")


def class_false_positive_rate(context, k) -> ClassRate:
    """``P(yhat = k | y != k, S)``: class ``k``'s false-positive rate on ``S``.

    Parameters
    ----------
    context : Context or ClassDataset
    k : scalar
        A class label.

    Returns
    -------
    ClassRate
    """
    return _one_class_rate(context, k, "!=", "fpr")


def confusion_rate(context, predicted, true) -> ClassRate:
    """``P(yhat = predicted, y = true | S)``: one entry of the normalized confusion matrix of ``S``.

    Parameters
    ----------
    context : Context or ClassDataset
    predicted, true : scalar
        Class labels.

    Returns
    -------
    ClassRate
    """
    ctx = _class_context(context)
    j = class_index(ctx.dataset, predicted, "predicted")
    k = class_index(ctx.dataset, true, "true")
    return ClassRate(ctx, j, ("=", k), None, f"conf({_label(ctx.dataset, j)},{_label(ctx.dataset, k)})")


def multiclass_accuracy(context) -> Expression:
    """``sum_k P(yhat = k, y = k | S)``: the accuracy on ``S``.

    Parameters
    ----------
    context : Context or ClassDataset

    Returns
    -------
    Expression
    """
    ctx = _class_context(context)
    return sum(confusion_rate(ctx, c, c) for c in ctx.dataset.classes.tolist())


def multiclass_error_rate(context) -> Expression:
    """``1 - sum_k P(yhat = k, y = k | S)``: the error rate on ``S``.

    Parameters
    ----------
    context : Context or ClassDataset

    Returns
    -------
    Expression
    """
    return Constant(1.0) - multiclass_accuracy(context)
