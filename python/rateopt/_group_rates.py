"""Per-group rates of a classifier's decisions: a small ``MetricFrame``.

:func:`group_rates` tabulates, for the whole data and for every value of every
group column, the weighted count, the positive prediction rate, TPR, FPR,
FNR, TNR, error and prevalence of 0-1 decisions or of expected decisions
(probabilities of a positive decision, e.g. of a stochastic classifier). On K
classes (predictions of shape (n, K)) it tabulates, per class, the predicted
proportion, the recall and the prevalence, and the error.
"""

from __future__ import annotations

import numpy as np

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


def _groups_dict(groups, n):
    if groups is None:
        return {}
    if hasattr(groups, "columns") and not isinstance(groups, dict):
        return {str(c): np.asarray(groups[c]) for c in groups.columns}
    if isinstance(groups, dict):
        out = {str(k): np.asarray(v) for k, v in groups.items()}
    else:
        arr = np.asarray(groups)
        if arr.ndim not in (1, 2):
            raise RateoptError(f"group_rates: groups must be a DataFrame, a dict of columns or a 1-D or 2-D array, "
                               f"got {type(groups).__name__} of shape {arr.shape}")
        out = {"group": arr} if arr.ndim == 1 else {f"group{i}": arr[:, i] for i in range(arr.shape[1])}
    for k, v in out.items():
        if v.shape != (n,):
            raise RateoptError(f"group_rates: groups column {k!r} has shape {v.shape}, expected ({n},)")
    return out


def _missing(v):
    return v is None or (isinstance(v, float) and np.isnan(v))


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
    try:
        p = np.asarray(predictions, dtype=np.float64)
    except (TypeError, ValueError):
        raise RateoptError("group_rates: predictions must be 0/1 decisions or probabilities in [0, 1], got "
                           f"values that are not numbers ({type(predictions).__name__})") from None
    if p.ndim not in (1, 2):
        raise RateoptError(f"group_rates: predictions must be 1-D (two classes) or 2-D (n, K), got shape {p.shape}")
    n = p.shape[0]
    if not np.all(np.isfinite(p)) or (p.size and (p.min() < 0 or p.max() > 1)):
        raise RateoptError("group_rates: predictions must be 0/1 decisions or probabilities in [0, 1]")
    if p.ndim == 2:
        return _class_rates(y, p, groups, sample_weight, classes, as_frame)
    if classes is not None:
        raise RateoptError("group_rates: classes= names the columns of 2-D (K-class) predictions; predictions are "
                           "1-D (0/1 decisions)")
    if y is not None:
        y = np.asarray(y)
        if y.shape != (n,):
            raise RateoptError(f"group_rates: y has shape {y.shape}, expected ({n},)")
        if not np.all(np.isin(y, (0, 1))):
            raise RateoptError("group_rates: y must hold 0/1 labels")
        y = y.astype(np.float64)
    w = _weights(sample_weight, n)
    keys, masks = _cells(groups, n)
    table = {c: np.full(len(keys), np.nan) for c in RATE_COLUMNS}
    for i, m in enumerate(masks):
        wm, pm = w[m], p[m]
        W = wm.sum()
        table["count"][i] = m.sum()
        table["weight"][i] = W
        if W > 0:
            table["positive_rate"][i] = wm @ pm / W
        if y is None or W == 0:
            continue
        ym = y[m]
        Wp, Wn = wm @ ym, wm @ (1 - ym)
        table["prevalence"][i] = Wp / W
        table["error"][i] = (wm @ (ym * (1 - pm) + (1 - ym) * pm)) / W
        if Wp > 0:
            table["tpr"][i] = (wm * ym) @ pm / Wp
            table["fnr"][i] = 1 - table["tpr"][i]
        if Wn > 0:
            table["fpr"][i] = (wm * (1 - ym)) @ pm / Wn
            table["tnr"][i] = 1 - table["fpr"][i]
    return _output(keys, table, RATE_COLUMNS, as_frame)


def _weights(sample_weight, n):
    try:
        w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        w = np.full(n + 1, np.nan)  # not numbers: refused below
    if w.shape != (n,) or not np.all(np.isfinite(w)) or (n and w.min() < 0):
        raise RateoptError(f"group_rates: sample_weight must be {n} finite non-negative numbers")
    return w


def _cells(groups, n):
    """``([(group, value)], [mask])``: first ``("all", "all")``, then each column's values in sorted order."""
    cols = _groups_dict(groups, n)
    keys, masks = [("all", "all")], [np.ones(n, bool)]
    for name, values in cols.items():
        present = np.array([not _missing(v) for v in values], dtype=bool)
        for v in sorted({str(x) for x in values[present]}):
            keys.append((name, v))
            masks.append(present & (np.array([str(x) for x in values], dtype=object) == v))
    return keys, masks


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


def _class_onehot(y, classes, n):
    """The (n, K) one-hot labels of ``y`` among ``classes``."""
    y = np.asarray(y)
    if y.shape != (n,):
        raise RateoptError(f"group_rates: y has shape {y.shape}, expected ({n},)")
    position = {c: k for k, c in enumerate(classes)}
    try:
        idx = np.array([position[v] for v in y.tolist()], dtype=np.int64)
    except (KeyError, TypeError):
        bad = sorted({str(v) for v in y.tolist() if v not in position})[:5]
        raise RateoptError(f"group_rates: y holds labels {bad!r} that are not among classes {list(classes)!r}") from None
    onehot = np.zeros((n, len(classes)))
    onehot[np.arange(n), idx] = 1.0
    return onehot


def _class_rates(y, p, groups, sample_weight, classes, as_frame):
    """:func:`group_rates` of K-class decision distributions ``p`` (n, K)."""
    n, K = p.shape
    if K < 2:
        raise RateoptError(f"group_rates: 2-D predictions need K >= 2 columns (one per class), got {K}")
    if n and not np.allclose(p.sum(axis=1), 1.0, rtol=0.0, atol=1e-9):
        raise RateoptError("group_rates: each row of 2-D predictions must be a distribution over the classes "
                           "(sum to 1)")
    classes = list(range(K)) if classes is None else list(np.asarray(classes, dtype=object).tolist())
    if len(classes) != K or len(set(map(str, classes))) != K:
        raise RateoptError(f"group_rates: classes must name the {K} columns of predictions once each, got "
                           f"{classes!r}")
    onehot = None if y is None else _class_onehot(y, classes, n)
    w = _weights(sample_weight, n)
    keys, masks = _cells(groups, n)
    columns = class_rate_columns(classes)
    names = [str(c) for c in classes]
    table = {c: np.full(len(keys), np.nan) for c in columns}
    for i, m in enumerate(masks):
        wm, pm = w[m], p[m]
        W = wm.sum()
        table["count"][i] = m.sum()
        table["weight"][i] = W
        if W == 0:
            continue
        share = wm @ pm / W
        for k, c in enumerate(names):
            table[f"proportion[{c}]"][i] = share[k]
        if onehot is None:
            continue
        ym = onehot[m]
        Wk = wm @ ym  # the weight of each class in the group
        hits = (wm[:, None] * ym * pm).sum(axis=0)  # expected weight of correct decisions per class
        table["error"][i] = 1.0 - hits.sum() / W
        for k, c in enumerate(names):
            table[f"prevalence[{c}]"][i] = Wk[k] / W
            if Wk[k] > 0:
                table[f"recall[{c}]"][i] = hits[k] / Wk[k]
    return _output(keys, table, columns, as_frame)
