"""``as_frame=True``: a dataset's raw columns, groups, label and weights as one pandas DataFrame.

The layout (documented on :class:`~rateopt.datasets.BenchmarkDataset`):

1. the raw feature columns, in ``X``'s order (numerics unscaled, categoricals as their labels, of pandas'
   ``category`` dtype, as scikit-learn's ``fetch_openml(as_frame=True)`` gives nominal features);
2. each group column that is not already a raw column with the same values, named as in ``groups``, or
   ``<name>_group`` when a raw column has that name but other values (e.g. Adult's numeric ``age`` and
   its buckets ``age_group``);
3. the label, :data:`LABEL_COLUMN` (0/1);
4. the weights, :data:`WEIGHT_COLUMN`, where the data has some.

:func:`frame_roles` says which column plays which part, in the terms of ``rateopt fit``'s flags.
"""

from __future__ import annotations

import numpy as np

from ._encoding import require_pandas

__all__ = ["LABEL_COLUMN", "WEIGHT_COLUMN", "build_frame"]

#: The frame's label column (``y``: 0/1).
LABEL_COLUMN = "label"
#: The frame's weight column (only where the data ships weights).
WEIGHT_COLUMN = "weight"


def _same(a, b):
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    return a.shape == b.shape and bool(np.all(a == b))


def build_frame(raw, groups, y, weights):
    """The DataFrame of ``as_frame=True`` and its roles.

    Parameters
    ----------
    raw : dict of str to (str, ndarray)
        The raw feature columns, in ``X``'s order: name -> ``(kind, values)``,
        ``kind`` ``"num"`` or ``"cat"``.
    groups : dict of str to ndarray
        The group columns.
    y : ndarray
        The 0/1 labels.
    weights : ndarray or None
        The example weights.

    Returns
    -------
    frame : pandas.DataFrame
        The columns in the order above, one row per example.
    roles : dict
        ``label`` (the label column), ``groups`` (group name -> its column),
        ``weight`` (the weight column or None), ``features`` (the raw feature
        columns), ``categorical`` (those of them that are categorical) and ``drop`` (the group columns that are not features: give
        them to ``rateopt fit --drop`` to train on the features ``X`` encodes).
    """
    pd = require_pandas()
    data = {name: pd.Categorical(v) if kind == "cat" else np.array(v, copy=True) for name, (kind, v) in raw.items()}
    roles = {"label": LABEL_COLUMN, "groups": {}, "weight": None, "features": list(raw),
             "categorical": [name for name, (kind, _) in raw.items() if kind == "cat"], "drop": []}
    for g, values in groups.items():
        if g in raw and _same(raw[g][1], values):
            roles["groups"][g] = g
            continue
        column = g if g not in data else f"{g}_group"
        if column in data or column in (LABEL_COLUMN, WEIGHT_COLUMN):  # pragma: no cover - no dataset has it
            raise ValueError(f"as_frame: the group column {g!r} has no free name in the frame")
        data[column] = pd.Categorical(np.asarray(values, dtype=object))
        roles["groups"][g] = column
        roles["drop"].append(column)
    if LABEL_COLUMN in data or WEIGHT_COLUMN in data:  # pragma: no cover - no dataset has it
        raise ValueError(f"as_frame: a raw column is named {LABEL_COLUMN!r} or {WEIGHT_COLUMN!r}")
    data[LABEL_COLUMN] = np.asarray(y, dtype=np.int8).copy()
    if weights is not None:
        data[WEIGHT_COLUMN] = np.asarray(weights, dtype=np.float64).copy()
        roles["weight"] = WEIGHT_COLUMN
    return pd.DataFrame(data), roles
