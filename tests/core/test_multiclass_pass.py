"""The fused K-column multiclass pass (``rateopt.core.multiclass_pass``) against a NumPy reference.

Contract: docs/core_api.md ("The fused multiclass pass"). The reference below is whole-array NumPy in
float64, written from the contract; a float32 ``X`` enters it as its float32 values cast to float64, so the
core (which reads the same values and accumulates in float64) must agree to the same tight tolerance: only
summation order differs. Tolerances are ``rtol=1e-12`` and ``atol=1e-12 * scale``, ``scale`` the sum of
absolute values of the terms a field adds up (a score's error moves a proxy by at most its cost gap).
Problems whose scores tie, or sit on a hinge kink, use small integers throughout, so that every sum is exact
in any order and the core and the reference see the same ties.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rateopt.core import (
    MULTICLASS_PROXIES,
    ClassCells,
    FeatureMatrix,
    MulticlassPassResult,
    multiclass_pass,
    multiclass_scores,
)
from rateopt.exceptions import NumericalError

FORMATS = ["dense", "csr32", "csr64", "csr_unsorted"]
DTYPES = [np.float32, np.float64]
PROXY_PAIRS = [("softmax", "hinge"), ("hinge", "softmax"), ("softmax", "softmax"), ("hinge", "hinge")]
# 2, 3 and 10 classes are compiled for a constant K; 17 takes the generic loop.
CLASS_COUNTS = [2, 3, 10, 17]
FIELDS = ["counts", "proxy_value", "objective_value", "constraint_value", "grad", "grad_intercept"]


# --------------------------------------------------------------------------- #
# The reference
# --------------------------------------------------------------------------- #


def ref_proxy(S, A, proxy, margin=1.0):
    """Per-row proxy values (n,) and slopes dL/ds (n, K) of the cost rows ``A`` (n, K) at scores ``S``
    (``margin``: the hinge's)."""
    n, K = S.shape
    rows = np.arange(n)
    t = A.argmin(axis=1)
    gap = A - A[rows, t][:, None]
    top = gap.max(axis=1)
    G = np.zeros((n, K))
    if proxy == "softmax":
        m = S.max(axis=1, keepdims=True)
        E = np.exp(S - m)
        total = E.sum(axis=1)
        lse = m[:, 0] + np.log(total)
        loss = top * (lse - S[rows, t])
        G = top[:, None] * (E / total[:, None])
        G[rows, t] -= top
    else:
        V = gap * np.maximum(0.0, margin + S - S[rows, t][:, None])
        V[rows, t] = 0.0  # D_t = 0: the same max, and never the maximizer of a positive loss
        k_star = V.argmax(axis=1)  # lowest index on ties
        loss = V[rows, k_star]
        on = loss > 0
        G[rows[on], k_star[on]] += gap[rows[on], k_star[on]]
        G[rows[on], t[on]] -= gap[rows[on], k_star[on]]
    loss = np.where(top == 0.0, 0.0, loss)
    G[top == 0.0] = 0.0
    return loss, G


def ref_pass(D, coef, intercept, cells, w, n_cells, cost_o, cost_c, proxy_o, proxy_c, *, margin=1.0, rows=None):
    """The pass on dense float64 values ``D``: a :class:`MulticlassPassResult` and the error scales.

    ``rows``: a minibatch (row ids, repeats allowed): the pass over ``D[rows]`` with every sum times
    ``n / len(rows)``. ``margin``: the hinge's."""
    if rows is not None:
        res, scales = ref_pass(D[rows], coef, intercept, cells[rows], w[rows], n_cells, cost_o, cost_c, proxy_o,
                               proxy_c, margin=margin)
        f = D.shape[0] / len(rows)
        return (MulticlassPassResult(**{k: (f * v if k == "counts" or k.startswith("grad") else float(f * v))
                                        for k, v in vars(res).items()}),
                {k: f * np.asarray(v) for k, v in scales.items()})
    S = D @ coef + intercept
    K = S.shape[1]
    yhat = S.argmax(axis=1)
    counts = np.zeros((n_cells, K))
    np.add.at(counts, (cells, yhat), w)
    lo, Go = ref_proxy(S, cost_o[cells], proxy_o, margin)
    lc, Gc = ref_proxy(S, cost_c[cells], proxy_c, margin)
    dS = w[:, None] * (Go + Gc)
    res = MulticlassPassResult(
        counts=counts,
        proxy_value=float(np.sum(w * (lo + lc))),
        objective_value=float(np.sum(w * cost_o[cells, yhat])),
        constraint_value=float(np.sum(w * cost_c[cells, yhat])),
        grad=D.T @ dS,
        grad_intercept=dS.sum(axis=0),
    )
    # A score's rounding error is at most ~1e-16 * score_scale; it moves a row's proxy by at most its
    # cost gaps times that, and each slope by as much (softmax's slopes are 1/4-Lipschitz, hinge's constant
    # away from kinks).
    score_scale = np.abs(D) @ np.abs(coef) + np.abs(intercept)
    gaps = (np.ptp(cost_o[cells], axis=1) + np.ptp(cost_c[cells], axis=1)) * score_scale.max(axis=1)
    slope_scale = np.abs(w)[:, None] * (np.abs(Go) + np.abs(Gc) + gaps[:, None])
    scales = {
        "counts": np.full((n_cells, K), w.sum()),
        "proxy_value": float(np.sum(w * (np.abs(lo) + np.abs(lc) + gaps))),
        "objective_value": float(np.sum(w * np.abs(cost_o[cells, yhat]))),
        "constraint_value": float(np.sum(w * np.abs(cost_c[cells, yhat]))),
        "grad": np.abs(D).T @ slope_scale,
        "grad_intercept": slope_scale.sum(axis=0),
    }
    return res, scales


# --------------------------------------------------------------------------- #
# Problems
# --------------------------------------------------------------------------- #


def make_X(D, fmt, dtype, seed=0):
    """``D`` in the format: dense C-order, CSR with int32/int64 indices, or CSR whose rows' indices are
    shuffled (unsorted). All-zero rows of ``D`` are empty CSR rows."""
    D = np.asarray(D, np.float64)
    if fmt == "dense":
        return np.ascontiguousarray(D.astype(dtype))
    A = sp.csr_matrix(D.astype(dtype))
    idx = np.int32 if fmt == "csr32" else np.int64
    indices, data = A.indices.astype(idx), A.data.copy()
    if fmt == "csr_unsorted":
        rng = np.random.default_rng(seed)
        for i in range(A.shape[0]):
            lo, hi = A.indptr[i], A.indptr[i + 1]
            perm = lo + rng.permutation(hi - lo)
            indices[lo:hi], data[lo:hi] = indices[perm], data[perm]
    out = sp.csr_matrix((data, indices, A.indptr.astype(idx)), shape=D.shape)
    out.indices, out.indptr = indices, A.indptr.astype(idx)
    assert out.dtype == dtype
    return out


def make_problem(seed, K, *, n=241, d=9, n_cells=6, integer=False):
    """A random problem with every case the pass must get right.

    * rows 0-3 are all zero (empty CSR rows; their scores are the intercepts),
    * rows 10-14 have weight 0, the others non-uniform weights,
    * cell 2 has constant objective costs and cell 3 zero constraint costs (max gap 0: no proxy),
    * the objective costs are small integers (ties at the minimum and among the others),
    * the constraint costs have both signs and a tie at the minimum in cell 4.

    ``integer``: X, coef and the intercepts are small integers, so many scores tie exactly and hinge
    terms sit on their kinks, and every sum is exact.
    """
    rng = np.random.default_rng(seed)
    if integer:
        D = rng.integers(-1, 3, (n, d)).astype(np.float64) * (rng.random((n, d)) < 0.6)
        coef = rng.integers(-1, 2, (d, K)).astype(np.float64)
        intercept = rng.integers(-1, 2, K).astype(np.float64)
    else:
        D = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.5)
        coef = rng.standard_normal((d, K))
        intercept = 0.5 * rng.standard_normal(K)
    D[:4] = 0.0
    cells = rng.integers(0, n_cells, n)
    w = rng.uniform(0.2, 3.0, n)
    w[10:15] = 0.0
    cost_o = rng.integers(0, 4, (n_cells, K)).astype(np.float64)
    cost_o[2] = 1.5
    cost_c = rng.standard_normal((n_cells, K))
    cost_c[3] = 0.0
    cost_c[4, :] = np.abs(cost_c[4]) + 0.25
    cost_c[4, [0, K - 1]] = 0.0
    return D, coef, intercept, cells, w, n_cells, cost_o, cost_c


def run_both(problem, fmt, dtype, proxy_o, proxy_c, *, n_threads=1, gradient=True, margin=1.0, rows=None):
    D, coef, intercept, cells, w, n_cells, cost_o, cost_c = problem
    X = make_X(D, fmt, dtype)
    res = multiclass_pass(X, coef, intercept, ClassCells(cells, w, n_cells), cost_o, cost_c,
                          objective_proxy=proxy_o, constraint_proxy=proxy_c, gradient=gradient,
                          margin=margin, rows=rows, n_threads=n_threads)
    Dv = D.astype(dtype).astype(np.float64)  # the values the core reads
    expected, scales = ref_pass(Dv, coef, intercept, cells, w, n_cells, cost_o, cost_c, proxy_o, proxy_c,
                                margin=margin, rows=rows)
    return res, expected, scales


def assert_close(res, expected, scales, *, what=""):
    """Every field within ``1e-12 * |expected| + 1e-12 * scale``, element by element."""
    for f in FIELDS:
        got = np.asarray(getattr(res, f), dtype=np.float64)
        want = np.asarray(getattr(expected, f), dtype=np.float64)
        assert got.shape == want.shape, (what, f, got.shape, want.shape)
        err = np.abs(got - want)
        bound = 1e-12 * np.abs(want) + 1e-12 * np.asarray(scales[f])
        assert np.all(err <= bound), f"{what} field {f}: error {np.max(err - bound):.3g} past the bound"


def assert_equal(a, b):
    for f in FIELDS:
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        assert x.dtype == y.dtype and np.array_equal(x, y), f"field {f} differs"


# --------------------------------------------------------------------------- #
# A hand-computed example (checks the reference as much as the core)
# --------------------------------------------------------------------------- #


def test_hand_example():
    # Scores: row 0 (1, 0, 0), row 1 (0, 2, 0), row 2 (1, 1, 0): a tie, predicted 0.
    X = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    coef = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    cells = ClassCells([0, 1, 1], [1.0, 2.0, 0.5], n_cells=2)
    cost_o = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 3.0]])  # cell c's best class is c
    cost_c = np.zeros((2, 3))
    res = multiclass_pass(X, coef, np.zeros(3), cells, cost_o, cost_c, objective_proxy="hinge")
    np.testing.assert_array_equal(res.counts, [[1.0, 0.0, 0.0], [0.5, 2.0, 0.0]])
    assert res.objective_value == 0.5 * 1.0  # row 2 (weight 0.5) predicted 0 in cell 1
    assert res.constraint_value == 0.0
    # hinge: row 0, t=0: max(1*max(0, 1+0-1), 1*max(0, 1+0-1)) = 0; row 1, t=1: max(1*max(0, 1+0-2),
    # 3*max(0, 1+0-2)) = 0; row 2, t=1: max(1*max(0, 1+1-1), 3*max(0, 1+0-1)) = 1 at k*=0.
    assert res.proxy_value == 0.5 * 1.0
    np.testing.assert_array_equal(res.grad_intercept, [0.5, -0.5, 0.0])
    np.testing.assert_array_equal(res.grad, [[0.5, -0.5, 0.0], [0.5, -0.5, 0.0]])
    expected, scales = ref_pass(X, coef, np.zeros(3), cells.cells, cells.weights, 2, cost_o, cost_c, "hinge",
                                "softmax")
    assert_close(res, expected, scales)


def test_softmax_hand_value():
    X = np.array([[0.0]])
    res = multiclass_pass(X, np.zeros((1, 4)), np.array([0.0, 0.0, 0.0, np.log(5.0)]), ClassCells([0], [2.0], 1),
                          np.array([[3.0, 1.0, 1.0, 2.0]]), np.zeros((1, 4)))
    # t = 1 (lowest of the tied minimum), max gap 2, logsumexp = log 8, s_t = 0.
    assert res.proxy_value == pytest.approx(2.0 * 2.0 * np.log(8.0), rel=1e-15)
    np.testing.assert_allclose(res.grad_intercept, 2.0 * 2.0 * (np.array([1, 1, 1, 5]) / 8.0 - [0, 1, 0, 0]),
                               rtol=1e-15)
    np.testing.assert_array_equal(res.counts, [[0.0, 0.0, 0.0, 2.0]])
    assert res.objective_value == 4.0


# --------------------------------------------------------------------------- #
# Against the reference: every layout, dtype, proxy pair and class count
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("K", CLASS_COUNTS)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("proxies", PROXY_PAIRS)
def test_against_reference(K, fmt, dtype, proxies):
    problem = make_problem(K * 7 + 1, K)
    res, expected, scales = run_both(problem, fmt, dtype, *proxies)
    assert_close(res, expected, scales, what=f"K={K} {fmt} {np.dtype(dtype).name} {proxies}")


@pytest.mark.parametrize("K", CLASS_COUNTS)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("proxies", PROXY_PAIRS)
def test_score_ties_and_kinks(K, fmt, dtype, proxies):
    """Integer problems: argmax ties, hinge kinks and hinge maximizer ties, all exact."""
    problem = make_problem(K * 13 + 3, K, integer=True)
    D, coef, intercept = problem[:3]
    S = D @ coef + intercept
    top = S.max(axis=1, keepdims=True)
    assert np.sum((S == top).sum(axis=1) > 1) >= 10, "the problem must hold score ties"
    res, expected, scales = run_both(problem, fmt, dtype, *proxies)
    assert_close(res, expected, scales, what=f"K={K} {fmt} {np.dtype(dtype).name} {proxies}")
    # The predictions are the same exactly: counts are sums of the same weights in row order.
    np.testing.assert_allclose(res.counts, expected.counts, rtol=1e-15)


def _batch(n, size, seed):
    """Minibatch rows: unsorted, with repeats, always holding the all-zero rows 0-3 and a zero-weight row."""
    rng = np.random.default_rng(seed)
    return np.concatenate([[2, 11, 0, 3, 1, 2], rng.integers(0, n, size - 6)])


@pytest.mark.parametrize("K", CLASS_COUNTS)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("proxies", PROXY_PAIRS)
def test_minibatch_rows_and_margin_against_reference(K, fmt, dtype, proxies):
    """A minibatch (odd size: the pair loop's tail) at a hinge margin other than 1, on both problem kinds."""
    for integer in (False, True):
        problem = make_problem(K * 11 + 5, K, integer=integer)
        rows = _batch(problem[0].shape[0], 57, K)
        res, expected, scales = run_both(problem, fmt, dtype, *proxies, margin=2.5, rows=rows)
        assert_close(res, expected, scales, what=f"K={K} {fmt} {np.dtype(dtype).name} {proxies} {integer}")
        if integer:  # every sum exact: the counts are the same bits
            np.testing.assert_allclose(res.counts, expected.counts, rtol=1e-15)


@pytest.mark.parametrize("K", [3, 17])
@pytest.mark.parametrize("proxies", PROXY_PAIRS)
def test_margin_moves_only_the_hinge(K, proxies):
    """Full pass at margins 0.25 and 3: the reference's hinge; a softmax-only pass does not change."""
    problem = make_problem(K * 3 + 2, K)
    passes = {}
    for margin in (0.25, 3.0):
        res, expected, scales = run_both(problem, "dense", np.float64, *proxies, margin=margin)
        assert_close(res, expected, scales, what=f"K={K} {proxies} margin={margin}")
        passes[margin] = res
    if proxies == ("softmax", "softmax"):
        assert_equal(passes[0.25], passes[3.0])
    else:
        assert passes[0.25].proxy_value != passes[3.0].proxy_value


@pytest.mark.parametrize("K", [2, 3, 17])
@pytest.mark.parametrize("fmt", ["dense", "csr32"])
def test_every_row_as_a_minibatch_is_the_full_pass(K, fmt):
    """rows = 0..n-1 visits what the full pass visits, in its order, with scale n/n = 1: the same bits."""
    problem = make_problem(K + 40, K)
    D, coef, intercept, cells, w, n_cells, cost_o, cost_c = problem
    X, cc = make_X(D, fmt, np.float64), ClassCells(cells, w, n_cells)
    for threads in (1, 3):
        full = multiclass_pass(X, coef, intercept, cc, cost_o, cost_c, n_threads=threads)
        every = multiclass_pass(X, coef, intercept, cc, cost_o, cost_c, rows=np.arange(D.shape[0]),
                                n_threads=threads)
        assert_equal(full, every)


@pytest.mark.parametrize("fmt", ["dense", "csr32"])
def test_minibatch_threads_deterministic(fmt):
    """A large minibatch split over 1, 2 and 4 requested threads agrees with the reference each time, and a
    fixed thread count repeats bit for bit."""
    problem = make_problem(5, 4, n=3000)
    rows = _batch(3000, 2601, 9)
    for threads in (1, 2, 4):
        res, expected, scales = run_both(problem, fmt, np.float64, "softmax", "hinge", rows=rows,
                                         n_threads=threads)
        assert_close(res, expected, scales, what=f"threads={threads}")
        again, _, _ = run_both(problem, fmt, np.float64, "softmax", "hinge", rows=rows, n_threads=threads)
        assert_equal(res, again)


@pytest.mark.parametrize("K", CLASS_COUNTS)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_scores(K, fmt, dtype):
    D, coef, intercept = make_problem(K + 5, K)[:3]
    S = multiclass_scores(make_X(D, fmt, dtype), coef, intercept, n_threads=1)
    Dv = D.astype(dtype).astype(np.float64)
    assert S.shape == (D.shape[0], K) and S.dtype == np.float64
    np.testing.assert_allclose(S, Dv @ coef + intercept, rtol=1e-12,
                               atol=1e-12 * np.max(np.abs(Dv) @ np.abs(coef) + np.abs(intercept)))


def test_scores_are_the_pass_predictions():
    K = 10
    D, coef, intercept, cells, w, n_cells, cost_o, cost_c = make_problem(3, K, n=3000)
    Xm = FeatureMatrix(make_X(D, "csr32", np.float32))
    S = multiclass_scores(Xm, coef, intercept, n_threads=2)
    res = multiclass_pass(Xm, coef, intercept, ClassCells(cells, w, n_cells), cost_o, cost_c, n_threads=2)
    counts = np.zeros((n_cells, K))
    np.add.at(counts, (cells, S.argmax(axis=1)), w)
    np.testing.assert_allclose(res.counts, counts, rtol=1e-13)


def test_zero_weight_rows_change_nothing():
    K = 3
    D, coef, intercept, cells, w, n_cells, cost_o, cost_c = make_problem(5, K)
    base = multiclass_pass(D, coef, intercept, ClassCells(cells, w, n_cells), cost_o, cost_c)
    D2 = D.copy()
    D2[10:15] *= 1e3  # the weight-0 rows
    moved = multiclass_pass(D2, coef, intercept, ClassCells(cells, w, n_cells), cost_o, cost_c)
    assert_equal(base, moved)


def test_indifferent_cells_add_nothing():
    K = 4
    D, coef, intercept, cells, w, n_cells, _, _ = make_problem(6, K)
    flat = np.tile(np.arange(n_cells, dtype=np.float64)[:, None], (1, K))  # constant within each cell
    res = multiclass_pass(D, coef, intercept, ClassCells(cells, w, n_cells), flat, flat,
                          objective_proxy="softmax", constraint_proxy="hinge")
    assert res.proxy_value == 0.0
    assert not np.any(res.grad) and not np.any(res.grad_intercept)
    assert res.objective_value == pytest.approx(np.sum(w * cells), rel=1e-13)


# --------------------------------------------------------------------------- #
# Threads, the gradient switch, finite differences
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("K", [3, 10, 17])
@pytest.mark.parametrize("fmt", ["dense", "csr32"])
def test_threads_deterministic(K, fmt):
    D, coef, intercept, cells, w, n_cells, cost_o, cost_c = make_problem(K, K, n=6000, d=15)
    Xm = FeatureMatrix(make_X(D, fmt, np.float64))
    cc = ClassCells(cells, w, n_cells)
    run = {t: multiclass_pass(Xm, coef, intercept, cc, cost_o, cost_c, n_threads=t) for t in (1, 2, 3)}
    for t in (1, 2, 3):
        assert_equal(run[t], multiclass_pass(Xm, coef, intercept, cc, cost_o, cost_c, n_threads=t))
    _, scales = ref_pass(D, coef, intercept, cells, w, n_cells, cost_o, cost_c, "softmax", "hinge")
    for t in (2, 3):
        assert_close(run[t], run[1], scales, what=f"n_threads={t} vs 1")
    S1 = multiclass_scores(Xm, coef, intercept, n_threads=1)
    assert np.array_equal(S1, multiclass_scores(Xm, coef, intercept, n_threads=2))


@pytest.mark.parametrize("fmt", ["dense", "csr64"])
@pytest.mark.parametrize("proxies", PROXY_PAIRS)
def test_gradient_false(fmt, proxies):
    K = 10
    D, coef, intercept, cells, w, n_cells, cost_o, cost_c = make_problem(8, K, n=3000)
    Xm = FeatureMatrix(make_X(D, fmt, np.float32))
    cc = ClassCells(cells, w, n_cells)
    full = multiclass_pass(Xm, coef, intercept, cc, cost_o, cost_c, objective_proxy=proxies[0],
                           constraint_proxy=proxies[1], n_threads=2)
    bare = multiclass_pass(Xm, coef, intercept, cc, cost_o, cost_c, objective_proxy=proxies[0],
                           constraint_proxy=proxies[1], gradient=False, n_threads=2)
    assert bare.grad is None and bare.grad_intercept is None
    assert np.array_equal(bare.counts, full.counts)
    assert (bare.proxy_value, bare.objective_value, bare.constraint_value) == (
        full.proxy_value, full.objective_value, full.constraint_value)


@pytest.mark.parametrize("fmt", ["dense", "csr64"])
@pytest.mark.parametrize("proxies", PROXY_PAIRS)
@pytest.mark.parametrize("K", [3, 4, 5, 12])
@pytest.mark.parametrize("batch", [False, True])
def test_value_false_changes_nothing_else(fmt, proxies, K, batch):
    """value=False: proxy_value is NaN; counts, exact values and gradients are the full pass's, bit for bit."""
    D, coef, intercept, cells, w, n_cells, cost_o, cost_c = make_problem(9, K, n=2001)
    Xm = FeatureMatrix(make_X(D, fmt, np.float64))
    cc = ClassCells(cells, w, n_cells)
    rows = np.random.default_rng(K).integers(0, 2001, 777) if batch else None
    kw = dict(objective_proxy=proxies[0], constraint_proxy=proxies[1], rows=rows, n_threads=2)
    full = multiclass_pass(Xm, coef, intercept, cc, cost_o, cost_c, **kw)
    bare = multiclass_pass(Xm, coef, intercept, cc, cost_o, cost_c, value=False, **kw)
    assert np.isnan(bare.proxy_value) and np.isfinite(full.proxy_value)
    assert np.array_equal(bare.counts, full.counts)
    assert np.array_equal(bare.grad, full.grad) and np.array_equal(bare.grad_intercept, full.grad_intercept)
    assert (bare.objective_value, bare.constraint_value) == (full.objective_value, full.constraint_value)


@pytest.mark.parametrize("proxies", PROXY_PAIRS)
@pytest.mark.parametrize("K", [2, 3, 5])
def test_gradient_finite_differences(proxies, K):
    """Central differences of proxy_value at a point with no ties and no hinge kinks within the step."""
    rng = np.random.default_rng(40 + K)
    n, d, n_cells = 40, 4, 3
    D = rng.standard_normal((n, d))
    coef, intercept = rng.standard_normal((d, K)), rng.standard_normal(K)
    cells, w = rng.integers(0, n_cells, n), rng.uniform(0.5, 2.0, n)
    cost_o, cost_c = rng.uniform(0, 2, (n_cells, K)), rng.standard_normal((n_cells, K))
    cc = ClassCells(cells, w, n_cells)
    # No hinge term within 1e-3 of its kink, and no near-tie among the hinge terms of a row.
    S = D @ coef + intercept
    for cost in (cost_o, cost_c):
        A = cost[cells]
        t = A.argmin(axis=1)
        margin = 1.0 + S - S[np.arange(n), t][:, None]
        margin[np.arange(n), t] = 1.0
        assert np.min(np.abs(margin)) > 1e-3

    def value(c, b):
        return multiclass_pass(D, c, b, cc, cost_o, cost_c, objective_proxy=proxies[0],
                               constraint_proxy=proxies[1], gradient=False).proxy_value

    res = multiclass_pass(D, coef, intercept, cc, cost_o, cost_c, objective_proxy=proxies[0],
                          constraint_proxy=proxies[1])
    h = 1e-6
    fd = np.zeros_like(coef)
    for j in range(d):
        for k in range(K):
            e = np.zeros_like(coef)
            e[j, k] = h
            fd[j, k] = (value(coef + e, intercept) - value(coef - e, intercept)) / (2 * h)
    fd_b = np.array([(value(coef, intercept + h * np.eye(K)[k]) - value(coef, intercept - h * np.eye(K)[k]))
                     / (2 * h) for k in range(K)])
    np.testing.assert_allclose(res.grad, fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(res.grad_intercept, fd_b, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- #
# Bad input: every error names its argument; never a crash
# --------------------------------------------------------------------------- #


def _good(K=3, n=20, d=4, n_cells=2):
    rng = np.random.default_rng(0)
    return dict(X=rng.standard_normal((n, d)), coef=rng.standard_normal((d, K)), intercept=np.zeros(K),
                cells=ClassCells(rng.integers(0, n_cells, n), np.ones(n), n_cells),
                cost_objective=np.ones((n_cells, K)), cost_constraints=np.zeros((n_cells, K)))


def test_good_call_runs():
    res = multiclass_pass(**_good())
    assert isinstance(res, MulticlassPassResult)
    assert MULTICLASS_PROXIES == {"softmax": 0, "hinge": 1}


BAD_CALLS = [
    ({"coef": np.zeros((5, 3))}, ValueError, r"coef must have shape \(n_features=4, n_classes >= 2\)"),
    ({"coef": np.zeros((4, 1))}, ValueError, r"coef must have shape \(n_features=4, n_classes >= 2\)"),
    ({"coef": np.zeros(4)}, ValueError, r"coef must have shape"),
    ({"coef": np.full((4, 3), np.nan)}, ValueError, r"coef holds a non-finite"),
    ({"coef": np.array([["a"] * 3] * 4)}, ValueError, r"coef must be an array of real numbers"),
    ({"intercept": np.zeros(2)}, ValueError, r"intercept must have shape \(n_classes=3,\)"),
    ({"intercept": np.zeros((1, 3))}, ValueError, r"intercept must have shape"),
    ({"intercept": np.array([0.0, np.inf, 0.0])}, ValueError, r"intercept holds a non-finite"),
    ({"cost_objective": np.zeros((3, 3))}, ValueError, r"cost_objective must have shape \(n_cells=2, n_classes=3\)"),
    ({"cost_objective": np.zeros((2, 2))}, ValueError, r"cost_objective must have shape"),
    ({"cost_objective": np.full((2, 3), np.nan)}, ValueError, r"cost_objective holds a non-finite"),
    ({"cost_constraints": np.zeros(6)}, ValueError, r"cost_constraints must have shape \(n_cells=2, n_classes=3\)"),
    ({"cost_constraints": np.full((2, 3), -np.inf)}, ValueError, r"cost_constraints holds a non-finite"),
    ({"cells": ClassCells(np.zeros(19, int), np.ones(19), 2)}, ValueError, r"cells has n_samples = 19"),
    ({"cells": np.zeros(20, np.int32)}, TypeError, r"cells must be a ClassCells"),
    ({"objective_proxy": "logistic"}, ValueError, r"objective_proxy must be one of \['hinge', 'softmax'\]"),
    ({"constraint_proxy": 1}, ValueError, r"constraint_proxy must be one of"),
    ({"gradient": "yes"}, ValueError, r"gradient must be a bool"),
    ({"value": 1}, ValueError, r"value must be a bool"),
    ({"margin": 0.0}, ValueError, r"margin must be > 0"),
    ({"margin": np.nan}, ValueError, r"margin"),
    ({"rows": np.zeros(0, int)}, ValueError, r"rows must not be empty"),
    ({"rows": [0, 20]}, ValueError, r"rows holds a row index outside \[0, n_samples=20\)"),
    ({"rows": [-1]}, ValueError, r"rows holds a row index outside"),
    ({"rows": [0.5]}, TypeError, r"rows"),
    ({"n_threads": 0}, ValueError, r"n_threads"),
    ({"X": np.zeros(20)}, ValueError, r"X must be 2-D"),
    ({"X": np.full((20, 4), np.nan)}, ValueError, r"X holds a non-finite"),
]


@pytest.mark.parametrize("change, exc, match", BAD_CALLS)
def test_bad_input(change, exc, match):
    kwargs = _good()
    kwargs.update(change)
    with pytest.raises(exc, match=match):
        multiclass_pass(**kwargs)


@pytest.mark.parametrize("change, exc, match", [c for c in BAD_CALLS
                                                if set(c[0]) <= {"X", "coef", "intercept", "n_threads"}])
def test_scores_bad_input(change, exc, match):
    kwargs = {k: v for k, v in _good().items() if k in ("X", "coef", "intercept")}
    kwargs.update(change)
    with pytest.raises(exc, match=match):
        multiclass_scores(**kwargs)


BAD_CELLS = [
    (([0, 2], [1.0, 1.0], 2), r"cells holds cell id 2 at row 1, outside \[0, n_cells=2\)"),
    (([-1, 0], [1.0, 1.0], 2), r"cells holds cell id -1 at row 0"),
    (([0.0, 1.0], [1.0, 1.0], 2), r"cells must hold integers"),
    (([[0, 1]], [1.0, 1.0], 2), r"cells must be 1-D"),
    (([0, 1], [1.0], 2), r"weights must have shape \(n_samples=2,\)"),
    (([0, 1], [1.0, np.nan], 2), r"weights holds a non-finite value at row 1"),
    (([0, 1], [1.0, -0.5], 2), r"weights holds a negative weight -0.5 at row 1"),
    (([0, 1], ["a", "b"], 2), r"weights must hold real numbers"),
    (([0, 1], [1.0, 1.0], 0), r"n_cells must be in \[1, 2\*\*31\)"),
    (([0, 1], [1.0, 1.0], 2.0), r"n_cells must be an integer"),
    (([0, 1], [1.0, 1.0], True), r"n_cells must be an integer"),
    (([0, 1], [1.0, 1.0], 2**31), r"n_cells must be in"),
]


@pytest.mark.parametrize("args, match", BAD_CELLS)
def test_class_cells_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        ClassCells(*args)


def test_class_cells_sealed():
    ids = np.array([0, 1, 1], np.int64)
    w = np.array([1.0, 0.5, 2.0])
    c = ClassCells(ids, w, 2)
    ids[0], w[0] = 7, -1.0  # the caller's arrays change; the validated copies do not
    assert c.cells.dtype == np.int32 and c.weights.dtype == np.float64
    assert c.cells.tolist() == [0, 1, 1] and c.weights.tolist() == [1.0, 0.5, 2.0]
    assert (c.n_samples, c.n_cells) == (3, 2)
    for a in (c.cells, c.weights):
        with pytest.raises(ValueError):
            a[0] = 1
        with pytest.raises(ValueError):
            a.flags.writeable = True
    with pytest.raises(AttributeError):
        c.n_cells = 5
    assert repr(c) == "ClassCells(n_samples=3, n_cells=2)"


@pytest.mark.parametrize("fmt", ["dense", "csr32"])
@pytest.mark.parametrize("bad_row", [0, 1, 2])
def test_nonfinite_scores_raise(fmt, bad_row):
    # Finite X and coef whose product overflows, in the first or second row of a dense pair or the last row.
    D = np.ones((3, 2))
    D[bad_row] = 1e300
    X = make_X(D, fmt, np.float64)
    cells = ClassCells([0, 0, 0], [1.0, 1.0, 1.0], 1)
    with pytest.raises(NumericalError, match=r"of 1 row\(s\) are not finite"):
        multiclass_pass(X, np.full((2, 2), 1e10), np.zeros(2), cells, np.zeros((1, 2)), np.zeros((1, 2)))
    with pytest.raises(NumericalError, match=r"of 1 row\(s\) are not finite"):
        multiclass_scores(X, np.full((2, 2), 1e10), np.zeros(2))


def test_core_rejects_wrong_dtypes_without_crashing():
    """The binding borrows exact dtypes: a caller that skipped the Python boundary gets an error."""
    from rateopt.core._runtime import extension as core

    X = np.zeros((3, 2))
    good = dict(coef=np.zeros((2, 3)), intercept=np.zeros(3), cells=np.zeros(3, np.int32),
                cell_weights=np.ones(3), n_cells=1, cost_objective=np.zeros((1, 3)),
                cost_constraints=np.zeros((1, 3)), objective_proxy=0, constraint_proxy=1, gradient=True,
                margin=1.0, rows=None, n_threads=1)
    core.multiclass_pass_dense(X, **good)
    for name, bad in [("coef", np.zeros((2, 3), np.float32)), ("cells", np.zeros(3, np.int64)),
                      ("intercept", np.zeros(4)), ("cost_objective", np.zeros((2, 3))),
                      ("cell_weights", np.ones(2)), ("objective_proxy", 5), ("n_cells", 0), ("margin", 0.0),
                      ("margin", np.inf), ("rows", np.array([3])), ("rows", np.zeros(0, np.int64)),
                      ("rows", np.zeros(2, np.int32))]:
        with pytest.raises((TypeError, ValueError)):
            core.multiclass_pass_dense(X, **{**good, name: bad})
