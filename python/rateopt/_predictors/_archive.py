"""The saved form of every linear classifier: one ``.npz`` of arrays plus JSON metadata, written and read once.

A model file holds ``weights`` (n_models, n_features) for two classes or
(n_models, n_classes, n_features) for K classes, ``biases`` (the weights'
shape without the last axis), ``probabilities`` (n_models,) and, for a kernel
model, the Nystroem map's ``landmarks`` and ``whitening``. Nothing is pickled
(``rateopt.load``, :mod:`rateopt._io`); every field is validated on reading.
"""

from __future__ import annotations

import math

import numpy as np

from .._utils._archive import damaged, meta_number, real_array, write_archive
from ..exceptions import RateoptError
from ._nystroem import KERNELS, NystroemMap

__all__ = ["map_meta", "map_arrays", "feature_map_from_file", "class_labels_meta", "class_labels_from_meta",
           "class_labels_problem", "write_model", "read_model", "feature_names_meta",
           "feature_names_from_meta"]


def map_meta(feature_map):
    """The JSON part of a saved kernel feature map (None for a linear model)."""
    return None if feature_map is None else feature_map.params()


def map_arrays(feature_map):
    """The arrays of a saved kernel feature map (none for a linear model)."""
    if feature_map is None:
        return {}
    return {"landmarks": feature_map.landmarks, "whitening": feature_map.whitening}


def class_labels_problem(classes, n=None, *, ordered=False):
    """What is wrong with a list of class labels as a file stores them (None: nothing).

    Labels must be JSON scalars of one type (all strings, all integers, all
    floats or all booleans), finite, distinct and, with ``ordered``, ascending
    (the order ``np.unique`` gives, which ``fit`` writes). Mixed types are
    refused because NumPy turns ``["a", 1, 2]`` into strings and ``[1, 2.5]``
    into floats, so the loaded labels would not be the saved ones; ``1``,
    ``1.0`` and ``true`` are equal and would collapse.

    Parameters
    ----------
    classes : object
        The labels (a list, as read from a file's JSON metadata).
    n : int, default=None
        The number of labels expected (None: at least 2).
    ordered : bool, default=False
        Require ascending order.

    Returns
    -------
    str or None
        A phrase for an error message ("expected ..."), or None.
    """
    if not isinstance(classes, list):
        return "expected a list of class labels"
    if len(classes) != n if n is not None else len(classes) < 2:
        return f"expected {n if n is not None else 'at least 2'} class labels"
    types = {type(c) for c in classes}
    if not types <= {bool, int, float, str}:
        return "expected labels that are numbers, strings or booleans (not null)"
    if len(types) != 1:
        return "expected labels of one type (all strings, all integers, all floats or all booleans)"
    if float in types and not all(math.isfinite(c) for c in classes):
        return "expected finite labels (not NaN or Infinity)"
    if int in types and not all(-2**63 <= c < 2**63 for c in classes):
        return "expected integer labels within the int64 range"
    if len(set(classes)) != len(classes):
        return "expected distinct labels"
    if ordered and any(a >= b for a, b in zip(classes, classes[1:])):
        return f"expected the labels in ascending order ({sorted(classes)!r}), the order fit writes"
    return None


def class_labels_meta(classes, *, ordered=False) -> list:
    """The class labels as JSON values (numbers, strings, booleans), for a file's metadata.

    Parameters
    ----------
    classes : array-like
    ordered : bool, default=False
        The reader requires ascending labels (see :func:`class_labels_problem`).

    Returns
    -------
    list

    Raises
    ------
    RateoptError
        If the labels could not be read back as they are (see :func:`class_labels_problem`).
    """
    out = [c.item() if isinstance(c, np.generic) else c for c in np.asarray(classes).tolist()]
    problem = class_labels_problem(out, ordered=ordered)
    if problem is not None:
        raise RateoptError(f"cannot save the class labels {out!r}: {problem}")
    return out


def class_labels_from_meta(classes, path):
    """A file's class labels (``metadata.classes``), checked (:func:`class_labels_problem`), as an array.

    Parameters
    ----------
    classes : object
        As read from the file's metadata.
    path : str

    Returns
    -------
    ndarray of shape (n_classes,)

    Raises
    ------
    RateoptError
        One line naming the file and the field.
    """
    problem = class_labels_problem(classes)
    if problem is not None:
        raise damaged(path, "metadata.classes", f"is {classes!r}, {problem}")
    return np.array(classes)


def write_model(path, meta, weights, biases, probabilities, feature_map, format_name, feature_names=None,
                extra_arrays=None):
    """Write a linear model (or mixture) file: ``meta`` plus the arrays of the module docstring.

    Parameters
    ----------
    path : str or os.PathLike
    meta : dict
        The kind-specific metadata (``kind``, ...); ``n_features`` and ``feature_map`` are added.
    weights, biases, probabilities : ndarray
    feature_map : NystroemMap or None
    format_name : str
    feature_names : sequence of str, default=None
        The training columns (``feature_names_in_``), saved as ``metadata.feature_names`` when given.
    extra_arrays : dict of str to ndarray, default=None
        A kind's own arrays beside the model's (e.g. a K-class thresholded mixture's rules).
    """
    n_features = weights.shape[-1] if feature_map is None else feature_map.n_features_in_
    meta = {**meta, "n_features": int(n_features), "feature_map": map_meta(feature_map),
            **feature_names_meta(feature_names)}
    write_archive(path, meta, {"weights": weights, "biases": biases, "probabilities": probabilities,
                               **map_arrays(feature_map), **(extra_arrays or {})}, format_name)


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


def feature_names_meta(feature_names):
    """The metadata field ``feature_names`` (the training columns, as strings) that
    :func:`feature_names_from_meta` reads: ``{}`` when there are none."""
    return {} if feature_names is None else {"feature_names": [str(c) for c in feature_names]}


def feature_names_from_meta(meta, n_features, path):
    """A file's ``metadata.feature_names``: None (absent: files written before names were saved) or a list of
    ``n_features`` distinct strings.

    Raises
    ------
    RateoptError
        One line naming the file and the field.
    """
    names = meta.get("feature_names")
    if names is not None and (not isinstance(names, list) or len(names) != n_features
                              or not all(isinstance(c, str) for c in names) or len(set(names)) != len(names)):
        raise damaged(path, "metadata.feature_names", f"is {names!r}, expected {n_features} distinct column names")
    return names
