"""From a data file to what training and evaluation need: features, labels, groups, weights, baseline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._training._arity import TWO_CLASSES, Arity, arity_of_labels
from ._encoding import ColumnRoles, Encoding, as_numbers, split_label, text_values
from ._io import Frame, InputError, read_all

__all__ = ["Table", "load_table", "labels_from_classes", "class_labels", "side_columns"]


@dataclass
class Table:
    """A data file, encoded: CSR features and the side columns (``y`` is 0/1, K-class labels or None).

    Its ``arity`` (:mod:`rateopt._training._arity`) is found once, from its classes. A K-class table
    holds the labels themselves in ``y`` (numbers when every label is a number, else text) and the sorted
    classes in ``classes``.
    """

    X: sp.csr_matrix
    y: np.ndarray | None
    classes: list | None
    groups: dict
    weight: np.ndarray | None
    baseline: np.ndarray | None
    encoding: Encoding
    path: str
    dropped: tuple = ()  # the columns left out of the features (beyond the roles' --drop)
    arity: Arity = TWO_CLASSES
    row_key: np.ndarray | None = None  # each row's id (--id-column): the key of its drawn decision

    def dataset(self, name="train"):
        """The table's dataset of its arity (``y`` is read as it is: 0/1 for two classes)."""
        return self.arity.labelled_dataset(self.X, self.y, weights=self.weight, groups=self.groups or None,
                                           baseline=self.baseline, name=name)


def _label_values(text):
    """K-class labels from their text: ints when every label is an integer, floats when every one is a number,
    else the text itself."""
    try:
        nums = text.astype(np.float64)
    except (TypeError, ValueError):
        return text
    if not np.all(np.isfinite(nums)):
        return text
    if np.all(nums == np.round(nums)) and np.all(np.abs(nums) < 2**53):
        return nums.astype(np.int64)
    return nums


def class_labels(values, path, column):
    """K-class labels of a label column and its classes (sorted: numerically when every label is a number)."""
    text = text_values(values)
    if (text == "").any():
        i = int(np.flatnonzero(text == "")[0])
        raise InputError(f"{path}: label column {column!r} has a missing value at data row {i + 1}")
    y = _label_values(text)
    return y, sorted(set(y.tolist()))


def labels_from_classes(values, classes, path, column):
    """The labels of ``values`` given the training classes (each must be one of them), as their arity reads
    them: 0/1 for two classes (``classes[1]`` positive), the class labels themselves for K."""
    text = text_values(values)
    known = {str(text_values(np.array([c], dtype=object))[0]): c for c in classes}
    unknown = sorted(set(text.tolist()) - set(known))
    if unknown:
        raise InputError(f"{path}: label column {column!r} has value(s) {unknown[:5]!r} that were not classes in "
                         f"training ({list(classes)!r})")
    labels = np.array([known[t] for t in text.tolist()], dtype=object if any(isinstance(c, str) for c in classes)
                      else np.asarray(classes).dtype)
    return arity_of_labels(classes).encoded_labels(labels, classes)


def _read_labels(values, classes, positive, allow_multiclass, path, column):
    """``(y, classes)`` of a label column: as trained (``classes``), else found in it (K classes when allowed,
    without ``positive``, and the column holds more than two values)."""
    if classes is not None:
        return labels_from_classes(values, classes, path, column), classes
    if allow_multiclass and positive is None and arity_of_labels(_distinct(values)).multiclass:
        return class_labels(values, path, column)
    return split_label(values, path, column, positive)


def _distinct(values):
    return sorted(set(text_values(values).tolist()))


def _numeric(values, path, column, role):
    nums, bad = as_numbers(values)
    if nums is None or bad is not None:
        raise InputError(f"{path}: {role} column {column!r}, data row {bad + 1}: {values[bad]!r} is not a finite "
                         "number")
    return nums


def side_columns(frame, roles):
    """``(groups, weight, baseline)`` of a :class:`Frame`."""
    groups = {g: text_values(frame.column(g, "--groups")) for g in roles.groups}
    for g, v in groups.items():
        v[v == ""] = None  # missing: in no group
    weight = None if roles.weight is None else _numeric(frame.column(roles.weight, "--weight"), frame.path,
                                                        roles.weight, "weight")
    if weight is not None and weight.min(initial=0.0) < 0:
        raise InputError(f"{frame.path}: weight column {roles.weight!r} has negative values")
    baseline = None if roles.baseline is None else _numeric(frame.column(roles.baseline, "--baseline"),
                                                            frame.path, roles.baseline, "baseline")
    return groups, weight, baseline


def load_table(path, fmt, roles: ColumnRoles, *, encoding=None, classes=None, positive=None, unknown="ignore",
               require_label=True, keep_only=None, allow_multiclass=False, id_column=None):
    """Read and encode a whole data file.

    With ``encoding=None`` the encoding is learnt from the file (``fit``) and the
    labels' classes too; otherwise both are applied as trained. A label column of
    more than two values (``allow_multiclass`` and no ``positive``), or more than
    two training ``classes``, gives a K-class table. ``keep_only``
    names the one feature column to encode (every other column that plays no
    role is dropped: a score column to post-process). ``id_column`` names a
    column of row ids read as the table's ``row_key`` (``--id-column``).
    """
    if fmt == "libsvm":
        if id_column is not None:
            raise InputError(f"{path}: --id-column names a column; a LIBSVM file has none (its rows are keyed on "
                             "their row number)")
        return _load_libsvm(path, roles, encoding, classes, positive, allow_multiclass)
    frame = read_all(path, fmt)
    dropped = tuple(roles.drop)
    if keep_only is not None:
        frame.column(keep_only, "--postprocess")
        used = set(roles.special()) | {keep_only}  # groups are read as groups, not features
        dropped = tuple(c for c in frame.columns if c not in used)
        roles = ColumnRoles(label=roles.label, groups=roles.groups, weight=roles.weight, baseline=roles.baseline,
                            drop=dropped)
    if encoding is None:
        if roles.label is None:
            raise InputError("--label names the label column (required for CSV and Parquet data)")
        encoding = Encoding.fit(frame, roles, unknown)
    X = encoding.transform(frame)
    y = None
    if roles.label is not None and (require_label or roles.label in frame.columns):
        y, classes = _read_labels(frame.column(roles.label, "--label"), classes, positive, allow_multiclass, path,
                                  roles.label)
    groups, weight, baseline = side_columns(frame, roles)
    row_key = None if id_column is None else text_values(frame.column(id_column, "--id-column"))
    return Table(X, y, classes, groups, weight, baseline, encoding, path, dropped, arity_of_labels(classes), row_key)


def _load_libsvm(path, roles, encoding, classes, positive, allow_multiclass=False):
    if roles.weight is not None or roles.baseline is not None or roles.drop:
        raise InputError(f"{path}: a LIBSVM file has no named columns: --weight, --baseline and --drop need CSV "
                         "or Parquet data")
    chunk = read_all(path, "libsvm", n_features=None if encoding is None else encoding.n_features)
    if chunk.X.shape[0] == 0:
        raise InputError(f"{path}: no data rows")
    if encoding is None:
        encoding = Encoding.for_libsvm(chunk.X.shape[1])
    elif chunk.X.shape[1] != encoding.n_features:
        chunk.X.resize((chunk.X.shape[0], encoding.n_features))
    y, classes = _read_labels(chunk.labels, classes, positive, allow_multiclass, path, "the first field")
    return Table(chunk.X, y, classes, libsvm_groups(chunk.X, roles.groups, path), None, None, encoding, path,
                 (), arity_of_labels(classes))


def libsvm_groups(X, groups, path):
    """Group columns of a LIBSVM file: ``--groups 3`` is the value of feature 3 (1-based), as text."""
    out = {}
    for g in groups:
        try:
            j = int(g)
        except ValueError:
            j = 0
        if j < 1 or j > X.shape[1]:
            raise InputError(f"{path}: --groups {g!r}: in a LIBSVM file a group is a feature index between 1 and "
                             f"{X.shape[1]}")
        out[g] = text_values(np.asarray(X[:, j - 1].todense()).ravel())
    return out


def frame_features(chunk, encoding):
    """Features of one chunk (a :class:`Frame` or a LIBSVM chunk) in the training layout."""
    if isinstance(chunk, Frame):
        return encoding.transform(chunk)
    X = chunk.X
    if X.shape[1] != encoding.n_features:
        X.resize((X.shape[0], encoding.n_features))
    return X
