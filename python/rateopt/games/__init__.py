"""The training games, by method name.

A game is a class implementing :class:`~rateopt.games._base.Game`: it owns its
players, says which rate combinations the kernel must evaluate at its current
model, and updates every player from the kernel's result. :func:`rateopt.train`
drives any registered game the same way, with no method-specific code.

Adding a game: write its module here (a subclass of ``Game`` decorated with
``@register``) and import the module below: one line.
"""

# Registration, in the order the methods are listed (one line per game).
from . import (
    lagrangian,  # noqa: E402,F401
    oracle,  # noqa: E402,F401
    proxy_lagrangian,  # noqa: E402,F401,I001
    three_player,  # noqa: E402,F401
    unconstrained,  # noqa: E402,F401
)
from ._base import GAMES, Combinations, Game, register

__all__ = ["GAMES", "Game", "Combinations", "register", "get_game"]


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
