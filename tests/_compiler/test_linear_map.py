"""The compiled constraint map (rateopt._compiler._linear_map.LinearMap) against dense NumPy references.

The two-class reference is the old compile route, rebuilt here in NumPy: every
constraint lowered again to its affine form over subsets, one dense row per
constraint (coefficients summed per atom, sums that cancel to round-off
zeroed). The operator must hold exactly that matrix, and its products must be
the dense matrix's. K-class: the spec's factored map against the compiled (m, G, K, K)
tensor and against group rates counted directly from predictions. Memory: a 10^4-group compile is checked
by the operator's entries, a 3,000-group K-class compile by its entries and its peak allocation.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import rateopt as ro
from _rate_reference import make_data
from rateopt import goals as G
from rateopt._compiler._linear_map import LinearMap
from rateopt._compiler._problem import Problem
from rateopt._language._lowering import CANCEL_RTOL, Env, lower
from rateopt._training._class_spec import class_spec_from_problem
from rateopt._training._spec import spec_from_problem

GOALS = [
    G.demographic_parity("race", 0.02),
    G.statistical_parity("race", 0.2, multiplicative=True),
    G.demographic_parity("race", 0.02, pairwise=True),
    G.demographic_parity("race", 0.1, pairwise=True, multiplicative=True),
    G.demographic_parity("sex", 0.05, sides="lower"),
    G.demographic_parity(("sex", "race"), 0.03),
    G.demographic_parity("race", 0.03, values=["a", "c"]),
    G.minimum_coverage(0.3, "sex"),
    G.coverage_budget(0.4, "race"),
    G.no_lost_benefits("race", 0.1, multiplicative=True),
    G.accurate_coverage("race", 0.05),
    G.equal_opportunity("race", 0.05, multiplicative=True),
    G.equal_opportunity("race", 0.04, pairwise=True),
    G.equalized_odds("race", 0.05),
    G.equal_accuracy("sex", 0.02),
    G.minimum_accuracy(0.6, "race"),
    G.not_worse_off("sex", 0.02),
    G.recall_floor(0.7, "sex"),
    G.precision_floor(0.55, "race"),
    G.win_loss_ratio_floor(1.5),
    G.churn_cap(0.1, "race"),
    G.loss_only_churn_cap(0.05, "sex", normalize="baseline_correct"),
]


def dense_reference(problem):
    """``C`` and ``kappa`` by the old dense route: one NumPy row per lowered constraint."""
    cp = problem.compiled
    gid = {ctx: a for a, ctxs in enumerate(cp.atom_contexts) for ctx in ctxs}
    env = Env()
    C = np.zeros((len(problem.constraints), cp.n_atoms))
    kappa = np.zeros(len(problem.constraints))
    for i, c in enumerate(problem.constraints):
        form = lower(c.expression, env)
        mass = np.zeros(cp.n_atoms)
        for ctx, v in form.terms.items():
            C[i, gid[ctx]] += v
            mass[gid[ctx]] += form.mass[ctx]
        C[i, np.abs(C[i]) <= CANCEL_RTOL * mass] = 0.0
        kappa[i] = -form.const
    return C, kappa


@pytest.mark.parametrize("goal", GOALS, ids=repr)
def test_two_class_map_is_the_dense_matrix(goal):
    ds, _ = make_data(0)
    problem = Problem(constraints=[goal], datasets=ds)
    cp = problem.compiled
    C_ref, kappa_ref = dense_reference(problem)
    C = cp.C
    assert isinstance(C, LinearMap) and C.shape == C_ref.shape
    np.testing.assert_array_equal(np.asarray(C), C_ref)  # the same entries, bit for bit
    np.testing.assert_array_equal(cp.kappa, kappa_ref)
    assert C.nnz == np.count_nonzero(C_ref)
    rng = np.random.default_rng(1)
    p = rng.random(cp.n_atoms)
    lam = rng.random(C.shape[0])
    np.testing.assert_allclose(C @ p, C_ref @ p, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(C.T @ lam, C_ref.T @ lam, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(lam @ C, lam @ C_ref, rtol=1e-14, atol=1e-15)
    P = rng.random((cp.n_atoms, 3))
    np.testing.assert_allclose(C @ P, C_ref @ P, rtol=1e-14, atol=1e-15)
    for i in range(C.shape[0]):
        np.testing.assert_array_equal(C.row(i), C_ref[i])
        np.testing.assert_array_equal(C[i], C_ref[i])
    np.testing.assert_array_equal(C.row_sums(1), np.maximum(C_ref, 0).sum(axis=1))
    np.testing.assert_array_equal(C.row_abs_max(), np.abs(C_ref).max(axis=1, initial=0.0))
    e = rng.integers(0, 4, C.shape[0])
    np.testing.assert_array_equal(np.asarray(C.scaled_rows(e)), np.ldexp(C_ref, -e[:, None]))
    # the game's spec, the rate layer and evaluation read the same map
    spec = spec_from_problem(problem)
    np.testing.assert_array_equal(np.asarray(spec.C), C_ref)
    np.testing.assert_allclose(spec.constraints(p), C_ref @ p - kappa_ref, rtol=1e-14, atol=1e-15)
    A_ref = np.zeros((len(cp.rates.names), cp.n_atoms))
    for i in range(A_ref.shape[0]):
        A_ref[i] = cp.rates.A.row(i)
    np.testing.assert_array_equal(np.asarray(cp.rates.A), A_ref)
    np.testing.assert_allclose(cp.rate_values(p), A_ref @ p + cp.rates.b, rtol=1e-14, atol=1e-15)


def test_factored_map_is_the_product_of_its_factors():
    rng = np.random.default_rng(2)
    B = sp.random(7, 5, density=0.4, random_state=3, format="csr")
    A = sp.random(5, 9, density=0.5, random_state=4, format="csr")
    ref = B.toarray() @ A.toarray()
    M = LinearMap(B, A)
    assert M.shape == (7, 9) and M.nnz == B.nnz + A.nnz
    x, y = rng.random(9), rng.random(7)
    np.testing.assert_allclose(M @ x, ref @ x, rtol=1e-13)
    np.testing.assert_allclose(M.T @ y, ref.T @ y, rtol=1e-13)
    X, Y = rng.random((4, 9)), rng.random((3, 7))
    np.testing.assert_allclose(x @ M.T, ref @ x, rtol=1e-13)  # a row vector times C.T
    np.testing.assert_allclose(X @ M.T, X @ ref.T, rtol=1e-13)  # rows of points times C.T (the pool's rates)
    np.testing.assert_allclose(Y @ M, Y @ ref, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(M), ref, rtol=1e-13)
    for i in range(7):
        np.testing.assert_allclose(M.row(i), ref[i], rtol=1e-13)
    np.testing.assert_allclose(M.row_sums(-1), np.minimum(ref, 0).sum(axis=1), rtol=1e-13)
    assert M.equals(ref @ np.eye(9)) or np.allclose(np.asarray(M), ref)
    with pytest.raises(ValueError, match="columns"):
        M @ np.ones(8)
    with pytest.raises(ValueError, match="rows"):
        M.T @ np.ones(8)


@pytest.mark.parametrize("goal", [ro.goals.multiclass_demographic_parity("a", slack=0.05),
                                  ro.goals.multiclass_equalized_odds("a", slack=0.05),
                                  ro.goals.class_recall_floor(0.3)], ids=repr)
def test_k_class_map_is_the_dense_tensor(goal):
    rng = np.random.default_rng(0)
    n, K = 90, 3
    y = rng.integers(0, K, n)
    y[:9] = np.arange(9) % K
    a = rng.integers(0, 3, n)
    a[:9] = np.arange(9) // 3
    ds = ro.ClassDataset(rng.normal(size=(n, 2)), y, groups={"a": a})
    problem = ro.Problem(constraints=[goal], datasets=ds)
    spec = class_spec_from_problem(problem)
    c = problem.compiled
    m, S = c.n_constraints, c.n_cells * K * K
    dense = np.asarray(c.constraints).reshape(m, S) * spec.scale  # the compiled tensor, as the spec scales it
    # the spec keeps the map factored (statistics -> rate leaves -> constraints); its product is the tensor up
    # to the rounding of one more product per entry
    assert isinstance(spec.C, LinearMap) and spec.C.shape == (m, S) and spec.C.A is not None
    np.testing.assert_allclose(np.asarray(spec.C), dense, rtol=1e-15, atol=1e-15 * np.abs(dense).max())
    assert np.array_equal(np.asarray(spec.C) != 0, dense != 0)
    N = rng.random((c.n_cells, K, K))
    np.testing.assert_allclose(spec.constraints(N.reshape(S) / spec.scale), c.constraint_values(N),
                               rtol=1e-12, atol=1e-14)
    lam = rng.random(m)
    np.testing.assert_allclose(spec.C.T @ lam, dense.T @ lam, rtol=1e-13, atol=1e-15)
    # B: the bound on every |g_i| (the multipliers' default step), the same formula on the dense tensor
    W = c.cell_label_weights
    ref = np.max(np.einsum("gy,igy->i", W / spec.scale, np.abs(dense.reshape(m, -1, K, K)).max(axis=3))
                 + np.abs(c.offsets))
    assert spec.bound == pytest.approx(ref, rel=1e-14)


def _class_rates(kind, y, yhat, a, w, k, g):
    """A K-class rate of hard predictions counted directly: ``kind`` in ppr, recall, fpr; group ``g`` (None: all)."""
    rows = np.ones(y.shape[0], dtype=bool) if g is None else a == g
    den = rows & {"ppr": True, "recall": y == k, "fpr": y != k}[kind]
    return w[den & (yhat == k)].sum() / w[den].sum()


@pytest.mark.parametrize("kind", ["ppr", "recall_fpr"])
def test_k_class_constraints_are_the_rates_counted_directly(kind):
    rng = np.random.default_rng(5)
    n, K, groups, slack = 400, 4, 5, 0.05
    y = rng.integers(0, K, n)
    a = rng.integers(0, groups, n)
    y[:groups * K], a[:groups * K] = np.arange(groups * K) % K, np.arange(groups * K) // K
    w = rng.uniform(0.5, 2.0, n)
    goal = (ro.goals.multiclass_demographic_parity("a", slack=slack) if kind == "ppr"
            else ro.goals.multiclass_equalized_odds("a", slack=slack))
    ds = ro.ClassDataset(rng.normal(size=(n, 2)), y, weights=w, groups={"a": a})
    problem = ro.Problem(constraints=[goal], datasets=ds)
    spec = class_spec_from_problem(problem)
    c = problem.compiled
    yhat = rng.integers(0, K, n)
    stats = np.bincount((c.cells * K + y) * K + yhat, weights=w, minlength=spec.n_atoms) / spec.scale
    ref = []
    for rate in (["ppr"] if kind == "ppr" else ["recall", "fpr"]):
        for k in range(K):
            for g in range(groups):
                d = _class_rates(rate, y, yhat, a, w, k, g) - _class_rates(rate, y, yhat, a, w, k, None)
                ref += [d - slack, -d - slack]
    np.testing.assert_allclose(spec.constraints(stats), ref, rtol=1e-12, atol=1e-14)


def test_many_group_k_class_maps_stay_linear_in_the_groups():
    import tracemalloc

    groups, K, per = 1000, 3, 3
    n = groups * per
    rng = np.random.default_rng(2)
    a = np.repeat(np.arange(groups), per)
    y = np.tile(np.arange(K), groups)
    ds = ro.ClassDataset(rng.normal(size=(n, 2)), y, groups={"a": a})
    problem = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("a", slack=0.05)], datasets=ds)
    tracemalloc.start()  # the spec (the factored map, the bound B from its product in chunks)
    spec = class_spec_from_problem(problem)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    m, S = spec.C.shape
    assert (m, S) == (2 * groups * K, groups * K * K)
    # leaf rows: each group's K class rates read K cells each, the K overall rates every group's K cells, the
    # objective's K rates (error) one cell of each group; two constraints per (group, class), two rates each
    assert spec.C.nnz == 2 * groups * K * K + groups * K + 2 * m
    assert peak < 128 * 2**20, f"the spec took {peak / 2**20:.0f} MiB (the dense map: {m * S * 8 / 2**30:.1f} GiB)"
    assert "constraint_rows" not in vars(problem.compiled)  # the product was never formed
    yhat = rng.integers(0, K, n)
    stats = np.bincount((problem.compiled.cells * K + y) * K + yhat, minlength=S) / spec.scale
    g = spec.constraints(stats)
    for grp in (0, 17, groups - 1):
        for k in range(K):
            d = np.mean(yhat[a == grp] == k) - np.mean(yhat == k)
            i = 2 * (k * groups + grp)
            np.testing.assert_allclose(g[i:i + 2], [d - 0.05, -d - 0.05], rtol=1e-12, atol=1e-14)


def test_ten_thousand_groups_compile_to_a_linear_map():
    k = 10_000
    rng = np.random.default_rng(1)
    one_row = ro.Dataset(np.zeros((k, 1)), rng.integers(0, 2, k), groups={"g": np.arange(k)})
    # equalized odds needs both labels in each group: two rows per group, one of each label
    two_rows = ro.Dataset(np.zeros((2 * k, 1)), np.tile([0, 1], k), groups={"g": np.arange(2 * k) // 2})
    for goal, ds, per_group in ((ro.goals.demographic_parity("g", slack=0.02), one_row, 2),
                                (ro.goals.equalized_odds("g", slack=0.02), two_rows, 4)):
        problem = Problem(constraints=[goal], datasets=ds)
        cp = problem.compiled
        m = cp.C.shape[0]
        assert m == per_group * k and cp.n_atoms >= k
        # each row reads its group's atom and the overall one: 2 entries, so memory is linear
        assert cp.C.nnz == 2 * m
        assert cp.rates.A.nnz <= 2 * (len(cp.rates.names) + cp.n_atoms)
        assert cp.tables["train"].indices.size <= 4 * ds.n_samples
        g = cp.constraint_values(np.full(cp.n_atoms, 0.5))  # every rate equal: each value is -slack
        np.testing.assert_allclose(g, np.full(m, -0.02), atol=1e-15)


def test_transposed_products_are_cached_and_equal_scipys_bit_for_bit():
    """``C.T @ y`` reads transposes built once; the sums are scipy's own transposed product, bit for bit."""
    import pickle

    rng = np.random.default_rng(7)
    for t in range(20):
        B = sp.random(6, 9, density=0.4, random_state=t, format="csr")
        A = None if t % 2 else sp.random(9, 14, density=0.3, random_state=100 + t, format="csr")
        L = LinearMap(B, A)
        for y in (rng.normal(size=6), rng.normal(size=(6, 3))):
            want = L.B.T @ y if L.A is None else L.A.T @ (L.B.T @ y)
            assert np.array_equal(L.rmatvec(y), np.asarray(want))
            assert np.array_equal(y.T @ L if y.ndim == 2 else y @ L, np.asarray(want).T)
        first = L._transposes()
        assert L._transposes()[0] is first[0]  # built once
        back = pickle.loads(pickle.dumps(L))
        assert "_transposed" not in back.__dict__ and np.array_equal(back.rmatvec(np.ones(6)), L.rmatvec(np.ones(6)))


def test_vector_products_equal_scipys_bit_for_bit():
    """``C @ x`` and ``C.T @ y`` of vectors call scipy's csr_matvec directly: the same sums as scipy's own
    products, bit for bit (entries of wide dynamic range, cancellations, inf and NaN included), and the
    matrix products keep scipy's route."""
    rng = np.random.default_rng(11)
    for t in range(60):
        m, r, n = (int(v) for v in rng.integers(0, 12, 3))
        B = sp.random(m, r, density=0.5, random_state=t, format="csr")
        B.data *= 10.0 ** rng.integers(-8, 8, B.data.shape[0])
        A = None if t % 3 == 0 else sp.random(r, n, density=0.5, random_state=500 + t, format="csr")
        L = LinearMap(B, A)
        x = rng.normal(size=L.shape[1]) * 10.0 ** rng.integers(-8, 8, L.shape[1])
        y = rng.normal(size=L.shape[0])
        if t % 10 == 1 and x.size:
            x[0] = np.inf if t % 20 == 1 else np.nan
        want = L.B @ (x if L.A is None else L.A @ x)
        got = L @ x
        assert got.dtype == np.float64 and got.shape == (L.shape[0],)
        assert np.array_equal(got, np.asarray(want), equal_nan=True)
        want_t = L.B.T @ y if L.A is None else L.A.T @ (L.B.T @ y)
        assert np.array_equal(L.rmatvec(y), np.asarray(want_t)) and np.array_equal(y @ L, np.asarray(want_t))
        assert np.array_equal(L @ x[::-1].copy()[::-1], got, equal_nan=True)  # a strided vector too
        X = rng.normal(size=(L.shape[1], 2))
        assert np.array_equal(L @ X, np.asarray(L.B @ (X if L.A is None else L.A @ X)))
