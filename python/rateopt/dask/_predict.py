"""A fitted classifier applied where the rows live: ``map_partitions``, and evaluation on the cluster."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rateopt.exceptions import RateoptError

from ._cluster import gather, holders, submit_on
from ._compile import PartitionedTable

__all__ = ["predict", "evaluate"]

_METHODS = ("predict", "predict_proba", "decision_function")


def _apply(block, classifier, method, kwargs, columns=None):
    if hasattr(block, "to_numpy"):  # a pandas partition
        import pandas as pd

        out = getattr(classifier, method)(block.to_numpy(dtype=np.float64), **kwargs)
        if columns is None:
            return pd.Series(out, index=block.index)
        return pd.DataFrame(out, index=block.index, columns=columns)
    return getattr(classifier, method)(block, **kwargs)


def _output_of(classifier, method, kwargs, n_features):
    """The method's output on one row of zeros: its dtype and, for a 2-D output, its number of columns."""
    out = np.asarray(getattr(classifier, method)(np.zeros((1, n_features)), **kwargs))
    if out.ndim not in (1, 2) or out.shape[0] != 1:
        raise RateoptError(f"classifier.{method} returned shape {out.shape} for 1 row: expected (1,) or (1, k)")
    return out.dtype, (out.shape[1] if out.ndim == 2 else None)


def predict(classifier, X, *, method="predict", **kwargs):
    """Apply a fitted classifier to every partition of ``X``, lazily.

    A stochastic classifier's draw for a row depends on ``random_state`` and
    the row's id (``row_key=``, passed in ``kwargs`` is not split by partition:
    give ids through the classifier in memory instead), or else on its content
    and its occurrence among identical rows of its partition: rows unique in
    their partition get the in-memory decisions row for row.

    Parameters
    ----------
    classifier : fitted rateopt classifier or RateConstrainedClassifier
        E.g. ``result.solution("m-stochastic")``, or a fitted estimator.
    X : dask array of shape (n_samples, n_features) or dask DataFrame
        The rows (a DataFrame's columns are the features, in order).
    method : {"predict", "predict_proba", "decision_function"}, default="predict"
    **kwargs
        Passed to the method (e.g. ``random_state=0``).

    Returns
    -------
    dask array of shape (n_samples,) or (n_samples, k), or dask Series or DataFrame for a DataFrame
        Lazy: call ``.compute()`` (or keep it on the cluster with ``.persist()``). The shape and dtype are
        the method's: ``predict_proba`` gives one column per class (a DataFrame's are named by
        ``classes_``).
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if not hasattr(classifier, method):
        raise TypeError(f"classifier has no method {method!r}: pass a fitted rateopt classifier")
    if hasattr(X, "chunks") and hasattr(X, "map_blocks"):
        if X.ndim != 2:
            raise RateoptError(f"X must be 2-D, got a dask array of shape {X.shape}")
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        dtype, k = _output_of(classifier, method, kwargs, X.shape[1])
        if k is None:
            return X.map_blocks(_apply, classifier, method, kwargs, drop_axis=1, dtype=dtype)
        return X.map_blocks(_apply, classifier, method, kwargs, chunks=(X.chunks[0], (k,)), dtype=dtype)
    if hasattr(X, "map_partitions") and getattr(X, "ndim", None) == 2 and hasattr(X, "columns"):
        import pandas as pd

        dtype, k = _output_of(classifier, method, kwargs, len(X.columns))
        if k is None:
            return X.map_partitions(_apply, classifier, method, kwargs, meta=pd.Series(dtype=dtype))
        classes = getattr(classifier, "classes_", None)
        columns = list(classes) if classes is not None and len(classes) == k else list(range(k))
        meta = pd.DataFrame({c: pd.Series(dtype=dtype) for c in columns})
        return X.map_partitions(_apply, classifier, method, kwargs, columns, meta=meta)
    raise TypeError(f"X must be a dask array or a dask DataFrame, got {type(X).__name__}")


def _partition_atom_rates(block, classifier):
    """``V^T p`` on one partition: the atom rates of the classifier's expected decisions ``p``."""
    t = block.atoms
    V = sp.csr_matrix((t.weights, t.indices, t.indptr), shape=(t.n_samples, t.n_atoms))
    return V.T @ np.asarray(classifier.predict_proba(block.X.data)[:, 1], dtype=np.float64)


def evaluate(problem, classifier):
    """Objective, constraints and rates of a classifier on a partitioned problem, computed on the cluster.

    Each partition measures the atom rates of the classifier's expected
    decisions (``predict_proba``: exact rates for a stochastic mixture) with
    its membership table; the client adds them.

    Parameters
    ----------
    problem : rateopt.Problem
        A problem stated on :class:`rateopt.dask.Dataset` datasets.
    classifier : fitted rateopt classifier
        Its ``predict_proba`` runs on every partition.

    Returns
    -------
    rateopt.Evaluation
        As :meth:`rateopt.Problem.evaluate` with ``kind="probabilities"``.
    """
    cp = problem.compiled
    rates = np.zeros(cp.n_atoms)
    for name in cp.datasets:
        t = cp.tables[name]
        if not isinstance(t, PartitionedTable):
            raise TypeError("problem is not stated on rateopt.dask.Dataset datasets: use problem.evaluate")
        client = problem.datasets[name].client
        where = holders(client, t.blocks, name)
        parts = gather(client, [submit_on(client, w, _partition_atom_rates, b, classifier)
                                for b, w in zip(t.blocks, where)], name)
        acc = np.zeros(t.n_atoms)
        for p in parts:
            acc += p
        rates[t.atom_ids] = acc
    return problem.evaluate_atom_rates(rates)
