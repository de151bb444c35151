"""The narrow atom table (issue 33's memory target): every layout the core reads gives the same bits.

``AtomView`` (cpp/include/rateopt/matrix_view.hpp) reads row pointers as int32 or int64 and atom ids
as uint8, uint16 or int32. The reference is the wide layout (int64 row pointers, int32 ids: the only one
the core read before), fed the same values: every kernel output must be bit-identical across layouts,
and the rates must also match an independent NumPy count. The ids near the top of each narrow range
(255, 65535) must be read unsigned.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rateopt import _core

PTR_DTYPES = (np.int64, np.int32)
ID_DTYPES = (np.int32, np.uint16, np.uint8)


def _table(rng, n, n_atoms, top_ids):
    """A random membership table (0-4 distinct ascending atoms per row, random weights), wide layout."""
    rows = []
    for j in range(n):
        k = int(rng.integers(0, 5))
        ids = rng.choice(n_atoms, size=min(k, n_atoms), replace=False)
        if j < len(top_ids):  # the largest ids of the narrow ranges appear
            ids = np.unique(np.append(ids, top_ids[j]))
        rows.append(np.sort(ids))
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = np.cumsum([r.size for r in rows])
    indices = np.concatenate(rows).astype(np.int32)
    weights = rng.uniform(0.0, 1.0, indices.size) / n
    return indptr, indices, weights


def _layouts(indptr, indices, n_atoms):
    for p in PTR_DTYPES:
        for i in ID_DTYPES:
            if n_atoms - 1 <= np.iinfo(i).max:
                yield (np.dtype(p).name, np.dtype(i).name), indptr.astype(p), indices.astype(i)


def _reference_rates(indptr, indices, weights, s, n_atoms):
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    return np.bincount(indices, weights=weights * (s[rows] >= 0), minlength=n_atoms)


def _same_bits(a, b, what):
    for x, y in zip(a, b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), what


@pytest.mark.parametrize("n_atoms", [3, 256, 300, 65536])
@pytest.mark.parametrize("threads", [1, 2])
def test_rate_and_offset_kernels_are_bit_identical_across_layouts(n_atoms, threads):
    rng = np.random.default_rng(n_atoms)
    n, d, k = 600, 5, 3
    top = [v for v in (255, 256, 65535) if v < n_atoms] + [n_atoms - 1]
    indptr, indices, weights = _table(rng, n, n_atoms, top)
    X = rng.normal(size=(n, d))
    Xs = sp.csr_matrix(np.where(rng.random((n, d)) < 0.5, X, 0.0))
    theta, bias = rng.normal(size=d), 0.1
    coef = rng.normal(size=(k, n_atoms))
    proxies = np.array([0, 1, 2], np.int32)  # hinge, logistic, ramp
    gw = np.array([1.0, 0.5, 0.25])
    offset_ids = rng.integers(-1, 3, n_atoms).astype(np.int32)
    offsets = np.array([0.3, -0.2, 0.5])

    def run(ptr, ids):
        tab = (ptr, ids, weights, n_atoms)
        common = (coef, proxies, gw, False, 1.0, None, threads)
        return {
            "dense": _core.rate_kernel_dense(X, theta, bias, *tab, *common),
            "csr": _core.rate_kernel_csr(Xs.data, Xs.indices, Xs.indptr, n, d, theta, bias, *tab, *common),
            "offsets": _core.offset_kernel_dense(X, theta, bias, *tab, offset_ids, offsets, *common),
            "rows": _core.rate_kernel_dense(X, theta, bias, *tab, coef[:1], proxies[:1], gw[:1], False, 1.0,
                                            np.arange(0, n, 3, dtype=np.int64), threads),
        }

    wide = run(indptr, indices)
    np.testing.assert_allclose(wide["dense"][0], _reference_rates(indptr, indices, weights, X @ theta + bias, n_atoms),
                               rtol=1e-12, atol=1e-15)
    n_layouts = 0
    for name, ptr, ids in _layouts(indptr, indices, n_atoms):
        got = run(ptr, ids)
        for kernel, out in got.items():
            _same_bits(out, wide[kernel], (name, kernel))
        n_layouts += 1
    assert n_layouts == {3: 6, 256: 6, 300: 4, 65536: 4}[n_atoms]


@pytest.mark.parametrize("n_atoms", [4, 256, 65536])
@pytest.mark.parametrize("grad_dtype", [np.float32, np.float64])
def test_boosting_pass_is_bit_identical_across_layouts(n_atoms, grad_dtype):
    rng = np.random.default_rng(7)
    n = 5000  # several blocks of the pass, and two threads' chunks
    indptr, indices, weights = _table(rng, n, n_atoms, [v for v in (255, 65535) if v < n_atoms] + [n_atoms - 1])
    scores = rng.normal(size=n)
    coef = rng.normal(size=n_atoms)

    def run(ptr, ids):
        grad, hess = np.empty(n, grad_dtype), np.empty(n, grad_dtype)
        rates, nonfinite = _core.boosting_pass(scores, ptr, ids, weights, n_atoms, coef, 0, float(n), grad, hess, 2)
        return rates, grad, hess, nonfinite

    wide = run(indptr, indices)
    np.testing.assert_allclose(wide[0], _reference_rates(indptr, indices, weights, scores, n_atoms),
                               rtol=1e-12, atol=1e-15)
    for name, ptr, ids in _layouts(indptr, indices, n_atoms):
        _same_bits(run(ptr, ids), wide, name)


def test_the_core_refuses_other_layouts():
    indptr, indices, weights = np.array([0, 1], np.int64), np.array([0], np.int32), np.array([1.0])
    args = (np.zeros(1), np.ones((1, 1)), 0, 1.0, np.zeros(1, np.float32), np.zeros(1, np.float32), 1)
    with pytest.raises(TypeError, match="atoms.indices must be a C-contiguous array of dtype uint8, uint16 or int32"):
        _core.boosting_pass(args[0], indptr, indices.astype(np.int64), weights, 1, np.ones(1), *args[2:])
    with pytest.raises(TypeError, match="atoms.indptr"):
        _core.boosting_pass(args[0], indptr.astype(np.uint32), indices, weights, 1, np.ones(1), *args[2:])
    with pytest.raises(ValueError, match="atoms.indptr must start at 0 and end at len"):
        _core.boosting_pass(args[0], np.array([0, 2], np.int32), indices, weights, 1, np.ones(1), *args[2:])
