"""The trade-off between the objective and one goal: train it at several slacks.

:func:`sweep` retrains a problem with one of its goals at each slack in turn,
each run warm-started at the previous run's chosen model, and collects the
chosen solution's objective and the goal's constraint values: the points of
an error-versus-disparity curve (:func:`rateopt.plot.plot_tradeoff`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .._compiler._problem import Problem
from .._train import run_game
from ..exceptions import RateoptError

__all__ = ["sweep", "SweepResult"]


@dataclass
class SweepResult:
    """The points of a slack sweep (built by :func:`sweep`).

    Parameters
    ----------
    parameter : str
        The goal parameter swept (e.g. ``"slack"``).
    values : ndarray of shape (n_points,)
        Its values, in the order trained.
    objective : ndarray of shape (n_points,)
        Training objective of each point's chosen solution (expected value).
    goal_constraints : list of ndarray
        Each point's values ``g_i`` of the swept goal's constraints (<= 0 holds).
    disparity : ndarray of shape (n_points,)
        ``max_i (g_i + value)``: for an additive slack, the largest gap the goal
        bounds (e.g. ``max_g TPR(all) - TPR(g)`` for equal opportunity).
    max_violation : ndarray of shape (n_points,)
        Largest violation of any constraint of the point's problem.
    results : list of TrainResult
        Each point's training run.
    solution : str
        The solution kind used.
    """

    parameter: str
    values: np.ndarray
    objective: np.ndarray
    goal_constraints: list
    disparity: np.ndarray
    max_violation: np.ndarray
    results: list
    solution: str

    def as_dict(self):
        """The points as lists (JSON-ready).

        Returns
        -------
        dict
            ``parameter``, ``values``, ``objective``, ``disparity``,
            ``max_violation`` and ``solution``.
        """
        return {"parameter": self.parameter, "values": self.values.tolist(), "objective": self.objective.tolist(),
                "disparity": self.disparity.tolist(), "max_violation": self.max_violation.tolist(),
                "solution": self.solution}


def sweep(problem, goal, slacks, *, parameter="slack", model=None, method="auto", solution="m-stochastic",
          warm_start=True, progress=None, **params):
    """Train ``problem`` with ``goal`` at each value of its slack (warm-started).

    Parameters
    ----------
    problem : Problem
        A problem stated with goals (``Problem(constraints=[goal, ...], datasets=...)``).
    goal : Goal
        One of the problem's goals (the same object).
    slacks : sequence of float
        The values of ``parameter``, trained in this order.
    parameter : str, default="slack"
        The goal parameter to vary (e.g. ``"max_rate"`` for a coverage budget).
    model : LinearModel or KernelModel, default=None
        The model of every run (default: a linear model).
    method : str, default="auto"
        The training method of every run (see :func:`rateopt.train`).
    solution : str, default="m-stochastic"
        Which solution of each run is scored.
    warm_start : bool, default=True
        Start each run at the previous run's chosen model (its mixture's last
        support model).
    progress : callable, default=None
        Called as ``progress(i)`` after each point.
    **params
        Training parameters of :func:`rateopt.train`.

    Returns
    -------
    SweepResult
        One point per value: the objective, the goal's constraint values, the
        disparity and each run's :class:`~rateopt.TrainResult`.

    Raises
    ------
    RateoptError
        If ``goal`` is not one of the problem's goals, has no parameter
        ``parameter``, or ``slacks`` is empty.

    Examples
    --------
    >>> import rateopt
    >>> X, y, g = rateopt.make_groups_dataset(2000)
    >>> ds = rateopt.Dataset(X, y, groups={"group": g})
    >>> eo = rateopt.goals.equal_opportunity("group", sides="lower")
    >>> p = rateopt.Problem(constraints=[eo], datasets=ds)
    >>> s = rateopt.sweep(p, eo, [0.2, 0.05], n_iter=200, learning_rate=0.05)
    >>> len(s.objective)
    2
    """
    goals = list(getattr(problem, "_goals", ()))
    if not any(g is goal for g in goals):
        raise RateoptError(f"goal {goal!r} is not one of the problem's goals {goals!r}")
    if getattr(problem, "_expression_constraints", False):
        raise RateoptError("sweep rebuilds the problem from its goals; this problem also has constraints given "
                           "as rate expressions")
    if parameter not in {f.name for f in dataclasses.fields(goal)}:
        raise RateoptError(f"goal {goal!r} has no parameter {parameter!r}")
    values = np.asarray(list(slacks), dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise RateoptError("slacks must be a non-empty sequence of numbers")
    objective = problem._objective_name or problem.objective
    init = None
    out = {k: [] for k in ("obj", "gc", "disp", "viol", "res")}
    for i, v in enumerate(values):
        swept = dataclasses.replace(goal, **{parameter: float(v)})
        new_goals = [swept if g is goal else g for g in goals]
        prob = Problem(objective=objective, constraints=new_goals, regularization=problem.regularization,
                       datasets=problem.datasets)
        res = run_game(prob, model, method, init=init if warm_start else None, **params)
        obj, g = res.solution_values(solution)
        rows = [r for r, src in enumerate(prob.compiled.inverse_data.sources) if src is swept]
        gc = np.asarray(g)[rows]
        out["obj"].append(obj)
        out["gc"].append(gc)
        out["disp"].append(float(np.max(gc + v)) if gc.size else np.nan)
        out["viol"].append(float(max(0.0, np.max(g))) if len(g) else 0.0)
        out["res"].append(res)
        q = res.mixture(solution)
        last = int(np.flatnonzero(q > 0)[-1])
        init = (res.weights[last], res.biases[last]) if res.weights.shape[1] else None
        if progress is not None:
            progress(i)
    return SweepResult(parameter, values, np.array(out["obj"]), out["gc"], np.array(out["disp"]),
                       np.array(out["viol"]), out["res"], solution)
