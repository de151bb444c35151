"""Per-group rates of a classifier's decisions in fixed columns: a view of :func:`rateopt.assess`.

:func:`group_rates` tabulates, for the whole data and for every value of every
group column, the weighted count, the positive prediction rate, TPR, FPR,
FNR, TNR, error and prevalence of 0-1 decisions or of expected decisions
(probabilities of a positive decision, e.g. of a stochastic classifier). On K
classes (predictions of shape (n, K)) it tabulates, per class, the predicted
proportion, the recall and the prevalence, and the error. It is computed by
:func:`rateopt.assess` (one cell per value of each group column, no
intervals); use that for other metrics, intersections, differences, ratios and
confidence intervals.
"""

from __future__ import annotations

import numpy as np

from ._assess._api import compute
from ._assess._cells import group_columns, make_cells
from ._assess._inputs import read_inputs
from ._assess._metrics import resolve_metrics
from .exceptions import RateoptError

__all__ = ["group_rates", "RATE_COLUMNS", "class_rate_columns"]

#: The rate columns of :func:`group_rates`, in order.
RATE_COLUMNS = ("count", "weight", "positive_rate", "tpr", "fpr", "fnr", "tnr", "error", "prevalence")


def class_rate_columns(classes):
    """The rate columns of :func:`group_rates` on K classes, in order.

    Parameters
    ----------
    classes : sequence
        The classes, in the order of the predictions' columns.

    Returns
    -------
    tuple of str
        ``count``, ``weight``, ``proportion[c]`` for every class ``c``, then
        ``recall[c]``, ``prevalence[c]`` and ``error``.
    """
    classes = [str(c) for c in classes]
    return (("count", "weight") + tuple(f"proportion[{c}]" for c in classes) + tuple(f"recall[{c}]" for c in classes)
            + tuple(f"prevalence[{c}]" for c in classes) + ("error",))


def group_rates(y, predictions, groups=None, *, sample_weight=None, classes=None, as_frame=None):
    """Tabulate the rates of decisions on the whole data and on every group (like a ``MetricFrame``).

    Parameters
    ----------
    y : array-like of shape (n_samples,) or None
        0/1 labels, or on K classes labels among ``classes`` (None: only the
        label-free columns are filled, the others are NaN).
    predictions : array-like of shape (n_samples,) or (n_samples, K)
        0/1 decisions, or probabilities of a positive decision in [0, 1]
        (rates are then expected rates, e.g. of a stochastic classifier). On
        K classes: one row per sample of decision probabilities over the
        classes (one-hot for hard decisions, e.g. a ``predict_proba``), each
        row summing to 1.
    groups : DataFrame, dict of 1-D arrays, or array, default=None
        Group columns; every non-missing value of every column is a row.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights (default 1).
    classes : sequence, default=None
        K classes: the class of each column of ``predictions`` (default
        ``0, ..., K - 1``). Only for 2-D predictions.
    as_frame : bool or None, default=None
        Return a pandas DataFrame (None: when pandas is installed).

    Returns
    -------
    pandas.DataFrame or dict
        One row per ``(group, value)`` — first ``("all", "all")``, then each
        column's values in sorted order — and the columns
        :data:`RATE_COLUMNS` (``count`` rows, ``weight`` their total weight;
        TPR, FPR, FNR, TNR, error and prevalence are weighted and NaN when the
        group has no positive, resp. negative, example). As a DataFrame the
        index is a MultiIndex ``(group, value)``; as a dict: ``{"group": list,
        "value": list, <column>: ndarray}``. On K classes the columns are
        ``class_rate_columns(classes)``: per class ``c`` the (weighted) predicted
        proportion ``proportion[c]``, the recall ``recall[c]`` (the expected
        share of the group's rows of class ``c`` predicted ``c``; NaN when the
        group has none) and the prevalence ``prevalence[c]``, and the
        expected ``error``.

    Raises
    ------
    RateoptError
        If shapes disagree, predictions leave [0, 1] (or, on K classes, a
        row does not sum to 1), labels are not 0/1 (not among ``classes``) or
        weights are negative or not finite.

    Examples
    --------
    >>> import rateopt
    >>> t = rateopt.group_rates([0, 1, 1, 0], [0, 1, 0, 0], {"g": ["a", "a", "b", "b"]}, as_frame=False)
    >>> t["value"], t["tpr"].tolist()
    (['all', 'a', 'b'], [0.5, 1.0, 0.0])

    Three classes: each row a distribution over the classes.

    >>> t = rateopt.group_rates(["x", "y", "z", "x"], [[1, 0, 0], [0, 1, 0], [0.5, 0, 0.5], [0, 0, 1]],
    ...                         {"g": ["a", "a", "b", "b"]}, classes=["x", "y", "z"], as_frame=False)
    >>> t["recall[x]"].tolist(), t["error"].tolist()
    ([0.5, 1.0, 0.0], [0.375, 0.0, 0.75])
    """
    where = "group_rates"
    inp = read_inputs(y, predictions, sample_weight, classes, where=where, predicted_labels=False)
    columns_of_groups = group_columns(groups, inp.n, where)
    cells = make_cells(columns_of_groups, inp.n, intersections=False, as_str=True)
    if inp.per_class:
        names = [str(c) for c in inp.classes]
        columns = class_rate_columns(inp.classes)
        metrics = {f"proportion[{c}]": f"proportion[{c}]" for c in names}
        if y is not None:
            metrics.update({f"recall[{c}]": f"recall[{c}]" for c in names})
            metrics.update({f"prevalence[{c}]": f"prevalence[{c}]" for c in names})
            metrics["error"] = "error"
    else:
        columns = RATE_COLUMNS
        metrics = {"positive_rate": "selection_rate"}
        if y is not None:
            metrics.update({c: c for c in ("tpr", "fpr", "fnr", "tnr", "error", "prevalence")})
    d = compute(inp, resolve_metrics(metrics, inp), cells, ci=None).to_dict()
    rows = slice(None) if columns_of_groups else slice(0)  # no group columns: the ("all", "all") row alone
    keys = [("all", "all")] + d["keys"][rows]
    table = {c: np.full(len(keys), np.nan) for c in columns}
    table["count"] = np.concatenate([[d["overall"]["count"]], d["count"][rows]]).astype(np.float64)
    table["weight"] = np.concatenate([[d["overall"]["weight"]], d["weight"][rows]])
    for m, v in d["values"].items():
        table[m] = np.concatenate([[d["overall"][m]], v[rows]])
    return _output(keys, table, columns, as_frame)


def _output(keys, table, columns, as_frame):
    if as_frame is None or as_frame:
        try:
            import pandas as pd
        except ImportError:
            if as_frame:
                raise RateoptError("group_rates(as_frame=True) needs pandas: python -m pip install pandas") from None
        else:
            index = pd.MultiIndex.from_tuples(keys, names=["group", "value"])
            return pd.DataFrame({c: table[c] for c in columns}, index=index)
    return {"group": [k[0] for k in keys], "value": [k[1] for k in keys], **table}
