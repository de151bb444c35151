"""Per-group rates of a classifier's decisions: a small ``MetricFrame``.

:func:`group_rates` tabulates, for the whole data and for every value of every
group column, the weighted count, the positive prediction rate, TPR, FPR,
FNR, TNR, error and prevalence of 0-1 decisions or of expected decisions
(probabilities of a positive decision, e.g. of a stochastic classifier).
"""

from __future__ import annotations

import numpy as np

from .exceptions import RateoptError

__all__ = ["group_rates", "RATE_COLUMNS"]

#: The rate columns of :func:`group_rates`, in order.
RATE_COLUMNS = ("count", "weight", "positive_rate", "tpr", "fpr", "fnr", "tnr", "error", "prevalence")


def _groups_dict(groups, n):
    if groups is None:
        return {}
    if hasattr(groups, "columns") and not isinstance(groups, dict):
        return {str(c): np.asarray(groups[c]) for c in groups.columns}
    if isinstance(groups, dict):
        out = {str(k): np.asarray(v) for k, v in groups.items()}
    else:
        arr = np.asarray(groups)
        out = {"group": arr} if arr.ndim == 1 else {f"group{i}": arr[:, i] for i in range(arr.shape[1])}
    for k, v in out.items():
        if v.shape != (n,):
            raise RateoptError(f"group_rates: groups column {k!r} has shape {v.shape}, expected ({n},)")
    return out


def _missing(v):
    return v is None or (isinstance(v, float) and np.isnan(v))


def group_rates(y, predictions, groups=None, *, sample_weight=None, as_frame=None):
    """Tabulate the rates of decisions on the whole data and on every group (like a ``MetricFrame``).

    Parameters
    ----------
    y : array-like of shape (n_samples,) or None
        0/1 labels (None: only the label-free columns are filled, the others are NaN).
    predictions : array-like of shape (n_samples,)
        0/1 decisions, or probabilities of a positive decision in [0, 1]
        (rates are then expected rates, e.g. of a stochastic classifier).
    groups : DataFrame, dict of 1-D arrays, or array, default=None
        Group columns; every non-missing value of every column is a row.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights (default 1).
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
        "value": list, <column>: ndarray}``.

    Raises
    ------
    RateoptError
        If shapes disagree, predictions leave [0, 1], labels are not 0/1 or
        weights are negative or not finite.

    Examples
    --------
    >>> import rateopt
    >>> t = rateopt.group_rates([0, 1, 1, 0], [0, 1, 0, 0], {"g": ["a", "a", "b", "b"]}, as_frame=False)
    >>> t["value"], t["tpr"].tolist()
    (['all', 'a', 'b'], [0.5, 1.0, 0.0])
    """
    p = np.asarray(predictions, dtype=np.float64)
    if p.ndim != 1:
        raise RateoptError(f"group_rates: predictions must be 1-D, got shape {p.shape}")
    n = p.shape[0]
    if not np.all(np.isfinite(p)) or (n and (p.min() < 0 or p.max() > 1)):
        raise RateoptError("group_rates: predictions must be 0/1 decisions or probabilities in [0, 1]")
    if y is not None:
        y = np.asarray(y)
        if y.shape != (n,):
            raise RateoptError(f"group_rates: y has shape {y.shape}, expected ({n},)")
        if not np.all(np.isin(y, (0, 1))):
            raise RateoptError("group_rates: y must hold 0/1 labels")
        y = y.astype(np.float64)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or (n and w.min() < 0):
        raise RateoptError(f"group_rates: sample_weight must be {n} finite non-negative numbers")
    cols = _groups_dict(groups, n)
    keys, masks = [("all", "all")], [np.ones(n, bool)]
    for name, values in cols.items():
        present = np.array([not _missing(v) for v in values], dtype=bool)
        for v in sorted({str(x) for x in values[present]}):
            keys.append((name, v))
            masks.append(present & (np.array([str(x) for x in values], dtype=object) == v))
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
    if as_frame is None or as_frame:
        try:
            import pandas as pd
        except ImportError:
            if as_frame:
                raise RateoptError("group_rates(as_frame=True) needs pandas: python -m pip install pandas") from None
        else:
            index = pd.MultiIndex.from_tuples(keys, names=["group", "value"])
            return pd.DataFrame({c: table[c] for c in RATE_COLUMNS}, index=index)
    return {"group": [k[0] for k in keys], "value": [k[1] for k in keys], **table}
