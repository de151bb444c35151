"""The Nystroem feature map of kernel models.

:class:`NystroemMap` turns a kernel model ``h(x) = sum_b alpha_b k(x, b) + beta``
into a linear model on the features ``phi(x) = K(x, B) K_BB^{-1/2}`` (small
eigenvalues of ``K_BB`` are dropped), so that the RKHS norm of ``h`` is the
Euclidean norm of the weights and every training game runs unchanged. The
kernel blocks ``K(x, B)`` come from :func:`rateopt.core._kernel_block.kernel_block`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..core import FeatureMatrix
from ..core._kernel_block import (
    CHUNK_ROWS,
    KERNEL_CODES,
    check_block_memory,
    check_kernel,
    check_kernel_values,
    kernel_block,
    resolve_gamma,
)
from ..exceptions import NumericalError, RateoptError

__all__ = ["KERNELS", "NystroemMap"]

KERNELS = KERNEL_CODES
"""The kernels a kernel model may use, by name (values: the core's codes, those of ``kernel_block``)."""


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
        from sklearn.cluster import kmeans_plusplus  # lazy: `import rateopt` loads no scikit-learn
        Xm = X if isinstance(X, FeatureMatrix) else FeatureMatrix(X)
        check_kernel(kernel)
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
            seed = int(rng.integers(0, 2**31 - 1))
            data = Xm.data if Xm.is_sparse else np.asarray(Xm.data, dtype=np.float64)
            B, _ = kmeans_plusplus(data, int(n_components), random_state=seed)
            B = B.toarray() if sp.issparse(B) else B
        B = np.ascontiguousarray(B, dtype=np.float64)
        check_block_memory(B.shape[0], B.shape[0], np.float64, "the landmark Gram matrix")
        K = kernel_block(B, B, kernel, gamma=g, degree=degree, coef0=coef0, n_threads=n_threads)
        check_kernel_values(K, kernel, g, float(degree), float(coef0), "the landmarks' kernel matrix K(B, B)")
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

    def iter_kernel_chunks(self, Xm, *, n_threads=None):
        """Yield ``(start, stop, K(X[start:stop], B))`` so that only one chunk exists at a time."""
        D = Xm.data
        for start in range(0, Xm.n_samples, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, Xm.n_samples)
            K = kernel_block(D[start:stop], self.landmarks, self.kernel, gamma=self.gamma, degree=self.degree,
                             coef0=self.coef0, n_threads=n_threads)
            check_kernel_values(K, self.kernel, self.gamma, self.degree, self.coef0,
                                 f"K(X[{start}:{stop}], landmarks)", NumericalError)
            yield start, stop, K

    def params(self):
        """JSON-serializable parameters (the arrays are saved separately)."""
        return {"kind": "nystroem", "kernel": self.kernel, "gamma": self.gamma, "degree": self.degree,
                "coef0": self.coef0, "dtype": self.dtype.name}

    def __repr__(self):
        return (f"NystroemMap(kernel={self.kernel!r}, gamma={self.gamma:g}, n_landmarks={self.landmarks.shape[0]}, "
                f"n_components={self.n_components_})")
