"""Per-row pseudo-random numbers keyed on a seed and the row's content.

A stochastic classifier samples one of its support models for every example.
To make that decision a property of the example rather than of the batch it
arrives in, the uniform number used for the draw is a hash of
``(seed, row content)``: the same row gets the same number in any batch, any
order, dense or sparse, float32 or float64.

The row hash is ``sum_k mix(k, bits(x_k))`` over the nonzero entries, modulo
2**64 (exact integer arithmetic, so the order of the terms does not matter),
followed by a seeded splitmix64 finalizer. Zero entries (including ``-0.0``)
contribute nothing, which is what makes dense and sparse rows agree.
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["row_uniforms"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_CHUNK_ROWS = 1 << 15


def _mix(x):
    """splitmix64 finalizer on a uint64 array (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def _entry_hash(cols, values):
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    h = _mix(bits ^ _mix(cols.astype(np.uint64) * _GOLDEN + np.uint64(1)))
    h[values == 0] = 0
    return h


def _row_sums_dense(X):
    n, d = X.shape
    out = np.empty(n, dtype=np.uint64)
    cols = np.arange(d)
    with np.errstate(over="ignore"):
        for start in range(0, n, _CHUNK_ROWS):  # bounded memory: one chunk at a time
            block = np.asarray(X[start:start + _CHUNK_ROWS], dtype=np.float64)
            h = _entry_hash(np.broadcast_to(cols, block.shape), block)
            out[start:start + block.shape[0]] = h.sum(axis=1, dtype=np.uint64)
    return out


def _row_sums_csr(X):
    X = X if X.has_canonical_format else _canonical(X)
    with np.errstate(over="ignore"):
        h = _entry_hash(X.indices, X.data)
        csum = np.concatenate(([np.uint64(0)], np.cumsum(h, dtype=np.uint64)))
        return csum[X.indptr[1:]] - csum[X.indptr[:-1]]


def _canonical(X):
    X = X.copy()
    X.sum_duplicates()
    return X


def row_uniforms(X, seed):
    """Uniform numbers in [0, 1), one per row, determined by ``seed`` and the row.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features) or scipy.sparse matrix
        Already validated (finite) features.
    seed : int
        Non-negative integer key.

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    if sp.issparse(X):
        sums = _row_sums_csr(sp.csr_matrix(X))
    else:
        sums = _row_sums_dense(X)
    key = _mix(np.array([np.uint64(seed % (1 << 64))]) + _GOLDEN)[0]
    with np.errstate(over="ignore"):
        h = _mix(sums ^ key)
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
