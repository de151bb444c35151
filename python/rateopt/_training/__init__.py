"""What the games train with: the game spec and kernel pass, the players, per-row coefficients.

It imports the predictors and below (docs/architecture.md, "Layers").
"""
