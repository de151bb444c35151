"""Three players for non-linear rate metrics (Narasimhan et al., 2019, Algorithms 2 and 3; ``"three-player"``).

For ``min psi(z(theta))`` subject to linear rate constraints ``C p - kappa <= 0``
and metric constraints ``psi_j(z^j(theta)) <= b_j``, where every ``z = Z p + z0``
is a vector of rates and every ``psi`` a metric of :mod:`rateopt.metrics`, each
metric gets a *slack block*, and the game has three kinds of players:

* the slacks. For a convex metric (Algorithm 2) the Lagrangian
  ``psi(xi) + sum_k lam_k s_k (z_k - xi_k)`` (``s_k = +1`` where psi increases in
  ``z_k``, ``-1`` where it decreases) has the closed-form best response
  ``xi = argmin_{[0,1]^K} psi(xi) - <s lam, xi>``; in a constraint, with
  multiplier ``mu_j``, it is psi's best response at ``lam / mu_j``. For a sum of
  ratios ``sum_m c_m N_m / D_m + A`` (Algorithm 3) every term has a slack pair
  ``(a_m, b_m)`` bounding ``N_m`` and ``D_m`` from the side its sign ``sigma_m``
  needs (``N_m <= a_m``, ``b_m <= D_m`` for ``c_m > 0``, the reverse otherwise),
  moved by projected gradient steps inside each expression's affine range;
* the model player takes a gradient step on the hinge proxy of one combination
  of atom rates collected from every block (and ``nu C``): the fused kernel's
  net per-example rule (Narasimhan et al., 2019, §A.4);
* the multipliers (``lam``, the ratio blocks' ``lamN``, ``lamD``, ``nu`` of the
  rows of ``C``, ``mu`` of the metric constraints) ascend on the **0-1** rates of
  the same pass (Remark 3: never on surrogates), projected onto ``>= 0`` (and the
  L1 ball of ``lambda_radius`` when given).

An affine objective and no metric constraint is the special case with no block:
the game is then the Lagrangian with the objective's proxy. Slack multipliers of
convex metrics start at 0.5 (the authors' code); every other multiplier at 0.
"""

from __future__ import annotations

import math

import numpy as np

from .. import core
from ._base import (
    MODEL_PLAYER_SETTINGS,
    Combinations,
    Game,
    model_combinations,
    register,
)

__all__ = ["ThreePlayerGame"]


@register
class ThreePlayerGame(Game):
    """``method="three-player"``: metric objectives and constraints (Narasimhan et al., 2019, Algorithms 2 and 3)."""

    name = "three-player"
    accepts_metric = True
    reads = MODEL_PLAYER_SETTINGS | {"eta_lambda", "lambda_radius"}

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        self.objective = None if spec.metric is None else _block(spec.metric, constraint=False)
        self.bounded = tuple(spec.metric_constraints)
        self.blocks = [_block(c, constraint=True) for c in self.bounded]
        if settings.proxy != "hinge" and (self.objective is not None or self.blocks):
            # One combination of every block's atom rates, one proxy: the objective has no proxy of its own.
            raise ValueError(f"proxy={settings.proxy!r} cannot be used with a metric objective or metric "
                             f"constraints: method={self.name!r} then trains the hinge proxy of one combination "
                             "of rates; leave proxy=None (or 'hinge')")
        self.nu = np.zeros(spec.n_constraints)
        self.mu = np.zeros(len(self.bounded))

    @classmethod
    def default_eta_lambda(cls, spec, settings):
        """``R / (B sqrt(2T))`` (Theorems 2 and 4 with kappa = R = ``lambda_radius`` or 1): B bounds
        every multiplier gradient (slack gaps lie in [-1, 1], constraint values in [-B_g, B_g])."""
        R = 1.0 if settings.lambda_radius is None else settings.lambda_radius
        B = max(1.0, spec.constraint_bound() if spec.n_constraints else 1.0)
        return R / (B * math.sqrt(2 * max(settings.n_iter, 1)))

    def combinations(self):
        if self.objective is None and not self.blocks:
            return model_combinations(self.spec, 1.0, self.nu, self.settings.proxy)
        coef = self.objective.coef(1.0) if self.objective is not None else self.spec.c0.copy()
        if self.spec.n_constraints:
            coef = coef + self.nu @ self.spec.C
        for block, mu in zip(self.blocks, self.mu):
            coef = coef + block.coef(mu)
        return Combinations.single(coef)

    def step(self, result):
        self.model_player.step(result.grad, result.grad_bias, result.grad_offsets)
        self._step_multipliers(result)

    def _step_multipliers(self, result):
        """The slacks and multipliers move on the 0-1 rates of the pass."""
        eta, radius = self.settings.eta_lambda, self.settings.lambda_radius
        if self.objective is not None:
            self.objective.step(result.rates, 1.0, eta, radius)
            self.objective.refresh(1.0)
        if self.spec.n_constraints:
            self.nu = _project(self.nu + eta * self.spec.constraints(result.rates), radius)
        if self.blocks:
            phi = np.array([b.value(result.rates) - c.bound for b, c in zip(self.blocks, self.bounded)])
            for block, mu in zip(self.blocks, self.mu):
                block.step(result.rates, mu, eta, radius)
            self.mu = _project(self.mu + eta * phi, radius)
            for block, mu in zip(self.blocks, self.mu):
                block.refresh(mu)

    def multipliers(self):
        """``[1, nu (rows of C), mu (metric constraints), the objective's block, each constraint's block]``."""
        parts = [[1.0], self.nu, self.mu]
        if self.objective is not None:
            parts.append(self.objective.state())
        return np.concatenate(parts + [b.state() for b in self.blocks])


def _block(rows, *, constraint):
    return _RatioBlock(rows) if rows.metric.kind == "ratio" else _ConvexBlock(rows, constraint)


class _ConvexBlock:
    """Algorithm 2's slack player of a convex metric: closed-form best responses."""

    def __init__(self, rows, constraint):
        self.rows, self.metric, self.constraint = rows, rows.metric, constraint
        self.lam = np.full(rows.Z.shape[0], 0.5)
        self.refresh(0.0 if constraint else 1.0)

    def coef(self, weight):
        return (self.metric.signs * self.lam) @ self.rows.Z

    def value(self, rates):
        """The metric at the slacks (what a constraint's multiplier ascends on)."""
        return self.metric.value(self.xi)

    def step(self, rates, weight, eta, radius):
        z = self.rows.coordinates(rates)
        self.lam = _project(self.lam + eta * self.metric.signs * (z - self.xi), radius)

    def refresh(self, weight):
        """``xi = argmin_{[0,1]^K} weight psi(xi) - <s lam, xi>``; for weight 0 the linear part alone."""
        if not self.constraint:
            self.xi = self.metric.best_response(self.lam)
        elif weight > 0:
            self.xi = self.metric.best_response(self.lam / weight)
        else:
            self.xi = (self.metric.signs * self.lam > 0).astype(np.float64)

    def state(self):
        return self.lam


class _RatioBlock:
    """Algorithm 3's players of ``sum_m c_m N_m / D_m + A``: slack pairs and their multipliers."""

    def __init__(self, rows):
        self.rows, self.metric = rows, rows.metric
        M = len(self.metric.terms)
        self.c = np.array([c for c, _, _ in self.metric.terms])
        self.sigma = np.sign(self.c)
        Z, z0 = rows.Z, rows.z0
        self.iN, self.iD = 2 * np.arange(M), 2 * np.arange(M) + 1
        lo = z0 + np.minimum(Z, 0.0).sum(axis=1)  # each expression's range over rates in [0, 1]
        hi = z0 + np.maximum(Z, 0.0).sum(axis=1)
        self.a_lo, self.a_hi = lo[self.iN], hi[self.iN]
        self.b_hi = hi[self.iD]
        self.b_lo = np.maximum(lo[self.iD], 1e-3 * self.b_hi)  # denominators stay away from 0
        # a <= b where N <= D holds identically (F-measure, precision): the slacks keep it.
        self.ordered = np.array([bool(np.all(Z[n] <= Z[d]) and z0[n] <= z0[d]) for n, d in zip(self.iN, self.iD)])
        self.a = 0.5 * (self.a_lo + self.a_hi)
        self.b = 0.5 * (self.b_lo + self.b_hi)
        self._order()
        self.lamN, self.lamD = np.zeros(M), np.zeros(M)

    def _order(self):
        self.a = np.where(self.ordered, np.minimum(self.a, self.b), self.a)

    def coef(self, weight):
        Z = self.rows.Z
        coef = (self.sigma * self.lamN) @ Z[self.iN] - (self.sigma * self.lamD) @ Z[self.iD]
        if self.metric.affine is not None:
            coef = coef + weight * Z[-1]
        return coef

    def value(self, rates):
        """``sum_m c_m a_m / b_m + A(rates)``: the ratio sum at the slacks."""
        aff = self.rows.coordinates(rates)[-1] if self.metric.affine is not None else 0.0
        return float(self.c @ (self.a / self.b) + aff)

    def slack_gradients(self, weight):
        """``(dL/da, dL/db)`` of ``weight sum c a/b + sum lamN sigma (N - a) + lamD sigma (b - D)``."""
        w = weight * self.c
        return w / self.b - self.sigma * self.lamN, -w * self.a / self.b**2 + self.sigma * self.lamD

    def step(self, rates, weight, eta, radius):
        z = self.rows.coordinates(rates)
        da, db = self.slack_gradients(weight)
        self.lamN = _project(self.lamN + eta * self.sigma * (z[self.iN] - self.a), radius)
        self.lamD = _project(self.lamD + eta * self.sigma * (self.b - z[self.iD]), radius)
        self.a = np.clip(self.a - eta * da, self.a_lo, self.a_hi)
        self.b = np.clip(self.b - eta * db, self.b_lo, self.b_hi)
        self._order()

    def refresh(self, weight):
        pass

    def state(self):
        return np.concatenate([self.lamN, self.lamD])


def _project(v, radius):
    return np.maximum(v, 0.0) if radius is None else core.project_l1_ball_nonneg(v, radius)
