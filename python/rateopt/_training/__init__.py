"""_training."""
