"""Model specifications the training games accept."""

from __future__ import annotations

import math

__all__ = ["LinearModel"]


class LinearModel:
    """A linear model ``h(x) = x . theta + bias`` (positive iff ``h >= 0``).

    Parameters
    ----------
    l2 : float, default=0.0
        L2 regularization ``l2/2 ||theta||^2`` added to the objective of the
        model player (the bias is not regularized).
    fit_intercept : bool, default=True
        Whether to train a bias.
    radius : float or None, default=None
        If given, ``theta`` is projected onto the L2 ball of this radius after
        every step (the compact domain Theta of the theory).

    Examples
    --------
    >>> from rateopt import LinearModel
    >>> LinearModel(l2=1e-3)
    LinearModel(l2=0.001, fit_intercept=True, radius=None)
    """

    def __init__(self, l2=0.0, fit_intercept=True, radius=None):
        l2 = float(l2)
        if not (math.isfinite(l2) and l2 >= 0):
            raise ValueError(f"l2 must be a finite number >= 0, got {l2}")
        if radius is not None:
            radius = float(radius)
            if not (math.isfinite(radius) and radius > 0):
                raise ValueError(f"radius must be a finite number > 0 or None, got {radius}")
        self.l2 = l2
        self.fit_intercept = bool(fit_intercept)
        self.radius = radius

    def __repr__(self):
        return f"LinearModel(l2={self.l2}, fit_intercept={self.fit_intercept}, radius={self.radius})"
