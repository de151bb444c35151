"""_utils."""
