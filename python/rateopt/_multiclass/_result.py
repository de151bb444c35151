"""What K-class training returns: the recorded iterates and the solutions built from them."""

from __future__ import annotations

import numpy as np

from .._predictors._multiclass import MulticlassClassifier
from .._solutions._shrink import best_iterate, shrink

__all__ = ["MulticlassResult", "MULTICLASS_SOLUTIONS"]

#: The solutions of a K-class training run, by name.
MULTICLASS_SOLUTIONS = {
    "m-stochastic": "the m+1 LP over the iterates (seed 001 Lemma 5): at most m+1 models",
    "shrunk": "the same as 'm-stochastic'",
    "best": "the best single iterate by the rank heuristic (seed 001 Eq. 18)",
    "last": "the last iterate",
    "average": "the uniform mixture of every iterate",
}


class MulticlassResult:
    """The iterates of a K-class training run and the solutions built from them.

    Parameters
    ----------
    problem : MulticlassProblem
    coefs : ndarray of shape (T, n_classes, n_features)
    intercepts : ndarray of shape (T, n_classes)
    counts : ndarray of shape (T, n_cells, n_classes, n_classes)
        Each iterate's confusion counts on the training data (its exact 0-1 rates).
    multipliers : ndarray of shape (T, m + 1)
    feature_map : NystroemMap or None
    method : str
    seconds : float

    Attributes
    ----------
    objectives : ndarray of shape (T,)
        Each iterate's objective.
    constraints : ndarray of shape (T, m)
        Each iterate's constraint values ``g`` (``<= 0`` holds).
    n_iter : int
    """

    def __init__(self, problem, coefs, intercepts, counts, multipliers, feature_map, method, seconds):
        self.problem = problem
        self.coefs, self.intercepts, self.counts = coefs, intercepts, counts
        self.multipliers = multipliers
        self.feature_map = feature_map
        self.method = method
        self.seconds = seconds
        self.objectives = np.array([problem.objective_value(N) for N in counts])
        self.constraints = (np.stack([problem.constraint_values(N) for N in counts]) if len(counts)
                            else np.zeros((0, problem.n_constraints)))
        self.n_iter = len(counts)

    def mixture_weights(self, solution="m-stochastic", *, epsilon=0.0) -> np.ndarray:
        """The probabilities (T,) a solution puts on the iterates.

        For a non-linear objective (macro-F1), the m+1 LP minimizes its
        linearization at the uniform mixture's confusion counts.

        Parameters
        ----------
        solution : str, default="m-stochastic"
            ``"m-stochastic"`` (or ``"shrunk"``), ``"best"``, ``"last"`` or ``"average"``.
        epsilon : float, default=0.0
            Allowed violation of the LP's constraints.

        Returns
        -------
        ndarray of shape (T,)
        """
        T = self.n_iter
        p = np.zeros(T)
        if solution in ("m-stochastic", "shrunk"):
            f = self.objectives
            if not self.problem.is_linear:
                grad = self.problem.objective.gradient(self.problem.compiled, self.counts.mean(axis=0))
                f = np.tensordot(self.counts, grad, axes=3)
            return np.asarray(shrink(f, self.constraints, epsilon=epsilon).weights, dtype=np.float64)
        if solution == "best":
            p[best_iterate(self.objectives, self.constraints)] = 1.0
        elif solution == "last":
            p[-1] = 1.0
        elif solution == "average":
            p[:] = 1.0 / T
        else:
            raise ValueError(f"solution must be one of {list(MULTICLASS_SOLUTIONS)}, got {solution!r}")
        return p

    def solution(self, solution="m-stochastic", *, epsilon=0.0) -> MulticlassClassifier:
        """The classifier of a solution: a deterministic model or a mixture over the support iterates.

        Parameters
        ----------
        solution : str, default="m-stochastic"
            ``"m-stochastic"`` (or ``"shrunk"``), ``"best"``, ``"last"`` or ``"average"``.
        epsilon : float, default=0.0

        Returns
        -------
        MulticlassClassifier
        """
        p = self.mixture_weights(solution, epsilon=epsilon)
        support = np.flatnonzero(p > 0)
        return MulticlassClassifier(self.coefs[support], self.intercepts[support], p[support] / p[support].sum(),
                                    classes=self.problem.classes, feature_map=self.feature_map)

    def evaluate(self, solution="m-stochastic", *, epsilon=0.0):
        """The training-data :class:`~rateopt.Evaluation` of a solution (its expected rates).

        Parameters
        ----------
        solution : str, default="m-stochastic"
        epsilon : float, default=0.0

        Returns
        -------
        Evaluation
        """
        p = self.mixture_weights(solution, epsilon=epsilon)
        return self.problem.evaluate_counts(np.tensordot(p, self.counts, axes=1))

    def __repr__(self) -> str:
        return (f"MulticlassResult(method={self.method!r}, n_iter={self.n_iter}, n_classes={self.problem.n_classes}, "
                f"n_constraints={self.problem.n_constraints})")
