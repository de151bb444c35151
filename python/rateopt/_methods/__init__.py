"""Methods built on the driver: GroupOpt (seed 002), ramp-loss MM and cutting planes (seed 004), slack sweeps.

They import :mod:`rateopt._train` and below (docs/architecture.md, "Layers").
"""
