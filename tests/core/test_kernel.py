"""The fused rate kernel (``rateopt.core.rate_kernel``) against the NumPy reference.

Contract: docs/core_api.md. The reference (tests/reference.py) is float64,
whole-array NumPy; a float32 ``X`` is upcast there, so the core (which reads the
same float32 values and accumulates in float64) must agree to the same tight
tolerance as for float64: the only differences allowed are summation order.
Tolerances are ``rtol=1e-12`` and ``atol=1e-12 * scale``, where ``scale`` is
the sum of absolute values of the terms a field adds up
(``reference.kernel_error_scales``).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rateopt.core import AtomTable, FeatureMatrix, rate_kernel

import reference as ref
from _kernel_support import DTYPES, FORMATS, THREADS, core_atoms, make_problem, make_X, ref_atoms


def assert_kernel_close(res, expected, scales, *, what=""):
    for f in ref.KERNEL_FIELDS:
        got = np.asarray(getattr(res, f), dtype=np.float64)
        want = np.asarray(getattr(expected, f), dtype=np.float64)
        assert got.shape == want.shape, (f, got.shape, want.shape)
        np.testing.assert_allclose(
            got, want, rtol=1e-12, atol=1e-12 * scales[f], err_msg=f"{what} field {f}"
        )


def assert_kernel_equal(a, b):
    for f in ref.KERNEL_FIELDS:
        x = np.asarray(getattr(a, f))
        y = np.asarray(getattr(b, f))
        assert np.array_equal(x, y), f"field {f} differs: {x!r} vs {y!r}"


def check_and_compare(X, theta, bias, B, w, coef, *, margin=1.0, rows=None, n_threads=1):
    atoms = core_atoms(B, w)
    res = rate_kernel(X, theta, bias, atoms, coef, margin=margin, rows=rows, n_threads=n_threads)
    ra = ref_atoms(B, w)
    expected = ref.rate_kernel(X, theta, bias, ra, coef, margin=margin, rows=rows)
    scales = ref.kernel_error_scales(X, theta, bias, ra, coef, margin=margin, rows=rows)
    assert_kernel_close(res, expected, scales)
    return res, expected


# --------------------------------------------------------------------------- #
# A hand-computed example (checks the reference as much as the core)
# --------------------------------------------------------------------------- #

HAND_X = np.array([[1.0, -1.0], [0.0, 0.0], [2.0, 1.0], [-1.0, 0.0]])
HAND_THETA = np.array([2.0, 2.0])
HAND_B = np.array([[1, 0], [1, 0], [1, 1], [0, 1]], dtype=bool)
HAND_COEF = np.array([1.0, -2.0])
# s = (0, 0, 6, -2); pos = (1, 1, 1, 0); atom 0 = {0,1,2} (v=1/3), atom 1 = {2,3} (v=1/2)
# u = (1/3, 1/3, 1/3 - 1, -1); phi = (1/3, 1/3, -2/3, 3 - 1); d = (1/3, 1/3, 0, -1)
HAND_FULL = ref.RefKernelResult(
    rates=np.array([1.0, 0.5]),
    proxy_pos_rates=np.array([(1 + 1 + 7) / 3, (7 + 0) / 2]),
    proxy_neg_rates=np.array([(1 + 1 + 0) / 3, (0 + 3) / 2]),
    proxy_value=2.0,
    grad=np.array([4 / 3, -1 / 3]),
    grad_bias=-1 / 3,
    value=0.0,
)
# rows = [3, 3]: scale 4/2 = 2; only row 3 (atom 1, v=1/2, s=-2, u=-1, d=-1)
HAND_ROWS = ref.RefKernelResult(
    rates=np.array([0.0, 0.0]),
    proxy_pos_rates=np.array([0.0, 0.0]),
    proxy_neg_rates=np.array([0.0, 2 * (0.5 * 3 + 0.5 * 3)]),
    proxy_value=2 * (2.0 + 2.0),
    grad=np.array([2 * (1.0 + 1.0), 0.0]),
    grad_bias=2 * (-2.0),
    value=0.0,
)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_threads", THREADS)
def test_hand_computed(fmt, dtype, n_threads):
    X = make_X(HAND_X, fmt, dtype)
    atoms = AtomTable.from_membership(HAND_B)
    ra = ref.atoms_from_membership(HAND_B)
    unit = {f: 1.0 for f in ref.KERNEL_FIELDS}
    for rows, want in [(None, HAND_FULL), (np.array([3, 3], np.int64), HAND_ROWS)]:
        assert_kernel_close(ref.rate_kernel(X, HAND_THETA, 0.0, ra, HAND_COEF, rows=rows), want, unit,
                            what="reference")
        res = rate_kernel(X, HAND_THETA, 0.0, atoms, HAND_COEF, rows=rows, n_threads=n_threads)
        assert_kernel_close(res, want, unit, what="core")


def test_result_types():
    D, B, w, theta, bias, coef = make_problem(0, n=50, d=4, n_atoms=5)
    res = rate_kernel(D, theta, bias, core_atoms(B, w), coef, n_threads=1)
    for f in ("rates", "proxy_pos_rates", "proxy_neg_rates"):
        assert getattr(res, f).shape == (5,)
    assert res.grad.shape == (4,) and res.grad.dtype == np.float64
    for f in ("proxy_value", "grad_bias", "value"):
        assert np.ndim(getattr(res, f)) == 0
        assert isinstance(float(getattr(res, f)), float)


# --------------------------------------------------------------------------- #
# Random problems vs the reference
# --------------------------------------------------------------------------- #

CASES = {
    "full": dict(margin=1.0, rows=None, weighted=True),
    "unweighted": dict(margin=1.0, rows=None, weighted=False),
    "margin_0.5": dict(margin=0.5, rows=None, weighted=True),
    "margin_2.5": dict(margin=2.5, rows=None, weighted=True),
    "minibatch": dict(margin=1.0, rows="random", weighted=True),
    "minibatch_margin_2": dict(margin=2.0, rows="random", weighted=True),
    "minibatch_one_row_repeated": dict(margin=1.0, rows="one", weighted=True),
    "minibatch_with_special_rows": dict(margin=1.0, rows="special", weighted=True),
}


def _rows(kind, n, rng):
    if kind is None:
        return None
    if kind == "random":
        rows = rng.integers(0, n, size=n // 3)  # repeats happen
        rows[:4] = rows[4]  # and certainly do
        return rows.astype(np.int64)
    if kind == "one":
        return np.full(7, 25, np.int64)  # a row in every atom
    if kind == "special":  # empty rows, no-atom rows, u == 0 rows, single-example atoms, repeated
        return np.array([0, 2, 2, 3, 7, 7, 7, 12, 25, 33, 41, n - 1], np.int64)
    raise AssertionError(kind)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_kernel_matches_reference(fmt, dtype, n_threads, case):
    spec = CASES[case]
    D, B, w, theta, bias, coef = make_problem(1, weighted=spec["weighted"])
    X = make_X(D, fmt, dtype, explicit_zero_rows=(3,))
    rows = _rows(spec["rows"], D.shape[0], np.random.default_rng(2))
    check_and_compare(X, theta, bias, B, w, coef, margin=spec["margin"], rows=rows,
                      n_threads=n_threads)


def test_problem_covers_the_cases():
    """The random problem really contains u>0, u<0, u==0, both hinge regimes and both signs."""
    D, B, w, theta, bias, coef = make_problem(1)
    t = ref._kernel_terms(D, theta, bias, ref.atoms_from_membership(B, w), coef, 1.0, None)
    u, s = t["u"], t["s"]
    assert (u > 0).sum() > 20 and (u < 0).sum() > 20
    assert np.all(u[10:20] == 0) and np.all(u[30:40] == 0)
    assert (s >= 0).sum() > 50 and (s < 0).sum() > 50
    assert np.any((u > 0) & (1 + s <= 0)) and np.any((u > 0) & (1 + s > 0))
    assert np.any((u < 0) & (1 - s <= 0)) and np.any((u < 0) & (1 - s > 0))
    assert B.sum(axis=0).min() == 1 and np.all(B[20:30].sum(axis=1) == B.shape[1] - 2)


@pytest.mark.parametrize("margin", [1.0, 2.0])
@pytest.mark.parametrize("bias", [0.0, -1.0])
@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_exact_ties(fmt, dtype, n_threads, bias, margin):
    """Integer X, theta, bias, margin: scores are exact, many are exactly 0 (pos = 1)
    and many sit exactly on a hinge kink (margin +- s == 0: no gradient)."""
    rng = np.random.default_rng(3)
    n = 400
    D = rng.integers(-2, 3, size=(n, 3)).astype(np.float64)
    D[:10] = 0.0
    D[10] = (1.0, -1.0, 0.0)  # with theta[:2] = (2, 2): 2 - 2 = 0
    theta = np.array([2.0, 2.0, 1.0])
    B = rng.random((n, 4)) < 0.4
    B[:, 1] = B[:, 0]
    w = rng.integers(1, 4, size=n).astype(np.float64)
    coef = np.array([1.5, -1.5, -0.75, 2.0])
    s = D @ theta + bias
    assert (s == 0).sum() > 20
    assert (margin + s == 0).sum() > 5 and (margin - s == 0).sum() > 5
    X = make_X(D, fmt, dtype)
    check_and_compare(X, theta, bias, B, w, coef, margin=margin, n_threads=n_threads)
    rows = rng.integers(0, n, size=150).astype(np.int64)
    check_and_compare(X, theta, bias, B, w, coef, margin=margin, rows=rows, n_threads=n_threads)


@pytest.mark.parametrize("fmt", FORMATS)
def test_zero_coef(fmt):
    D, B, w, theta, bias, coef = make_problem(4, n=200)
    coef = np.zeros_like(coef)
    res, _ = check_and_compare(make_X(D, fmt, np.float64), theta, bias, B, w, coef)
    assert res.proxy_value == 0.0 and res.grad_bias == 0.0 and res.value == 0.0
    assert not np.any(res.grad)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_tiny(fmt, dtype):
    """One example, one feature, one atom; and an example in no atom."""
    X = make_X(np.array([[-0.25]]), fmt, dtype)
    check_and_compare(X, np.array([3.0]), 0.5, np.array([[True]]), None, np.array([-2.0]))
    X = make_X(np.array([[1.5], [0.0]]), fmt, dtype)
    check_and_compare(X, np.array([-1.0]), 0.25, np.array([[True], [False]]), None, np.array([0.5]))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_minibatch_partition_is_unbiased(fmt, dtype):
    """Averaging the estimates over equal-size batches that partition the rows
    gives the full-data values (each batch is scaled by n / len(rows))."""
    D, B, w, theta, bias, coef = make_problem(5, n=600)
    X = make_X(D, fmt, dtype)
    atoms = core_atoms(B, w)
    full = rate_kernel(X, theta, bias, atoms, coef, n_threads=1)
    perm = np.random.default_rng(6).permutation(600).astype(np.int64)
    parts = [rate_kernel(X, theta, bias, atoms, coef, rows=p, n_threads=1)
             for p in np.split(perm, 4)]
    scales = ref.kernel_error_scales(X, theta, bias, ref_atoms(B, w), coef)
    mean = ref.RefKernelResult(*[np.mean([np.asarray(getattr(p, f)) for p in parts], axis=0)
                                 for f in ref.KERNEL_FIELDS])
    assert_kernel_close(mean, full, scales)
    all_rows = rate_kernel(X, theta, bias, atoms, coef, rows=np.arange(600, dtype=np.int64),
                           n_threads=1)
    assert_kernel_close(all_rows, full, scales)


# --------------------------------------------------------------------------- #
# Threads and determinism
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_deterministic(fmt, dtype, n_threads):
    D, B, w, theta, bias, coef = make_problem(7, n=2000, d=50)
    X = make_X(D, fmt, dtype)
    atoms = core_atoms(B, w)
    Xm = FeatureMatrix(X)
    rows = np.random.default_rng(8).integers(0, 2000, size=900).astype(np.int64)
    for r in (None, rows):
        a = rate_kernel(X, theta, bias, atoms, coef, rows=r, n_threads=n_threads)
        b = rate_kernel(X, theta, bias, atoms, coef, rows=r, n_threads=n_threads)
        c = rate_kernel(Xm, theta, bias, atoms, coef, rows=r, n_threads=n_threads)
        assert_kernel_equal(a, b)
        assert_kernel_equal(a, c)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_thread_counts_agree(fmt, dtype):
    D, B, w, theta, bias, coef = make_problem(9, n=2000, d=50)
    X = make_X(D, fmt, dtype)
    atoms = core_atoms(B, w)
    scales = ref.kernel_error_scales(X, theta, bias, ref_atoms(B, w), coef)
    one = rate_kernel(X, theta, bias, atoms, coef, n_threads=1)
    for nt in (2, -1, None):
        assert_kernel_close(rate_kernel(X, theta, bias, atoms, coef, n_threads=nt), one, scales,
                            what=f"n_threads={nt}")


# --------------------------------------------------------------------------- #
# Input forms
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", DTYPES)
def test_noncanonical_csr(dtype, idx_dtype, n_threads):
    """Unsorted column indices and duplicate entries mean the summed matrix.

    Duplicates split a value a into a/2 + a/2 (and add explicit 0 entries):
    halving is exact in float32 and float64, so the canonical matrix holds
    exactly the same numbers and the tight tolerance applies.
    """
    D, B, w, theta, bias, coef = make_problem(10, n=300, d=12)
    canon = make_X(D, "csr64" if idx_dtype == np.int64 else "csr32", dtype)
    rng = np.random.default_rng(11)
    data, indices, indptr = [], [], [0]
    for j in range(canon.shape[0]):
        a, b = canon.indptr[j], canon.indptr[j + 1]
        vals, cols = list(canon.data[a:b]), list(canon.indices[a:b])
        row_d, row_i = [], []
        for v, c in zip(vals, cols):
            r = rng.random()
            if r < 0.3:
                row_d += [v / 2, v / 2]
                row_i += [c, c]
            elif r < 0.4:
                row_d += [v, 0]
                row_i += [c, c]
            else:
                row_d.append(v)
                row_i.append(c)
        order = rng.permutation(len(row_i))
        data += [row_d[k] for k in order]
        indices += [row_i[k] for k in order]
        indptr.append(len(indices))
    nc = sp.csr_matrix((np.array(data, dtype), np.array(indices, idx_dtype),
                        np.array(indptr, idx_dtype)), shape=canon.shape)
    nc.indices = nc.indices.astype(idx_dtype)
    nc.indptr = nc.indptr.astype(idx_dtype)
    assert nc.nnz > canon.nnz
    assert any(np.any(np.diff(nc.indices[nc.indptr[j]:nc.indptr[j + 1]]) <= 0)
               for j in range(nc.shape[0]))
    summed = nc.copy()
    summed.sum_duplicates()
    np.testing.assert_array_equal(summed.toarray(), canon.toarray())

    atoms = core_atoms(B, w)
    scales = ref.kernel_error_scales(canon, theta, bias, ref_atoms(B, w), coef)
    rows = rng.integers(0, canon.shape[0], size=100).astype(np.int64)
    for r in (None, rows):
        a = rate_kernel(nc, theta, bias, atoms, coef, rows=r, n_threads=n_threads)
        b = rate_kernel(summed, theta, bias, atoms, coef, rows=r, n_threads=n_threads)
        assert_kernel_close(a, b, scales, what="noncanonical vs canonical")
        expected = ref.rate_kernel(canon, theta, bias, ref_atoms(B, w), coef, rows=r)
        assert_kernel_close(a, expected, scales, what="noncanonical vs reference")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_feature_matrix_wraps_without_copy(fmt, dtype):
    D = np.random.default_rng(12).standard_normal((30, 5))
    D[D < 0] = 0
    X = make_X(D, fmt, dtype)
    Xm = FeatureMatrix(X)  # no DataCopyWarning: warnings are errors in this suite
    assert Xm.n_samples == 30 and Xm.n_features == 5
    assert Xm.dtype == dtype
    assert Xm.is_sparse == (fmt != "dense")
    if fmt == "dense":
        assert Xm.index_dtype is None
        assert np.shares_memory(Xm.data, X)
    else:
        assert Xm.index_dtype == {"csr32": np.int32, "csr64": np.int64}[fmt]
        assert np.shares_memory(Xm.data.data, X.data)
        assert np.shares_memory(Xm.data.indices, X.indices)
        assert not (Xm.data.data.flags.writeable or Xm.data.indices.flags.writeable)  # read-only views
        # What the core reads: X's values in place, sealed copies of the index arrays (issue 24 item 4).
        data, indices, indptr = Xm.csr_arrays
        assert np.shares_memory(data, X.data)
        assert not np.shares_memory(indices, X.indices) and not np.shares_memory(indptr, X.indptr)


def test_csr_array_accepted():
    D, B, w, theta, bias, coef = make_problem(13, n=200)
    X = sp.csr_array(D)
    check_and_compare(X, theta, bias, B, w, coef)


# --------------------------------------------------------------------------- #
# Atom tables
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("sparse_membership", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_from_membership_weights(sparse_membership, weighted):
    rng = np.random.default_rng(14)
    n, n_atoms = 300, 7
    B = rng.random((n, n_atoms)) < 0.3
    B[:5] = False
    B[5:8] = True
    B[:, 2] = False
    B[17, 2] = True
    w = rng.uniform(0.1, 4.0, n) if weighted else None
    if weighted:
        w[50:60] = 0.0
    membership = sp.csr_matrix(B) if sparse_membership else B
    atoms = AtomTable.from_membership(membership, sample_weight=w)
    assert atoms.n_samples == n and atoms.n_atoms == n_atoms
    assert atoms.indptr.dtype == np.int32 and atoms.indptr.shape == (n + 1,)
    assert atoms.indices.dtype == np.uint8 and atoms.weights.dtype == np.float64
    assert atoms.indices.shape == atoms.weights.shape == (atoms.indptr[-1],)
    ww = np.ones(n) if w is None else w
    expected = np.where(B, ww[:, None] / (B * ww[:, None]).sum(axis=0)[None, :], 0.0)
    # each weight is its exact share to within the grid of exact_normalized (2**-53); each atom sums to 1
    V = ref.atom_matrix(atoms)
    np.testing.assert_allclose(V, expected, rtol=0, atol=4 * 2.0**-53)
    assert np.all(V.sum(axis=0)[B.any(axis=0)] == 1.0)
    # Only members are listed.
    listed = np.zeros_like(B)
    listed[np.repeat(np.arange(n), np.diff(atoms.indptr)), atoms.indices] = True
    assert not np.any(listed & ~B)
    if w is None:
        assert np.array_equal(listed, B)
    np.testing.assert_allclose(ref.atom_matrix(ref.atoms_from_membership(membership, w)), expected,
                               rtol=1e-14, atol=0)


def test_atom_table_constructor_matches_from_membership():
    D, B, w, theta, bias, coef = make_problem(15, n=300)
    ra = ref.atoms_from_membership(B, w)
    direct = AtomTable(ra.indptr, ra.indices, ra.weights, ra.n_atoms)
    assert direct.n_samples == 300 and direct.n_atoms == B.shape[1]
    np.testing.assert_array_equal(ref.atom_matrix(direct), ref.atom_matrix(ra))
    a = rate_kernel(D, theta, bias, direct, coef, n_threads=1)
    b = rate_kernel(D, theta, bias, core_atoms(B, w), coef, n_threads=1)
    scales = ref.kernel_error_scales(D, theta, bias, ra, coef)
    assert_kernel_close(a, b, scales)
