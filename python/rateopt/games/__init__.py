"""The training games, by method name.

A game is a class implementing :class:`~rateopt.games._base.Game`: it owns its
players, says which rate combinations the kernel must evaluate at its current
model, and updates every player from the kernel's result. :func:`rateopt.train`
drives any registered game the same way, with no method-specific code.

Adding a game: write its module here (a subclass of ``Game`` decorated with
``@register``, its facts on the class: ``defaults``, ``reads``, ``resumable``,
``core_program``) and add the module to the import below: one line.
"""

from ._base import GAMES, Combinations, Game, register

# isort: off
# Registration, in the order the methods are listed (one module per game).
from . import proxy_lagrangian, lagrangian, unconstrained, three_player, oracle
# isort: on

__all__ = ["GAMES", "Game", "Combinations", "register", "get_game", "GAME_MODULES"]

#: The modules of the built-in games: importing one registers its games, so their order is the methods' order.
GAME_MODULES = (proxy_lagrangian, lagrangian, unconstrained, three_player, oracle)


def get_game(method):
    """The game class registered under ``method``.

    Raises
    ------
    ValueError
        If no game has that name (the message lists the registered ones).
    """
    try:
        return GAMES[method]
    except (KeyError, TypeError):
        raise ValueError(f"method must be one of {tuple(GAMES)}, got {method!r}") from None
