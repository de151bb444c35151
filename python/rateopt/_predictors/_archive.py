"""The saved form of every linear classifier: one ``.npz`` of arrays plus JSON metadata, written and read once.

A model file holds ``weights`` (n_models, n_features) for two classes or
(n_models, n_classes, n_features) for K classes, ``biases`` (the weights'
shape without the last axis), ``probabilities`` (n_models,) and, for a kernel
model, the Nystroem map's ``landmarks`` and ``whitening``. Nothing is pickled
(``rateopt.load``, :mod:`rateopt._io`); every field is validated on reading.
"""

from __future__ import annotations

import numpy as np

from .._utils._archive import damaged, meta_number, real_array, write_archive
from ..exceptions import RateoptError
from ._nystroem import KERNELS, NystroemMap

__all__ = ["map_meta", "map_arrays", "feature_map_from_file", "class_labels_meta", "write_model", "read_model"]


def map_meta(feature_map):
    """The JSON part of a saved kernel feature map (None for a linear model)."""
    return None if feature_map is None else feature_map.params()


def map_arrays(feature_map):
    """The arrays of a saved kernel feature map (none for a linear model)."""
    if feature_map is None:
        return {}
    return {"landmarks": feature_map.landmarks, "whitening": feature_map.whitening}


def class_labels_meta(classes) -> list:
    """The class labels as JSON values (numbers, strings, booleans), for a file's metadata."""
    out = []
    for c in np.asarray(classes).tolist():
        if not isinstance(c, (bool, int, float, str)):
            raise RateoptError(f"cannot save class label {c!r} of type {type(c).__name__}: labels must be "
                               "numbers, strings or booleans")
        out.append(c)
    return out


def write_model(path, meta, weights, biases, probabilities, feature_map, format_name):
    """Write a linear model (or mixture) file: ``meta`` plus the arrays of the module docstring.

    Parameters
    ----------
    path : str or os.PathLike
    meta : dict
        The kind-specific metadata (``kind``, ...); ``n_features`` and ``feature_map`` are added.
    weights, biases, probabilities : ndarray
    feature_map : NystroemMap or None
    format_name : str
    """
    n_features = weights.shape[-1] if feature_map is None else feature_map.n_features_in_
    meta = {**meta, "n_features": int(n_features), "feature_map": map_meta(feature_map)}
    write_archive(path, meta, {"weights": weights, "biases": biases, "probabilities": probabilities,
                               **map_arrays(feature_map)}, format_name)


def read_model(meta, arrays, path, weights_ndim):
    """The validated arrays of a model file: ``(weights, biases, probabilities, feature_map)``.

    Parameters
    ----------
    meta : dict
    arrays : dict of str to ndarray
    path : str
    weights_ndim : int
        2 for two-class models, 3 for K-class ones.

    Returns
    -------
    tuple
        The probabilities are checked for shape only (the caller checks their values).
    """
    n_features = meta.get("n_features")
    if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
        raise damaged(path, "metadata.n_features", f"is {n_features!r}, expected an integer >= 1")
    W = real_array(arrays, "weights", weights_ndim, path)
    if W.shape[0] < 1:
        raise damaged(path, "weights", "holds no model")
    n_models = W.shape[0]
    b = real_array(arrays, "biases", weights_ndim - 1, path)
    p = real_array(arrays, "probabilities", 1, path)
    if b.shape != W.shape[:-1]:
        raise damaged(path, "biases", f"has {b.shape[0]} entries for {n_models} models (rows of 'weights')"
                      if weights_ndim == 2 else f"has shape {b.shape}, expected {W.shape[:-1]}")
    if p.shape[0] != n_models:
        raise damaged(path, "probabilities", f"has {p.shape[0]} entries for {n_models} models (rows of 'weights')")
    fmap = feature_map_from_file(meta.get("feature_map"), arrays, path)
    if fmap is None:
        if W.shape[-1] != n_features:
            raise damaged(path, "weights", f"has {W.shape[-1]} columns but metadata.n_features is {n_features}")
    else:
        if fmap.n_features_in_ != n_features:
            raise damaged(path, "landmarks", f"has {fmap.n_features_in_} columns but metadata.n_features is "
                                              f"{n_features}")
        if W.shape[-1] != fmap.n_components_:
            raise damaged(path, "weights", f"has {W.shape[-1]} columns but the kernel model has "
                                            f"{fmap.n_components_} features (columns of 'whitening')")
    return W, b, p, fmap


def feature_map_from_file(meta, arrays, path):
    """The kernel feature map a file describes (None for a linear model; every field validated)."""
    if meta is None:
        for name in ("landmarks", "whitening"):
            if name in arrays:
                raise damaged(path, name, "is present but the metadata describe no kernel model")
        return None
    where = "metadata.feature_map"
    if not isinstance(meta, dict) or meta.get("kind") != "nystroem":
        raise damaged(path, where, f"is {meta!r}, expected a Nystroem kernel map")
    if meta.get("kernel") not in KERNELS:
        raise damaged(path, f"{where}.kernel", f"is {meta.get('kernel')!r}, expected one of {tuple(KERNELS)}")
    gamma = meta_number(meta, "gamma", path, where=where, minimum=0.0, strict=True)
    degree = meta_number(meta, "degree", path, where=where, minimum=0.0)
    coef0 = meta_number(meta, "coef0", path, where=where)
    dtype = meta.get("dtype", "float32")
    if dtype not in ("float32", "float64"):
        raise damaged(path, f"{where}.dtype", f"is {dtype!r}, expected 'float32' or 'float64'")
    B = real_array(arrays, "landmarks", 2, path)
    Wh = real_array(arrays, "whitening", 2, path)
    if B.shape[0] < 1 or B.shape[1] < 1:
        raise damaged(path, "landmarks", f"has shape {B.shape}, expected at least one landmark and one feature")
    if Wh.shape[0] != B.shape[0] or Wh.shape[1] < 1:
        raise damaged(path, "whitening", f"has shape {Wh.shape}, expected ({B.shape[0]}, n_components) "
                                          "(one row per landmark)")
    return NystroemMap(meta["kernel"], gamma, degree, coef0, B, Wh, np.dtype(dtype))
