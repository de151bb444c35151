"""Reading the command line's data files: CSV, Parquet and LIBSVM/svmlight, in chunks.

A chunk of a CSV or Parquet file is a :class:`Frame`: column name -> 1-D
array (text columns of a CSV file stay strings here; the encoding decides
what is numeric). A LIBSVM file gives CSR feature rows and the label tokens.
Every problem is an :class:`InputError` naming the file and, where one
exists, the line or column.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..exceptions import RateoptError

__all__ = ["InputError", "Frame", "SparseChunk", "file_format", "read_chunks", "read_all"]

FORMATS = ("csv", "parquet", "libsvm")
_SUFFIXES = {".csv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet",
             ".libsvm": "libsvm", ".svm": "libsvm", ".svmlight": "libsvm"}


class InputError(RateoptError):
    """A data, goals or model file the command line cannot use (the message says where and why)."""


@dataclass
class Frame:
    """Named columns of equal length (a chunk of a CSV or Parquet file)."""

    columns: dict
    n_rows: int
    path: str
    first_row: int = 0  # 0-based index of the chunk's first data row in the file

    def column(self, name, role):
        if name not in self.columns:
            raise InputError(f"{self.path}: no column {name!r} (given as {role}); the file has columns "
                             f"{list(self.columns)!r}")
        return self.columns[name]


@dataclass
class SparseChunk:
    """Rows of a LIBSVM file: CSR features (0-based columns) and the label tokens."""

    X: sp.csr_matrix
    labels: np.ndarray
    path: str
    first_row: int = 0


def file_format(path, given=None):
    """The format of ``path``: ``given``, else from its suffix (``.csv``, ``.parquet``, ``.libsvm``/``.svm``)."""
    if given is not None:
        if given not in FORMATS:
            raise InputError(f"--format must be one of {FORMATS}, got {given!r}")
        return given
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in _SUFFIXES:
        raise InputError(f"{path}: cannot tell the format from the suffix {suffix!r}; use a suffix among "
                         f"{sorted(_SUFFIXES)} or pass --format {{csv,parquet,libsvm}}")
    return _SUFFIXES[suffix]


def read_chunks(path, fmt, chunk_rows=100_000, n_features=None):
    """Yield :class:`Frame` (CSV, Parquet) or :class:`SparseChunk` (LIBSVM) chunks of ``path``."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    if fmt == "csv":
        yield from _csv_chunks(path, chunk_rows)
    elif fmt == "parquet":
        yield from _parquet_chunks(path, chunk_rows)
    else:
        yield from _libsvm_chunks(path, chunk_rows, n_features)


def read_all(path, fmt, n_features=None):
    """The whole file as one :class:`Frame` or :class:`SparseChunk`."""
    chunks = list(read_chunks(path, fmt, chunk_rows=1 << 62, n_features=n_features))
    return chunks[0]


# --------------------------------------------------------------------------- CSV


def _csv_chunks(path, chunk_rows):
    """CSV chunks: pandas' C parser when pandas is installed (numeric columns arrive as numbers), else the
    standard library's reader (every column as text). Both give the same encoding and labels."""
    header = _csv_header(path)
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is None or os.environ.get("RATEOPT_CSV_READER") == "stdlib":
        yield from _csv_chunks_stdlib(path, chunk_rows, header)
        return
    start, done = 0, False
    try:
        reader = pd.read_csv(path, chunksize=int(min(chunk_rows, 1 << 40)), keep_default_na=False,
                             skip_blank_lines=True, encoding="utf-8-sig", low_memory=False)
        for df in reader:
            if list(df.columns) != header:  # pragma: no cover - pandas renames nothing for a valid header
                raise InputError(f"{path}: line 1: unexpected header {list(df.columns)!r}")
            cols = {}
            for name in header:
                v = df[name].to_numpy()
                if v.dtype.kind == "b":  # pandas reads true/false as booleans; the standard reader as text
                    cols[name] = np.where(v, "True", "False").astype(object)
                else:
                    cols[name] = v.astype(np.float64) if v.dtype.kind in "iuf" else v.astype(object)
            yield Frame(cols, len(df), path, start)
            start += len(df)
            done = True
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not a readable CSV file: {' '.join(str(exc).split())}") from None
    except pd.errors.EmptyDataError:
        pass
    if not done:
        yield Frame({n: np.array([], dtype=object) for n in header}, 0, path, 0)


def _csv_header(path):
    with open(path, newline="", encoding="utf-8-sig") as f:  # utf-8-sig: a byte-order mark (Excel) is dropped
        try:
            header = next(csv.reader(f), None)
        except (csv.Error, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: not a readable CSV file ({exc})") from None
    if not header:
        raise InputError(f"{path}: empty file; expected a header row with the column names")
    header = [h.strip() for h in header]
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes or "" in header:
        raise InputError(f"{path}: line 1: column names must be non-empty and distinct"
                         + (f" ({dupes!r} repeat)" if dupes else ""))
    return header


def _csv_chunks_stdlib(path, chunk_rows, header):
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        next(reader)
        rows, start, done = [], 0, 0
        try:
            for row in reader:
                if not row:
                    continue
                if len(row) != len(header):
                    raise InputError(f"{path}: line {reader.line_num}: {len(row)} fields, the header has "
                                     f"{len(header)}")
                rows.append(row)
                if len(rows) == chunk_rows:
                    yield _csv_frame(header, rows, path, start)
                    start += len(rows)
                    rows, done = [], done + 1
        except (csv.Error, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: line {reader.line_num}: {exc}") from None
        if rows or not done:
            yield _csv_frame(header, rows, path, start)


def _csv_frame(header, rows, path, start):
    if rows:
        cols = [np.array(c, dtype=object) for c in zip(*rows)]
    else:
        cols = [np.array([], dtype=object) for _ in header]
    return Frame(dict(zip(header, cols)), len(rows), path, start)


# --------------------------------------------------------------------------- Parquet


def pyarrow_parquet():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading and writing Parquet files needs pyarrow: "
                         "python -m pip install \"rateopt[parquet]\"") from None
    return pq


def _parquet_chunks(path, chunk_rows):
    pq = pyarrow_parquet()
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own types on non-Parquet data
        raise InputError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    start, done = 0, False
    for batch in pf.iter_batches(batch_size=int(min(chunk_rows, 1 << 30))):
        cols = {}
        for name, col in zip(batch.schema.names, batch.columns):
            cols[name] = _arrow_column(col)
        yield Frame(cols, batch.num_rows, path, start)
        start += batch.num_rows
        done = True
    if not done:
        yield Frame({n: np.array([], dtype=object) for n in pf.schema_arrow.names}, 0, path, 0)


def _arrow_column(col):
    import pyarrow.types as pt

    t = col.type
    if (pt.is_integer(t) or pt.is_floating(t)) and col.null_count == 0:
        return col.to_numpy(zero_copy_only=False).astype(np.float64)
    if pt.is_integer(t) or pt.is_floating(t):  # nulls: keep them visible as missing text
        values = col.to_pylist()
        return np.array(["" if v is None else repr(v) for v in values], dtype=object)
    return np.array(["" if v is None else str(v) for v in col.to_pylist()], dtype=object)


# --------------------------------------------------------------------------- LIBSVM / svmlight


def _libsvm_chunks(path, chunk_rows, n_features):
    labels, indptr, indices, data = [], [0], [], []
    start, done = 0, False
    width = 0
    with open(path, encoding="utf-8-sig") as f:
        for line_no, line in enumerate(f, 1):
            body = line.split("#", 1)[0].split()
            if not body:
                continue
            labels.append(body[0])
            prev = 0
            for tok in body[1:]:
                if tok.startswith("qid:"):
                    continue
                idx, sep, val = tok.partition(":")
                try:
                    j, v = int(idx), float(val)
                except ValueError:
                    j = v = None
                if not sep or j is None:
                    raise InputError(f"{path}: line {line_no}: {tok!r} is not index:value")
                if j < 1:
                    raise InputError(f"{path}: line {line_no}: feature index {j}; LIBSVM indices start at 1")
                if j <= prev:
                    raise InputError(f"{path}: line {line_no}: feature indices must increase ({prev} then {j})")
                if not np.isfinite(v):
                    raise InputError(f"{path}: line {line_no}: feature {j} has the non-finite value {val!r}")
                if n_features is not None and j > n_features:
                    raise InputError(f"{path}: line {line_no}: feature index {j}, but the model was trained on "
                                     f"{n_features} features")
                prev = j
                indices.append(j - 1)
                data.append(v)
            width = max(width, prev)
            indptr.append(len(indices))
            if len(labels) == chunk_rows:
                yield _sparse(labels, indptr, indices, data, n_features, path, start)
                start += len(labels)
                labels, indptr, indices, data, done = [], [0], [], [], True
    if labels or not done:
        yield _sparse(labels, indptr, indices, data, n_features, path, start, width)


def _sparse(labels, indptr, indices, data, n_features, path, start, width=0):
    n_cols = n_features if n_features is not None else max(width, max(indices, default=-1) + 1)
    X = sp.csr_matrix((np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int32),
                       np.asarray(indptr, dtype=np.int64)), shape=(len(labels), n_cols))
    return SparseChunk(X, np.array(labels, dtype=object), path, start)
