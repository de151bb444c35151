"""The exact weighted two-sided hinge solver (rateopt.core.sdca_two_sided_hinge, cpp/include/rateopt/sdca.hpp).

The reference solution on small problems is independent of SDCA: HiGHS solves
the primal as a QP with slack variables, then a KKT polish finds the exact
optimum from its active set (the rows on a kink s = +-tau), and a certificate
checks the KKT conditions (a subgradient per row, stationarity) in NumPy, which
proves the polished point optimal whatever produced it.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from rateopt import _core
from rateopt.core import AtomTable, FeatureMatrix, SdcaResult, rate_kernel, sdca_two_sided_hinge
from rateopt._training._row_coefficients import row_coefficients

from _hinge_qp import highs_hinge_qp

# --------------------------------------------------------------------------- #
# NumPy definitions (methods_spec.md §1.4)
# --------------------------------------------------------------------------- #


def loss(s, A, B, tau):
    return A * np.maximum(0.0, tau + s) + B * np.maximum(0.0, tau - s)


def conjugate(xi, A, B, tau):
    return tau * (np.abs(xi - (A - B)) - (A + B))


def primal(X, A, B, lam, tau, theta, bias, w_c=0.0):
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    s = X @ theta + bias
    return float(np.mean(loss(s, A, B, tau)) + 0.5 * lam * (theta @ theta + w_c * w_c))


def theta_of(X, xi, lam):
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    return -(X.T @ xi) / (lam * X.shape[0])


def dual(X, A, B, lam, tau, beta, xi, bias_scale=None):
    """D(xi); with bias_scale, the constant feature is part of theta(xi)."""
    n = X.shape[0]
    th = theta_of(X, xi, lam)
    sq = th @ th
    if bias_scale is not None:
        w_c = -bias_scale * xi.sum() / (lam * n)
        sq += w_c * w_c
    return float(-np.mean(conjugate(xi, A, B, tau)) - 0.5 * lam * sq + beta * xi.sum() / n)


def problem(seed, n=120, d=5, zero_frac=0.3, both_frac=0.2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    side = rng.random(n)
    A = np.where(side < 0.5, rng.uniform(0.1, 2.0, n), 0.0)
    B = np.where(side >= 0.5, rng.uniform(0.1, 2.0, n), 0.0)
    both = rng.random(n) < both_frac  # rows with both hinges
    A[both] = rng.uniform(0.1, 2.0, both.sum())
    B[both] = rng.uniform(0.1, 2.0, both.sum())
    zero = rng.random(n) < zero_frac
    A[zero] = 0.0
    B[zero] = 0.0
    return X, A, B


# --------------------------------------------------------------------------- #
# The independent reference: HiGHS QP, KKT polish, certificate
# --------------------------------------------------------------------------- #


def highs_qp(X, A, B, lam, tau, beta):
    """min (1/n) sum A t + B r + lam/2 |theta|^2, t >= tau + s, r >= tau - s, t, r >= 0."""
    return highs_hinge_qp(X, A, B, lam, tau, beta)


def kkt_reference(X, A, B, lam, tau, beta, theta_approx, eps=1e-6):
    """The exact optimum from an approximate one's active set, with a KKT certificate.

    Rows within ``eps`` of a kink s = +-tau (where the subgradient is an
    interval) are pinned to it and their xi solved for; every other row's xi is
    its loss's derivative. Returns (theta, xi) after checking that each xi is a
    subgradient of its loss at the new scores and that lam n theta + X^T xi = 0:
    the KKT conditions, sufficient for optimality of this convex problem.
    """
    n, d = X.shape
    s = X @ theta_approx + beta
    c = A - B
    g = np.where(s > tau, A, np.where(s < -tau, -B, c))
    hi = (np.abs(s - tau) <= eps) & (A > c)
    lo = (np.abs(s + tau) <= eps) & (c > -B)
    K = np.flatnonzero(hi | lo)
    free = np.setdiff1d(np.arange(n), K)
    k = K.size
    M = np.zeros((d + k, d + k))
    rhs = np.zeros(d + k)
    M[:d, :d] = lam * n * np.eye(d)
    M[:d, d:] = X[K].T
    rhs[:d] = -X[free].T @ g[free]
    M[d:, :d] = X[K]
    rhs[d:] = np.where(hi[K], tau, -tau) - beta
    sol = np.linalg.lstsq(M, rhs, rcond=None)[0]
    theta = sol[:d]
    xi = g.copy()
    xi[K] = sol[d:]
    # Certificate.
    s = X @ theta + beta
    t = 1e-9
    low = np.where(s > tau + t, A, np.where(s >= -tau + t, c, -B))
    high = np.where(s < -tau - t, -B, np.where(s <= tau - t, c, A))
    low = np.where(np.abs(s - tau) <= t, c, low)
    high = np.where(np.abs(s + tau) <= t, c, high)
    assert np.all(xi >= low - 1e-9) and np.all(xi <= high + 1e-9), "reference: xi is not a subgradient"
    assert np.abs(lam * n * theta + X.T @ xi).max() <= 1e-9 * max(1.0, np.abs(X.T @ xi).max()), \
        "reference: not stationary"
    return theta, xi


# --------------------------------------------------------------------------- #
# Convergence and the reference
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bias", ["fixed", "regularized"])
def test_gap_vanishes_and_outputs_are_consistent(sparse, bias):
    X, A, B = problem(0, n=200, d=8)
    lam, tau = 0.02, 0.7
    beta = 0.25 if bias == "fixed" else 0.0
    Xin = sp.csr_matrix(X) if sparse else X
    res = sdca_two_sided_hinge(Xin, A, B, lam=lam, tau=tau, beta=beta, bias=bias, bias_scale=1.5, tol=1e-10)
    assert isinstance(res, SdcaResult) and res.converged
    assert 0 <= res.gap <= 1e-10 * max(1.0, abs(res.primal))
    assert res.gap == pytest.approx(res.primal - res.dual, abs=1e-15)
    # theta == theta(xi); the bias and the objective values are what the definitions give.
    np.testing.assert_allclose(res.theta, theta_of(X, res.xi, lam), rtol=0, atol=1e-13)
    if bias == "fixed":
        assert res.bias == beta
        w_c, scale = 0.0, None
    else:
        w_c = -1.5 * res.xi.sum() / (lam * X.shape[0])
        assert res.bias == pytest.approx(1.5 * w_c, rel=1e-12)
        scale = 1.5
    assert res.primal == pytest.approx(primal(X, A, B, lam, tau, res.theta, res.bias, w_c), rel=1e-13)
    assert res.dual == pytest.approx(dual(X, A, B, lam, tau, beta, res.xi, scale), rel=1e-12)
    assert res.sum_xi == pytest.approx(res.xi.sum(), rel=1e-12, abs=1e-12)
    # xi in its box; rows without weight keep xi = 0 exactly.
    assert np.all(res.xi >= -B) and np.all(res.xi <= A)
    assert np.all(res.xi[(A == 0) & (B == 0)] == 0.0)


@pytest.mark.parametrize("seed, lam, tau, beta", [(0, 0.09, 1.0, 0.3), (1, 0.007, 0.5, -0.4),
                                                  (4, 0.02, 1.3, 0.0), (9, 0.001, 1.0, 0.8)])
def test_matches_the_qp_reference(seed, lam, tau, beta):
    X, A, B = problem(seed, n=150, d=6)
    ref, ref_xi = kkt_reference(X, A, B, lam, tau, beta, highs_qp(X, A, B, lam, tau, beta))
    res = sdca_two_sided_hinge(X, A, B, lam=lam, tau=tau, beta=beta, tol=1e-12, max_epochs=100_000)
    assert res.converged
    np.testing.assert_allclose(res.theta, ref, rtol=0, atol=1e-7 * max(1.0, np.abs(ref).max()))
    p_ref = primal(X, A, B, lam, tau, ref, beta)
    assert res.primal == pytest.approx(p_ref, rel=1e-10)
    # The reference's own dual point is optimal too: the gaps agree.
    assert res.dual == pytest.approx(dual(X, A, B, lam, tau, beta, ref_xi), rel=1e-10)


@pytest.mark.parametrize("bias_scale", [1.0, 3.0])
def test_regularized_bias_is_an_explicit_constant_column(bias_scale):
    X, A, B = problem(2, n=150, d=4)
    lam, tau = 0.03, 1.0
    res = sdca_two_sided_hinge(X, A, B, lam=lam, tau=tau, bias="regularized", bias_scale=bias_scale, tol=1e-12,
                               max_epochs=100_000)
    Xc = np.hstack([X, np.full((X.shape[0], 1), bias_scale)])
    col = sdca_two_sided_hinge(Xc, A, B, lam=lam, tau=tau, tol=1e-12, max_epochs=100_000)
    ref, _ = kkt_reference(Xc, A, B, lam, tau, 0.0, highs_qp(Xc, A, B, lam, tau, 0.0))
    for theta, bias in ((res.theta, res.bias), (col.theta[:-1], bias_scale * col.theta[-1])):
        np.testing.assert_allclose(theta, ref[:-1], rtol=0, atol=1e-7)
        assert bias == pytest.approx(bias_scale * ref[-1], abs=1e-7)
    assert res.primal == pytest.approx(col.primal, rel=1e-10)
    assert res.sum_xi == pytest.approx(col.sum_xi, rel=1e-6, abs=1e-9)


def test_rows_with_zero_features_take_the_limit_step():
    # With a fixed bias a zero row has q = 0: its xi jumps to the end of its box
    # that the bias favours (or to A - B between the kinks).
    X, A, B = problem(5, n=80, d=3, zero_frac=0.0)
    X[::7] = 0.0
    for beta in (1.5, 0.2, -1.5):
        ref, _ = kkt_reference(X, A, B, 0.05, 1.0, beta, highs_qp(X, A, B, 0.05, 1.0, beta))
        res = sdca_two_sided_hinge(X, A, B, lam=0.05, beta=beta, tol=1e-12, max_epochs=100_000)
        np.testing.assert_allclose(res.theta, ref, rtol=0, atol=1e-7)
        z = X[::7]
        assert np.all(z == 0)
        c = (A - B)[::7]
        want = A[::7] if beta > 1 else (-B[::7] if beta < -1 else c)
        np.testing.assert_array_equal(res.xi[::7], want)


# --------------------------------------------------------------------------- #
# The kernel's net-hinge proxy, duality
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("bias", ["fixed", "regularized"])
def test_primal_is_the_kernels_net_hinge_proxy(bias):
    rng = np.random.default_rng(3)
    n, d, n_atoms = 300, 6, 5
    X = rng.normal(size=(n, d))
    membership = rng.random((n, n_atoms)) < 0.4
    membership[np.arange(n_atoms), np.arange(n_atoms)] = True
    atoms = AtomTable.from_membership(membership, rng.uniform(0.2, 2.0, n))
    coef = rng.normal(size=n_atoms)
    u = row_coefficients(atoms, coef)
    A, B = n * np.maximum(u, 0.0), n * np.maximum(-u, 0.0)
    margin, lam = 1.0, 1e-3
    beta = -0.2 if bias == "fixed" else 0.0
    res = sdca_two_sided_hinge(X, A, B, lam=lam, tau=margin, beta=beta, bias=bias, tol=1e-10,
                               max_epochs=100_000)
    kr = rate_kernel(X, res.theta, res.bias, atoms, coef, margin=margin)
    w_c = res.bias if bias == "regularized" else 0.0  # bias_scale = 1
    # P = proxy + the dropped constant sum_j max(-u_j, 0) + the regularizer.
    expected = kr.proxy_value + np.maximum(-u, 0).sum() + 0.5 * lam * (res.theta @ res.theta + w_c * w_c)
    assert res.primal == pytest.approx(expected, rel=1e-12)
    # ... and the kernel's subgradient is consistent with optimality:
    # theta(xi) with xi in the kernel's subdifferential, i.e. the SDCA optimum
    # does at least as well as the kernel's gradient step from it.
    step = res.theta - 1e-3 * (kr.grad + lam * res.theta)
    kr2 = rate_kernel(X, step, res.bias, atoms, coef, margin=margin)
    assert kr2.proxy_value + 0.5 * lam * step @ step >= kr.proxy_value + 0.5 * lam * res.theta @ res.theta - 1e-12


def test_conjugate_formula_matches_a_numeric_supremum():
    rng = np.random.default_rng(0)
    tau = 0.7
    s = np.concatenate([np.linspace(-50, 50, 20001), [-tau, tau]])
    for _ in range(30):
        a, b = rng.uniform(0, 2, 2) * (rng.random(2) < 0.8)
        for xi in np.linspace(-b, a, 7):
            # l is piecewise linear with kinks at +-tau: the sup over a grid containing them is exact.
            sup = np.max(xi * s - loss(s, a, b, tau))
            assert conjugate(xi, a, b, tau) == pytest.approx(sup, abs=1e-12)


def test_weak_duality_and_the_dual_value_of_any_point_in_the_box():
    X, A, B = problem(6, n=100, d=4)
    lam, tau, beta = 0.05, 1.0, 0.1
    rng = np.random.default_rng(1)
    for trial in range(20):
        t = rng.random(X.shape[0])
        xi = -B + t * (A + B)
        if trial % 2:
            xi = np.where(rng.random(X.shape[0]) < 0.5, -B, A)  # the corners too
        res = sdca_two_sided_hinge(X, A, B, lam=lam, tau=tau, beta=beta, xi0=xi, max_epochs=0)
        assert res.n_epochs == 0
        np.testing.assert_array_equal(res.xi, xi)
        assert res.dual == pytest.approx(dual(X, A, B, lam, tau, beta, xi), rel=1e-12, abs=1e-14)
        assert res.primal == pytest.approx(primal(X, A, B, lam, tau, theta_of(X, xi, lam), beta), rel=1e-12)
        assert res.dual <= res.primal
    # At the optimum every row satisfies Fenchel-Young with equality:
    # l_j(s_j) + l_j*(xi_j) = xi_j s_j.
    opt = sdca_two_sided_hinge(X, A, B, lam=lam, tau=tau, beta=beta, tol=1e-13, max_epochs=100_000)
    s = X @ opt.theta + beta
    fy = loss(s, A, B, tau) + conjugate(opt.xi, A, B, tau) - opt.xi * s
    assert np.all(fy >= -1e-12)
    assert np.sum(fy) / X.shape[0] == pytest.approx(opt.gap, abs=1e-12)
    assert np.max(fy) <= 1e-8


# --------------------------------------------------------------------------- #
# Layouts, dtypes, starts, determinism
# --------------------------------------------------------------------------- #


def _close_to_optimum(r1, r2, lam):
    # lam-strong convexity: lam/2 |theta - theta*|^2 <= P(theta) - P* <= gap.
    bound = np.sqrt(2 * r1.gap / lam) + np.sqrt(2 * r2.gap / lam) + 1e-12
    assert np.linalg.norm(r1.theta - r2.theta) <= bound
    assert abs(r1.primal - r2.primal) <= max(r1.gap, r2.gap) + 1e-14


@pytest.mark.parametrize("bias", ["fixed", "regularized"])
def test_float32_matches_float64_and_csr_matches_dense(bias):
    X, A, B = problem(7, n=200, d=10)
    X[np.abs(X) < 0.8] = 0.0  # sparse rows
    X32 = X.astype(np.float32)
    X = X32.astype(np.float64)  # the same numbers in both dtypes
    kw = dict(lam=0.01, tau=1.0, bias=bias, tol=1e-12, max_epochs=100_000)
    runs = {
        "dense64": sdca_two_sided_hinge(X, A, B, **kw),
        "dense32": sdca_two_sided_hinge(X32, A, B, **kw),
        "csr64": sdca_two_sided_hinge(sp.csr_matrix(X), A, B, **kw),
        "csr32-i64": sdca_two_sided_hinge(
            sp.csr_matrix((sp.csr_matrix(X32).data, sp.csr_matrix(X32).indices.astype(np.int64),
                           sp.csr_matrix(X32).indptr.astype(np.int64)), shape=X.shape), A, B, **kw),
    }
    base = runs["dense64"]
    # float32 input is read as the same float64 numbers: the same arithmetic.
    np.testing.assert_allclose(runs["dense32"].theta, base.theta, rtol=0, atol=1e-13)
    assert runs["dense32"].n_epochs == base.n_epochs
    for r in runs.values():
        assert r.converged
        _close_to_optimum(r, base, kw["lam"])


def test_noncanonical_csr_means_the_summed_matrix():
    X, A, B = problem(8, n=120, d=6)
    X[np.abs(X) < 0.5] = 0.0
    C = sp.csr_matrix(X)
    # Split every stored value into two duplicates and reverse each row's order.
    rows, data, cols = [], [], []
    for i in range(C.shape[0]):
        lo, hi = C.indptr[i], C.indptr[i + 1]
        for p in range(hi - 1, lo - 1, -1):
            rows += [i, i]
            cols += [C.indices[p], C.indices[p]]
            data += [0.25 * C.data[p], 0.75 * C.data[p]]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=C.shape[0]))])
    D = sp.csr_matrix((np.array(data), np.array(cols, dtype=np.int32), indptr.astype(np.int32)), shape=C.shape)
    assert not D.has_canonical_format
    kw = dict(lam=0.02, tau=1.0, bias="regularized", tol=1e-12, max_epochs=100_000)
    r1 = sdca_two_sided_hinge(X, A, B, **kw)
    r2 = sdca_two_sided_hinge(D, A, B, **kw)
    assert r2.converged
    _close_to_optimum(r1, r2, kw["lam"])
    np.testing.assert_allclose(r2.theta, r1.theta, rtol=0, atol=1e-6)


def test_warm_start_from_a_solution_finishes_in_one_epoch():
    X, A, B = problem(9, n=200, d=6)
    kw = dict(lam=0.01, tau=1.0, bias="regularized", max_epochs=100_000)
    cold = sdca_two_sided_hinge(X, A, B, tol=1e-10, **kw)
    assert cold.n_epochs > 1
    warm = sdca_two_sided_hinge(X, A, B, tol=1e-8, xi0=cold.xi, theta0=cold.theta, **kw)
    assert warm.converged and warm.n_epochs == 1
    _close_to_optimum(warm, cold, kw["lam"])
    # From the dual alone, too (theta0 is redundant given xi0).
    again = sdca_two_sided_hinge(X, A, B, tol=1e-8, xi0=cold.xi, **kw)
    assert again.n_epochs == 1
    np.testing.assert_array_equal(again.theta, warm.theta)


def test_warm_start_from_another_problems_dual_is_clipped_into_the_box():
    X, A, B = problem(10, n=200, d=6)
    kw = dict(lam=0.01, tau=1.0, tol=1e-10, max_epochs=100_000)
    first = sdca_two_sided_hinge(X, A, B, **kw)
    A2, B2 = 0.5 * B, 2.0 * A  # other weights: first.xi lies outside the new boxes
    start = sdca_two_sided_hinge(X, A2, B2, xi0=first.xi, **{**kw, "max_epochs": 0})
    np.testing.assert_array_equal(start.xi, np.clip(first.xi, -B2, A2))
    warm = sdca_two_sided_hinge(X, A2, B2, xi0=first.xi, **kw)
    cold = sdca_two_sided_hinge(X, A2, B2, **kw)
    assert warm.converged and cold.converged
    _close_to_optimum(warm, cold, kw["lam"])


@pytest.mark.parametrize("bias", ["fixed", "regularized"])
def test_primal_warm_start(bias):
    X, A, B = problem(11, n=200, d=6)
    kw = dict(lam=0.01, tau=1.0, bias=bias, beta=0.3 if bias == "fixed" else 0.0)
    opt = sdca_two_sided_hinge(X, A, B, tol=1e-12, max_epochs=100_000, **kw)
    bias0 = opt.bias if bias == "regularized" else None
    # The start: xi_j = the subgradient of l_j at the scores of theta0 (A - B between the kinks).
    start = sdca_two_sided_hinge(X, A, B, theta0=opt.theta, bias0=bias0, max_epochs=0, **kw)
    s = X @ opt.theta + opt.bias
    want = np.where(s > 1.0, A, np.where(s < -1.0, -B, A - B))
    np.testing.assert_array_equal(start.xi, want)
    np.testing.assert_allclose(start.theta, theta_of(X, want, kw["lam"]), atol=1e-13)
    # From the optimum, one epoch gets much closer than one epoch from zero.
    with pytest.warns(ConvergenceWarning):
        warm1 = sdca_two_sided_hinge(X, A, B, theta0=opt.theta, bias0=bias0, tol=0.0, max_epochs=1, **kw)
    with pytest.warns(ConvergenceWarning):
        cold1 = sdca_two_sided_hinge(X, A, B, tol=0.0, max_epochs=1, **kw)
    assert warm1.gap < 0.1 * cold1.gap
    warm = sdca_two_sided_hinge(X, A, B, theta0=opt.theta, bias0=bias0, tol=1e-10, max_epochs=100_000, **kw)
    _close_to_optimum(warm, opt, kw["lam"])


def test_fixed_seed_is_deterministic_and_seeds_change_the_order():
    X, A, B = problem(12, n=150, d=5)
    kw = dict(lam=0.005, tau=1.0, tol=0.0, max_epochs=3)
    with pytest.warns(ConvergenceWarning):
        r1 = sdca_two_sided_hinge(X, A, B, random_state=7, **kw)
    with pytest.warns(ConvergenceWarning):
        r2 = sdca_two_sided_hinge(X, A, B, random_state=7, **kw)
    with pytest.warns(ConvergenceWarning):
        r3 = sdca_two_sided_hinge(X, A, B, random_state=8, **kw)
    np.testing.assert_array_equal(r1.xi, r2.xi)
    np.testing.assert_array_equal(r1.theta, r2.theta)
    assert r1.primal == r2.primal and r1.dual == r2.dual
    assert not np.array_equal(r1.xi, r3.xi)
    # The largest seed is accepted (a uint64).
    with pytest.warns(ConvergenceWarning):
        sdca_two_sided_hinge(X, A, B, random_state=2**64 - 1, **kw)


def test_zero_weight_rows_do_not_change_the_solution():
    X, A, B = problem(13, n=200, d=5, zero_frac=0.4)
    keep = (A > 0) | (B > 0)
    n, m = X.shape[0], int(keep.sum())
    assert m < n
    lam = 0.02
    full = sdca_two_sided_hinge(X, A, B, lam=lam, tol=1e-12, max_epochs=100_000)
    assert np.all(full.xi[~keep] == 0.0)
    # Without the rows, (1/m) sum l + (lam n / m)/2 |theta|^2 = (n/m) P: the same minimizer.
    part = sdca_two_sided_hinge(X[keep], A[keep], B[keep], lam=lam * n / m, tol=1e-12, max_epochs=100_000)
    np.testing.assert_allclose(full.theta, part.theta, rtol=0, atol=1e-6)
    assert full.primal == pytest.approx(part.primal * m / n, rel=1e-10)
    # No weight at all: theta = 0, P = D = 0.
    none = sdca_two_sided_hinge(X, np.zeros(n), np.zeros(n), lam=lam)
    assert none.converged and none.primal == 0.0 and none.dual == 0.0
    assert np.all(none.theta == 0.0) and np.all(none.xi == 0.0)


def test_feature_matrix_input_and_max_epochs_warning():
    X, A, B = problem(14, n=100, d=4)
    Xm = FeatureMatrix(X)
    a = sdca_two_sided_hinge(Xm, A, B, lam=0.1, tol=1e-10)
    b = sdca_two_sided_hinge(X, A, B, lam=0.1, tol=1e-10)
    np.testing.assert_array_equal(a.theta, b.theta)
    with pytest.warns(ConvergenceWarning, match="max_epochs=1"):
        r = sdca_two_sided_hinge(X, A, B, lam=1e-4, tol=1e-14, max_epochs=1)
    assert not r.converged and r.n_epochs == 1


# --------------------------------------------------------------------------- #
# Validation
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("change, match", [
    (dict(A=np.ones(5)), r"A has length 5, expected n_samples = 20"),
    (dict(B=np.ones((20, 1))), r"B must be 1-D"),
    (dict(A=np.r_[np.ones(19), np.nan]), r"A holds a non-finite value"),
    (dict(B=np.r_[np.ones(19), np.inf]), r"B holds a non-finite value"),
    (dict(A=np.r_[np.ones(19), -1.0]), r"A must be non-negative, got -1.0 at position 19"),
    (dict(B=np.r_[-0.5, np.ones(19)]), r"B must be non-negative"),
    (dict(lam=0.0), r"lam must be > 0"),
    (dict(lam=-1.0), r"lam must be > 0"),
    (dict(lam=np.nan), r"lam must be finite"),
    (dict(tau=0.0), r"tau must be > 0"),
    (dict(beta=np.inf), r"beta must be finite"),
    (dict(bias="free"), r"bias must be 'fixed' or 'regularized'"),
    (dict(bias_scale=0.0), r"bias_scale must be > 0"),
    (dict(bias="regularized", beta=0.5), r"beta must be 0 with bias='regularized'"),
    (dict(bias0=1.0), r"bias0 is only used with bias='regularized'"),
    (dict(theta0=np.ones(4)), r"theta0 has length 4, expected n_features = 3"),
    (dict(theta0=np.array([1.0, np.nan, 0.0])), r"theta0 holds a non-finite value"),
    (dict(xi0=np.ones(19)), r"xi0 has length 19, expected n_samples = 20"),
    (dict(xi0=np.full(20, np.nan)), r"xi0 holds a non-finite value"),
    (dict(tol=-1.0), r"tol must be >= 0"),
    (dict(max_epochs=-1), r"max_epochs must be >= 0"),
    (dict(max_epochs=2.5), r"max_epochs must be an integer"),
    (dict(random_state=-1), r"random_state must be an integer in \[0, 2\*\*64\)"),
    (dict(random_state=2**64), r"random_state must be an integer"),
    (dict(random_state=None), r"random_state must be an integer"),
])
def test_bad_input_raises_naming_the_argument(change, match):
    rng = np.random.default_rng(0)
    args = dict(X=rng.normal(size=(20, 3)), A=np.ones(20), B=np.ones(20), lam=0.1)
    args.update(change)
    X, A, B = args.pop("X"), args.pop("A"), args.pop("B")
    with pytest.raises(ValueError, match=match):
        sdca_two_sided_hinge(X, A, B, **args)


def test_bad_features_raise():
    with pytest.raises(ValueError, match="X holds a non-finite value"):
        sdca_two_sided_hinge(np.array([[1.0], [np.nan]]), np.ones(2), np.ones(2), lam=0.1)
    with pytest.raises(ValueError, match="X must be 2-D"):
        sdca_two_sided_hinge(np.ones(3), np.ones(3), np.ones(3), lam=0.1)


def test_the_binding_checks_what_it_reads():
    # The core boundary refuses what would read out of bounds or loop on NaN,
    # even when called without the Python wrapper.
    X = np.ones((4, 2))
    ok = dict(lam=0.1, tau=1.0, beta=0.0, regularized_bias=False, bias_scale=1.0, theta0=None, bias0=0.0,
              xi0=None, tol=1e-8, max_epochs=10, seed=0)
    with pytest.raises(ValueError, match=r"A \(n_samples\) has length 3, expected 4"):
        _core.sdca_two_sided_hinge_dense(X, np.ones(3), np.ones(4), **ok)
    with pytest.raises(ValueError, match="B holds a negative weight at position 1"):
        _core.sdca_two_sided_hinge_dense(X, np.ones(4), np.array([1.0, -1.0, 1.0, 1.0]), **ok)
    with pytest.raises(ValueError, match="A holds a non-finite value"):
        _core.sdca_two_sided_hinge_dense(X, np.array([1.0, np.nan, 1.0, 1.0]), np.ones(4), **ok)
    with pytest.raises(ValueError, match="lam must be a positive finite number"):
        _core.sdca_two_sided_hinge_dense(X, np.ones(4), np.ones(4), **{**ok, "lam": 0.0})
    with pytest.raises(ValueError, match="tau must be a positive finite number"):
        _core.sdca_two_sided_hinge_dense(X, np.ones(4), np.ones(4), **{**ok, "tau": -1.0})
    with pytest.raises(ValueError, match=r"xi0 \(n_samples\) has length 2"):
        _core.sdca_two_sided_hinge_dense(X, np.ones(4), np.ones(4), **{**ok, "xi0": np.zeros(2)})
    with pytest.raises(ValueError, match=r"theta0 \(n_features\) has length 3"):
        _core.sdca_two_sided_hinge_dense(X, np.ones(4), np.ones(4), **{**ok, "theta0": np.zeros(3)})
    with pytest.raises(TypeError, match="A must be a C-contiguous array of dtype float64"):
        _core.sdca_two_sided_hinge_dense(X, np.ones(4, dtype=np.float32), np.ones(4), **ok)
    C = sp.csr_matrix(X)
    with pytest.raises(ValueError, match=r"X.indptr \(n_samples \+ 1\) has length 5, expected 6"):
        _core.sdca_two_sided_hinge_csr(C.data, C.indices, C.indptr, 5, 2, np.ones(5), np.ones(5), **ok)


def test_overflow_is_a_numerical_error():
    from rateopt.exceptions import NumericalError

    # ||x||^2 / (lam n) = inf would freeze every coordinate step.
    with pytest.raises(NumericalError, match="SDCA objective overflowed"):
        sdca_two_sided_hinge(np.array([[1e200], [-1e200]]), np.ones(2), np.ones(2), lam=0.1)
    # The loss itself overflows: two rows with the same x pull it both ways with weight 1e308.
    with pytest.raises(NumericalError, match="SDCA objective overflowed"):
        sdca_two_sided_hinge(np.array([[1.0], [1.0]]), np.array([1e308, 0.0]), np.array([0.0, 1e308]), lam=1.0)


def test_huge_weights_do_not_cancel_the_dual():
    # Both rows want theta <= -1; at theta = -1 they sit on their kinks with
    # xi = 1 and -1, far inside boxes of size 1e300: P* = D* = lam/2 = 0.5.
    res = sdca_two_sided_hinge(np.array([[1.0], [-1.0]]), np.array([1e300, 0.0]), np.array([0.0, 1e300]),
                               lam=1.0, tol=1e-12)
    assert res.converged
    assert res.theta[0] == pytest.approx(-1.0, abs=1e-12)
    assert res.primal == pytest.approx(0.5, rel=1e-12) and res.dual == pytest.approx(0.5, rel=1e-12)
