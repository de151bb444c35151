"""Compilation to atom tables and evaluation (rateopt._compiler._problem)."""

import inspect
import pickle

import numpy as np
import pytest

from _rate_reference import brute, make_data, member_list, random_predictions
from rateopt._language import _rates as R
from rateopt import goals as G
from rateopt._language._data import Dataset
from rateopt._language._expressions import RateLeaf
from rateopt._compiler._problem import LOWERING_RULES, CompiledProblem, Problem
from rateopt.exceptions import (
    ConstantConstraintError,
    EmptySubsetError,
    MissingBaselineError,
    MissingLabelsError,
    RateoptError,
)

TOL = 1e-12


def brute_atom(rec, member, v):
    num = den = 0.0
    for j in range(rec["n"]):
        if member[j]:
            num += rec["w"][j] * v[j]
            den += rec["w"][j]
    return num / den


def problem_and_members(seed=0):
    """A problem with overlapping subsets on two datasets, and the brute-force
    membership of every subset it should produce an atom for."""
    train, rec = make_data(seed)
    unl, rec_u = make_data(seed + 1, n=50, labels=False, name="unlabeled")
    ctx, uctx = train.context(), unl.context()
    women = ctx.subset(group="sex", value="F")
    old = ctx.subset(train.groups["age"] > 40, name="old")
    cons = [
        R.true_positive_rate(women) >= R.true_positive_rate(ctx) - 0.05,
        0.5 * R.false_positive_rate(old) - R.positive_prediction_rate(women | old) <= 0.2,
        R.churn_rate(uctx.subset(group="race", value="b")) <= 0.1,
        R.positive_prediction_rate(uctx) >= 0.2,
    ]
    members = {
        ("train", "y=1"): lambda r, j: r["y"][j] == 1,
        ("train", "y=0"): lambda r, j: r["y"][j] == 0,
        ("train", "sex=F & y=1"): lambda r, j: r["sex"][j] == "F" and r["y"][j] == 1,
        ("train", "old & y=0"): lambda r, j: r["age"][j] > 40 and r["y"][j] == 0,
        ("train", "sex=F | old"): lambda r, j: r["sex"][j] == "F" or r["age"][j] > 40,
        ("unlabeled", "race=b & baseline=1"): lambda r, j: r["race"][j] == "b" and r["b"][j] == 1,
        ("unlabeled", "race=b & baseline=0"): lambda r, j: r["race"][j] == "b" and r["b"][j] == 0,
        ("unlabeled", "all"): lambda r, j: True,
    }
    return Problem(constraints=cons, regularization=1e-3), (train, rec), (unl, rec_u), members


def test_compiled_structure_and_tables():
    p, (train, rec), (unl, rec_u), members = problem_and_members()
    cp = p.compiled
    assert isinstance(cp, CompiledProblem)
    assert cp.datasets == ("train", "unlabeled")
    assert p.regularization == 1e-3
    assert cp.n_atoms == len(members) and cp.n_constraints == 4
    recs = {"train": rec, "unlabeled": rec_u}
    for name in cp.datasets:
        t = cp.tables[name]
        r = recs[name]
        # the core's narrow layout, written directly: int32 row pointers, uint8 ids (fewer than 256 atoms)
        assert t.indptr.dtype == np.int32 and t.indptr.shape == (r["n"] + 1,)
        assert t.indices.dtype == np.uint8 and t.weights.dtype == np.float64
        assert t.indptr[0] == 0 and t.indptr[-1] == t.indices.size == t.weights.size
        assert np.all(np.diff(t.indptr) >= 0)
        assert not t.weights.flags.writeable and not cp.C.B.data.flags.writeable
        # contiguous global numbering
        assert t.atom_ids.tolist() == list(range(t.offset, t.offset + t.n_atoms))
        for a in cp.atoms:
            if a.dataset != name:
                continue
            assert cp.atom_dataset[a.index] == cp.datasets.index(name)
            assert cp.atom_local[a.index] == a.local_index
            member = member_list(r, members[(name, a.subset.removeprefix(f"{name}:"))])
            W = sum(r["w"][j] for j in range(r["n"]) if member[j])
            for j in range(r["n"]):  # brute-force row-by-row check of the CSR table
                row = t.indices[t.indptr[j]:t.indptr[j + 1]].tolist()
                assert row == sorted(row)
                if member[j]:
                    k = row.index(a.local_index)
                    wj = t.weights[t.indptr[j] + k]
                    assert abs(wj - r["w"][j] / W) <= TOL
                else:
                    assert a.local_index not in row
            assert a.n_members == sum(member) and abs(a.total_weight - W) <= 1e-12
    assert [a.name for a in cp.atoms][:2] == ["ppr[y=1]", "ppr[y=0]"]


def test_coefficients_offsets_and_evaluation_match_brute_force():
    p, (train, rec), (unl, rec_u), members = problem_and_members(1)
    cp = p.compiled
    for pk in ("decisions", "scores", "probabilities"):
        pt, vt = random_predictions(3, rec["n"], pk)
        pu, vu = random_predictions(4, rec_u["n"], pk)
        kind = "probabilities" if pk == "probabilities" else "auto"
        ev = p.evaluate({"train": pt, unl: pu}, kind=kind)
        vals = {"train": (rec, vt), "unlabeled": (rec_u, vu)}
        atom = {}
        for a in cp.atoms:
            r, v = vals[a.dataset]
            atom[a.subset] = brute_atom(r, member_list(r, members[(a.dataset, a.subset.split(":")[-1])]), v)
            assert abs(ev.atom_rates[a.index] - atom[a.subset]) <= TOL
        n = rec["n"]
        pi1 = sum(rec["w"][j] for j in range(n) if rec["y"][j] == 1) / sum(rec["w"])
        # default objective: training error = pi1 (1 - p+(y=1)) + pi0 p+(y=0)
        assert abs(ev.objective - brute("error", rec, [True] * n, vt)) <= TOL
        c0 = dict(zip([a.subset for a in cp.atoms], cp.objective_coef))
        assert abs(c0["y=1"] + pi1) <= TOL and abs(c0["y=0"] - (1 - pi1)) <= TOL
        assert abs(cp.objective_constant - pi1) <= TOL
        # constraint rows: known coefficients and offsets
        col = {a.subset: a.index for a in cp.atoms}
        C, kappa = cp.C, cp.kappa
        assert C[0, col["sex=F & y=1"]] == -1 and C[0, col["y=1"]] == 1 and kappa[0] == 0.05
        assert C[1, col["old & y=0"]] == 0.5 and C[1, col["sex=F | old"]] == -1 and kappa[1] == 0.2
        assert np.count_nonzero(C[:2]) == 4
        assert C[3, col["unlabeled:all"]] == -1 and kappa[3] == -0.2
        want = [
            atom["y=1"] - 0.05 - atom["sex=F & y=1"],
            0.5 * atom["old & y=0"] - atom["sex=F | old"] - 0.2,
            brute("churn", rec_u, member_list(rec_u, lambda r, j: r["race"][j] == "b"), vu) - 0.1,
            0.2 - atom["unlabeled:all"],
        ]
        np.testing.assert_allclose(list(ev.constraints.values()), want, rtol=0, atol=TOL)
        np.testing.assert_allclose(C @ ev.atom_rates - kappa, want, rtol=0, atol=TOL)
        assert ev.violations == {k: max(0.0, g) for k, g in ev.constraints.items()}
        assert abs(ev.max_violation - max(0.0, *want)) <= TOL
        assert ev.is_feasible() == (max(want) <= 0)
        assert abs(ev.rates["tpr[sex=F]"] - atom["sex=F & y=1"]) <= TOL
        assert abs(ev.rates["ppr[unlabeled:all]"] - atom["unlabeled:all"]) <= TOL
        assert "error[all]" in ev.rates and "fpr[old]" in ev.rates
        again = p.evaluate_atom_rates(ev.atom_rates)
        assert again.constraints == ev.constraints and again.objective == ev.objective


def test_identical_atoms_are_merged():
    ds, rec = make_data(2)
    ctx = ds.context()
    y1_mask = ctx.subset(ds.y == 1, name="labeled positive")
    p = Problem(
        objective=R.true_positive_rate(ctx),
        constraints=[
            R.positive_prediction_rate(ctx.positive()) <= 0.9,
            R.positive_prediction_rate(y1_mask) - 0.5 * R.false_negative_rate(ctx) >= 0.1,
            R.true_positive_rate(ctx.subset(group="sex", value=["F", "M"])) <= 0.95,
        ],
    )
    cp = p.compiled
    assert cp.n_atoms == 1
    assert cp.atoms[0].name == "ppr[y=1]"
    assert set(cp.atoms[0].aliases) == {"labeled positive", "sex in {F, M} & y=1"}
    assert cp.tables["train"].indices.size == int(ds.y.sum())


def test_every_public_node_type_has_a_lowering_rule():
    public = [getattr(R, n) for n in R.__all__]
    node_types = [t for t in public if inspect.isclass(t) and issubclass(t, R.Expression)]

    def concrete(cls):
        out = {cls}
        for sub in cls.__subclasses__():
            out |= concrete(sub)
        return out

    all_nodes = set().union(*(concrete(t) for t in node_types))
    abstract = {R.Expression, RateLeaf, R.Rate}  # RateLeaf: the base of two- and K-class leaves
    missing = sorted(t.__name__ for t in all_nodes - abstract if t not in LOWERING_RULES)
    assert not missing, f"node types without a lowering rule: {missing}"
    assert len(all_nodes - abstract) >= 30
    # and every rate function builds a registered node
    ds, _ = make_data(0)
    for n in R.__all__:
        f = getattr(R, n)
        if inspect.isfunction(f) and n not in ("equal", "sum"):
            assert type(f(ds)) in LOWERING_RULES, n


# --------------------------------------------------------------------------- errors


def test_empty_subset_names_the_constraint_and_subset():
    ds, _ = make_data(0)
    ctx = ds.context()
    nobody = ctx.subset(np.zeros(ds.n_samples, dtype=bool), name="nobody")
    with pytest.raises(EmptySubsetError, match=r"constraint 'ppr\[nobody\] <= 0.5'.*subset 'nobody'.*empty"):
        Problem(constraints=[R.positive_prediction_rate(nobody) <= 0.5])
    with pytest.raises(EmptySubsetError, match=r"subset 'sex=X'.*empty"):
        Problem(constraints=[G.demographic_parity("sex", 0.1, values=["F", "X"])], datasets=ds)
    women_not_women = ctx.subset(group="sex", value="F") & ~ctx.subset(group="sex", value="F")
    with pytest.raises(EmptySubsetError, match=r"the objective: error\[sex=F & not\(sex=F\)\]"):
        Problem(objective=R.error_rate(women_not_women))
    # conditional rate on a subset without positives
    negs_only = ctx.negative().named("negatives")
    with pytest.raises(EmptySubsetError, match=r"tpr\[negatives\].*subset 'negatives & y=1'.*empty"):
        Problem(constraints=[R.true_positive_rate(negs_only) >= 0.5])


def test_zero_weight_subset():
    rng = np.random.default_rng(0)
    g = np.array(["a"] * 10 + ["b"] * 10)
    w = np.where(g == "a", 0.0, rng.uniform(0.5, 1, 20))
    ds = Dataset(np.zeros((20, 1)), y=np.arange(20) % 2, weights=w, groups={"g": g})
    a = ds.context().subset(group="g", value="a")
    with pytest.raises(EmptySubsetError, match=r"constraint 'ppr\[g=a\] >= 0.1'.*'g=a'.*weights sum to zero"):
        Problem(constraints=[R.positive_prediction_rate(a) >= 0.1])
    # zero-weight examples inside a subset of positive weight are fine
    p = Problem(constraints=[R.positive_prediction_rate(ds) >= 0.1])
    t = p.compiled.tables["train"]
    sums = np.bincount(t.indices, weights=t.weights, minlength=t.n_atoms)
    np.testing.assert_allclose(sums, 1.0, rtol=0, atol=TOL)
    ev = p.evaluate(g == "a")  # only zero-weight examples predicted positive
    assert ev.rates["ppr[all]"] == 0.0


def test_missing_labels_and_baseline():
    unl, _ = make_data(0, labels=False, baseline=False, name="unlabeled")
    ctx = unl.context()
    with pytest.raises(MissingLabelsError,
                       match=r"constraint 'tpr\[unlabeled:all\] >= 0.8'.*subset 'unlabeled:all'.*unlabeled"):
        Problem(objective=0.0, constraints=[R.true_positive_rate(ctx) >= 0.8])
    with pytest.raises(MissingLabelsError, match=r"constraint 'tpr\[unlabeled:sex=F\] <= tpr"):
        Problem(objective=0.0, constraints=[G.equal_opportunity("sex", 0.1, dataset="unlabeled")],
                datasets=[unl])
    with pytest.raises(MissingLabelsError, match="the objective: error"):
        Problem(constraints=[R.positive_prediction_rate(ctx) >= 0.2])  # default objective
    with pytest.raises(MissingBaselineError, match=r"constraint 'churn\[unlabeled:all\] <= 0.1'.*no baseline"):
        Problem(objective=0.0, constraints=[R.churn_rate(ctx) <= 0.1])
    # unlabeled data is fine for rates that need no labels
    p = Problem(objective=0.0, constraints=[G.demographic_parity("sex", 0.1)], datasets=unl)
    assert p.n_constraints == 4


def test_constant_constraints_are_refused():
    ds, _ = make_data(0)
    ctx = ds.context()
    same = ctx.subset(np.ones(ds.n_samples, dtype=bool), name="everyone")
    with pytest.raises(ConstantConstraintError,
                       match=r"constraint 'ppr\[all\] - ppr\[everyone\] <= 0.1' is constant.*'all'"):
        Problem(constraints=[R.positive_prediction_rate(ctx) - R.positive_prediction_rate(same) <= 0.1])
    with pytest.raises(ConstantConstraintError, match="is constant"):
        Problem(constraints=[(0.3 * R.true_positive_rate(ctx) - 0.1 * R.true_positive_rate(ctx)
                              - 0.2 * R.true_positive_rate(ctx)) <= 0.0])
    with pytest.raises(ConstantConstraintError, match=r"'prevalence\[all\] >= 0.2' is constant"):
        Problem(constraints=[R.prevalence(ctx) >= 0.2])
    with pytest.raises(ConstantConstraintError, match="'cap' is constant"):
        Problem(constraints=[(0 * R.positive_prediction_rate(ctx) <= 1).named("cap")])
    # a single-valued group: parity against the whole dataset cannot change
    mono = Dataset(np.zeros((6, 1)), y=[0, 1] * 3, groups={"g": ["x"] * 6})
    with pytest.raises(ConstantConstraintError, match=r"tpr\[g=x\]"):
        Problem(constraints=[G.equal_opportunity("g", 0.1)], datasets=mono)


def test_dataset_and_objective_errors():
    a, _ = make_data(0)
    b, _ = make_data(1)  # also named "train"
    with pytest.raises(RateoptError, match="two different datasets are both named 'train'"):
        Problem(constraints=[R.positive_prediction_rate(a) - R.positive_prediction_rate(b) <= 0.1,
                             R.positive_prediction_rate(a) >= 0.1])
    u1, _ = make_data(0, name="u1")
    u2, _ = make_data(1, name="u2")
    with pytest.raises(RateoptError, match="cannot choose the default objective"):
        Problem(constraints=[R.positive_prediction_rate(u1) >= 0.1, R.positive_prediction_rate(u2) >= 0.1])
    p = Problem(constraints=[R.positive_prediction_rate(u1) >= 0.1])  # one dataset: its error rate
    assert str(p.objective) == "error[u1:all]"
    with pytest.raises(RateoptError, match="cannot choose the default objective"):
        Problem()
    with pytest.raises(RateoptError, match="needs datasets to bind to"):
        Problem(constraints=[G.churn_cap(0.1)])
    with pytest.raises(TypeError, match="is an expression, not a constraint"):
        Problem(constraints=[R.positive_prediction_rate(a)])
    with pytest.raises(TypeError, match="must be Constraint objects or goals"):
        Problem(constraints=[0.3])
    with pytest.raises(TypeError, match="objective must be a rate expression"):
        Problem(objective=R.positive_prediction_rate(a) <= 0.2, constraints=[])
    with pytest.raises(RateoptError, match="regularization must be a non-negative"):
        Problem(objective=R.error_rate(a), regularization=-1.0)


def test_constraint_forms_names_and_inverse_data():
    ds, rec = make_data(3)
    ctx = ds.context()
    c1 = R.positive_prediction_rate(ctx) <= 0.3
    c2 = R.positive_prediction_rate(ctx) <= 0.3  # same default name
    goal = G.equal_opportunity("sex", 0.05)
    eq = R.equal(R.false_positive_rate(ctx), 0.2, 0.05, name="fpr band")
    p = Problem(constraints=[c1, [c2, eq], goal], datasets={"train": ds})
    names = p.constraint_names
    assert names[:4] == ("ppr[all] <= 0.3", "ppr[all] <= 0.3 #2", "fpr band (<=)", "fpr band (>=)")
    inv = p.compiled.inverse_data
    assert inv.row(c1) == 0 and inv.row(c2) == 1 and inv.row("fpr band (>=)") == 3
    assert inv.originals[1] is c2 and inv.constraints[1].name == "ppr[all] <= 0.3 #2"
    assert inv.sources[:4] == (None,) * 4 and all(s is goal for s in inv.sources[4:])
    assert len(names) == 8 and p.n_constraints == 8
    assert inv.by_name(np.arange(8.0))["fpr band (<=)"] == 2.0
    with pytest.raises(KeyError):
        inv.row(R.positive_prediction_rate(ctx) <= 0.1)
    # a single constraint or goal needs no list
    assert Problem(constraints=c1).n_constraints == 1
    assert Problem(constraints=goal, datasets=ds).n_constraints == 4


def test_evaluate_input_handling():
    ds, rec = make_data(4)
    unl0, _ = make_data(4, labels=False, name="u0")
    p = Problem(constraints=[R.positive_prediction_rate(ds) <= 0.5])
    n = rec["n"]
    s = np.linspace(-1, 1, n)
    base = p.evaluate(s)
    assert base.rates["ppr[all]"] == p.evaluate(s >= 0).rates["ppr[all]"]
    assert base.rates["ppr[all]"] == p.evaluate((s >= 0).astype(np.int64)).rates["ppr[all]"]
    assert base.rates["ppr[all]"] == p.evaluate({"train": s}).rates["ppr[all]"]
    assert base.rates["ppr[all]"] == p.evaluate({ds: s}, kind="scores").rates["ppr[all]"]
    assert p.evaluate(np.zeros(n)).rates["ppr[all]"] == 0.0  # auto: all 0 are decisions
    assert abs(p.evaluate(np.zeros(n), kind="scores").rates["ppr[all]"] - 1.0) <= TOL  # 0 is positive
    q = np.full(n, 0.25)
    assert abs(p.evaluate(q, kind="probabilities").rates["ppr[all]"] - 0.25) <= TOL
    with pytest.raises(RateoptError, match="kind='probabilities'.*or kind='scores'"):
        p.evaluate(q)
    with pytest.raises(RateoptError, match="outside \\[0, 1\\]"):
        p.evaluate(s, kind="probabilities")
    with pytest.raises(RateoptError, match="values other than 0/1"):
        p.evaluate(s, kind="decisions")
    with pytest.raises(RateoptError, match="must have shape \\(90,\\)"):
        p.evaluate(s[:10])
    with pytest.raises(RateoptError, match="NaN or inf"):
        p.evaluate(np.full(n, np.nan))
    with pytest.raises(RateoptError, match="does not use"):
        p.evaluate({"other": s})
    other, _ = make_data(4)
    with pytest.raises(RateoptError, match="does not use"):
        p.evaluate({other: s})
    with pytest.raises(RateoptError, match="must be numeric or boolean"):
        p.evaluate(np.array(["a"] * n))
    # predictions in the dataset's own label values (a classifier's predict output)
    lab = Dataset(np.zeros((4, 1)), y=["no", "yes", "yes", "no"])
    pl = Problem(constraints=[R.true_positive_rate(lab) >= 0.5, R.positive_prediction_rate(lab) <= 0.9])
    assert pl.evaluate(np.array(["yes", "no", "yes", "yes"])).rates["tpr[all]"] == 0.5
    assert pl.evaluate(["no", "no", "yes", "no"], kind="labels").rates["ppr[all]"] == 0.25
    with pytest.raises(RateoptError, match="label values"):
        pl.evaluate(np.array(["yes", "maybe", "yes", "yes"]))
    with pytest.raises(RateoptError, match="kind='labels' but the predictions"):
        pl.evaluate(np.array([1, 0, 1, 1]), kind="labels")
    lab12 = Dataset(np.zeros((4, 1)), y=[1, 2, 2, 1])  # positive label: 2
    p12 = Problem(constraints=[R.positive_prediction_rate(lab12) <= 0.5])
    with pytest.raises(RateoptError, match="ambiguous: read as label values"):
        p12.evaluate(np.array([2, 1, 1, 1]))  # labels {1, 2}, or scores (all >= 0)?
    with pytest.raises(RateoptError, match="ambiguous: read as label values"):
        p12.evaluate(np.array([1, 1, 1, 1]))  # all label 1 (negative), or all decision 1?
    assert p12.evaluate(np.array([2, 1, 1, 1]), kind="labels").rates["ppr[all]"] == 0.25
    assert p12.evaluate(np.array([1, 1, 1, 1]), kind="decisions").rates["ppr[all]"] == 1.0
    assert p12.evaluate(np.array([2, 2, 2, 2])).rates["ppr[all]"] == 1.0  # both readings agree
    assert p12.evaluate(np.array([2.5, 1, 1, 1])).rates["ppr[all]"] == 1.0  # scores
    pm = Problem(constraints=[R.positive_prediction_rate(ds) <= 0.5])  # labels {0, 1}: no ambiguity
    assert pm.evaluate((s >= 0).astype(int)).rates["ppr[all]"] == base.rates["ppr[all]"]
    with pytest.raises(RateoptError, match="has no labels"):
        Problem(objective=0.0, constraints=[R.positive_prediction_rate(unl0) <= 0.5]).evaluate(
            np.zeros(unl0.n_samples), kind="labels")
    with pytest.raises(RateoptError, match="kind must be"):
        p.evaluate(s, kind="logits")
    with pytest.raises(RateoptError, match="atom_rates must have shape"):
        p.evaluate_atom_rates(np.zeros(7))
    unl, _ = make_data(5, name="unlabeled", labels=False)
    p2 = Problem(constraints=[R.positive_prediction_rate(ds) - R.positive_prediction_rate(unl) <= 0.1])
    with pytest.raises(RateoptError, match="pass predictions as a dict"):
        p2.evaluate(s)
    with pytest.raises(RateoptError, match="no predictions given for dataset 'unlabeled'"):
        p2.evaluate({"train": s})


def test_problem_pickles_and_repr():
    p, (train, rec), _, _ = problem_and_members(2)
    object.__setattr__(p, "_rateopt_cache", lambda: None)  # unpicklable cache of another module
    back = pickle.loads(pickle.dumps(p))
    assert not hasattr(back, "_rateopt_cache")
    preds = {"train": np.linspace(-1, 1, rec["n"]), "unlabeled": np.linspace(1, -1, 50)}
    assert back.evaluate(preds).constraints == p.evaluate(preds).constraints
    assert repr(p).startswith("Problem(objective=error[all], n_constraints=4")
    assert "max_violation" in repr(p.evaluate(preds))


def test_large_problem_compiles():
    # tables are built by vectorized code (loops over atoms only), so this is quick
    n = 200_000
    rng = np.random.default_rng(0)
    ds = Dataset(np.zeros((n, 1)), y=rng.integers(0, 2, n), weights=rng.uniform(0.5, 2, n),
                 groups={"g": rng.integers(0, 20, n)}, baseline=rng.integers(0, 2, n))
    p = Problem(constraints=[G.equalized_odds("g", 0.05), G.churn_cap(0.1, "g")], datasets=ds)
    t = p.compiled.tables["train"]
    # each example is in one label atom, one group&label atom, one group&baseline atom
    assert t.indices.size == 3 * n and t.n_atoms == 2 + 2 * 20 + 2 * 20
    sums = np.bincount(t.indices, weights=t.weights, minlength=t.n_atoms)
    np.testing.assert_allclose(sums, 1.0, rtol=0, atol=1e-9)


def test_to_atom_table_with_the_core():
    core = pytest.importorskip("rateopt.core", exc_type=ImportError)
    ds, rec = make_data(6)
    p = Problem(constraints=[G.equal_opportunity("race", 0.05), G.churn_cap(0.2, "sex")], datasets=ds)
    from rateopt._training._spec import atom_table

    table = atom_table(p.compiled.tables["train"])  # the game builds the core's table
    assert table.n_atoms == p.compiled.tables["train"].n_atoms
    X = np.ascontiguousarray(ds.X)
    theta = np.array([0.5, -1.0, 0.25])
    res = core.rate_kernel(X, theta, 0.1, table, np.zeros(table.n_atoms))
    scores = X @ theta + 0.1
    np.testing.assert_allclose(res.rates, p.evaluate(scores).atom_rates, rtol=0, atol=1e-12)


def test_rate_layer_gives_every_named_rate_from_atom_rates():
    p, (train, rec), _, _ = problem_and_members(3)
    preds = {"train": np.linspace(-1, 1, rec["n"]), "unlabeled": np.linspace(1, -1, 50)}
    ev = p.evaluate(preds)
    layer = p.compiled.rates
    values = layer.values(ev.atom_rates)
    assert dict(zip(layer.names, values.tolist())) == ev.rates
    # A stack of atom-rate vectors (e.g. recorded iterates) gives one row each.
    stack = layer.values(np.vstack([ev.atom_rates, ev.atom_rates]))
    np.testing.assert_array_equal(stack, np.vstack([values, values]))
    name = layer.names[0]
    assert values[layer.index(name)] == ev.rates[name]
    with pytest.raises(KeyError, match="no rate named"):
        layer.index("no such rate")


def test_membership_table_of_several_atoms_a_row_needs_little_beyond_itself_at_default_settings():
    """Atoms written a chunk at a time (an eighth of the rows' worth of members, by default), so that the
    chunk's temporaries (its rows, weights, sort and slots: about 64 bytes a member) stay small beside the
    table: a whole table's members in one chunk took about 190 bytes per row here beyond the table, now
    about 27 (the largest atom's weights and their running sum, 16 bytes a member, and a chunk's)."""
    import tracemalloc

    import rateopt._compiler._compile as compile_module

    n = 40_000
    rng = np.random.default_rng(1)
    g = rng.integers(0, 40, n)
    ds = Dataset(np.zeros((n, 1)), rng.integers(0, 2, n), groups={"g": g})
    # three atoms a row: every row, its group, and one of 40 other random halves
    h = rng.integers(0, 40, n)
    members = [np.arange(n)] + [np.flatnonzero(g == k) for k in range(40)] + [np.flatnonzero(h == k)
                                                                              for k in range(40)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        t = compile_module._membership_table(ds, members, 0)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    table_bytes = t.indptr.nbytes + t.indices.nbytes + t.weights.nbytes
    assert peak - table_bytes < 40 * n
    ref = np.zeros((n, 81), dtype=bool)  # the reference: each row's atoms, ascending
    for a, m in enumerate(members):
        ref[m, a] = True
    assert np.array_equal(np.diff(t.indptr), ref.sum(axis=1))
    assert np.array_equal(t.indices.astype(np.int64), np.nonzero(ref)[1])


def test_membership_table_is_written_in_place(monkeypatch):
    """The compiled table of overlapping atoms matches a row-by-row reference,
    and building it needs little beyond the table itself (a counting sort
    into preallocated arrays: no (nnz,)-sized sort, concatenation or gather,
    which took about 124 bytes per row here beyond the table)."""
    import tracemalloc

    import rateopt._compiler._compile as compile_module

    monkeypatch.setattr(compile_module, "_TABLE_BLOCK_ROWS", 4096)  # several blocks of rows
    n = 50_000
    rng = np.random.default_rng(0)
    g = rng.integers(0, 5, n)
    w = rng.random(n) + 0.5
    ds = Dataset(np.zeros((n, 1)), rng.integers(0, 2, n), weights=w, groups={"g": g})
    masks = [np.ones(n, bool)] + [g == k for k in range(5)] + [rng.random(n) < 0.5]
    members = [np.flatnonzero(m) for m in masks]  # each atom's rows, as the compile passes them
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        t = compile_module._membership_table(ds, members, 3)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    table_bytes = t.indptr.nbytes + t.indices.nbytes + t.weights.nbytes
    assert peak - table_bytes < 24 * n  # a byte per row and a float64 per member of one atom, with room
    totals = [w[m].sum() for m in masks]
    for j in rng.choice(n, 300, replace=False):  # row-by-row reference
        want = [a for a, m in enumerate(masks) if m[j]]
        got = slice(t.indptr[j], t.indptr[j + 1])
        assert t.indices[got].tolist() == want
        # each weight is its share of its atom's weight, on the grid of exact_normalized (2**-53)
        np.testing.assert_allclose(t.weights[got], [w[j] / totals[a] for a in want], rtol=0, atol=4 * 2.0**-53)
    assert t.indptr[-1] == sum(int(m.sum()) for m in masks)
    # and every atom's weights sum to exactly 1, in any order (a whole atom's rate is exactly 1)
    sums = np.bincount(t.indices, weights=t.weights, minlength=len(masks))
    assert sums.tolist() == [1.0] * len(masks)
    assert [float(np.sum(t.weights[t.indices == a][::-1])) for a in range(len(masks))] == [1.0] * len(masks)
    assert t.atom_ids.tolist() == list(range(3, 3 + len(masks)))


def test_the_membership_table_is_sealed_and_the_core_atom_table_shares_it():
    """Training holds one atom table: the core's AtomTable keeps the compiled arrays (no copy), which no one
    can make writeable again, and the table's entries are the brute-force memberships."""
    import math

    import scipy.sparse as sp

    import rateopt as ro
    from rateopt._training._spec import spec_from_problem

    rng = np.random.default_rng(3)
    n = 500
    g = rng.choice(["a", "b", "c"], n)
    y = rng.integers(0, 2, n)
    w = rng.random(n) + 0.1
    ds = ro.Dataset(rng.normal(size=(n, 2)), y, weights=w, groups={"g": g})
    problem = ro.Problem(constraints=[ro.goals.demographic_parity("g", slack=0.05)], datasets=ds)
    table = problem.compiled.tables["train"]
    atoms = spec_from_problem(problem).blocks[0].atoms
    for name in ("indptr", "indices", "weights"):
        mine, core_side = getattr(table, name), getattr(atoms, name)
        assert core_side is mine, name
        with pytest.raises(ValueError):
            mine.flags.writeable = True
    V = sp.csr_matrix((table.weights, table.indices, table.indptr), shape=(n, table.n_atoms)).toarray()
    for a, info in enumerate(problem.compiled.atoms):  # each atom: its members' weights over their sum
        members = {"ppr[y=1]": y == 1, "ppr[y=0]": y == 0, "ppr[all]": np.ones(n, bool)}.get(
            info.name, g == info.name[len("ppr[g="):-1])
        # on exact_normalized's grid: within 2**-53 of each quotient, and the atom's rate of all rows exactly 1
        np.testing.assert_allclose(V[:, a], np.where(members, w, 0.0) / w[members].sum(), rtol=0, atol=2.0 ** -52)
        assert (V[:, a] > 0).tolist() == members.tolist() and math.fsum(V[:, a]) == 1.0


@pytest.mark.parametrize("n", [300, 20_000])
def test_tables_without_weights_are_those_of_unit_weights_bit_for_bit(n):
    """A dataset without weights (their broadcast 1.0: the atoms' normalized weights from their sizes alone)
    compiles to the very tables of the same dataset with an array of ones as weights (gathered and
    normalized as any weights are)."""
    rng = np.random.default_rng(n)
    g = rng.integers(0, 3, n)
    y = rng.integers(0, 2, n)
    X = rng.random((n, 1))
    goals = [G.demographic_parity("g", slack=0.02), G.equal_opportunity("g", slack=0.02)]
    tables = []
    for w in (None, np.ones(n)):
        ds = Dataset(X, y, weights=w, groups={"g": g})
        if w is None:
            assert ds.weights.strides == (0,)
        tables.append(Problem(constraints=goals, datasets=ds).compiled.tables[ds.name])
    a, b = tables
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert np.array_equal(np.asarray(a.weights).view(np.int64), np.asarray(b.weights).view(np.int64))
