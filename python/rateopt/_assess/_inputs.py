"""The inputs of :func:`rateopt.assess` read into one form for two and K classes.

Whatever the caller gives (0/1 decisions, probabilities of a positive decision,
a ``predict_proba`` matrix, K-class labels), :func:`read_inputs` returns the
decision distribution ``P`` of shape ``(n, K)`` (row ``i``: the probability of
deciding each class), the label of each row as a class position, the weights,
and the arrays as given (for metric callables, which see the caller's arrays).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._predictors._draws import two_columns
from .._training._arity import Arity, arity_of_labels
from ..exceptions import RateoptError

__all__ = ["Inputs", "read_inputs"]


@dataclass(frozen=True)
class Inputs:
    """Predictions, labels and weights in one form.

    Attributes
    ----------
    P : ndarray of shape (n, K)
        Decision probabilities over the classes (one-hot for hard decisions).
    y : ndarray of shape (n,) or None
        The position of each row's label in ``classes`` (None: unlabeled).
    w : ndarray of shape (n,)
        Non-negative weights.
    classes : list
        The classes, in the order of ``P``'s columns (two classes: ``[0, 1]``
        unless given; the positive class is the second).
    y_given, predictions_given : array-like
        The labels and predictions as the caller gave them.
    arity : Arity
        The number of classes, found once from ``classes``
        (``rateopt._training._arity``): what the metrics ask.
    per_class : bool
        Whether the predictions were given per class (a 2-D distribution, or
        predicted labels), not as decisions on the positive class.
    """

    P: np.ndarray
    y: np.ndarray | None
    w: np.ndarray
    classes: list
    y_given: object
    predictions_given: object
    arity: Arity
    per_class: bool

    @property
    def n(self):
        """The number of rows."""
        return self.P.shape[0]

    @property
    def n_classes(self):
        """The number of classes ``K``."""
        return self.P.shape[1]


def _weights(sample_weight, n, where):
    try:
        w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise RateoptError(f"{where}: sample_weight must be {n} finite non-negative numbers, got values that are "
                           "not numbers") from None
    if w.shape != (n,) or not np.all(np.isfinite(w)) or (n and w.min() < 0):
        raise RateoptError(f"{where}: sample_weight must be {n} finite non-negative numbers")
    return w


def _class_positions(y, classes, n, where):
    y = np.asarray(y)
    if y.shape != (n,):
        raise RateoptError(f"{where}: y has shape {y.shape}, expected ({n},)")
    position = {c: k for k, c in enumerate(classes)}
    try:
        return np.array([position[v] for v in y.tolist()], dtype=np.int64)
    except (KeyError, TypeError):
        bad = sorted({str(v) for v in y.tolist() if v not in position})[:5]
        raise RateoptError(f"{where}: y holds labels {bad!r} that are not among classes {list(classes)!r}") from None


def read_inputs(y, predictions, sample_weight=None, classes=None, *, where="assess", predicted_labels=True):
    """Read labels, predictions and weights (see :func:`rateopt.assess`).

    Parameters
    ----------
    y : array-like of shape (n,) or None
        Labels: 0/1 for two classes without ``classes``, else among ``classes``.
    predictions : array-like of shape (n,) or (n, K)
        1-D without ``classes``: 0/1 decisions or probabilities of a positive
        decision. 1-D with ``classes``: predicted labels. 2-D: decision
        probabilities over the classes, each row summing to 1.
    sample_weight : array-like of shape (n,), default=None
        Non-negative finite weights (default 1).
    classes : sequence, default=None
        The classes (the columns of 2-D predictions; default ``0, ..., K-1``).
    where : str, default="assess"
        The function named in error messages.
    predicted_labels : bool, default=True
        Whether 1-D predictions with ``classes`` are predicted labels (else
        they are refused: ``classes`` then names 2-D predictions' columns).

    Returns
    -------
    Inputs

    Raises
    ------
    RateoptError
        On shapes that disagree, probabilities outside [0, 1], rows that do not
        sum to 1, labels not 0/1 (not among ``classes``), or bad weights.
    """
    given = predictions
    if classes is not None:
        classes = list(np.asarray(classes, dtype=object).tolist())
        if len(classes) < 2 or len(set(map(str, classes))) != len(classes):
            raise RateoptError(f"{where}: classes must name at least 2 distinct classes, got {classes!r}")
    raw = np.asarray(predictions)
    if raw.ndim not in (1, 2):
        raise RateoptError(f"{where}: predictions must be 1-D or 2-D (n, K), got shape {raw.shape}")
    n = raw.shape[0]
    per_class = True  # a distribution over the classes, or predicted labels
    if raw.ndim == 1 and classes is not None:  # predicted labels
        if not predicted_labels:
            raise RateoptError(f"{where}: classes= names the columns of 2-D (K-class) predictions; predictions are "
                               "1-D (0/1 decisions)")
        P = np.zeros((n, len(classes)))
        P[np.arange(n), _class_positions(raw, classes, n, where + " (predictions)")] = 1.0
    else:
        try:
            p = raw.astype(np.float64)
        except (TypeError, ValueError):
            raise RateoptError(f"{where}: predictions must be numbers (0/1 decisions or probabilities), or labels "
                               "among classes=") from None
        if not np.all(np.isfinite(p)) or (p.size and (p.min() < 0 or p.max() > 1)):
            raise RateoptError(f"{where}: predictions must be 0/1 decisions or probabilities in [0, 1]")
        if p.ndim == 1:
            P = two_columns(p)
            classes, per_class = [0, 1], False
        else:
            K = p.shape[1]
            if K < 2:
                raise RateoptError(f"{where}: 2-D predictions need K >= 2 columns (one per class), got {K}")
            if n and not np.allclose(p.sum(axis=1), 1.0, rtol=0.0, atol=1e-9):
                raise RateoptError(f"{where}: each row of 2-D predictions must be a distribution over the classes "
                                   "(sum to 1)")
            if classes is None:
                classes = list(range(K))
            elif len(classes) != K:
                raise RateoptError(f"{where}: classes must name the {K} columns of predictions once each, got "
                                   f"{classes!r}")
            P = p
    labels = None
    if y is not None:
        yy = np.asarray(y)
        if yy.shape != (n,):
            raise RateoptError(f"{where}: y has shape {yy.shape}, expected ({n},)")
        if classes == [0, 1] and raw.ndim == 1:
            if not np.all(np.isin(yy, (0, 1))):
                raise RateoptError(f"{where}: y must hold 0/1 labels")
            labels = yy.astype(np.int64)
        else:
            labels = _class_positions(yy, classes, n, where)
    return Inputs(P=P, y=labels, w=_weights(sample_weight, n, where), classes=classes, y_given=y,
                  predictions_given=given, arity=arity_of_labels(classes), per_class=per_class)
