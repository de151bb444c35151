"""Runs every entry point of the core at a fixed requested thread count.

Used by ``tests/core/test_thread_teams.py``, in a subprocess whose OpenMP settings
(``OMP_THREAD_LIMIT``, ``OMP_DYNAMIC``) or calling context (inside another
parallel region, from a pool of Python threads) give the core smaller teams
than it asks for. ``probe()`` returns a dict of arrays; run as a script it
saves them to the ``.npz`` path given as ``argv[1]`` (``argv[2]`` picks the
context: ``plain``, ``nested`` or ``pool``).
"""

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from rateopt import _core, core
from rateopt.core._kernel_block import kernel_block

N_THREADS = 4
# Large enough that every entry point splits its work into N_THREADS chunks:
# the rate kernel needs 2048 rows per chunk, the checks 2**16 items per chunk,
# the kernel blocks 2**14-2**15 entries per chunk.
N_ROWS, N_COLS, N_LANDMARKS = 70_000, 4, 2


def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N_ROWS, N_COLS))
    Xs = sp.random(N_ROWS, 30, density=0.1, format="csr", random_state=3, dtype=np.float64)
    member = np.zeros((N_ROWS, 3), bool)
    member[:, 0] = True
    member[np.arange(N_ROWS) % 3 == 1, 1] = True
    member[np.arange(N_ROWS) % 5 == 2, 2] = True
    atoms = core.AtomTable.from_membership(member)
    theta = rng.normal(size=N_COLS)
    theta_s = rng.normal(size=30)
    coef = np.array([1.0, -2.0, 0.5])
    B = rng.normal(size=(N_LANDMARKS, N_COLS))
    Bs = rng.normal(size=(N_LANDMARKS, 30))
    return X, Xs, atoms, theta, theta_s, coef, B, Bs


def probe():
    X, Xs, atoms, theta, theta_s, coef, B, Bs = data()
    out = {}
    rows = np.arange(0, N_ROWS, 3, dtype=np.int64)
    for name, M, th in (("dense", X, theta), ("csr", Xs, theta_s)):
        for batch in (None, rows):
            r = core.rate_kernel(M, th, 0.1, atoms, coef, rows=batch, n_threads=N_THREADS)
            key = f"kernel_{name}_{'batch' if batch is not None else 'full'}"
            for field in ("rates", "proxy_pos_rates", "proxy_neg_rates", "grad"):
                out[f"{key}_{field}"] = getattr(r, field)
            out[f"{key}_scalars"] = np.array([r.proxy_value, r.grad_bias, r.value])
        # Several combinations, every proxy kind, one gradient per combination.
        coefs = np.stack([coef, -coef, 0.5 * coef])
        m = core.rate_kernel_multi(M, th, 0.1, atoms, coefs, proxies=["hinge", "logistic", "ramp"],
                                   separate_gradients=True, n_threads=N_THREADS)
        out[f"multi_{name}_values"] = np.concatenate([m.proxy_values, m.values, m.grad_bias])
        out[f"multi_{name}_grad"] = m.grad
    # The one-time checks: the first offending position, whichever chunk holds it.
    flat = X.reshape(-1).copy()
    for pos in (5, flat.size // 2 + 3, flat.size - 1):
        bad = flat.copy()
        bad[pos] = np.nan
        out[f"nonfinite_{pos}"] = np.array([_core.first_nonfinite(bad, N_THREADS)])
    ids = (np.arange(flat.size) % 7).astype(np.int64)
    ids[flat.size - 2] = 9
    out["out_of_range"] = np.array([_core.first_out_of_range(ids, 7, N_THREADS)])
    indptr = np.arange(flat.size, dtype=np.int64)
    indptr[flat.size - 3] = 0
    out["decrease"] = np.array([_core.first_decrease(indptr, N_THREADS)])
    neg = np.abs(flat)
    neg[flat.size - 4] = -1.0
    out["negative"] = np.array([_core.first_negative(neg, N_THREADS)])
    out["memory_floor"] = np.array([_core.memory_floor(flat, N_THREADS)], dtype=np.uint64)
    for kernel in ("rbf", "laplacian", "poly", "linear"):
        out[f"block_dense_{kernel}"] = kernel_block(X, B, kernel, gamma=0.3, n_threads=N_THREADS)
        out[f"block_csr_{kernel}"] = kernel_block(Xs, Bs, kernel, gamma=0.3, n_threads=N_THREADS)
    # The BLAS path followed by the core's in-place transform.
    G = X @ B.T
    xsq = np.einsum("ij,ij->i", X, X)
    _core.gram_transform(G, xsq, np.einsum("ij,ij->i", B, B), 2, 0.3, 1.0, 3.0, N_THREADS)
    out["gram_rbf"] = G
    # The multiplier primitives are serial; they must still work in every context.
    M = np.full((3, 3), 1 / 3)
    out["stationary"] = core.stationary_distribution(M)
    out["swap"] = core.swap_regret_update(np.log(M), np.array([0.0, 0.2, -0.1]), np.full(3, 1 / 3), 0.5)
    out["simplex"] = core.project_simplex(np.array([0.3, 2.0, -1.0]))
    out["l1_ball"] = core.project_l1_ball_nonneg(np.array([0.3, 2.0, -1.0]), 1.5)
    out["swap_add"] = core.swap_regret_update_additive(M, np.array([0.0, 0.2, -0.1]), np.full(3, 1 / 3), 0.5)
    out["ext_mult"] = core.external_update_multiplicative(np.log(np.full(3, 1 / 3)), np.array([0.0, 0.2, -0.1]), 0.5)
    out["ext_add"] = core.external_update_additive(np.full(3, 0.2), np.array([0.0, 0.2, -0.1]), 0.5, radius=1.0)
    return out


def run(context):
    if context == "plain":
        return probe()
    if context == "nested":
        box = {}
        team = _core._call_in_parallel_region(lambda: box.update(probe()), 2)
        box["outer_team"] = np.array([team])
        return box
    if context == "pool":
        with ThreadPoolExecutor(max_workers=3) as pool:
            results = list(pool.map(lambda _: probe(), range(3)))
        for other in results[1:]:
            for k, v in results[0].items():
                if not np.array_equal(v, other[k], equal_nan=True):
                    raise AssertionError(f"concurrent calls disagree on {k}")
        return results[0]
    raise ValueError(context)


if __name__ == "__main__":
    np.savez(sys.argv[1], **run(sys.argv[2]))
