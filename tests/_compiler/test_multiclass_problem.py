"""K-class problems (rateopt.Problem on a ClassDataset): named objectives, the counts tensor, MacroF1, and K = 2.

* "error", "balanced_error" and "macro_f1" against brute-force loops over rows
  (macro-F1 also against scikit-learn's ``f1_score(average="macro")``);
* the confusion counts ``N`` (``Evaluation.atom_rates``) and its cells;
* :meth:`MacroF1.gradient` against central finite differences of
  :meth:`MacroF1.value` and against a loop;
* a K = 2 problem on a :class:`~rateopt.ClassDataset` with the multiclass goals
  restricted to ``classes=(1,)`` gives the binary path's objective and
  constraint values, for 0/1 decisions and for probabilities.

The contract shared with two classes (one class, goals files, refusals,
evaluation against a count over rows) is stated once for both arities in
tests/_compiler/test_one_problem.py.
"""

import numpy as np
import pytest
import rateopt as ro
from rateopt._compiler import is_class_problem
from rateopt.metrics import MacroF1
from rateopt.exceptions import EmptySubsetError, RateoptError
from rateopt.goals import (
    demographic_parity,
    equal_opportunity,
    equalized_odds,
    multiclass_demographic_parity,
    multiclass_equal_opportunity,
    multiclass_equalized_odds,
)
from sklearn.metrics import f1_score

TOL = 1e-12


def make_data(K, seed, unit_weights=False, soft=False):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 81))
    y = rng.integers(0, K, n)
    y[:K] = np.arange(K)
    w = np.ones(n) if unit_weights else rng.uniform(0.1, 3.0, n)
    a = rng.integers(0, 3, n)
    b = rng.integers(0, 2, n)
    ds = ro.ClassDataset(np.zeros((n, 1)), y, weights=None if unit_weights else w, groups={"a": a, "b": b})
    pred = rng.integers(0, K, n)
    P = rng.dirichlet(np.ones(K), size=n)
    L = rng.dirichlet(np.ones(K), size=n) if soft else None
    return {"n": n, "K": K, "y": y.tolist(), "w": w.tolist(), "a": a.tolist(), "b": b.tolist(), "ds": ds,
            "pred": pred, "P": P, "L": L}


def dist_rows(d, probabilities):
    if probabilities:
        return d["P"].tolist()
    return [[1.0 if k == p else 0.0 for k in range(d["K"])] for p in d["pred"]]


def label_rows(d, soft):
    if soft:
        return d["L"].tolist()
    return [[1.0 if k == y else 0.0 for k in range(d["K"])] for y in d["y"]]


def confusion(d, probabilities, soft=False):
    """C[y][k] = sum_i w_i L[i, y] P[i, k], row by row."""
    K = d["K"]
    P, L = dist_rows(d, probabilities), label_rows(d, soft)
    C = [[0.0] * K for _ in range(K)]
    for i in range(d["n"]):
        for y in range(K):
            for k in range(K):
                C[y][k] += d["w"][i] * L[i][y] * P[i][k]
    return C


def ref_error(d, probabilities, soft=False):
    C = confusion(d, probabilities, soft)
    total = sum(sum(r) for r in C)
    return 1.0 - sum(C[k][k] for k in range(d["K"])) / total


def ref_balanced_error(d, probabilities, soft=False):
    C = confusion(d, probabilities, soft)
    return 1.0 - sum(C[k][k] / sum(C[k]) for k in range(d["K"])) / d["K"]


def ref_macro_f1(d, probabilities, soft=False):
    """1 - mean_k 2 tp_k / (predicted_k + true_k)."""
    C = confusion(d, probabilities, soft)
    K = d["K"]
    f1 = 0.0
    for k in range(K):
        tp = C[k][k]
        predicted = sum(C[y][k] for y in range(K))
        true = sum(C[k])
        f1 += 2.0 * tp / (predicted + true)
    return 1.0 - f1 / K


def predictions(d, probabilities):
    return d["P"] if probabilities else d["pred"]


def check(a, b, what=""):
    assert abs(a - b) <= TOL, f"{what}: {a!r} != {b!r}"


KINDS = pytest.mark.parametrize("probabilities", [False, True], ids=["labels", "probabilities"])
SEEDS = pytest.mark.parametrize("K,seed", [(3, 0), (4, 1), (5, 2)])
GOALS = [multiclass_equalized_odds("a", 0.05), multiclass_demographic_parity("b", 0.1)]


# --------------------------------------------------------------------------- named objectives


@KINDS
@SEEDS
def test_error_objective(K, seed, probabilities):
    d = make_data(K, seed)
    for obj in (None, "error"):
        p = ro.Problem(objective=obj, constraints=GOALS, datasets=d["ds"])
        assert isinstance(p, ro.Problem) and is_class_problem(p) and p.is_linear
        check(p.evaluate(predictions(d, probabilities)).objective, ref_error(d, probabilities), str(obj))


@KINDS
@SEEDS
def test_balanced_error_objective(K, seed, probabilities):
    d = make_data(K, seed)
    p = ro.Problem(objective="balanced_error", constraints=GOALS, datasets=d["ds"])
    assert p.is_linear
    check(p.evaluate(predictions(d, probabilities)).objective, ref_balanced_error(d, probabilities))


@KINDS
@SEEDS
def test_macro_f1_objective(K, seed, probabilities):
    d = make_data(K, seed)
    p = ro.Problem(objective="macro_f1", constraints=GOALS, datasets=d["ds"])
    assert not p.is_linear and isinstance(p.objective, MacroF1)
    check(p.evaluate(predictions(d, probabilities)).objective, ref_macro_f1(d, probabilities))
    p = ro.Problem(objective="macro_f1", datasets=d["ds"])  # no constraints: one cell
    check(p.evaluate(predictions(d, probabilities)).objective, ref_macro_f1(d, probabilities))


@pytest.mark.parametrize("K,seed", [(3, 3), (4, 4), (5, 5)])
def test_macro_f1_matches_sklearn(K, seed):
    d = make_data(K, seed, unit_weights=True)
    p = ro.Problem(objective="macro_f1", datasets=d["ds"])
    expected = 1.0 - f1_score(d["y"], d["pred"], average="macro", labels=list(range(K)))
    check(p.evaluate(d["pred"]).objective, expected, "unit weights")
    # and with weights: scikit-learn's sample_weight
    d = make_data(K, seed)
    p = ro.Problem(objective="macro_f1", constraints=GOALS, datasets=d["ds"])
    expected = 1.0 - f1_score(d["y"], d["pred"], average="macro", labels=list(range(K)), sample_weight=d["w"])
    check(p.evaluate(d["pred"]).objective, expected, "weights")


@KINDS
@pytest.mark.parametrize("objective,reference", [("error", ref_error), ("balanced_error", ref_balanced_error),
                                                 ("macro_f1", ref_macro_f1)])
def test_named_objectives_under_soft_labels(objective, reference, probabilities):
    d = make_data(4, 6, soft=True)
    p = ro.Problem(objective=objective, constraints=GOALS, datasets=d["ds"],
                             label_probabilities=d["L"])
    check(p.evaluate(predictions(d, probabilities)).objective, reference(d, probabilities, soft=True))


def test_unknown_objective_refused():
    d = make_data(3, 7)
    with pytest.raises(RateoptError, match=r"objective 'auc' is not a K-class objective; choose one of "
                                           r"\['error', 'balanced_error', 'macro_f1'\]"):
        ro.Problem(objective="auc", datasets=d["ds"])


def test_problem_arguments_validated():
    d = make_data(3, 8)
    other = make_data(3, 9)["ds"]
    with pytest.raises(RateoptError, match="a K-class problem is measured on one ClassDataset"):
        ro.Problem(datasets={"train": d["ds"], "test": other})
    p = ro.Problem(datasets={"train": d["ds"]})
    assert p.dataset is d["ds"] and p.n_classes == 3 and p.classes.tolist() == [0, 1, 2]
    with pytest.raises(TypeError, match="is an expression, not a constraint"):
        ro.Problem(constraints=[ro.class_recall(d["ds"], 1)], datasets=d["ds"])


# --------------------------------------------------------------------------- the counts tensor


@KINDS
def test_counts_tensor_and_cells(probabilities):
    d = make_data(4, 10)
    ds = d["ds"]
    ctx = ds.context()
    cons = [*GOALS, ro.class_recall(ctx.subset(group="a", value=0) & ctx.subset(group="b", value=1), 2) >= 0.1]
    p = ro.Problem(constraints=cons, datasets=ds)
    c = p.compiled
    ev = p.evaluate(predictions(d, probabilities))
    N = ev.atom_rates
    assert N.shape == (c.n_cells, 4, 4)
    # each cell's rows share their membership of every subset
    for j, sub in enumerate(c.contexts):
        assert np.array_equal(sub.mask(), c.cell_members[c.cells, j])
    assert len({tuple(r) for r in c.cell_members.tolist()}) == c.n_cells
    # N[g, y, k] = sum_{i in g, y_i = y} w_i P[i, k], row by row
    P = dist_rows(d, probabilities)
    ref = np.zeros_like(N)
    for i in range(d["n"]):
        for k in range(4):
            ref[c.cells[i], d["y"][i], k] += d["w"][i] * P[i][k]
    assert np.max(np.abs(N - ref)) <= TOL
    # W[g, y]: label weights per cell
    W = np.zeros((c.n_cells, 4))
    for i in range(d["n"]):
        W[c.cells[i], d["y"][i]] += d["w"][i]
    assert np.max(np.abs(c.cell_label_weights - W)) <= TOL
    # evaluate_counts reads the same numbers
    again = p.evaluate_counts(N)
    assert again.objective == ev.objective and again.constraints == ev.constraints and again.rates == ev.rates


# --------------------------------------------------------------------------- MacroF1's gradient


def f1_gradient_loop(d, compiled, N):
    """d(1 - mean_k F1_k) / dN[g, y, k], entry by entry, with the true-class weights held fixed."""
    G_, K = N.shape[0], N.shape[1]
    tp = [sum(N[g, k, k] for g in range(G_)) for k in range(K)]
    pred = [sum(N[g, y, k] for g in range(G_) for y in range(K)) for k in range(K)]
    true = [sum(compiled.cell_label_weights[g, k] for g in range(G_)) for k in range(K)]
    out = np.zeros_like(N)
    for g in range(G_):
        for y in range(K):
            for k in range(K):
                den = pred[k] + true[k]
                # F1_k = 2 tp_k / den_k; N[g, y, k] enters pred_k, and tp_k when y == k
                dF = (2.0 * (y == k) / den) - 2.0 * tp[k] / den**2
                out[g, y, k] = -dF / K
    return out


@KINDS
@pytest.mark.parametrize("K,seed", [(3, 11), (5, 12)])
def test_macro_f1_gradient(K, seed, probabilities):
    d = make_data(K, seed)
    p = ro.Problem(objective="macro_f1", constraints=GOALS, datasets=d["ds"])
    assert p.compiled.n_cells > 1
    N = p.evaluate(predictions(d, probabilities)).atom_rates
    f = p.objective
    G = f.gradient(p.compiled, N)
    assert G.shape == N.shape
    assert np.max(np.abs(G - f1_gradient_loop(d, p.compiled, N))) <= TOL
    # central finite differences of value
    h = 1e-6
    fd = np.zeros_like(N)
    for idx in np.ndindex(N.shape):
        Np, Nm = N.copy(), N.copy()
        Np[idx] += h
        Nm[idx] -= h
        fd[idx] = (f.value(p.compiled, Np) - f.value(p.compiled, Nm)) / (2 * h)
    assert np.max(np.abs(G - fd)) <= 1e-7 * max(1.0, np.max(np.abs(G)))
    # value at N is the objective
    check(f.value(p.compiled, N), ref_macro_f1(d, probabilities))
    assert p.objective_value(N) == f.value(p.compiled, N)


def test_macro_f1_on_an_empty_dataset_raises():
    ds = ro.ClassDataset(np.zeros((3, 1)), [0, 1, 2], weights=[0.0, 0.0, 0.0])
    p = ro.Problem(objective="macro_f1", datasets=ds)
    with pytest.raises(EmptySubsetError, match="macro-F1 on an empty subset 'all'"):
        p.evaluate(np.array([0, 1, 2]))


# --------------------------------------------------------------------------- K = 2 is the binary path


def binary_pair(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(60, 81))
    y = rng.integers(0, 2, n)
    a = rng.integers(0, 3, n)
    b = np.array(["p", "q"])[rng.integers(0, 2, n)]
    for j in range(6):  # both labels in every value of a
        a[j], y[j] = j % 3, j // 3
    for j in range(4):
        b[6 + j], y[6 + j] = "pq"[j % 2], j // 2
    w = rng.uniform(0.1, 3.0, n)
    X = np.zeros((n, 1))
    groups = {"a": a, "b": b}
    bds = ro.Dataset(X, y=y, weights=w, groups=groups)
    cds = ro.ClassDataset(X, y, weights=w, groups=groups)
    return bds, cds, rng.integers(0, 2, n), rng.random(n)


BINARY_GOALS = [
    (lambda: demographic_parity("a", 0.05), lambda: multiclass_demographic_parity("a", 0.05, classes=(1,))),
    (lambda: equal_opportunity("b", 0.1), lambda: multiclass_equal_opportunity("b", 0.1, classes=(1,))),
    (lambda: equalized_odds(("a", "b"), 0.02), lambda: multiclass_equalized_odds(("a", "b"), 0.02, classes=(1,))),
    (lambda: equalized_odds("a", 0.0), lambda: multiclass_equalized_odds("a", 0.0, classes=(1,))),
    (lambda: demographic_parity("a", 0.1, sides="lower", values=(0, 2)),
     lambda: multiclass_demographic_parity("a", 0.1, classes=(1,), sides="lower", values=(0, 2))),
    (lambda: equalized_odds("b", 0.05, sides="upper"),
     lambda: multiclass_equalized_odds("b", 0.05, classes=(1,), sides="upper")),
]


@pytest.mark.parametrize("seed", [20, 21, 22])
@pytest.mark.parametrize("pair", range(len(BINARY_GOALS)))
def test_k2_equals_the_binary_path(seed, pair):
    bds, cds, dec, prob = binary_pair(seed)
    bin_goal, mc_goal = BINARY_GOALS[pair]
    pb = ro.Problem(objective="error", constraints=[bin_goal()], datasets=bds)
    pm = ro.Problem(objective="error", constraints=[mc_goal()], datasets=cds)
    assert is_class_problem(pm) and not is_class_problem(pb)
    assert pb.n_constraints == pm.n_constraints > 0
    for eb, em in ((pb.evaluate(dec, kind="decisions"), pm.evaluate(dec)),
                   (pb.evaluate(prob, kind="probabilities"), pm.evaluate(np.c_[1.0 - prob, prob]))):
        check(eb.objective, em.objective, "objective")
        gb, gm = list(eb.constraints.values()), list(em.constraints.values())
        assert len(gb) == len(gm)
        for i, (x, z) in enumerate(zip(gb, gm)):
            check(x, z, f"constraint {i}: {list(eb.constraints)[i]} vs {list(em.constraints)[i]}")
        check(eb.max_violation, em.max_violation, "max_violation")


@pytest.mark.parametrize("seed", [23, 24])
def test_k2_rates_equal_the_binary_rates(seed):
    bds, cds, dec, prob = binary_pair(seed)
    sub_b = bds.context().subset(group="a", value=1) | bds.context().subset(group="b", value="q")
    sub_c = cds.context().subset(group="a", value=1) | cds.context().subset(group="b", value="q")
    pairs = [(ro.positive_prediction_rate(sub_b), ro.class_prediction_rate(sub_c, 1)),
             (ro.true_positive_rate(sub_b), ro.class_recall(sub_c, 1)),
             (ro.false_positive_rate(sub_b), ro.class_false_positive_rate(sub_c, 1)),
             (ro.true_negative_rate(sub_b), ro.class_recall(sub_c, 0)),
             (ro.error_rate(sub_b), ro.multiclass_error_rate(sub_c)),
             (ro.accuracy(sub_b), ro.multiclass_accuracy(sub_c))]
    for rb, rm in pairs:
        for x, z in ((ro.Problem(objective=rb, datasets=bds).evaluate(prob, kind="probabilities"),
                      ro.Problem(objective=rm, datasets=cds).evaluate(np.c_[1.0 - prob, prob])),
                     (ro.Problem(objective=rb, datasets=bds).evaluate(dec, kind="decisions"),
                      ro.Problem(objective=rm, datasets=cds).evaluate(dec))):
            check(x.objective, z.objective, f"{rb} vs {rm}")
