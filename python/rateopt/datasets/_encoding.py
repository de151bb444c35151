"""Encode parsed columns to a CSR matrix: numerics scaled, categoricals one-hot, groups readable.

Every loader parses its file with pandas (:func:`require_pandas`: imported
here only, pandas is a dependency of the ``datasets`` extra, not of rateopt)
into numeric columns and categorical columns of readable strings (files that
ship one-hot blocks are decoded back to one categorical per block with
:func:`decode_onehot`, so every loader encodes the same way), then calls
:func:`encode`: numerics scaled with statistics of the **whole file** (all
rows, before any split: a mild, documented look at test rows that only
affects the scale), categoricals one-hot in the file's order of blocks
(categories sorted, or in the file's column order for shipped one-hot
blocks); protected attributes stay in ``X``, as in the paper (Cotter et al., 2019,
Table 5, "constraint group in x? Y").

The ``scaling`` option every loader takes is checked by :func:`check_scaling`
and documented by :func:`document_scaling`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rateopt._language._validation import readonly

__all__ = [
    "SCALINGS",
    "age_buckets",
    "check_scaling",
    "decode_onehot",
    "document_scaling",
    "encode",
    "encoded",
    "map_binary",
    "require_pandas",
]

#: Scalings of numeric columns.
SCALINGS = ("standard", "unit-variance", "minmax", None)


def require_pandas():
    """pandas, imported on use: it is a dependency of the ``datasets`` extra, not of rateopt.

    Returns
    -------
    module
        The ``pandas`` module.

    Raises
    ------
    ModuleNotFoundError
        If pandas is not installed; the message gives the ``pip install`` command.
    """
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is in the extra
        raise ModuleNotFoundError(
            "rateopt.datasets needs pandas to parse the files: python -m pip install \"rateopt[datasets]\"",
            name="pandas") from exc
    return pd


def _scale(v, scaling, name):
    v = np.asarray(v, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"numeric column {name!r} has missing or non-finite values")
    if scaling is None:
        return v
    if scaling == "minmax":
        lo, hi = v.min(), v.max()
        return (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
    std = v.std()
    if scaling == "standard":
        return (v - v.mean()) / std if std > 0 else np.zeros_like(v)
    if scaling == "unit-variance":
        return v / std if std > 0 else v
    raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")


def _codes(values, categories=None):
    """Integer codes of a 1-D array of strings, and the category order."""
    pd = require_pandas()
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=categories is None)
    if codes.size and codes.min() < 0:
        raise ValueError("a categorical column has missing values (NaN/None); name them as a category")
    uniques = [str(u) for u in uniques]
    if categories is None:
        return codes, uniques
    pos = {c: i for i, c in enumerate(categories)}
    missing = [u for u in uniques if u not in pos]
    if missing:
        raise ValueError(f"values {missing!r} are not among the categories {categories!r}")
    remap = np.array([pos[u] for u in uniques], dtype=np.int64)
    return remap[codes], list(categories)


def encode(columns, n, scaling):
    """CSR float64 matrix and feature names from ``[(kind, name, values[, categories]), ...]``.

    ``kind`` is ``"num"`` (scaled; zeros stay implicit) or ``"cat"`` (one-hot:
    one column ``name=category`` per category). A ``"cat"`` spec may carry a
    fifth element, a missing-value token: rows holding it get no column of the
    block (an all-zero block), and the token is not a category.
    """
    rows, cols, data, names = [], [], [], []
    offset = 0
    for spec in columns:
        kind, name, values = spec[0], spec[1], spec[2]
        if kind == "num":
            v = _scale(values, scaling, name)
            nz = np.flatnonzero(v)
            rows.append(nz)
            cols.append(np.full(nz.shape[0], offset, dtype=np.int64))
            data.append(v[nz])
            names.append(name)
            offset += 1
        elif kind == "cat":
            values = np.asarray(values, dtype=object)
            present = np.ones(n, dtype=bool) if len(spec) < 5 else values != spec[4]
            codes, cats = _codes(values[present], spec[3] if len(spec) > 3 else None)
            rows.append(np.flatnonzero(present).astype(np.int64))
            cols.append(offset + codes.astype(np.int64))
            data.append(np.ones(codes.shape[0]))
            names.extend(f"{name}={c}" for c in cats)
            offset += len(cats)
        else:  # pragma: no cover - internal
            raise ValueError(kind)
    r, c, d = np.concatenate(rows), np.concatenate(cols), np.concatenate(data)
    X = sp.csr_matrix((d, (r, c)), shape=(n, offset), dtype=np.float64)
    X.sum_duplicates()
    X.sort_indices()
    for a in (X.data, X.indices, X.indptr):
        readonly(a)
    return X, tuple(names)


def encoded(columns, n, scaling, fields):
    """A loader's build dict: ``X``, ``feature_names`` (:func:`encode`), ``raw`` (:func:`raw_columns`), then ``fields``."""
    X, names = encode(columns, n, scaling)
    return {"raw": raw_columns(columns), "X": X, "feature_names": names, **fields}


def raw_columns(columns):
    """The columns of :func:`encode`'s specs before encoding: name -> ``(kind, values)``, in ``X``'s order.

    ``kind`` is the spec's (``"num"`` or ``"cat"``); numerics are the file's values (unscaled), categoricals
    their labels (a missing-value token as it is in the file).
    """
    return {spec[1]: (spec[0], spec[2]) for spec in columns}


def decode_onehot(df, prefix, rename=None):
    """One categorical (strings) from a shipped one-hot block ``prefix*``, and its column order."""
    block = [c for c in df.columns if c.startswith(prefix)]
    if not block:
        raise ValueError(f"no columns start with {prefix!r}")
    M = df[block].to_numpy()
    sums = M.sum(axis=1)
    if not np.all(sums == 1):
        raise ValueError(f"one-hot block {prefix!r} has rows that are not exactly one-hot")
    cats = [c[len(prefix):] for c in block]
    if rename is not None:
        cats = [rename.get(c, c) for c in cats]
    return np.array(cats, dtype=object)[M.argmax(axis=1)], cats


def map_binary(values, mapping, name):
    """Readable strings from a coded column: ``mapping[value]`` per row; a value outside ``mapping`` raises."""
    values = np.asarray(values)
    out = np.empty(values.shape[0], dtype=object)
    done = np.zeros(values.shape[0], dtype=bool)
    for k, v in mapping.items():
        m = values == k
        out[m] = v
        done |= m
    if not done.all():
        raise ValueError(f"column {name!r} has values outside {sorted(mapping)!r}")
    return out


_AGE_EDGES = (25, 45, 65)
_AGE_NAMES = ("<25", "25-44", "45-64", ">=65")


def age_buckets(age):
    """``"<25"``, ``"25-44"``, ``"45-64"``, ``">=65"`` from ages in years."""
    return np.array(_AGE_NAMES, dtype=object)[np.searchsorted(_AGE_EDGES, np.asarray(age), side="right")]


def check_scaling(scaling):
    """``scaling`` itself if it is one of :data:`SCALINGS`, else a ``ValueError``."""
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    return scaling


_SCALING_DOC = """scaling : {{"standard", "unit-variance", "minmax", None}}, default={default!r}
        How numeric columns are scaled, with statistics of the whole file (all
        rows, before any split): ``"standard"`` zero mean and unit variance;
        ``"unit-variance"`` divided by the standard deviation only (zeros stay
        zeros, so sparsity is kept); ``"minmax"`` onto [0, 1]; None: raw values."""


_AS_FRAME_DOC = """as_frame : bool, default=False
        Also return the data as one pandas DataFrame, ``frame`` (as
        scikit-learn's ``fetch_openml(as_frame=True)``'s ``Bunch.frame``): the
        raw feature columns (numerics unscaled, categoricals as their labels,
        of ``category`` dtype, before one-hot encoding), the group columns, the label (column
        ``"label"``, 0/1) and the weights where the data has some; row ``i`` is
        row ``i`` of ``X``, ``y`` and ``groups`` (same order). ``frame_roles``
        names the columns' parts (see :class:`BenchmarkDataset`). The file is
        parsed once more for it (cached separately)."""


def document_scaling(default):
    """Decorator: put the ``scaling`` and ``as_frame`` parameters' descriptions in a loader's docstring.

    Parameters
    ----------
    default : str or None
        The loader's default scaling.

    Returns
    -------
    callable
        ``fill(loader) -> loader``: replaces the ``{scaling}`` and
        ``{as_frame}`` placeholders of the docstring and returns the loader
        itself.
    """
    def fill(loader):
        loader.__doc__ = loader.__doc__.replace("{scaling}", _SCALING_DOC.format(default=default)).replace(
            "{as_frame}", _AS_FRAME_DOC)
        return loader
    return fill
