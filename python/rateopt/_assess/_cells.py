"""The cells of an assessment: the groups of one or more group columns, or their intersections.

A row whose value is missing (``None`` or NaN) in a column belongs to no group
of that column (and, for intersections, to no intersection).
"""

from __future__ import annotations

import numpy as np

from .._language._validation import missing_mask
from ..exceptions import RateoptError

__all__ = ["Cells", "group_columns", "make_cells"]


class Cells:
    """The cells of a table: their labels, their rows and the index names.

    Attributes
    ----------
    keys : list of tuple
        One label tuple per cell (one value per index level).
    names : list of str
        The index level names.
    """

    def __init__(self, keys, names, rows):
        self.keys, self.names, self._rows = keys, names, rows

    def __len__(self):
        return len(self.keys)

    def rows(self, i):
        """The row positions of cell ``i`` (sorted)."""
        return self._rows[i]


def group_columns(groups, n, where="assess"):
    """``{name: 1-D array}`` of ``groups`` (DataFrame, Series, dict of arrays, 1-D or 2-D array).

    Parameters
    ----------
    groups : DataFrame, Series, dict of array-like, or array-like
        The group columns (a 1-D array is one column named ``"group"``, the
        columns of a 2-D one ``"group0"``, ``"group1"``, ...; a Series keeps
        its name).
    n : int
        The number of rows.
    where : str, default="assess"
        The function named in error messages.

    Returns
    -------
    dict of str to ndarray
    """
    if groups is None:
        return {}
    if hasattr(groups, "columns") and not isinstance(groups, dict):
        out = {str(c): np.asarray(groups[c]) for c in groups.columns}
    elif isinstance(groups, dict):
        out = {str(k): np.asarray(v) for k, v in groups.items()}
    elif hasattr(groups, "name") and hasattr(groups, "to_numpy"):  # a Series
        out = {"group" if groups.name is None else str(groups.name): groups.to_numpy()}
    else:
        arr = np.asarray(groups)
        out = {"group": arr} if arr.ndim == 1 else {f"group{i}": arr[:, i] for i in range(arr.shape[1])}
    for k, v in out.items():
        if v.shape != (n,):
            raise RateoptError(f"{where}: groups column {k!r} has shape {v.shape}, expected ({n},)")
    return out


def _codes(values, as_str):
    """``(labels, codes)``: the sorted distinct non-missing values and each row's position among them (-1: missing)."""
    missing = missing_mask(values)
    codes = np.full(values.shape, -1, dtype=np.int64)
    present = values[~missing]
    if as_str:
        present = np.array([str(v) for v in present], dtype=object)
    try:
        labels, inverse = np.unique(present, return_inverse=True)
    except TypeError:  # values of several types: order them by their text
        present = np.array([str(v) for v in present], dtype=object)
        labels, inverse = np.unique(present, return_inverse=True)
    codes[~missing] = inverse.reshape(-1)
    return labels.tolist(), codes


def make_cells(columns, n, *, intersections=True, as_str=False):
    """The cells of ``columns``.

    Parameters
    ----------
    columns : dict of str to ndarray
        From :func:`group_columns`.
    n : int
        The number of rows.
    intersections : bool, default=True
        True: one cell per combination of values present (index levels: the
        column names). False: one cell per value of each column (index
        levels ``("group", "value")``).
    as_str : bool, default=False
        Label the values by their text (and order them by it).

    Returns
    -------
    Cells
    """
    if not columns:
        return Cells([("all",)], ["group"], [np.arange(n)])
    coded = {name: _codes(values, as_str) for name, values in columns.items()}
    if not intersections:
        keys, rows = [], []
        for name, (labels, codes) in coded.items():
            order = np.argsort(codes, kind="stable")
            bounds = np.searchsorted(codes[order], np.arange(len(labels) + 1))
            for j, label in enumerate(labels):
                keys.append((name, label))
                rows.append(np.sort(order[bounds[j]:bounds[j + 1]]))
        return Cells(keys, ["group", "value"], rows)
    names = list(coded)
    code_matrix = np.column_stack([coded[c][1] for c in names])
    present = np.all(code_matrix >= 0, axis=1)
    combos, inverse = np.unique(code_matrix[present], axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    where_present = np.flatnonzero(present)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(combos) + 1))
    keys = [tuple(coded[c][0][k] for c, k in zip(names, combo)) for combo in combos.tolist()]
    rows = [where_present[order[bounds[j]:bounds[j + 1]]] for j in range(len(combos))]
    return Cells(keys, names, rows)
