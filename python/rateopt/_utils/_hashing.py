"""Vectorized 64-bit hashing of rows and of row ids, and the seeded uniform numbers made from them.

A row's *content hash* is ``sum_k mix(k, bits(x_k))`` over its nonzero
entries, modulo 2**64 (exact integer arithmetic, so the order of the terms does
not matter): it is the same for the row dense or sparse, float32 or float64.
Zero entries (including ``-0.0``) contribute nothing, which is what makes dense
and sparse rows agree. An *id hash* is the hash of a row id (an integer, or a
string hashed code point by code point in the same way).

:func:`occurrence_keys` makes identical content hashes distinct by their
occurrence in the batch, and :func:`seeded_uniforms` turns 64-bit keys into
uniform numbers in [0, 1) with a seeded splitmix64 finalizer. The draw
convention built on these (which key a row's draw uses) is
:mod:`rateopt._predictors._draws`'s.
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["content_hashes", "id_hashes", "occurrence_keys", "seeded_uniforms"]

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


def content_hashes(X):
    """The 64-bit content hash of every row.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features) or scipy.sparse matrix
        Already validated (finite) numbers; read a bounded block of rows at a time.

    Returns
    -------
    ndarray of uint64 of shape (n_samples,)
    """
    if sp.issparse(X):
        return _row_sums_csr(sp.csr_matrix(X))
    return _row_sums_dense(X)


#: Domain separators, so that an integer id, a string id and a repeated row's occurrence never share a key.
_INT_ID = np.uint64(0x2545F4914F6CDD1D)
_STR_ID = np.uint64(0x6A09E667F3BCC909)
_OCCURRENCE = np.uint64(0xB7E151628AED2A6B)


def id_hashes(ids):
    """The 64-bit hash of every row id.

    Parameters
    ----------
    ids : ndarray of shape (n_samples,)
        Integers (any integer dtype) or strings (``U``/``S`` dtypes; an object
        array is read as strings).

    Returns
    -------
    ndarray of uint64 of shape (n_samples,)
    """
    with np.errstate(over="ignore"):
        if ids.dtype.kind in "iu":
            return _mix(ids.astype(np.int64, copy=False).view(np.uint64) ^ _INT_ID)
        if ids.dtype.kind == "O":
            ids = ids.astype(str)
        if ids.dtype.kind == "S":
            width, unit = ids.dtype.itemsize, np.uint8
        else:
            width, unit = ids.dtype.itemsize // 4, np.uint32
        out = np.empty(ids.shape[0], dtype=np.uint64)
        col = _mix(np.arange(max(width, 1), dtype=np.uint64) * _GOLDEN + _STR_ID)
        for start in range(0, ids.shape[0], _CHUNK_ROWS):  # bounded memory: one block of code points at a time
            block = np.ascontiguousarray(ids[start:start + _CHUNK_ROWS])
            codes = block.view(unit).reshape(block.shape[0], width).astype(np.uint64)
            h = _mix(codes ^ col)
            h[codes == 0] = 0
            out[start:start + block.shape[0]] = h.sum(axis=1, dtype=np.uint64)
        return _mix(out ^ _STR_ID)


def occurrence_keys(hashes):
    """Keys that separate equal hashes by their occurrence in the batch.

    The first occurrence of a hash keeps it unchanged; the ``j``-th later one
    (``j >= 1``, in batch order) gets ``mix(hash ^ mix(j * golden + c))``. No
    loop over the rows: one stable sort.

    Parameters
    ----------
    hashes : ndarray of uint64 of shape (n_samples,)

    Returns
    -------
    ndarray of uint64 of shape (n_samples,)
    """
    n = hashes.shape[0]
    order = np.argsort(hashes, kind="stable")
    sorted_h = hashes[order]
    first = np.ones(n, dtype=bool)
    first[1:] = sorted_h[1:] != sorted_h[:-1]
    pos = np.arange(n)
    occurrence = np.empty(n, dtype=np.uint64)
    occurrence[order] = (pos - np.maximum.accumulate(np.where(first, pos, 0))).astype(np.uint64)
    keys = hashes.copy()
    later = occurrence > 0
    with np.errstate(over="ignore"):
        keys[later] = _mix(hashes[later] ^ _mix(occurrence[later] * _GOLDEN + _OCCURRENCE))
    return keys


def seeded_uniforms(keys, seed):
    """Uniform numbers in [0, 1), one per key, determined by ``seed`` and the key.

    Parameters
    ----------
    keys : ndarray of uint64 of shape (n_samples,)
    seed : int
        Non-negative integer.

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    key = _mix(np.array([np.uint64(seed % (1 << 64))]) + _GOLDEN)[0]
    with np.errstate(over="ignore"):
        h = _mix(keys ^ key)
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
