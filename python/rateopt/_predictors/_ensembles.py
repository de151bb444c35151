"""Classifiers made of fitted scikit-learn estimators (the iterates of an estimator oracle).

:class:`EstimatorMixture` is the counterpart of
:class:`~rateopt.StochasticClassifier` when the support models are arbitrary
fitted classifiers (gradient-boosted trees, forests, ...): each row is
classified by one support model, drawn with the same row-keyed uniforms, so a
row's decision does not depend on its batch. :class:`ConstantClassifier` is the
model an oracle returns when every row prefers the same decision.
"""

from __future__ import annotations

import numpy as np

from ._draws import VoteMixture, is_distribution
from ._linear import BINARY_CLASSES
from ._scoring import raw_features
from .._language._predictions import positive_decisions
from ..exceptions import RateoptError

__all__ = ["EstimatorMixture", "ConstantClassifier"]


class ConstantClassifier:
    """Predicts the same 0/1 decision for every row.

    Parameters
    ----------
    decision : {0, 1}
        The decision.
    n_features : int
        Width of the inputs it accepts.
    """

    def __init__(self, decision, n_features):
        if decision not in (0, 1):
            raise ValueError(f"decision must be 0 or 1, got {decision!r}")
        self.decision = int(decision)
        self.n_features_in_ = int(n_features)

    def predict(self, X):
        """The constant decision for every row of ``X``."""
        return np.full(X.shape[0], self.decision, dtype=np.int64)

    def __repr__(self):
        return f"ConstantClassifier(decision={self.decision})"


class EstimatorMixture(VoteMixture):
    """A mixture of fitted classifiers (0/1 labels); each row is classified by one drawn model.

    Parameters
    ----------
    estimators : sequence of fitted classifiers
        Support models with ``predict`` returning 0/1 labels.
    probabilities : array-like of shape (n_models,)
        Mixture probabilities (non-negative, summing to 1).
    n_features : int
        Width of the inputs.

    Notes
    -----
    :meth:`predict_proba` is the exact probability of each decision, shape
    (n_samples, 2); :meth:`predict` draws the support model of each row as
    :class:`~rateopt.StochasticClassifier` does (keyed on ``random_state`` and
    the row's id, or its content and occurrence in the batch).
    Saving needs pickle for arbitrary estimators, which rateopt's model files
    refuse: :meth:`save` raises; keep the estimators with their own format.
    """

    kind = "estimator-mixture"
    classes_ = BINARY_CLASSES

    def __init__(self, estimators, probabilities, n_features):
        self.estimators_ = list(estimators)
        p = np.array(probabilities, dtype=np.float64).reshape(-1)
        if not self.estimators_ or p.shape[0] != len(self.estimators_):
            raise ValueError("estimators and probabilities must describe the same, non-zero number of models")
        if not is_distribution(p):
            raise ValueError("probabilities must be finite, non-negative and sum to 1")
        self.probabilities_ = p
        self.n_features_in_ = int(n_features)
        #: The training columns checked on DataFrame input (None: none recorded).
        self.feature_names_in_ = None

    @property
    def n_models(self):
        """Number of support models."""
        return len(self.estimators_)

    def _features(self, X):
        return raw_features(X, self.n_features_in_, None, self.feature_names_in_)

    def _decisions(self, Xm):
        """Every support model's 0/1 decisions on validated rows (a subclass's models decide their own way)."""
        return np.column_stack([positive_decisions(e, Xm.data) for e in self.estimators_])

    def _votes(self, Xm):
        return (self._decisions(Xm) > 0).astype(np.int64)

    def decisions(self, X):
        """Every support model's 0/1 decisions, shape (n_samples, n_models)."""
        return self._decisions(self._features(X))

    def save(self, path):
        """Refused: rateopt's model files hold no pickle, and arbitrary estimators need it.

        Raises
        ------
        RateoptError
            Always; save ``estimators_`` and ``probabilities_`` with the
            estimators' own format (e.g. skops) instead.
        """
        raise RateoptError("an EstimatorMixture holds scikit-learn estimators, which rateopt's pickle-free model "
                           "files cannot store: save estimators_ (e.g. with skops) and probabilities_ yourself")

    def __repr__(self):
        return f"EstimatorMixture(n_models={self.n_models}, n_features={self.n_features_in_})"
