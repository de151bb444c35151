"""Two-class classifiers: deterministic linear models, their stochastic mixtures, and the ramp rule.

A rate-constrained training run ends with either one model (the last or the
best iterate) or a *mixture* of models (m-stochastic, T-stochastic): the
mixture classifies each example with one support model drawn with the mixture's
probabilities. Its expected rates are the probability-weighted rates of the
support models, which is what the constraints were met for.

Every classifier here follows rateopt's one convention (shared with
:class:`~rateopt.MulticlassClassifier`): ``predict_proba`` is (n_samples,
n_classes) (here ``[P(0), P(1)]``), ``coef_`` is (n_outputs, n_features) and
``intercept_`` (n_outputs,) (here one output), scores come from
:mod:`._scoring`, draws from :mod:`._draws` (``predict(X, random_state=...,
row_key=None)``) and files from :mod:`._archive`.
"""

from __future__ import annotations

import numpy as np

from .._utils._archive import damaged
from ..exceptions import RateoptError
from ._archive import feature_map_from_file, feature_names_from_meta, map_arrays, map_meta, read_model, write_model
from ._draws import VoteMixture, check_row_key, is_distribution, row_uniforms, two_columns
from ._scoring import checked_feature_names, linear_scores, raw_features

__all__ = ["LinearClassifier", "StochasticClassifier", "RampClassifier", "FORMAT_NAME", "BINARY_CLASSES",
           "classifier_from_file", "feature_map_from_file", "map_meta", "map_arrays"]

#: The format name of a saved classifier (``rateopt.load`` reads it).
FORMAT_NAME = "rateopt-model"

#: The class labels of rateopt's two-class classifiers: column ``k`` of ``predict_proba`` is class ``k``.
BINARY_CLASSES = np.array([0, 1])


class LinearClassifier:
    """A deterministic linear classifier: positive iff ``x . coef + intercept >= 0``.

    Parameters
    ----------
    coef : array-like of shape (n_features,) or (1, n_features)
        Weights.
    intercept : float or array-like of shape (1,), default=0.0
        Bias.
    feature_map : NystroemMap, default=None
        The kernel feature map of a kernel model.
    feature_names : sequence of str, default=None
        The training columns, in order (a model trained on a DataFrame); a
        DataFrame to score must then have these columns in this order.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
        The weights (one output, scikit-learn's binary convention).
    intercept_ : ndarray of shape (1,)
    classes_ : ndarray ``[0, 1]``
    n_features_in_ : int
    feature_names_in_ : ndarray of str or None
        The training columns (``feature_names``), or None.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt import LinearClassifier
    >>> clf = LinearClassifier([1.0, -1.0], 0.0)
    >>> clf.predict(np.array([[2.0, 1.0], [0.0, 3.0]])).tolist()
    [1, 0]
    >>> clf.predict_proba(np.array([[2.0, 1.0]])).tolist()
    [[0.0, 1.0]]
    """

    kind = "deterministic"
    classes_ = BINARY_CLASSES

    def __init__(self, coef, intercept=0.0, feature_map=None, *, feature_names=None):
        self.coef_ = np.array(coef, dtype=np.float64).reshape(1, -1)
        self.intercept_ = np.array(intercept, dtype=np.float64).reshape(-1)
        if self.intercept_.shape != (1,):
            raise ValueError(f"intercept must be one number, got shape {np.shape(intercept)}")
        if not (np.all(np.isfinite(self.coef_)) and np.all(np.isfinite(self.intercept_))):
            raise ValueError("coef and intercept must be finite")
        self.feature_map = feature_map
        if feature_map is not None and feature_map.n_components_ != self.coef_.shape[1]:
            raise ValueError("coef must have one weight per kernel feature")
        self.n_features_in_ = self.coef_.shape[1] if feature_map is None else feature_map.n_features_in_
        self.feature_names_in_ = checked_feature_names(feature_names, self.n_features_in_)

    def decision_function(self, X):
        """Compute the scores ``s = x . coef + intercept``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The rows to score.

        Returns
        -------
        ndarray of shape (n_samples,)
            The scores.
        """
        Xm = raw_features(X, self.n_features_in_, self.feature_map, self.feature_names_in_)
        return linear_scores(Xm, self.coef_, self.intercept_, self.feature_map)[:, 0]

    def predict(self, X, random_state=None, row_key=None):
        """0/1 decisions (1 iff the score is >= 0). ``random_state`` is ignored.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        random_state : ignored
            Accepted so deterministic and stochastic classifiers share a signature.
        row_key : array-like of shape (n_samples,), default=None
            Row ids (checked, otherwise unused: the decisions draw nothing).

        Returns
        -------
        ndarray of int of shape (n_samples,)
        """
        d = (self.decision_function(X) >= 0).astype(np.int64)
        check_row_key(row_key, d.shape[0])
        return d

    def predict_proba(self, X):
        """Probability of each decision (0 or 1 for a deterministic model).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Column ``k`` is the probability of decision ``k`` (``[:, 1]``: the positive one).
        """
        return two_columns(self.predict(X).astype(np.float64))

    def save(self, path):
        """Save to ``path`` (``.npz``; no pickle). See :func:`rateopt.load`.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        """
        write_model(path, {"kind": self.kind}, self.coef_, self.intercept_, np.ones(1), self.feature_map,
                    FORMAT_NAME, self.feature_names_in_)

    def __repr__(self):
        return f"LinearClassifier(n_features={self.n_features_in_})"


class StochasticClassifier(VoteMixture):
    """A mixture of linear models; each example is classified by one drawn model.

    Parameters
    ----------
    weights : array-like of shape (n_models, n_features)
        The support models' weights.
    biases : array-like of shape (n_models,)
        Their intercepts.
    probabilities : array-like of shape (n_models,)
        Mixture probabilities (non-negative, summing to 1).
    feature_map : NystroemMap, default=None
        The kernel feature map of a kernel model.
    feature_names : sequence of str, default=None
        The training columns, in order (see :class:`LinearClassifier`).

    Attributes
    ----------
    weights_, biases_, probabilities_ : ndarray
    classes_ : ndarray ``[0, 1]``
    n_features_in_ : int
    feature_names_in_ : ndarray of str or None
        The training columns (``feature_names``), or None.

    Notes
    -----
    :meth:`predict` draws the support model of each row from a uniform number
    keyed on ``random_state`` and either the row's id (``row_key``) or the
    row's content and its occurrence among identical rows of the batch
    (:mod:`rateopt._predictors._draws`): the same input gives the same
    decisions, identical rows get independent draws, and with ``row_key`` a
    row gets the same decision in any batch and order.
    :meth:`predict_proba` is the exact probability of each decision.
    """

    kind = "stochastic"
    classes_ = BINARY_CLASSES

    def __init__(self, weights, biases, probabilities, feature_map=None, *, feature_names=None):
        W = np.array(weights, dtype=np.float64)
        if W.ndim != 2 or W.shape[0] == 0:
            raise ValueError("weights must be a non-empty 2-D array (n_models, n_features)")
        b = np.array(biases, dtype=np.float64).reshape(-1)
        p = np.array(probabilities, dtype=np.float64).reshape(-1)
        if b.shape[0] != W.shape[0] or p.shape[0] != W.shape[0]:
            raise ValueError("weights, biases and probabilities must describe the same number of models")
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b)) and np.all(np.isfinite(p))):
            raise ValueError("weights, biases and probabilities must be finite")
        if not is_distribution(p):
            raise ValueError("probabilities must be non-negative and sum to 1")
        # Kept as given (validated above), so that save/load round-trips bit for bit.
        self.weights_, self.biases_, self.probabilities_ = W, b, p
        self.feature_map = feature_map
        if feature_map is not None and feature_map.n_components_ != W.shape[1]:
            raise ValueError("weights must have one column per kernel feature")
        self.n_features_in_ = W.shape[1] if feature_map is None else feature_map.n_features_in_
        self.feature_names_in_ = checked_feature_names(feature_names, self.n_features_in_)

    @property
    def n_models(self):
        """Number of support models."""
        return self.weights_.shape[0]

    def scores(self, X):
        """Every support model's scores, shape (n_samples, n_models)."""
        return linear_scores(self._features(X), self.weights_, self.biases_, self.feature_map)

    def _features(self, X):
        return raw_features(X, self.n_features_in_, self.feature_map, self.feature_names_in_)

    def _votes(self, Xm):
        return (linear_scores(Xm, self.weights_, self.biases_, self.feature_map) >= 0).astype(np.int64)

    def save(self, path):
        """Save to ``path`` (``.npz``; no pickle). See :func:`rateopt.load`."""
        write_model(path, {"kind": self.kind}, self.weights_, self.biases_, self.probabilities_, self.feature_map,
                    FORMAT_NAME, self.feature_names_in_)

    def __repr__(self):
        return f"StochasticClassifier(n_models={self.n_models}, n_features={self.n_features_in_})"


def classifier_from_file(meta, arrays, path):
    """Rebuild a classifier saved under :data:`FORMAT_NAME` (every field validated; see ``rateopt.load``)."""
    kind = meta.get("kind")
    if kind not in ("deterministic", "stochastic", "ramp-randomized"):
        raise RateoptError(f"{path!r} holds an unknown classifier kind {kind!r}")
    W, b, p, fmap = read_model(meta, arrays, path, 2)
    names = feature_names_from_meta(meta, W.shape[1] if fmap is None else fmap.n_features_in_, path)
    n_models = W.shape[0]
    if kind in ("deterministic", "ramp-randomized"):
        if n_models != 1:
            raise damaged(path, "weights", f"holds {n_models} models; a {kind} classifier has one")
        if p[0] != 1.0:
            raise damaged(path, "probabilities", f"is {p.tolist()}; a {kind} classifier has [1.0]")
        cls = LinearClassifier if kind == "deterministic" else RampClassifier
        return cls(W[0], float(b[0]), feature_map=fmap, feature_names=names)
    if not is_distribution(p):
        raise damaged(path, "probabilities", f"must be non-negative and sum to 1 (sum {p.sum()!r})")
    return StochasticClassifier(W, b, p, feature_map=fmap, feature_names=names)


class RampClassifier(LinearClassifier):
    """Goh et al. (2016)'s randomized rule: a linear score, positive with probability ``clip(1/2 + s, 0, 1)``.

    The expected rates of this classifier on a dataset are the ramp rates of
    its score (:func:`rateopt.core.ramp_rates`), so a model meeting ramp-loss
    constraints (:func:`rateopt.ramp_mm`) meets them in expectation exactly.

    Parameters
    ----------
    coef : array-like of shape (n_features,)
        Weights (one per kernel feature for a kernel model).
    intercept : float, default=0.0
        Bias.
    feature_map : NystroemMap, default=None
        The kernel feature map of a kernel model.
    feature_names : sequence of str, default=None
        The training columns, in order (see :class:`LinearClassifier`).

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
        The weights.
    intercept_ : ndarray of shape (1,)
        The bias.
    n_features_in_ : int
        The raw input width.
    feature_names_in_ : ndarray of str or None
        The training columns (``feature_names``), or None.

    Notes
    -----
    :meth:`predict` draws each row's decision from the uniform number
    :class:`StochasticClassifier` uses (keyed on ``random_state`` and the
    row's id, or its content and occurrence in the batch): positive iff
    ``u < clip(1/2 + s, 0, 1)``; :meth:`predict_proba` is its exact probability.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt import RampClassifier
    >>> clf = RampClassifier([1.0], 0.0)
    >>> clf.predict_proba(np.array([[-1.0], [0.25], [2.0]]))[:, 1].tolist()
    [0.0, 0.75, 1.0]
    """

    kind = "ramp-randomized"

    def predict_proba(self, X):
        """Probability of a positive decision, ``clip(1/2 + s, 0, 1)``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The rows to classify.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            ``[1 - p, p]`` with ``p = clip(1/2 + s, 0, 1)``.
        """
        return two_columns(np.clip(0.5 + self.decision_function(X), 0.0, 1.0))

    def predict(self, X, random_state=0, row_key=None):
        """Sampled 0/1 decisions: positive iff the row's uniform number is below its probability.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The rows to classify.
        random_state : int, default=0
            Seed of the draws.
        row_key : array-like of shape (n_samples,), default=None
            Row ids (see :meth:`StochasticClassifier.predict`).

        Returns
        -------
        ndarray of int of shape (n_samples,)
            The decisions.
        """
        Xm = raw_features(X, self.n_features_in_, self.feature_map, self.feature_names_in_)
        p = np.clip(0.5 + linear_scores(Xm, self.coef_, self.intercept_, self.feature_map)[:, 0], 0.0, 1.0)
        return (row_uniforms(Xm.data, random_state, row_key) < p).astype(np.int64)

    def __repr__(self):
        return f"RampClassifier(n_features={self.n_features_in_})"

