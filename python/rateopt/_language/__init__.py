"""The rate language: datasets and contexts, rate expressions and their algebra, lowering, ROC-AUC, predictions.

It imports :mod:`rateopt.core` and the utilities only (docs/architecture.md, "Layers").
"""
