"""The lowest layer: argument validation, row hashing, the ``.npz`` + JSON file container, JSON-ready values.

It imports nothing of rateopt but :mod:`rateopt.exceptions` (docs/architecture.md, "Layers").
"""
