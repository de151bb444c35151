"""Goh et al. (2016)'s majorizer: the ramp problem's data and one MM step's weighted SVMs.

:class:`RampData` stacks the rows of every dataset with the per-row
coefficient pairs ``(P, N)`` of each function (row 0 the objective) by the
**net** rule ``P = max(U, 0)``, ``N = max(-U, 0)`` or the paper's
**per-atom** rule (:data:`RAMP_RULES`), and evaluates Problem 2 and the
majorizer at any scores.

:class:`MMStep` is one MM step at the anchor scores ``s'``: the masks
``s'_j <= 1/2`` and ``s'_j >= -1/2``, the saturated rows' constants
``gamma_check``, and for given multipliers the exact minimizer of
``Psi(., v)``, one weighted two-sided hinge SVM
(:func:`rateopt.core.sdca_two_sided_hinge`, margin 1/2) whose primal value
gives a cut and whose dual value a lower bound; with
``bias="unregularized"`` that SVM is Algorithm 3
(:func:`._cutting_plane.bias_cutting_plane`) over the free intercept.
:mod:`._ramp` (the driver) has the whole algorithm.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import scipy.sparse as sp

from .._training._row_coefficients import problem_row_coefficients, row_coefficients
from ..core import FeatureMatrix, sdca_two_sided_hinge
from ._cutting_plane import bias_cutting_plane

__all__ = ["RAMP_RULES", "RampData", "MMStep"]

RAMP_RULES = ("net", "atom")
"""How the majorizer splits each function's per-row coefficients: ``"net"`` or ``"atom"``."""


def _rho(s):
    return np.clip(0.5 + s, 0.0, 1.0)


class RampData:
    """Stacked rows of every dataset, the per-row coefficient pairs ``(P, N)`` and ``gamma``."""

    def __init__(self, spec, rule, lam, bias_mode, bias_scale):
        if rule not in RAMP_RULES:
            raise ValueError(f"rule must be one of {RAMP_RULES}, got {rule!r}")
        self.spec = spec
        rows = np.vstack([spec.c0[None, :], np.asarray(spec.C)])  # (m + 1, n_atoms)
        if rule == "net":
            U = problem_row_coefficients(spec, rows)
            P = [np.maximum(U[b.name], 0.0) for b in spec.blocks]
            N = [np.maximum(-U[b.name], 0.0) for b in spec.blocks]
        else:
            P = [row_coefficients(b.atoms, np.maximum(rows, 0.0)[:, b.atom_ids]) for b in spec.blocks]
            N = [row_coefficients(b.atoms, np.maximum(-rows, 0.0)[:, b.atom_ids]) for b in spec.blocks]
        self.P = np.ascontiguousarray(np.vstack(P))  # (n, m + 1)
        self.N = np.ascontiguousarray(np.vstack(N))
        self.gamma = np.concatenate([[-spec.const0], spec.kappa]) + self.N.sum(axis=0)
        datas = [b.X.data for b in spec.blocks]
        if len(datas) == 1:
            self.X = spec.blocks[0].X
        elif any(sp.issparse(d) for d in datas):
            self.X = FeatureMatrix(sp.vstack([sp.csr_matrix(d) for d in datas], format="csr"))
        else:
            self.X = FeatureMatrix(np.vstack(datas))
        self.n = self.X.n_samples
        self.m = spec.n_constraints
        Xd = self.X.data
        sq = Xd.multiply(Xd).sum(axis=1) if sp.issparse(Xd) else np.einsum("ij,ij->i", Xd, Xd)
        self.row_norm_max = float(np.sqrt(np.max(np.asarray(sq, dtype=np.float64)))) if self.n else 0.0
        self.lam, self.bias_mode, self.bias_scale = lam, bias_mode, bias_scale

    def scores(self, theta, bias):
        return np.asarray(self.X.data @ theta, dtype=np.float64).reshape(-1) + bias

    def regularizer(self, theta, bias):
        r = float(theta @ theta)
        if self.bias_mode == "regularized":
            r += (bias / self.bias_scale) ** 2
        return 0.5 * self.lam * r

    def problem2(self, s):
        """Problem-2 values of every function (objective first, without the regularizer)."""
        return self.P.T @ _rho(s) + self.N.T @ _rho(-s) - self.gamma

    def majorized(self, s, anchor):
        """Majorizer values ``M_i`` at scores ``s`` for the anchor scores (objective first)."""
        mp = np.where(anchor <= 0.5, np.maximum(0.0, 0.5 + s), 1.0)
        mn = np.where(anchor >= -0.5, np.maximum(0.0, 0.5 - s), 1.0)
        return self.P.T @ mp + self.N.T @ mn - self.gamma


@dataclasses.dataclass
class _Candidate:
    theta: np.ndarray
    bias: float
    f: float  # majorized objective + regularizer
    g: np.ndarray  # majorized constraint values


class MMStep:
    """One MM step at an anchor: the masks, ``gamma_check`` and the weighted SVMs for given multipliers."""

    def __init__(self, data, anchor_scores, inner_tol, max_epochs, random_state, max_bias_cuts=60):
        self.d = data
        self.s0 = anchor_scores
        self.pmask = anchor_scores <= 0.5
        self.nmask = anchor_scores >= -0.5
        d = data
        self.gamma_check = d.gamma - d.P[~self.pmask].sum(axis=0) - d.N[~self.nmask].sum(axis=0)
        self.inner_tol, self.max_epochs, self.random_state = inner_tol, max_epochs, random_state
        self.max_bias_cuts = max_bias_cuts
        self.xi = None
        self.n_solves = 0
        self.n_inexact = 0
        self.max_gap = 0.0
        self.n_bias_solves = 0  # Algorithm 3's fixed-bias SVMs (bias="unregularized")
        self.bias = 0.0  # the last bias of Algorithm 3 (its next first query)

    def candidate(self, theta, bias):
        s = self.d.scores(theta, bias)
        M = self.d.majorized(s, self.s0)
        return _Candidate(np.array(theta, dtype=np.float64), float(bias), float(M[0] + self.d.regularizer(theta, bias)),
                          M[1:].copy())

    def solve(self, v_full):
        """Minimize ``Psi(., v)`` exactly; returns the candidate and the dual lower bound on ``F(v)``."""
        d = self.d
        A = d.n * np.where(self.pmask, d.P @ v_full, 0.0)
        B = d.n * np.where(self.nmask, d.N @ v_full, 0.0)
        if d.bias_mode == "unregularized":
            return self._solve_free_bias(A, B, v_full)
        regularized = d.bias_mode == "regularized"
        from sklearn.exceptions import ConvergenceWarning  # lazy: `import rateopt` loads no scikit-learn

        with warnings.catch_warnings():
            # An inexact solve is counted, not raised: its dual value is still a valid lower bound,
            # and the step's primal recovery keeps descent and feasibility whatever the candidates.
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = sdca_two_sided_hinge(d.X, A, B, lam=d.lam, tau=0.5, bias="regularized" if regularized else "fixed",
                                       bias_scale=d.bias_scale, xi0=self.xi, tol=self.inner_tol,
                                       max_epochs=self.max_epochs, random_state=self.random_state)
        self.n_inexact += int(not res.converged)
        self.xi = res.xi
        self.n_solves += 1
        self.max_gap = max(self.max_gap, res.gap)
        const = float(v_full @ self.gamma_check)
        return self.candidate(res.theta, res.bias), res.dual - const, res

    def _fixed_bias_svm(self, A, B, b):
        d = self.d
        from sklearn.exceptions import ConvergenceWarning  # lazy: `import rateopt` loads no scikit-learn

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = sdca_two_sided_hinge(d.X, A, B, lam=d.lam, tau=0.5, beta=b, bias="fixed", xi0=self.xi,
                                       tol=self.inner_tol, max_epochs=self.max_epochs, random_state=self.random_state)
        self.n_inexact += int(not res.converged)
        self.xi = res.xi
        self.n_bias_solves += 1
        self.max_gap = max(self.max_gap, res.gap)
        return res

    def _solve_free_bias(self, A, B, v_full):
        """Algorithm 3: the unregularized bias by a cutting plane over ``b``, one fixed-bias SVM per cut."""
        n = self.d.n
        # An optimal b lies in [-R, R]: lam/2 ||theta*||^2 <= P(0, 0) = (1/n) sum_j tau (A_j + B_j), and
        # beyond tau + max_j |x_j . theta*| every row is on one side of both hinges (G is monotone there).
        R = 0.5 + self.d.row_norm_max * math.sqrt(2.0 * 0.5 * float(np.sum(A + B)) / n / self.d.lam)
        solves = []

        def solve_at(b):
            res = self._fixed_bias_svm(A, B, b)
            solves.append(res)
            return res.primal, res.dual, res.sum_xi / n, len(solves) - 1

        out = bias_cutting_plane(solve_at, R, tol=4.0 * self.inner_tol, max_cuts=self.max_bias_cuts,
                                 b_start=float(np.clip(self.bias, -R, R)))
        self.n_inexact += int(not out["converged"])
        self.n_solves += 1
        best = solves[out["best"]]
        self.bias = float(best.bias)
        const = float(v_full @ self.gamma_check)
        return self.candidate(best.theta, best.bias), out["L"] - const, _FreeBiasSolve(out["U"] - out["L"], out)


@dataclasses.dataclass
class _FreeBiasSolve:
    gap: float  # U - L of Algorithm 3 (the bound on F(v)'s error)
    info: dict
