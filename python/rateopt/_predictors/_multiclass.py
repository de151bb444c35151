"""K-class linear and kernel classifiers, and their stochastic mixtures.

A :class:`MulticlassClassifier` holds ``T >= 1`` multinomial linear models
(``K`` score columns each: ``s_k(x) = x . coef[k] + intercept[k]``, on a
kernel model's Nystroem features when it has a feature map) and mixture
probabilities over them. Each model predicts the class of its largest score
(the lowest class position on ties). With one model the classifier is
deterministic; with several, each row is classified by one model drawn by
rateopt's one draw convention (:mod:`._draws`: keyed on ``random_state`` and
the row's id, or its content and occurrence in the batch), and
:meth:`~MulticlassClassifier.predict_proba` is the exact decision distribution
``sum_t p_t onehot(argmax_k s_tk(x))``.

The scores of all ``T x K`` columns come from the shared scorer
(:mod:`._scoring`, one product with the stacked weights; a kernel model's one
chunk of kernel values at a time), and files from :mod:`._archive`.
"""

from __future__ import annotations

import numpy as np

from .._utils._archive import damaged
from ._archive import class_labels_from_meta, class_labels_meta, feature_names_from_meta, read_model, write_model
from ._draws import VoteMixture, is_distribution
from ._scoring import checked_feature_names, linear_scores, raw_features

__all__ = ["MulticlassClassifier", "MULTICLASS_FORMAT", "multiclass_classifier_from_file", "class_labels_meta"]

#: The format name of a saved K-class classifier (``rateopt.load`` reads it).
MULTICLASS_FORMAT = "rateopt-multiclass-model"


class MulticlassClassifier(VoteMixture):
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
    feature_names : sequence of str, default=None
        The training DataFrame's column names (``n_features_in_`` distinct
        strings). With them, a DataFrame given to any prediction method must
        have these columns in this order (a :class:`~rateopt.exceptions.RateoptError`
        names the missing, unexpected or reordered ones); arrays are read by
        position. :meth:`~rateopt.TrainResult.solution` passes the training columns.

    Attributes
    ----------
    coefs_, intercepts_, probabilities_, classes_
        As given (float64 arrays; ``classes_`` as an array).
    n_models, n_classes : int
    n_features_in_ : int
        The raw input width.
    feature_names_in_ : ndarray of str or None
        The training columns (``feature_names``), or None.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt import MulticlassClassifier
    >>> clf = MulticlassClassifier([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]], [[0.0, 0.0, 0.5]],
    ...                            classes=["a", "b", "c"])
    >>> clf.predict(np.array([[2.0, 1.0], [0.0, 3.0], [-1.0, -1.0]])).tolist()
    ['a', 'b', 'c']
    """

    def __init__(self, coefs, intercepts, probabilities=None, *, classes, feature_map=None, feature_names=None):
        W = np.array(coefs, dtype=np.float64)
        b = np.array(intercepts, dtype=np.float64)
        if W.ndim != 3 or W.shape[0] < 1 or W.shape[1] < 2:
            raise ValueError(f"coefs must have shape (n_models, n_classes >= 2, n_features), got {W.shape}")
        if b.shape != W.shape[:2]:
            raise ValueError(f"intercepts must have shape {W.shape[:2]}, got {b.shape}")
        p = np.ones(1) if probabilities is None else np.array(probabilities, dtype=np.float64).reshape(-1)
        if p.shape != (W.shape[0],) or not is_distribution(p):
            raise ValueError(f"probabilities must be {W.shape[0]} non-negative numbers summing to 1")
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b))):
            raise ValueError("coefs and intercepts must be finite")
        cls = np.asarray(classes)
        if cls.shape != (W.shape[1],):
            raise ValueError(f"classes must hold {W.shape[1]} labels (one per score column), got shape {cls.shape}")
        labels = cls.tolist()
        if len(set(labels)) != len(labels):
            repeated = sorted({repr(v) for v in labels if sum(u == v for u in labels) > 1})
            raise ValueError(f"classes must be distinct labels, got repeated {', '.join(repeated)} in {labels!r}")
        if feature_map is not None and feature_map.n_components_ != W.shape[2]:
            raise ValueError("coefs must have one weight per kernel feature")
        self.coefs_, self.intercepts_, self.probabilities_ = W, b, p
        self.classes_ = cls
        self.feature_map = feature_map
        self.n_models, self.n_classes = W.shape[0], W.shape[1]
        self.n_features_in_ = W.shape[2] if feature_map is None else feature_map.n_features_in_
        self.feature_names_in_ = checked_feature_names(feature_names, self.n_features_in_)
        # the (n_models * n_classes, n_features) outputs of the shared scorer
        self._stacked = W.reshape(-1, W.shape[2])

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

    def _features(self, X):
        return raw_features(X, self.n_features_in_, self.feature_map, self.feature_names_in_)

    def _all_scores(self, Xm):
        """The (n, n_models, n_classes) scores."""
        S = linear_scores(Xm, self._stacked, self.intercepts_.reshape(-1), self.feature_map, core_pass=True)
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
        return self._all_scores(self._features(X))[:, 0, :]

    def _votes(self, Xm):
        return np.argmax(self._all_scores(Xm), axis=2)  # (n, T)

    def save(self, path):
        """Save to ``path`` (``.npz``, no pickle); :func:`rateopt.load` reads it back.

        Parameters
        ----------
        path : str or os.PathLike
        """
        meta = {"kind": "multiclass", "classes": class_labels_meta(self.classes_)}
        write_model(path, meta, self.coefs_, self.intercepts_, self.probabilities_, self.feature_map,
                    MULTICLASS_FORMAT, self.feature_names_in_)

    def __repr__(self) -> str:
        return (f"MulticlassClassifier(n_models={self.n_models}, n_classes={self.n_classes}, "
                f"n_features={self.n_features_in_})")


def multiclass_classifier_from_file(meta, arrays, path):
    """Rebuild a :class:`MulticlassClassifier` saved under :data:`MULTICLASS_FORMAT` (every field validated)."""
    classes = class_labels_from_meta(meta.get("classes"), path)
    W, b, p, fmap = read_model(meta, arrays, path, 3)
    if W.shape[1] != len(classes):
        raise damaged(path, "weights", f"has shape {W.shape}, expected (n_models >= 1, {len(classes)}, n_features)")
    if not is_distribution(p):
        raise damaged(path, "probabilities", f"must hold {W.shape[0]} non-negative numbers summing to 1")
    names = feature_names_from_meta(meta, W.shape[2] if fmap is None else fmap.n_features_in_, path)
    return MulticlassClassifier(W, b, p, classes=classes, feature_map=fmap, feature_names=names)
