"""_solutions."""
