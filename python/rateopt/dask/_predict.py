"""A fitted classifier applied where the rows live: ``map_partitions``, and evaluation on the cluster."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rateopt.exceptions import RateoptError

from ._compile import PartitionedTable

__all__ = ["predict", "evaluate"]

_METHODS = ("predict", "predict_proba", "decision_function")


def _apply(block, classifier, method, kwargs):
    if hasattr(block, "to_numpy"):  # a pandas partition
        import pandas as pd

        return pd.Series(getattr(classifier, method)(block.to_numpy(dtype=np.float64), **kwargs), index=block.index)
    return getattr(classifier, method)(block, **kwargs)


def predict(classifier, X, *, method="predict", **kwargs):
    """Apply a fitted classifier to every partition of ``X``, lazily.

    A stochastic classifier's draw for a row depends only on ``random_state``
    and the row's content, so the partitioned predictions equal the in-memory
    ones row for row.

    Parameters
    ----------
    classifier : fitted rateopt classifier
        E.g. ``result.solution("m-stochastic")``.
    X : dask array of shape (n_samples, n_features) or dask DataFrame
        The rows (a DataFrame's columns are the features, in order).
    method : {"predict", "predict_proba", "decision_function"}, default="predict"
    **kwargs
        Passed to the method (e.g. ``random_state=0``).

    Returns
    -------
    dask array of shape (n_samples,), or dask Series for a DataFrame
        Lazy: call ``.compute()`` (or keep it on the cluster with ``.persist()``).
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if not hasattr(classifier, method):
        raise TypeError(f"classifier has no method {method!r}: pass a fitted rateopt classifier")
    dtype = np.int64 if method == "predict" else np.float64
    if hasattr(X, "chunks") and hasattr(X, "map_blocks"):
        if X.ndim != 2:
            raise RateoptError(f"X must be 2-D, got a dask array of shape {X.shape}")
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        return X.map_blocks(_apply, classifier, method, kwargs, drop_axis=1, dtype=dtype)
    if hasattr(X, "map_partitions") and hasattr(X, "columns"):
        import pandas as pd

        return X.map_partitions(_apply, classifier, method, kwargs, meta=pd.Series(dtype=dtype))
    raise TypeError(f"X must be a dask array or a dask DataFrame, got {type(X).__name__}")


def _partition_atom_rates(block, classifier):
    """``V^T p`` on one partition: the atom rates of the classifier's expected decisions ``p``."""
    t = block.atoms
    V = sp.csr_matrix((t.weights, t.indices, t.indptr), shape=(t.n_samples, t.n_atoms))
    return V.T @ np.asarray(classifier.predict_proba(block.X.data), dtype=np.float64)


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
        parts = client.gather([client.submit(_partition_atom_rates, b, classifier, pure=False) for b in t.blocks])
        acc = np.zeros(t.n_atoms)
        for p in parts:
            acc += p
        rates[t.atom_ids] = acc
    return problem.evaluate_atom_rates(rates)
