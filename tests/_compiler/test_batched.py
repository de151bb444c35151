"""Batched families compile to the problem that binding every goal one expression at a time gives, bit for bit.

The reference is the per-expression path itself: the goals bound with
``Goal.bind`` (one ``Constraint`` per group and side) and compiled by
``compile_problem``. Every field of the two ``CompiledProblem`` s is compared
exactly (arrays byte for byte, floats by their bits), and so are the
constraints, the errors, and a ``ThresholdClassifier`` fitted on them.
"""

from __future__ import annotations

import numpy as np
import pytest

import rateopt as ro
from rateopt._compiler._batched import compile_batched, is_family
from rateopt._compiler._compile import compile_problem, flatten_constraints
from rateopt._language import _rates as R
from rateopt.goals import demographic_parity, equal_opportunity, equalized_odds


def _bits(a):
    a = np.asarray(a)
    return (a.dtype.str, a.shape, a.tobytes())


def _csr(m):
    B = m.B if hasattr(m, "B") else m
    assert getattr(m, "A", None) is None
    return (_bits(B.indptr), _bits(B.indices), _bits(B.data), B.shape)


def _atom(a):
    return (a.index, a.dataset, a.local_index, a.name, a.subset, a.aliases, a.n_members, float(a.total_weight).hex())


def _constraint(c):
    return (c.name, c.sense, str(c.lhs), str(c.rhs), c.has_custom_name)


def _snapshot(datasets, constraints, c):
    return {
        "datasets": (tuple(datasets), c.datasets),
        "constraints": [_constraint(x) for x in constraints],
        "originals": [_constraint(x) for x in c.inverse_data.originals],
        "sources": [id(s) for s in c.inverse_data.sources],
        "names": (c.constraint_names, c.inverse_data.names),
        "atoms": [_atom(a) for a in c.atoms],
        "atom_contexts": [tuple((x, x.label) for x in ctxs) for ctxs in c.atom_contexts],
        "tables": {k: (t.dataset, t.n_samples, t.n_atoms, _bits(t.indptr), _bits(t.indices), _bits(t.weights),
                       _bits(t.atom_ids), t.offset) for k, t in c.tables.items()},
        "atom_dataset": _bits(c.atom_dataset), "atom_local": _bits(c.atom_local),
        "C": _csr(c.C), "kappa": _bits(c.kappa),
        "objective": (_bits(c.objective_coef), float(c.objective_constant).hex()),
        "rates": (c.rates.names, _csr(c.rates.A), _bits(c.rates.b)),
        "offsets": (_bits(c.atom_offsets), c.thresholds),
        "metric": (c.metric, c.metric_constraints),
    }


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as exc:  # the same error, with the same message
        return ("error", type(exc).__name__, str(exc))


def _both(objective, goals, datasets):
    """The batched compile's snapshot and the per-expression one's (or their errors)."""
    def batched():
        pairs = list(flatten_constraints(goals, datasets, batch=True))
        assert any(is_family(c) for c, _ in pairs)
        out = compile_batched(objective, pairs)
        assert out is not None, "the batched compile declined"
        return _snapshot(*out)

    def reference():
        return _snapshot(*compile_problem(objective, list(flatten_constraints(goals, datasets))))

    return _outcome(batched), _outcome(reference)


def _data(n, n_groups, *, seed=0, weights=False, name="train", labels=True):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = rng.integers(0, 2, n) if labels else None
    g = np.arange(n) % n_groups if n_groups == n else rng.integers(0, n_groups, n)
    w = rng.uniform(0.1, 3.0, n) if weights else None
    return ro.Dataset(X, y, weights=w, groups={"g": g, "h": rng.integers(0, 3, n)}, name=name)


CASES = {
    "one-row groups": (40, 40, [demographic_parity("g", slack=0.02)]),
    "one-row groups, 200": (200, 200, [demographic_parity("g", slack=0.02)]),
    "multi-row groups": (300, 7, [demographic_parity("g", slack=0.05)]),
    "slack 0": (120, 5, [demographic_parity("g")]),
    "multiplicative": (120, 5, [demographic_parity("g", slack=0.2, multiplicative=True)]),
    "lower side": (120, 5, [demographic_parity("g", slack=0.1, sides="lower")]),
    "upper side, multiplicative": (120, 5, [demographic_parity("g", slack=0.1, sides="upper", multiplicative=True)]),
    "values": (120, 6, [demographic_parity("g", slack=0.02, values=(4, 1, 2))]),
    "two columns": (150, 4, [demographic_parity(("g", "h"), slack=0.03)]),
    "named": (120, 5, [demographic_parity("g", slack=0.02, name="dp")]),
    "equal opportunity": (200, 5, [equal_opportunity("g", slack=0.05)]),
    "equalized odds": (200, 5, [equalized_odds("g", slack=0.05)]),
    "twice (renamed #2)": (100, 4, [demographic_parity("g", slack=0.02), demographic_parity("g", slack=0.02)]),
    "parity and odds (shared subsets)": (200, 5, [demographic_parity("g", slack=0.02),
                                                  equalized_odds("g", slack=0.05)]),
    "one group (constant)": (50, 1, [demographic_parity("g", slack=0.02)]),
    # the sets keep their rows as int32: the sum of a group's rows (the fingerprint that finds equal
    # memberships) passes 2**31 here, so it must be summed in int64 to match the context's rows
    "one group (constant), row sums past int32": (70_000, 1, [demographic_parity("g", slack=0.02)]),
    "two groups, row sums past int32": (70_000, 2, [demographic_parity("g", slack=0.02)]),
}


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_batched_compile_is_the_per_expression_compile(case, weights):
    n, k, goals = CASES[case]
    ds = _data(n, k, weights=weights)
    got, want = _both(R.error_rate(ds.context()), goals, ds)
    assert got == want
    if case.startswith("one group (constant)"):
        assert got[0] == "error" and got[1] == "ConstantConstraintError"
    else:
        assert got[0] == "ok"


def test_one_row_groups_merge_across_families():
    # two-row groups, every other one all positive: that group's subset is also its "y = 1" subset, so atoms
    # merge across the parity and equal-opportunity families (every group has a positive: tpr is defined)
    n = 60
    rng = np.random.default_rng(3)
    g = np.repeat(np.arange(n // 2), 2)
    y = np.tile([1, 1, 1, 0], n // 4)
    ds = ro.Dataset(rng.normal(size=(n, 1)), y, groups={"g": g})
    goals = [demographic_parity("g", slack=0.02), equal_opportunity("g", slack=0.02)]
    got, want = _both(R.error_rate(ds.context()), goals, ds)
    assert got == want and got[0] == "ok"
    assert any(a[5] for a in got[1]["atoms"])  # some atom has aliases: the merge is exercised


def test_other_dataset_names_and_roles():
    train = _data(120, 6, name="train")
    val = _data(90, 6, seed=1, name="val")
    goals = [demographic_parity("g", slack=0.02, dataset="val"), equal_opportunity("g", slack=0.1)]
    got, want = _both(R.error_rate(train.context()), goals, {"train": train, "val": val})
    assert got == want and got[0] == "ok"
    assert any(name.startswith("ppr[val:g=") for name in got[1]["names"][0])


def test_with_expression_constraints_and_objective():
    ds = _data(150, 5)
    ctx = ds.context()
    goals = [R.positive_prediction_rate(ctx) <= 0.4, demographic_parity("h", slack=0.02),
             R.false_positive_rate(ctx) <= 0.3]
    got, want = _both(R.error_rate(ctx) + 0.5 * R.positive_prediction_rate(ctx.positive()), goals, ds)
    assert got == want and got[0] == "ok"


def test_string_values_and_missing_groups():
    rng = np.random.default_rng(5)
    n = 80
    g = np.array(["a | b", "c", "d & e", None], dtype=object)[rng.integers(0, 4, n)]
    ds = ro.Dataset(rng.normal(size=(n, 1)), rng.integers(0, 2, n), groups={"g": g})
    for goals in ([demographic_parity("g", slack=0.02)], [equalized_odds("g", slack=0.02)]):
        got, want = _both(R.error_rate(ds.context()), goals, ds)
        assert got == want and got[0] == "ok"


def test_errors_and_declined_goals_are_the_per_expression_ones():
    # a one-row group has no positive: equal opportunity is undefined there (the family declines, bind raises)
    ds = _data(30, 30)
    goal = equal_opportunity("g", slack=0.02)
    assert goal.bind_batched(ds) is None
    with pytest.raises(ro.exceptions.EmptySubsetError) as got:
        ro.Problem(constraints=[goal], datasets=ds)
    with pytest.raises(ro.exceptions.EmptySubsetError) as want:
        compile_problem(R.error_rate(ds.context()), [(c, goal) for c in goal.bind(ds)])
    assert str(got.value) == str(want.value)
    # a value that is not a group value, a pairwise goal: one expression at a time
    ds = _data(60, 3)
    assert demographic_parity("g", values=(0, 7)).bind_batched(ds) is None
    assert demographic_parity("g", slack=0.1, pairwise=True).bind_batched(ds) is None
    assert demographic_parity("nope", slack=0.1).bind_batched(ds) is None
    with pytest.raises(ro.exceptions.RateoptError, match="no group column 'nope'"):
        ro.Problem(constraints=[demographic_parity("nope", slack=0.1)], datasets=ds)


def test_a_subset_on_the_family_column_falls_back():
    ds = _data(80, 4)
    g1 = ds.context().subset(group="g", value=1)
    goals = [demographic_parity("g", slack=0.02), R.positive_prediction_rate(g1) <= 0.5]
    pairs = list(flatten_constraints(goals, ds, batch=True))
    assert compile_batched(R.error_rate(ds.context()), pairs) is None
    p = ro.Problem(constraints=goals, datasets=ds)  # bound one by one: the per-expression problem
    ref = compile_problem(R.error_rate(ds.context()), list(flatten_constraints(goals, ds)))
    assert _snapshot(p.datasets, p.constraints, p.compiled) == _snapshot(*ref)


def test_problem_uses_the_family_and_constraints_are_the_goals():
    ds = _data(100, 100)
    goal = demographic_parity("g", slack=0.02)
    p = ro.Problem(constraints=[goal], datasets=ds)
    bound = goal.bind(ds)
    assert len(p.constraints) == len(bound) == 200
    assert [_constraint(c) for c in p.constraints] == [_constraint(c) for c in bound]
    assert p.constraints[5] is p.constraints[5] is p.compiled.inverse_data.originals[5]
    assert p.compiled.inverse_data.row(p.constraints[7]) == 7
    assert all(s is goal for s in p.compiled.inverse_data.sources)
    # the values: every constraint evaluated by the problem equals the constraint's own expression's value
    d = np.random.default_rng(0).integers(0, 2, 100)
    ev = p.evaluate(d)
    for c in list(p.constraints)[:10]:
        assert ev.constraints[c.name] == pytest.approx(ro.Problem(constraints=[c]).evaluate(d).constraints[c.name],
                                                       abs=1e-15)


def test_threshold_classifier_fit_is_unchanged():
    rng = np.random.default_rng(2)
    n = 300
    s, y, g = rng.random(n), rng.integers(0, 2, n), rng.integers(0, 12, n)
    goal = demographic_parity("g", slack=0.02)
    clf = ro.ThresholdClassifier(goals=[goal]).fit(s, y, groups={"g": g})
    ref = ro.Problem(constraints=list(goal.bind(clf.problem_.dataset)), datasets=clf.problem_.dataset)
    assert _snapshot(clf.problem_.datasets, clf.problem_.constraints, clf.problem_.compiled)["C"] == \
        _snapshot(ref.datasets, ref.constraints, ref.compiled)["C"]
    assert clf.training_.constraints == ref.evaluate_atom_rates(np.asarray(clf.training_.atom_rates)).constraints


@pytest.mark.parametrize("case", ["one-row groups", "equalized odds", "twice (renamed #2)"])
def test_rate_layer_name_by_name_path_agrees(case, monkeypatch):
    # the rate layer's array decision declined: the name-by-name path gives the same layer
    import rateopt._compiler._batched as batched

    monkeypatch.setattr(batched, "_atoms_kept", lambda *args: None)
    n, k, goals = CASES[case]
    ds = _data(n, k, weights=True)
    got, want = _both(R.error_rate(ds.context()), goals, ds)
    assert got == want and got[0] == "ok"


def _reference_table(ds, members):
    """The membership table one atom at a time: each atom's weights rescaled by a power of two (its largest in
    [0.5, 1)) and exactly normalized, written at each row's next free slot (ascending atom ids within a row)."""
    from rateopt._utils._weights import exact_normalized

    n, w = ds.n_samples, ds.weights
    counts = np.zeros(n, dtype=np.int64)
    for rows in members:
        counts[rows] += 1
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = np.empty(indptr[-1], dtype=np.int32)
    weights = np.empty(indptr[-1])
    written = np.zeros(n, dtype=np.int64)
    for a, rows in enumerate(members):
        wa = w[rows].copy()
        wa = np.ldexp(wa, -int(np.frexp(wa.max())[1]))
        wa = exact_normalized(wa)
        for r, v in zip(rows.tolist(), wa.tolist()):
            indices[indptr[r] + written[r]] = a
            weights[indptr[r] + written[r]] = v
            written[r] += 1
    return indptr, indices, weights


@pytest.mark.parametrize("own", [1 << 12, 30])
@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_membership_table_of_many_atoms_is_the_atom_by_atom_table(block, own, monkeypatch):
    # many atoms of many sizes (1 to 40 rows, and two large ones), overlapping, with weights spanning
    # 30 orders of magnitude: written a chunk of atoms at a time, the table is the atom-by-atom one, bit for bit
    # (own=30: the atoms of 30 rows or more are chunks of their own, between chunks of smaller atoms)
    import rateopt._compiler._compile as compile_module
    from rateopt._utils._narrow import atom_id_dtype, row_pointer_dtype

    monkeypatch.setattr(compile_module, "_TABLE_BLOCK_ROWS", block)
    monkeypatch.setattr(compile_module, "_OWN_CHUNK_ROWS", own)
    rng = np.random.default_rng(7)
    n = 3000
    w = np.exp(rng.uniform(-35, 35, n))
    ds = ro.Dataset(np.zeros((n, 1)), rng.integers(0, 2, n), weights=w)
    members = [np.flatnonzero(rng.random(n) < 0.6), np.arange(0, n, 2)]
    members += [np.sort(rng.choice(n, size=int(s), replace=False)) for s in rng.integers(1, 41, 400)]
    members += [np.flatnonzero(rng.random(n) < 0.3)]
    t = compile_module._membership_table(ds, members, 5)
    indptr, indices, weights = _reference_table(ds, members)
    # stored in the core's narrow layout (rateopt._utils._narrow), with the atom-by-atom table's values
    assert t.indptr.dtype == row_pointer_dtype(int(indptr[-1])) and t.indices.dtype == atom_id_dtype(len(members))
    assert _bits(t.indptr.astype(np.int64)) == _bits(indptr.astype(np.int64))
    assert _bits(t.indices.astype(np.int32)) == _bits(indices)
    assert _bits(t.weights) == _bits(weights)
    assert t.n_atoms == len(members) and t.atom_ids.tolist() == list(range(5, 5 + len(members)))


@pytest.mark.parametrize("objective", ["constant", "ppr", "fnr of a group", "weighted count"])
def test_objectives(objective):
    ds = _data(120, 6, weights=True)
    ctx = ds.context()
    obj = {"constant": R.Constant(0.0),
           "ppr": R.positive_prediction_rate(ctx),
           "fnr of a group": R.false_negative_rate(ctx.subset(group="h", value=1)),
           "weighted count": R.false_positive_count(ctx)}[objective]
    got, want = _both(obj, [equalized_odds("g", slack=0.05)], ds)
    assert got == want and got[0] == "ok"


def test_group_sets_keep_int32_rows():
    """A batched family's group sets, kept with the problem, hold their rows as int32 (4 bytes a member):
    each group's rows ascending, the groups' rows partitioning the dataset's (checked against the column)."""
    from rateopt._language._families import GroupSet

    ds = _data(500, 3)
    gset = GroupSet.build(ds, "g", None, (0, 1, 2))
    assert gset.rows.dtype == np.int32
    g = np.asarray(ds.groups["g"])
    for k in range(3):
        rows = gset.rows[gset.ptr[k]:gset.ptr[k + 1]]
        assert np.array_equal(rows, np.flatnonzero(g == k))


def _layer(rng, n, k):
    code = rng.integers(0, k, n)
    return [np.flatnonzero(code == c) for c in np.unique(code)]


def _swap_one(members, into):
    """Row 0 also in atom ``into``, which loses one of its other rows (as many entries, one row twice)."""
    m = members[into][members[into] != 0]
    members[into] = np.sort(np.append(m[1:], 0))


LAYOUTS = {  # (atoms, whether every row is in as many atoms, each run of atoms a partition)
    "two halves": lambda rng, n: _layer(rng, n, 2),
    "many small": lambda rng, n: _layer(rng, n, 90),
    "labels then groups": lambda rng, n: _layer(rng, n, 2) + _layer(rng, n, 3),
    "three layers, small atoms": lambda rng, n: _layer(rng, n, 2) + _layer(rng, n, 90) + _layer(rng, n, 40),
    "one row twice": lambda rng, n: (lambda m: (_swap_one(m, len(m) - 1), m)[1])(_layer(rng, n, 90)),
    "one row missing": lambda rng, n: (lambda m: m[:-1] + [m[-1][1:]])(_layer(rng, n, 90)),
    # row 0 twice in the first run and a row missing there, made up in the second: every row in two atoms,
    # but the runs are no partitions
    "compensated runs": lambda rng, n: _compensated(_layer(rng, n, 2), _layer(rng, n, 3)),
    "last run partial": lambda rng, n: _layer(rng, n, 2) + _layer(rng, n, 3)[:2],
}


def _compensated(first, second):
    """Two runs of as many entries as rows, every row in two atoms, neither run a partition: row 0 also in
    the first run's other atom (which loses a row ``gone``), row 0 out of the second run and ``gone`` in two of
    its atoms."""
    other = next(a for a, m in enumerate(first) if 0 not in m)
    gone = int(first[other][0])
    first[other] = np.sort(np.append(first[other][1:], 0))
    b0 = next(a for a, m in enumerate(second) if 0 in m)
    second[b0] = second[b0][second[b0] != 0]
    b1 = next(a for a, m in enumerate(second) if gone not in m and a != b0)
    second[b1] = np.sort(np.append(second[b1], gone))
    return first + second


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_membership_table_of_runs_of_partitions_is_the_atom_by_atom_table(layout, weighted, monkeypatch):
    # atoms in runs that each partition the rows (labels, then groups) take the direct write (row i's entries
    # at c*i + run); anything else (a row twice, a row missing, runs that are no partitions but give every
    # row as many entries, a partial last run) the counting sort: both give the row-by-row
    # reference table, bit for bit
    import rateopt._compiler._compile as compile_module

    monkeypatch.setattr(compile_module, "_OWN_CHUNK_ROWS", 50)  # small atoms: chunks of several atoms
    monkeypatch.setattr(compile_module, "_TABLE_BLOCK_ROWS", 300)  # large atoms: several blocks of rows
    rng = np.random.default_rng(11)
    n = 2000
    w = np.exp(rng.uniform(-20, 20, n)) if weighted else None
    ds = ro.Dataset(np.zeros((n, 1)), rng.integers(0, 2, n), weights=w)
    members = LAYOUTS[layout](rng, n)
    if layout == "compensated runs":
        counts = np.bincount(np.concatenate(members), minlength=n)
        assert (counts == 2).all() and np.bincount(np.concatenate(members[:2]), minlength=n).max() == 2
    t = compile_module._membership_table(ds, members, 2)
    indptr, indices, weights = _reference_table(ds, members)
    assert _bits(t.indptr.astype(np.int64)) == _bits(indptr.astype(np.int64))
    assert _bits(t.indices.astype(np.int32)) == _bits(indices)
    assert _bits(t.weights) == _bits(weights)
