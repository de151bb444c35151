"""Partitions of a dataset's columns, and the local datasets built from them on the workers.

Every column of a partitioned dataset (features, labels, weights, group
columns, baseline) is split into the same number of partitions, partition
``i`` of each holding the same rows. The inputs may be a ``dask.array``, a
``dask.dataframe`` (or series), or a sequence of partitions (scipy sparse
matrices, NumPy arrays, ``dask.delayed`` objects or ``distributed`` futures).
Partition ``i`` of the dataset becomes one :class:`Partition` on a worker: a
plain :class:`rateopt.Dataset` of its rows, validated there, with its
features in the kernel's layout. Empty partitions (a filtered dask DataFrame
has them) are skipped: where their size is known on the client they are never
sent, elsewhere :func:`make_partition` returns None for them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from rateopt import core
from rateopt._language._data import Dataset as LocalDataset
from rateopt._language._validation import missing_mask, unique
from rateopt.exceptions import RateoptError

__all__ = ["Partition", "make_partition", "nbytes", "split"]


def _is_dask_collection(value):
    return hasattr(value, "__dask_graph__") and hasattr(value, "to_delayed")


def split(value, what, *, n_parts=None, lengths=None, two_d=False):
    """The partitions of one column (or of the features) and their row counts where known.

    Parameters
    ----------
    value : dask array, dask DataFrame/Series, or sequence of partitions
    what : str
        The argument's name, for errors.
    n_parts : int, default=None
        The number of partitions of X (None: ``value`` is X).
    lengths : list of (int or None), default=None
        The row counts of X's partitions (None where unknown).
    two_d : bool
        Whether ``value`` is 2-D (features, or a table of group columns).

    Returns
    -------
    parts : list
        Delayed objects, futures or in-memory partitions, in row order.
    sizes : list of (int or None)
        Rows of each partition (None: known only on the workers).
    """
    if _is_dask_collection(value) and hasattr(value, "chunks"):  # dask.array
        if value.ndim != (2 if two_d else 1):
            raise RateoptError(f"{what} must be {'2' if two_d else '1'}-D, got a dask array of shape {value.shape}")
        if two_d and len(value.chunks[1]) > 1:
            value = value.rechunk({1: -1})  # one block of columns per row partition (a graph step)
        parts = list(value.to_delayed().ravel())
        sizes = [None if np.isnan(c) else int(c) for c in value.chunks[0]]
    elif _is_dask_collection(value):  # dask.dataframe DataFrame or Series
        parts = list(value.to_delayed())
        sizes = [None] * len(parts)
    elif isinstance(value, (list, tuple)):
        if not value:
            raise RateoptError(f"{what} is an empty sequence of partitions")
        parts = list(value)
        sizes = [_known_rows(p) for p in parts]
    else:
        raise TypeError(
            f"{what} must be a dask array, a dask DataFrame/Series or a list of partitions, "
            f"got {type(value).__name__}"
        )
    if n_parts is not None and len(parts) != n_parts:
        raise RateoptError(
            f"{what} has {len(parts)} partitions but X has {n_parts}: partition {what} like X "
            "(for dask arrays, e.g. y.rechunk((X.chunks[0],)))"
        )
    if lengths is not None:
        for i, (a, b) in enumerate(zip(sizes, lengths)):
            if a is not None and b is not None and a != b:
                raise RateoptError(f"partition {i} of {what} has {a} rows but partition {i} of X has {b}")
    return parts, sizes


def _known_rows(part):
    shape = getattr(part, "shape", None)
    if shape is None or _is_dask_collection(part) or not len(shape):
        return None
    return int(shape[0])


class Partition:
    """One partition of a dataset on a worker: its rows as a local dataset and its validated features.

    Attributes
    ----------
    index : int
        The partition's position (row order).
    data : rateopt.Dataset
        The partition's rows (labels mapped with the dataset's global classes).
    X : rateopt.core.FeatureMatrix
        Its features, validated once.
    """

    def __init__(self, index, data, X=None):
        self.index = index
        self.data = data
        self.X = core.FeatureMatrix(data.X) if X is None else X

    @property
    def n_samples(self):
        return self.data.n_samples

    def __sizeof__(self):  # what Dask weighs before moving it: the bytes of its arrays
        d = self.data
        return object.__sizeof__(self) + nbytes(d.X, self.X.data, d.y, d.weights, d.groups, d.baseline)

    def __reduce__(self):  # moved between workers: rebuilt (and validated) from the plain data
        return (Partition, (self.index, self.data))


def nbytes(*values):
    """Bytes held by arrays (dense, sparse, or the values of a mapping), each array counted once.

    Parameters
    ----------
    *values : ndarray, scipy sparse matrix, mapping of them, or None

    Returns
    -------
    int
        As ``dask.sizeof`` measures each array (object arrays with their elements).
    """
    from dask.sizeof import sizeof

    seen, total, stack = set(), 0, list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            stack.extend(v.values())
        elif sp.issparse(v):
            stack.extend(getattr(v, a) for a in ("data", "indices", "indptr", "row", "col") if hasattr(v, a))
        elif isinstance(v, np.ndarray):
            # the same memory seen through two array objects (a read-only view of X) counts once
            key = (v.__array_interface__["data"][0], v.nbytes, v.dtype.str) if v.size else id(v)
            if key not in seen:
                seen.add(key)
                total += sizeof(v)
    return total


def _features(X):
    """Features in the kernel's layout: float64/float32 C-contiguous dense, or CSR."""
    if sp.issparse(X):
        return X.tocsr() if X.format != "csr" else X
    if hasattr(X, "to_numpy"):  # a pandas partition of a dask DataFrame
        X = X.to_numpy(dtype=np.float64)
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    return np.ascontiguousarray(X)


def _column(v):
    return None if v is None else (v.to_numpy() if hasattr(v, "to_numpy") else np.asarray(v))


def label_summary(y):
    """``(dtype kind, sorted distinct values (at most 3), has missing values)`` of one label partition (None if
    it is empty)."""
    a = _column(y)
    if a.ndim != 1:
        raise RateoptError(f"y must be 1-D, got a partition of shape {a.shape}")
    if not len(a):  # an empty partition (skipped) says nothing
        return None
    missing = bool(missing_mask(a).any())
    vals = unique(a[~missing_mask(a)]) if missing else unique(a)
    return a.dtype.kind, [v.item() if isinstance(v, np.generic) else v for v in vals.tolist()[:3]], missing


def baseline_summary(b, classes):
    """``(dtype kind, all values are 0 or 1, all values are label values)`` of one baseline partition (None if
    it is empty)."""
    a = _column(b)
    if not len(a):  # an empty partition (skipped) says nothing
        return None
    known = [] if classes is None else [c for c in classes if c is not None]
    in_labels = bool(known) and bool(np.all(np.isin(a, np.array(known, dtype=object))))
    if a.dtype.kind not in "biuf":
        return a.dtype.kind, False, in_labels
    return a.dtype.kind, bool(np.all((a == 0) | (a == 1))), in_labels


def make_partition(index, name, X, y=None, weights=None, groups=None, baseline=None, *, positive_label=None,
                   classes=None, baseline_kind="auto", check_labels=False):
    """Build and validate partition ``index`` of dataset ``name`` (runs on a worker).

    Labels are mapped with the dataset's global ``positive_label``; a baseline
    stated as labels becomes decisions with the global ``classes``; with
    ``check_labels`` (``baseline_kind="auto"`` chose a reading from every
    partition, and every baseline value is a label value) the chosen reading is
    checked here against the reading as labels, as :class:`rateopt.Dataset` does.

    Returns
    -------
    Partition or None
        None for an empty partition (its columns are checked to be empty too).

    Raises
    ------
    RateoptError
        Naming the partition: a column's length differs from X's, or a value
        is invalid (as :class:`rateopt.Dataset` would say).
    """
    X = _features(X)
    if X.ndim != 2:
        raise RateoptError(f"partition {index} of X must be 2-D, got shape {X.shape}")
    if X.shape[0] == 0:  # skipped: its columns must be empty too
        columns = {"y": y, "weights": weights, "baseline": baseline}
        columns.update(groups.items() if isinstance(groups, dict) else [("groups", groups)])
        for what, v in columns.items():
            v = _column(v)
            if v is not None and len(v):
                raise RateoptError(f"partition {index} of dataset {name!r}: {what} has {len(v)} entries but X has "
                                   "0 rows")
        return None
    try:
        b = _column(baseline)
        if b is not None and baseline_kind == "labels":
            b = _labels_as_decisions(b, classes)
            baseline_kind = "decisions"
        elif b is not None and check_labels:
            _check_unambiguous(b, classes, baseline_kind)
        if isinstance(groups, dict):
            groups = {k: _column(v) for k, v in groups.items()}
        y = _column(y)
        if y is not None and y.shape[0] != X.shape[0]:
            raise RateoptError(f"y has {y.shape[0]} entries but X has {X.shape[0]} rows")
        data = LocalDataset(X, y=y, weights=_column(weights), groups=groups, baseline=b, name=name,
                            positive_label=None if y is None else positive_label, baseline_kind=baseline_kind)
        return Partition(index, data)
    except (RateoptError, ValueError) as exc:
        raise type(exc)(f"partition {index} of dataset {name!r}: {exc}") from None


def _labels_as_decisions(b, classes):
    known = np.array([c for c in classes if c is not None], dtype=object)
    if not bool(np.all(np.isin(b, known))):
        raise RateoptError(f"baseline_kind='labels' but the baseline values are not all among the label values "
                           f"{classes!r}")
    return np.asarray(b == classes[1], dtype=bool)


def _check_unambiguous(b, classes, kind):
    """Raise where the partition's baseline read as label values differs from its chosen reading."""
    by_label = np.asarray(b == classes[1], dtype=bool)
    a = np.asarray(b, dtype=np.float64) if b.dtype.kind in "biuf" else None
    dec = None if a is None else (a == 1 if kind == "decisions" else a >= 0)
    if dec is None or not np.array_equal(dec, by_label):
        raise RateoptError(
            f"baseline is ambiguous: read as label values {classes!r} (positive label {classes[1]!r}) it "
            "differs from its reading as 0/1 decisions or scores; pass baseline_kind='labels', 'decisions' or "
            "'scores'"
        )
