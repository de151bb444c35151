"""SDCA: the exact solver of the weighted two-sided hinge loss with L2 regularization (issue 12)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .._utils._validation import as_finite_scalar, as_float_vector, check_int
from ..exceptions import NumericalError
from ._matrix import FeatureMatrix
from ._runtime import extension as _core

__all__ = ["SdcaResult", "sdca_two_sided_hinge"]

_SDCA_STATUS = {0: "converged", 1: "max_epochs", 2: "nonfinite"}


@dataclass(frozen=True)
class SdcaResult:
    """What :func:`sdca_two_sided_hinge` returns.

    Parameters
    ----------
    theta : ndarray of shape (n_features,)
        The weights, ``theta(xi) = -(1/(lam n)) sum_j xi_j x_j``.
    bias : float
        ``beta`` (fixed bias) or ``bias_scale * w_c`` (regularized bias).
    xi : ndarray of shape (n_samples,)
        The dual variables, ``xi_j`` in ``[-B_j, A_j]`` (0 for rows with
        ``A_j = B_j = 0``); pass them back as ``xi0`` to warm-start.
    primal : float
        ``P(theta)``, the objective at the returned model.
    dual : float
        ``D(xi)``, a lower bound on the optimal ``P``.
    gap : float
        ``primal - dual`` (>= 0 up to rounding): ``primal`` is within ``gap`` of
        the optimum.
    n_epochs : int
        Epochs run (passes of coordinate steps over the rows not shrunk).
    sum_xi : float
        ``sum_j xi_j``; ``sum_xi / n`` is the derivative of the dual value in
        ``beta`` (the slope of a cutting plane over a fixed bias).
    converged : bool
        Whether ``gap <= tol * max(1, |primal|)``.
    """

    theta: np.ndarray
    bias: float
    xi: np.ndarray
    primal: float
    dual: float
    gap: float
    n_epochs: int
    sum_xi: float
    converged: bool


def _sdca_weights(v, name, n):
    v = as_float_vector(v, name, ("n_samples", n))
    if np.any(v < 0):
        j = int(np.flatnonzero(v < 0)[0])
        raise ValueError(f"{name} must be non-negative, got {float(v[j])!r} at position {j}")
    return v


def sdca_two_sided_hinge(X, A, B, *, lam, tau=1.0, beta=0.0, bias="fixed", bias_scale=1.0, theta0=None,
                         bias0=None, xi0=None, tol=1e-8, max_epochs=100_000, random_state=0):
    """Minimize a weighted two-sided hinge loss with L2 regularization exactly (SDCA).

    Solves

    ``P(theta) = (1/n) sum_j [A_j max(0, tau + s_j) + B_j max(0, tau - s_j)] + (lam/2) ||theta||^2``

    with ``s_j = x_j . theta + bias``, by stochastic dual coordinate ascent with
    the closed-form coordinate step, until the duality gap
    ``P(theta(xi)) - D(xi) <= tol * max(1, |P|)``. Each row may carry both
    hinges. With ``A_j = n max(u_j, 0)``, ``B_j = n max(-u_j, 0)`` and
    ``tau = margin`` this minimizes the net-hinge proxy that
    :func:`rate_kernel` computes for the per-row coefficients ``u`` (up to the
    constant ``-sum_j max(-u_j, 0)`` and the regularizer).

    Parameters
    ----------
    X : FeatureMatrix or array-like of shape (n_samples, n_features)
        Dense or CSR, float32 or float64 (every sum in float64).
    A : array-like of shape (n_samples,)
        Weights of ``max(0, tau + s_j)`` (the cost of scoring row ``j``
        positive), finite and non-negative.
    B : array-like of shape (n_samples,)
        Weights of ``max(0, tau - s_j)`` (the cost of scoring it negative).
    lam : float
        L2 regularization, > 0.
    tau : float, default=1.0
        The hinge margin, > 0.
    beta : float, default=0.0
        The fixed bias (``bias="fixed"``); must be 0 with ``bias="regularized"``.
    bias : {"fixed", "regularized"}, default="fixed"
        ``"fixed"``: the bias is ``beta``. ``"regularized"``: each row gets a
        constant feature ``bias_scale`` whose weight ``w_c`` is penalized like
        ``theta`` (LIBLINEAR's bias, scikit-learn's ``intercept_scaling``); the
        returned bias is ``bias_scale * w_c`` and ``lam/2 w_c^2`` is part of ``P``.
    bias_scale : float, default=1.0
        The constant feature's value (> 0) for ``bias="regularized"``.
    theta0 : array-like of shape (n_features,), default=None
        Primal warm start, used when ``xi0`` is None: each ``xi_j`` starts at
        the subgradient of its loss at ``s_j = x_j . theta0 + bias0``
        (``A_j`` above ``tau``, ``-B_j`` below ``-tau``, ``A_j - B_j`` between),
        and the start is ``theta(xi)``, not ``theta0`` itself (the gap is only
        valid for a model that is ``theta(xi)``). From an exact solution this is
        that solution except for rows on a kink, whose ``xi`` it cannot know.
        Ignored when ``xi0`` is given (``xi0`` determines the start).
    bias0 : float, default=None
        The model's bias for the primal warm start with
        ``bias="regularized"`` (None: 0); with ``bias="fixed"`` the bias is
        ``beta`` and ``bias0`` must be None.
    xi0 : array-like of shape (n_samples,), default=None
        Dual warm start (e.g. ``SdcaResult.xi`` of an earlier solve): each
        ``xi0_j`` is clipped into ``[-B_j, A_j]`` (so a solution for other
        weights is a valid start) and the start is ``theta(xi)``.
    tol : float, default=1e-8
        Relative duality-gap tolerance (>= 0).
    max_epochs : int, default=100_000
        At most this many epochs (>= 0). An epoch is one pass over the rows
        not shrunk (see Notes), so late epochs are cheap. ``0`` only evaluates
        the start: ``primal``, ``dual`` and ``gap`` of ``theta(xi0)`` and ``xi0``.
    random_state : int, default=0
        Seed (0 <= seed < 2**64) of the per-epoch row permutations (splitmix64:
        the same iterates on every platform).

    Returns
    -------
    SdcaResult
        The model (``theta``, ``bias``), the dual point ``xi``, the primal and
        dual values, the gap, the epochs run and ``converged``.

    Raises
    ------
    ValueError
        On shape mismatches, non-finite or negative ``A``/``B``, non-finite
        ``X``/``theta0``/``xi0``, ``lam <= 0``, ``tau <= 0``,
        ``bias_scale <= 0``, a nonzero ``beta`` with a regularized bias, or
        an invalid ``bias``, ``tol``, ``max_epochs`` or ``random_state``.
    rateopt.exceptions.NumericalError
        If the objective overflowed, or a row's ``||x||^2 / (lam n)`` did
        (scale ``X`` or the weights, or increase ``lam``).

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        If ``max_epochs >= 1`` epochs did not reach the tolerance.

    Notes
    -----
    Dual: ``D(xi) = -(1/n) sum_j l_j*(xi_j) - (lam/2) ||theta(xi)||^2 + (beta/n) sum_j xi_j``
    with ``l_j*(xi) = tau (|xi - A_j + B_j| - A_j - B_j)`` on ``[-B_j, A_j]``
    (``methods_spec.md`` §1.4). The solver is sequential (coordinate steps
    depend on each other) and deterministic: rows with ``A_j = B_j = 0`` keep
    ``xi_j = 0`` and are never visited; the others are reshuffled before every
    epoch from the seed. Rows that are optimal with room to spare (their score
    could move by more than the last epoch's largest violation without their
    ``xi`` moving) are shrunk out of the epochs, as in LIBLINEAR, and put back
    whenever a gap check fails; the gap (one pass over every row) is checked
    after every full epoch and when a shrunk epoch's violation has fallen
    tenfold, so every stop is decided on all rows. The returned ``theta`` is
    recomputed from ``xi`` before the final gap is evaluated. See
    ``cpp/include/rateopt/sdca.hpp``.

    References
    ----------
    .. [1] S. Shalev-Shwartz, T. Zhang. "Stochastic Dual Coordinate Ascent
       Methods for Regularized Loss Minimization". JMLR 14, 2013.
    .. [2] G. Goh, A. Cotter, M. Gupta, M. Friedlander. "Satisfying Real-world
       Goals with Dataset Constraints". NIPS 2016 (Eqs. 16-19, App. F).

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import sdca_two_sided_hinge
    >>> X = np.array([[1.0], [-1.0], [2.0], [-2.0]])
    >>> A = np.array([0.0, 1.0, 0.0, 1.0])   # rows 1, 3: cost of a positive score
    >>> B = np.array([1.0, 0.0, 1.0, 0.0])   # rows 0, 2: cost of a negative score
    >>> res = sdca_two_sided_hinge(X, A, B, lam=0.1, tol=1e-12)
    >>> res.converged, round(float(res.theta[0]), 6)
    (True, 1.0)
    """
    Xm = X if isinstance(X, FeatureMatrix) else FeatureMatrix(X)
    n, d = Xm.n_samples, Xm.n_features
    A = _sdca_weights(A, "A", n)
    B = _sdca_weights(B, "B", n)
    lam = as_finite_scalar(lam, "lam")
    if lam <= 0:
        raise ValueError(f"lam must be > 0, got {lam}")
    tau = as_finite_scalar(tau, "tau")
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    beta = as_finite_scalar(beta, "beta")
    if bias not in ("fixed", "regularized"):
        raise ValueError(f"bias must be 'fixed' or 'regularized', got {bias!r}")
    regularized = bias == "regularized"
    bias_scale = as_finite_scalar(bias_scale, "bias_scale")
    if bias_scale <= 0:
        raise ValueError(f"bias_scale must be > 0, got {bias_scale}")
    if regularized and beta != 0:
        raise ValueError(f"beta must be 0 with bias='regularized' (the bias is learned), got {beta}")
    if bias0 is not None and not regularized:
        raise ValueError("bias0 is only used with bias='regularized' (with bias='fixed' the bias is beta)")
    bias0 = 0.0 if bias0 is None else as_finite_scalar(bias0, "bias0")
    if theta0 is not None:
        theta0 = as_float_vector(theta0, "theta0", ("n_features", d))
    if xi0 is not None:
        xi0 = as_float_vector(xi0, "xi0", ("n_samples", n))
    tol = as_finite_scalar(tol, "tol")
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    max_epochs = check_int("max_epochs", max_epochs, 0, maximum=math.inf)  # the core's conversion bounds it
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) \
            or not 0 <= int(random_state) < 2**64:
        raise ValueError(f"random_state must be an integer in [0, 2**64), got {random_state!r}")
    args = (A, B, lam, tau, beta, regularized, bias_scale, theta0, bias0, xi0, tol, max_epochs, int(random_state))
    if Xm.is_sparse:
        out = _core.sdca_two_sided_hinge_csr(*Xm.csr_arrays, n, d, *args)
    else:
        out = _core.sdca_two_sided_hinge_dense(Xm.data, *args)
    theta, b, xi, primal, dual, gap, epochs, sum_xi, status = out
    status = _SDCA_STATUS[int(status)]
    if status == "nonfinite":
        raise NumericalError("the SDCA objective overflowed (a non-finite primal or dual value, or a row's "
                             "||x||^2 / (lam n) beyond the float64 range): scale X or the weights A and B, "
                             "or increase lam")
    converged = status == "converged"
    if not converged and max_epochs > 0:
        from sklearn.exceptions import ConvergenceWarning  # lazy: `import rateopt` loads no scikit-learn

        warnings.warn(f"SDCA stopped after max_epochs={max_epochs} epochs with duality gap {gap:.3g} "
                      f"(tolerance {tol:g} x max(1, |P| = {abs(primal):.3g})): increase max_epochs or lam",
                      ConvergenceWarning, stacklevel=2)
    return SdcaResult(theta=theta, bias=float(b), xi=xi, primal=float(primal), dual=float(dual), gap=float(gap),
                      n_epochs=int(epochs), sum_xi=float(sum_xi), converged=converged)
