"""The compiled affine map's linear part as a product of sparse factors (:class:`LinearMap`).

A problem's constraints read its statistics through named rates: ``g = B r -
kappa`` with the rates ``r = A p`` (atoms, or K-class confusion cells). Both
factors are sparse (a rate reads the atoms of its subset, a constraint its few
rates), so the map costs memory linear in atoms + constraints + their rate
references, where the product ``C = B A`` can be dense: every parity
constraint reads the overall rate, and over K-class cells the overall rate
reads every cell. :class:`LinearMap` keeps the factors and offers what the
training games, evaluation, the shrink, post-processing and certificates ask
of ``C``: ``C @ p``, ``C.T @ lam`` (and ``lam @ C``), one row, the shape, the
entries' count, and a dense copy for small problems.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["LinearMap"]

#: ``toarray()`` refuses a dense copy larger than this many entries (16 GiB of float64).
DENSE_LIMIT = 1 << 31

try:  # scipy's own CSR x vector kernel, the one ``M @ x`` ends in (private to scipy)
    from scipy.sparse._sparsetools import csr_matvec as _scipy_csr_matvec
except ImportError:  # pragma: no cover - another scipy layout: the public product
    _scipy_csr_matvec = None


def _checked_csr_matvec():
    """scipy's private CSR x vector kernel if it gives ``M @ x`` bit for bit on a small check, else None.

    Any other scipy (another layout or signature) takes the public product.
    """
    if _scipy_csr_matvec is None:  # pragma: no cover
        return None
    try:
        M = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.5]]))
        x = np.array([0.1, 0.2, 0.3])
        y = np.zeros(2)
        _scipy_csr_matvec(2, 3, M.indptr, M.indices, M.data, x, y)
        return _scipy_csr_matvec if np.array_equal(y, M @ x) else None
    except Exception:  # pragma: no cover - another signature
        return None


_csr_matvec = _checked_csr_matvec()


def _matvec(M, x):
    """``M @ x`` for a CSR factor ``M`` and a float64 array ``x``.

    A vector goes straight to scipy's kernel (``csr_matvec``, the call ``M @ x``
    ends in, into a zeroed float64 output: the same sums bit for bit) without
    the product's per-call dispatch and checks, which cost more than the
    product itself on the small maps a game multiplies every iteration.
    """
    if _csr_matvec is None or x.ndim != 1:
        return np.asarray(M @ x)
    x = np.ascontiguousarray(x)
    y = np.zeros(M.shape[0])
    _csr_matvec(M.shape[0], M.shape[1], M.indptr, M.indices, M.data, x, y)
    return y


def _csr(M, shape=None) -> sp.csr_matrix:
    """A canonical float64 CSR copy of a matrix (dense or sparse); explicit zeros are dropped."""
    if sp.issparse(M):
        out = sp.csr_matrix(M, dtype=np.float64, copy=True)
    else:
        a = np.asarray(M, dtype=np.float64)
        if shape is not None:
            a = a.reshape(shape)
        out = sp.csr_matrix(a)
    out.eliminate_zeros()
    out.sort_indices()
    return out


class LinearMap:
    """A matrix ``C = B A`` (or ``C = B``) kept as its sparse factors.

    Parameters
    ----------
    B : sparse matrix or array-like of shape (m, r)
        The outer factor (constraints over rates; the whole matrix when ``A`` is None).
    A : sparse matrix or array-like of shape (r, n), default=None
        The inner factor (rates over atoms or cells); None: the identity.

    Notes
    -----
    ``C @ x`` is ``B @ (A @ x)``: memory and time linear in the factors'
    entries. A NumPy reader that needs an array gets one through
    ``np.asarray(C)`` (:meth:`toarray`), for problems whose dense product fits.
    """

    __array_ufunc__ = None  # ndarray @ LinearMap defers to __rmatmul__; ufuncs must use the methods

    def __init__(self, B, A=None):
        self.B = _csr(B)
        self.A = None if A is None else _csr(A)
        if self.A is not None and self.A.shape[0] != self.B.shape[1]:
            raise ValueError(f"B has {self.B.shape[1]} columns but A has {self.A.shape[0]} rows")
        for f in (self.B, self.A):
            if f is not None:
                f.data.flags.writeable = False

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_transposed"}  # a cache, rebuilt on demand

    @classmethod
    def from_dense(cls, C, shape=None) -> LinearMap:
        """The map of a dense matrix (one sparse factor).

        Parameters
        ----------
        C : array-like of shape (m, n)
            The matrix.
        shape : tuple of int, default=None
            Reshape ``C`` to this first (e.g. an (m, 0) matrix given as an empty list).

        Returns
        -------
        LinearMap
        """
        if isinstance(C, LinearMap):
            return C
        return cls(_csr(C, shape))

    @classmethod
    def from_rows(cls, rows, n_cols) -> LinearMap:
        """The map whose row ``i`` has the entries ``rows[i] = (column ids, values)``.

        Parameters
        ----------
        rows : sequence of (ndarray of int, ndarray of float)
            Each row's columns (distinct) and values.
        n_cols : int
            The number of columns.

        Returns
        -------
        LinearMap
        """
        counts = np.array([len(c) for c, _ in rows], dtype=np.int64)
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = (np.concatenate([np.asarray(c, dtype=np.int64) for c, _ in rows]) if rows
                   else np.zeros(0, dtype=np.int64))
        data = (np.concatenate([np.asarray(v, dtype=np.float64) for _, v in rows]) if rows
                else np.zeros(0))
        return cls(sp.csr_matrix((data, indices, indptr), shape=(len(rows), int(n_cols))))

    # -- shape -------------------------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple:
        """``(m, n)``: rows (constraints) by columns (atoms or cells)."""
        return (self.B.shape[0], self.B.shape[1] if self.A is None else self.A.shape[1])

    ndim = 2
    dtype = np.dtype(np.float64)

    @property
    def nnz(self) -> int:
        """The stored entries of both factors (the map's memory, in entries)."""
        return int(self.B.nnz + (0 if self.A is None else self.A.nnz))

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        m, n = self.shape
        return f"LinearMap(shape=({m}, {n}), nnz={self.nnz}, factors={1 if self.A is None else 2})"

    # -- products ----------------------------------------------------------------------------------------------

    def __matmul__(self, x):
        """``C @ x`` for ``x`` of shape (n,) or (n, k)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape[:1] != (self.shape[1],):
            raise ValueError(f"C @ x: C has {self.shape[1]} columns, x has shape {x.shape}")
        y = x if self.A is None else _matvec(self.A, x)
        return _matvec(self.B, y)

    def __rmatmul__(self, y):
        """``y @ C`` for ``y`` of shape (m,) or (k, m)."""
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 1:
            return self.rmatvec(y)
        return self.rmatvec(y.T).T

    def rmatvec(self, y) -> np.ndarray:
        """``C.T @ y`` for ``y`` of shape (m,) or (m, k).

        Parameters
        ----------
        y : array-like of shape (m,) or (m, k)
            Per-row weights (multipliers).

        Returns
        -------
        ndarray of shape (n,) or (n, k)
        """
        y = np.asarray(y, dtype=np.float64)
        if y.shape[:1] != (self.shape[0],):
            raise ValueError(f"C.T @ y: C has {self.shape[0]} rows, y has shape {y.shape}")
        BT, AT = self._transposes()
        z = _matvec(BT, y)
        return z if AT is None else _matvec(AT, z)

    def _transposes(self):
        """``(B.T, A.T)`` as CSR matrices, built once per factor (a game asks ``lam @ C`` every iteration:
        scipy's ``.T`` builds and checks a new matrix on each call). The factors are read-only."""
        cached = self.__dict__.get("_transposed")
        if cached is None or cached[0] is not self.B or cached[1] is not self.A:
            cached = (self.B, self.A, self.B.T.tocsr(), None if self.A is None else self.A.T.tocsr())
            self.__dict__["_transposed"] = cached
        return cached[2], cached[3]

    @property
    def T(self) -> _Transposed:
        """The transpose, for ``C.T @ y``."""
        return _Transposed(self)

    # -- rows and copies ---------------------------------------------------------------------------------------

    def row(self, i) -> np.ndarray:
        """Row ``i`` as a dense vector of shape (n,)."""
        m = self.shape[0]
        i = int(i)
        if not -m <= i < m:
            raise IndexError(f"row {i} of a map with {m} rows")
        r = self.B[i % m]
        if self.A is not None:
            r = r @ self.A
        return np.asarray(r.toarray()).reshape(self.shape[1])

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            return self.row(key)
        return self.toarray()[key]

    def tocsr(self) -> sp.csr_matrix:
        """The product as one CSR matrix (its entries may be many more than :attr:`nnz`)."""
        P = self.B if self.A is None else self.B @ self.A
        P = sp.csr_matrix(P, dtype=np.float64, copy=True)
        P.sort_indices()
        return P

    def toarray(self) -> np.ndarray:
        """The product as a dense array of shape (m, n).

        Raises
        ------
        MemoryError
            If the dense array would exceed ``2**31`` entries (use the map's products instead).
        """
        m, n = self.shape
        if m * n > DENSE_LIMIT:
            raise MemoryError(f"a dense copy of the ({m}, {n}) constraint map needs {m * n * 8 / 2**30:.1f} GiB; "
                              "this reader must use the map's sparse products")
        out = self.tocsr().toarray() if m * n else np.zeros((m, n))
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.toarray()
        return a if dtype is None else a.astype(dtype, copy=False)

    # -- row statistics and scaling ----------------------------------------------------------------------------

    def _product_rows(self):
        P = self.tocsr()
        return P, np.repeat(np.arange(P.shape[0]), np.diff(P.indptr))

    def row_sums(self, sign=0) -> np.ndarray:
        """Per row, the sum of its positive (``sign=1``) or negative (``sign=-1``) entries, or of all (0)."""
        P, r = self._product_rows()
        d = P.data if sign == 0 else (np.maximum(P.data, 0.0) if sign > 0 else np.minimum(P.data, 0.0))
        return np.bincount(r, weights=d, minlength=P.shape[0])

    def row_abs_max(self) -> np.ndarray:
        """Per row, the largest absolute entry (0 for an empty row)."""
        P, r = self._product_rows()
        out = np.zeros(P.shape[0])
        np.maximum.at(out, r, np.abs(P.data))
        return out

    def scaled_rows(self, exponents) -> LinearMap:
        """The map with row ``i`` multiplied by ``2**-exponents[i]`` (exact)."""
        e = np.asarray(exponents)
        B = sp.csr_matrix(self.B, copy=True)
        B.data = np.ldexp(B.data, -np.repeat(e, np.diff(B.indptr)))
        return LinearMap(B, self.A)

    def equals(self, other) -> bool:
        """Whether ``other`` (a map or an array) has exactly this product."""
        other = other if isinstance(other, LinearMap) else LinearMap.from_dense(other)
        if other.shape != self.shape:
            return False
        a, b = self.tocsr(), other.tocsr()
        a.eliminate_zeros(), b.eliminate_zeros()
        return (np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
                and np.array_equal(a.data, b.data))


class _Transposed:
    """``C.T`` for products: ``C.T @ y`` is :meth:`LinearMap.rmatvec`."""

    __array_ufunc__ = None

    def __init__(self, parent):
        self._parent = parent

    @property
    def shape(self):
        return self._parent.shape[::-1]

    def __matmul__(self, y):
        return self._parent.rmatvec(y)

    def __rmatmul__(self, x):
        """``x @ C.T`` for ``x`` of shape (n,) or (k, n): ``C @ x``, transposed."""
        x = np.asarray(x, dtype=np.float64)
        return self._parent @ x if x.ndim == 1 else (self._parent @ x.T).T

    def toarray(self):
        return self._parent.toarray().T

    def __array__(self, dtype=None, copy=None):
        a = self.toarray()
        return a if dtype is None else a.astype(dtype, copy=False)
