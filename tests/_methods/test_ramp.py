"""Seed 004's ramp-loss dataset constraints: ramp rates, the majorizer, MM, the cutting planes, classifiers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from _rate_reference import make_data
from rateopt._language import _rates as R
from rateopt._training._spec import spec_from_problem
from rateopt._compiler._problem import Problem
from rateopt._training._row_coefficients import problem_row_coefficients
from rateopt.core import AtomTable, ramp_rates


def rho(s):
    return np.clip(0.5 + s, 0.0, 1.0)


def several_datasets_problem(seed=0):
    """Two datasets, overlapping groups, labels and a baseline (atoms with several memberships per row)."""
    train, _ = make_data(seed, n=150, zero_weight_frac=0.1)
    unl, _ = make_data(seed + 1, n=60, labels=False, name="unlabeled")
    ctx, uctx = train.context(), unl.context()
    women = ctx.subset(group="sex", value="F")
    old = ctx.subset(train.groups["age"] > 40, name="old")
    cons = [
        R.true_positive_rate(women) >= R.true_positive_rate(ctx) - 0.05,
        0.5 * R.false_positive_rate(old) - R.positive_prediction_rate(women | old) <= 0.2,
        R.churn_rate(uctx.subset(group="race", value="b")) <= 0.1,
        R.positive_prediction_rate(uctx) >= 0.2,
    ]
    return Problem(constraints=cons), train, unl


def _membership(table):
    return sp.csr_matrix((table.weights, table.indices, table.indptr), shape=(table.n_samples, table.n_atoms))


# --------------------------------------------------------------------------- 1. ramp rates


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_ramp_rates_match_numpy(sparse, n_threads):
    problem, train, unl = several_datasets_problem(2)
    spec = spec_from_problem(problem)
    rng = np.random.default_rng(3)
    for blk in spec.blocks:
        X = blk.X.data
        Xs = sp.csr_matrix(X) if sparse else X
        for scale in (0.1, 1.0, 10.0):
            theta = rng.normal(size=X.shape[1]) * scale
            b = float(rng.normal())
            s = np.asarray(X @ theta) + b
            V = _membership(blk.atoms)
            res = ramp_rates(Xs, theta, b, blk.atoms, n_threads=n_threads)
            np.testing.assert_allclose(res.ramp_pos, V.T @ rho(s), rtol=0, atol=1e-13)
            np.testing.assert_allclose(res.ramp_neg, V.T @ rho(-s), rtol=0, atol=1e-13)
            np.testing.assert_array_equal(res.rates, V.T @ (s >= 0).astype(float))
            # r_p + r_n = W_a = 1 for every atom of a compiled problem
            np.testing.assert_allclose(res.ramp_pos + res.ramp_neg, 1.0, rtol=0, atol=1e-14)


def test_ramp_rates_minibatch_is_the_scaled_sum():
    X = np.array([[0.25], [-1.0], [2.0], [0.1]])
    atoms = AtomTable.from_membership(np.array([[1, 0], [1, 1], [0, 1], [1, 1]], bool))
    V = _membership(atoms)
    rows = np.array([0, 0, 3])  # n / len(rows) = 4/3
    s = X[:, 0] * 1.0 + 0.05
    res = ramp_rates(X, np.array([1.0]), 0.05, atoms, rows=rows)
    Vb = V[rows]
    np.testing.assert_allclose(res.ramp_pos, Vb.T @ rho(s[rows]) * 4 / 3, atol=1e-15)
    np.testing.assert_allclose(res.ramp_pos + res.ramp_neg, np.asarray(Vb.sum(axis=0)).ravel() * 4 / 3, atol=1e-15)


def test_problem2_rewrite_equals_C_r_minus_kappa():
    # sum_j [u+ rho(s) + u- rho(-s)] - (kappa + sum_j u-) == C r - kappa (methods_spec C.1, C.11 item 2)
    problem, train, unl = several_datasets_problem(4)
    spec = spec_from_problem(problem)
    rows = np.vstack([spec.c0, spec.C])
    U = problem_row_coefficients(spec, rows)
    rng = np.random.default_rng(5)
    theta = rng.normal(size=spec.n_features)
    b = 0.1
    r = np.zeros(spec.n_atoms)
    lhs = np.zeros(rows.shape[0])
    for blk in spec.blocks:
        r[blk.atom_ids] = ramp_rates(blk.X, theta, b, blk.atoms).ramp_pos
        s = blk.X.data @ theta + b
        u = U[blk.name]
        up, un = np.maximum(u, 0), np.maximum(-u, 0)
        lhs += up.T @ rho(s) + un.T @ rho(-s) - un.sum(axis=0)
    cons = lhs[1:] - spec.kappa
    np.testing.assert_allclose(cons, spec.C @ r - spec.kappa, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lhs[0] + spec.const0, spec.c0 @ r + spec.const0, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- 2. the majorizer and MM

import rateopt  # noqa: E402
from rateopt._methods._cutting_plane import cutting_plane, localization_polygon, polygon_centroid  # noqa: E402
from rateopt._methods._ramp_majorizer import MMStep as _Step  # noqa: E402
from rateopt._methods._ramp_majorizer import RampData as _RampData  # noqa: E402
from rateopt.exceptions import RateoptError  # noqa: E402


def groups_problem(constraints, n=1500, seed=0):
    X, y, group = rateopt.make_groups_dataset(n, random_state=seed)
    ds = rateopt.Dataset(X, y, groups={"group": group})
    ctx = ds.context()
    a, b = ctx.subset(group="group", value="A"), ctx.subset(group="group", value="B")
    return rateopt.Problem(constraints=constraints(ctx, a, b), datasets=ds), ds


PPR = rateopt.positive_prediction_rate
FAIR = lambda ctx, a, b: [PPR(a) <= 0.6 * PPR(b)]  # noqa: E731 - binding on the demo data
TWO = lambda ctx, a, b: [PPR(a) <= 0.8 * PPR(b), rateopt.true_positive_rate(ctx) >= 0.9]  # noqa: E731


@pytest.mark.parametrize("rule", ["net", "atom"])
def test_majorizer_bounds_the_ramp_and_touches_it_at_the_anchor(rule):
    problem, _, _ = several_datasets_problem(6)
    spec = spec_from_problem(problem)
    data = _RampData(spec, rule, 0.01, "regularized", 1.0)
    rng = np.random.default_rng(7)
    for _ in range(30):
        anchor = rng.normal(scale=rng.choice([0.2, 1.0, 3.0]), size=data.n)
        M0 = data.majorized(anchor, anchor)
        np.testing.assert_allclose(M0, data.problem2(anchor), rtol=0, atol=1e-13)
        for _ in range(5):
            s = rng.normal(scale=rng.choice([0.2, 1.0, 3.0]), size=data.n)
            assert np.all(data.majorized(s, anchor) >= data.problem2(s) - 1e-13)
    # row level: m+ >= rho, m- >= rho(-.), equal at the anchor, on a fine grid
    grid = np.linspace(-3, 3, 601)
    for a in np.linspace(-2, 2, 41):
        mp = np.maximum(0, 0.5 + grid) if a <= 0.5 else np.ones_like(grid)
        mn = np.maximum(0, 0.5 - grid) if a >= -0.5 else np.ones_like(grid)
        assert np.all(mp >= rho(grid)) and np.all(mn >= rho(-grid))
        assert (max(0, 0.5 + a) if a <= 0.5 else 1.0) == rho(a)
        assert (max(0, 0.5 - a) if a >= -0.5 else 1.0) == rho(-a)


def test_net_majorizer_is_no_looser_than_the_per_atom_one():
    # Overlapping atoms (tpr(women) vs tpr(all)): the per-constraint net rule is tighter.
    problem, _, _ = several_datasets_problem(8)
    spec = spec_from_problem(problem)
    net = _RampData(spec, "net", 0.01, "regularized", 1.0)
    atom = _RampData(spec, "atom", 0.01, "regularized", 1.0)
    rng = np.random.default_rng(9)
    gaps = []
    for _ in range(20):
        anchor, s = rng.normal(size=net.n), rng.normal(size=net.n)
        Mn, Ma = net.majorized(s, anchor), atom.majorized(s, anchor)
        assert np.all(Mn <= Ma + 1e-13)
        gaps.append(np.max(Ma - Mn))
        np.testing.assert_allclose(net.problem2(s), atom.problem2(s), atol=1e-13)
    assert max(gaps) > 1e-3  # and strictly so somewhere


def _lagrangian(res, v):
    return res.ramp_objectives + res.regularizers + res.ramp_constraints @ v


def test_mm_with_fixed_multipliers_never_increases_the_lagrangian():
    problem, _ = groups_problem(TWO)
    v = np.array([0.3, 0.2])
    res = rateopt.ramp_mm(problem, multipliers=v, max_iter=8, tol=0.0)
    L = _lagrangian(res, v)
    assert len(L) >= 5
    gaps = [i["gap"] for i in res.info]
    for t in range(1, len(L)):  # each step: exact SVM on a majorizer of the Lagrangian (up to its gap)
        assert L[t] <= L[t - 1] + gaps[t - 1] + 1e-12
    assert L[-1] < L[0] - 0.1


@pytest.mark.parametrize("rule", ["net", "atom"])
@pytest.mark.parametrize("constraints", [FAIR, TWO], ids=["fairness", "two"])
def test_constrained_mm_is_monotone_and_feasible(rule, constraints):
    problem, ds = groups_problem(constraints)
    res = rateopt.ramp_mm(problem, rule=rule, max_iter=8, tol=0.0)
    obj = res.ramp_objectives + res.regularizers
    assert len(obj) >= 5
    assert np.all(np.diff(obj) <= 1e-12)
    assert np.all(res.ramp_constraints <= res.settings["feas_tol"])
    assert obj[-1] < obj[0] - 0.05  # real progress from the start
    # the constraint binds: a positive multiplier, a nearly tight ramp constraint
    assert res.multipliers[-1, 1] > 0 and res.ramp_constraints[-1].max() > -1e-3
    # the records are Problem 2 evaluated independently (numpy on the scores)
    s = ds.X @ res.weights[-1] + res.biases[-1]
    ev = problem.evaluate(rho(s), kind="probabilities")
    np.testing.assert_allclose(ev.constraints_array if hasattr(ev, "constraints_array") else
                               np.array(list(ev.constraints.values())), res.ramp_constraints[-1], atol=1e-12)
    # the deterministic classifier: its 0-1 records are its decisions' rates
    clf = res.classifier("deterministic")
    np.testing.assert_allclose(problem.evaluate(clf.predict(ds.X)).objective, res.objectives[-1], atol=1e-12)


def test_the_constraint_changes_the_solution():
    problem, ds = groups_problem(FAIR)
    free, _ = groups_problem(lambda ctx, a, b: [])
    r_free = rateopt.ramp_mm(free, max_iter=8)
    r_con = rateopt.ramp_mm(problem, max_iter=8)
    ctx = ds.context()
    s_free = ds.X @ r_free.weights[-1] + r_free.biases[-1]
    g_free = problem.evaluate(rho(s_free), kind="probabilities").max_violation
    assert g_free > 0.01  # the unconstrained ramp solution violates the fairness ratio
    assert (r_con.ramp_objectives[-1] + r_con.regularizers[-1]) > (r_free.ramp_objectives[-1]
                                                                  + r_free.regularizers[-1])
    del ctx


# --------------------------------------------------------------------------- Algorithm 2: the cutting plane


def test_cutting_plane_matches_a_brute_force_grid_on_m1():
    problem, _ = groups_problem(FAIR)
    spec = spec_from_problem(problem)
    data = _RampData(spec, "net", 2.0 / 1500, "regularized", 1.0)
    anchor_scores = np.zeros(data.n)  # w = 0: feasible
    step = _Step(data, anchor_scores, inner_tol=1e-10, max_epochs=100_000, random_state=0)
    anchor = step.candidate(np.zeros(data.X.n_features), 0.0)
    V = np.array([2.0])

    def oracle(v):
        c, lower, _ = step.solve(np.concatenate([[1.0], v]))
        return c.f, c.g, lower

    cp = cutting_plane(oracle, [(anchor.f, anchor.g)], V, tol=1e-8, max_cuts=60)
    cp["v"] = np.concatenate([[1.0], cp["v"]])
    grid = np.linspace(0.0, 2.0, 81)
    F = []
    for v in grid:
        c, lower, _ = step.solve(np.array([1.0, v]))
        F.append((lower, c.f + c.g[0] * v))  # F(v) lies in [dual, primal]
    lo = max(f[0] for f in F)
    c, lower, _ = step.solve(cp["v"])
    c_primal = c.f + c.g[0] * cp["v"][1]
    assert cp["L"] <= c_primal + 1e-12  # L is a dual value at cp["v"]: a lower bound on F there, so on max F
    assert cp["U"] >= lo - 1e-12  # U bounds F(v) >= its dual value at every grid point
    assert cp["U"] - cp["L"] <= 1e-8 * max(1.0, abs(cp["L"]))
    assert cp["L"] >= lo - 1e-7  # and the grid cannot beat the optimum found
    v_grid = grid[int(np.argmax([f[0] for f in F]))]
    assert abs(cp["v"][1] - v_grid) <= 2 * (grid[1] - grid[0]) + 1e-3
    assert cp["v"][1] > 0  # the constraint binds
    assert np.all(np.diff(cp["L_hist"]) >= 0) and np.all(np.diff(cp["U_hist"]) <= 1e-12)


def _pwl_oracle(A, c):
    """F(v) = min_k (c_k + A_k . v): a concave piecewise-linear function with exact cuts."""
    def oracle(v):
        vals = c + A @ v
        k = int(np.argmin(vals))
        return c[k], A[k], float(vals[k])
    return oracle


@pytest.mark.parametrize("m", [1, 2, 3])
def test_cutting_plane_brackets_a_known_maximum_and_shrinks(m):
    rng = np.random.default_rng(m)
    v_star = rng.uniform(0.2, 0.8, size=m)
    # pieces through (v_star, 1) with slopes spanning every direction: maximum exactly 1 at v_star
    K = 4 * m + 4
    A = rng.normal(size=(K, m))
    A[:m] = np.eye(m)
    A[m:2 * m] = -np.eye(m)
    c = 1.0 - A @ v_star
    V = np.ones(m)
    counts = []
    for tol in (1e-2, 1e-4, 1e-6, 1e-8):
        cp = cutting_plane(_pwl_oracle(A, c), [], V, tol=tol, max_cuts=400)
        assert cp["L"] <= 1.0 + 1e-12 <= cp["U"] + 2e-12
        assert cp["U"] - cp["L"] <= tol * max(1.0, abs(cp["L"]))
        assert np.all(np.diff(cp["L_hist"]) >= 0) and np.all(np.diff(cp["U_hist"]) <= 1e-12)
        counts.append(cp["n_calls"])
    # O(m log 1/eps): at most linear growth in log(1/eps) (each 100x tightening adds a bounded count)
    assert counts == sorted(counts)
    steps = np.diff(counts)
    assert max(steps) <= 12 * m + 10


def test_centroid_of_the_localization_polygon_matches_numeric_integration():
    rng = np.random.default_rng(11)
    for _ in range(10):
        cuts = [(float(rng.uniform(0.5, 1.5)), np.array([rng.normal()])) for _ in range(4)]
        V, L = 2.0, -1.0
        U = max(min(f + g[0] * v for f, g in cuts) for v in np.linspace(0, V, 2001))
        poly = localization_polygon(cuts, V, L, U)
        area, (cv, cz) = polygon_centroid(poly)
        vs = np.linspace(0, V, 4001)[:-1] + V / 8000  # midpoint rule on the vertical slices
        h = np.minimum(np.min([f + g[0] * vs for f, g in cuts], axis=0), U)
        height = np.maximum(h - L, 0.0)
        dv = V / 4000
        area_num = height.sum() * dv
        cv_num = (vs * height).sum() * dv / area_num
        cz_num = ((L + h) / 2 * height).sum() * dv / area_num
        assert area == pytest.approx(area_num, rel=1e-5)
        assert cv == pytest.approx(cv_num, abs=1e-5)
        assert cz == pytest.approx(cz_num, abs=1e-5)


# --------------------------------------------------------------------------- 3. the feasible start


def test_infeasible_zero_start_is_shifted_into_feasibility():
    # recall >= 0.9: at w = 0 every ramp rate is 1/2, so w = 0 is infeasible
    problem, _ = groups_problem(lambda ctx, a, b: [rateopt.true_positive_rate(ctx) >= 0.9])
    res = rateopt.ramp_mm(problem, max_iter=4)
    assert res.settings["start"] in ("shifted", "phase-1")
    assert np.all(res.ramp_constraints <= res.settings["feas_tol"])
    assert np.all(np.diff(res.ramp_objectives + res.regularizers) <= 1e-12)


def test_no_feasible_start_names_the_constraints():
    problem, _ = groups_problem(lambda ctx, a, b: [PPR(ctx) >= 0.7, PPR(ctx) <= 0.3])
    with pytest.raises(RateoptError, match=r"no Problem-2 feasible start.*ppr\[all\] >= 0.7"):
        rateopt.ramp_mm(problem, max_iter=2)


def test_infeasible_given_start_is_refused():
    problem, ds = groups_problem(FAIR)
    with pytest.raises(RateoptError, match="not Problem-2 feasible"):
        rateopt.ramp_mm(problem, start=(np.zeros(ds.X.shape[1]), 2.0))  # everyone positive: ratio 1 > 0.6


# --------------------------------------------------------------------------- 4. the classifiers


def test_randomized_classifier_rates_are_the_ramp_rates(tmp_path):
    problem, ds = groups_problem(FAIR)
    res = rateopt.ramp_mm(problem, max_iter=5)
    clf = res.classifier("randomized")
    assert isinstance(clf, rateopt.RampClassifier)
    p = clf.predict_proba(ds.X)[:, 1]
    s = ds.X @ res.weights[-1] + res.biases[-1]
    np.testing.assert_array_equal(p, rho(s))
    # exact expected rates: Problem-2 values of the last iterate
    ev = problem.evaluate(p, kind="probabilities")
    np.testing.assert_allclose(list(ev.constraints.values()), res.ramp_constraints[-1], atol=1e-12)
    # by counting: the sampled rule's constraint averages to the ramp value within 3 sigma
    draws = np.array([list(problem.evaluate(clf.predict(ds.X, random_state=k)).constraints.values())[0]
                      for k in range(200)])
    assert abs(draws.mean() - res.ramp_constraints[-1, 0]) <= 3 * draws.std(ddof=1) / np.sqrt(len(draws))
    # the draw is keyed on the row: the same decisions in any order
    perm = np.random.default_rng(0).permutation(ds.X.shape[0])
    np.testing.assert_array_equal(clf.predict(ds.X[perm], random_state=5), clf.predict(ds.X, random_state=5)[perm])
    # save / load, pickle-free
    path = tmp_path / "ramp.npz"
    clf.save(path)
    back = rateopt.load(path)
    assert isinstance(back, rateopt.RampClassifier)
    np.testing.assert_array_equal(back.predict_proba(ds.X)[:, 1], p)
    np.testing.assert_array_equal(back.predict(ds.X, random_state=3), clf.predict(ds.X, random_state=3))
    det = res.classifier("deterministic")
    np.testing.assert_array_equal(det.predict(ds.X), (s >= 0).astype(int))


def test_kernel_model_trains_unchanged():
    problem, ds = groups_problem(FAIR, n=400)
    res = rateopt.ramp_mm(problem, rateopt.KernelModel(kernel="rbf", gamma=0.5, n_components=50, random_state=0),
                          max_iter=4)
    assert np.all(res.ramp_constraints <= res.settings["feas_tol"])
    assert np.all(np.diff(res.ramp_objectives + res.regularizers) <= 1e-12)
    clf = res.classifier("randomized")
    ev = problem.evaluate(clf.predict_proba(ds.X)[:, 1], kind="probabilities")
    np.testing.assert_allclose(list(ev.constraints.values()), res.ramp_constraints[-1], atol=1e-9)



def _assert_same_ramp_result(back, res, X):
    assert type(back) is rateopt.RampMMResult and back.method == "ramp-mm"
    for name in ("weights", "biases", "multipliers", "atom_rates", "objectives", "constraints", "ramp_atom_rates",
                 "ramp_objectives", "ramp_constraints", "regularizers"):
        np.testing.assert_array_equal(getattr(back, name), getattr(res, name), err_msg=name)
    assert back.info == res.info and back.settings == res.settings and back.n_iter == res.n_iter
    assert back.constraint_names == res.constraint_names
    for kind in ("deterministic", "randomized"):
        np.testing.assert_array_equal(back.classifier(kind).predict_proba(X), res.classifier(kind).predict_proba(X))


def test_ramp_result_save_load_keeps_the_ramp_records(tmp_path):
    problem, ds = groups_problem(TWO)
    res = rateopt.ramp_mm(problem, max_iter=3)
    assert len(res.info) >= 1 and "L_hist" in res.info[0]
    path = tmp_path / "mm.npz"
    res.save(path)
    back = rateopt.load(path)
    _assert_same_ramp_result(back, res, ds.X)
    # what the records are for: Problem 2's values (the randomized rule's exact expected rates)
    ev = problem.evaluate(back.classifier("randomized").predict_proba(ds.X)[:, 1], kind="probabilities")
    np.testing.assert_allclose(list(ev.constraints.values()), back.ramp_constraints[-1], atol=1e-12)
    # a plain TrainResult still loads as one
    plain = rateopt.train(problem, method="proxy-swap", n_iter=20)
    plain.save(tmp_path / "plain.npz")
    assert type(rateopt.load(tmp_path / "plain.npz")) is rateopt.TrainResult
    # no pickle anywhere in the file
    with np.load(path, allow_pickle=False) as z:
        assert {"ramp_atom_rates", "regularizers"} <= set(z.files)


def test_ramp_result_save_load_kernel_model(tmp_path):
    problem, ds = groups_problem(FAIR, n=300)
    res = rateopt.ramp_mm(problem, rateopt.KernelModel(kernel="rbf", gamma=0.5, n_components=30, random_state=0),
                          max_iter=2)
    res.save(tmp_path / "k.npz")
    _assert_same_ramp_result(rateopt.load(tmp_path / "k.npz"), res, ds.X)


def _rewrite(path, out, meta_update=None, **arrays):
    import json

    from rateopt._utils._archive import META_KEY, write_archive

    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(bytes(z[META_KEY]).decode())
        data = {k: z[k] for k in z.files if k != META_KEY}
    meta.update(meta_update or {})
    data.update(arrays)
    for k in [k for k, v in data.items() if v is None]:
        del data[k]
    fmt = meta.pop("format")
    meta.pop("version")
    write_archive(out, meta, data, fmt)


@pytest.mark.parametrize("change, match", [
    (dict(ramp_atom_rates=np.zeros((1, 2))), "field 'ramp_atom_rates' has shape"),
    (dict(ramp_atom_rates=None), "field 'ramp_atom_rates' is missing"),
    (dict(regularizers=np.array([np.nan])), "field 'regularizers'"),
    (dict(meta_update={"info": {"not": "a list"}}), "field 'metadata.info'"),
])
def test_damaged_ramp_result_files_name_the_field(tmp_path, change, match):
    problem, _ = groups_problem(FAIR, n=300)
    res = rateopt.ramp_mm(problem, max_iter=1)
    res.save(tmp_path / "ok.npz")
    _rewrite(tmp_path / "ok.npz", tmp_path / "bad.npz", **change)
    with pytest.raises(RateoptError, match=match):
        rateopt.load(tmp_path / "bad.npz")


def test_ramp_rates_outside_0_1_are_refused_naming_the_field(tmp_path):
    problem, _ = groups_problem(FAIR, n=300)
    res = rateopt.ramp_mm(problem, max_iter=1)
    res.save(tmp_path / "ok.npz")
    R = res.ramp_atom_rates.copy()
    R[0, 0] = 3.0
    _rewrite(tmp_path / "ok.npz", tmp_path / "bad.npz", ramp_atom_rates=R)
    with pytest.raises(RateoptError, match=r"field 'ramp_atom_rates' holds 3\.0 at index \[0, 0\], expected rates "
                                           r"in \[0, 1\]"):
        rateopt.load(tmp_path / "bad.npz")


# --------------------------------------------------------------------------- 5. win/change ratio floor


@pytest.mark.parametrize("k", [0.0, 0.3, 0.5, 0.8, 1.0])
@pytest.mark.parametrize("group", [None, "sex"])
def test_win_change_ratio_floor_matches_counting(k, group):
    from rateopt import goals as G

    goal = G.win_change_ratio_floor(k, group)
    for seed in range(3):
        ds, rec = make_data(seed)
        y, b, w = np.array(rec["y"]), np.array(rec["b"]), np.array(rec["w"])
        d = np.random.default_rng(seed + 50).integers(0, 2, rec["n"])
        ev = Problem(objective=0.0, constraints=[goal], datasets=ds).evaluate(d)
        keys = [None] if group is None else sorted(set(rec["sex"]))
        want = []
        for key in keys:
            inside = np.ones(rec["n"], bool) if key is None else np.array(rec["sex"]) == key
            W = w[inside].sum()
            wins = w[inside & (d == y) & (d != b)].sum()
            changes = w[inside & (d != b)].sum()
            want.append((k * changes - wins) / W)
            if changes > 0:  # <= 0 exactly when wins / changes >= k
                assert (want[-1] <= 1e-15) == (wins / changes >= k - 1e-15)
        assert list(ev.constraints) == [c.name for c in goal.bind(ds)]
        np.testing.assert_allclose(list(ev.constraints.values()), want, rtol=0, atol=1e-13)
    with pytest.raises(ValueError):
        G.win_change_ratio_floor(1.5)


def test_docstring_examples_run():
    import doctest

    import rateopt._predictors._linear
    import rateopt._methods._ramp

    for obj in (rateopt._methods._ramp.ramp_mm, rateopt._predictors._linear.RampClassifier, rateopt.core.ramp_rates):
        finder = doctest.DocTestFinder()
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        for t in finder.find(obj, globs={}):
            runner.run(t)
        assert runner.tries > 0 and runner.failures == 0, obj


def test_guide_ramp_example_runs(capsys):
    import pathlib

    from _doc_examples import run_blocks

    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "ramp.md"
    if not page.exists():
        pytest.skip("not run from a source checkout")
    namespace = run_blocks(page)
    mm, X, ratio = namespace["mm"], namespace["Xf"], namespace["ratio"]
    assert np.all(mm.ramp_constraints <= mm.settings["feas_tol"])
    assert mm.multipliers[-1, 1] > 0  # the ratio binds
    assert "deterministic: error" in capsys.readouterr().out
    # the randomized rule's expected ratio constraint is the ramp value, by its probabilities
    p = namespace["randomized"].predict_proba(X)[:, 1]
    assert ratio.evaluate(p, kind="probabilities").max_violation <= 1e-9


# --------------------------------------------------------------------------- Algorithm 3: the bias cutting plane

from rateopt._methods._cutting_plane import bias_cutting_plane  # noqa: E402


def _pwl_convex(a, g):
    """A convex piecewise-linear G(b) = max_s (a_s + g_s b), its exact oracle (primal = dual = G)."""
    def G(b):
        return float(np.max(a + g * b))

    def solve_at(b):
        k = int(np.argmax(a + g * b))
        return G(b), G(b), float(g[k]), b

    return G, solve_at


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bias_cutting_plane_brackets_the_minimum_of_a_known_convex_function(seed):
    rng = np.random.default_rng(seed)
    g = np.sort(rng.normal(size=12)) * 3
    a = rng.normal(size=12)
    G, solve_at = _pwl_convex(a, g)
    R = 5.0
    # brute force: the minimum of a max of lines is at an end or where two lines cross
    cross = [(a[j] - a[i]) / (g[i] - g[j]) for i in range(12) for j in range(i + 1, 12) if g[i] != g[j]]
    brute = min(G(b) for b in [-R, R] + [b for b in cross if -R <= b <= R])
    assert brute <= np.max(a[:, None] + g[:, None] * np.linspace(-R, R, 10_001)[None, :], axis=0).min()
    out = bias_cutting_plane(solve_at, R, tol=1e-10, max_cuts=80)
    assert out["converged"]
    assert out["L"] <= brute + 1e-12 and brute <= out["U"] + 1e-12  # the minimum is within the bracket
    assert out["U"] - out["L"] <= 1e-10 * max(1, abs(out["U"]))
    assert G(out["b"]) == pytest.approx(out["U"]) and out["best"] == out["b"]
    assert np.all(np.diff(out["L_hist"]) >= -1e-12) and np.all(np.diff(out["U_hist"]) <= 0)
    assert out["n_calls"] <= 40  # a centre-of-mass cut shrinks the polygon geometrically


def _fixed_v_step(bias, bias_scale=1.0, n=400):
    problem, _ = groups_problem(TWO, n=n)
    spec = spec_from_problem(problem)
    data = _RampData(spec, "net", 0.02, bias, bias_scale)
    rng = np.random.default_rng(3)
    anchor = 0.8 * rng.normal(size=data.n)  # some rows saturated on both sides
    step = _Step(data, anchor, inner_tol=1e-10, max_epochs=100_000, random_state=0)
    return data, step, np.array([1.0, 0.4, 0.7])


def test_free_bias_svm_matches_a_brute_force_scan_over_b():
    from rateopt.core import sdca_two_sided_hinge

    data, step, v = _fixed_v_step("unregularized")
    cand, lower, _ = step.solve(v)
    A = data.n * np.where(step.pmask, data.P @ v, 0.0)
    B = data.n * np.where(step.nmask, data.N @ v, 0.0)
    const = float(v @ step.gamma_check)
    F = lambda b: sdca_two_sided_hinge(data.X, A, B, lam=data.lam, tau=0.5, beta=b, tol=1e-12).primal - const  # noqa
    bs = np.linspace(cand.bias - 0.5, cand.bias + 0.5, 41)
    scan = np.array([F(b) for b in bs])
    value = cand.f + float(v[1:] @ cand.g)  # Psi at the candidate: majorized objective + regularizer + v . g
    assert lower <= scan.min() + 1e-9  # a valid lower bound on min_{w, b} Psi
    assert value <= scan.min() + 1e-7  # and the candidate is at least as good as every scanned bias
    assert value - lower <= 1e-6
    assert step.n_bias_solves >= 3
    # refining the scan around the candidate's bias finds nothing better either
    fine = np.array([F(b) for b in cand.bias + np.linspace(-0.02, 0.02, 9)])
    assert value <= fine.min() + 1e-7


def test_free_bias_is_the_limit_of_a_vanishing_bias_penalty():
    data, free, v = _fixed_v_step("unregularized")
    c_free, _, _ = free.solve(v)
    psi = lambda c: c.f + float(v[1:] @ c.g)  # noqa: E731 (c.f holds each mode's own regularizer)
    for scale in (1.0, 3.0):  # the penalty lam/2 (b / scale)^2 vanishes as the constant feature grows
        _, reg, _ = _fixed_v_step("regularized", bias_scale=scale)
        c_reg, _, _ = reg.solve(v)
        assert reg.n_inexact == 0 and free.n_inexact == 0
        # Psi_free(free) <= Psi_free(reg) <= Psi_reg(reg) <= Psi_reg(free) = Psi_free(free) + lam/2 (b_free/scale)^2
        excess = psi(c_reg) - psi(c_free)
        assert -1e-7 <= excess <= 0.5 * data.lam * (c_free.bias / scale) ** 2 + 1e-7


def test_mm_with_unregularized_bias_is_monotone_and_feasible():
    problem, ds = groups_problem(FAIR, n=300)
    res = rateopt.ramp_mm(problem, bias="unregularized", max_iter=2, tol=0.0, cut_tol=1e-4, inner_tol=1e-6, max_cuts=8)
    obj = res.ramp_objectives + res.regularizers
    assert np.all(np.diff(obj) <= 1e-12) and obj[-1] < obj[0] - 0.05
    assert np.all(res.ramp_constraints <= res.settings["feas_tol"])
    np.testing.assert_allclose(res.regularizers, [0.5 * res.settings["lam"] * w @ w for w in res.weights], rtol=1e-12)
    assert all(i["n_bias_solves"] >= i["n_solves"] for i in res.info)
    assert res.settings["bias"] == "unregularized"
    with pytest.raises(ValueError, match="bias must be one of"):
        rateopt.ramp_mm(problem, bias="free")
