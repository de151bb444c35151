"""Model specifications the training games accept."""

from __future__ import annotations

import math

from .._utils._validation import check_choice
from ._nystroem import KERNELS, NystroemMap

__all__ = ["LinearModel", "KernelModel"]


def check_l2(l2):
    """``l2`` validated: ``"auto"`` or a finite number >= 0 (as a float)."""
    if isinstance(l2, str):
        if l2 != "auto":
            raise ValueError(f"l2 must be 'auto' or a finite number >= 0, got {l2!r}")
        return l2
    try:
        value = float(l2)
    except (TypeError, ValueError):
        raise ValueError(f"l2 must be 'auto' or a finite number >= 0, got {l2!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"l2 must be 'auto' or a finite number >= 0, got {l2!r}")
    return value


def resolve_l2(l2, n_samples):
    """The L2 strength ``l2`` stands for on ``n_samples`` training rows.

    ``"auto"`` is ``1 / (n_samples ln 2)``: scikit-learn's ``LogisticRegression(C=1)``
    minimizes ``sum_j log(1 + e^{-y_j s_j}) + ||w||^2 / 2``, i.e. per row
    ``mean log(...) + ||w||^2 / (2 n)``; rateopt's logistic proxy is the same loss in
    bits (divided by ln 2), so the same minimizer needs ``l2 = 1 / (n ln 2)``. A
    number is returned as it is.
    """
    if l2 == "auto":
        return 1.0 / (max(int(n_samples), 1) * math.log(2.0))
    return float(l2)


class LinearModel:
    """A linear model ``h(x) = x . theta + bias`` (positive iff ``h >= 0``).

    Parameters
    ----------
    l2 : float or "auto", default=0.0
        L2 regularization ``l2/2 ||theta||^2`` added to the objective of the
        model player (the bias is not regularized). ``"auto"``: ``1 / (n ln 2)``,
        n the training rows (all datasets of the problem) -- scikit-learn's
        ``LogisticRegression(C=1)`` strength (for unit weights) for rateopt's
        logistic loss, which is measured in bits (:func:`resolve_l2`). Not the
        default here: a strength that depends on the data would make the fit
        depend either on the scale of sample weights or on whether a weight-2
        row is one row or two (docs/defaults.md). ``train(problem,
        method="unconstrained")`` given no model builds ``LinearModel(l2="auto")``:
        that method's default is ``LogisticRegression(C=1)``'s problem.
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
        l2 = check_l2(l2)
        if radius is not None:
            radius = float(radius)
            if not (math.isfinite(radius) and radius > 0):
                raise ValueError(f"radius must be a finite number > 0 or None, got {radius}")
        self.l2 = l2
        self.fit_intercept = bool(fit_intercept)
        self.radius = radius

    def __repr__(self):
        return f"LinearModel(l2={self.l2!r}, fit_intercept={self.fit_intercept}, radius={self.radius})"


class KernelModel:
    """A kernel model ``h(x) = sum_b alpha_b k(x, x_b) + beta`` over a basis of landmarks.

    With ``n_components >= n_samples`` (or ``exact=True``) the basis is the
    whole training set (the representer-theorem model); otherwise a Nystroem
    approximation with ``n_components`` landmarks. Training runs on the features
    ``phi(x) = K(x, B) K_BB^{-1/2}`` (built once, ``dtype`` float32 by default),
    on which the RKHS norm is the Euclidean norm: ``l2`` is the kernel
    regularizer.

    Parameters
    ----------
    kernel : {"rbf", "laplacian", "poly", "linear"}, default="rbf"
    gamma : float, default=None
        ``None`` means ``1 / n_features``.
    degree : float, default=3
    coef0 : float, default=1.0
    n_components : int, default=1000
        Number of landmarks.
    landmarks : {"uniform", "kmeans++"}, default="uniform"
    exact : bool, default=None
        Force (True) or forbid (False) the exact model; None decides from
        ``n_components``.
    l2 : float or "auto", default=0.0
        As :class:`LinearModel`'s (the RKHS norm's strength; ``"auto"``: ``1 / (n ln 2)``).
    fit_intercept : bool, default=True
    radius : float or None, default=None
    dtype : {"float32", "float64"}, default="float32"
        Dtype of the training feature block.
    random_state : int or None, default=None
        Seed of the landmark choice.

    Examples
    --------
    >>> from rateopt import KernelModel
    >>> KernelModel(kernel="rbf", gamma=0.5, n_components=200)
    KernelModel(kernel='rbf', gamma=0.5, n_components=200, landmarks='uniform', l2=0.0)
    """

    def __init__(self, kernel="rbf", gamma=None, degree=3, coef0=1.0, n_components=1000, landmarks="uniform",
                 exact=None, l2=0.0, fit_intercept=True, radius=None, dtype="float32", random_state=None):
        check_choice("kernel", kernel, tuple(KERNELS))
        check_choice("landmarks", landmarks, ("uniform", "kmeans++"))
        if gamma is not None and not (math.isfinite(float(gamma)) and float(gamma) > 0):
            raise ValueError(f"gamma must be a positive finite number or None, got {gamma!r}")
        if int(n_components) < 1:
            raise ValueError(f"n_components must be >= 1, got {n_components}")
        if str(dtype) not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.n_components = int(n_components)
        self.landmarks = landmarks
        self.exact = exact
        self.dtype = str(dtype)
        self.random_state = random_state
        self._linear = LinearModel(l2=l2, fit_intercept=fit_intercept, radius=radius)

    @property
    def l2(self):
        return self._linear.l2

    @property
    def fit_intercept(self):
        return self._linear.fit_intercept

    @property
    def radius(self):
        return self._linear.radius

    def fit_map(self, X, n_threads=None):
        """Choose the landmarks on ``X`` and return the :class:`~rateopt._predictors._nystroem.NystroemMap`."""
        return NystroemMap.fit(X, kernel=self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                               n_components=self.n_components, landmarks=self.landmarks, exact=self.exact,
                               dtype=self.dtype, random_state=self.random_state, n_threads=n_threads)

    def __repr__(self):
        return (f"KernelModel(kernel={self.kernel!r}, gamma={self.gamma}, n_components={self.n_components}, "
                f"landmarks={self.landmarks!r}, l2={self.l2!r})")
