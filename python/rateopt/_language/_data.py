"""Datasets and contexts: the data side of the rate-expression language.

A :class:`Dataset` holds the examples a rate is measured on: features ``X``
(kept as given, dense or scipy sparse), optional two-valued labels mapped to
0/1, per-example weights, group columns and a deployed *baseline* model's
decisions. A :class:`Context` is a subset of one dataset, described by a small
predicate tree (group value, label, baseline decision, boolean mask, ``&``,
``|``, ``~``) that is evaluated to a boolean mask only when a problem is
compiled. Everything here is vectorized NumPy: no Python loop runs over
examples.

The two classes refer to each other, so they share this module; the checks of
a dataset's arguments are in :mod:`rateopt._language._validation`, the
predicates in :mod:`rateopt._language._predicates`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from rateopt._language._predicates import (
    All,
    BaselineIs,
    GroupIs,
    LabelIs,
    Mask,
    Not,
    Predicate,
    intersection,
    union,
    wrap,
)
from rateopt._language._validation import (
    FactorizedColumn,
    factorize,
    as_1d,
    nullable_columns,
    parse_baseline,
    parse_groups,
    parse_labels,
    parse_weights,
    readonly,
)
from rateopt.exceptions import MissingBaselineError, MissingLabelsError, RateoptError

__all__ = ["Dataset", "Context"]

#: Datasets with this name are not prefixed in rate and subset names.
DEFAULT_DATASET_NAME = "train"


# --------------------------------------------------------------------------- Dataset


class Dataset:
    """A set of examples on which rates are measured.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        Features. Kept as given (never copied); arrays and scipy sparse
        matrices are stored by reference, anything else with a 2-D ``shape``
        (e.g. a DataFrame) is kept too, and sequences are converted with
        :func:`numpy.asarray`. A DataFrame with pandas' nullable numeric
        columns (``Float64``, ``Int64``, ``boolean``) is converted to a float64
        array; such a column holding ``pd.NA`` is refused, naming it.
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
        Per-example weights (read-only copy; all 1 without ``weights``: a read-only broadcast of 1.0, which
        holds no memory per row).
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
        If an argument has the wrong length or shape, a nullable column of
        ``X`` holds ``pd.NA``, labels are not two-valued or contain missing
        values, weights are negative or not finite, or the baseline is not
        numeric or not finite.

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

    #: The objectives of this kind of dataset by name (``name -> builder(context)``) and the refusal of
    #: another name (a format of ``spec`` and ``names``): :mod:`rateopt.goals` fills the table.
    _named_objectives: dict = {}
    _objective_refusal = "objective must be one of {names}, a callable or None, got {spec!r}"

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
                try:
                    X = np.asarray(X)
                except (TypeError, ValueError) as exc:  # ragged rows
                    raise RateoptError(f"X could not be read as a 2-D array: {' '.join(str(exc).split())}") from None
            elif nullable_columns(X):  # pandas' Float64 / Int64 / boolean columns, no pd.NA: numbers
                X = np.ascontiguousarray(X.to_numpy(dtype=np.float64))
        if len(X.shape) != 2:
            raise RateoptError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
        self.X = X
        self.n_samples = int(X.shape[0])
        self.y, self.classes = parse_labels(y, self.n_samples, positive_label)
        self.weights = parse_weights(weights, self.n_samples)
        self.groups = _GroupColumns(parse_groups(groups, group_names, self.n_samples, compact=True))
        self.baseline = parse_baseline(baseline, baseline_kind, self.n_samples, self.classes)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["groups"] = dict(self.groups.stored())  # factorized columns stay factorized
        state.pop("_factorized", None)  # caches, rebuilt on demand
        state.pop("_positions", None)
        return state

    def __setstate__(self, state):
        state = dict(state)
        state["groups"] = _GroupColumns(
            {k: (FactorizedColumn(readonly(np.array(v.values, copy=True)), readonly(np.array(v.codes, copy=True)))
                 if isinstance(v, FactorizedColumn) else readonly(np.array(v, copy=True)))
             for k, v in state["groups"].items()}
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
        compact = self._factorized_column(column)
        return compact.values if compact is not None else self.group_factorization(column)[0]

    def group_factorization(self, column):
        """A group column's distinct values and every row's index among them, computed once per column.

        A column of booleans, integers or strings is factorized when the dataset
        is built (it is kept as its values and one narrow code per row); its
        int64 codes are then a new array on each call.

        Parameters
        ----------
        column : str
            Name of a group column.

        Returns
        -------
        values : ndarray
            As :meth:`group_values`.
        codes : ndarray of shape (n_samples,) of int64
            Every row's index into ``values`` (-1 for a missing value); read-only.

        Raises
        ------
        RateoptError
            If there is no such column.
        """
        compact = self._factorized_column(column)
        if compact is not None:
            return compact.values, compact.int64_codes()
        cache = self.__dict__.setdefault("_factorized", {})
        if column not in cache:
            values, codes = factorize(self._group_column(column))
            cache[column] = (readonly(values), readonly(codes))
        return cache[column]

    def group_positions(self, column):
        """``{value: index into group_values(column)}``, computed once per column.

        Parameters
        ----------
        column : str
            Name of a group column.

        Returns
        -------
        dict
            Each distinct value's index (the first of values equal under ``==``).
        """
        cache = self.__dict__.setdefault("_positions", {})
        if column not in cache:
            position: dict = {}
            for i, v in enumerate(self.group_values(column).tolist()):
                position.setdefault(v, i)
            cache[column] = position
        return cache[column]

    def _factorized_column(self, column):
        """The stored factorization of an existing group column (None when it is kept as an array, or the
        dataset keeps its groups another way: a subclass's plain mapping)."""
        self._group_column(column, check_only=True)
        factorized = getattr(self.groups, "factorized", None)
        return None if factorized is None else factorized(column)

    def _group_column(self, column, *, check_only=False):
        """The group column ``column`` (``check_only``: its name, once it is known to exist)."""
        try:
            if check_only:
                if column not in self.groups:
                    raise KeyError(column)
                return column
            return self.groups[column]
        except (KeyError, TypeError):
            if not self.groups:
                raise RateoptError(
                    f"dataset {self.name!r} has no group column {column!r}: no groups were given; pass "
                    f"groups={{{column!r}: values}} (a dict of arrays or a DataFrame), or name a column of X in "
                    f"group_columns=[{column!r}] on the estimator"
                ) from None
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
        return Context(self, All())

    def _as_class_dataset(self, goal):
        """This dataset as a K-class ``goal`` (its class name) binds to it: a two-class dataset refuses."""
        raise RateoptError(f"{goal} is a K-class goal: bind it to a rateopt.ClassDataset, not a "
                           f"{type(self).__name__}")

    def __repr__(self) -> str:
        parts = [f"name={self.name!r}", f"n_samples={self.n_samples}"]
        parts.append("labeled" if self.has_labels else "unlabeled")
        if self.groups:
            parts.append(f"groups={list(self.groups)!r}")
        if self.has_baseline:
            parts.append("baseline")
        return f"Dataset({', '.join(parts)})"


class _GroupColumns(Mapping):
    """A dataset's group columns: a read-only mapping of names to read-only arrays.

    A column of booleans, integers or strings is stored as a
    :class:`~rateopt._language._validation.FactorizedColumn` (its distinct
    values and a narrow code per row, no copy of the values per row); reading
    it (``groups[name]``) gives the column, a new read-only array.
    """

    __slots__ = ("_columns",)

    def __init__(self, columns):
        self._columns = dict(columns)

    def __getitem__(self, name):
        col = self._columns[name]
        return col.column() if isinstance(col, FactorizedColumn) else col

    def __iter__(self):
        return iter(self._columns)

    def __len__(self):
        return len(self._columns)

    def __contains__(self, name):  # Mapping's would read the column (values[codes], a pass over the rows)
        try:
            return name in self._columns
        except TypeError:  # an unhashable name
            return False

    def __repr__(self):
        return f"GroupColumns({list(self._columns)!r})"

    def factorized(self, name):
        """The stored factorization of column ``name`` (None when it is kept as an array)."""
        col = self._columns.get(name)
        return col if isinstance(col, FactorizedColumn) else None

    def stored(self):
        """``{name: array or FactorizedColumn}`` as stored."""
        return dict(self._columns)


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
        self._predicate = All() if predicate is None else predicate
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

    def _refine(self, pred: Predicate, name: str | None) -> Context:
        if name is None and self._name is not None and not self.is_all:
            name = f"{wrap(self._name, '|')} & {pred.describe()}"
        return Context(self.dataset, intersection(self._predicate, pred), name)

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
            m = as_1d(mask, self.dataset.n_samples, "mask")
            if m.dtype.kind != "b":
                raise TypeError(
                    f"mask must be boolean (got dtype {m.dtype}); "
                    "use e.g. ds.groups['age'] > 40"
                )
            pred = Mask(readonly(np.array(m, dtype=bool, copy=True)), "mask")
            return self._refine(pred, name)
        self.dataset._group_column(group, check_only=True)
        if value is None:
            raise RateoptError(f"group={group!r} needs value=... (the group value to keep)")
        if isinstance(value, (list, tuple, set, frozenset, np.ndarray)):
            vals = tuple(v.item() if isinstance(v, np.generic) else v for v in list(value))
            if not vals:
                raise RateoptError("value= is an empty sequence")
        else:
            vals = (value.item() if isinstance(value, np.generic) else value,)
        return self._refine(GroupIs(group, vals), name)

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
        return self._refine(LabelIs(1), None)

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
        return self._refine(LabelIs(0), None)

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
        return self._refine(BaselineIs(1), None)

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
        return self._refine(BaselineIs(0), None)

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
        return f"{wrap(self.name, '|' if op == '&' else '&')} {op} " + wrap(
            other.name, "|" if op == "&" else "&"
        )

    def __and__(self, other):
        if not self._check_same(other, "&"):
            return NotImplemented
        pred = intersection(self._predicate, other._predicate)
        return Context(self.dataset, pred, self._combined_name(other, "&"))

    def __or__(self, other):
        if not self._check_same(other, "|"):
            return NotImplemented
        pred = union(self._predicate, other._predicate)
        return Context(self.dataset, pred, self._combined_name(other, "|"))

    def __invert__(self):
        name = None if self._name is None else f"not({self._name})"
        pred = self._predicate.part if isinstance(self._predicate, Not) else Not(self._predicate)
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
