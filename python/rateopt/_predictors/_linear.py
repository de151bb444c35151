"""Trained classifiers: deterministic linear models and stochastic mixtures.

A rate-constrained training run ends with either one model (the last or the
best iterate) or a *mixture* of models (m-stochastic, T-stochastic): the
mixture classifies each example with one support model drawn with the mixture's
probabilities. Its expected rates are the probability-weighted rates of the
support models, which is what the constraints were met for.

Both kinds save to a single ``.npz`` file holding NumPy arrays and one JSON
metadata entry; nothing is pickled (``rateopt.load``, :mod:`rateopt._io`).
"""

from __future__ import annotations

import numpy as np

from .._utils._archive import damaged, meta_number, real_array, write_archive
from .._utils._hashing import row_uniforms
from .._utils._validation import check_seed
from ..core import FeatureMatrix
from ..exceptions import RateoptError
from ._nystroem import KERNELS, NystroemMap

__all__ = ["LinearClassifier", "StochasticClassifier", "RampClassifier", "FORMAT_NAME", "classifier_from_file",
           "feature_map_from_file"]

#: The format name of a saved classifier (``rateopt.load`` reads it).
FORMAT_NAME = "rateopt-model"


def _raw_features(X, n_features, feature_map):
    """Validate X against the model's raw input width; returns the FeatureMatrix."""
    Xm = FeatureMatrix(X)
    want = feature_map.n_features_in_ if feature_map is not None else n_features
    if Xm.n_features != want:
        raise ValueError(f"X has {Xm.n_features} features, but the model was trained with {want}")
    return Xm


def _scores(Xm, weights, biases, feature_map=None):
    """(n_samples, n_models) scores in float64.

    For a kernel model the features are streamed: one chunk of kernel values
    exists at a time.
    """
    W = np.asarray(weights, dtype=np.float64)
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


#: Stored values per block when float32 features are scored (a float64 copy of one block exists at a time).
_SCORE_BLOCK_VALUES = 1 << 22


def _row_blocks(Xm):
    """``(start, stop)`` row ranges of about :data:`_SCORE_BLOCK_VALUES` stored values each."""
    stored = Xm.data.nnz if Xm.is_sparse else Xm.n_samples * Xm.n_features
    step = max(1, int(_SCORE_BLOCK_VALUES * Xm.n_samples // max(1, stored)))
    return [(s, min(Xm.n_samples, s + step)) for s in range(0, Xm.n_samples, step)]


def map_meta(feature_map):
    """The JSON part of a saved kernel feature map (None for a linear model)."""
    return None if feature_map is None else feature_map.params()


def map_arrays(feature_map):
    """The arrays of a saved kernel feature map (none for a linear model)."""
    if feature_map is None:
        return {}
    return {"landmarks": feature_map.landmarks, "whitening": feature_map.whitening}


class LinearClassifier:
    """A deterministic linear classifier: positive iff ``x . coef + intercept >= 0``.

    ``predict_proba`` returns the positive class's probability only, shape
    (n_samples,) (a decision rule's convention); scikit-learn's (n_samples, 2)
    is :class:`rateopt.RateConstrainedClassifier`'s.

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

    def __init__(self, coef, intercept=0.0, feature_map=None):
        self.coef_ = np.array(coef, dtype=np.float64).reshape(-1)
        self.intercept_ = float(intercept)
        if not (np.all(np.isfinite(self.coef_)) and np.isfinite(self.intercept_)):
            raise ValueError("coef and intercept must be finite")
        self.feature_map = feature_map
        if feature_map is not None and feature_map.n_components_ != self.coef_.shape[0]:
            raise ValueError("coef must have one weight per kernel feature")
        self.n_features_in_ = self.coef_.shape[0] if feature_map is None else feature_map.n_features_in_

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
        Xm = _raw_features(X, self.n_features_in_, self.feature_map)
        return _scores(Xm, self.coef_[None, :], np.array([self.intercept_]), self.feature_map)[:, 0]

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
            The positive class's probability only (not scikit-learn's two columns).
        """
        return self.predict(X).astype(np.float64)

    def save(self, path):
        """Save to ``path`` (``.npz``; no pickle). See :func:`rateopt.load`.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        """
        meta = {"kind": self.kind, "n_features": self.n_features_in_, "feature_map": map_meta(self.feature_map)}
        write_archive(path, meta, {"weights": self.coef_[None, :], "biases": np.array([self.intercept_]),
                                   "probabilities": np.ones(1), **map_arrays(self.feature_map)}, FORMAT_NAME)

    def __repr__(self):
        return f"LinearClassifier(n_features={self.n_features_in_})"


class StochasticClassifier:
    """A mixture of linear models; each example is classified by one drawn model.

    ``predict_proba`` returns the positive class's probability only, shape
    (n_samples,) (a decision rule's convention); scikit-learn's (n_samples, 2)
    is :class:`rateopt.RateConstrainedClassifier`'s.

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

    def __init__(self, weights, biases, probabilities, feature_map=None):
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
        # Kept as given (validated above), so that save/load round-trips bit for bit.
        self.weights_, self.biases_, self.probabilities_ = W, b, p
        self.feature_map = feature_map
        if feature_map is not None and feature_map.n_components_ != W.shape[1]:
            raise ValueError("weights must have one column per kernel feature")
        self.n_features_in_ = W.shape[1] if feature_map is None else feature_map.n_features_in_

    @property
    def n_models(self):
        """Number of support models."""
        return self.weights_.shape[0]

    def scores(self, X):
        """Every support model's scores, shape (n_samples, n_models)."""
        Xm = _raw_features(X, self.n_features_in_, self.feature_map)
        return _scores(Xm, self.weights_, self.biases_, self.feature_map)

    def predict_proba(self, X):
        """Probability that the mixture labels each row positive.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The rows to classify.

        Returns
        -------
        ndarray of shape (n_samples,)
            The positive class's probability only (not scikit-learn's two
            columns), in [0, 1]: exactly 1 (0) where every model of positive
            probability says positive (negative).

        Notes
        -----
        The sum of the probabilities of the positive support models is rounded
        (1000 models of probability 1/1000 sum to 1.0000000000000007), so the
        sum is clipped to [0, 1] and rows on which the support is unanimous get
        exactly 0 or 1.
        """
        return mixture_proba(self.scores(X) >= 0, self.probabilities_)

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
        Xm = _raw_features(X, self.n_features_in_, self.feature_map)
        S = _scores(Xm, self.weights_, self.biases_, self.feature_map)
        return mixture_draws(S >= 0, self.probabilities_, Xm, random_state)

    def save(self, path):
        """Save to ``path`` (``.npz``; no pickle). See :func:`rateopt.load`."""
        meta = {"kind": self.kind, "n_features": self.n_features_in_, "feature_map": map_meta(self.feature_map)}
        write_archive(path, meta, {"weights": self.weights_, "biases": self.biases_,
                                   "probabilities": self.probabilities_, **map_arrays(self.feature_map)}, FORMAT_NAME)

    def __repr__(self):
        return f"StochasticClassifier(n_models={self.n_models}, n_features={self.n_features_in_})"


def mixture_proba(positive, probabilities):
    """Exact probability of a positive decision of a mixture, from every support model's decisions.

    Parameters
    ----------
    positive : ndarray of bool of shape (n_samples, n_models)
    probabilities : ndarray of shape (n_models,)

    Returns
    -------
    ndarray of shape (n_samples,)
        Clipped to [0, 1]; exactly 1 (0) where every model of positive
        probability says positive (negative): 1000 models of probability
        1/1000 sum to 1.0000000000000007.
    """
    p = np.clip(positive @ probabilities, 0.0, 1.0)
    support = positive[:, probabilities > 0]
    p[support.all(axis=1)] = 1.0
    p[~support.any(axis=1)] = 0.0
    return p


def mixture_draws(positive, probabilities, Xm, random_state):
    """Each row's decision by one support model, drawn from a uniform keyed on the row and the seed.

    Parameters
    ----------
    positive : ndarray of bool of shape (n_samples, n_models)
    probabilities : ndarray of shape (n_models,)
    Xm : FeatureMatrix
        The validated rows (their content keys the draws).
    random_state : int or None

    Returns
    -------
    ndarray of int of shape (n_samples,)
    """
    u = row_uniforms(Xm.data, _seed(random_state))
    cdf = np.cumsum(probabilities)
    cdf[-1] = 1.0
    pick = np.minimum(np.searchsorted(cdf, u, side="right"), probabilities.shape[0] - 1)
    return positive[np.arange(positive.shape[0]), pick].astype(np.int64)


def _seed(random_state):
    seed = check_seed("random_state", random_state)
    return 0 if seed is None else seed


def classifier_from_file(meta, arrays, path):
    """Rebuild a classifier saved under :data:`FORMAT_NAME` (every field validated; see ``rateopt.load``)."""
    kind = meta.get("kind")
    if kind not in ("deterministic", "stochastic", "ramp-randomized"):
        raise RateoptError(f"{path!r} holds an unknown classifier kind {kind!r}")
    n_features = meta.get("n_features")
    if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
        raise damaged(path, "metadata.n_features", f"is {n_features!r}, expected an integer >= 1")
    W = real_array(arrays, "weights", 2, path)
    if W.shape[0] < 1:
        raise damaged(path, "weights", "holds no model")
    n_models = W.shape[0]
    b = real_array(arrays, "biases", 1, path)
    p = real_array(arrays, "probabilities", 1, path)
    for name, a in (("biases", b), ("probabilities", p)):
        if a.shape[0] != n_models:
            raise damaged(path, name, f"has {a.shape[0]} entries for {n_models} models (rows of 'weights')")
    fmap = feature_map_from_file(meta.get("feature_map"), arrays, path)
    if fmap is None:
        if W.shape[1] != n_features:
            raise damaged(path, "weights", f"has {W.shape[1]} columns but metadata.n_features is {n_features}")
    else:
        if fmap.n_features_in_ != n_features:
            raise damaged(path, "landmarks", f"has {fmap.n_features_in_} columns but metadata.n_features is "
                                              f"{n_features}")
        if W.shape[1] != fmap.n_components_:
            raise damaged(path, "weights", f"has {W.shape[1]} columns but the kernel model has "
                                            f"{fmap.n_components_} features (columns of 'whitening')")
    if kind in ("deterministic", "ramp-randomized"):
        if n_models != 1:
            raise damaged(path, "weights", f"holds {n_models} models; a {kind} classifier has one")
        if p[0] != 1.0:
            raise damaged(path, "probabilities", f"is {p.tolist()}; a {kind} classifier has [1.0]")
        cls = LinearClassifier if kind == "deterministic" else RampClassifier
        return cls(W[0], float(b[0]), feature_map=fmap)
    if np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
        raise damaged(path, "probabilities", f"must be non-negative and sum to 1 (sum {p.sum()!r})")
    return StochasticClassifier(W, b, p, feature_map=fmap)


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


class RampClassifier(LinearClassifier):
    """Seed 004's randomized rule: a linear score, positive with probability ``clip(1/2 + s, 0, 1)``.

    The expected rates of this classifier on a dataset are the ramp rates of
    its score (:func:`rateopt.core.ramp_rates`), so a model meeting ramp-loss
    constraints (:func:`rateopt.ramp_mm`) meets them in expectation exactly.

    ``predict_proba`` returns the positive class's probability only, shape
    (n_samples,) (a decision rule's convention); scikit-learn's (n_samples, 2)
    is :class:`rateopt.RateConstrainedClassifier`'s.

    Parameters
    ----------
    coef : array-like of shape (n_features,)
        Weights (one per kernel feature for a kernel model).
    intercept : float, default=0.0
        Bias.
    feature_map : NystroemMap, default=None
        The kernel feature map of a kernel model.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The weights.
    intercept_ : float
        The bias.
    n_features_in_ : int
        The raw input width.

    Notes
    -----
    :meth:`predict` draws each row's decision from the uniform number
    :class:`StochasticClassifier` uses (keyed on ``random_state`` and the row's
    content): positive iff ``u < clip(1/2 + s, 0, 1)``, so a row gets the same
    decision in any batch, order or layout, and :meth:`predict_proba` is its
    exact probability.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt import RampClassifier
    >>> clf = RampClassifier([1.0], 0.0)
    >>> clf.predict_proba(np.array([[-1.0], [0.25], [2.0]])).tolist()
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
        ndarray of shape (n_samples,)
            The positive class's probability only (not scikit-learn's two
            columns), in [0, 1].
        """
        return np.clip(0.5 + self.decision_function(X), 0.0, 1.0)

    def predict(self, X, random_state=0):
        """Sampled 0/1 decisions: positive iff the row's uniform number is below its probability.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The rows to classify.
        random_state : int, default=0
            Key of the draw; a row's draw depends only on this key and its content.

        Returns
        -------
        ndarray of int of shape (n_samples,)
            The decisions.
        """
        Xm = _raw_features(X, self.n_features_in_, self.feature_map)
        p = np.clip(0.5 + _scores(Xm, self.coef_[None, :], np.array([self.intercept_]), self.feature_map)[:, 0],
                    0.0, 1.0)
        return (row_uniforms(Xm.data, _seed(random_state)) < p).astype(np.int64)

    def __repr__(self):
        return f"RampClassifier(n_features={self.n_features_in_})"

