"""_language."""
