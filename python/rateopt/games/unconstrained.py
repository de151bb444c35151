"""The objective's proxy alone (``"unconstrained"``): the baseline every table compares with."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from ._base import Game, model_combinations, register

__all__ = ["UnconstrainedGame"]


@register
class UnconstrainedGame(Game):
    """``method="unconstrained"``: gradient steps on the objective's proxy; constraints only recorded."""

    name = "unconstrained"
    #: Chosen by measurement (bench/unconstrained_quality.py): logistic
    #: regression's loss, Adam at 0.1 for 500 iterations.
    defaults = MappingProxyType({**Game.defaults, "n_iter": 500, "learning_rate": 0.1, "proxy": "logistic"})
    #: K classes: Adam at 0.02 for 500 iterations, the softmax cross-entropy ("logistic").
    class_defaults = MappingProxyType({**Game.defaults, "n_iter": 500, "learning_rate": 0.02, "proxy": "logistic"})
    resumable = True
    core_program = "unconstrained"

    def combinations(self):
        return model_combinations(self.spec, 1.0, np.zeros(self.spec.n_constraints), self.settings.proxy,
                                  self.objective_coef())

    def step(self, result):
        self.model_player.step(result.grad, result.grad_bias, result.grad_offsets)
        self.observe(result)

    def multipliers(self):
        return np.concatenate(([1.0], np.zeros(self.spec.n_constraints)))
