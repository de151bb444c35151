"""High-confidence certificates of a training run's solutions on held-out data.

:func:`certify_classifier` certifies one classifier's goals from its
decisions on a held-out problem; :func:`select_certified` picks, among every
recorded iterate and the m-stochastic mixture of a
:class:`~rateopt.TrainResult`, the best one whose goals are certified (a
union bound over the candidates).
"""

from __future__ import annotations

import warnings

import numpy as np

from .._language._classes import class_positions
from .._postprocess._certify import certify_expressions
from .._predictors._linear import BINARY_CLASSES
from ..exceptions import InfeasibleWarning, RateoptError

__all__ = ["certify_classifier", "select_certified"]


def certify_classifier(problem, classifier, *, confidence=0.95, random_state=0):
    """A classifier's certificate on a held-out problem (its decisions on every dataset).

    Parameters
    ----------
    problem : Problem
        The goals bound to held-out data.
    classifier : object
        With ``predict(X, random_state=...)`` giving 0/1 decisions.
    confidence : float, default=0.95
    random_state : int, default=0

    Returns
    -------
    rateopt.Certificate
    """
    decisions = {name: _decisions(classifier, problem.datasets[name].X, random_state)
                 for name in problem.datasets}
    return certify_expressions(problem.constraints, problem.objective, decisions, confidence=confidence)


def _decisions(classifier, X, random_state):
    """A classifier's drawn decisions as class positions: 0/1 for two classes, 0..K-1 for K."""
    labels = np.asarray(classifier.predict(X, random_state=random_state))
    # a user's classifier (certify(classifier=...)) may have no classes_: its predictions are 0/1, as documented
    classes = np.asarray(getattr(classifier, "classes_", BINARY_CLASSES))
    positions = class_positions(classes, labels, "the classifier's predictions")
    if np.any(positions < 0):
        raise RateoptError(f"the classifier's predictions must be among its classes {classes.tolist()!r} (0/1 "
                           "decisions for a classifier without classes_)")
    return positions.astype(np.float64)


def select_certified(result, problem, *, confidence=0.95, epsilon=0.0, random_state=0):
    """The best recorded solution of ``result`` whose goals a held-out problem certifies.

    See :meth:`rateopt.TrainResult.select_certified` (which calls this) for the
    parameters and the returned ``(classifier, certificate, name)``.
    """
    if not (isinstance(confidence, (int, float)) and 0.0 < float(confidence) < 1.0):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    if result.models is not None:
        result.iterates_scorer()  # refused, with the reason
    T = result.weights.shape[0]
    each = 1.0 - (1.0 - float(confidence)) / (T + 1)
    candidates = []
    for t in range(T):  # an iterate is deterministic: its decisions need no seed
        cert = certify_classifier(problem, result.solution_of_iterate(t), confidence=each)
        candidates.append((float(result.objectives[t]), f"iterate {t}", t, cert))
    mix = result.solution("m-stochastic", epsilon=epsilon)
    cert = certify_classifier(problem, mix, confidence=each, random_state=random_state)
    candidates.append((float(result.solution_objective("m-stochastic", epsilon=epsilon)), "m-stochastic", None,
                       cert))
    ok = [c for c in candidates if c[3].certified]
    if ok:
        _, name, t, cert = min(ok, key=lambda c: c[0])
    else:
        _, name, t, cert = min(candidates, key=lambda c: max([b.upper for b in c[3].goals] + [-np.inf]))
        warnings.warn(
            f"no recorded solution is certified at confidence {confidence:g} on the held-out data "
            f"({len(problem.constraint_names)} goals): returning {name}, whose largest upper bound is the "
            "smallest; collect more held-out data, relax the goals or tighten training (epsilon < 0 "
            "margins)", InfeasibleWarning, stacklevel=3)
    clf = mix if t is None else result.solution_of_iterate(t)
    return clf, cert, name
