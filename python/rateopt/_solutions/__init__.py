"""What a training run leaves: the result and its solutions, the shrinking LP, stopping and checkpoints.

It imports the games, oracles and below (docs/architecture.md, "Layers").
"""
