"""``python -m rateopt``: the command line (:mod:`rateopt.cli`); with no arguments, the self-check and demo.

``python -m rateopt fit|evaluate|predict|report|...`` is the ``rateopt``
console script. The self-check (:mod:`rateopt.cli._selfcheck`) compares the
fused rate kernel and the multiplier player with plain NumPy on a small
generated problem and exits non-zero on any mismatch. The demo
(:mod:`rateopt._demo`) trains an unconstrained and an
equal-opportunity-constrained classifier on generated data and prints their
per-group rates side by side.
"""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
