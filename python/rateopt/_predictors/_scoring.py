"""Linear scores of every classifier: the raw input check and ``X @ W^T + b`` (on kernel features for a kernel model).

One scorer for every linear model of rateopt: a two-class model is one
output (``W`` of shape (1, n_features)), a mixture of ``T`` models ``T``
outputs, a K-class mixture ``T * K`` outputs.
"""

from __future__ import annotations

import numpy as np

from ..core import FeatureMatrix, multiclass_scores
from ..exceptions import RateoptError

__all__ = ["raw_features", "linear_scores", "feature_names_of", "check_feature_names", "checked_feature_names"]

#: Stored values per block when float32 features are scored (a float64 copy of one block exists at a time).
_SCORE_BLOCK_VALUES = 1 << 22


def feature_names_of(X):
    """The column names of a DataFrame-like ``X`` (all strings), else None.

    Parameters
    ----------
    X : object
        Anything with ``.columns`` (pandas, ...) or an array.

    Returns
    -------
    tuple of str or None
        None for arrays, sparse matrices and frames with a non-string column name
        (scikit-learn's rule for ``feature_names_in_``).
    """
    columns = getattr(X, "columns", None)
    if columns is None or hasattr(X, "nnz"):
        return None
    names = [c for c in columns]
    return tuple(names) if names and all(isinstance(c, str) for c in names) else None


def check_feature_names(X, names):
    """Refuse a DataFrame whose columns are not the training columns in the training order.

    Parameters
    ----------
    X : object
        The input to score.
    names : sequence of str or None
        The training columns (None: the model was trained on an array; nothing to check).

    Raises
    ------
    RateoptError
        If ``X`` has string column names that differ from ``names`` (missing,
        unexpected or reordered columns, each named).
    """
    if names is None:
        return
    got = feature_names_of(X)
    if got is None or tuple(got) == tuple(names):
        return
    want = list(names)
    missing = [c for c in want if c not in got]
    extra = [c for c in got if c not in want]
    if missing or extra:
        what = "; ".join(part for part in (f"missing {missing!r}" if missing else "",
                                           f"unexpected {extra!r}" if extra else "") if part)
    else:
        what = f"the same columns in another order: got {list(got)!r}"
    raise RateoptError(f"X's columns differ from the training columns {want!r} ({what}); "
                       "select them in the training order, e.g. X[model.feature_names_in_]")


def checked_feature_names(names, n_features):
    """A classifier's ``feature_names`` argument as its ``feature_names_in_``: an object array of ``n_features``
    distinct strings, or None.

    Parameters
    ----------
    names : sequence of str or None
        The training columns, in order.
    n_features : int
        The classifier's raw input width.

    Returns
    -------
    ndarray of object or None

    Raises
    ------
    ValueError
        If ``names`` is not ``n_features`` distinct strings.
    """
    if names is None:
        return None
    arr = np.asarray(list(names) if not isinstance(names, str) else [names], dtype=object)
    if (arr.ndim != 1 or arr.shape[0] != n_features or not all(isinstance(c, str) for c in arr)
            or len(set(arr.tolist())) != arr.shape[0]):
        raise ValueError(f"feature_names must be {n_features} distinct strings (one per input column), "
                         f"got {list(arr.reshape(-1)) if arr.ndim else names!r}")
    return arr


def raw_features(X, n_features, feature_map, feature_names=None):
    """Validate X against the model's raw input (its width, and its column names when it has them); returns
    the FeatureMatrix.

    Every classifier reads its input through this function, so a DataFrame's
    columns are checked against the training columns (:func:`check_feature_names`)
    in one place.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    n_features : int
        The width of a linear model's weights (ignored with a feature map).
    feature_map : NystroemMap or None
    feature_names : sequence of str, default=None
        The training columns (the classifier's ``feature_names_in_``); None:
        no names to check.

    Returns
    -------
    FeatureMatrix
    """
    check_feature_names(X, feature_names)
    Xm = FeatureMatrix(X)
    want = feature_map.n_features_in_ if feature_map is not None else n_features
    if Xm.n_features != want:
        raise ValueError(f"X has {Xm.n_features} features, but the model was trained with {want}")
    return Xm


def linear_scores(Xm, weights, biases, feature_map=None, *, core_pass=False):
    """(n_samples, n_outputs) scores in float64.

    For a kernel model the features are streamed: one chunk of kernel values
    exists at a time.

    Parameters
    ----------
    Xm : FeatureMatrix
    weights : ndarray of shape (n_outputs, n_features)
    biases : ndarray of shape (n_outputs,)
    feature_map : NystroemMap, default=None
    core_pass : bool, default=False
        Score raw features with the core's multi-output pass
        (:func:`rateopt.core.multiclass_scores`: OpenMP, the same per-row
        arithmetic as the K-class training pass, so a prediction's argmax is
        the one training counted). Two-class models keep the NumPy product,
        whose sums their saved results were computed with.

    Returns
    -------
    ndarray of shape (n_samples, n_outputs)
    """
    W = np.asarray(weights, dtype=np.float64)
    if feature_map is None and core_pass:
        return multiclass_scores(Xm, W.T, np.asarray(biases, dtype=np.float64))
    if feature_map is None:
        if Xm.dtype == np.float64:
            return np.asarray(Xm.data @ W.T, dtype=np.float64) + biases
        # float32 X times float64 weights: NumPy and scipy upcast the whole of X
        # to float64 first (a second, twice larger copy of the data); score a
        # bounded block of rows at a time instead (same float64 sums per row).
        S = np.empty((Xm.n_samples, W.shape[0]))
        for start, stop in _row_blocks(Xm):
            S[start:stop] = Xm.data[start:stop] @ W.T
        return S + biases
    S = np.empty((Xm.n_samples, W.shape[0]))
    Wphi = feature_map.whitening @ W.T  # fold the whitening into the weights: K @ (U s^-1/2 W^T)
    for start, stop, K in feature_map.iter_kernel_chunks(Xm):
        S[start:stop] = K @ Wphi
    return S + biases


def _row_blocks(Xm):
    """``(start, stop)`` row ranges of about :data:`_SCORE_BLOCK_VALUES` stored values each."""
    stored = Xm.data.nnz if Xm.is_sparse else Xm.n_samples * Xm.n_features
    step = max(1, int(_SCORE_BLOCK_VALUES * Xm.n_samples // max(1, stored)))
    return [(s, min(Xm.n_samples, s + step)) for s in range(0, Xm.n_samples, step)]
