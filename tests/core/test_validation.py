"""Input validation and conversion in ``rateopt.core``.

Contract: docs/core_api.md. Bad input raises ``ValueError``/``TypeError`` whose
message names the offending argument; it never crashes. Inputs of the wrong
kind (dtype, memory order, sparse format) are converted once with a
``DataCopyWarning`` and give the same result as the float64 data.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rateopt.core import (
    AtomTable,
    ClassCells,
    FeatureMatrix,
    multiclass_pass,
    project_simplex,
    rate_kernel,
    rate_kernel_multi,
    stationary_distribution,
    swap_regret_update,
    swap_regret_update_additive,
)
from rateopt.exceptions import DataCopyWarning
from rateopt._utils._sealed import sealed

import reference as ref

BAD = (ValueError, TypeError)
N, D, A = 40, 6, 4


def problem(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D))
    X[rng.random((N, D)) < 0.5] = 0.0
    X = np.round(X * 8) / 8  # exactly representable in float16 too
    B = rng.random((N, A)) < 0.4
    B[0] = True
    theta = rng.standard_normal(D)
    coef = rng.standard_normal(A)
    return X, B, theta, 0.25, coef


def csr(X, idx_dtype=np.int32):
    M = sp.csr_matrix(X)
    M.indices = M.indices.astype(idx_dtype)
    M.indptr = M.indptr.astype(idx_dtype)
    return M


def call(X=None, theta=None, bias=None, atoms=None, coef=None, **kw):
    X0, B, theta0, bias0, coef0 = problem()
    return rate_kernel(
        X0 if X is None else X,
        theta0 if theta is None else theta,
        bias0 if bias is None else bias,
        AtomTable.from_membership(B) if atoms is None else atoms,
        coef0 if coef is None else coef,
        **kw,
    )


def with_value(X, idx, value):
    X = X.copy()
    X[idx] = value
    return X


def _csr_with(attr, fn):
    M = csr(problem()[0])
    setattr(M, attr, fn(getattr(M, attr).copy()))
    return M


# --------------------------------------------------------------------------- #
# X
# --------------------------------------------------------------------------- #

X0 = problem()[0]
BAD_X = {
    "nan_dense": with_value(X0, (3, 2), np.nan),
    "inf_dense": with_value(X0, (0, 0), np.inf),
    "neg_inf_dense_f32": with_value(X0, (N - 1, D - 1), -np.inf).astype(np.float32),
    "nan_csr": _csr_with("data", lambda d: with_value(d, 5, np.nan)),
    "inf_csr_int64": csr(with_value(X0, (7, 1), np.inf), np.int64),
    "col_index_too_large": _csr_with("indices", lambda i: with_value(i, 4, D)),
    "col_index_negative": _csr_with("indices", lambda i: with_value(i, 4, -1)),
    "indptr_not_monotone": _csr_with("indptr", lambda p: with_value(p, 2, p[3] + 1)),
    "indptr_not_starting_at_0": _csr_with("indptr", lambda p: with_value(p, 0, 1)),
    "indptr_too_short": _csr_with("indptr", lambda p: p[:-1]),
    "indptr_past_nnz": _csr_with("indptr", lambda p: with_value(p, len(p) - 1, p[-1] + 3)),
    "one_dim": X0[0].copy(),
    "three_dim": np.zeros((2, N, D)),
}


@pytest.mark.parametrize("name", list(BAD_X))
def test_bad_X(name):
    X = BAD_X[name]
    exc = ValueError if ("nan" in name or "inf" in name) else BAD
    with pytest.raises(exc, match=r"\bX\b"):
        FeatureMatrix(X)
    with pytest.raises(exc, match=r"\bX\b"):
        call(X=X, n_threads=1)


# --------------------------------------------------------------------------- #
# theta, bias, coef, atoms, rows, n_threads
# --------------------------------------------------------------------------- #


def _atoms_for(n):
    return AtomTable.from_membership(np.ones((n, A), dtype=bool))


BAD_ARGS = {
    "theta_too_short": (dict(theta=np.zeros(D - 1)), BAD, "theta"),
    "theta_too_long": (dict(theta=np.zeros(D + 1)), BAD, "theta"),
    "theta_2d": (dict(theta=np.zeros((D, 1))), BAD, "theta"),
    "theta_nan": (dict(theta=with_value(np.zeros(D), 1, np.nan)), ValueError, "theta"),
    "theta_inf": (dict(theta=with_value(np.zeros(D), 0, np.inf)), ValueError, "theta"),
    "bias_nan": (dict(bias=np.nan), ValueError, "bias"),
    "bias_inf": (dict(bias=-np.inf), ValueError, "bias"),
    "coef_too_short": (dict(coef=np.zeros(A - 1)), BAD, "coef"),
    "coef_too_long": (dict(coef=np.zeros(A + 1)), BAD, "coef"),
    "coef_nan": (dict(coef=with_value(np.zeros(A), 2, np.nan)), ValueError, "coef"),
    "coef_inf": (dict(coef=with_value(np.zeros(A), 0, -np.inf)), ValueError, "coef"),
    "atoms_fewer_samples": (dict(atoms=_atoms_for(N - 1)), BAD, "atoms"),
    "atoms_more_samples": (dict(atoms=_atoms_for(N + 1)), BAD, "atoms"),
    "rows_too_large": (dict(rows=np.array([0, N], np.int64)), BAD, "rows"),
    "rows_far_too_large": (dict(rows=np.array([2**40], np.int64)), BAD, "rows"),
    "rows_negative": (dict(rows=np.array([3, -1], np.int64)), BAD, "rows"),
    "rows_2d": (dict(rows=np.zeros((2, 2), np.int64)), BAD, "rows"),
    "n_threads_0": (dict(n_threads=0), ValueError, "n_threads"),
    "n_threads_-2": (dict(n_threads=-2), ValueError, "n_threads"),
}


@pytest.mark.parametrize("name", list(BAD_ARGS))
@pytest.mark.parametrize("sparse", [False, True])
def test_bad_kernel_arguments(name, sparse):
    kwargs, exc, arg = BAD_ARGS[name]
    X = csr(X0) if sparse else X0
    with pytest.raises(exc, match=rf"\b{arg}\b"):
        call(X=X, **kwargs)
    with pytest.raises(exc, match=rf"\b{arg}\b"):
        call(X=FeatureMatrix(X), **kwargs)


def test_empty_rows_is_an_error_or_finite():
    """``rows=[]`` makes the scale n/len(rows) undefined; the spec does not say
    what happens, but it must not crash or return NaN/inf."""
    try:
        res = call(rows=np.zeros(0, np.int64), n_threads=1)
    except BAD as e:
        assert "rows" in str(e)
    else:
        for f in ref.KERNEL_FIELDS:
            assert np.all(np.isfinite(getattr(res, f))), f


def test_valid_n_threads_values():
    X, B, theta, bias, coef = problem()
    for nt in (None, -1, 1, 2, 64):
        call(n_threads=nt)


# --------------------------------------------------------------------------- #
# Atom tables
# --------------------------------------------------------------------------- #

GOOD_INDPTR = np.array([0, 2, 3, 3, 5], np.int64)  # 4 examples, one in no atom
GOOD_INDICES = np.array([0, 2, 1, 0, 1], np.int32)
GOOD_WEIGHTS = np.array([0.5, 1.0, 0.5, 0.5, 0.5])

BAD_ATOMS = {
    "id_too_large": (dict(indices=with_value(GOOD_INDICES, 1, 3)), BAD, r"indices|n_atoms"),
    "id_negative": (dict(indices=with_value(GOOD_INDICES, 0, -1)), BAD, r"indices|n_atoms"),
    "weight_negative": (dict(weights=with_value(GOOD_WEIGHTS, 2, -0.5)), BAD, "weights"),
    "weight_nan": (dict(weights=with_value(GOOD_WEIGHTS, 2, np.nan)), BAD, "weights"),
    "weight_inf": (dict(weights=with_value(GOOD_WEIGHTS, 0, np.inf)), BAD, "weights"),
    "weights_length": (dict(weights=GOOD_WEIGHTS[:-1]), BAD, r"weights|indices"),
    "indptr_not_monotone": (dict(indptr=np.array([0, 3, 2, 3, 5], np.int64)), BAD, "indptr"),
    "indptr_not_at_0": (dict(indptr=np.array([1, 2, 3, 3, 5], np.int64)), BAD, "indptr"),
    "indptr_not_at_nnz": (dict(indptr=np.array([0, 2, 3, 3, 4], np.int64)), BAD, "indptr"),
    "indptr_past_nnz": (dict(indptr=np.array([0, 2, 3, 3, 6], np.int64)), BAD, "indptr"),
}


def test_good_atom_table():
    t = AtomTable(GOOD_INDPTR, GOOD_INDICES, GOOD_WEIGHTS, 3)
    assert t.n_samples == 4 and t.n_atoms == 3


@pytest.mark.parametrize("name", list(BAD_ATOMS))
def test_bad_atom_table(name):
    kwargs, exc, match = BAD_ATOMS[name]
    args = dict(indptr=GOOD_INDPTR, indices=GOOD_INDICES, weights=GOOD_WEIGHTS, n_atoms=3)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        AtomTable(args["indptr"], args["indices"], args["weights"], args["n_atoms"])


def test_from_membership_errors():
    B = np.array([[1, 0], [1, 0], [0, 0]], dtype=bool)  # atom 1 is empty
    with pytest.raises(ValueError, match=r"membership|sample_weight"):
        AtomTable.from_membership(B)
    B[2, 1] = True
    with pytest.raises(ValueError, match=r"membership|sample_weight"):  # atom 1 has weight 0
        AtomTable.from_membership(B, sample_weight=np.array([1.0, 1.0, 0.0]))
    with pytest.raises(BAD, match="sample_weight"):
        AtomTable.from_membership(B, sample_weight=np.array([1.0, -1.0, 2.0]))
    with pytest.raises(BAD, match="sample_weight"):
        AtomTable.from_membership(B, sample_weight=np.array([1.0, np.nan, 2.0]))
    with pytest.raises(BAD, match="sample_weight"):
        AtomTable.from_membership(B, sample_weight=np.ones(4))
    with pytest.raises(BAD, match="membership"):
        AtomTable.from_membership(np.ones(3, dtype=bool))
    AtomTable.from_membership(B)  # now valid


# --------------------------------------------------------------------------- #
# Lambda primitives (shape errors name the argument)
# --------------------------------------------------------------------------- #


def test_lambda_shape_errors():
    k = 4
    log_M = np.log(np.full((k, k), 1.0 / k))
    lam = np.full(k, 1.0 / k)
    delta = np.zeros(k)
    with pytest.raises(BAD, match="log_M"):
        swap_regret_update(log_M[:, :3], delta, lam, 0.1)
    with pytest.raises(BAD, match="delta"):
        swap_regret_update(log_M, np.zeros(k + 1), lam, 0.1)
    with pytest.raises(BAD, match="lam"):
        swap_regret_update(log_M, delta, np.zeros(k - 1), 0.1)
    with pytest.raises(BAD, match=r"\bM\b"):
        swap_regret_update_additive(np.exp(log_M)[:3], delta, lam, 0.1)
    with pytest.raises(BAD, match=r"\bM\b"):
        stationary_distribution(np.ones((3, 2)) / 3)
    with pytest.raises(BAD, match="lam0"):
        stationary_distribution(np.exp(log_M), np.ones(k + 1) / (k + 1))
    with pytest.raises(BAD, match=r"\bv\b"):
        project_simplex(np.ones((2, 2)))


# --------------------------------------------------------------------------- #
# Conversions: warned once, same answer as float64
# --------------------------------------------------------------------------- #


def _conversions():
    X = problem()[0]
    return {
        "float16": X.astype(np.float16),
        "int64": np.round(X * 8).astype(np.int64),
        "int32": np.round(X * 8).astype(np.int32),
        "fortran_f64": np.asfortranarray(X),
        "fortran_f32": np.asfortranarray(X.astype(np.float32)),
        "strided_view": np.repeat(X, 2, axis=1)[:, ::2],
        "list": X.tolist(),
        "coo": sp.coo_matrix(X),
        "csc": sp.csc_matrix(X),
        "csr_int_data": sp.csr_matrix(np.round(X * 8).astype(np.int64)),
        "csr_int32_data": sp.csr_matrix(np.round(X * 8).astype(np.int32)),
        "coo_float32": sp.coo_matrix(X.astype(np.float32)),
    }


CONVERSIONS = _conversions()


@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_conversion_warns_and_agrees(name):
    Xc = CONVERSIONS[name]
    _, B, theta, bias, coef = problem()
    X64 = ref.as_float64(Xc)  # the same values in float64
    if sp.issparse(X64):
        X64 = X64.toarray()
    atoms = AtomTable.from_membership(B)
    want = rate_kernel(np.ascontiguousarray(X64), theta, bias, atoms, coef, n_threads=1)
    with pytest.warns(DataCopyWarning):
        got = rate_kernel(Xc, theta, bias, atoms, coef, n_threads=1)
    ra = ref.atoms_from_membership(B)
    scales = ref.kernel_error_scales(X64, theta, bias, ra, coef)
    expected = ref.rate_kernel(X64, theta, bias, ra, coef)
    for res in (want, got):
        for f in ref.KERNEL_FIELDS:
            np.testing.assert_allclose(np.asarray(getattr(res, f), np.float64),
                                       np.asarray(getattr(expected, f)),
                                       rtol=1e-12, atol=1e-12 * scales[f], err_msg=f)
    # converted once: using the FeatureMatrix again does not warn (warnings are errors)
    with pytest.warns(DataCopyWarning):
        Xm = FeatureMatrix(Xc)
    assert Xm.n_samples == N and Xm.n_features == D
    assert Xm.dtype in (np.float32, np.float64)
    rate_kernel(Xm, theta, bias, atoms, coef, n_threads=1)


def test_atom_table_owns_sealed_copies_and_shares_sealed_arrays():
    """The table the core reads is a read-only copy (issue 24 item 4); a table built from another
    validated table's arrays shares them (no second copy per training run)."""
    t = AtomTable(GOOD_INDPTR, GOOD_INDICES, GOOD_WEIGHTS, 3)
    assert t.indices.dtype == np.uint8 and t.indptr.dtype == np.int32  # narrowed: 3 atoms, 4 entries
    for name, given in (("indptr", GOOD_INDPTR), ("indices", GOOD_INDICES), ("weights", GOOD_WEIGHTS)):
        a = getattr(t, name)
        assert not np.shares_memory(a, given) and not a.flags.writeable, name
        np.testing.assert_array_equal(a, given)
    again = AtomTable(t.indptr, t.indices, t.weights, t.n_atoms)
    assert again.indptr is t.indptr and again.indices is t.indices and again.weights is t.weights


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16, np.int8, np.uint8])
def test_atom_table_converts_other_index_dtypes_to_the_narrowest(dtype):
    t = AtomTable(GOOD_INDPTR.astype(np.int64), GOOD_INDICES.astype(dtype), GOOD_WEIGHTS, 3)
    assert t.indices.dtype == np.uint8 and t.indices.tolist() == GOOD_INDICES.tolist()
    assert t.indptr.dtype == np.int32 and t.indptr.tolist() == GOOD_INDPTR.tolist()


@pytest.mark.parametrize(("n_atoms", "dtype"), [(1, np.uint8), (256, np.uint8), (257, np.uint16),
                                                 (65536, np.uint16), (65537, np.int32)])
def test_atom_table_id_dtype_is_the_narrowest_that_holds_n_atoms(n_atoms, dtype):
    ids = np.array([0, n_atoms - 1, n_atoms // 2], dtype=np.int64)  # the largest id must survive
    t = AtomTable(np.array([0, 2, 3]), ids, np.full(3, 0.5), n_atoms)
    assert t.indices.dtype == dtype and t.indices.tolist() == ids.tolist()


def test_atom_table_range_checks_sealed_narrow_ids():
    """A sealed uint8 id array is kept as it is (a compiled table's), but still range-checked."""
    ids = sealed(np.array([0, 3, 1, 0, 1], dtype=np.uint8), np.uint8)  # 3 is outside [0, 3)
    with pytest.raises(ValueError, match=r"atoms.indices holds atom id 3 at position 1, outside \[0, n_atoms=3\)"):
        AtomTable(GOOD_INDPTR, ids, GOOD_WEIGHTS, 3)
    ok = sealed(GOOD_INDICES.astype(np.uint8), np.uint8)
    assert AtomTable(GOOD_INDPTR, ok, GOOD_WEIGHTS, 3).indices is ok


def test_atom_table_range_checks_int64_indices_before_narrowing():
    big = GOOD_INDICES.astype(np.int64)
    big[1] = 2**32 + 1  # would wrap to 1 if cast to int32 before the range check
    with pytest.raises(ValueError, match="atoms.indices"):
        AtomTable(GOOD_INDPTR, big, GOOD_WEIGHTS, 3)


# --------------------------------------------------------------------------- issue 24 item 4: no edit after
# validation reaches the core (the ids and row pointers it trusts address memory)

# Three examples in atom 0 (weights 1/3 each), example 1 also in atom 1 (weight 1): ids 0, 0, 1, 0.
_T_INDPTR = np.array([0, 1, 3, 4], np.int64)
_T_INDICES = np.array([0, 0, 1, 0], np.int32)
_T_WEIGHTS = np.array([1 / 3, 1 / 3, 1.0, 1 / 3])


def _all_positive_rates(Xm, atoms):
    """Rates of a model that scores every row +1 (theta = 0, bias = 1): every atom's rate is 1 exactly
    when the table is the validated one (atom 0: 1/3 + 1/3 + 1/3; atom 1: 1)."""
    return rate_kernel(Xm, np.zeros(Xm.n_features), 1.0, atoms, np.zeros(atoms.n_atoms), n_threads=1).rates


def _table_and_X():
    indptr, indices, weights = _T_INDPTR.copy(), _T_INDICES.copy(), _T_WEIGHTS.copy()
    t = AtomTable(indptr, indices, weights, 2)
    Xm = FeatureMatrix(np.ones((3, 2)))
    return t, Xm, (indptr, indices, weights)


def _expected_rates():
    # an independent reference: the members' normalized weights summed (every row is positive)
    return np.bincount(_T_INDICES, weights=_T_WEIGHTS, minlength=2)


@pytest.mark.parametrize("name", ["indptr", "indices", "weights"])
def test_an_atom_tables_arrays_cannot_be_edited_in_place(name):
    t, _, _ = _table_and_X()
    a = getattr(t, name)
    with pytest.raises(ValueError, match="read-only"):
        a[1] = 2
    with pytest.raises(ValueError, match="WRITEABLE"):
        a.flags.writeable = True
    # the memory under it is an immutable bytes object: nothing below the array can be made writeable
    base = a
    while isinstance(base, np.ndarray):
        assert not base.flags.writeable
        if base.base is not None and isinstance(base.base, np.ndarray):
            with pytest.raises(ValueError, match="WRITEABLE"):
                base.base.flags.writeable = True
        base = base.base
    assert isinstance(base, bytes)


@pytest.mark.parametrize("name, value", [("indptr", np.array([0, 4, 4, 4])), ("indices", np.array([0, 9, 9, 9])),
                                         ("weights", np.ones(4)), ("n_atoms", 1), ("n_samples", 99)])
def test_an_atom_tables_attributes_cannot_be_replaced(name, value):
    t, _, _ = _table_and_X()
    with pytest.raises(AttributeError):
        setattr(t, name, value)


@pytest.mark.parametrize("edit", [lambda ip, ix, w: ix.__setitem__(1, 1), lambda ip, ix, w: ix.__setitem__(1, 10**9),
                                  lambda ip, ix, w: ip.__setitem__(1, 10**12), lambda ip, ix, w: w.__setitem__(0, 7.0)])
def test_editing_the_callers_arrays_after_validation_does_not_reach_the_core(edit):
    t, Xm, given = _table_and_X()
    edit(*given)  # the arrays the table was built from
    rates = _all_positive_rates(Xm, t)
    np.testing.assert_array_equal(rates, _expected_rates())
    assert rates.tolist() == [1.0, 1.0]


def _csr_X():
    D = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]])
    return sp.csr_matrix(D), D


def _scores(Xm, theta):
    """The kernel's rate of one atom holding row ``j`` alone, for each row: 1[x_j . theta >= 0]."""
    n = Xm.n_samples
    atoms = AtomTable(np.arange(n + 1), np.arange(n, dtype=np.int32), np.ones(n), n)
    return rate_kernel(Xm, theta, 0.0, atoms, np.zeros(n), n_threads=1).rates


def test_a_checked_csr_matrix_reads_sealed_index_arrays():
    X, D = _csr_X()
    Xm = FeatureMatrix(X)
    theta = np.array([-1.0, 1.0, 0.25])  # row scores: -0.5, 3, -2.75
    expected = (D @ theta >= 0).astype(float)
    assert expected.tolist() == [0.0, 1.0, 0.0]
    for name in ("indices", "indptr"):
        with pytest.raises(ValueError, match="read-only"):  # the wrapped matrix's arrays are read-only views
            getattr(Xm.data, name)[0] = 2
        a = Xm.csr_arrays[("data", "indices", "indptr").index(name)]  # what the core reads: sealed copies
        assert not np.shares_memory(a, getattr(X, name))
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 2
        with pytest.raises(ValueError, match="WRITEABLE"):
            a.flags.writeable = True
        assert isinstance(a.base, bytes)
    # The caller's own matrix, edited after validation: an out-of-range column, a row pointer past the end.
    X.indices[0] = 10**9
    X.indptr[1] = 10**9
    np.testing.assert_array_equal(_scores(Xm, theta), expected)
    # Replacing the wrapped matrix's arrays does not change what the core reads either.
    Xm.data.indices = np.full_like(X.indices, 10**6)
    np.testing.assert_array_equal(_scores(Xm, theta), expected)
    for name in ("data", "n_samples", "n_features", "is_sparse", "index_dtype", "dtype"):
        with pytest.raises(AttributeError):
            setattr(Xm, name, None)


def test_csr_index_arrays_edited_before_the_core_first_reads_them_are_checked_again():
    X, D = _csr_X()
    Xm = FeatureMatrix(X)
    X.indices[0] = 10**9  # the caller's array, edited after the check but before any kernel call
    with pytest.raises(ValueError, match="X.indices holds column 1000000000 at position 0"):
        _scores(Xm, np.ones(3))
    X, D = _csr_X()
    Xm = FeatureMatrix(X)
    X.indptr[1] = 10**9
    with pytest.raises(ValueError, match="X.indptr"):
        _scores(Xm, np.ones(3))


def test_the_values_of_X_are_read_only_views_not_copies():
    # Values are not addresses: X's values are read through a read-only view (no copy of X).
    X, D = _csr_X()
    Xm = FeatureMatrix(X)
    assert np.shares_memory(Xm.data.data, X.data)
    with pytest.raises(ValueError, match="read-only"):
        Xm.data.data[0] = 1.0
    dense = np.array(D)
    Xd = FeatureMatrix(dense)
    assert np.shares_memory(Xd.data, dense)
    with pytest.raises(ValueError, match="read-only"):
        Xd.data[0, 0] = 1.0
    with pytest.raises(AttributeError):
        Xd.n_features = 10**9


def test_from_membership_weights_of_a_whole_atom_sum_to_exactly_one():
    """Issue 24 item 5: with non-uniform weights a model positive on every row has every atom rate exactly
    1 (so 1 - rate is exactly 0), whatever the thread count."""
    rng = np.random.default_rng(4)
    n, n_atoms = 501, 6
    member = rng.random((n, n_atoms)) < 0.6
    w = rng.uniform(0.1, 7.0, n)
    t = AtomTable.from_membership(member, sample_weight=w)
    Xm = FeatureMatrix(rng.standard_normal((n, 3)))
    for n_threads in (1, 2, 3):
        for bias, expected in ((1.0, 1.0), (-1.0, 0.0)):
            rates = rate_kernel(Xm, np.zeros(3), bias, t, np.zeros(n_atoms), n_threads=n_threads).rates
            assert rates.tolist() == [expected] * n_atoms
            assert (1.0 - rates).tolist() == [1.0 - expected] * n_atoms
    # and the weights are still each member's share of its atom's weight
    for a in range(n_atoms):
        got = np.zeros(n)
        rows = np.repeat(np.arange(n), np.diff(t.indptr))
        got[rows[t.indices == a]] = t.weights[t.indices == a]
        np.testing.assert_allclose(got, np.where(member[:, a], w, 0.0) / w[member[:, a]].sum(), rtol=0, atol=4e-16)


# --------------------------------------------------------------------------- issue 31: one set of validation
# helpers for the validated tables (AtomTable, ClassCells) and the kernels' finite checks


def _atom_table(ids, weights, n):
    """An AtomTable with one membership per example (so ``ids``/``weights`` are per example, like ClassCells)."""
    return AtomTable(np.arange(len(ids) + 1), np.asarray(ids), np.asarray(weights, float), n)


def _class_cells(ids, weights, n):
    return ClassCells(np.asarray(ids), np.asarray(weights, float), n)


TABLES = [
    pytest.param(_atom_table, "atoms.indices", "atom", "position", "atoms.weights", "n_atoms", id="AtomTable"),
    pytest.param(_class_cells, "cells", "cell", "row", "weights", "n_cells", id="ClassCells"),
]


@pytest.mark.parametrize("make, ids_name, kind, at, w_name, n_name", TABLES)
def test_validated_tables_share_one_message_per_defect(make, ids_name, kind, at, w_name, n_name):
    # The same defect gets the same sentence from both tables: the argument, the value and its place.
    with pytest.raises(ValueError, match=rf"^{ids_name} holds {kind} id 5 at {at} 2, outside \[0, {n_name}=3\)$"):
        make([0, 1, 5, 2], [1.0] * 4, 3)
    with pytest.raises(ValueError, match=rf"^{ids_name} holds {kind} id -1 at {at} 0, "):
        make([-1, 1, 2, 2], [1.0] * 4, 3)
    with pytest.raises(ValueError, match=rf"^{w_name} holds a non-finite value at {at} 3$"):
        make([0, 1, 2, 2], [1.0, 1.0, 1.0, np.inf], 3)
    with pytest.raises(ValueError, match=rf"^{w_name} holds a negative weight -0.25 at {at} 1$"):
        make([0, 1, 2, 2], [1.0, -0.25, 1.0, 1.0], 3)
    with pytest.raises((TypeError, ValueError), match=rf"{n_name} must be an integer, got True"):
        make([0, 0], [1.0, 1.0], True)
    with pytest.raises(ValueError, match=rf"{n_name} must be in \[\d, 2\*\*31\), got {2**31}"):
        make([0, 0], [1.0, 1.0], 2**31)


@pytest.mark.parametrize("make", [p.values[0] for p in TABLES])
def test_validated_tables_read_sealed_narrow_copies(make):
    ids, w = np.array([0, 2, 1, 2], np.int64), np.array([1.0, 0.5, 2.0, 1.0])
    t = make(ids, w, 3)
    got_ids = t.indices if isinstance(t, AtomTable) else t.cells
    narrow = np.uint8 if isinstance(t, AtomTable) else np.int32  # an atom table's ids: the narrowest for 3 atoms
    assert got_ids.dtype == narrow and got_ids.tolist() == ids.tolist() and not got_ids.flags.writeable
    assert t.weights.tolist() == w.tolist() and not t.weights.flags.writeable
    ids[0], w[0] = 2, -1.0  # the caller's arrays change; the validated copies do not
    assert got_ids[0] == 0 and t.weights[0] == 1.0


def test_kernel_finite_checks_name_the_argument_and_the_place():
    X = np.ones((3, 2))
    atoms = AtomTable.from_membership(np.ones((3, 2), bool))
    coefs = np.ones((2, 2))
    coefs[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"^coefs holds a non-finite value \(NaN or inf\) at index \(1, 0\)$"):
        rate_kernel_multi(X, np.zeros(2), 0.0, atoms, coefs)
    with pytest.raises(ValueError, match=r"^intercept holds a non-finite value \(NaN or inf\) at position 1$"):
        multiclass_pass(X, np.zeros((2, 3)), [0.0, -np.inf, 0.0], ClassCells([0, 0, 0], [1.0] * 3, 1),
                        np.zeros((1, 3)), np.zeros((1, 3)))
