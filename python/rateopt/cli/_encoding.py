"""The feature encoding the command line learns at ``fit`` and applies at ``predict``.

Numeric columns are standardized with the training mean and standard
deviation (``rateopt.datasets``' default ``scaling="standard"``); text columns
are one-hot encoded, one feature ``name=category`` per training category, as
``rateopt.datasets`` does. A category seen only after training is handled as
the encoding says: ``"ignore"`` (the row gets no feature of that column, i.e.
zeros) or ``"error"``. LIBSVM files are already numeric: their encoding only
records the number of features. The encoding is saved as JSON beside the
model (no pickle).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ._io import Frame, InputError

__all__ = ["MISSING_MARKERS", "ColumnRoles", "Encoding", "first_gap", "split_label", "text_values"]

UNKNOWN = ("ignore", "error")
#: Spellings of a missing value (compared case-insensitively, blanks stripped): pandas' default NA strings
#: and "?" (the UCI files). A column of numbers with one of these is refused, naming the column and row.
MISSING_MARKERS = frozenset({"", "na", "n/a", "nan", "-nan", "null", "none", "?", "#n/a", "#n/a n/a", "#na",
                             "<na>", "-1.#ind", "1.#ind", "-1.#qnan", "1.#qnan"})
_BOOLS = {"true": "True", "false": "False"}  # one spelling, whichever CSV reader produced the column


def text_values(values):
    """A column as strings; a column of numbers (as numbers or as text) in one canonical spelling
    (``1`` for 1, 1.0 and "1.0"; ``0.5`` for 0.5), whichever reader produced it."""
    values = np.asarray(values)
    if values.dtype.kind not in "fiub":
        text = np.array([_BOOLS.get(s.lower(), s) for s in (str(v).strip() for v in values)], dtype=object)
        if not text.size:
            return text
        try:
            values = text.astype(np.float64)
        except (TypeError, ValueError):
            return text
        if not np.all(np.isfinite(values)):
            return text
    if values.dtype.kind == "b":
        return np.where(values, "True", "False").astype(object)
    if values.dtype.kind in "iu":
        return np.array([str(int(v)) for v in values], dtype=object)
    return np.array([repr(int(v)) if float(v).is_integer() else repr(float(v)) for v in values], dtype=object)


def as_numbers(values):
    """Float64 values, or None if some entry is not a number; and the index of the first bad entry."""
    values = np.asarray(values)
    if values.dtype.kind in "fiub":
        out = values.astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(out))
        return (out, None) if not bad.size else (None, int(bad[0]))
    try:  # fast path: every entry converts (numpy calls float() on each object in C)
        out = values.astype(np.float64)
    except (TypeError, ValueError):
        out = None
    if out is not None:
        bad = np.flatnonzero(~np.isfinite(out))
        return (out, None) if not bad.size else (None, int(bad[0]))
    out = np.empty(values.shape[0])
    for i, v in enumerate(values):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            return None, i
        if not np.isfinite(out[i]):
            return None, i
    return out, None


#: A feature column with a different value in every one of at least this many rows is warned about as a row id.
ROW_ID_MIN_ROWS = 50


def warn_if_row_id(name, n_distinct, n_rows, integer_like):
    """Warn when a text or integer column has a different value in every row: a row id, not a feature.

    One-hot encoded, such a column gives one feature per training row, which a
    model can only memorize (near-zero training error, chance-level test error).
    """
    if n_rows >= ROW_ID_MIN_ROWS and n_distinct == n_rows and integer_like:
        warnings.warn(f"column {name!r} has a different value in each of the {n_rows} rows: it looks like a row "
                      f"id, which a model can only memorize; leave it out with --drop {name}", UserWarning,
                      stacklevel=3)


def first_gap(values):
    """The first missing or non-finite entry of a column of numbers.

    Returns the index of the first entry that is a missing-value marker
    (:data:`MISSING_MARKERS`) or a non-finite number (``inf``, ``nan``) when
    every other entry is a finite number and there is at least one; None when
    the column has no such entry or holds text (a text column is categorical,
    markers included).
    """
    values = np.asarray(values)
    if values.dtype.kind in "fiub":
        bad = np.flatnonzero(~np.isfinite(values.astype(np.float64)))
        return int(bad[0]) if bad.size else None
    text = np.array([str(v).strip() for v in values], dtype=object)
    missing = np.fromiter((t.lower() in MISSING_MARKERS for t in text), dtype=bool, count=text.size)
    try:
        nums = text[~missing].astype(np.float64)
    except (TypeError, ValueError):
        return None  # some entry is text
    if not nums.size:
        return None  # nothing but markers: not a column of numbers
    bad = missing.copy()
    bad[~missing] = ~np.isfinite(nums)
    if not (bad.any() and np.isfinite(nums).any()):
        return None
    return int(np.flatnonzero(bad)[0])


@dataclass
class ColumnRoles:
    """Which columns of the data play which part (names as in the file's header)."""

    label: str | None = None
    groups: tuple = ()
    weight: str | None = None
    baseline: str | None = None
    drop: tuple = ()

    def special(self):
        return [c for c in (self.label, self.weight, self.baseline) if c is not None]


@dataclass
class Encoding:
    """Numeric scaling and one-hot categories of a table's feature columns (or a LIBSVM width)."""

    kind: str  # "table" or "libsvm"
    columns: list = field(default_factory=list)  # [{"name", "type": "numeric", "mean", "scale"} | {"name", "type": "categorical", "categories"}]
    unknown: str = "ignore"
    n_features: int = 0

    # ------------------------------------------------------------------ fit

    @classmethod
    def fit(cls, frame: Frame, roles: ColumnRoles, unknown="ignore"):
        if unknown not in UNKNOWN:
            raise InputError(f"--unknown must be one of {UNKNOWN}, got {unknown!r}")
        for name, role in ((roles.label, "--label"), (roles.weight, "--weight"), (roles.baseline, "--baseline")):
            if name is not None:
                frame.column(name, role)
        for g in roles.groups:
            frame.column(g, "--groups")
        for d in roles.drop:
            frame.column(d, "--drop")
        if frame.n_rows == 0:
            raise InputError(f"{frame.path}: no data rows")
        skip = set(roles.special()) | set(roles.drop)
        cols = []
        for name, values in frame.columns.items():
            if name in skip:
                continue
            nums, _ = as_numbers(values)
            if nums is not None:
                warn_if_row_id(name, np.unique(nums).size, frame.n_rows, bool(np.all(nums == np.round(nums))))
                std = float(nums.std())
                cols.append({"name": name, "type": "numeric", "mean": float(nums.mean()),
                             "scale": std if std > 0 else 1.0})
                continue
            gap = first_gap(values)
            if gap is not None:
                shown = values[gap]
                shown = str(shown).strip() if not isinstance(shown, (float, np.floating)) else repr(float(shown))
                raise InputError(f"{frame.path}: numeric column {name!r} has a missing or non-finite value "
                                 f"({shown!r}) at data row {frame.first_row + gap + 1}; fill it or leave the column "
                                 f"out with --drop {name}")
            categories = sorted(set(text_values(values).tolist()))
            warn_if_row_id(name, len(categories), frame.n_rows, True)
            cols.append({"name": name, "type": "categorical", "categories": categories})
        if not cols:
            raise InputError(f"{frame.path}: no feature columns left (all columns are label, weight, baseline "
                             "or dropped)")
        enc = cls("table", cols, unknown)
        enc.n_features = sum(1 if c["type"] == "numeric" else len(c["categories"]) for c in cols)
        return enc

    @classmethod
    def for_libsvm(cls, n_features):
        return cls("libsvm", [], "error", int(n_features))

    # ------------------------------------------------------------------ transform

    @property
    def feature_names(self):
        if self.kind == "libsvm":
            return [str(j + 1) for j in range(self.n_features)]
        out = []
        for c in self.columns:
            out.extend([c["name"]] if c["type"] == "numeric" else [f"{c['name']}={v}" for v in c["categories"]])
        return out

    def transform(self, frame: Frame):
        """CSR float64 features of a :class:`Frame`, in the training layout."""
        n = frame.n_rows
        rows, cols, data = [], [], []
        offset = 0
        for c in self.columns:
            values = frame.column(c["name"], "a feature column of the model")
            if c["type"] == "numeric":
                nums, bad = as_numbers(values)
                if nums is None or bad is not None:
                    raise InputError(f"{frame.path}: column {c['name']!r}, data row {frame.first_row + bad + 1}: "
                                     f"{values[bad]!r} is not a finite number (the column was numeric in "
                                     "training)")
                v = (nums - c["mean"]) / c["scale"]
                nz = np.flatnonzero(v)
                rows.append(nz)
                cols.append(np.full(nz.shape[0], offset, dtype=np.int64))
                data.append(v[nz])
                offset += 1
            else:
                cats = c["categories"]
                text = text_values(values)
                pos = {v: i for i, v in enumerate(cats)}
                codes = np.fromiter((pos.get(v, -1) for v in text), dtype=np.int64, count=n)
                unseen = np.flatnonzero(codes < 0)
                if unseen.size and self.unknown == "error":
                    i = int(unseen[0])
                    raise InputError(f"{frame.path}: column {c['name']!r}, data row {frame.first_row + i + 1}: "
                                     f"category {text[i]!r} was not seen in training (known: {cats!r}); "
                                     "the model was fitted with --unknown error")
                keep = np.flatnonzero(codes >= 0)
                rows.append(keep)
                cols.append(offset + codes[keep])
                data.append(np.ones(keep.shape[0]))
                offset += len(cats)
        X = sp.csr_matrix((np.concatenate(data) if data else np.zeros(0),
                           (np.concatenate(rows) if rows else np.zeros(0, np.int64),
                            np.concatenate(cols) if cols else np.zeros(0, np.int64))),
                          shape=(n, offset), dtype=np.float64)
        X.sum_duplicates()
        X.sort_indices()
        return X

    # ------------------------------------------------------------------ JSON

    def to_json(self):
        return {"kind": self.kind, "columns": self.columns, "unknown": self.unknown, "n_features": self.n_features}

    @classmethod
    def from_json(cls, obj, where):
        try:
            enc = cls(str(obj["kind"]), list(obj["columns"]), str(obj["unknown"]), int(obj["n_features"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{where}: the encoding is damaged ({type(exc).__name__}: {exc})") from None
        if enc.kind not in ("table", "libsvm") or enc.unknown not in UNKNOWN:
            raise InputError(f"{where}: the encoding is damaged (kind {enc.kind!r}, unknown {enc.unknown!r})")
        for c in enc.columns:
            ok = isinstance(c, dict) and isinstance(c.get("name"), str) and (
                (c.get("type") == "numeric" and all(isinstance(c.get(k), (int, float)) for k in ("mean", "scale"))
                 and c["scale"] > 0)
                or (c.get("type") == "categorical" and isinstance(c.get("categories"), list)))
            if not ok:
                raise InputError(f"{where}: the encoding is damaged (column entry {c!r})")
        return enc


def split_label(values, path, column, positive=None):
    """0/1 labels from a label column: exactly two distinct values; ``positive`` or the larger is 1.

    Returns
    -------
    y : ndarray of int64
    classes : list of str
        ``[negative, positive]`` as text.
    """
    text = text_values(values)
    distinct = sorted(set(text.tolist()))
    if "" in distinct:
        i = int(np.flatnonzero(text == "")[0])
        raise InputError(f"{path}: label column {column!r} has a missing value at data row {i + 1}")
    if len(distinct) != 2 and not (positive is not None and len(distinct) == 1):
        shown = distinct[:5] + (["..."] if len(distinct) > 5 else [])
        raise InputError(f"{path}: label column {column!r} has {len(distinct)} distinct value(s) {shown!r}; "
                         "rateopt trains binary classifiers: it needs exactly two")
    nums = as_numbers(np.array(distinct, dtype=object))[0]
    ordered = [distinct[i] for i in np.argsort(nums, kind="stable")] if nums is not None else distinct
    if positive is not None:
        positive = text_values(np.array([positive], dtype=object))[0]
        if positive not in distinct:
            raise InputError(f"{path}: --positive {positive!r} is not a value of label column {column!r} "
                             f"(values: {distinct!r})")
        negative = [v for v in distinct if v != positive]
        ordered = [negative[0] if negative else "", positive]
    return (text == ordered[1]).astype(np.int64), ordered
