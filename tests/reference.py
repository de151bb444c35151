"""Slow, obviously-correct NumPy/SciPy references for ``rateopt.core``.

The contract is ``docs/core_api.md``. Everything here is written independently
of the C++ core: whole-array NumPy in float64 (``X`` is upcast first, so a
float32 ``X`` contributes exactly the same values the core reads), dense atom
matrices, a linear solve instead of power iteration for the stationary
distribution, and an exhaustive search over supports for the projections.
Nothing here is fast; the problems in the tests are small.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import log_softmax

# --------------------------------------------------------------------------- #
# Atoms
# --------------------------------------------------------------------------- #


class RefAtoms(NamedTuple):
    """An atom table in the core's CSR layout (rows = examples)."""

    indptr: np.ndarray  # int64 (n_samples + 1,)
    indices: np.ndarray  # int32 (nnz,)
    weights: np.ndarray  # float64 (nnz,)
    n_atoms: int
    n_samples: int


def _membership_dense(membership):
    if sp.issparse(membership):
        return np.asarray(membership.toarray()) != 0
    return np.asarray(membership) != 0


def atoms_from_membership(membership, sample_weight=None):
    """Reference for ``AtomTable.from_membership``: ``v_ja = w_j / sum_{i in S_a} w_i``."""
    B = _membership_dense(membership)
    n_samples, n_atoms = B.shape
    w = np.ones(n_samples) if sample_weight is None else np.asarray(sample_weight, np.float64)
    totals = B.T.astype(np.float64) @ w
    if np.any(totals <= 0):
        raise ValueError("an atom has zero total weight")
    V = np.where(B, w[:, None] / totals[None, :], 0.0)
    rows, cols = np.nonzero(B)  # row-major order: atoms sorted within each row
    indptr = np.zeros(n_samples + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n_samples), out=indptr[1:])
    return RefAtoms(indptr, cols.astype(np.int32), V[rows, cols], n_atoms, n_samples)


def atom_matrix(atoms, n_samples=None):
    """Dense ``(n_samples, n_atoms)`` matrix ``V[j, a] = v_ja`` of any atom table.

    ``atoms`` is anything with ``indptr``, ``indices``, ``weights``, ``n_atoms``
    (a ``RefAtoms`` or a core ``AtomTable``). Repeated ids in a row add up, as
    in the sum over a row's atom list.
    """
    indptr = np.asarray(atoms.indptr, np.int64)
    n = len(indptr) - 1 if n_samples is None else n_samples
    V = np.zeros((n, int(atoms.n_atoms)))
    row_of_entry = np.repeat(np.arange(n), np.diff(indptr))
    np.add.at(V, (row_of_entry, np.asarray(atoms.indices, np.int64)),
              np.asarray(atoms.weights, np.float64))
    return V


# --------------------------------------------------------------------------- #
# The fused rate kernel
# --------------------------------------------------------------------------- #


class RefKernelResult(NamedTuple):
    rates: np.ndarray
    proxy_pos_rates: np.ndarray
    proxy_neg_rates: np.ndarray
    proxy_value: float
    grad: np.ndarray
    grad_bias: float
    value: float


KERNEL_FIELDS = RefKernelResult._fields


def as_float64(X):
    """``X`` as float64: a dense ndarray, or a canonical CSR (duplicates summed)."""
    if sp.issparse(X):
        X64 = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X64.sum_duplicates()
        return X64
    return np.asarray(X, dtype=np.float64)


def _kernel_terms(X, theta, bias, atoms, coef, margin, rows):
    X64 = as_float64(X)
    n = X64.shape[0]
    V = atom_matrix(atoms, n)
    if rows is None:
        idx = np.arange(n)
        scale = 1.0
    else:
        idx = np.asarray(rows, np.int64)
        scale = n / len(idx)
    Xr = X64[idx]
    Vr = V[idx]
    theta = np.asarray(theta, np.float64)
    coef = np.asarray(coef, np.float64)
    s = np.asarray(Xr @ theta).ravel() + float(bias)
    pos = (s >= 0).astype(np.float64)
    hinge_pos = np.maximum(0.0, margin + s)
    hinge_neg = np.maximum(0.0, margin - s)
    u = Vr @ coef
    phi = np.where(u > 0, u * hinge_pos, np.where(u < 0, np.abs(u) * hinge_neg - np.abs(u), 0.0))
    active = ((u > 0) & (margin + s > 0)) | ((u < 0) & (margin - s > 0))
    d = np.where(active, u, 0.0)
    return dict(Xr=Xr, Vr=Vr, s=s, pos=pos, hinge_pos=hinge_pos, hinge_neg=hinge_neg,
                u=u, phi=phi, d=d, scale=scale, theta=theta, coef=coef, bias=float(bias),
                margin=float(margin))


def rate_kernel(X, theta, bias, atoms, coef, *, margin=1.0, rows=None):
    """Reference for ``rateopt.core.rate_kernel`` (see the table in docs/core_api.md)."""
    t = _kernel_terms(X, theta, bias, atoms, coef, margin, rows)
    c, Vr = t["scale"], t["Vr"]
    rates = c * (Vr.T @ t["pos"])
    return RefKernelResult(
        rates=rates,
        proxy_pos_rates=c * (Vr.T @ t["hinge_pos"]),
        proxy_neg_rates=c * (Vr.T @ t["hinge_neg"]),
        proxy_value=float(c * t["phi"].sum()),
        grad=c * np.asarray(t["Xr"].T @ t["d"]).ravel(),
        grad_bias=float(c * t["d"].sum()),
        value=float(t["coef"] @ rates),
    )


def kernel_error_scales(X, theta, bias, atoms, coef, *, margin=1.0, rows=None):
    """Per field, the size of the sum of absolute values of the terms it adds up.

    Any correct float64 implementation agrees with the reference to a few
    ulps of these numbers times the number of terms: summation order (threads,
    blocking) changes only rounding. They include the rounding of ``s_j`` and
    ``u_j`` themselves (``sum_k |x_jk theta_k| + |bias|``, ``sum_a |coef_a| v_ja``).
    Use them as ``atol = 1e-12 * scale``.
    """
    t = _kernel_terms(X, theta, bias, atoms, coef, margin, rows)
    c, Vr = t["scale"], t["Vr"]
    absX = abs(t["Xr"])
    s_abs = np.asarray(absX @ np.abs(t["theta"])).ravel() + abs(t["bias"])
    u_abs = Vr @ np.abs(t["coef"])
    h_abs = abs(t["margin"]) + s_abs
    rates_abs = c * Vr.sum(axis=0)
    d_abs = np.where(t["d"] != 0, u_abs, 0.0)
    return dict(
        rates=float(rates_abs.max(initial=0.0)),
        proxy_pos_rates=float((c * (Vr.T @ h_abs)).max(initial=0.0)),
        proxy_neg_rates=float((c * (Vr.T @ h_abs)).max(initial=0.0)),
        proxy_value=float(c * (u_abs * (h_abs + 1.0)).sum()),
        grad=float((c * np.asarray(absX.T @ d_abs).ravel()).max(initial=0.0)),
        grad_bias=float(c * d_abs.sum()),
        value=float(np.abs(t["coef"]) @ rates_abs),
    )


# --------------------------------------------------------------------------- #
# Projections
# --------------------------------------------------------------------------- #


def project_simplex(v, radius=1.0):
    """argmin ||x - v|| s.t. x >= 0, sum x = radius (sort and threshold)."""
    v = np.asarray(v, np.float64)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - radius
    k = np.arange(1, len(v) + 1)
    cond = u - css / k > 0
    rho = k[cond][-1]
    tau = css[cond][-1] / rho
    return np.maximum(v - tau, 0.0)


def project_l1_ball_nonneg(v, radius=np.inf):
    """argmin ||x - v|| s.t. x >= 0, sum x <= radius."""
    v = np.asarray(v, np.float64)
    w = np.maximum(v, 0.0)
    if w.sum() <= radius:
        return w
    return project_simplex(v, radius)


def _support_candidates(v, radius, *, cap_only):
    """Every KKT-form point ``x_S = v_S - tau, x_rest = 0`` over all supports S.

    ``cap_only=True``: the simplex (``sum x = radius``, tau free).
    ``cap_only=False``: ``{x >= 0, sum x <= radius}`` (tau = 0 with the sum
    below the cap, or the cap active with tau >= 0).
    """
    n = len(v)
    yield np.zeros(n), None
    for size in range(1, n + 1):
        for S in itertools.combinations(range(n), size):
            S = list(S)
            taus = []
            if np.isfinite(radius):
                taus.append((v[S].sum() - radius) / size)
            if not cap_only:
                taus.append(0.0)
            for tau in taus:
                x = np.zeros(n)
                x[S] = v[S] - tau
                yield x, tau


def bruteforce_projection(v, radius, *, simplex):
    """Exhaustive projection onto the simplex (``simplex=True``) or the capped orthant.

    The projection is unique and has the form of one of the candidates, so
    the closest feasible candidate is it. Sizes <= 8 only.
    """
    v = np.asarray(v, np.float64)
    assert len(v) <= 8
    tol = 1e-12 * max(1.0, np.abs(v).max(initial=0.0), radius if np.isfinite(radius) else 0.0)
    best, best_dist = None, np.inf
    for x, tau in _support_candidates(v, radius, cap_only=simplex):
        if np.any(x < -tol):
            continue
        if simplex and abs(x.sum() - radius) > tol * len(v):
            continue
        if not simplex and x.sum() > radius + tol * len(v):
            continue
        if not simplex and tau is not None and tau < -tol:
            continue
        dist = np.sum((x - v) ** 2)
        if dist < best_dist:
            best, best_dist = np.maximum(x, 0.0), dist
    return best


# --------------------------------------------------------------------------- #
# The lambda player
# --------------------------------------------------------------------------- #


def swap_regret_update(log_M, delta, lam, eta):
    """``log_M + eta * delta lam^T``, each column log-normalized."""
    L = np.asarray(log_M, np.float64) + eta * np.outer(delta, lam)
    # scipy's log_softmax subtracts the max first, then log(sum): no digits of
    # log(sum) are lost to a large max (x - logsumexp(x) loses them).
    return log_softmax(L, axis=0)


def swap_regret_update_floored(log_M, delta, lam, eta, floor):
    """The multiplicative step, then every entry raised to ``floor`` and the columns normalized again."""
    L = swap_regret_update(log_M, delta, lam, eta)
    if floor > 0:
        L = log_softmax(np.maximum(L, np.log(floor)), axis=0)
    return L


def swap_regret_update_additive(M, delta, lam, eta):
    """``M + eta * delta lam^T``, each column projected onto the simplex."""
    A = np.asarray(M, np.float64) + eta * np.outer(delta, lam)
    return np.column_stack([project_simplex(A[:, i]) for i in range(A.shape[1])])


def stationary_distribution(M):
    """A solution of ``M lam = lam, sum lam = 1`` by a least-squares linear solve.

    Unique (and the answer) when the chain has one closed class, e.g. a
    strictly positive ``M``.
    """
    M = np.asarray(M, np.float64)
    k = M.shape[0]
    A = np.vstack([M - np.eye(k), np.ones((1, k))])
    b = np.zeros(k + 1)
    b[-1] = 1.0
    lam = np.linalg.lstsq(A, b, rcond=None)[0]
    return lam


def external_update_multiplicative(log_lam, delta, eta):
    z = np.asarray(log_lam, np.float64) + eta * np.asarray(delta, np.float64)
    return log_softmax(z)


def external_update_additive(lam, delta, eta, *, radius=None, simplex=False):
    v = np.asarray(lam, np.float64) + eta * np.asarray(delta, np.float64)
    if simplex:
        return project_simplex(v)
    return project_l1_ball_nonneg(v, np.inf if radius is None else radius)


# --------------------------------------------------------------------------- #
# Several combinations and proxy kinds in one pass
# --------------------------------------------------------------------------- #


class RefMultiResult(NamedTuple):
    rates: np.ndarray
    proxy_pos_rates: np.ndarray
    proxy_neg_rates: np.ndarray
    proxy_values: np.ndarray
    values: np.ndarray
    grad: np.ndarray
    grad_bias: object


def _proxy_terms(kind, u, s, margin):
    """Value and slope in s of the proxy of ``u * 1[s >= 0]``, whole arrays."""
    if kind == "hinge":
        val = np.where(u > 0, u * np.maximum(0.0, margin + s),
                       np.where(u < 0, -u * np.maximum(0.0, margin - s) + u, 0.0))
        slope = np.where(((u > 0) & (margin + s > 0)) | ((u < 0) & (margin - s > 0)), u, 0.0)
    elif kind == "logistic":
        from scipy.special import expit

        # log2(1 + e^x) = logaddexp(0, x) / ln 2
        val = np.where(u > 0, u * np.logaddexp(0.0, s), np.where(u < 0, -u * np.logaddexp(0.0, -s), 0.0))
        val = val / np.log(2.0) + np.where(u < 0, u, 0.0)
        slope = np.where(u > 0, u * expit(s), np.where(u < 0, u * expit(-s), 0.0)) / np.log(2.0)
    elif kind == "ramp":
        val = u * np.clip(0.5 + s, 0.0, 1.0)
        slope = np.where(np.abs(s) < 0.5, u, 0.0)
    else:
        raise ValueError(kind)
    return val, slope


def rate_kernel_multi(X, theta, bias, atoms, coefs, *, proxies="hinge", grad_weights=None,
                      separate_gradients=False, margin=1.0, rows=None):
    """Reference for ``rateopt.core.rate_kernel_multi``."""
    coefs = np.atleast_2d(np.asarray(coefs, np.float64))
    k = coefs.shape[0]
    kinds = [proxies] * k if isinstance(proxies, str) else list(proxies)
    gw = np.ones(k) if grad_weights is None else np.asarray(grad_weights, np.float64)
    t = _kernel_terms(X, theta, bias, atoms, coefs[0], margin, rows)
    c, Vr, Xr, s = t["scale"], t["Vr"], t["Xr"], t["s"]
    U = Vr @ coefs.T  # (n_visit, k)
    vals, slopes = zip(*(_proxy_terms(kinds[i], U[:, i], s, margin) for i in range(k)))
    slopes = np.stack(slopes, axis=1)
    rates = c * (Vr.T @ t["pos"])
    if separate_gradients:
        grad = c * np.asarray(Xr.T @ slopes).T
        grad_bias = c * slopes.sum(axis=0)
    else:
        d = slopes @ gw
        grad = c * np.asarray(Xr.T @ d).ravel()
        grad_bias = float(c * d.sum())
    return RefMultiResult(
        rates=rates,
        proxy_pos_rates=c * (Vr.T @ t["hinge_pos"]),
        proxy_neg_rates=c * (Vr.T @ t["hinge_neg"]),
        proxy_values=c * np.array([v.sum() for v in vals]),
        values=coefs @ rates,
        grad=grad,
        grad_bias=grad_bias,
    )
