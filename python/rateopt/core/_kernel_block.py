"""Kernel blocks ``K(X, B)`` and the memory guard of kernel models.

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

The Nystroem feature map built on these blocks is a predictor:
:class:`rateopt._predictors._nystroem.NystroemMap`.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..exceptions import NumericalError, RateoptError
from ._matrix import FeatureMatrix
from ._runtime import extension as _core
from ._threads import resolve_n_threads

__all__ = ["KERNEL_CODES", "CHUNK_ROWS", "kernel_block", "resolve_gamma", "check_kernel", "check_block_memory",
           "check_kernel_values"]

KERNEL_CODES = {"linear": 0, "poly": 1, "rbf": 2, "laplacian": 3}
"""The kernels of :func:`kernel_block`, by name (values are the core's codes)."""

CHUNK_ROWS = 8192
"""Rows per chunk of a block computed through BLAS (and of a Nystroem transform)."""


def resolve_gamma(gamma, n_features):
    """``gamma=None`` means ``1 / n_features`` (scikit-learn's pairwise default)."""
    if gamma is None:
        return 1.0 / max(n_features, 1)
    g = float(gamma)
    if not (math.isfinite(g) and g > 0):
        raise ValueError(f"gamma must be a positive finite number or None, got {gamma!r}")
    return g


def check_kernel(kernel):
    """The core's code of the kernel named ``kernel`` (a ``ValueError`` naming the kernels if unknown)."""
    if kernel not in KERNEL_CODES:
        raise ValueError(f"kernel must be one of {tuple(KERNEL_CODES)}, got {kernel!r}")
    return KERNEL_CODES[kernel]


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
    kind = check_kernel(kernel)
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
        return _core.kernel_block_csr(*Xm.csr_arrays, Xm.n_samples, Xm.n_features, B, kind, g, coef0,
                                      degree, out_f32, threads)
    return _core.kernel_block_dense(Xm.data, B, kind, g, coef0, degree, out_f32, threads)


def _blas_block(X, B, kind, gamma, coef0, degree, dtype, threads):
    n, r = X.shape[0], B.shape[0]
    out = np.empty((n, r), dtype=dtype)
    bsq = np.einsum("ij,ij->i", B, B)
    rbf = kind == KERNEL_CODES["rbf"]
    buf = None if dtype == np.float64 else np.empty((min(n, CHUNK_ROWS), r))
    for start in range(0, n, CHUNK_ROWS):
        Xc = np.asarray(X[start:start + CHUNK_ROWS], dtype=np.float64)
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


def check_kernel_values(K, kernel, gamma, degree, coef0, what, error=RateoptError):
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
        formula = (f"the poly kernel (gamma <x, b> + coef0)^degree with gamma={gamma:g}, coef0={coef0:g}, "
                   f"degree={degree:g}")
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
