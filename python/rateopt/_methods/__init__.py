"""Methods built on the driver: GroupOpt (Alabi et al., 2018), ramp-loss MM and cutting planes (Goh et al., 2016), slack sweeps.

They import :mod:`rateopt._train` and below (docs/architecture.md, "Layers").
"""
