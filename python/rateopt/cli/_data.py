"""From a data file to what training and evaluation need: features, labels, groups, weights, baseline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._language._data import Dataset
from ._encoding import ColumnRoles, Encoding, as_numbers, split_label, text_values
from ._io import Frame, InputError, read_all

__all__ = ["Table", "load_table", "labels_from_classes", "side_columns"]


@dataclass
class Table:
    """A data file, encoded: CSR features and the side columns (``y`` is 0/1 or None)."""

    X: sp.csr_matrix
    y: np.ndarray | None
    classes: list | None
    groups: dict
    weight: np.ndarray | None
    baseline: np.ndarray | None
    encoding: Encoding
    path: str
    dropped: tuple = ()  # the columns left out of the features (beyond the roles' --drop)

    def dataset(self, name="train"):
        return Dataset(self.X, self.y, weights=self.weight, groups=self.groups or None, baseline=self.baseline,
                       name=name)


def labels_from_classes(values, classes, path, column):
    """0/1 labels of ``values`` given the training classes ``[negative, positive]``."""
    text = text_values(values)
    unknown = sorted(set(text.tolist()) - set(classes))
    if unknown:
        raise InputError(f"{path}: label column {column!r} has value(s) {unknown[:5]!r} that were not classes in "
                         f"training ({classes!r})")
    return (text == classes[1]).astype(np.int64)


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
               require_label=True, keep_only=None):
    """Read and encode a whole data file.

    With ``encoding=None`` the encoding is learnt from the file (``fit``) and the
    labels' classes too; otherwise both are applied as trained. ``keep_only``
    names the one feature column to encode (every other column that plays no
    role is dropped: a score column to post-process).
    """
    if fmt == "libsvm":
        return _load_libsvm(path, roles, encoding, classes, positive)
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
        values = frame.column(roles.label, "--label")
        if classes is None:
            y, classes = split_label(values, path, roles.label, positive)
        else:
            y = labels_from_classes(values, classes, path, roles.label)
    groups, weight, baseline = side_columns(frame, roles)
    return Table(X, y, classes, groups, weight, baseline, encoding, path, dropped)


def _load_libsvm(path, roles, encoding, classes, positive):
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
    if classes is None:
        y, classes = split_label(chunk.labels, path, "the first field", positive)
    else:
        y = labels_from_classes(chunk.labels, classes, path, "the first field")
    return Table(chunk.X, y, classes, libsvm_groups(chunk.X, roles.groups, path), None, None, encoding, path)


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
