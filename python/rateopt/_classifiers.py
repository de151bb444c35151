"""Trained classifiers: deterministic linear models and stochastic mixtures.

A rate-constrained training run ends with either one model (the last or the
best iterate) or a *mixture* of models (m-stochastic, T-stochastic): the
mixture classifies each example with one support model drawn with the mixture's
probabilities. Its expected rates are the probability-weighted rates of the
support models, which is what the constraints were met for.

Both kinds save to a single ``.npz`` file holding NumPy arrays and one JSON
metadata entry; nothing is pickled (see :func:`load`).
"""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np

from ._hashing import row_uniforms
from .core import FeatureMatrix
from .exceptions import RateoptError

__all__ = ["LinearClassifier", "StochasticClassifier", "load", "FORMAT_NAME", "FORMAT_VERSION"]

FORMAT_NAME = "rateopt-model"
FORMAT_VERSION = 1
_META_KEY = "__rateopt_metadata__"


def _features(X, n_features):
    Xm = FeatureMatrix(X)
    if Xm.n_features != n_features:
        raise ValueError(f"X has {Xm.n_features} features, but the model was trained with {n_features}")
    return Xm.data


def _scores(X, weights, biases):
    """(n_samples, n_models) scores in float64 (float32 X is upcast by the product)."""
    return np.asarray(X @ np.asarray(weights, dtype=np.float64).T, dtype=np.float64) + biases


class LinearClassifier:
    """A deterministic linear classifier: positive iff ``x . coef + intercept >= 0``.

    Parameters
    ----------
    coef : array-like of shape (n_features,)
        Weights.
    intercept : float, default=0.0
        Bias.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt import LinearClassifier
    >>> clf = LinearClassifier([1.0, -1.0], 0.0)
    >>> clf.predict(np.array([[2.0, 1.0], [0.0, 3.0]])).tolist()
    [1, 0]
    """

    kind = "deterministic"

    def __init__(self, coef, intercept=0.0):
        self.coef_ = np.array(coef, dtype=np.float64).reshape(-1)
        self.intercept_ = float(intercept)
        if not (np.all(np.isfinite(self.coef_)) and np.isfinite(self.intercept_)):
            raise ValueError("coef and intercept must be finite")
        self.n_features_in_ = self.coef_.shape[0]

    def decision_function(self, X):
        """Scores ``X @ coef + intercept``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        D = _features(X, self.n_features_in_)
        return _scores(D, self.coef_[None, :], np.array([self.intercept_]))[:, 0]

    def predict(self, X, random_state=None):
        """0/1 decisions (1 iff the score is >= 0). ``random_state`` is ignored.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        random_state : ignored
            Accepted so deterministic and stochastic classifiers share a signature.

        Returns
        -------
        ndarray of int of shape (n_samples,)
        """
        return (self.decision_function(X) >= 0).astype(np.int64)

    def predict_proba(self, X):
        """Probability of a positive decision (0 or 1 for a deterministic model).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self.predict(X).astype(np.float64)

    def save(self, path):
        """Save to ``path`` (``.npz``; no pickle). See :func:`rateopt.load`."""
        _save(path, {"kind": self.kind, "n_features": self.n_features_in_},
              {"weights": self.coef_[None, :], "biases": np.array([self.intercept_]),
               "probabilities": np.ones(1)})

    def __repr__(self):
        return f"LinearClassifier(n_features={self.n_features_in_})"


class StochasticClassifier:
    """A mixture of linear models; each example is classified by one drawn model.

    Parameters
    ----------
    weights : array-like of shape (n_models, n_features)
        The support models' weights.
    biases : array-like of shape (n_models,)
        Their intercepts.
    probabilities : array-like of shape (n_models,)
        Mixture probabilities (non-negative, summing to 1).

    Attributes
    ----------
    weights_, biases_, probabilities_ : ndarray
    n_features_in_ : int

    Notes
    -----
    :meth:`predict` draws the support model of each row from a uniform number
    keyed on ``random_state`` and a hash of the row's content, so a row gets
    the same decision whatever batch, order or sparse/dense layout it arrives in.
    :meth:`predict_proba` is the exact probability of a positive decision.
    """

    kind = "stochastic"

    def __init__(self, weights, biases, probabilities):
        W = np.array(weights, dtype=np.float64)
        if W.ndim != 2 or W.shape[0] == 0:
            raise ValueError("weights must be a non-empty 2-D array (n_models, n_features)")
        b = np.array(biases, dtype=np.float64).reshape(-1)
        p = np.array(probabilities, dtype=np.float64).reshape(-1)
        if b.shape[0] != W.shape[0] or p.shape[0] != W.shape[0]:
            raise ValueError("weights, biases and probabilities must describe the same number of models")
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b)) and np.all(np.isfinite(p))):
            raise ValueError("weights, biases and probabilities must be finite")
        if np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
            raise ValueError("probabilities must be non-negative and sum to 1")
        self.weights_, self.biases_, self.probabilities_ = W, b, p / p.sum()
        self.n_features_in_ = W.shape[1]

    @property
    def n_models(self):
        """Number of support models."""
        return self.weights_.shape[0]

    def scores(self, X):
        """Every support model's scores, shape (n_samples, n_models)."""
        return _scores(_features(X, self.n_features_in_), self.weights_, self.biases_)

    def predict_proba(self, X):
        """Probability that the mixture labels each row positive.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return (self.scores(X) >= 0) @ self.probabilities_

    def predict(self, X, random_state=0):
        """Sampled 0/1 decisions, one support model drawn per row.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        random_state : int, default=0
            Key of the draw. The draw for a row depends only on this key and the
            row's content.

        Returns
        -------
        ndarray of int of shape (n_samples,)
        """
        seed = _seed(random_state)
        D = _features(X, self.n_features_in_)
        S = _scores(D, self.weights_, self.biases_)
        u = row_uniforms(D, seed)
        cdf = np.cumsum(self.probabilities_)
        cdf[-1] = 1.0
        pick = np.minimum(np.searchsorted(cdf, u, side="right"), self.n_models - 1)
        return (S[np.arange(S.shape[0]), pick] >= 0).astype(np.int64)

    def save(self, path):
        """Save to ``path`` (``.npz``; no pickle). See :func:`rateopt.load`."""
        _save(path, {"kind": self.kind, "n_features": self.n_features_in_},
              {"weights": self.weights_, "biases": self.biases_, "probabilities": self.probabilities_})

    def __repr__(self):
        return f"StochasticClassifier(n_models={self.n_models}, n_features={self.n_features_in_})"


def _seed(random_state):
    if random_state is None:
        return 0
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool) and random_state >= 0:
        return int(random_state)
    raise ValueError(f"random_state must be a non-negative integer, got {random_state!r}")


def _save(path, meta, arrays):
    meta = dict(meta, format=FORMAT_NAME, version=FORMAT_VERSION)
    payload = {_META_KEY: np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)}
    payload.update(arrays)
    with open(os.fspath(path), "wb") as f:
        np.savez(f, **payload)


def load(path):
    """Load a classifier saved with ``save``.

    The file is a NumPy ``.npz`` archive holding the arrays ``weights``,
    ``biases``, ``probabilities`` and a JSON metadata entry with the format
    name ``"rateopt-model"``, its version, the classifier kind and the number of
    features. Nothing is unpickled.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    LinearClassifier or StochasticClassifier

    Raises
    ------
    rateopt.exceptions.RateoptError
        If the file is not a rateopt model, is damaged, or has an unsupported
        format version.
    """
    path = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            if _META_KEY not in z.files:
                raise RateoptError(f"{path!r} is not a rateopt model file (no metadata entry)")
            meta = json.loads(bytes(z[_META_KEY]).decode())
            arrays = {k: z[k] for k in ("weights", "biases", "probabilities") if k in z.files}
    except RateoptError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError, UnicodeDecodeError) as exc:
        raise RateoptError(f"{path!r} is not a readable rateopt model file: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise RateoptError(f"{path!r} is not a rateopt model file")
    if meta.get("version") != FORMAT_VERSION:
        raise RateoptError(f"{path!r} has format version {meta.get('version')!r}; this rateopt reads {FORMAT_VERSION}")
    if set(arrays) != {"weights", "biases", "probabilities"}:
        raise RateoptError(f"{path!r} is damaged: missing arrays")
    W, b, p = arrays["weights"], arrays["biases"], arrays["probabilities"]
    if W.ndim != 2 or W.shape[1] != meta.get("n_features"):
        raise RateoptError(f"{path!r} is damaged: weights do not match the metadata")
    try:
        if meta.get("kind") == "deterministic":
            if W.shape[0] != 1:
                raise ValueError("a deterministic model has one weight vector")
            return LinearClassifier(W[0], float(b[0]))
        if meta.get("kind") == "stochastic":
            return StochasticClassifier(W, b, p)
    except ValueError as exc:
        raise RateoptError(f"{path!r} is damaged: {exc}") from None
    raise RateoptError(f"{path!r} holds an unknown classifier kind {meta.get('kind')!r}")
