"""Property-based tests of the kernel blocks (``rateopt.kernel_block``, what
``NystroemMap`` builds its features from) against scikit-learn.

For random CSR matrices, including non-canonical ones (unsorted column indices,
duplicate entries that scipy sums, explicit zeros, empty rows), their canonical
and dense forms, ``kernel_block(X, B, kernel)`` equals
``sklearn.metrics.pairwise.pairwise_kernels`` on the float64 matrix ``X`` means,
for the rbf, laplacian, poly and linear kernels. Tolerances are relative
(1e-10) plus the rounding-error bound of each kernel's inputs (sklearn computes
squared distances as ``|x|^2 - 2 x.b + |b|^2``, whose absolute error is a few
ulps of ``|x|^2 + |b|^2``; the exponential turns that into a relative error).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics.pairwise import pairwise_kernels

from rateopt._predictors._nystroem import NystroemMap
from rateopt.core._kernel_block import kernel_block, resolve_gamma

import _properties_support as S

EPS = S.EPS
KERNELS = ["rbf", "laplacian", "poly", "linear"]

# Magnitudes where sklearn's float64 kernels stay finite and meaningful.
KB_VALUES = st.one_of(
    st.integers(-3, 3).map(float),
    st.floats(-10.0, 10.0),
    S.signed(S.log_uniform(-3, 3)),
    S.signed(S.log_uniform(-320, -290)),
)


class KBProblem:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        A = self.A
        return (f"KBProblem(X=csr_matrix(dtype={A.dtype}, shape={A.shape}, data={A.data.tolist()}, "
                f"indices={A.indices.tolist()} [{A.indices.dtype}], indptr={A.indptr.tolist()}), "
                f"landmarks={self.B.tolist()}, kernel={self.kernel!r}, gamma={self.gamma!r}, "
                f"degree={self.degree!r}, coef0={self.coef0!r}, n_threads={self.n_threads})")


@st.composite
def kb_problems(draw, kernel=None):
    n = draw(st.integers(1, 6))
    d = draw(st.integers(1, 4))
    r = draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    vals = KB_VALUES.map(lambda v: float(np.float32(v))) if dtype == np.float32 else KB_VALUES
    entries = draw(S.raw_entries(n, d, vals, max_per_row=5))
    A = S.build_csr(entries, n, d, dtype, draw(st.sampled_from([np.int32, np.int64])))
    B = np.array(draw(st.lists(st.lists(KB_VALUES, min_size=d, max_size=d), min_size=r, max_size=r)), np.float64)
    if draw(st.booleans()) and A.nnz:  # a landmark equal to a row: distance exactly 0
        B[0] = S.dense64(A)[draw(st.integers(0, n - 1))]
    kernel = kernel or draw(st.sampled_from(KERNELS))
    gamma = draw(st.one_of(st.none(), S.log_uniform(-3, 0), st.sampled_from([0.5, 1.0, 2.0])))
    degree = float(draw(st.integers(1, 4)))
    coef0 = draw(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(-2.0, 2.0)))
    return KBProblem(A=A, entries=entries, B=B, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0,
                     n_threads=draw(st.sampled_from([1, 2, 3, 4])))


def kb_tolerance(p, K, x_err):
    """Absolute tolerance per entry of K(X, B) (see the module docstring)."""
    n, d = p.A.shape
    absX = S.abs_dense(p.entries, n, d)
    absB = np.abs(p.B)
    g = resolve_gamma(p.gamma, d)
    lin_abs = absX @ absB.T
    rel = 1e-12 + x_err
    with np.errstate(all="ignore"):
        if p.kernel == "linear":
            return rel * lin_abs + 1e-300
        if p.kernel == "poly":
            base_err = g * rel * lin_abs + 4 * EPS * abs(p.coef0)
            top = g * lin_abs + abs(p.coef0) + base_err
            return p.degree * top ** (p.degree - 1) * base_err + 1e-10 * np.abs(K) + 1e-300
        if p.kernel == "rbf":
            sq = (absX**2).sum(axis=1)[:, None] + (absB**2).sum(axis=1)[None, :]
            err = (1e-13 + 4 * x_err) * sq
        else:  # laplacian
            l1 = absX.sum(axis=1)[:, None] + absB.sum(axis=1)[None, :]
            err = (1e-13 + 2 * x_err) * l1
        return 2 * np.abs(K) * np.expm1(g * err) + 1e-10 * np.abs(K) + 1e-300


def sklearn_block(X64, p):
    params = dict(gamma=resolve_gamma(p.gamma, X64.shape[1]), degree=p.degree, coef0=p.coef0)
    with np.errstate(all="ignore"):
        return pairwise_kernels(X64, p.B, metric=p.kernel, filter_params=True, **params)


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=S.examples(70))
@given(data=st.data())
def test_kernel_block_matches_sklearn(kernel, data):
    """kernel_block on a (non-canonical) CSR matrix, its canonical form and its dense
    form (core and BLAS paths) equals pairwise_kernels on the dense float64 matrix;
    no copy warning for these in-place layouts; repeated calls are bit-identical."""
    p = data.draw(kb_problems(kernel), label="problem")
    A = p.A
    canon = A.copy()
    with np.errstate(all="ignore"):
        canon.sum_duplicates()
    canon.sort_indices()
    x_err = float(np.finfo(A.dtype).eps) if A.dtype == np.float32 else 0.0
    want = sklearn_block(S.dense64(A), p)  # duplicates summed in float64
    if not np.all(np.isfinite(want)):
        return  # sklearn itself overflows: nothing to compare with
    tol = kb_tolerance(p, want, x_err)
    forms = {
        "noncanonical CSR": (A, "core"),
        "canonical CSR": (canon, "core"),
        "dense (core)": (S.scipy_dense(A), "core"),
        "dense (auto)": (S.scipy_dense(A), "auto"),
    }
    kw = dict(gamma=p.gamma, degree=p.degree, coef0=p.coef0, n_threads=p.n_threads)
    for name, (X, method) in forms.items():
        K, exc, rec = S.call_recording(kernel_block, X, p.B, p.kernel, method=method, **kw)
        assert exc is None, f"{name}: {exc!r}"
        S.assert_warnings(rec, False, name)
        assert K.shape == want.shape and K.dtype == np.float64
        assert np.all(np.isfinite(K)), f"{name}: non-finite kernel values {K!r}"
        diff = np.abs(K - want)
        assert np.all(diff <= tol), (
            f"{name}, kernel={p.kernel}: got {K.tolist()}, sklearn {want.tolist()}, "
            f"|diff| {diff.tolist()}, tolerance {tol.tolist()}"
        )
        again = kernel_block(X, p.B, p.kernel, method=method, **kw)
        assert again.tobytes() == K.tobytes(), f"{name}: repeated call differs"


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@settings(max_examples=S.examples(60))
@given(data=st.data(), scale=S.log_uniform(0, 3))
def test_kernel_block_underflow_matches_sklearn(kernel, data, scale):
    """Where exp(-gamma * distance) underflows (true values below ~1e-308, down to 0),
    kernel_block still equals pairwise_kernels to the subnormal rounding floor (1e-320),
    not merely to 1e-300. Canonical CSR and dense X only (duplicates are tested above)."""
    p = data.draw(kb_problems(kernel), label="problem")
    A = p.A.copy()
    A.data *= A.dtype.type(scale)  # spread the rows out: large distances
    with np.errstate(all="ignore"):
        A.sum_duplicates()
    A.sort_indices()
    p.A, p.entries = A, S.stored_entries(A)
    want = sklearn_block(S.dense64(A), p)
    if not np.all(np.isfinite(want)):
        return
    tol = kb_tolerance(p, want, 0.0) - 1e-300 + 1e-320
    kw = dict(gamma=p.gamma, degree=p.degree, coef0=p.coef0, n_threads=p.n_threads)
    for name, X in {"canonical CSR": A, "dense": S.scipy_dense(A)}.items():
        K = kernel_block(X, p.B, kernel, **kw)
        diff = np.abs(K - want)
        assert np.all(diff <= tol), (
            f"{name}, kernel={kernel}: got {K.tolist()}, sklearn {want.tolist()}, |diff| {diff.tolist()}"
        )


@settings(max_examples=S.examples(40))
@given(kb_problems())
def test_nystroem_transform_matches_sklearn_kernel(p):
    """NystroemMap.transform of a non-canonical CSR matrix equals K(X, B) W with K
    from sklearn on the dense float64 matrix (what the kernel models train on)."""
    A = p.A
    want = sklearn_block(S.dense64(A), p)
    if not np.all(np.isfinite(want)):
        return
    g = resolve_gamma(p.gamma, A.shape[1])
    r = p.B.shape[0]
    W = np.eye(r)  # identity whitening: transform(X) is K(X, B) itself
    nm = NystroemMap(p.kernel, g, p.degree, p.coef0, p.B, W, dtype=np.float64)
    x_err = float(np.finfo(A.dtype).eps) if A.dtype == np.float32 else 0.0
    tol = kb_tolerance(p, want, x_err)
    got = nm.transform(A, n_threads=p.n_threads)
    assert np.all(np.abs(got - want) <= tol), (got.tolist(), want.tolist())
