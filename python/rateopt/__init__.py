"""rateopt: train classifiers whose prediction rates meet real-world goals.

The public API is re-exported here; the compiled core lives in the private
module :mod:`rateopt._core` and is reached through :mod:`rateopt.core`.
"""

from . import core, exceptions
from ._config import get_config, show_config
from .core import AtomTable, FeatureMatrix, rate_kernel

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "core",
    "exceptions",
    "show_config",
    "get_config",
    "FeatureMatrix",
    "AtomTable",
    "rate_kernel",
]
