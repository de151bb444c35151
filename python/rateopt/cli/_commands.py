"""The subcommands of ``rateopt`` (see :mod:`rateopt.cli`): one module each, dispatched from here."""

from __future__ import annotations

from ._datasets import datasets
from ._evaluate import evaluate
from ._fit import fit
from ._info import demo, reproduce, selfcheck
from ._predict import predict
from ._report import report

__all__ = ["COMMANDS", "run"]

#: The commands by name.
COMMANDS = {"fit": fit, "evaluate": evaluate, "predict": predict, "report": report, "datasets": datasets,
            "reproduce": reproduce, "selfcheck": selfcheck, "demo": demo}


def run(args):
    """Run the command ``args.command`` (no command: the demo); return its exit status."""
    return COMMANDS[args.command or "demo"](args)
