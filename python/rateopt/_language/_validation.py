"""Validation of a :class:`~rateopt.Dataset`'s arguments: its columns, labels, weights, groups and baseline.

Every function checks one argument and returns a private, read-only NumPy copy
(or view) of it; errors name the argument. Everything is vectorized NumPy.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Mapping

import numpy as np

from rateopt.exceptions import RateoptError

__all__ = ["readonly", "missing_mask", "unique", "factorize", "as_1d", "check_weights", "parse_labels", "parse_weights",
           "parse_groups", "parse_baseline", "FactorizedColumn", "COMPACT_GROUP_KINDS", "nullable_columns", "class_labels", "text_columns"]


def readonly(a: np.ndarray) -> np.ndarray:
    """Mark ``a`` read-only and return it."""
    a.flags.writeable = False
    return a


def missing_mask(a: np.ndarray) -> np.ndarray:
    """Boolean mask of missing entries.

    NaN for floats, NaT for datetimes; for objects ``None``, NaN and pandas'
    missing-value markers (``pd.NA``, ``pd.NaT``), which come from nullable
    pandas dtypes (``Int64``, ``boolean``, ``string``) converted to NumPy.
    """
    if a.dtype.kind in "fc":
        return np.isnan(a)
    if a.dtype.kind in "mM":
        return np.isnat(a)
    if a.dtype.kind == "O":
        pd = sys.modules.get("pandas")  # pd.NA can only exist when pandas is loaded
        if pd is not None:
            return np.asarray(pd.isna(a), dtype=bool)
        # ``a != a`` is True exactly for NaN-like objects; ``a == None`` for None.
        with np.errstate(invalid="ignore"):
            return np.asarray(a == None, dtype=bool) | np.asarray(a != a, dtype=bool)  # noqa: E711
    return np.zeros(a.shape, dtype=bool)


def nullable_columns(X, what: str = "X") -> list:
    """The columns of a DataFrame ``X`` with pandas' nullable numeric dtypes (``Float64``, ``Int64``, ``boolean``).

    Such columns hold numbers when they hold no missing value: ``X.to_numpy(float64)``
    reads them. A missing value (``pd.NA``) or a non-numeric extension dtype
    (``string``, ``category``, ...) is refused, naming the column; ``what`` names
    the argument in the messages. Anything that is not a DataFrame gives ``[]``.

    Raises
    ------
    RateoptError
        If such a column holds a missing value or is not numeric.
    """
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or isinstance(X, np.ndarray) or not hasattr(X, "columns") or getattr(X, "ndim", 2) != 2:
        return []
    out = []
    for pos, (col, dt) in enumerate(zip(X.columns, dtypes)):
        if isinstance(dt, np.dtype):
            if dt.kind in "US" or (dt.kind == "O" and any(isinstance(v, (str, bytes)) for v in X.iloc[:, pos])):
                raise RateoptError(_text_column(what, col, dt))
            continue
        if getattr(dt, "kind", "O") not in "biuf":
            raise RateoptError(_text_column(what, col, dt))
        missing = np.asarray(X.iloc[:, pos].isna(), dtype=bool)
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise RateoptError(f"{what} column {col!r} holds a missing value (pd.NA) at row {row} "
                               f"({int(missing.sum())} missing): impute or drop it")
        out.append(col)
    return out


def text_columns(X) -> list:
    """The columns of a DataFrame ``X`` that hold text (a string dtype, or objects among which a string).

    Parameters
    ----------
    X : object
        Anything; only a DataFrame has such columns.

    Returns
    -------
    list
        The column names, in order ([] for anything but a DataFrame).
    """
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or isinstance(X, np.ndarray) or not hasattr(X, "columns") or getattr(X, "ndim", 2) != 2:
        return []
    out = []
    for pos, (col, dt) in enumerate(zip(X.columns, dtypes)):
        kind = dt.kind if isinstance(dt, np.dtype) else getattr(dt, "kind", "O")
        if kind in "US" or (kind == "O" and any(isinstance(v, (str, bytes)) for v in X.iloc[:, pos])):
            out.append(col)
    return out


def _text_column(what, col, dt) -> str:
    """The refusal of a non-numeric feature column, pointing to ``group_columns=`` for a column of groups."""
    return (f"{what} column {col!r} has dtype {dt}: features must be numbers; if it holds groups, name it in "
            f"group_columns=[{col!r}] (it is then taken out of the features), else encode it as numbers")


def _group_column(values) -> np.ndarray:
    """A group column as a private NumPy copy; missing objects (``pd.NA``, NaN, ...) become ``None``.

    pandas' ``pd.NA`` has no truth value, so comparing a column holding it
    with a group value would raise; ``None`` compares unequal to every value,
    so a missing entry belongs to no group.
    """
    col = np.array(values, copy=True)
    if col.dtype.kind == "O":
        missing = missing_mask(col)
        if missing.any():
            col[missing] = None
    return col


def _integer_span(a):
    """``(a - lo)`` as intp and ``(lo, span)`` when ``a`` holds booleans or integers within a small range, else None.

    Small: ``span = max - min + 1`` at most ``max(2 * a.size, 65536)``, so one
    :func:`numpy.bincount` over the span costs about as much as a pass over the
    rows (labels, group codes); no sort.
    """
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "biu" or a.size == 0:
        return None
    flat = a.reshape(-1)
    lo, hi = int(flat.min()), int(flat.max())
    span = hi - lo + 1
    if span > max(2 * flat.size, 1 << 16) or lo < -(1 << 62) or hi > (1 << 62):
        return None
    x = flat.astype(np.intp, copy=False)
    return (x - lo if lo else x), lo, span


def unique(a: np.ndarray) -> np.ndarray:
    """Sorted unique values; falls back to first-appearance order for unorderable objects.

    Booleans and integers of a small range are counted (:func:`numpy.bincount`)
    instead of sorted: the same values, sorted, in ``a``'s dtype.
    """
    small = _integer_span(a)
    if small is not None:
        x, lo, span = small
        return (np.flatnonzero(np.bincount(x, minlength=span)) + lo).astype(a.dtype)
    try:
        return np.unique(a)
    except TypeError:
        return np.array(list(dict.fromkeys(a.tolist())), dtype=object)


def factorize(col: np.ndarray):
    """A group column's distinct non-missing values and every row's index among them, in one pass.

    Parameters
    ----------
    col : ndarray of shape (n,)

    Returns
    -------
    values : ndarray
        The distinct non-missing values, ordered as :func:`unique` orders them
        (sorted; first appearance for values that cannot be sorted).
    codes : ndarray of shape (n,) of int64
        ``values[codes[i]] == col[i]``; -1 for a missing entry (``None``, NaN, ``pd.NA``).

    Notes
    -----
    An object column is factorized with one hash table over its rows (Python
    equality, as ``col == value`` compares; pandas' when pandas is loaded, a
    dict otherwise), then only its distinct values are sorted; other dtypes
    with one :func:`numpy.unique`.
    """
    col = np.asarray(col)
    keys = None
    if col.dtype.kind == "O":
        pd = sys.modules.get("pandas")  # loaded: its hash table (C, the same == and hash) is 2x the dict's speed
        if pd is not None:
            try:
                codes, keys = pd.factorize(col.reshape(-1), use_na_sentinel=True)
            except TypeError:  # unhashable values: sorted below
                keys = None
            if keys is not None:
                keys = np.asarray(keys, dtype=object)
                values = unique(keys)  # no missing key: pandas gave those -1
                position = {}
                for i, v in enumerate(values.tolist()):
                    position.setdefault(v, i)
                lookup = np.array([position.get(k, -1) for k in keys.tolist()] + [-1], dtype=np.int64)
                codes = codes.astype(np.int64, copy=False)
                if np.array_equal(lookup[:-1], np.arange(keys.size)):  # first appearance is the sorted order
                    return values, codes
                return values, lookup[codes]  # a missing entry's -1 reads lookup's last entry, -1
        index: dict = {}
        rows = col.reshape(-1).tolist()
        try:  # each row's value -> the row of its first appearance (a C-level loop over the rows)
            first = np.fromiter(map(index.setdefault, rows, itertools.count()), dtype=np.int64, count=len(rows))
        except TypeError:  # unhashable values: sort them instead
            index = None
        if index is not None:
            keys = np.empty(len(index), dtype=object)
            keys[:] = list(index)
            renumber = np.empty(len(rows), dtype=np.int64)
            renumber[np.fromiter(index.values(), dtype=np.int64, count=len(index))] = np.arange(len(index))
            codes = renumber[first]
    if keys is None:
        keys, codes = unique_inverse(col)
    missing = missing_mask(keys)
    values = unique(keys[~missing])
    if keys.dtype.kind != "O" and np.array_equal(values, keys[~missing]):
        lookup = np.where(missing, -1, np.cumsum(~missing) - 1)
    else:
        position = {}
        for i, v in enumerate(values.tolist()):
            position.setdefault(v, i)
        lookup = np.array([-1 if m else position.get(k, -1) for k, m in zip(keys.tolist(), missing.tolist())],
                          dtype=np.int64)
    return values, lookup[codes]


def unique_inverse(col: np.ndarray):
    """``np.unique(col, return_inverse=True)`` with a flat inverse; first appearance for unorderable objects.

    Booleans and integers of a small range are counted, not sorted (as :func:`unique`).
    """
    small = _integer_span(col)
    if small is not None:
        x, lo, span = small
        present = np.bincount(x, minlength=span) > 0
        rank = np.cumsum(present) - 1
        return (np.flatnonzero(present) + lo).astype(col.dtype), rank[x].astype(np.int64)
    try:
        keys, codes = np.unique(col, return_inverse=True)
        return keys, codes.reshape(-1).astype(np.int64)
    except TypeError:
        index: dict = {}
        codes = np.array([index.setdefault(v, len(index)) for v in col.tolist()], dtype=np.int64)
        keys = np.empty(len(index), dtype=object)
        keys[:] = list(index)
        return keys, codes


def class_labels(y, classes=None, what: str = "y"):
    """An estimator's labels and class list: ``(y, classes)``, every refusal a one-line :class:`RateoptError`.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (a pandas ``boolean`` or ``Int64`` column without missing values is read as its values).
    classes : array-like, default=None
        The full class list (as a cross-validation fold that misses a class
        must keep it); None: the sorted distinct labels of ``y``.
    what : str, default="y"
        The argument's name, for the messages.

    Returns
    -------
    y : ndarray of shape (n_samples,)
    classes : ndarray
        Sorted, distinct, at least two.

    Raises
    ------
    RateoptError
        If ``y`` is empty, not 1-D, holds a missing label (``NaN``, ``None``,
        ``pd.NA``), holds continuous values, has fewer than two classes, or a
        label outside ``classes``.
    """
    if y is None:
        raise RateoptError(f"{what} is None: fitting requires y to be passed, but the target y is None")
    if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray):
        y = y.to_numpy(dtype=object) if getattr(y, "hasnans", False) else y.to_numpy()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise RateoptError(f"{what} must be 1-D (one label per row), got shape {y.shape}")
    if y.shape[0] == 0:
        raise RateoptError(f"{what} has no rows: fitting needs labelled rows")
    missing = missing_mask(y)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise RateoptError(f"{what} holds {int(missing.sum())} missing label(s) (NaN, None or pd.NA; first at "
                           f"row {i}): drop those rows or fill them before fitting")
    if y.dtype.kind == "O":  # e.g. a nullable boolean column: plain Python values of one type
        kinds = {type(v) for v in y.tolist()}
        if len(kinds) == 1:
            y = np.asarray(y.tolist())
    if y.dtype.kind == "f" and not np.all(y == np.round(y)):
        raise RateoptError(f"{what} holds continuous values (e.g. {y[y != np.round(y)][0]!r}): it must hold "
                           "class labels")
    if classes is None:
        classes = unique(y)
    else:
        classes = np.asarray(classes)
        if classes.ndim != 1 or unique(classes).shape[0] != classes.shape[0]:
            raise RateoptError(f"classes must be a 1-D list of distinct labels, got {classes.tolist()!r}")
        classes = unique(classes)
        unknown = [v for v in unique(y).tolist() if v not in set(classes.tolist())]
        if unknown:
            raise RateoptError(f"{what} holds labels {unknown!r} that are not in classes={classes.tolist()!r}")
    if classes.shape[0] < 2:
        raise RateoptError(f"{what} holds only {classes.shape[0]} class ({classes.tolist()!r}): a classifier "
                           "needs two classes; pass classes= to keep a class that this sample misses")
    return y, classes


def check_weights(weights, n_samples: int, what: str) -> np.ndarray:
    """Per-example weights as a float64 copy; ``what`` names the argument in errors.

    Weights may be as large as the float64 maximum: rates are ratios of weight
    sums and are computed on exactly rescaled weights.
    """
    a = as_1d(weights, n_samples, what)
    try:
        w = np.array(a, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise RateoptError(f"{what} must be numeric, got dtype {a.dtype}") from None
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        raise RateoptError(
            f"{what} must be finite: {what}[{bad[0]}] is {float(w[bad[0]])!r} ({bad.size} non-finite value(s))"
        )
    bad = np.flatnonzero(w < 0)
    if bad.size:
        raise RateoptError(
            f"{what} must be non-negative: {what}[{bad[0]}] is {float(w[bad[0]])!r} ({bad.size} negative value(s))"
        )
    return w


def as_1d(values, n_samples: int, what: str) -> np.ndarray:
    """``values`` as a 1-D array of ``n_samples`` entries; ``what`` names the argument in errors."""
    a = np.asarray(values)
    if a.ndim != 1:
        raise RateoptError(f"{what} must be 1-D, got an array of shape {a.shape}")
    if a.shape[0] != n_samples:
        raise RateoptError(
            f"{what} has {a.shape[0]} entries but X has {n_samples} rows (n_samples)"
        )
    return a


def parse_labels(y, n_samples: int, positive_label):
    """Labels mapped to 0/1 and the classes, as :class:`~rateopt.Dataset` reads ``y``.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or None
        The labels, in any two-valued form.
    n_samples : int
        The number of rows of ``X``.
    positive_label : scalar or None
        The label value mapped to 1 (``None``: chosen by the rules of
        :class:`~rateopt.Dataset`).

    Returns
    -------
    y : ndarray of shape (n_samples,) of int8, or None
        The labels mapped to 0/1 (read-only).
    classes : tuple or None
        ``(negative_label, positive_label)``; ``negative_label`` is ``None``
        when every example is positive.

    Raises
    ------
    RateoptError
        If the labels have the wrong shape, missing values or more than two
        values, or the positive label cannot be told.
    """
    if y is None:
        if positive_label is not None:
            raise RateoptError("positive_label was given but y is None")
        return None, None
    a = as_1d(y, n_samples, "y")
    if missing_mask(a).any():
        raise RateoptError("y contains missing values (NaN or None); drop or label them")
    if a.shape[0] == 0:
        vals = a[:0]
    else:
        vals = unique(a)
    if len(vals) > 2:
        raise RateoptError(
            f"y must be two-valued (binary labels), got {len(vals)} distinct values"
        )
    val_list = [v.item() if isinstance(v, np.generic) else v for v in vals.tolist()]
    if positive_label is not None:
        if len(val_list) == 2 and positive_label not in val_list:
            raise RateoptError(
                f"positive_label={positive_label!r} is not one of the label values "
                f"{val_list!r}"
            )
        pos = positive_label
    elif a.dtype.kind == "b":
        pos = True
    elif a.dtype.kind in "iuf" and (set(val_list) <= {0, 1} or set(val_list) <= {-1, 1}):
        pos = 1
    elif len(val_list) == 2:
        pos = val_list[1]
    else:
        raise RateoptError(
            f"cannot tell which label is positive from the single value {val_list!r}; "
            "pass positive_label"
        )
    y01 = np.asarray(a == pos, dtype=bool)
    others = [v for v in val_list if not v == pos]
    classes = (others[0] if others else None, pos)
    return readonly(y01.astype(np.int8)), classes


def parse_weights(weights, n_samples: int) -> np.ndarray:
    """Per-example weights, read-only (all 1 when ``weights`` is None).

    Parameters
    ----------
    weights : array-like of shape (n_samples,) or None
        Non-negative, finite weights.
    n_samples : int
        The number of rows of ``X``.

    Returns
    -------
    ndarray of shape (n_samples,) of float64
        A read-only copy; without weights, a read-only broadcast of 1.0 (no memory per row).

    Raises
    ------
    RateoptError
        If the weights have the wrong shape or are not finite and non-negative.
    """
    if weights is None:
        return np.broadcast_to(np.float64(1.0), (n_samples,))  # read-only, one float64 for every row
    return readonly(check_weights(weights, n_samples, "weights"))


#: The dtype kinds of group columns a :class:`~rateopt.Dataset` keeps as :class:`FactorizedColumn`: booleans,
#: integers and fixed-width strings, whose distinct values ``numpy.unique`` gives exactly (no missing value,
#: no two values equal under ``==`` with different bits), so ``values[codes]`` is the column, bit for bit.
COMPACT_GROUP_KINDS = "biuUS"


class FactorizedColumn:
    """A group column kept as its distinct values and each row's code, in the narrowest unsigned dtype.

    A column of strings costs its width per row (``<U6``: 24 bytes); its codes
    cost one byte per row up to 256 groups. ``values[codes]`` is the column.

    Parameters
    ----------
    values : ndarray
        The sorted distinct values (read-only).
    codes : ndarray of shape (n_samples,) of an unsigned integer dtype
        ``values[codes[i]]`` is row ``i``'s value (read-only).
    """

    __slots__ = ("values", "codes")

    def __init__(self, values, codes):
        self.values, self.codes = values, codes

    @classmethod
    def of(cls, col):
        """The factorization of a column of a kind in :data:`COMPACT_GROUP_KINDS` (no copy of ``col`` is kept)."""
        values, codes = factorize(col)
        narrow = np.min_scalar_type(max(len(values) - 1, 0))
        return cls(readonly(np.array(values, copy=True)), readonly(codes.astype(narrow)))

    @classmethod
    def of_text(cls, col):
        """The factorization of an object column of ``str`` values, or None when it holds anything else.

        Python strings are equal only when they are the same text, so
        ``values[codes]`` is the column up to object identity (a ``None``, NaN,
        number or other object makes it None: such a column is kept as it is).
        The column is hashed once (:func:`factorize`); only its distinct values
        are checked.
        """
        if col.dtype.kind != "O" or col.size == 0:
            return None
        values, codes = factorize(col)
        if codes.min() < 0 or not all(type(v) is str for v in values.tolist()):
            return None
        narrow = np.min_scalar_type(max(len(values) - 1, 0))
        return cls(readonly(np.array(values, dtype=object, copy=True)), readonly(codes.astype(narrow)))

    def column(self):
        """The column itself: ``values[codes]``, a new read-only array."""
        return readonly(self.values[self.codes])

    def int64_codes(self):
        """The codes as int64 (a new array, as :func:`factorize` returns them)."""
        return readonly(self.codes.astype(np.int64))


def parse_groups(groups, group_names, n_samples: int, *, compact: bool = False) -> dict:
    """Group columns by name, each a read-only array, as :class:`~rateopt.Dataset` reads ``groups``.

    Parameters
    ----------
    groups : DataFrame, Series, mapping, ndarray or None
        The group columns (see :class:`~rateopt.Dataset`).
    group_names : sequence of str or None
        Column names when ``groups`` is a plain array.
    n_samples : int
        The number of rows of ``X``.
    compact : bool, default=False
        Keep columns of booleans, integers and strings (fixed-width, or
        objects that are all ``str``) as :class:`FactorizedColumn`.

    Returns
    -------
    dict of str to ndarray of shape (n_samples,)
        Private read-only copies; missing objects become ``None``. With
        ``compact``, a column of a kind in :data:`COMPACT_GROUP_KINDS`, or of
        objects that are all ``str``, is a :class:`FactorizedColumn` instead (no
        copy of its values per row).

    Raises
    ------
    RateoptError
        If a column has the wrong length, or ``group_names`` does not fit ``groups``.
    """
    if groups is None:
        if group_names is not None:
            raise RateoptError("group_names was given but groups is None")
        return {}
    cols: dict = {}
    if hasattr(groups, "columns") and not isinstance(groups, np.ndarray):
        if group_names is not None:
            raise RateoptError("group_names applies to array groups; a DataFrame has columns")
        for c in list(groups.columns):
            cols[c] = np.asarray(groups[c])
    elif isinstance(groups, Mapping):
        if group_names is not None:
            raise RateoptError("group_names applies to array groups; a mapping has keys")
        for c, v in groups.items():
            cols[c] = np.asarray(v)
    elif (
        not isinstance(groups, np.ndarray)
        and hasattr(groups, "name")
        and getattr(groups, "ndim", None) == 1
    ):  # a pandas Series
        cols[groups.name if groups.name is not None else "group"] = np.asarray(groups)
    else:
        a = np.asarray(groups)
        if a.dtype.names:
            cols = {f: np.asarray(a[f]) for f in a.dtype.names}
        elif a.ndim == 1:
            names = list(group_names) if group_names is not None else ["group"]
            if len(names) != 1:
                raise RateoptError(
                    f"groups is 1-D (one column) but {len(names)} group_names were given"
                )
            cols = {names[0]: a}
        elif a.ndim == 2:
            names = (
                list(group_names)
                if group_names is not None
                else [f"group{k}" for k in range(a.shape[1])]
            )
            if len(names) != a.shape[1]:
                raise RateoptError(
                    f"groups has {a.shape[1]} columns but {len(names)} group_names were given"
                )
            cols = {nm: a[:, k] for k, nm in enumerate(names)}
        else:
            raise RateoptError(f"groups must be 1-D or 2-D, got shape {a.shape}")
    out = {}
    for c, v in cols.items():
        col = as_1d(v, n_samples, f"group column {c!r}")
        if compact and col.dtype.kind in COMPACT_GROUP_KINDS:
            out[c] = FactorizedColumn.of(col)
            continue
        text = FactorizedColumn.of_text(col) if compact else None
        out[c] = text if text is not None else readonly(_group_column(col))
    return out


def parse_baseline(baseline, kind: str, n_samples: int, classes):
    """The baseline model's decisions, as :class:`~rateopt.Dataset` reads ``baseline``.

    Parameters
    ----------
    baseline : array-like of shape (n_samples,) or None
        Decisions, scores or label values.
    kind : {"auto", "decisions", "scores", "labels"}
        How ``baseline`` is read (see :class:`~rateopt.Dataset`).
    n_samples : int
        The number of rows of ``X``.
    classes : tuple or None
        The dataset's ``(negative_label, positive_label)``.

    Returns
    -------
    ndarray of shape (n_samples,) of bool, or None
        The decisions (read-only).

    Raises
    ------
    RateoptError
        If ``kind`` is unknown, or the baseline has missing, non-finite or
        ambiguous values or values that do not fit ``kind``.
    """
    if kind not in ("auto", "decisions", "scores", "labels"):
        raise RateoptError(
            "baseline_kind must be 'auto', 'decisions', 'scores' or 'labels', "
            f"got {kind!r}"
        )
    if baseline is None:
        return None
    b = as_1d(baseline, n_samples, "baseline")
    if b.dtype.kind == "O" and missing_mask(b).any():
        raise RateoptError(
            "baseline contains missing values (None, NaN or pd.NA): every example needs "
            "the baseline model's decision"
        )
    return readonly(read_label_values(b, kind, classes, bool, _numeric_baseline, {
        "labels": lambda: ("baseline_kind='labels' but the baseline values are not all among the "
                           f"label values {classes!r}" if classes is not None
                           else "baseline_kind='labels' but y is None"),
        "dtype": lambda: f"baseline must hold boolean/0-1 decisions, real scores or the label values, got dtype {b.dtype}",
        "ambiguous": lambda: (f"baseline is ambiguous: read as label values {classes!r} (positive label "
                              f"{classes[1]!r}) it differs from its reading as 0/1 decisions or scores; "
                              "pass baseline_kind='labels', 'decisions' or 'scores'"),
    }))


def read_label_values(a, kind: str, classes, dtype, numeric, messages: dict) -> np.ndarray:
    """``a`` read as label values (``a == classes[1]`` in ``dtype``) or by ``numeric(a, kind)``: one rule for
    predictions and baselines. ``kind="labels"`` and non-numeric arrays take the label reading only; a numeric
    array whose two readings differ is ambiguous. ``messages["labels" | "dtype" | "ambiguous"]()`` is the
    refusal's message.
    """
    by_label = None  # the reading as a classifier's predict output in the label values
    if kind in ("auto", "labels") and classes is not None:
        known = np.array([c for c in classes if c is not None], dtype=object)
        if bool(np.all(np.isin(a, known))):
            by_label = np.asarray(a == classes[1], dtype=dtype)
    if kind == "labels":
        if by_label is None:
            raise RateoptError(messages["labels"]())
        return by_label
    if a.dtype.kind not in "biuf":
        if by_label is not None:
            return by_label
        raise RateoptError(messages["dtype"]())
    try:
        values = numeric(a, kind)
    except RateoptError:
        if by_label is None:
            raise
        values = None
    if by_label is not None and (values is None or not np.array_equal(values, by_label)):
        raise RateoptError(messages["ambiguous"]())
    return values


def _numeric_baseline(b, kind):
    if b.dtype.kind == "b":
        if kind == "scores":
            raise RateoptError("baseline_kind='scores' but baseline is boolean")
        return np.array(b, dtype=bool, copy=True)
    b = np.asarray(b, dtype=np.float64)
    if not np.all(np.isfinite(b)):
        raise RateoptError("baseline must be finite (found NaN or inf)")
    is01 = bool(np.all((b == 0) | (b == 1)))
    if kind == "decisions" and not is01:
        raise RateoptError("baseline_kind='decisions' but baseline has values other than 0/1")
    if kind == "decisions" or (kind == "auto" and is01):
        return b == 1
    return b >= 0
