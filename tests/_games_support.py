"""Training parameters for tests that run the same settings over several methods.

A game refuses a game-specific training parameter it does not read
(``Game.reads``; ``rateopt._params.train_settings``), so a test that passes,
say, ``eta_lambda=0.5`` to every method gives it only to the games that read it.
"""

from __future__ import annotations

from rateopt._params import DRIVER_PARAMS, TRAIN_PARAMS
from rateopt.games import get_game

_TRAIN = frozenset(p.name for p in TRAIN_PARAMS)


def params_for(method_name, **params):
    """``params`` less the game-specific training parameters that ``method_name``'s game does not read."""
    game = get_game(method_name)
    reads = set(game.reads) | set(getattr(params.get("oracle"), "reads", ()))
    return {k: v for k, v in params.items() if k not in _TRAIN or k in DRIVER_PARAMS or k in reads}
