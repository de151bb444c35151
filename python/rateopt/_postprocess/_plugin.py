"""Exact plug-in post-processing for K classes: the best randomized rule over argmax rules of weighted probabilities.

Given class-probability estimates ``eta(x)`` of any model and a K-class
problem whose rates are read in expectation under ``eta`` (the labels'
stand-in: :class:`~rateopt.MulticlassProblem` with ``label_probabilities``),
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
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np

from .._compiler._multiclass import confusion_counts
from .._utils._highs import quiet_highs
from ..exceptions import RateoptError

__all__ = ["PlugInRule", "PlugInFit", "fit_plugin_rule", "plugin_decisions"]

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

    def decisions(self, proba, cells, uniforms) -> np.ndarray:
        """Class positions: each row's rule drawn by its uniform number (``uniforms``, (n,) in [0, 1))."""
        votes = np.stack([plugin_decisions(proba, cells, C) for C in self.costs], axis=1)
        cdf = np.cumsum(self.probabilities)
        cdf[-1] = 1.0
        pick = np.minimum(np.searchsorted(cdf, uniforms, side="right"), len(cdf) - 1)
        return votes[np.arange(proba.shape[0]), pick]

    def distribution(self, proba, cells) -> np.ndarray:
        """The exact decision distribution (n, K) of the mixture."""
        K = proba.shape[1]
        P = np.zeros((proba.shape[0], K))
        for C, p in zip(self.costs, self.probabilities):
            P[np.arange(proba.shape[0]), plugin_decisions(proba, cells, C)] += p
        return P / P.sum(axis=1, keepdims=True)


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
        0 when the goals are met (up to the LP's tolerance).
    n_columns : int
        The rules generated.
    n_rounds : int
        Column-generation rounds.
    """

    rule: PlugInRule
    objective: float
    constraint_values: np.ndarray
    max_violation: float
    n_columns: int
    n_rounds: int


def _solve(f, G, rhs, *, with_z):
    """min f.p [+ z] s.t. G^T p [- z] <= rhs, sum p = 1; returns (x, row duals)."""
    T, m = G.shape
    n_col = T + int(with_z)
    A = np.zeros((m + 1, n_col))
    A[:m, :T] = G.T
    A[m, :T] = 1.0
    if with_z:
        A[:m, T] = -1.0
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_col, m + 1
    lp.col_cost_ = np.concatenate((f, [1.0])) if with_z else np.asarray(f, dtype=np.float64)
    lo = np.zeros(n_col)
    if with_z:
        lo[T] = -inf
    lp.col_lower_, lp.col_upper_ = lo, np.full(n_col, inf)
    lp.row_lower_ = np.concatenate((np.full(m, -inf), [1.0]))
    lp.row_upper_ = np.concatenate((rhs, [1.0]))
    cols, rows = np.nonzero(A.T != 0)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n_col, m + 1
    lp.a_matrix_.start_ = np.concatenate(([0], np.cumsum((A.T != 0).sum(axis=1)))).astype(np.int32)
    lp.a_matrix_.index_ = rows.astype(np.int32)
    lp.a_matrix_.value_ = A.T[cols, rows]
    h = quiet_highs(_OPTIONS)
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise RateoptError("the plug-in LP did not solve: HiGHS status "
                           f"{h.modelStatusToString(h.getModelStatus())!r}")
    sol = h.getSolution()
    return np.asarray(sol.col_value), np.asarray(sol.row_dual)


#: The restricted LP of a column generation over rule mixtures (also :mod:`._class_mixture`'s).
solve_mixture_lp = _solve


def fit_plugin_rule(problem, proba, *, max_rounds=500, tol=1e-10) -> PlugInFit:
    """The optimal mixture of plug-in rules for a K-class problem read under ``proba``.

    Parameters
    ----------
    problem : MulticlassProblem
        Compiled with ``label_probabilities=proba`` (expected rates), a linear objective.
    proba : ndarray of shape (n_samples, K)
        The class-probability estimates.
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
    if c.objective is None:
        raise RateoptError("plug-in post-processing takes a linear objective (error, balanced_error or a "
                           "linear rate expression), not macro-F1")
    m = c.n_constraints
    A0, A, b = c.objective, c.constraints, c.offsets

    def column(C):
        N = confusion_counts(c, ds, plugin_decisions(proba, c.cells, C), soft_labels=proba)
        f = float(np.tensordot(A0, N, axes=3) + c.objective_constant)
        g = np.tensordot(A, N, axes=([1, 2, 3], [0, 1, 2])) - b if m else np.zeros(0)
        return C, f, g

    cols = [column(A0)]
    rounds = 0
    # phase 1: the smallest achievable largest constraint value
    z = 0.0
    if m:
        for rounds in range(1, max_rounds + 1):
            f = np.zeros(len(cols))
            G = np.stack([g for _, _, g in cols])
            x, dual = _solve(f, G, np.zeros(m), with_z=True)
            z = x[-1]
            if z <= 0:
                break
            mu = np.maximum(-dual[:m], 0.0)
            C = np.tensordot(mu, A, axes=1)
            new = column(C)
            if new[2] @ mu - dual[m] >= -tol:
                break
            cols.append(new)
    bound = max(z, 0.0) + (1e-12 if z > 0 else 0.0)
    scale = max(1.0, abs(cols[0][1]))
    for extra in range(1, max_rounds + 1):
        rounds += 1
        f = np.array([fc for _, fc, _ in cols])
        G = np.stack([g for _, _, g in cols]) if m else np.zeros((len(cols), 0))
        x, dual = _solve(f, G, np.full(m, bound), with_z=False)
        mu = np.maximum(-dual[:m], 0.0)
        C = A0 + np.tensordot(mu, A, axes=1) if m else A0
        new = column(C)
        if new[1] + (new[2] @ mu if m else 0.0) - dual[m] >= -tol * scale:
            break
        cols.append(new)
    x = np.where(x > 1e-12, x, 0.0)
    x /= x.sum()
    keep = np.flatnonzero(x)
    costs = np.stack([cols[i][0] for i in keep])
    gvals = (x[keep] @ np.stack([cols[i][2] for i in keep])) if m else np.zeros(0)
    obj = float(x[keep] @ np.array([cols[i][1] for i in keep]))
    return PlugInFit(rule=PlugInRule(costs=costs, probabilities=x[keep]), objective=obj, constraint_values=gvals,
                     max_violation=float(max(0.0, gvals.max(initial=0.0))), n_columns=len(cols), n_rounds=rounds)
