"""The multiplier players' primitives: swap-regret and external updates, projections.

The validated functions (:func:`swap_regret_update`,
:func:`swap_regret_update_additive`, :func:`stationary_distribution`,
:func:`external_update_multiplicative`, :func:`external_update_additive`,
:func:`project_simplex`, :func:`project_l1_ball_nonneg`) check their inputs
and refuse an update whose result leaves the float64 range. The trusted entry
points (:func:`stationary_distribution_trusted`, :func:`swap_update_trusted`)
check nothing: they are for a player whose state is valid by construction (it
only ever holds what these updates returned), which would otherwise re-validate
a ``(k, k)`` matrix on every iteration.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .._utils._validation import as_finite_scalar, as_float_vector
from ..exceptions import NumericalError
from ._runtime import extension as _core

__all__ = [
    "swap_regret_update",
    "swap_regret_update_additive",
    "stationary_distribution",
    "external_update_multiplicative",
    "external_update_additive",
    "project_simplex",
    "project_l1_ball_nonneg",
    "stationary_distribution_trusted",
    "swap_update_trusted",
]

def _square(a, name):
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {arr.shape}")
    return arr


def _finite_matrix(a, name, allow_neg_inf=False):
    arr = _square(a, name)
    ok = np.isfinite(arr) | (allow_neg_inf & np.isneginf(arr))
    if not np.all(ok):
        raise ValueError(f"{name} holds a non-finite value")
    return arr


def _check_update(z, eta, *, log_space):
    """Refuse a multiplier update whose result the core cannot represent.

    ``z`` is the updated matrix or vector before normalization or projection,
    computed in the core's order (``(eta * delta[j]) * lam[i]``). In log space
    ``-inf`` entries are probabilities of 0 and allowed, but NaN (``inf * 0``,
    ``inf - inf``) and ``+inf`` are not, nor a column with no finite entry;
    otherwise every entry must be finite.
    """
    if log_space:
        bad = bool(np.any(np.isnan(z) | np.isposinf(z))) or not bool(np.all(np.any(np.isfinite(z), axis=0)))
    else:
        bad = not bool(np.all(np.isfinite(z)))
    if bad:
        raise NumericalError(
            f"the multiplier update overflows: eta * delta * lam leaves the float64 range (eta={eta!r}); "
            "reduce eta or rescale the constraints"
        )


def _step(eta, delta, lam=None):
    """``eta * delta`` (outer with ``lam``), in the core's order of operations."""
    with np.errstate(over="ignore", invalid="ignore"):
        d = eta * delta
        return d if lam is None else d[:, None] * lam[None, :]


def _check_stochastic(M, name):
    if np.any(M < 0) or not np.allclose(M.sum(axis=0), 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"{name} must be left-stochastic: non-negative with every column summing to 1")


def swap_regret_update(log_M, delta, lam, eta, floor=0.0):
    """Multiplicative swap-regret step of the proxy-Lagrangian multiplier player.

    Computes ``M <- colnormalize(M * exp(eta * outer(delta, lam)))`` in log space:
    ``log_M[j, i] += eta * delta[j] * lam[i]``, then each column is normalized
    with log-sum-exp (Cotter et al., 2019, Algorithm 3, lines 8-9). With ``floor > 0``,
    entries below ``floor`` are then raised to it and their columns normalized
    again (TFCO's ``minimum_multiplier_radius`` r gives ``floor = r / k``).

    Parameters
    ----------
    log_M : array-like of shape (k, k)
        Logarithm of a left-stochastic matrix (entries may be ``-inf``).
    delta : array-like of shape (k,)
        The gain ``(0, g_1, ..., g_m)`` (the 0-1 constraint values).
    lam : array-like of shape (k,)
        The current multipliers (the stationary distribution of ``M``).
    eta : float
        Step size.
    floor : float, default=0.0
        Smallest entry of the updated ``M`` (up to the renormalization), in
        ``[0, 1/k)``; 0: none.

    Returns
    -------
    ndarray of shape (k, k)
        The updated ``log M``; ``exp`` of it has columns summing to 1.
    """
    log_M = _finite_matrix(log_M, "log_M", allow_neg_inf=True)
    k = log_M.shape[0]
    if not np.all(np.any(np.isfinite(log_M), axis=0)):
        raise ValueError("log_M has a column of only -inf: it is not the logarithm of a stochastic matrix")
    delta = as_float_vector(delta, "delta", ("k", k))
    lam = as_float_vector(lam, "lam", ("k", k))
    eta = as_finite_scalar(eta, "eta")
    floor = as_finite_scalar(floor, "floor")
    if not 0.0 <= floor < 1.0 / k:
        raise ValueError(f"floor must be in [0, 1/k) = [0, {1.0 / k:g}), got {floor!r}")
    with np.errstate(invalid="ignore"):
        _check_update(log_M + _step(eta, delta, lam), eta, log_space=True)
    return _core.swap_update_multiplicative(log_M, delta, lam, eta, floor)


def swap_regret_update_additive(M, delta, lam, eta):
    """Additive swap-regret step: ``M + eta * outer(delta, lam)``, columns projected onto the simplex.

    Parameters
    ----------
    M : array-like of shape (k, k)
        A left-stochastic matrix.
    delta : array-like of shape (k,)
        The gain ``(0, g_1, ..., g_m)``.
    lam : array-like of shape (k,)
        The current multipliers.
    eta : float
        Step size.

    Returns
    -------
    ndarray of shape (k, k)
        The updated left-stochastic matrix.
    """
    M = _finite_matrix(M, "M")
    k = M.shape[0]
    delta = as_float_vector(delta, "delta", ("k", k))
    lam = as_float_vector(lam, "lam", ("k", k))
    eta = as_finite_scalar(eta, "eta")
    with np.errstate(over="ignore", invalid="ignore"):
        _check_update(M + _step(eta, delta, lam), eta, log_space=False)
    return _core.swap_update_additive(M, delta, lam, eta)


def stationary_distribution(M, lam0=None, *, tol=1e-12, max_iter=100, return_info=False):
    """A stationary distribution ``lam = M lam`` of a left-stochastic matrix.

    Power iteration ``lam <- M lam`` from ``lam0`` until ``||M lam - lam||_1 <= tol``;
    if that does not happen within ``max_iter`` steps (periodic or slowly mixing
    chains), the exact GTH state reduction is used instead, which also handles
    reducible chains (it then returns one of their stationary distributions).

    Parameters
    ----------
    M : array-like of shape (k, k)
        Left-stochastic matrix (columns sum to 1).
    lam0 : array-like of shape (k,), default=None
        Warm start (a distribution); ``None`` means uniform.
    tol : float, default=1e-12
        Tolerance on the L1 residual of the power iteration.
    max_iter : int, default=100
        Maximum number of power-iteration steps before the exact fallback.
    return_info : bool, default=False
        Also return ``{"n_iter", "fallback", "residual"}``.

    Returns
    -------
    lam : ndarray of shape (k,)
        Non-negative, sums to 1, ``M @ lam == lam`` up to rounding.
    info : dict
        Only when ``return_info`` is True.
    """
    M = _finite_matrix(M, "M")
    _check_stochastic(M, "M")
    k = M.shape[0]
    if lam0 is None:
        lam0 = np.full(k, 1.0 / k)
    else:
        lam0 = as_float_vector(lam0, "lam0", ("k", k))
        if np.any(lam0 < 0) or lam0.sum() <= 0:
            raise ValueError("lam0 must be non-negative with a positive sum")
        lam0 = lam0 / lam0.sum()
    tol = as_finite_scalar(tol, "tol")
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    max_iter = operator.index(max_iter)
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    lam, n_iter, fallback, residual = _core.stationary_distribution(M, lam0, tol, max_iter)
    if return_info:
        return lam, {"n_iter": int(n_iter), "fallback": bool(fallback), "residual": float(residual)}
    return lam


def external_update_multiplicative(log_lam, delta, eta):
    """Multiplicative (Hedge) step on the simplex: ``log_softmax(log_lam + eta * delta)``.

    Parameters
    ----------
    log_lam : array-like of shape (k,)
        Logarithm of the current distribution (entries may be ``-inf``).
    delta : array-like of shape (k,)
        The gain vector.
    eta : float
        Step size.

    Returns
    -------
    ndarray of shape (k,)
        The updated log-distribution.
    """
    log_lam = np.ascontiguousarray(log_lam, dtype=np.float64)
    if log_lam.ndim != 1 or log_lam.shape[0] == 0 or np.any(np.isnan(log_lam) | np.isposinf(log_lam)):
        raise ValueError("log_lam must be a non-empty vector of finite values or -inf")
    if not np.any(np.isfinite(log_lam)):
        raise ValueError("log_lam is all -inf: it is not the logarithm of a distribution")
    delta = as_float_vector(delta, "delta", ("k", log_lam.shape[0]))
    eta = as_finite_scalar(eta, "eta")
    with np.errstate(invalid="ignore"):
        _check_update(log_lam + _step(eta, delta), eta, log_space=True)
    return _core.external_update_multiplicative(log_lam, delta, eta)


def external_update_additive(lam, delta, eta, *, radius=None, simplex=False):
    """Projected gradient-ascent step on the multipliers.

    ``lam + eta * delta`` projected onto the simplex (``simplex=True``, the
    proxy-Lagrangian's domain) or onto ``{lam >= 0, sum(lam) <= radius}`` (the
    Lagrangian's domain; ``radius=None`` means no cap).

    Parameters
    ----------
    lam : array-like of shape (k,)
        Current multipliers.
    delta : array-like of shape (k,)
        The constraint values (the gradient of the Lagrangian in ``lam``).
    eta : float
        Step size.
    radius : float, default=None
        L1 radius of the Lagrangian's domain (> 0); ignored when ``simplex``.
    simplex : bool, default=False
        Project onto the probability simplex instead.

    Returns
    -------
    ndarray of shape (k,)
    """
    lam = as_float_vector(lam, "lam")
    delta = as_float_vector(delta, "delta", ("k", lam.shape[0]))
    eta = as_finite_scalar(eta, "eta")
    r = _radius(radius)
    with np.errstate(over="ignore", invalid="ignore"):
        _check_update(lam + _step(eta, delta), eta, log_space=False)
    return _core.external_update_additive(lam, delta, eta, bool(simplex), r)


def _radius(radius):
    if radius is None:
        return math.inf
    r = float(radius)
    if not r > 0:
        raise ValueError(f"radius must be > 0, got {radius!r}")
    return r


def project_simplex(v, radius=1.0):
    """Euclidean projection onto ``{x >= 0, sum(x) = radius}``.

    Parameters
    ----------
    v : array-like of shape (k,)
    radius : float, default=1.0
        Must be > 0.

    Returns
    -------
    ndarray of shape (k,)

    Examples
    --------
    >>> from rateopt.core import project_simplex
    >>> project_simplex([0.5, 0.5, 1.0]).tolist()
    [0.25, 0.25, 0.5]
    """
    v = as_float_vector(v, "v")
    r = _radius(radius)
    if not math.isfinite(r):
        raise ValueError("radius must be finite for the simplex")
    return _core.project_simplex(v, r)


def project_l1_ball_nonneg(v, radius=None):
    """Euclidean projection onto ``{x >= 0, sum(x) <= radius}``.

    Parameters
    ----------
    v : array-like of shape (k,)
    radius : float, default=None
        Must be > 0; ``None`` means no cap (the projection is then ``max(v, 0)``).

    Returns
    -------
    ndarray of shape (k,)
    """
    v = as_float_vector(v, "v")
    return _core.project_l1_ball_nonneg(v, _radius(radius))


# --- trusted entry points: no validation, for state that is valid by construction ---


def stationary_distribution_trusted(M, lam0, *, tol=1e-12, max_iter=100):
    """:func:`stationary_distribution` without any check of its inputs, for trusted callers.

    The same computation (power iteration from ``lam0``, the exact GTH
    reduction when it does not converge within ``max_iter`` steps), with the
    same bits, but nothing is validated or converted: the caller guarantees
    what :func:`stationary_distribution` would check. Meant for a multiplier
    player whose matrix only ever holds what :func:`swap_update_trusted`
    returned, so that it is not re-validated on every iteration.

    Parameters
    ----------
    M : ndarray of shape (k, k)
        A float64, finite, left-stochastic matrix (columns sum to 1), ``k >= 1``.
    lam0 : ndarray of shape (k,)
        A float64 distribution (non-negative, sums to 1): the warm start.
    tol : float, default=1e-12
        Tolerance on the L1 residual of the power iteration (>= 0).
    max_iter : int, default=100
        Maximum number of power-iteration steps before the exact fallback (>= 0).

    Returns
    -------
    ndarray of shape (k,)
        Non-negative, sums to 1, ``M @ lam == lam`` up to rounding.

    See Also
    --------
    stationary_distribution : The validated form (and its ``return_info``).

    Notes
    -----
    Input that breaks the contract gives an undefined result (or whatever
    error the compiled core raises), not a clear error.
    """
    lam, _, _, _ = _core.stationary_distribution(M, lam0, tol, max_iter)
    return lam


def swap_update_trusted(matrix, delta, lam, eta, *, update, floor=0.0):
    """One swap-regret step without any check of its inputs, for trusted callers.

    ``update="multiplicative"`` is :func:`swap_regret_update` (``matrix`` is
    ``log M``, ``floor`` the smallest entry of the updated ``M``);
    ``update="additive"`` is :func:`swap_regret_update_additive` (``matrix``
    is ``M``; there is no floor). Same computation, same bits, but neither the
    inputs are validated nor is the update checked for overflow: the caller
    guarantees what those functions would check. Meant for a multiplier player
    whose matrix only ever holds what this function returned.

    Parameters
    ----------
    matrix : ndarray of shape (k, k)
        float64: ``log M`` (entries finite or ``-inf``, no column of only
        ``-inf``) or ``M`` (finite, left-stochastic).
    delta : ndarray of shape (k,)
        The float64 gain ``(0, g_1, ..., g_m)``, finite.
    lam : ndarray of shape (k,)
        The current multipliers (float64, finite).
    eta : float
        Step size (finite), small enough that ``eta * delta * lam`` stays in
        the float64 range.
    update : {"multiplicative", "additive"}
        Which step.
    floor : float, default=0.0
        Multiplicative step only: in ``[0, 1/k)``; must be 0 for the additive one.

    Returns
    -------
    ndarray of shape (k, k)
        The updated ``log M`` (multiplicative) or ``M`` (additive).

    Raises
    ------
    ValueError
        If ``update`` is neither ``"multiplicative"`` nor ``"additive"``, or
        a nonzero ``floor`` is given to the additive step (the only checks).

    See Also
    --------
    swap_regret_update, swap_regret_update_additive : The validated forms.
    """
    if update == "multiplicative":
        return _core.swap_update_multiplicative(matrix, delta, lam, eta, floor)
    if update != "additive":
        raise ValueError(f"update must be 'multiplicative' or 'additive', got {update!r}")
    if floor:
        raise ValueError(f"the additive update has no floor, got floor={floor!r}")
    return _core.swap_update_additive(matrix, delta, lam, eta)
