"""The proxy-Lagrangian game with swap regret (Cotter et al., 2019, Algorithm 3; ``"proxy-swap"``).

The model player steps on the proxy Lagrangian ``lambda_0 g~0 + sum_i lambda_i g~i``;
the multiplier player lives on the (m+1)-simplex, sees the true 0-1 constraint
values ``g_i`` and minimizes swap regret through a left-stochastic matrix whose
stationary distribution it plays.
"""

from __future__ import annotations

import math
from types import MappingProxyType

from .._training._players import SwapRegretPlayer
from ._base import MODEL_PLAYER_SETTINGS, MultiplierGame, register

__all__ = ["ProxySwapGame"]


@register
class ProxySwapGame(MultiplierGame):
    """``method="proxy-swap"``: proxies for the model, swap-regret multipliers on 0-1 rates."""

    name = "proxy-swap"
    #: Chosen by measurement (docs/defaults.md, bench/defaults_study.py): the
    #: logistic objective proxy, Adam at 0.1 for 250 iterations, TFCO's
    #: objective-focused start and minimum-multiplier floor; ``eta_lambda``
    #: from :meth:`default_eta_lambda`.
    defaults = MappingProxyType({
        "n_iter": 250, "learning_rate": 0.1, "proxy": "logistic", "eta_lambda": None,
        "lambda_init": "objective", "lambda_floor": 1e-3})
    #: K classes (see ``Game.class_defaults``): Adam at 0.02 for at most 500 iterations, the softmax
    #: cross-entropy ("logistic") objective proxy, TFCO's objective-focused start and floor; the
    #: stopping rule on (full batch): after the warm-up, stop once the m-stochastic LP over the records
    #: has improved by at most 1e-4 over 50 records (docs/defaults.md, "K classes: the stopping rule").
    class_defaults = MappingProxyType({
        "n_iter": 500, "learning_rate": 0.02, "proxy": "logistic", "eta_lambda": None,
        "lambda_init": "objective", "lambda_floor": 1e-3, "objective_warmup": 0.2,
        "stop_tol": 1e-4, "stop_patience": 50})
    class_eta = 3.0
    reads = MODEL_PLAYER_SETTINGS | {"eta_lambda", "update", "lambda_init", "lambda_floor", "objective_warmup"}
    resumable = True
    core_program = "proxy-swap"
    #: The game reads the pass's rates and gradient, never its proxy value (a K-class pass then skips it).
    reads_proxy_values = False

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        self.player = SwapRegretPlayer(spec.n_constraints, eta_lambda=settings.eta_lambda,
                                       update=settings.update, init=settings.lambda_init,
                                       floor=settings.lambda_floor)

    #: The default step is ``DEFAULT_ETA / B``: chosen by measurement
    #: (docs/defaults.md, bench/defaults_study.py) with TFCO's objective-focused
    #: start and floor; Lemma 8's step is :meth:`lemma8_eta_lambda`.
    DEFAULT_ETA = 3.0

    @classmethod
    def default_eta_lambda(cls, spec, settings):
        """``3 / B``, B the largest possible ``|g_i|`` (so the step does not depend on the
        constraints' units); Lemma 8's ``sqrt((m+1) ln(m+1) / (T B^2))`` when the
        multipliers start uniform (``lambda_init="uniform"``, the paper's setting)."""
        if spec.n_constraints == 0:
            return 0.0
        if settings.lambda_init == "uniform":
            return cls.lemma8_eta_lambda(spec, settings)
        return cls.DEFAULT_ETA / spec.constraint_bound()

    @staticmethod
    def lemma8_eta_lambda(spec, settings):
        """Lemma 8: ``sqrt((m+1) ln(m+1) / (T B^2))``, B the largest possible ``|g_i|``."""
        k, T, B = spec.n_constraints + 1, max(settings.n_iter, 1), spec.constraint_bound()
        return math.sqrt(k * math.log(k) / (T * B * B)) if k > 1 else 0.0
