"""Reading a predictor's output as per-example decision values in [0, 1].

:meth:`rateopt.Problem.evaluate` accepts decisions, scores, probabilities
(expected decisions of a stochastic mixture) or labels; these functions decide
how an array is read and check it, naming the dataset in every message.
:func:`positive_decisions` reads a fitted classifier's 0/1 ``predict`` output.
"""

from __future__ import annotations

import numpy as np

from rateopt._language._data import Dataset
from rateopt._language._validation import read_label_values
from rateopt.exceptions import RateoptError

__all__ = ["decision_values", "positive_decisions"]


def decision_values(pred, kind: str, ds: Dataset) -> np.ndarray:
    """Per-example decision values in [0, 1] (see :meth:`Problem.evaluate` for the rules).

    Parameters
    ----------
    pred : array-like of shape (n_samples,)
        Decisions, scores, probabilities or label values.
    kind : {"auto", "decisions", "scores", "probabilities", "labels"}
        How ``pred`` is read.
    ds : Dataset
        The dataset the predictions are for (its name, size and label values).

    Returns
    -------
    ndarray of shape (n_samples,) of float64
        Decisions in {0, 1}, or expected decisions in [0, 1].

    Raises
    ------
    RateoptError
        If ``pred`` has the wrong shape or dtype, values that do not fit
        ``kind``, or an ambiguous reading.
    """
    name, n_samples = ds.name, ds.n_samples
    a = np.asarray(pred)
    if a.ndim != 1 or a.shape[0] != n_samples:
        raise RateoptError(
            f"predictions for dataset {name!r} must have shape ({n_samples},), got {a.shape}"
        )
    return read_label_values(a, kind, ds.classes, np.float64, lambda a, k: _numeric_decision_values(a, k, name), {
        "labels": lambda: (f"kind='labels' but the predictions for dataset {name!r} are not all among its "
                           f"label values {ds.classes!r}" if ds.classes is not None
                           else f"kind='labels' but dataset {name!r} has no labels"),
        "dtype": lambda: (f"predictions for dataset {name!r} must be numeric or boolean (or the dataset's "
                          f"label values), got dtype {a.dtype}"),
        "ambiguous": lambda: (f"predictions for dataset {name!r} are ambiguous: read as label values "
                              f"{ds.classes!r} (positive label {ds.classes[1]!r}) they differ from their reading "
                              "as 0/1 decisions or scores; pass kind='labels', 'decisions' or 'scores'"),
    })


def _numeric_decision_values(a: np.ndarray, kind: str, name: str) -> np.ndarray:
    if a.dtype.kind == "b":
        if kind in ("auto", "decisions", "probabilities"):
            return a.astype(np.float64)
        raise RateoptError(f"predictions for dataset {name!r} are boolean but kind={kind!r}")
    v = a.astype(np.float64)
    if not np.all(np.isfinite(v)):
        raise RateoptError(f"predictions for dataset {name!r} contain NaN or inf")
    if kind == "scores":
        return (v >= 0).astype(np.float64)
    is01 = bool(np.all((v == 0) | (v == 1)))
    if kind == "decisions":
        if not is01:
            raise RateoptError(
                f"kind='decisions' but predictions for dataset {name!r} have values other than 0/1"
            )
        return v
    in01 = bool(np.all((v >= 0) & (v <= 1)))
    if kind == "probabilities":
        if not in01:
            raise RateoptError(
                f"kind='probabilities' but predictions for dataset {name!r} are outside [0, 1]"
            )
        return v
    if is01:
        return v
    if in01:
        raise RateoptError(
            f"predictions for dataset {name!r} all lie in [0, 1] but are not all 0/1: pass "
            "kind='probabilities' (expected decisions) or kind='scores' (positive iff >= 0)"
        )
    return (v >= 0).astype(np.float64)


def positive_decisions(model, X):
    """``1[model predicts the positive class]`` for every row, as float64 (labels are 0/1).

    Parameters
    ----------
    model : fitted classifier
        Its ``predict`` returns 0/1 labels.
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The rows.

    Returns
    -------
    ndarray of shape (n_samples,) of float64
        1.0 where ``model.predict(X) == 1``, else 0.0.

    Raises
    ------
    RateoptError
        If ``predict`` returns a number of values other than the number of rows.
    """
    d = np.asarray(model.predict(X)).reshape(-1)
    if d.shape[0] != X.shape[0]:
        raise RateoptError(f"{type(model).__name__}.predict returned {d.shape[0]} values for {X.shape[0]} rows")
    return (d == 1).astype(np.float64)
