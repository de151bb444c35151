"""The ``[train]`` table of a goals file, checked against the training parameters and the games.

:func:`rateopt._compiler._toml.read_goals` only parses ``[train]``; the
command line, which trains with it, passes :func:`check_train_entry` so that
a wrong entry is reported with its line and key before any data is read.
"""

from __future__ import annotations

from .._params import MODEL_PARAMS, SOLUTION_PARAMS, TRAIN_PARAMS
from ..games import GAMES

__all__ = ["check_train_entry"]

#: The parameters a goals file may set: everything but what only a Python caller can give or the command line sets.
SETTABLE = {p.name: p for p in (*TRAIN_PARAMS, *MODEL_PARAMS, *SOLUTION_PARAMS)
            if p.name not in ("oracle", "verbose", "n_threads")}


def check_train_entry(key, value):
    """Check one ``[train]`` entry: a known parameter (or ``method``) with a valid value.

    Raises
    ------
    ValueError
        On an unknown key, an unknown method or an invalid value (the message
        names the parameter).
    """
    if key == "method":
        if value != "auto" and value not in GAMES:
            raise ValueError(f"method must be 'auto' or one of {sorted(GAMES)}, got {value!r}")
        return
    if key not in SETTABLE:
        raise ValueError(f"unknown training parameter {key!r}; known: {sorted([*SETTABLE, 'method'])}")
    SETTABLE[key].validate(value)
