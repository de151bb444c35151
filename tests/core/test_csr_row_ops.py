"""The CSR row operations (dot, axpy) of the fused kernel on awkward rows.

matrix_view.hpp's CSR dot and axpy take 4 entries per step (on x86-64 with
SSE2 lane pairs, two int32 column ids per 64-bit load) and finish a row with a
scalar tail. These tests aim at the step/tail boundary and at what the
unrolled axpy must keep correct: row lengths 0..13, duplicate columns (one
column several times in a row, also inside one 4-entry step), unsorted
columns; every index/value dtype pair. They check the kernel against a NumPy
reference, and that the index width and the value dtype do not change a bit
(the same numbers take the same arithmetic in every instantiation).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rateopt.core import AtomTable, FeatureMatrix, rate_kernel, rate_kernel_multi

FIELDS = ("rates", "proxy_pos_rates", "proxy_neg_rates", "proxy_value", "grad", "grad_bias")


def awkward_csr(seed, n_features=9, max_len=13, reps=3):
    """Rows of every length 0..max_len (reps times), columns drawn with
    replacement (duplicates) in random order; values on a float32 grid."""
    rng = np.random.default_rng(seed)
    lengths = np.tile(np.arange(max_len + 1), reps)
    rng.shuffle(lengths)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = rng.integers(0, n_features, indptr[-1])
    # some rows: one column repeated across a whole 4-entry step
    for r in range(0, lengths.size, 5):
        if lengths[r] >= 4:
            indices[indptr[r]: indptr[r] + 4] = indices[indptr[r]]
    data = np.round(rng.standard_normal(indptr[-1]) * 64) / 64
    return data, indices, indptr, (lengths.size, n_features)


def as_csr(data, indices, indptr, shape, dtype, idx_dtype):
    A = sp.csr_matrix((data.astype(dtype), indices, indptr), shape=shape)
    A.indices = indices.astype(idx_dtype)  # scipy picks the narrowest width itself
    A.indptr = indptr.astype(idx_dtype)
    assert A.indices.dtype == idx_dtype and A.data.dtype == dtype
    return A


def problem(seed, n):
    rng = np.random.default_rng([seed, 7])
    B = rng.random((n, 4)) < 0.5
    B[:, 0] |= ~B.any(axis=1)
    atoms = AtomTable.from_membership(B, rng.uniform(0.5, 2.0, n))
    coef = rng.standard_normal(4)
    return atoms, coef, rng


def reference(D, theta, bias, atoms, coef, margin=1.0):
    """Plain NumPy: dense D (duplicates summed), net hinge rule."""
    n, n_atoms = D.shape[0], atoms.n_atoms
    A = sp.csr_matrix((atoms.weights, atoms.indices, atoms.indptr), shape=(n, n_atoms)).toarray()
    s = D @ theta + bias
    hp, hn = np.maximum(0.0, margin + s), np.maximum(0.0, margin - s)
    u = A @ coef
    d = np.where(((u > 0) & (hp > 0)) | ((u < 0) & (hn > 0)), u, 0.0)
    phi = np.where(u > 0, u * hp, np.where(u < 0, -u * hn + u, 0.0))
    return {"rates": A.T @ (s >= 0), "proxy_pos_rates": A.T @ hp, "proxy_neg_rates": A.T @ hn,
            "proxy_value": phi.sum(), "grad": D.T @ d, "grad_bias": d.sum()}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_awkward_rows_match_reference(seed, n_threads):
    data, indices, indptr, shape = awkward_csr(seed)
    atoms, coef, rng = problem(seed, shape[0])
    theta = rng.standard_normal(shape[1])
    D = sp.csr_matrix((data, indices, indptr), shape=shape).toarray()  # sums duplicates
    ref = reference(D, theta, 0.1, atoms, coef)
    for dtype in (np.float32, np.float64):
        for idx_dtype in (np.int32, np.int64):
            X = FeatureMatrix(as_csr(data, indices, indptr, shape, dtype, idx_dtype))
            res = rate_kernel(X, theta, 0.1, atoms, coef, n_threads=n_threads)
            for f in FIELDS:
                np.testing.assert_allclose(getattr(res, f), ref[f], rtol=1e-12, atol=1e-12,
                                           err_msg=f"{f} {dtype.__name__} {idx_dtype.__name__}")


@pytest.mark.parametrize("separate", [False, True])
def test_index_width_and_value_dtype_change_no_bit(separate):
    data, indices, indptr, shape = awkward_csr(5, n_features=23, max_len=40)
    atoms, coef, rng = problem(5, shape[0])
    theta = rng.standard_normal(shape[1])
    coefs = np.vstack([coef, rng.standard_normal((2, coef.size))])
    results = []
    for dtype in (np.float32, np.float64):
        for idx_dtype in (np.int32, np.int64):
            X = FeatureMatrix(as_csr(data, indices, indptr, shape, dtype, idx_dtype))
            one = rate_kernel(X, theta, 0.1, atoms, coef, n_threads=2)
            multi = rate_kernel_multi(X, theta, 0.1, atoms, coefs, proxies=["hinge", "logistic", "ramp"],
                                      separate_gradients=separate, n_threads=2)
            results.append((one, multi))
    first_one, first_multi = results[0]
    for one, multi in results[1:]:
        for f in FIELDS:
            assert np.array_equal(getattr(one, f), getattr(first_one, f)), f
        for f in ("proxy_values", "grad", "grad_bias", "rates"):
            assert np.array_equal(getattr(multi, f), getattr(first_multi, f)), f
