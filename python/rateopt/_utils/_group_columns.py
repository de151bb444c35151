"""Group columns held in ``X``: taken out of it as the ``groups`` of a fit or a prediction.

A scikit-learn model-selection tool (a ``Pipeline``, ``cross_val_score``,
``GridSearchCV``) passes only ``X`` and ``y`` to ``fit`` and only ``X`` to
``predict``: a classifier whose goals refer to groups finds them among the
columns of ``X``. :func:`split_group_columns` is the one place that reads
them: names of a DataFrame's columns, or positions of an array's (the group
is then named by its position as a string, ``"0"``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["split_group_columns"]


def _group_positions(X, group_columns, predicting, n_features):
    """``(positions, names)`` of the group columns in ``X``; ``(None, None)`` when ``X`` lacks them (prediction)."""
    cols = list(group_columns)
    if not cols or not (all(isinstance(c, str) for c in cols) or
                        all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in cols)):
        raise ValueError(f"group_columns must be a non-empty sequence of column names or of column positions, "
                         f"got {group_columns!r}")
    if len(set(cols)) != len(cols):
        raise ValueError(f"group_columns repeats a column: {group_columns!r}")
    names = list(X.columns) if hasattr(X, "columns") and not isinstance(X, np.ndarray) else None
    n_cols = X.shape[1]
    if isinstance(cols[0], str):
        if names is None:
            raise ValueError(f"group_columns names columns {cols!r} but X has no column names: give a DataFrame, "
                             "or column positions")
        missing = [c for c in cols if c not in names]
        if missing and (len(missing) < len(cols) or not predicting):
            raise ValueError(f"X lacks the group column(s) {missing!r} of group_columns={group_columns!r}")
        return (None, None) if missing else ([names.index(c) for c in cols], cols)
    if predicting and n_cols == n_features and names is None:
        return None, None  # an array of the features only (prediction)
    bad = [c for c in cols if not -n_cols <= c < n_cols]
    if bad:
        raise ValueError(f"group_columns {bad!r} are out of range for X with {n_cols} columns")
    pos = [int(c) % n_cols for c in cols]
    if len(set(pos)) != len(pos):
        raise ValueError(f"group_columns repeats a column: {group_columns!r}")
    return pos, [str(c) if names is None else names[p] for c, p in zip(cols, pos)]


def split_group_columns(X, group_columns, groups=None, *, predicting=False, n_features=None):
    """``(features, groups)``: the ``group_columns`` taken out of ``X``.

    Parameters
    ----------
    X : array-like, DataFrame or sparse matrix of shape (n_samples, n_columns)
    group_columns : sequence of str or int, or None
        Names of a DataFrame's columns, or positions of an array's. None:
        ``X`` and ``groups`` are returned as given.
    groups : DataFrame or dict of arrays, default=None
        Must be None when ``group_columns`` is given (one source of groups).
    predicting : bool, default=False
        At prediction ``X`` may leave the group columns out (a DataFrame
        without them, or an array of ``n_features`` columns): the groups are
        then None.
    n_features : int or None, default=None
        The number of feature columns seen in the fit (the array case above).

    Returns
    -------
    features : the columns of ``X`` that are not group columns (same container type)
    groups : dict of str to ndarray, or None

    Raises
    ------
    ValueError
        On both ``groups`` and ``group_columns``, a malformed ``group_columns``,
        or columns ``X`` does not have (the message names ``group_columns``).
    """
    if group_columns is None:
        return X, groups
    if groups is not None:
        raise ValueError("give groups= or group_columns=, not both")
    if not (hasattr(X, "shape") or sp.issparse(X)):
        X = np.asarray(X, dtype=object)
    if len(X.shape) != 2:
        raise ValueError(f"X must be 2-D to hold group_columns, got shape {X.shape}")
    pos, names = _group_positions(X, group_columns, predicting, n_features)
    if pos is None:
        return X, None
    keep = np.setdiff1d(np.arange(X.shape[1]), pos)
    if hasattr(X, "iloc"):
        groups = {n: X.iloc[:, p].to_numpy() for n, p in zip(names, pos)}
        return X.iloc[:, keep], groups
    if sp.issparse(X):
        X = X.tocsc()
        groups = {n: X[:, [p]].toarray().ravel() for n, p in zip(names, pos)}
        return X[:, keep].tocsr(), groups
    X = np.asarray(X)
    return X[:, keep], {n: X[:, p] for n, p in zip(names, pos)}
