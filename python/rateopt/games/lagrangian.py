"""Lagrangian games (Cotter et al., 2019, Algorithms 4 and 5).

* ``"proxy-external"``: the model steps on the proxy Lagrangian; Lagrange
  multipliers ``lambda >= 0`` (``||lambda||_1 <= R``) ascend on the true 0-1
  constraint values (external regret).
* ``"lagrangian-hinge"``: both players on the hinge relaxation (the papers'
  "Hinge" baseline): the multipliers see each constraint's own net per-example
  hinge value ``g~_i``, at the same model and rows as the model's gradient. The
  m constraint combinations ride along in the model's kernel pass (gradient
  weight 0), so an iteration is one pass whatever m is. When the relaxed
  constraints have no common solution, the multipliers grow without bound
  unless ``lambda_radius`` is set. Multiplicative constraints on a partition,
  e.g. ``tpr(g) >= 0.95 tpr(all)`` for both sexes on Adult, are such a case.
  The result then depends on ``eta_lambda * n_iter``: see
  docs/hinge_baseline.md.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

from .._training._players import LagrangePlayer
from ._base import (
    MODEL_PLAYER_SETTINGS,
    Combinations,
    MultiplierGame,
    register,
)

__all__ = ["ProxyExternalGame", "LagrangianHingeGame"]


class _LagrangianGame(MultiplierGame):
    reads = MODEL_PLAYER_SETTINGS | {"eta_lambda", "lambda_radius"}
    resumable = True

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        self.player = LagrangePlayer(spec.n_constraints, eta_lambda=settings.eta_lambda,
                                     radius=settings.lambda_radius)

    @classmethod
    def default_eta_lambda(cls, spec, settings):
        """Lemma 23: ``R / (B sqrt(2T))``, R = ``lambda_radius`` (or 1), B the largest ``|g_i|``."""
        R = 1.0 if settings.lambda_radius is None else settings.lambda_radius
        return R / (spec.constraint_bound() * math.sqrt(2 * max(settings.n_iter, 1)))


@register
class ProxyExternalGame(_LagrangianGame):
    """``method="proxy-external"``: proxies for the model, Lagrange multipliers on 0-1 rates."""

    name = "proxy-external"
    core_program = "proxy-external"
    reads = _LagrangianGame.reads | {"objective_warmup"}
    #: K classes (see ``Game.class_defaults``): Adam at 0.02 for 500 iterations, the softmax
    #: cross-entropy ("logistic") objective proxy, multipliers' step 1 / B.
    class_defaults = MappingProxyType({
        "n_iter": 500, "learning_rate": 0.02, "proxy": "logistic", "eta_lambda": None,
        "lambda_init": "objective", "lambda_floor": 1e-3, "objective_warmup": 0.2})


@register
class LagrangianHingeGame(_LagrangianGame):
    """``method="lagrangian-hinge"``: hinge relaxation for both players (the Hinge baseline)."""

    name = "lagrangian-hinge"
    core_program = "lagrangian-hinge"

    def combinations(self):
        combos = super().combinations()
        m = self.spec.n_constraints
        if m == 0:
            return combos
        return combos + Combinations(np.asarray(self.spec.C), ("hinge",) * m, np.zeros(m))

    def step(self, result):
        self.model_player.step(result.grad, result.grad_bias, result.grad_offsets)
        m = self.spec.n_constraints
        if m:
            self.player.update(result.proxy_values[-m:] - self.spec.kappa)
