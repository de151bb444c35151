"""The few scikit-learn internals rateopt relies on, imported in one place.

``sklearn.utils._param_validation`` is private; it is stable across the
versions we support (scikit-learn >= 1.6, see pyproject.toml).
"""

from sklearn.utils._param_validation import Interval, StrOptions

__all__ = ["Interval", "StrOptions"]
