"""Exceptions and warnings raised by rateopt.

Every error a user can cause is a subclass of :class:`ValueError` or
:class:`TypeError`, so generic handlers (and scikit-learn's checks) see the
usual types; the subclasses let callers catch rateopt's own conditions.
"""

__all__ = [
    "RateoptError",
    "DataCopyWarning",
    "NumericalError",
    "InfeasibleWarning",
    "EmptySubsetError",
    "MissingLabelsError",
    "MissingBaselineError",
    "ConstantConstraintError",
]


class RateoptError(ValueError):
    """Invalid input or problem statement detected by rateopt."""


class NumericalError(RateoptError):
    """A computation produced non-finite values (e.g. scores overflowed)."""


class DataCopyWarning(UserWarning):
    """Input data had to be copied or converted to a layout the core reads in place."""


class InfeasibleWarning(UserWarning):
    """A trained solution violates the training constraints.

    Raised as a warning by :func:`rateopt.train` when no mixture of the
    recorded iterates meets every training constraint, and by
    :meth:`rateopt.RateConstrainedClassifier.fit` when its chosen solution
    violates one (beyond the ``epsilon`` it allows). The message names the
    violated constraints with their values and the smallest largest violation
    any mixture of the iterates achieves; the same facts are available as a
    :class:`rateopt.FeasibilityReport` (``TrainResult.feasibility()``,
    ``RateConstrainedClassifier.feasibility_``).
    """


# --- rate-expression language (rateopt._language, goals, the compiler) ---


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
