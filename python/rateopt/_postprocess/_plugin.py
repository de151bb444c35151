"""Exact plug-in post-processing for K classes: the best randomized rule over argmax rules of weighted probabilities.

Given class-probability estimates ``eta(x)`` of any model and a K-class
problem whose rates are read in expectation under ``eta`` (the labels'
stand-in: a K-class :class:`~rateopt.Problem` with ``label_probabilities``),
every objective and constraint is linear in the confusion counts ``N`` of the
decision rule, and a deterministic rule's Lagrangian
``<A_0 + sum_i mu_i A_i, N>`` is a sum over rows of
``w_i sum_y eta_y(x_i) C[g_i, y, yhat_i]``. Its minimizer over *all*
deterministic rules is therefore the plug-in rule of Narasimhan et al.:
``yhat(x) = argmin_k sum_y eta_y(x) C[g, y, k]``, an argmax of per-group,
per-class weighted probabilities.

:func:`fit_plugin_rule` solves the LP over mixtures of deterministic rules
exactly by column generation (Dantzig-Wolfe): the restricted LP over the
rules found so far gives the duals ``mu``, the plug-in rule at ``mu`` is the
column of least reduced cost, and the loop stops when no column has a
negative reduced cost, at the optimum of the LP over all deterministic rules
(the LP has finitely many columns, so it terminates). A first phase minimizes
the largest constraint value; when it is positive the goals cannot be met by
any randomized rule and the second phase keeps every constraint at most that
value. The basic optimal mixture has at most ``m + 1`` rules.

An allowed violation ``epsilon`` is a change of the LP's data, not of the
method: every constraint row's right-hand side is ``epsilon`` instead of 0
(``g_i <= epsilon``), in both phases.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._compiler import confusion_counts
from .._predictors._draws import is_distribution, normalized_proba, pick_votes
from .._utils._highs import solve_mixture_lp
from ..exceptions import RateoptError

__all__ = ["PlugInRule", "PlugInFit", "column_generation", "fit_plugin_rule", "mixture_lp", "plugin_decisions"]

_OPTIONS = {"output_flag": False, "solver": "simplex", "presolve": "off",
            "primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def plugin_decisions(proba, cells, costs) -> np.ndarray:
    """Each row's class ``argmin_k sum_y proba[i, y] costs[cells[i], y, k]`` (the lowest on ties).

    Parameters
    ----------
    proba : ndarray of shape (n_samples, K)
    cells : ndarray of int of shape (n_samples,)
    costs : ndarray of shape (n_cells, K, K)

    Returns
    -------
    ndarray of int64 of shape (n_samples,)
    """
    out = np.empty(proba.shape[0], dtype=np.int64)
    order = np.argsort(cells, kind="stable")  # the rows of each cell, by one sort (not a scan per cell)
    cut = np.flatnonzero(np.diff(cells[order])) + 1
    for rows in np.split(order, cut):
        if rows.size:
            out[rows] = np.argmin(proba[rows] @ costs[cells[rows[0]]], axis=1)
    return out


@dataclass(frozen=True)
class PlugInRule:
    """A randomized mixture of plug-in rules.

    Attributes
    ----------
    costs : ndarray of shape (n_rules, n_cells, K, K)
        Rule ``r`` predicts ``argmin_k sum_y eta_y(x) costs[r, g, y, k]`` for a row of cell ``g``.
    probabilities : ndarray of shape (n_rules,)
    """

    costs: np.ndarray
    probabilities: np.ndarray

    def _votes(self, proba, cells):
        return np.stack([plugin_decisions(proba, cells, C) for C in self.costs], axis=1)

    def decisions(self, proba, cells, uniforms) -> np.ndarray:
        """Class positions: each row's rule drawn by its uniform number (``uniforms``, (n,) in [0, 1))."""
        return pick_votes(self._votes(proba, cells), self.probabilities, uniforms)

    def distribution(self, proba, cells) -> np.ndarray:
        """The exact decision distribution (n, K) of the mixture."""
        return normalized_proba(self._votes(proba, cells), self.probabilities, proba.shape[1])

    def n_classes_of(self, cells, bad):
        """A saved rule's number of classes, checked against its ``cells`` (``bad(what)``: the file's error)."""
        K = self.costs.shape[-1]
        if K < 3 or self.costs.shape[1] != len(cells):
            raise bad(f"'plugin_costs' must have one table per cell ({len(cells)}) and at least 3 classes")
        return K

    def to_arrays(self):
        """The rule as JSON metadata and arrays (for a saved file).

        Returns
        -------
        meta : dict
        arrays : dict of str to ndarray
        """
        return {}, {"plugin_costs": np.asarray(self.costs, dtype=np.float64),
                    "plugin_probabilities": np.asarray(self.probabilities, dtype=np.float64)}

    @classmethod
    def from_arrays(cls, meta, arrays, path):
        """The rule of a saved file, checked (as ``ThresholdRule.from_arrays``): costs finite, of shape
        (n_rules, n_cells, K, K), probabilities one non-negative number per rule summing to 1."""
        def bad(what):
            return RateoptError(f"{path!r} is not a valid rateopt plug-in rule file: {what}")

        try:
            costs = np.asarray(arrays["plugin_costs"])
            probabilities = np.asarray(arrays["plugin_probabilities"])
        except KeyError as exc:
            raise bad(f"missing array {exc.args[0]!r}") from None
        if (costs.dtype.kind != "f" or costs.ndim != 4 or costs.shape[0] < 1 or costs.shape[1] < 1
                or costs.shape[2] != costs.shape[3] or costs.shape[2] < 2 or not np.all(np.isfinite(costs))):
            raise bad("'plugin_costs' must be finite floats of shape (n_rules, n_cells, K, K)")
        if (probabilities.dtype.kind != "f" or probabilities.shape != (costs.shape[0],)
                or not is_distribution(probabilities)):
            raise bad("'plugin_probabilities' must be one non-negative number per rule, summing to 1")
        return cls(costs=costs, probabilities=probabilities)


@dataclass(frozen=True)
class PlugInFit:
    """What :func:`fit_plugin_rule` found.

    Attributes
    ----------
    rule : PlugInRule
    objective : float
        The LP's optimal objective (the mixture's expected objective under ``eta``).
    constraint_values : ndarray of shape (m,)
    max_violation : float
        The largest constraint value beyond the allowed ``epsilon``: 0 when
        every ``g_i <= epsilon`` is met (up to the LP's tolerance).
    """

    rule: PlugInRule
    objective: float
    constraint_values: np.ndarray
    max_violation: float


def mixture_lp(f, G, rhs, *, with_z):
    """min f.p [+ z] s.t. G^T p [- z] <= rhs, sum p = 1; returns (x, row duals)."""
    cost = np.concatenate((f, [1.0])) if with_z else f
    sol = solve_mixture_lp(cost, G, rhs, with_z=with_z, options=_OPTIONS, what="the plug-in LP")
    if not sol.optimal:
        raise RateoptError(f"the plug-in LP did not solve: HiGHS status {sol.status!r}")
    return sol.x, sol.row_dual


def fit_plugin_rule(problem, proba, *, epsilon=0.0, max_rounds=500, tol=1e-10) -> PlugInFit:
    """The optimal mixture of plug-in rules for a K-class problem read under ``proba``.

    Parameters
    ----------
    problem : MulticlassProblem
        Compiled with ``label_probabilities=proba`` (expected rates), a linear objective.
    proba : ndarray of shape (n_samples, K)
        The class-probability estimates.
    epsilon : float, default=0.0
        Allowed violation of each constraint: the LP keeps ``g_i <= epsilon``.
    max_rounds : int, default=500
        A cap on the column-generation rounds (each adds one rule); reaching it
        warns nothing but leaves ``n_rounds == max_rounds`` (the mixture is then
        the best over the rules found).
    tol : float, default=1e-10
        A column enters when its reduced cost is below ``-tol`` (relative to the objective's scale).

    Returns
    -------
    PlugInFit
    """
    c, ds = problem.compiled, problem.dataset
    epsilon = float(epsilon)
    if not (np.isfinite(epsilon) and epsilon >= 0):
        raise RateoptError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    if c.objective is None:
        raise RateoptError("plug-in post-processing takes a linear objective (error, balanced_error or a "
                           "linear rate expression), not macro-F1")
    m = c.n_constraints
    A0, A, b = c.objective, c.constraints, c.offsets

    def column(C):
        N = confusion_counts(c, ds, plugin_decisions(proba, c.cells, C), soft_labels=proba)
        f = float(np.tensordot(A0, N, axes=3) + c.objective_constant)
        g = np.tensordot(A, N, axes=([1, 2, 3], [0, 1, 2])) - b if m else np.zeros(0)
        return {"params": C, "f": f, "g": g}

    def price(mu, lam0):  # phase 1 (lam0 = 0) prices the constraints alone
        if not m:
            return [column(A0)]
        T = np.tensordot(mu, A, axes=1)
        return [column(A0 + T if lam0 else T)]

    out = column_generation([column(A0)], price, m, epsilon, max_rounds, tol)
    x, cols = out["x"], out["cols"]
    keep = np.flatnonzero(x)
    costs = np.stack([cols[i]["params"] for i in keep])
    gvals = (x[keep] @ np.stack([cols[i]["g"] for i in keep])) if m else np.zeros(0)
    obj = float(x[keep] @ np.array([cols[i]["f"] for i in keep]))
    return PlugInFit(rule=PlugInRule(costs=costs, probabilities=x[keep]), objective=obj, constraint_values=gvals,
                     max_violation=float(max(0.0, gvals.max(initial=0.0) - epsilon)))


def column_generation(cols, price, m, epsilon, max_rounds, tol):
    """Column generation over ``cols`` (dicts with ``f`` and ``g``); ``price(mu, lam0)`` proposes new columns
    for the Lagrangian ``lam0 f + mu . g`` (the K-class plug-in and thresholded rules' one loop).

    Phase 1 (when the restricted LP is infeasible) minimizes the largest
    ``g_i - epsilon``; phase 2 minimizes ``f`` with every ``g_i`` at most
    ``epsilon`` plus the smallest achievable excess. Returns ``{"x", "cols"}``.
    """
    z = 0.0
    if m:
        for _ in range(max_rounds):
            G = np.stack([col["g"] for col in cols])
            x, dual = mixture_lp(np.zeros(len(cols)), G, np.full(m, epsilon), with_z=True)
            z = x[-1]
            if z <= 0:
                break
            mu = np.maximum(-dual[:m], 0.0)
            added = [col for col in price(mu, 0.0) if col["g"] @ mu - dual[m] < -tol]
            if not added:
                break
            cols = cols + added
    bound = epsilon + max(z, 0.0) + (1e-12 if z > 0 else 0.0)
    scale = max(1.0, abs(cols[0]["f"]))
    for _ in range(max_rounds):
        f = np.array([col["f"] for col in cols])
        G = np.stack([col["g"] for col in cols]) if m else np.zeros((len(cols), 0))
        x, dual = mixture_lp(f, G, np.full(m, bound), with_z=False)
        mu = np.maximum(-dual[:m], 0.0)
        added = [col for col in price(mu, 1.0)
                 if col["f"] + (col["g"] @ mu if m else 0.0) - dual[m] < -tol * scale]
        if not added:
            break
        cols = cols + added
    x = np.asarray(x[:len(cols)], dtype=np.float64)
    x = np.where(x > 1e-12, x, 0.0)
    return {"x": x / x.sum(), "cols": cols}
