"""The subcommands of ``rateopt`` (see :mod:`rateopt.cli`): one module each, dispatched from here.

A command's module is imported when the command runs, so ``rateopt --help``
and argument errors load neither scikit-learn nor the training code.
"""

from __future__ import annotations

import importlib

__all__ = ["COMMANDS", "run"]

#: The commands by name: ``(module, function)`` of each, relative to this package, or a callable.
COMMANDS = {"fit": ("_fit", "fit"), "evaluate": ("_evaluate", "evaluate"), "predict": ("_predict", "predict"),
            "report": ("_report", "report"), "datasets": ("_datasets", "datasets"),
            "reproduce": ("_info", "reproduce"), "selfcheck": ("_info", "selfcheck"), "demo": ("_info", "demo")}


def command(name):
    """The function that runs the command ``name`` (its module imported now)."""
    entry = COMMANDS[name]
    if callable(entry):
        return entry
    module, function = entry
    return getattr(importlib.import_module(f".{module}", __package__), function)


def run(args):
    """Run the command ``args.command`` (no command: the demo); return its exit status."""
    return command(args.command or "demo")(args)
