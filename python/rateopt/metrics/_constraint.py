"""Constraints on metrics: ``psi(z) <= bound``, trained by the three-player game."""

from __future__ import annotations

import math

from .._language._expressions import as_scalar

__all__ = ["MetricConstraint", "finite_bound"]


def finite_bound(bound):
    """A metric constraint's bound as a finite float.

    Parameters
    ----------
    bound : float
        The bound given with ``<=`` or ``>=``.

    Returns
    -------
    float
        The bound.

    Raises
    ------
    TypeError
        If it is not a finite real number.
    """
    b = as_scalar(bound)
    if b is None or not math.isfinite(b):
        raise TypeError(f"a metric constraint's bound must be a finite number, got {bound!r}")
    return b


class MetricConstraint:
    """The constraint ``psi(z) <= bound`` on a convex metric (trained by the three-player game).

    Parameters
    ----------
    metric : Metric
        The loss ``psi``.
    bound : float
        Its upper bound.
    name : str, default=None
        Default ``"<metric> <= <bound>"``.
    """

    def __init__(self, metric, bound, name=None):
        b = finite_bound(bound)
        self.metric = metric
        self.bound = float(b)
        self.name = name if name is not None else f"{metric.name} <= {self.bound:g}"

    @property
    def expression(self):
        """The constrained metric (what :class:`~rateopt.Problem` reads datasets and leaves from)."""
        return self.metric

    def named(self, name):
        """The same constraint under another name.

        Parameters
        ----------
        name : str
            The new name.

        Returns
        -------
        MetricConstraint
        """
        return MetricConstraint(self.metric, self.bound, name)

    def __bool__(self):
        raise TypeError(f"the truth value of constraint {self.name!r} is undefined")

    def __repr__(self):
        return self.name
