"""Whether a training solution meets the training constraints: :class:`FeasibilityReport` and how it is built."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..exceptions import InfeasibleWarning

__all__ = ["FEASIBILITY_RTOL", "FeasibilityReport", "feasibility_report", "warn_if_infeasible"]

#: Round-off tolerance of the feasibility reports: constraint ``i`` counts as
#: violated when its value exceeds ``FEASIBILITY_RTOL * max(1, max_t |g_i(t)|)``,
#: the largest magnitude it takes over the recorded iterates (``1e-9`` for rates).
FEASIBILITY_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class FeasibilityReport:
    """Whether a training solution meets the training constraints.

    Returned by :meth:`TrainResult.feasibility` and kept by the estimator as
    ``RateConstrainedClassifier.feasibility_``. Every value is measured on the
    training data with the 0-1 (not proxy) constraints; for a mixture the
    values are expected values.

    Parameters
    ----------
    solution : str
        The solution kind the report is about (``"m-stochastic"``,
        ``"T-stochastic"``, ``"best"`` or ``"last"``).
    feasible : bool
        Whether every constraint value is at most its round-off tolerance
        (see ``tolerances``).
    max_violation : float
        The solution's largest violation, ``max(0, max_i g_i)``.
    achievable_violation : float
        The smallest largest violation that any mixture of the recorded
        iterates reaches, ``max(0, min_p max_i sum_t p_t g_i(t))`` (the
        min-max LP of the m-stochastic shrink); 0 when some mixture meets
        every constraint. A positive value means that the constraints cannot
        all be met by anything this training run produced. With constraints
        on non-linear metrics the mixture's own values are not those of the
        LP, so this is the largest violation of the ``"exact"`` mixture
        (a local solve: an upper bound on the smallest achievable).
    constraint_values : dict of str to float
        Every constraint's value ``g_i`` for the solution (``<= 0`` holds), by name.
    violated : dict of str to float
        The constraints whose value exceeds their tolerance, with their
        values, in constraint order (empty when ``feasible``).
    tolerances : dict of str to float
        Round-off tolerance of each constraint:
        ``FEASIBILITY_RTOL * max(1, max_t |g_i(t)|)`` with ``FEASIBILITY_RTOL =
        1e-9`` (``1e-9`` for constraints on rates).
    achieved_by : str, default="m-stochastic"
        The solution kind that attains ``achievable_violation``
        (``"exact"`` with metric constraints).

    See Also
    --------
    TrainResult.feasibility : Build the report of a solution.
    rateopt.exceptions.InfeasibleWarning : Issued when training ends infeasible.
    """

    solution: str
    feasible: bool
    max_violation: float
    achievable_violation: float
    constraint_values: dict
    violated: dict
    tolerances: dict
    achieved_by: str = "m-stochastic"

    def describe(self, allowed=0.0):
        """One sentence naming the constraints violated beyond ``allowed``.

        Parameters
        ----------
        allowed : float, default=0.0
            Violation not reported (on top of each constraint's tolerance).

        Returns
        -------
        str
            The sentence (empty when no constraint is violated beyond ``allowed``).
        """
        bad = {n: v for n, v in self.violated.items() if v > allowed + self.tolerances[n]}
        if not bad:
            return ""
        listed = ", ".join(f"{n!r} (value {v:+.6g})" for n, v in bad.items())
        text = (f"the {self.solution} solution violates {len(bad)} training constraint(s): {listed}; "
                f"largest violation {self.max_violation:.6g}. ")
        if self.achievable_violation > 0:
            text += (f"No mixture of the recorded iterates meets every constraint: the smallest achievable "
                     f"largest violation is {self.achievable_violation:.6g}.")
        else:
            text += f"A mixture of the recorded iterates meets every constraint (the {self.achieved_by} solution)."
        return text


def warn_if_infeasible(report, allowed=0.0, stacklevel=2):
    """Issue an :class:`~rateopt.exceptions.InfeasibleWarning` if ``report`` shows
    a violation beyond ``allowed`` (plus the round-off tolerance).

    ``stacklevel=2`` attributes the warning to the caller of the function that
    calls this one.
    """
    text = report.describe(allowed)
    if text:
        warnings.warn(f"infeasible fit: {text}", InfeasibleWarning, stacklevel=stacklevel + 1)


def feasibility_report(result, kind="m-stochastic", *, epsilon=0.0, weighting="uniform", problem=None,
                       classifier=None):
    """The :class:`FeasibilityReport` of one solution of a :class:`~rateopt.TrainResult` (see
    :meth:`~rateopt.TrainResult.feasibility`, which documents the parameters)."""
    G = result.constraints
    m = G.shape[1]
    if m == 0:
        tol = np.zeros(0)
        achievable = 0.0
    else:
        tol = FEASIBILITY_RTOL * np.maximum(1.0, np.abs(G).max(axis=0))
        res = result.shrink(0.0)
        achievable = 0.0 if res.feasible else max(0.0, float(res.infeasibility))
    exact_lp = not result.rate_map.metric_constraints  # the LP's values are exact for affine constraints
    if m and not exact_lp:  # the LP scores mixtures by per-iterate values: use the exact mixture's own
        _, g_exact = result.solution_values("exact")
        achievable = max(0.0, float(np.max(g_exact))) if np.any(g_exact > tol) else 0.0
    if kind == "thresholded":
        if problem is None:
            raise ValueError("the feasibility of the thresholded solution needs problem=: the training problem")
        clf = classifier if classifier is not None else result.thresholded(problem, epsilon=epsilon)
        ev = result.arity.expected_evaluation(problem, clf)
        g = np.array([ev.constraints[n] for n in problem.constraint_names])
    elif kind == "m-stochastic" and m and exact_lp and type(epsilon) in (int, float) and epsilon == 0:
        g = res.constraint_values  # the same LP as solution_values would solve
    else:
        _, g = result.solution_values(kind, epsilon=epsilon, weighting=weighting)
    names = result.constraint_names
    values = {n: float(v) for n, v in zip(names, g)}
    violated = {n: float(v) for n, v, t in zip(names, g, tol) if v > t}
    return FeasibilityReport(
        solution=kind,
        feasible=not violated,
        max_violation=max(0.0, float(g.max())) if m else 0.0,
        achievable_violation=achievable,
        constraint_values=values,
        violated=violated,
        tolerances={n: float(t) for n, t in zip(names, tol)},
        achieved_by="m-stochastic" if exact_lp else "exact",
    )
