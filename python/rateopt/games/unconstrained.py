"""The objective's proxy alone (``"unconstrained"``): the baseline every table compares with."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from .._training._model_kind import model_kind_of
from ._base import Game, model_combinations, register

__all__ = ["UnconstrainedGame"]


@register
class UnconstrainedGame(Game):
    """``method="unconstrained"``: gradient steps on the objective's proxy; constraints only recorded."""

    name = "unconstrained"
    #: Chosen by measurement (bench/unconstrained_quality.py): logistic
    #: regression's loss; Adam at 0.1 for 500 iterations where Adam steps
    #: (:meth:`default_optimizer`); at most 500 iterations of L-BFGS otherwise.
    defaults = MappingProxyType({**Game.defaults, "n_iter": 500, "learning_rate": 0.1, "proxy": "logistic"})
    exact_model_player = True
    #: K classes: Adam at 0.02 for 500 iterations, the softmax cross-entropy ("logistic").
    class_defaults = MappingProxyType({**Game.defaults, "n_iter": 500, "learning_rate": 0.02, "proxy": "logistic"})
    resumable = True
    core_program = "unconstrained"

    @classmethod
    def default_l2(cls, arity):
        """Two classes: ``"auto"``, scikit-learn's ``LogisticRegression(C=1)`` strength for the logistic proxy.

        Issue 35: on German credit the unregularized minimum's training error
        is 0.009 above ``LogisticRegression()``'s. K classes keep 0 (their
        softmax cross-entropy is in nats and trains with Adam).
        """
        return 0.0 if arity.multiclass else "auto"

    @classmethod
    def default_optimizer(cls, params, model, arity):
        """``"lbfgs"`` (the proxy's minimizer, exactly) where the objective is smooth, else ``"adam"``.

        L-BFGS for a two-class linear or kernel model with the logistic proxy
        (the default), full batch, no ``radius`` and no ``learning_rate``
        given; a given step size, minibatches, the hinge, a ball constraint,
        boosted trees or K classes keep Adam (issue 35, docs/defaults.md).
        """
        smooth = params.get("proxy") in (None, "logistic")
        linear = not model_kind_of(model).grows_iterates and model.radius is None
        if (smooth and linear and not arity.multiclass and params.get("batch_size") is None
                and params.get("learning_rate") is None):
            return "lbfgs"
        return "adam"

    def combinations(self):
        return model_combinations(self.spec, 1.0, np.zeros(self.spec.n_constraints), self.settings.proxy,
                                  self.objective_coef())

    def step(self, result):
        self.model_player.step(result.grad, result.grad_bias, result.grad_offsets)
        self.observe(result)

    def multipliers(self):
        return np.concatenate(([1.0], np.zeros(self.spec.n_constraints)))
