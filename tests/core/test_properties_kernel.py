"""Property-based tests of ``rateopt.core``'s data objects and fused rate kernel.

Hypothesis draws feature matrices in every layout the boundary accepts (dense
C/Fortran/strided, CSR with int32/int64 indices, non-canonical CSR with
unsorted and duplicate entries, explicit zeros, empty rows, COO/CSC), values
from moderate to subnormal and huge (products overflow), random atom tables,
parameters, minibatch rows with repeats and thread counts. The contract
(docs/core_api.md): ``rate_kernel`` agrees with the reference (tests/reference.py,
evaluated on exactly computed scores), or raises ``NumericalError`` where
scores or sums leave the float64 range; it never crashes and never returns
NaN/inf. Invalid data raise ``ValueError`` naming ``X``. Conversions warn with
``DataCopyWarning``; in-place layouts do not.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import event, given, settings
from hypothesis import strategies as st

from rateopt.core._kernel_block import kernel_block
from rateopt.core import AtomTable, FeatureMatrix, rate_kernel
from rateopt.exceptions import NumericalError

import _properties_support as S
import reference as ref

THREADS = st.sampled_from([1, 2, 3, 4])
MARGINS = st.one_of(st.sampled_from([1.0, 0.5, 2.0]), st.floats(1e-3, 10.0))
COEF_VALUES = {
    "moderate": st.one_of(st.just(0.0), st.integers(-2, 2).map(float), st.floats(-5.0, 5.0)),
    "huge": st.one_of(st.just(0.0), S.finite_floats(S.DBL_MAX), st.sampled_from([S.DBL_MAX, -S.DBL_MAX])),
}


class KernelProblem:
    """One draw: ``X`` in its layout and everything ``rate_kernel`` takes."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):  # what Hypothesis prints for a falsifying example
        X = self.X
        if sp.issparse(X):
            xs = (f"{type(X).__name__}(format={X.format}, dtype={X.dtype}, shape={X.shape}, "
                  f"data={X.data.tolist()}, "
                  + (f"indices={X.indices.tolist()} [{X.indices.dtype}], indptr={X.indptr.tolist()} "
                     f"[{X.indptr.dtype}])" if X.format in ("csr", "csc")
                     else f"row={X.row.tolist()}, col={X.col.tolist()})"))
        else:
            order = "C" if X.flags.c_contiguous else ("F" if X.flags.f_contiguous else "strided")
            xs = f"ndarray(dtype={X.dtype}, order={order}, {X.tolist()})"
        a = self.atoms
        return (f"KernelProblem(X={xs}, theta={self.theta.tolist()}, bias={self.bias!r}, "
                f"atoms=AtomTable(indptr={a.indptr.tolist()}, indices={a.indices.tolist()}, "
                f"weights={a.weights.tolist()}, n_atoms={a.n_atoms}) [{self.atoms_how}], "
                f"coef={self.coef.tolist()}, margin={self.margin!r}, rows={self.rows}, "
                f"n_threads={self.n_threads})")


@st.composite
def atom_tables(draw, n, n_atoms):
    """An AtomTable from a random membership/weights, or from raw CSR arrays."""
    if draw(st.booleans()):
        B, w = draw(S.memberships(n, n_atoms))
        membership = sp.csr_matrix(B) if draw(st.booleans()) else B
        return AtomTable.from_membership(membership, sample_weight=w), "from_membership"
    indptr, indices, weights = draw(S.raw_atom_tables(n, n_atoms))
    return AtomTable(indptr, indices, weights, n_atoms), "raw"


@st.composite
def kernel_problems(draw, layouts=S.SPARSE_LAYOUTS + S.DENSE_LAYOUTS, regimes=None, max_n=8, max_d=5,
                    max_per_row=4):
    """``regimes``: strategy of ``(X regime, theta regime)`` pairs (see _properties_support)."""
    if regimes is None:
        regimes = st.tuples(st.sampled_from(["moderate", "mixed", "tiny", "huge"]),
                            st.sampled_from(["moderate", "mixed", "tiny", "huge", "edge"]))
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    n_atoms = draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    width = 32 if dtype == np.float32 else 64
    x_regime, t_regime = draw(regimes)
    entries = draw(S.raw_entries(n, d, S.values(x_regime, width), max_per_row=max_per_row))
    idx_dtype = draw(st.sampled_from([np.int32, np.int64]))
    A = S.build_csr(entries, n, d, dtype, idx_dtype)
    X = S.layout(A, draw(st.sampled_from(layouts)))
    theta = np.array(draw(st.lists(S.theta_values(t_regime), min_size=d, max_size=d)), np.float64)
    bias = draw(S.theta_values(t_regime))
    atoms, how = draw(atom_tables(n, n_atoms))
    coef_values = COEF_VALUES[draw(st.sampled_from(["moderate", "moderate", "huge"]))]
    coef = np.array(draw(st.lists(coef_values, min_size=n_atoms, max_size=n_atoms)), np.float64)
    margin = draw(MARGINS)
    rows = draw(st.one_of(st.none(), st.lists(st.integers(0, n - 1), min_size=1, max_size=2 * n)))
    return KernelProblem(X=X, theta=theta, bias=bias, atoms=atoms, atoms_how=how, coef=coef, margin=margin,
                         rows=rows, n_threads=draw(THREADS))


def _meaning(X):
    """``X`` as scipy reads it: non-CSR sparse formats through scipy's own ``tocsr``;
    CSR index arrays of two dtypes (which scipy cannot traverse) widened to int64."""
    if sp.issparse(X) and X.format != "csr":
        return X.tocsr()
    if sp.issparse(X) and X.indices.dtype != X.indptr.dtype:
        return sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)), shape=X.shape)
    return X


def expectation(p, X=None, x_rel_err=0.0):
    X = p.X if X is None else X
    M = _meaning(X)
    return S.kernel_expectation(S.stored_entries(M), S.dense64(M), p.theta, p.bias, ref.atom_matrix(p.atoms),
                                p.coef, p.margin, p.rows, x_rel_err=x_rel_err)


def check_outcome(res, exc, exp, what):
    """The result agrees with the reference, or NumericalError where it may/must."""
    event(f"outcome: {type(exc).__name__ if exc is not None else 'result'}"
          f"{' (NumericalError required)' if exp['required'] or exp['required_nan'] else ''}")
    if exc is not None:
        if isinstance(exc, NumericalError):
            assert exp["possible"], (
                f"{what}: NumericalError although every score and sum stays far inside the float64 "
                f"range (scales {exp['scales']}): {exc}"
            )
            return
        raise AssertionError(f"{what}: unexpected {type(exc).__name__}: {exc}") from exc
    info = exp["info"]
    # Two separate checks, so that Hypothesis reports the two situations separately.
    assert not exp["required_nan"], (
        f"{what}: returned {res!r} instead of raising NumericalError: in a row with atom weight a "
        f"product x_jk*theta_k overflows although the exact score is finite (float64 gives "
        f"inf - inf = NaN or a wrong inf) (exact scores {info.s.tolist()}, "
        f"product overflow {info.term_overflow.tolist()})"
    )
    assert not exp["required"], (
        f"{what}: returned {res!r} instead of raising NumericalError: a row with atom weight has "
        f"a score past the float64 range (exact scores {info.s.tolist()})"
    )
    S.check_kernel_result(res, exp, what)


def kernel_args(p):
    return (p.theta, p.bias, p.atoms, p.coef), dict(margin=p.margin, rows=p.rows, n_threads=p.n_threads)


def run_kernel(p, X, what):
    """FeatureMatrix(X) and rate_kernel on it and on X itself; returns (result, exception, expectation)."""
    expect_copy = S.expects_copy(X)
    Xm, exc, rec = S.call_recording(FeatureMatrix, X)
    if not S.meaning_is_finite(_meaning(X)):
        assert isinstance(exc, ValueError) and "X" in str(exc), (
            f"{what}: the matrix X means (duplicates summed, as scipy does) holds inf, but "
            f"FeatureMatrix gave {exc!r}"
        )
        return None, exc, None
    assert exc is None, f"{what}: FeatureMatrix refused valid data: {exc!r}"
    S.assert_warnings(rec, expect_copy, f"{what}: FeatureMatrix")
    exp = expectation(p, X)
    args, kw = kernel_args(p)
    res, exc, rec = S.call_recording(rate_kernel, Xm, *args, **kw)
    S.assert_warnings(rec, False, f"{what}: rate_kernel(FeatureMatrix)")
    check_outcome(res, exc, exp, what)
    # Passing X itself: converted (and warned about) again, same answer bit for bit.
    res2, exc2, rec2 = S.call_recording(rate_kernel, X, *args, **kw)
    S.assert_warnings(rec2, expect_copy, f"{what}: rate_kernel(X)")
    assert type(exc2) is type(exc), (what, exc, exc2)
    if res is not None:
        S.assert_bit_identical(res, res2, f"{what}: rate_kernel(X) vs rate_kernel(FeatureMatrix(X))")
    return res, exc, exp


# --------------------------------------------------------------------------- #
# 1. The kernel against the reference
# --------------------------------------------------------------------------- #


@settings(max_examples=S.examples(350))
@given(kernel_problems())
def test_rate_kernel_matches_reference_or_raises_numerical_error(p):
    """Any valid input: the reference (rates, proxy rates, proxy value, gradient, bias
    gradient, value) within rounding-error bounds, or NumericalError exactly where
    float64 overflow may/must happen; finite outputs; copy warnings as documented."""
    run_kernel(p, p.X, "rate_kernel")


@settings(max_examples=S.examples(150))
@given(kernel_problems(regimes=st.sampled_from([("huge", "huge"), ("mixed", "huge"), ("moderate", "edge")]),
                      layouts=("C", "csr", "F")))
def test_rate_kernel_overflowing_scores(p):
    """Huge X and theta (products x_jk*theta_k overflow, inf - inf = NaN included), or
    scores near the top of the float64 range (hinge sums overflow): NumericalError when
    a row carrying atom weight overflows, never NaN/inf returned."""
    run_kernel(p, p.X, "rate_kernel (huge)")


@settings(max_examples=S.examples(120))
@given(kernel_problems(layouts=("csr",), max_d=3, max_per_row=6))
def test_noncanonical_csr_equals_canonical_and_dense(p):
    """A CSR matrix with unsorted/duplicate entries, its canonical form
    (``sum_duplicates`` + ``sort_indices``) and its dense form give the same results
    (each checked against its own reference; pairwise within the sum of tolerances),
    and the same exceptions."""
    A = p.X
    canon = A.copy()
    with np.errstate(all="ignore"):
        canon.sum_duplicates()
    canon.sort_indices()
    forms = {"noncanonical": A, "canonical": canon, "dense": S.scipy_dense(A)}
    out = {name: run_kernel(p, X, f"{name} form") for name, X in forms.items()}
    kinds = {name: type(exc).__name__ if exc is not None else "result" for name, (_, exc, _) in out.items()}
    refusals = {name for name, k in kinds.items() if k == "ValueError"}
    if refusals == {"canonical", "dense"} and A.dtype == np.float32 and S.meaning_is_finite(A):
        # Duplicates whose float32 sum passes the float32 range: scipy's forms hold
        # inf (refused), while rateopt sums the stored values in float64, as
        # documented (FeatureMatrix): the non-canonical form is the finite matrix.
        return
    assert refusals in (set(), set(forms)), f"forms disagree on validity: {kinds}"
    if refusals:
        return
    # Every form's result against the non-canonical form's reference: the forms
    # hold the same matrix up to the rounding of the duplicate sums in X's dtype
    # (float32 sums round to float32), which the tolerance is widened by.
    x_err = float(np.finfo(A.dtype).eps)
    exp = expectation(p, A, x_rel_err=x_err)
    for name, (res, exc, _) in out.items():
        if res is not None:  # NumericalError was judged against each form's own expectation
            S.check_kernel_result(res, exp, f"{name} form vs the non-canonical form's reference")


# --------------------------------------------------------------------------- #
# 2. Determinism
# --------------------------------------------------------------------------- #


@settings(max_examples=S.examples(25))
@given(seed=st.integers(0, 2**32 - 1), fmt=st.sampled_from(["dense", "csr32", "csr64", "csr_dup"]),
       dtype=st.sampled_from([np.float32, np.float64]), n_threads=THREADS, minibatch=st.booleans())
def test_rate_kernel_bit_identical_across_calls(seed, fmt, dtype, n_threads, minibatch):
    """Repeated calls with the same n_threads (on X and on FeatureMatrix(X)) return
    bit-identical results, on problems large enough to be split across threads."""
    rng = np.random.default_rng(seed)
    n, d, n_atoms = int(rng.integers(1, 3000)), int(rng.integers(1, 30)), int(rng.integers(1, 6))
    D = (rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.3)).astype(dtype)
    if fmt == "dense":
        X = np.ascontiguousarray(D)
    else:
        X = sp.csr_matrix(D)
        if fmt == "csr_dup":  # every entry split in two, rows reversed: non-canonical
            coo = X.tocoo()
            half = (coo.data / 2).astype(dtype)
            order = np.lexsort((-np.arange(2 * coo.nnz), np.concatenate([coo.row, coo.row])))
            data = np.concatenate([half, coo.data - half])[order]
            cols = np.concatenate([coo.col, coo.col])[order]
            rows_ = np.concatenate([coo.row, coo.row])[order]
            indptr = np.zeros(n + 1, np.int64)
            np.cumsum(np.bincount(rows_, minlength=n), out=indptr[1:])
            X = sp.csr_matrix((data.astype(dtype), cols.astype(np.int64), indptr), shape=(n, d))
        idx = np.int32 if fmt == "csr32" else np.int64
        X.indices = X.indices.astype(idx)
        X.indptr = X.indptr.astype(idx)
    B = rng.random((n, n_atoms)) < 0.4
    B[0] = True
    w = rng.uniform(0.0, 3.0, n)
    w[0] = 1.0
    atoms = AtomTable.from_membership(B, sample_weight=w)
    theta = rng.standard_normal(d)
    coef = rng.standard_normal(n_atoms)
    rows = rng.integers(0, n, size=max(1, n // 2)) if minibatch else None
    Xm = FeatureMatrix(X)
    calls = [rate_kernel(Xm, theta, 0.1, atoms, coef, rows=rows, n_threads=n_threads) for _ in range(3)]
    calls.append(rate_kernel(X, theta, 0.1, atoms, coef, rows=rows, n_threads=n_threads))
    for i, r in enumerate(calls[1:], 1):
        S.assert_bit_identical(calls[0], r, f"call {i} vs call 0 (n_threads={n_threads})")


# --------------------------------------------------------------------------- #
# 3. Invalid data
# --------------------------------------------------------------------------- #


@st.composite
def invalid_features(draw):
    """A valid matrix with one defect: NaN/inf stored, a column index out of range,
    or a decreasing indptr."""
    sparse = draw(st.booleans())
    n = draw(st.integers(1, 6))
    d = draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    width = 32 if dtype == np.float32 else 64
    entries = draw(S.raw_entries(n, d, S.values("moderate", width)))
    idx_dtype = draw(st.sampled_from([np.int32, np.int64]))
    if not any(entries):
        entries[draw(st.integers(0, n - 1))].append((0, 1.0))
    A = S.build_csr(entries, n, d, dtype, idx_dtype)
    bad_value = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    if not sparse:
        D = S.scipy_dense(A)
        D[draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))] = bad_value
        return (np.asfortranarray(D) if draw(st.booleans()) else D), f"dense {bad_value}"
    kinds = ["value", "index_high", "index_negative"] + (["indptr_decrease"] if n >= 2 else [])
    kind = draw(st.sampled_from(kinds))
    pos = draw(st.integers(0, A.nnz - 1))
    top = np.iinfo(idx_dtype).max
    if kind == "value":
        A.data[pos] = bad_value
    elif kind == "index_high":
        A.indices[pos] = draw(st.integers(d, top))
    elif kind == "index_negative":
        A.indices[pos] = draw(st.integers(-top - 1, -1))
    else:
        i = draw(st.integers(1, n - 1))
        A.indptr[i] = A.indptr[i + 1] + draw(st.integers(1, 3))
    return A, f"csr {kind}"


@settings(max_examples=S.examples(120))
@given(invalid_features(), THREADS)
def test_invalid_features_raise_value_error(bad, n_threads):
    """NaN/inf entries, out-of-range column indices and decreasing indptr raise a
    ValueError naming X, from FeatureMatrix, rate_kernel and kernel_block alike."""
    X, kind = bad
    n, d = X.shape
    atoms = AtomTable.from_membership(np.ones((n, 1), bool))
    calls = {
        "FeatureMatrix": lambda: FeatureMatrix(X),
        "rate_kernel": lambda: rate_kernel(X, np.ones(d), 0.0, atoms, [1.0], n_threads=n_threads),
        "kernel_block": lambda: kernel_block(X, np.ones((2, d)), "rbf", n_threads=n_threads),
    }
    for name, fn in calls.items():
        _, exc, _ = S.call_recording(fn)
        assert isinstance(exc, ValueError) and not isinstance(exc, NumericalError), (kind, name, exc)
        assert "X" in str(exc), (kind, name, str(exc))


# --------------------------------------------------------------------------- #
# 4. Atom tables
# --------------------------------------------------------------------------- #


@settings(max_examples=S.examples(200))
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, 5))).flatmap(
    lambda nk: S.memberships(*nk, allow_empty_atoms=True)), st.booleans())
def test_from_membership_normalizes_weights(mw, sparse_membership):
    """``from_membership``: ``v_ja = w_j / sum_{i in S_a} w_i`` (on the 2**-53 grid) for any finite
    non-negative weights (tiny, zero, up to 1.8e308): each atom's weights sum to 1
    and match an overflow-free reference; an atom of zero total weight raises
    ValueError. Only where an atom's total weight overflows float64 may a ValueError
    naming sample_weight replace the table."""
    B, w = mw
    membership = sp.csr_matrix(B) if sparse_membership else B
    t, exc, rec = S.call_recording(AtomTable.from_membership, membership, sample_weight=w)
    assert not rec, [str(x.message) for x in rec]
    ww = np.ones(B.shape[0]) if w is None else w
    totals = [ww[B[:, a]] for a in range(B.shape[1])]
    if any(not np.any(tw > 0) for tw in totals):
        assert isinstance(exc, ValueError), f"an atom has zero total weight, got {exc!r}"
        return
    with np.errstate(over="ignore"):
        overflow = any(not np.isfinite(tw.sum()) for tw in totals)
    if exc is not None:
        assert overflow and isinstance(exc, ValueError) and "sample_weight" in str(exc), repr(exc)
        return
    assert t.n_samples == B.shape[0] and t.n_atoms == B.shape[1]
    V = ref.atom_matrix(t)
    want = S.robust_atom_matrix(B, w)
    assert np.all(np.isfinite(t.weights)) and np.all(t.weights >= 0)
    # On the grid of exact_normalized: each weight within a few 2**-53 of its share, each atom's sum exactly 1.
    np.testing.assert_allclose(V, want, rtol=0, atol=4 * 2.0**-53)
    sums = V.sum(axis=0)
    assert np.all(sums == 1.0), f"atom weight sums {sums}"
    listed = np.zeros_like(B)
    listed[np.repeat(np.arange(B.shape[0]), np.diff(t.indptr)), t.indices] = True
    assert not np.any(listed & ~B), "an example is listed in an atom it is not a member of"


@st.composite
def invalid_atom_tables(draw):
    n = draw(st.integers(1, 6))
    n_atoms = draw(st.integers(1, 4))
    indptr, indices, weights = draw(S.raw_atom_tables(n, n_atoms))
    if indices.size == 0:
        indptr = indptr.copy()
        indptr[1:] += 1
        indices = np.array([0], np.int64)
        weights = np.array([0.5])
    kind = draw(st.sampled_from(["id_high", "id_negative", "weight_negative", "weight_nan", "weight_inf",
                                 "indptr_decrease", "indptr_end"]))
    pos = draw(st.integers(0, indices.size - 1))
    indptr, indices, weights = indptr.copy(), indices.copy(), weights.copy()
    if kind == "id_high":
        indices[pos] = draw(st.integers(n_atoms, 2**40))
    elif kind == "id_negative":
        indices[pos] = draw(st.integers(-(2**40), -1))
    elif kind == "weight_negative":
        weights[pos] = -draw(st.floats(5e-324, 1e300))
    elif kind == "weight_nan":
        weights[pos] = np.nan
    elif kind == "weight_inf":
        weights[pos] = draw(st.sampled_from([np.inf, -np.inf]))
    elif kind == "indptr_decrease":
        if n < 2:
            kind = "indptr_end"
        else:
            i = draw(st.integers(1, n - 1))
            indptr[i] = indptr[i + 1] + draw(st.integers(1, 3))
    if kind == "indptr_end":
        indptr[-1] += draw(st.sampled_from([-1, 1, 2]))
    return (indptr, indices, weights, n_atoms), kind


@settings(max_examples=S.examples(80))
@given(invalid_atom_tables())
def test_invalid_atom_tables_raise(bad):
    """Atom ids out of range, negative/NaN/inf weights, bad indptr: ValueError or
    TypeError from the AtomTable constructor, never a crash."""
    args, kind = bad
    _, exc, _ = S.call_recording(AtomTable, *args)
    assert isinstance(exc, (ValueError, TypeError)), (kind, exc)


@pytest.mark.parametrize("n_threads", [1, 2, 3, 4])
def test_support_reference_sanity(n_threads):
    """The exact-score expectation agrees with reference.rate_kernel on a benign problem
    (guards the property tests' own reference)."""
    rng = np.random.default_rng(n_threads)
    D = rng.standard_normal((30, 4)) * (rng.random((30, 4)) < 0.5)
    B = rng.random((30, 3)) < 0.5
    B[0] = True
    w = rng.uniform(0.5, 2.0, 30)
    theta, coef, rows = rng.standard_normal(4), rng.standard_normal(3), rng.integers(0, 30, 12)
    atoms = AtomTable.from_membership(B, w)
    p = KernelProblem(X=D, theta=theta, bias=0.2, atoms=atoms, atoms_how="from_membership", coef=coef, margin=1.0,
                      rows=rows, n_threads=n_threads)
    exp = expectation(p)
    assert not exp["possible"] and not exp["required"]
    want = ref.rate_kernel(D, theta, 0.2, ref.atoms_from_membership(B, w), coef, rows=rows)
    S.check_kernel_result(want, exp, "reference.rate_kernel vs exact-score reference")
    res = rate_kernel(D, theta, 0.2, atoms, coef, rows=rows, n_threads=n_threads)
    S.check_kernel_result(res, exp, "core")
