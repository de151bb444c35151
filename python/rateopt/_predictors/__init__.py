"""Predictors: model specifications, the Nystroem feature map, linear and stochastic classifiers, ensembles.

They import the compiler and below (docs/architecture.md, "Layers").
"""
