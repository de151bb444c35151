"""Kernel blocks and the Nystroem feature map of kernel models.

``kernel_block(X, landmarks)`` computes ``K(X, B)`` for the linear, polynomial,
RBF and Laplacian kernels, with the conventions of scikit-learn's
``pairwise_kernels``:

* linear ``<x, b>``; poly ``(gamma <x, b> + coef0)^degree``;
* rbf ``exp(-gamma ||x - b||^2)``; laplacian ``exp(-gamma ||x - b||_1)``.

Two paths: the core computes the block directly (dense or CSR, OpenMP over
rows), or, for dense X and inner-product kernels, BLAS computes ``X @ B.T`` (in
row chunks, through NumPy) and the core turns it into kernel values in place.
``bench/kernels.py`` measures both; ``method="auto"`` takes the faster one for
the input (BLAS for dense inner-product kernels, the core otherwise).

:class:`NystroemMap` turns a kernel model ``h(x) = sum_b alpha_b k(x, b) + beta``
into a linear model on the features ``phi(x) = K(x, B) K_BB^{-1/2}`` (small
eigenvalues of ``K_BB`` are dropped), so that the RKHS norm of ``h`` is the
Euclidean norm of the weights and every training game runs unchanged.
"""

from __future__ import annotations

import math
import os

import numpy as np
import scipy.sparse as sp

from .. import _core
from ._threads import resolve_n_threads
from ._matrix import FeatureMatrix
from ..exceptions import NumericalError, RateoptError

__all__ = ["KERNELS", "kernel_block", "NystroemMap", "resolve_gamma"]

KERNELS = {"linear": 0, "poly": 1, "rbf": 2, "laplacian": 3}
_CHUNK_ROWS = 8192


def resolve_gamma(gamma, n_features):
    """``gamma=None`` means ``1 / n_features`` (scikit-learn's pairwise default)."""
    if gamma is None:
        return 1.0 / max(n_features, 1)
    g = float(gamma)
    if not (math.isfinite(g) and g > 0):
        raise ValueError(f"gamma must be a positive finite number or None, got {gamma!r}")
    return g


def _check_kernel(kernel):
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {tuple(KERNELS)}, got {kernel!r}")
    return KERNELS[kernel]


def kernel_block(X, landmarks, kernel="rbf", *, gamma=None, degree=3, coef0=1.0, dtype=np.float64,
                 method="auto", n_threads=None):
    """The kernel matrix ``K(X, landmarks)``.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    landmarks : array-like of shape (n_landmarks, n_features)
    kernel : {"rbf", "laplacian", "poly", "linear"}, default="rbf"
    gamma : float, default=None
        ``None`` means ``1 / n_features``.
    degree : float, default=3
        Degree of the polynomial kernel.
    coef0 : float, default=1.0
        Constant of the polynomial kernel.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Output dtype (the computation is in float64 either way).
    method : {"auto", "core", "blas"}, default="auto"
        ``"blas"`` (dense X, inner-product kernels only): ``X @ B.T`` by BLAS in
        row chunks, transformed in place by the core. ``"core"``: everything in
        the core. ``"auto"``: BLAS where it applies, else the core.
    n_threads : int, default=None

    Returns
    -------
    ndarray of shape (n_samples, n_landmarks)

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt import kernel_block
    >>> kernel_block(np.zeros((1, 2)), np.ones((1, 2)), "rbf", gamma=0.5).round(6).tolist()
    [[0.367879]]
    """
    Xm = X if isinstance(X, FeatureMatrix) else FeatureMatrix(X)
    kind = _check_kernel(kernel)
    B = np.ascontiguousarray(landmarks, dtype=np.float64)
    if B.ndim != 2 or B.shape[1] != Xm.n_features:
        raise ValueError(f"landmarks must have shape (n_landmarks, {Xm.n_features}), got {B.shape}")
    if not np.all(np.isfinite(B)):
        raise ValueError("landmarks hold a non-finite value")
    g = resolve_gamma(gamma, Xm.n_features)
    degree, coef0 = float(degree), float(coef0)
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    if method not in ("auto", "core", "blas"):
        raise ValueError(f"method must be 'auto', 'core' or 'blas', got {method!r}")
    threads = resolve_n_threads(n_threads)
    out_f32 = dtype == np.float32
    use_blas = method == "blas" or (method == "auto" and not Xm.is_sparse and kernel != "laplacian")
    if use_blas:
        if Xm.is_sparse or kernel == "laplacian":
            raise ValueError("method='blas' needs dense X and an inner-product kernel (not laplacian)")
        return _blas_block(Xm.data, B, kind, g, coef0, degree, dtype, threads)
    if Xm.is_sparse:
        D = Xm.data
        return _core.kernel_block_csr(D.data, D.indices, D.indptr, Xm.n_samples, Xm.n_features, B, kind, g, coef0,
                                      degree, out_f32, threads)
    return _core.kernel_block_dense(Xm.data, B, kind, g, coef0, degree, out_f32, threads)


def _blas_block(X, B, kind, gamma, coef0, degree, dtype, threads):
    n, r = X.shape[0], B.shape[0]
    out = np.empty((n, r), dtype=dtype)
    bsq = np.einsum("ij,ij->i", B, B)
    rbf = kind == KERNELS["rbf"]
    buf = None if dtype == np.float64 else np.empty((min(n, _CHUNK_ROWS), r))
    for start in range(0, n, _CHUNK_ROWS):
        Xc = np.asarray(X[start:start + _CHUNK_ROWS], dtype=np.float64)
        # The product goes straight into the output rows (or one reused buffer),
        # so no chunk-sized temporary is allocated per chunk.
        G = out[start:start + Xc.shape[0]] if buf is None else buf[:Xc.shape[0]]
        np.matmul(Xc, B.T, out=G)
        xsq = np.einsum("ij,ij->i", Xc, Xc) if rbf else None
        _core.gram_transform(G, xsq, bsq if rbf else None, kind, gamma, coef0, degree, threads)
        if buf is not None:
            out[start:start + Xc.shape[0]] = G
    return out


def _available_memory():
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return None


def check_block_memory(n_rows, n_cols, dtype, what="the kernel feature block"):
    """Raise a clear error when an (n_rows, n_cols) block would not fit in memory."""
    need = int(n_rows) * int(n_cols) * np.dtype(dtype).itemsize
    avail = _available_memory()
    if avail is not None and need > 0.8 * avail:
        raise RateoptError(
            f"{what} needs {need / 2**30:.2f} GiB ({n_rows} x {n_cols} {np.dtype(dtype).name}) but only "
            f"{avail / 2**30:.2f} GiB of memory is free: use fewer n_components or dtype=float32"
        )
    return need


def _check_kernel_values(K, kernel, gamma, degree, coef0, what, error=RateoptError):
    """Raise a clear error if a kernel block holds inf or NaN (overflow of the kernel itself).

    ``error`` is :class:`RateoptError` while fitting the landmarks and
    :class:`NumericalError` when a fitted map is applied to new rows.
    """
    finite = np.isfinite(K)
    if finite.all():
        return
    n_nan = int(np.count_nonzero(np.isnan(K)))
    n_inf = K.size - int(np.count_nonzero(finite)) - n_nan
    found = f"{n_inf} inf and {n_nan} NaN value(s)"
    fractional = degree != math.floor(degree)
    if kernel == "poly":
        formula = f"the poly kernel (gamma <x, b> + coef0)^degree with gamma={gamma:g}, coef0={coef0:g}, degree={degree:g}"
        causes = []
        if n_inf or not fractional:
            causes.append("overflowed float64")
        if n_nan and fractional:
            causes.append(f"raised a negative base to the non-integer degree {degree:g}")
        why = f"{formula} {' or '.join(causes)}"
        fix = "reduce gamma or degree, or scale X" if n_inf or not fractional else ""
        if n_nan and fractional:
            fix += (", or " if fix else "") + "use an integer degree or a coef0 that keeps gamma <x, b> + coef0 >= 0"
    elif kernel == "linear":
        why, fix = "the linear kernel <x, b> overflowed float64", "scale X"
    else:
        why, fix = f"the {kernel} kernel with gamma={gamma:g} is not finite", "reduce gamma or scale X"
    if error is NumericalError:
        fix = f"{fix} (these rows may be on a much larger scale than the training data)"
    raise error(f"kernel values are not finite: {what} holds {found}; {why}. Fix: {fix}")


class NystroemMap:
    """The feature map ``phi(x) = K(x, B) K_BB^{-1/2}`` of a kernel model.

    Parameters
    ----------
    kernel : {"rbf", "laplacian", "poly", "linear"}
    gamma : float
        Already resolved (a number).
    degree, coef0 : float
    landmarks : ndarray of shape (n_landmarks, n_features)
    whitening : ndarray of shape (n_landmarks, n_components)
        ``U_k diag(s_k^{-1/2})`` from the eigendecomposition of ``K_BB``, keeping
        eigenvalues above ``rtol * max``.
    dtype : numpy dtype
        Dtype of the features it produces.

    Attributes
    ----------
    n_features_in_ : int
        Raw input features.
    n_components_ : int
        Output features.
    """

    def __init__(self, kernel, gamma, degree, coef0, landmarks, whitening, dtype=np.float32):
        self.kernel = kernel
        self.gamma = float(gamma)
        self.degree = float(degree)
        self.coef0 = float(coef0)
        self.landmarks = np.ascontiguousarray(landmarks, dtype=np.float64)
        self.whitening = np.ascontiguousarray(whitening, dtype=np.float64)
        self.dtype = np.dtype(dtype)
        self.n_features_in_ = self.landmarks.shape[1]
        self.n_components_ = self.whitening.shape[1]

    @classmethod
    def fit(cls, X, *, kernel="rbf", gamma=None, degree=3, coef0=1.0, n_components=1000, landmarks="uniform",
            exact=None, rtol=1e-10, dtype=np.float32, random_state=None, n_threads=None):
        """Choose landmarks from ``X`` and compute the whitening.

        Parameters
        ----------
        X : array-like, sparse matrix or FeatureMatrix of shape (n_samples, n_features)
        kernel, gamma, degree, coef0 : see :func:`kernel_block`
        n_components : int, default=1000
            Number of landmarks; with ``n_components >= n_samples`` (or
            ``exact=True``) every training row is a landmark (the
            representer-theorem model).
        landmarks : {"uniform", "kmeans++"}, default="uniform"
            Uniform sampling of rows without replacement, or k-means++ seeding.
        exact : bool, default=None
        rtol : float, default=1e-10
            Eigenvalues of ``K_BB`` below ``rtol * max`` are dropped.
        dtype : default=numpy.float32
        random_state : int or None
        n_threads : int or None

        Returns
        -------
        NystroemMap
        """
        Xm = X if isinstance(X, FeatureMatrix) else FeatureMatrix(X)
        _check_kernel(kernel)
        g = resolve_gamma(gamma, Xm.n_features)
        if landmarks not in ("uniform", "kmeans++"):
            raise ValueError(f"landmarks must be 'uniform' or 'kmeans++', got {landmarks!r}")
        n = Xm.n_samples
        if exact is None:
            exact = n_components >= n
        if not exact and int(n_components) < 1:
            raise ValueError(f"n_components must be >= 1, got {n_components}")
        rng = np.random.default_rng(random_state)
        if exact:
            idx = np.arange(n)
            B = Xm.data.toarray() if Xm.is_sparse else np.asarray(Xm.data, dtype=np.float64)
        elif landmarks == "uniform":
            idx = np.sort(rng.choice(n, size=int(n_components), replace=False))
            rows = Xm.data[idx]
            B = rows.toarray() if Xm.is_sparse else rows
        else:
            from sklearn.cluster import kmeans_plusplus

            seed = int(rng.integers(0, 2**31 - 1))
            data = Xm.data if Xm.is_sparse else np.asarray(Xm.data, dtype=np.float64)
            B, _ = kmeans_plusplus(data, int(n_components), random_state=seed)
            B = B.toarray() if sp.issparse(B) else B
        B = np.ascontiguousarray(B, dtype=np.float64)
        check_block_memory(B.shape[0], B.shape[0], np.float64, "the landmark Gram matrix")
        K = kernel_block(B, B, kernel, gamma=g, degree=degree, coef0=coef0, n_threads=n_threads)
        _check_kernel_values(K, kernel, g, float(degree), float(coef0), "the landmarks' kernel matrix K(B, B)")
        K = 0.5 * (K + K.T)
        s, U = np.linalg.eigh(K)
        keep = s > rtol * max(s.max(), 0.0)
        if not np.any(keep):
            raise RateoptError("the landmarks' kernel matrix is zero: no feature can be built (check gamma)")
        W = U[:, keep] / np.sqrt(s[keep])
        return cls(kernel, g, degree, coef0, B, W, dtype)

    def transform(self, X, *, n_threads=None, out=None):
        """``phi(X)`` of shape (n_samples, n_components_), built chunk by chunk.

        Parameters
        ----------
        X : array-like, sparse matrix or FeatureMatrix
        n_threads : int or None
        out : ndarray, default=None
            Preallocated output (n_samples, n_components_) of ``self.dtype``.

        Returns
        -------
        ndarray
        """
        Xm = X if isinstance(X, FeatureMatrix) else FeatureMatrix(X)
        if Xm.n_features != self.n_features_in_:
            raise ValueError(f"X has {Xm.n_features} features, but the kernel model was trained with "
                             f"{self.n_features_in_}")
        n = Xm.n_samples
        if out is None:
            check_block_memory(n, self.n_components_, self.dtype)
            out = np.empty((n, self.n_components_), dtype=self.dtype)
        for start, stop, K in self.iter_kernel_chunks(Xm, n_threads=n_threads):
            out[start:stop] = K @ self.whitening
        return out

    def iter_kernel_chunks(self, Xm, *, n_threads=None, chunk_rows=_CHUNK_ROWS):
        """Yield ``(start, stop, K(X[start:stop], B))`` so that only one chunk exists at a time."""
        D = Xm.data
        for start in range(0, Xm.n_samples, chunk_rows):
            stop = min(start + chunk_rows, Xm.n_samples)
            K = kernel_block(D[start:stop], self.landmarks, self.kernel, gamma=self.gamma, degree=self.degree,
                             coef0=self.coef0, n_threads=n_threads)
            _check_kernel_values(K, self.kernel, self.gamma, self.degree, self.coef0,
                                 f"K(X[{start}:{stop}], landmarks)", NumericalError)
            yield start, stop, K

    def params(self):
        """JSON-serializable parameters (the arrays are saved separately)."""
        return {"kind": "nystroem", "kernel": self.kernel, "gamma": self.gamma, "degree": self.degree,
                "coef0": self.coef0, "dtype": self.dtype.name}

    def __repr__(self):
        return (f"NystroemMap(kernel={self.kernel!r}, gamma={self.gamma:g}, n_landmarks={self.landmarks.shape[0]}, "
                f"n_components={self.n_components_})")
