"""K-class linear and kernel classifiers, and their stochastic mixtures.

A :class:`MulticlassClassifier` holds ``T >= 1`` multinomial linear models
(``K`` score columns each: ``s_k(x) = x . coef[k] + intercept[k]``, on a
kernel model's Nystroem features when it has a feature map) and mixture
probabilities over them. Each model predicts the class of its largest score
(the lowest class position on ties). With one model the classifier is
deterministic; with several, each row is classified by one model drawn from a
uniform number keyed on the row's content and ``random_state`` (the same row
gets the same model in any batch), and :meth:`~MulticlassClassifier.predict_proba`
is the exact decision distribution ``sum_t p_t onehot(argmax_k s_tk(x))``.

The scores of all ``T x K`` columns come from one pass of the core
(:func:`rateopt.core.multiclass_scores`); a kernel model's are computed one
chunk of kernel values at a time, without its whole feature matrix.
"""

from __future__ import annotations

import numpy as np

from .. import core
from .._utils._archive import damaged, real_array, write_archive
from .._utils._hashing import row_uniforms
from .._utils._validation import check_seed
from ..core import FeatureMatrix
from ..exceptions import RateoptError
from ._linear import feature_map_from_file, map_arrays, map_meta

__all__ = ["MulticlassClassifier", "MULTICLASS_FORMAT", "multiclass_classifier_from_file", "class_labels_meta"]

#: The format name of a saved K-class classifier (``rateopt.load`` reads it).
MULTICLASS_FORMAT = "rateopt-multiclass-model"


def class_labels_meta(classes) -> list:
    """The class labels as JSON values (numbers, strings, booleans), for a file's metadata."""
    out = []
    for c in np.asarray(classes).tolist():
        if not isinstance(c, (bool, int, float, str)):
            raise RateoptError(f"cannot save class label {c!r} of type {type(c).__name__}: labels must be "
                               "numbers, strings or booleans")
        out.append(c)
    return out


class MulticlassClassifier:
    """A K-class linear (or kernel) classifier, or a stochastic mixture of them.

    Parameters
    ----------
    coefs : array-like of shape (n_models, n_classes, n_features)
        Each model's weights (one row per class).
    intercepts : array-like of shape (n_models, n_classes)
    probabilities : array-like of shape (n_models,), default=None
        Mixture probabilities (non-negative, summing to 1; default: one model).
    classes : array-like of shape (n_classes,)
        The class labels, in the score columns' order.
    feature_map : NystroemMap, default=None
        A kernel model's feature map (``n_features`` is then its number of components).

    Attributes
    ----------
    coefs_, intercepts_, probabilities_, classes_
        As given (float64 arrays; ``classes_`` as an array).
    n_models, n_classes : int
    n_features_in_ : int
        The raw input width.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt import MulticlassClassifier
    >>> clf = MulticlassClassifier([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]], [[0.0, 0.0, 0.5]],
    ...                            classes=["a", "b", "c"])
    >>> clf.predict(np.array([[2.0, 1.0], [0.0, 3.0], [-1.0, -1.0]])).tolist()
    ['a', 'b', 'c']
    """

    def __init__(self, coefs, intercepts, probabilities=None, *, classes, feature_map=None):
        W = np.array(coefs, dtype=np.float64)
        b = np.array(intercepts, dtype=np.float64)
        if W.ndim != 3 or W.shape[0] < 1 or W.shape[1] < 2:
            raise ValueError(f"coefs must have shape (n_models, n_classes >= 2, n_features), got {W.shape}")
        if b.shape != W.shape[:2]:
            raise ValueError(f"intercepts must have shape {W.shape[:2]}, got {b.shape}")
        p = np.ones(1) if probabilities is None else np.array(probabilities, dtype=np.float64).reshape(-1)
        if p.shape != (W.shape[0],) or np.any(~np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
            raise ValueError(f"probabilities must be {W.shape[0]} non-negative numbers summing to 1")
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b))):
            raise ValueError("coefs and intercepts must be finite")
        cls = np.asarray(classes)
        if cls.shape != (W.shape[1],):
            raise ValueError(f"classes must hold {W.shape[1]} labels (one per score column), got shape {cls.shape}")
        if feature_map is not None and feature_map.n_components_ != W.shape[2]:
            raise ValueError("coefs must have one weight per kernel feature")
        self.coefs_, self.intercepts_, self.probabilities_ = W, b, p
        self.classes_ = cls
        self.feature_map = feature_map
        self.n_models, self.n_classes = W.shape[0], W.shape[1]
        self.n_features_in_ = W.shape[2] if feature_map is None else feature_map.n_features_in_
        # the (n_features, n_models * n_classes) layout of the core's pass: one gather per feature
        self._stacked = np.ascontiguousarray(W.transpose(2, 0, 1).reshape(W.shape[2], -1))

    @property
    def kind(self) -> str:
        """``"deterministic"`` for one model, ``"stochastic"`` for a mixture."""
        return "deterministic" if self.n_models == 1 else "stochastic"

    @property
    def coef_(self) -> np.ndarray:
        """The weights (n_classes, n_features) of a deterministic classifier."""
        self._need_one("coef_")
        return self.coefs_[0]

    @property
    def intercept_(self) -> np.ndarray:
        """The intercepts (n_classes,) of a deterministic classifier."""
        self._need_one("intercept_")
        return self.intercepts_[0]

    def _need_one(self, what):
        if self.n_models != 1:
            raise AttributeError(f"{what} belongs to a deterministic classifier; this is a mixture of "
                                 f"{self.n_models} models (see coefs_)")

    def _raw(self, X):
        Xm = FeatureMatrix(X)
        if Xm.n_features != self.n_features_in_:
            raise ValueError(f"X has {Xm.n_features} features, but the model was trained with {self.n_features_in_}")
        return Xm

    def _all_scores(self, Xm):
        """The (n, n_models, n_classes) scores: one core pass over X, or a kernel model's features in chunks."""
        if self.feature_map is None:
            S = core.multiclass_scores(Xm, self._stacked, self.intercepts_.reshape(-1))
        else:  # one chunk of kernel values at a time, the whitening folded into the weights (as _linear._scores)
            S = np.empty((Xm.n_samples, self._stacked.shape[1]))
            W = self.feature_map.whitening @ self._stacked
            for start, stop, K in self.feature_map.iter_kernel_chunks(Xm):
                S[start:stop] = K @ W
            S += self.intercepts_.reshape(-1)
        return S.reshape(S.shape[0], self.n_models, self.n_classes)

    def decision_function(self, X):
        """The K scores of every row (a deterministic classifier's).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        self._need_one("decision_function")
        return self._all_scores(self._raw(X))[:, 0, :]

    def predict_index(self, X, random_state=None):
        """Each row's predicted class position (a mixture draws one model per row, keyed on the row).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        random_state : int or None, default=None
            Key of a mixture's draws; a row's draw depends only on this key and its content.

        Returns
        -------
        ndarray of int64 of shape (n_samples,)
        """
        Xm = self._raw(X)
        votes = np.argmax(self._all_scores(Xm), axis=2)  # (n, T)
        if self.n_models == 1:
            return votes[:, 0].astype(np.int64)
        seed = check_seed("random_state", random_state)
        u = row_uniforms(Xm.data, 0 if seed is None else seed)
        cdf = np.cumsum(self.probabilities_)
        cdf[-1] = 1.0
        pick = np.minimum(np.searchsorted(cdf, u, side="right"), self.n_models - 1)
        return votes[np.arange(votes.shape[0]), pick].astype(np.int64)

    def predict(self, X, random_state=None):
        """The predicted class labels.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        random_state : int or None, default=None
            Key of a mixture's per-row draws.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        return self.classes_[self.predict_index(X, random_state)]

    def predict_proba(self, X):
        """The exact decision distribution ``P(yhat = k | x)`` (one-hot for a deterministic classifier).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        votes = np.argmax(self._all_scores(self._raw(X)), axis=2)
        P = np.zeros((votes.shape[0], self.n_classes))
        for t in range(self.n_models):
            P[np.arange(votes.shape[0]), votes[:, t]] += self.probabilities_[t]
        return P / P.sum(axis=1, keepdims=True)

    def save(self, path):
        """Save to ``path`` (``.npz``, no pickle); :func:`rateopt.load` reads it back.

        Parameters
        ----------
        path : str or os.PathLike
        """
        meta = {"kind": "multiclass", "n_features": self.n_features_in_, "classes": class_labels_meta(self.classes_),
                "feature_map": map_meta(self.feature_map)}
        write_archive(path, meta, {"weights": self.coefs_, "biases": self.intercepts_,
                                   "probabilities": self.probabilities_, **map_arrays(self.feature_map)},
                      MULTICLASS_FORMAT)

    def __repr__(self) -> str:
        return (f"MulticlassClassifier(n_models={self.n_models}, n_classes={self.n_classes}, "
                f"n_features={self.n_features_in_})")


def multiclass_classifier_from_file(meta, arrays, path):
    """Rebuild a :class:`MulticlassClassifier` saved under :data:`MULTICLASS_FORMAT` (every field validated)."""
    classes = meta.get("classes")
    if not isinstance(classes, list) or len(classes) < 2 or len(set(map(repr, classes))) != len(classes):
        raise damaged(path, "metadata.classes", f"is {classes!r}, expected a list of >= 2 distinct labels")
    n_features = meta.get("n_features")
    if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
        raise damaged(path, "metadata.n_features", f"is {n_features!r}, expected an integer >= 1")
    W = real_array(arrays, "weights", 3, path)
    b = real_array(arrays, "biases", 2, path)
    p = real_array(arrays, "probabilities", 1, path)
    if W.shape[0] < 1 or W.shape[1] != len(classes):
        raise damaged(path, "weights", f"has shape {W.shape}, expected (n_models >= 1, {len(classes)}, n_features)")
    if b.shape != W.shape[:2]:
        raise damaged(path, "biases", f"has shape {b.shape}, expected {W.shape[:2]}")
    if p.shape != (W.shape[0],) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
        raise damaged(path, "probabilities", f"must hold {W.shape[0]} non-negative numbers summing to 1")
    fmap = feature_map_from_file(meta.get("feature_map"), arrays, path)
    width = W.shape[2] if fmap is None else fmap.n_features_in_
    if width != n_features or (fmap is not None and W.shape[2] != fmap.n_components_):
        raise damaged(path, "weights", f"does not match metadata.n_features={n_features} and the feature map")
    return MulticlassClassifier(W, b, p, classes=np.array(classes), feature_map=fmap)
