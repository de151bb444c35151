"""Exceptions and warnings raised by rateopt.

Every error a user can cause is a subclass of :class:`ValueError` or
:class:`TypeError`, so generic handlers (and scikit-learn's checks) see the
usual types; the subclasses let callers catch rateopt's own conditions.
"""

__all__ = ["RateoptError", "DataCopyWarning", "NumericalError"]


class RateoptError(ValueError):
    """Invalid input or problem statement detected by rateopt."""


class NumericalError(RateoptError):
    """A computation produced non-finite values (e.g. scores overflowed)."""


class DataCopyWarning(UserWarning):
    """Input data had to be copied or converted to a layout the core reads in place."""


# --- rate-expression language (rateopt._data, _rates, goals, _problem) ---

__all__ += [
    "EmptySubsetError",
    "MissingLabelsError",
    "MissingBaselineError",
    "ConstantConstraintError",
]


class EmptySubsetError(RateoptError):
    """A rate is taken over a subset that is empty or whose weights sum to zero.

    The message names the constraint (or the objective) and the subset.
    """


class MissingLabelsError(RateoptError):
    """A rate that needs labels (TPR, error rate, ...) is taken on an unlabeled dataset."""


class MissingBaselineError(RateoptError):
    """A rate that needs a baseline model (churn, wins, losses, ...) is taken on a
    dataset without ``baseline`` decisions."""


class ConstantConstraintError(RateoptError):
    """A constraint does not depend on the model's decisions (all its atom
    coefficients cancel), so no model can change whether it holds."""
