"""_compiler."""
