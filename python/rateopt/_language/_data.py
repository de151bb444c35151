"""Datasets and contexts: the data side of the rate-expression language.

A :class:`Dataset` holds the examples a rate is measured on: features ``X``
(kept as given, dense or scipy sparse), optional two-valued labels mapped to
0/1, per-example weights, group columns and a deployed *baseline* model's
decisions. A :class:`Context` is a subset of one dataset, described by a small
predicate tree (group value, label, baseline decision, boolean mask, ``&``,
``|``, ``~``) that is evaluated to a boolean mask only when a problem is
compiled. Everything here is vectorized NumPy: no Python loop runs over
examples.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from rateopt.exceptions import MissingBaselineError, MissingLabelsError, RateoptError

__all__ = ["Dataset", "Context"]

#: Datasets with this name are not prefixed in rate and subset names.
DEFAULT_DATASET_NAME = "train"


# --------------------------------------------------------------------------- helpers


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _missing_mask(a: np.ndarray) -> np.ndarray:
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


def _group_column(values) -> np.ndarray:
    """A group column as a private NumPy copy; missing objects (``pd.NA``, NaN, ...) become ``None``.

    pandas' ``pd.NA`` has no truth value, so comparing a column holding it
    with a group value would raise; ``None`` compares unequal to every value,
    so a missing entry belongs to no group.
    """
    col = np.array(values, copy=True)
    if col.dtype.kind == "O":
        missing = _missing_mask(col)
        if missing.any():
            col[missing] = None
    return col


def _unique(a: np.ndarray) -> np.ndarray:
    """Sorted unique values; falls back to first-appearance order for unorderable objects."""
    try:
        return np.unique(a)
    except TypeError:
        return np.array(list(dict.fromkeys(a.tolist())), dtype=object)


def _format_value(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, np.generic):
        v = v.item()
    return str(v)


def check_weights(weights, n_samples: int, what: str) -> np.ndarray:
    """Per-example weights as a float64 copy; ``what`` names the argument in errors.

    Weights may be as large as the float64 maximum: rates are ratios of weight
    sums and are computed on exactly rescaled weights.
    """
    a = _as_1d(weights, n_samples, what)
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


def _as_1d(values, n_samples: int, what: str) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1:
        raise RateoptError(f"{what} must be 1-D, got an array of shape {a.shape}")
    if a.shape[0] != n_samples:
        raise RateoptError(
            f"{what} has {a.shape[0]} entries but X has {n_samples} rows (n_samples)"
        )
    return a


# --------------------------------------------------------------------------- predicates
#
# Predicates are small immutable value objects with structural equality, so two
# contexts built the same way compare equal (and share a cached mask at compile
# time).  ``_Mask`` compares by the identity of its (private, read-only) array.


class _Predicate:
    __slots__ = ()
    #: True when the predicate is the whole dataset.
    is_all = False

    def evaluate(self, ds: Dataset) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _key(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__, self._key()))


class _All(_Predicate):
    __slots__ = ()
    is_all = True

    def evaluate(self, ds):
        return np.ones(ds.n_samples, dtype=bool)

    def describe(self):
        return "all"

    def _key(self):
        return ()


class _Mask(_Predicate):
    __slots__ = ("mask", "label")

    def __init__(self, mask: np.ndarray, label: str):
        self.mask = mask
        self.label = label

    def evaluate(self, ds):
        return self.mask

    def describe(self):
        return self.label

    def _key(self):
        return (id(self.mask),)


class _GroupIs(_Predicate):
    __slots__ = ("column", "values")

    def __init__(self, column, values: tuple):
        self.column = column
        self.values = values

    def evaluate(self, ds):
        col = ds.groups[self.column]
        if len(self.values) == 1:
            return np.asarray(col == self.values[0], dtype=bool)
        return np.isin(col, np.array(self.values, dtype=object if col.dtype.kind == "O" else None))

    def describe(self):
        if len(self.values) == 1:
            return f"{self.column}={_format_value(self.values[0])}"
        inner = ", ".join(_format_value(v) for v in self.values)
        return f"{self.column} in {{{inner}}}"

    def _key(self):
        return (self.column, self.values)


class _LabelIs(_Predicate):
    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = value

    def evaluate(self, ds):
        if ds.y is None:
            raise MissingLabelsError(f"dataset {ds.name!r} has no labels")
        return ds.y == self.value

    def describe(self):
        return f"y={self.value}"

    def _key(self):
        return (self.value,)


class _BaselineIs(_Predicate):
    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = value

    def evaluate(self, ds):
        if ds.baseline is None:
            raise MissingBaselineError(f"dataset {ds.name!r} has no baseline")
        return ds.baseline if self.value == 1 else ~ds.baseline

    def describe(self):
        return f"baseline={self.value}"

    def _key(self):
        return (self.value,)


class _And(_Predicate):
    __slots__ = ("parts",)

    def __init__(self, parts: tuple):
        self.parts = parts

    def evaluate(self, ds):
        out = np.array(self.parts[0].evaluate(ds), dtype=bool, copy=True)
        for p in self.parts[1:]:
            out &= p.evaluate(ds)
        return out

    def describe(self):
        return " & ".join(_wrap(p.describe(), "|") for p in self.parts)

    def _key(self):  # intersection is commutative: order only matters for the name
        return frozenset(self.parts)


class _Or(_Predicate):
    __slots__ = ("parts",)

    def __init__(self, parts: tuple):
        self.parts = parts

    def evaluate(self, ds):
        out = np.array(self.parts[0].evaluate(ds), dtype=bool, copy=True)
        for p in self.parts[1:]:
            out |= p.evaluate(ds)
        return out

    def describe(self):
        return " | ".join(_wrap(p.describe(), "&") for p in self.parts)

    def _key(self):
        return frozenset(self.parts)


class _Not(_Predicate):
    __slots__ = ("part",)

    def __init__(self, part: _Predicate):
        self.part = part

    def evaluate(self, ds):
        return ~np.asarray(self.part.evaluate(ds), dtype=bool)

    def describe(self):
        return f"not({self.part.describe()})"

    def _key(self):
        return (self.part,)


def _wrap(text: str, op: str) -> str:
    return f"({text})" if f" {op} " in text else text


def _and(a: _Predicate, b: _Predicate) -> _Predicate:
    if a.is_all:
        return b
    if b.is_all:
        return a
    if a == b:
        return a
    pa = a.parts if isinstance(a, _And) else (a,)
    pb = b.parts if isinstance(b, _And) else (b,)
    return _And(pa + tuple(p for p in pb if p not in pa))


def _or(a: _Predicate, b: _Predicate) -> _Predicate:
    if a.is_all or b.is_all:
        return _All()
    if a == b:
        return a
    pa = a.parts if isinstance(a, _Or) else (a,)
    pb = b.parts if isinstance(b, _Or) else (b,)
    return _Or(pa + tuple(p for p in pb if p not in pa))


# --------------------------------------------------------------------------- Dataset


class Dataset:
    """A set of examples on which rates are measured.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        Features. Kept as given (never copied); arrays and scipy sparse
        matrices are stored by reference, anything else with a 2-D ``shape``
        (e.g. a DataFrame) is kept too, and sequences are converted with
        :func:`numpy.asarray`.
    y : array-like of shape (n_samples,), default=None
        Labels in any two-valued form (``{0, 1}``, ``{-1, 1}``, booleans,
        strings, ...), mapped to 0/1 (see ``positive_label``). ``None`` makes
        an unlabeled dataset: coverage, churn and parity rates still work, rates
        that need labels raise :class:`~rateopt.exceptions.MissingLabelsError`.
    weights : array-like of shape (n_samples,), default=None
        Non-negative, finite per-example weights (default 1). Every rate is a
        weighted rate: ``p+(S) = sum_{j in S} w_j 1[h(x_j) >= 0] / sum_{j in S} w_j``.
    groups : DataFrame, mapping, ndarray or None, default=None
        Group columns (side information such as ``sex`` or ``race``): a
        DataFrame (duck-typed: anything with ``.columns`` and column access),
        a pandas Series (uses its ``.name``), a dict ``{name: 1-D array}``, a
        structured array, or a 1-D/2-D array whose column names are given by
        ``group_names``. Missing values (``None``, NaN, NaT and pandas'
        ``pd.NA``, also in nullable dtypes such as ``Int64``, ``boolean`` and
        ``string``) belong to no group.
    baseline : array-like of shape (n_samples,), default=None
        A deployed model's decisions or scores, for churn, wins/losses, no
        lost benefits and not-worse-off. See ``baseline_kind``.
    name : str, default="train"
        The dataset's name, used to refer to it in a problem with several
        datasets and in reports. Rates on a dataset named ``"train"`` are
        named without a dataset prefix (``tpr[sex=Female]``); rates on other
        datasets are prefixed (``ppr[unlabeled:all]``).
    positive_label : scalar, default=None
        The label value mapped to 1. By default: ``True`` for booleans, ``1``
        when the labels are a subset of ``{0, 1}`` or ``{-1, 1}``, otherwise the
        larger of the two sorted label values (scikit-learn's ``classes_[1]``).
    group_names : sequence of str, default=None
        Column names when ``groups`` is a plain array (default ``"group"`` for
        a 1-D array and ``"group0"``, ``"group1"``, ... for a 2-D one).
    baseline_kind : {"auto", "decisions", "scores", "labels"}, default="auto"
        How ``baseline`` is read. ``"decisions"``: booleans or 0/1 values used
        as is. ``"scores"``: real values, positive iff ``score >= 0``.
        ``"labels"``: the dataset's label values (a classifier's ``predict``
        output), positive iff equal to the positive label. ``"auto"``:
        booleans, and numbers that are all 0 or 1, are decisions; any other
        numbers are scores (so ``{-1, +1}`` decisions also work); non-numeric
        values are read as labels. When the values could also be read as labels
        (all are label values, e.g. labels ``{1, 2}``) and that reading differs,
        ``"auto"`` raises: pass ``baseline_kind``.

    Attributes
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        The features, as given.
    y : ndarray of shape (n_samples,) of int8, or None
        Labels mapped to 0/1 (read-only).
    weights : ndarray of shape (n_samples,) of float64
        Per-example weights (read-only copy).
    groups : mapping of str to ndarray of shape (n_samples,)
        Read-only mapping of group column names to read-only arrays.
    baseline : ndarray of shape (n_samples,) of bool, or None
        The baseline model's decisions (read-only).
    classes : tuple or None
        ``(negative_label, positive_label)`` in the user's label values
        (``None`` for an unlabeled dataset); ``negative_label`` is ``None``
        when every example is positive.
    name : str
        The dataset's name.
    n_samples : int
        Number of examples.

    Raises
    ------
    RateoptError
        If an argument has the wrong length or shape, labels are not two-valued
        or contain missing values, weights are negative or not finite, or the
        baseline is not numeric or not finite.

    See Also
    --------
    Context : Subsets of a dataset, the arguments of rate functions.

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ds = ro.Dataset(np.zeros((4, 2)), y=["no", "yes", "yes", "no"],
    ...              groups={"sex": ["F", "M", "F", "M"]})
    >>> ds.y
    array([0, 1, 1, 0], dtype=int8)
    >>> ds.classes
    ('no', 'yes')
    >>> ds.context().subset(group="sex", value="F").name
    'sex=F'
    """

    def __init__(
        self,
        X,
        y=None,
        weights=None,
        groups=None,
        baseline=None,
        *,
        name: str = DEFAULT_DATASET_NAME,
        positive_label=None,
        group_names=None,
        baseline_kind: str = "auto",
    ):
        if not isinstance(name, str) or not name:
            raise RateoptError(f"name must be a non-empty string, got {name!r}")
        self.name = name
        if not (isinstance(X, np.ndarray) or sp.issparse(X)):
            shape = getattr(X, "shape", None)
            if shape is None or len(shape) != 2:
                X = np.asarray(X)
        if len(X.shape) != 2:
            raise RateoptError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
        self.X = X
        self.n_samples = int(X.shape[0])
        self.y, self.classes = self._parse_labels(y, positive_label)
        self.weights = self._parse_weights(weights)
        self.groups = MappingProxyType(self._parse_groups(groups, group_names))
        self.baseline = self._parse_baseline(baseline, baseline_kind)

    # -- parsing ---------------------------------------------------------------

    def _parse_labels(self, y, positive_label):
        if y is None:
            if positive_label is not None:
                raise RateoptError("positive_label was given but y is None")
            return None, None
        a = _as_1d(y, self.n_samples, "y")
        if _missing_mask(a).any():
            raise RateoptError("y contains missing values (NaN or None); drop or label them")
        if a.shape[0] == 0:
            vals = a[:0]
        else:
            vals = _unique(a)
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
        return _readonly(y01.astype(np.int8)), classes

    def _parse_weights(self, weights):
        if weights is None:
            return _readonly(np.ones(self.n_samples, dtype=np.float64))
        return _readonly(check_weights(weights, self.n_samples, "weights"))

    def _parse_groups(self, groups, group_names) -> dict:
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
            col = _as_1d(v, self.n_samples, f"group column {c!r}")
            out[c] = _readonly(_group_column(col))
        return out

    def _parse_baseline(self, baseline, kind):
        if kind not in ("auto", "decisions", "scores", "labels"):
            raise RateoptError(
                "baseline_kind must be 'auto', 'decisions', 'scores' or 'labels', "
                f"got {kind!r}"
            )
        if baseline is None:
            return None
        b = _as_1d(baseline, self.n_samples, "baseline")
        if b.dtype.kind == "O" and _missing_mask(b).any():
            raise RateoptError(
                "baseline contains missing values (None, NaN or pd.NA): every example needs "
                "the baseline model's decision"
            )
        by_label = None  # the reading as a classifier's predict output in the label values
        if kind in ("auto", "labels") and self.classes is not None:
            known = np.array([c for c in self.classes if c is not None], dtype=object)
            if bool(np.all(np.isin(b, known))):
                by_label = np.asarray(b == self.classes[1], dtype=bool)
        if kind == "labels":
            if by_label is None:
                raise RateoptError(
                    "baseline_kind='labels' but the baseline values are not all among the "
                    f"label values {self.classes!r}"
                    if self.classes is not None
                    else "baseline_kind='labels' but y is None"
                )
            return _readonly(by_label)
        if b.dtype.kind not in "biuf":
            if by_label is not None:
                return _readonly(by_label)
            raise RateoptError(
                "baseline must hold boolean/0-1 decisions, real scores or the label values, "
                f"got dtype {b.dtype}"
            )
        try:
            dec = self._numeric_baseline(b, kind)
        except RateoptError:
            if by_label is None:
                raise
            dec = None
        if by_label is not None and (dec is None or not np.array_equal(dec, by_label)):
            raise RateoptError(
                f"baseline is ambiguous: read as label values {self.classes!r} (positive label "
                f"{self.classes[1]!r}) it differs from its reading as 0/1 decisions or scores; "
                "pass baseline_kind='labels', 'decisions' or 'scores'"
            )
        return _readonly(dec)

    @staticmethod
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

    def __getstate__(self):
        state = dict(self.__dict__)
        state["groups"] = dict(self.groups)
        return state

    def __setstate__(self, state):
        state = dict(state)
        state["groups"] = MappingProxyType(
            {k: _readonly(np.array(v, copy=True)) for k, v in state["groups"].items()}
        )
        self.__dict__.update(state)

    # -- public API ------------------------------------------------------------

    @property
    def has_labels(self) -> bool:
        """Whether the dataset has labels."""
        return self.y is not None

    @property
    def has_baseline(self) -> bool:
        """Whether the dataset has baseline decisions."""
        return self.baseline is not None

    @property
    def total_weight(self) -> float:
        """Sum of the example weights (``inf`` when it exceeds the float64 range)."""
        top = float(self.weights.max()) if self.n_samples else 0.0
        if not top > 0.0:
            return 0.0
        e = int(np.frexp(top)[1])  # sum exactly rescaled weights: no overflow warning
        mant = float(np.sum(np.ldexp(self.weights, -e)))
        try:
            return math.ldexp(mant, e)
        except OverflowError:
            return math.inf

    @property
    def group_names(self) -> tuple:
        """Names of the group columns."""
        return tuple(self.groups)

    def group_values(self, column) -> np.ndarray:
        """Distinct non-missing values of a group column.

        Parameters
        ----------
        column : str
            Name of a group column.

        Returns
        -------
        ndarray
            The sorted distinct values (first-appearance order when the
            values cannot be sorted); ``None`` and NaN are left out.

        Raises
        ------
        RateoptError
            If there is no such column.
        """
        col = self._group_column(column)
        return _unique(col[~_missing_mask(col)])

    def _group_column(self, column) -> np.ndarray:
        try:
            return self.groups[column]
        except (KeyError, TypeError):
            raise RateoptError(
                f"dataset {self.name!r} has no group column {column!r}; "
                f"columns: {list(self.groups)!r}"
            ) from None

    def context(self) -> Context:
        """The context holding all the examples of this dataset.

        Returns
        -------
        Context
            The whole dataset, named ``"all"``.

        Examples
        --------
        >>> import numpy as np
        >>> import rateopt as ro
        >>> ro.Dataset(np.zeros((3, 1)), name="unlabeled").context()
        Context(dataset='unlabeled', subset='all')
        """
        return Context(self, _All())

    def __repr__(self) -> str:
        parts = [f"name={self.name!r}", f"n_samples={self.n_samples}"]
        parts.append("labeled" if self.has_labels else "unlabeled")
        if self.groups:
            parts.append(f"groups={list(self.groups)!r}")
        if self.has_baseline:
            parts.append("baseline")
        return f"Dataset({', '.join(parts)})"


# --------------------------------------------------------------------------- Context


class Context:
    """A subset of one dataset: the argument of every rate function.

    Contexts are built from :meth:`Dataset.context` and refined with
    :meth:`subset`, :meth:`positive`, :meth:`negative`,
    :meth:`baseline_positive`, :meth:`baseline_negative`, and combined with
    ``&`` (intersection), ``|`` (union) and ``~`` (complement within the
    dataset). Membership is evaluated lazily, when a problem is compiled.

    Parameters
    ----------
    dataset : Dataset
        The dataset the subset belongs to.
    predicate : object, default=None
        Internal description of the subset (``None``: the whole dataset).
        Build contexts with the methods above rather than this constructor.
    name : str, default=None
        Name used in reports; default composed from the conditions, e.g.
        ``"sex=Female & y=1"``.

    Attributes
    ----------
    dataset : Dataset
        The dataset the subset belongs to.

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ds = ro.Dataset(np.zeros((4, 1)), y=[0, 1, 1, 0],
    ...              groups={"sex": ["F", "M", "F", "M"]})
    >>> women = ds.context().subset(group="sex", value="F")
    >>> (women & ds.context().positive()).name
    'sex=F & y=1'
    >>> (women & ds.context().positive()).mask()
    array([False, False,  True, False])
    """

    __slots__ = ("dataset", "_predicate", "_name")

    def __init__(self, dataset: Dataset, predicate=None, name: str | None = None):
        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset must be a rateopt Dataset, got {type(dataset).__name__}")
        if name is not None and (not isinstance(name, str) or not name):
            raise RateoptError(f"a subset name must be a non-empty string, got {name!r}")
        self.dataset = dataset
        self._predicate = _All() if predicate is None else predicate
        self._name = name

    # -- names -------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The subset's name in reports (``"all"`` for the whole dataset)."""
        return self._name if self._name is not None else self._predicate.describe()

    @property
    def label(self) -> str:
        """The subset's name as used inside rate names.

        The subset's name, prefixed by ``"<dataset>:"`` unless the dataset is
        named ``"train"``.
        """
        if self.dataset.name == DEFAULT_DATASET_NAME:
            return self.name
        return f"{self.dataset.name}:{self.name}"

    @property
    def is_all(self) -> bool:
        """Whether the context is the whole dataset (by construction)."""
        return self._predicate.is_all

    def named(self, name: str) -> Context:
        """Return the same subset under another name.

        Parameters
        ----------
        name : str
            The new name used in reports.

        Returns
        -------
        Context
            A context with the same members.
        """
        return Context(self.dataset, self._predicate, name)

    # -- refinement ----------------------------------------------------------------

    def _refine(self, pred: _Predicate, name: str | None) -> Context:
        if name is None and self._name is not None and not self.is_all:
            name = f"{_wrap(self._name, '|')} & {pred.describe()}"
        return Context(self.dataset, _and(self._predicate, pred), name)

    def subset(self, mask=None, *, group=None, value=None, name: str | None = None) -> Context:
        """Restrict the context to a mask or to a group value.

        Parameters
        ----------
        mask : array-like of bool of shape (n_samples,), default=None
            Boolean mask over the *whole dataset*; the result is the
            intersection of this context with the mask. The mask is copied.
        group : str, default=None
            A group column of the dataset (use with ``value``, not with ``mask``).
        value : scalar or sequence of scalars, default=None
            The group value(s) to keep (a sequence means "any of").
        name : str, default=None
            Name of the resulting subset in reports. Default: ``"mask"`` for a
            mask and ``"<group>=<value>"`` for a group, joined to this
            context's name with ``" & "``.

        Returns
        -------
        Context
            The restricted context.

        Raises
        ------
        RateoptError
            If both or neither of ``mask`` and ``group`` are given, the mask has
            the wrong length, or the group column does not exist.
        TypeError
            If ``mask`` is not boolean.
        """
        if (mask is None) == (group is None):
            raise RateoptError("pass exactly one of mask or group=..., value=...")
        if mask is not None:
            if value is not None:
                raise RateoptError("value= is only used together with group=")
            m = _as_1d(mask, self.dataset.n_samples, "mask")
            if m.dtype.kind != "b":
                raise TypeError(
                    f"mask must be boolean (got dtype {m.dtype}); "
                    "use e.g. ds.groups['age'] > 40"
                )
            pred = _Mask(_readonly(np.array(m, dtype=bool, copy=True)), "mask")
            return self._refine(pred, name)
        self.dataset._group_column(group)
        if value is None:
            raise RateoptError(f"group={group!r} needs value=... (the group value to keep)")
        if isinstance(value, (list, tuple, set, frozenset, np.ndarray)):
            vals = tuple(v.item() if isinstance(v, np.generic) else v for v in list(value))
            if not vals:
                raise RateoptError("value= is an empty sequence")
        else:
            vals = (value.item() if isinstance(value, np.generic) else value,)
        return self._refine(_GroupIs(group, vals), name)

    def positive(self) -> Context:
        """Restrict to the examples labeled positive (``y = 1``).

        Returns
        -------
        Context
            The subset ``self & y=1``.

        Raises
        ------
        MissingLabelsError
            If the dataset has no labels.
        """
        self._need_labels("positive()")
        return self._refine(_LabelIs(1), None)

    def negative(self) -> Context:
        """Restrict to the examples labeled negative (``y = 0``).

        Returns
        -------
        Context
            The subset ``self & y=0``.

        Raises
        ------
        MissingLabelsError
            If the dataset has no labels.
        """
        self._need_labels("negative()")
        return self._refine(_LabelIs(0), None)

    def baseline_positive(self) -> Context:
        """Restrict to the examples the baseline model predicts positive.

        Returns
        -------
        Context
            The subset ``self & baseline=1``.

        Raises
        ------
        MissingBaselineError
            If the dataset has no baseline.
        """
        self._need_baseline("baseline_positive()")
        return self._refine(_BaselineIs(1), None)

    def baseline_negative(self) -> Context:
        """Restrict to the examples the baseline model predicts negative.

        Returns
        -------
        Context
            The subset ``self & baseline=0``.

        Raises
        ------
        MissingBaselineError
            If the dataset has no baseline.
        """
        self._need_baseline("baseline_negative()")
        return self._refine(_BaselineIs(0), None)

    def _need_labels(self, what):
        if not self.dataset.has_labels:
            raise MissingLabelsError(
                f"{what} of subset {self.label!r} needs labels, but dataset "
                f"{self.dataset.name!r} is unlabeled"
            )

    def _need_baseline(self, what):
        if not self.dataset.has_baseline:
            raise MissingBaselineError(
                f"{what} of subset {self.label!r} needs baseline decisions, but dataset "
                f"{self.dataset.name!r} has no baseline"
            )

    # -- combination -------------------------------------------------------------------

    def _check_same(self, other, op):
        if not isinstance(other, Context):
            return False
        if other.dataset is not self.dataset:
            raise RateoptError(
                f"cannot combine subsets of different datasets with {op!r}: "
                f"{self.label!r} and {other.label!r}"
            )
        return True

    def _combined_name(self, other, op):
        if self._name is None and other._name is None:
            return None
        return f"{_wrap(self.name, '|' if op == '&' else '&')} {op} " + _wrap(
            other.name, "|" if op == "&" else "&"
        )

    def __and__(self, other):
        if not self._check_same(other, "&"):
            return NotImplemented
        pred = _and(self._predicate, other._predicate)
        return Context(self.dataset, pred, self._combined_name(other, "&"))

    def __or__(self, other):
        if not self._check_same(other, "|"):
            return NotImplemented
        pred = _or(self._predicate, other._predicate)
        return Context(self.dataset, pred, self._combined_name(other, "|"))

    def __invert__(self):
        name = None if self._name is None else f"not({self._name})"
        pred = self._predicate.part if isinstance(self._predicate, _Not) else _Not(self._predicate)
        return Context(self.dataset, pred, name)

    # -- evaluation ----------------------------------------------------------------------

    def mask(self) -> np.ndarray:
        """Evaluate membership.

        Returns
        -------
        ndarray of shape (n_samples,) of bool
            True for the examples in the subset.
        """
        return np.array(self._predicate.evaluate(self.dataset), dtype=bool, copy=True)

    def __eq__(self, other):
        if not isinstance(other, Context):
            return NotImplemented
        return self.dataset is other.dataset and self._predicate == other._predicate

    def __hash__(self):
        return hash((id(self.dataset), self._predicate))

    def __repr__(self) -> str:
        return f"Context(dataset={self.dataset.name!r}, subset={self.name!r})"
