"""_methods."""
