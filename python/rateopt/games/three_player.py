"""Three players for non-linear rate metrics (seed 003, Algorithm 2; ``"three-player"``).

For ``min psi(z(theta))`` subject to linear rate constraints ``C p - kappa <= 0``,
where ``z = Z p + z0`` are K rates and ``psi`` a convex metric
(:mod:`rateopt.metrics`), the Lagrangian with slack variables ``xi``

    L = psi(xi) + sum_k lam_k s_k (z_k - xi_k) + sum_i nu_i g_i,   lam, nu >= 0

(``s_k = +1`` where psi increases in ``z_k``, ``-1`` where it decreases) is
played by three players:

* the slack player best-responds in closed form,
  ``xi = argmin_{[0,1]^K} psi(xi) - <s lam, xi>`` (``Metric.best_response``);
* the model player takes a gradient step on the hinge proxy of
  ``sum_k s_k lam_k z_k + sum_i nu_i g_i``: one combination of atom rates, the
  fused kernel's net per-example rule (seed 003 §A.4: upper bounds where a
  rate enters positively, lower bounds where negatively);
* the multipliers ascend on the **0-1** rates of the same pass (Remark 3:
  never on surrogates), projected onto ``lam, nu >= 0`` (and the L1 ball of
  ``lambda_radius`` when given).

Constraints on metrics, ``psi_j(z^j) <= b_j``, add per constraint a private
slack copy ``xi^j`` with its multipliers ``lam^j`` and a multiplier ``mu_j``
ascending on ``psi_j(xi^j) - b_j``; ``xi^j`` best-responds to ``mu_j psi_j(xi)
- <s lam^j, xi>`` (psi's best response at ``lam^j / mu_j``). An affine objective
and no metric constraint is the special case K = 0: the game is then the
Lagrangian with the objective's proxy. The slack multipliers start at 0.5
(the authors' code); ``nu`` at 0.
"""

from __future__ import annotations

import math

import numpy as np

from .. import core
from ._base import Combinations, Game, model_combinations, register

__all__ = ["ThreePlayerGame"]


@register
class ThreePlayerGame(Game):
    """``method="three-player"``: metric objectives through slack best responses (seed 003, Algorithm 2)."""

    name = "three-player"
    accepts_metric = True

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        self.rows = spec.metric
        K = 0 if self.rows is None else self.rows.Z.shape[0]
        self.signs = self.rows.metric.signs if K else np.zeros(0)
        self.lam = np.full(K, 0.5)
        self.nu = np.zeros(spec.n_constraints)
        self.xi = self.rows.metric.best_response(self.lam) if K else np.zeros(0)
        # Each metric constraint psi_j <= b_j has its own private slack copy xi^j, its
        # slack multipliers lam^j and its multiplier mu_j (seed 003, §A.2).
        self.bounded = tuple(spec.metric_constraints)
        self.mu = np.zeros(len(self.bounded))
        self.lam_c = [np.full(c.Z.shape[0], 0.5) for c in self.bounded]
        self.xi_c = [_constraint_best_response(c.metric, lam, 0.0) for c, lam in zip(self.bounded, self.lam_c)]

    @classmethod
    def default_eta_lambda(cls, spec, settings):
        """``R / (B sqrt(2T))`` (Theorems 2 and 4 with kappa = R = ``lambda_radius`` or 1): B bounds
        every multiplier gradient (slack gaps lie in [-1, 1], constraint values in [-B_g, B_g])."""
        R = 1.0 if settings.lambda_radius is None else settings.lambda_radius
        B = max(1.0, spec.constraint_bound() if spec.n_constraints else 1.0)
        return R / (B * math.sqrt(2 * max(settings.n_iter, 1)))

    def combinations(self):
        if self.rows is None and not self.bounded:
            return model_combinations(self.spec, 1.0, self.nu, self.settings.proxy)
        coef = (self.signs * self.lam) @ self.rows.Z if self.rows is not None else self.spec.c0.copy()
        if self.spec.n_constraints:
            coef = coef + self.nu @ self.spec.C
        for c, lam in zip(self.bounded, self.lam_c):
            coef = coef + (c.metric.signs * lam) @ c.Z
        return Combinations.single(coef)

    def step(self, result):
        self.model_player.step(result.grad, result.grad_bias)
        eta, radius = self.settings.eta_lambda, self.settings.lambda_radius
        if self.rows is not None:
            z = self.rows.coordinates(result.rates)
            self.lam = _project(self.lam + eta * self.signs * (z - self.xi), radius)
            self.xi = self.rows.metric.best_response(self.lam)
        if self.spec.n_constraints:
            self.nu = _project(self.nu + eta * self.spec.constraints(result.rates), radius)
        if self.bounded:
            phi = np.array([c.metric.value(xi) - c.bound for c, xi in zip(self.bounded, self.xi_c)])
            for j, c in enumerate(self.bounded):
                z = c.coordinates(result.rates)
                self.lam_c[j] = _project(self.lam_c[j] + eta * c.metric.signs * (z - self.xi_c[j]), radius)
            self.mu = _project(self.mu + eta * phi, radius)
            self.xi_c = [_constraint_best_response(c.metric, lam, mu)
                         for c, lam, mu in zip(self.bounded, self.lam_c, self.mu)]

    def multipliers(self):
        """``[1, nu (rows of C), mu (metric constraints), lam (objective's slacks), lam^j ...]``."""
        return np.concatenate(([1.0], self.nu, self.mu, self.lam, *self.lam_c))


def _constraint_best_response(metric, lam, mu):
    """``argmin_{xi in [0,1]^K} mu psi(xi) - <s lam, xi>``: psi's best response at ``lam / mu``;
    for ``mu = 0`` the linear part alone, ``xi_k = 1`` where ``s_k lam_k > 0``, else 0."""
    if mu > 0:
        return metric.best_response(lam / mu)
    return (metric.signs * lam > 0).astype(np.float64)


def _project(v, radius):
    return np.maximum(v, 0.0) if radius is None else core.project_l1_ball_nonneg(v, radius)
