"""The self-check of ``rateopt selfcheck`` (and of ``python -m rateopt`` before its demo).

It builds a small random problem (dense and CSR), runs the fused rate kernel
and a few multiplier-player steps, compares them with plain NumPy and
reports whether all agree.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from .. import core

__all__ = ["selfcheck"]


def _numpy_reference(X, theta, bias, membership_w, coef):
    s = X @ theta + bias
    pos = (s >= 0).astype(float)
    rates = membership_w.T @ pos
    u = membership_w @ coef
    d = np.where(((u > 0) & (1 + s > 0)) | ((u < 0) & (1 - s > 0)), u, 0.0)
    return rates, X.T @ d, d.sum()


def selfcheck(n_samples=20000, n_features=50, n_groups=5, seed=0):
    """Run the kernel on a generated problem and compare with NumPy; return True if all agree."""
    rng = np.random.default_rng(seed)
    X = sp.random(n_samples, n_features, density=0.2, format="csr", random_state=seed, dtype=np.float64)
    group = rng.integers(0, n_groups, n_samples)
    label = rng.integers(0, 2, n_samples)
    member = np.zeros((n_samples, n_groups + 2), bool)
    member[np.arange(n_samples), group] = True
    member[np.arange(n_samples), n_groups + label] = True
    atoms = core.AtomTable.from_membership(member)
    W = sp.csr_matrix((atoms.weights, atoms.indices, atoms.indptr), shape=member.shape)
    theta = rng.normal(size=n_features)
    coef = rng.normal(size=atoms.n_atoms)
    ok = True
    for name, data in (("CSR", X), ("dense", X.toarray())):
        Xm = core.FeatureMatrix(data)
        t0 = time.perf_counter()
        res = core.rate_kernel(Xm, theta, -0.1, atoms, coef)
        dt = time.perf_counter() - t0
        rates, grad, gb = _numpy_reference(data, theta, -0.1, W, coef)
        good = (np.allclose(res.rates, rates, rtol=1e-12, atol=1e-12)
                and np.allclose(res.grad, grad, rtol=1e-10, atol=1e-10)
                and np.isclose(res.grad_bias, gb, rtol=1e-10, atol=1e-10))
        ok &= bool(good)
        print(f"  fused rate kernel, {name:5s} {n_samples}x{n_features}, {atoms.n_atoms} atoms: "
              f"{dt * 1e3:.2f} ms, matches NumPy: {good}")
    k = 4
    log_M = np.full((k, k), -np.log(k))
    lam = np.full(k, 1.0 / k)
    for _ in range(50):
        lam = core.stationary_distribution(np.exp(log_M), lam)
        log_M = core.swap_regret_update(log_M, np.array([0.0, 0.3, -0.2, 0.05]), lam, 0.5)
    lam = core.stationary_distribution(np.exp(log_M), lam)
    residual = float(np.abs(np.exp(log_M) @ lam - lam).sum())
    stationary_ok = residual < 1e-6 and abs(lam.sum() - 1) < 1e-12
    ok &= stationary_ok
    print(f"  swap-regret player, 50 steps: lambda = {np.round(lam, 4)}, |M lam - lam| = {residual:.1e}")
    return ok
