"""``rateopt predict``: score a file in chunks and write each row's drawn class (and probabilities).

Each row's draw is keyed on its global row number in the file (0-based), or on ``--id-column``, so
``--chunk-rows`` does not change a decision. Two and K classes share this path (:mod:`._decisions`).
"""

from __future__ import annotations

import csv

import numpy as np

from .._threshold_classifier import ThresholdClassifier
from .._utils._atomic import AtomicFiles
from .._training._arity import arity_of_labels
from ._bundle import ChainedRule, read_bundle
from ._decisions import header as predicted_header
from ._decisions import predicted_columns
from ._data import frame_features
from ._encoding import text_values
from ._io import Frame, InputError, file_format, pyarrow_parquet, read_chunks
from ._progress import progress
from ._shared import EXIT_OK, check_outputs

__all__ = ["predict"]


class _CsvSink:
    def __init__(self, path, header):
        self.f = open(path, "w", newline="", encoding="utf-8")
        self.w = csv.writer(self.f)
        self.w.writerow(header)

    def write(self, columns):
        self.w.writerows(zip(*columns.values()))

    def close(self):
        self.f.close()

    def write_empty(self):
        pass  # the header is written


class _ParquetSink:
    def __init__(self, path, header):
        self.pq = pyarrow_parquet()
        self.path, self.header, self.writer = path, header, None

    def write(self, columns):
        import pyarrow as pa

        table = pa.table({k: np.asarray(v) for k, v in columns.items()})
        if self.writer is None:
            self.writer = self.pq.ParquetWriter(self.path, table.schema)
        self.writer.write_table(table)

    def close(self):
        if self.writer is not None:
            self.writer.close()

    def write_empty(self):
        """No rows: a valid Parquet file with the columns (text, and float64 ``proba``)."""
        import pyarrow as pa

        self.pq.write_table(pa.table({k: pa.array([], type=pa.float64() if k == "proba" or k.startswith("proba_")
                                                  else pa.string())
                                      for k in self.header}), self.path)


def predict(args):
    """``rateopt predict MODEL DATA --out PREDICTIONS``."""
    clf, meta, enc, roles = read_bundle(args.model)
    fmt = file_format(args.data, args.format)
    if (fmt == "libsvm") != (enc.kind == "libsvm"):
        raise InputError(f"{args.data}: the model was trained on {'LIBSVM' if enc.kind == 'libsvm' else 'tabular'} "
                         f"data; give a file of the same kind")
    if fmt == "libsvm" and args.id_column is not None:
        raise InputError(f"{args.data}: --id-column names a column; a LIBSVM file has none (its rows are keyed on "
                         "their row number)")
    out_fmt = file_format(args.out)
    if out_fmt == "libsvm":
        raise InputError(f"{args.out}: predictions are written as .csv or .parquet")
    if args.chunk_rows < 1:
        raise InputError("--chunk-rows must be >= 1")
    check_outputs(("--out", args.out))
    classes = np.array(meta["classes"], dtype=object)
    arity = arity_of_labels(meta["classes"])
    outputs = predicted_header(arity, meta["classes"], args.proba)
    _check_keep(args.keep, outputs)
    header = list(args.keep) + outputs
    bar = progress(None, "rateopt predict", args.quiet)
    with AtomicFiles() as files:  # the predictions appear only when every chunk is scored
        n = _score_chunks(args, arity, clf, enc, fmt, classes,
                          (_CsvSink if out_fmt == "csv" else _ParquetSink)(files.path(args.out), header), bar)
    print(f"wrote {n} predictions to {args.out}")
    return EXIT_OK


def _check_keep(keep, outputs):
    """Refuse a ``--keep`` column named like an output column, or given twice: each would shift the columns."""
    seen = set()
    for k in keep:
        if k in outputs:
            raise InputError(f"--keep {k}: the predictions file writes its own column {k!r} (its columns are "
                             f"{', '.join(outputs)}); rename the input column or leave it out of --keep")
        if k in seen:
            raise InputError(f"--keep {k}: the column is given twice")
        seen.add(k)


def _score_chunks(args, arity, clf, enc, fmt, classes, sink, bar):
    n = 0
    try:
        for chunk in read_chunks(args.data, fmt, args.chunk_rows,
                                 n_features=enc.n_features if enc.kind == "libsvm" else None):
            X = frame_features(chunk, enc)
            cols = {}
            for k in args.keep:
                if not isinstance(chunk, Frame):
                    raise InputError("--keep copies named columns; a LIBSVM file has none")
                cols[k] = chunk.column(k, "--keep")
            if not X.shape[0]:  # an empty file (a header only): nothing to score
                continue
            rule = clf.rule if isinstance(clf, ChainedRule) else clf
            groups = ({g: text_values(chunk.column(g, "--groups")) for g in rule.rule_.columns}
                      if isinstance(rule, ThresholdClassifier) and isinstance(chunk, Frame) else {})
            row_key = (np.arange(n, n + X.shape[0], dtype=np.int64) if args.id_column is None
                       else text_values(chunk.column(args.id_column, "--id-column")))
            cols.update(predicted_columns(arity, clf, X, groups, classes, args.seed, row_key, args.proba))
            sink.write(cols)
            n += X.shape[0]
            bar.update(X.shape[0])
    finally:
        sink.close()
        bar.close()
    if n == 0:
        sink.write_empty()
    return n
