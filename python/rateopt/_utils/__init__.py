"""The lowest layer: argument validation, row hashing, the ``.npz`` + JSON file container, JSON-ready values,
atomic file writes (``_atomic``), and the silent HiGHS solver and the one LP helper every LP uses
(``_highs.quiet_highs``, ``_highs.solve_lp``).

It imports nothing of rateopt but :mod:`rateopt.exceptions` (docs/architecture.md, "Layers").
"""
