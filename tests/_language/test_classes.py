"""K-class rates (rateopt._language._classes) against brute-force loops over rows.

Every K-class rate leaf is measured through a :class:`~rateopt.Problem`
objective (and its ``rates``), for deterministic labels and for stochastic
predictions (Dirichlet rows), with random positive weights, on subsets built
from groups, ``&``, ``|``, ``~`` and masks; the reference walks the rows one
by one: ``sum of w_i P[i, k] over the numerator rows / sum of w_i over the
denominator rows``. The soft-label reading (``label_probabilities=``) is
checked the same way, each row counting ``L[i, y]`` towards class ``y``.
"""

import re

import numpy as np
import pytest
import rateopt as ro
from rateopt.exceptions import EmptySubsetError, RateoptError

TOL = 1e-12

CLASS_VALUES = {3: [2, 5, 9], 5: ["ant", "bee", "cat", "dog", "eel"]}


# --------------------------------------------------------------------------- data and references


def make_data(K, seed, n=None, soft=False):
    """Random K-class data: labels, weights, two group columns, a mask, and predictions."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 81)) if n is None else n
    classes = CLASS_VALUES[K]
    y_idx = rng.integers(0, K, n)
    y_idx[:K] = np.arange(K)  # every class present
    y = np.array([classes[i] for i in y_idx])
    w = rng.uniform(0.1, 3.0, n)
    g1 = rng.integers(0, 3, n)
    g2 = np.array(["u", "v"])[rng.integers(0, 2, n)]
    mask = rng.random(n) < 0.6
    ds = ro.ClassDataset(np.zeros((n, 1)), y, weights=w, groups={"g1": g1, "g2": g2})
    pred_idx = rng.integers(0, K, n)
    P = rng.dirichlet(np.ones(K), size=n)
    L = rng.dirichlet(np.full(K, 0.7), size=n) if soft else None
    return {
        "n": n, "K": K, "classes": classes, "y_idx": [int(v) for v in y_idx], "w": [float(v) for v in w],
        "g1": [int(v) for v in g1], "g2": [str(v) for v in g2], "mask": [bool(v) for v in mask], "ds": ds,
        "pred_idx": pred_idx, "pred_labels": np.array([classes[i] for i in pred_idx]), "P": P, "L": L,
    }


def subsets(ds, mask):
    """(name, context, brute-force membership of row i) triples."""
    ctx = ds.context()
    g1_1 = ctx.subset(group="g1", value=1)
    return [
        ("all", ctx, lambda d, i: True),
        ("g1=1", g1_1, lambda d, i: d["g1"][i] == 1),
        ("g1 in (0,2)", ctx.subset(group="g1", value=[0, 2]), lambda d, i: d["g1"][i] in (0, 2)),
        ("and", ctx.subset(group="g1", value=0) & ctx.subset(group="g2", value="v"),
         lambda d, i: d["g1"][i] == 0 and d["g2"][i] == "v"),
        ("or", ctx.subset(group="g1", value=2) | ctx.subset(group="g2", value="u"),
         lambda d, i: d["g1"][i] == 2 or d["g2"][i] == "u"),
        ("not", ~g1_1, lambda d, i: d["g1"][i] != 1),
        ("mask", ctx.subset(np.array(mask)), lambda d, i: d["mask"][i]),
        ("mask & not", ctx.subset(np.array(mask)) & ~ctx.subset(group="g2", value="u"),
         lambda d, i: d["mask"][i] and d["g2"][i] != "u"),
    ]


def label_row(d, i, soft):
    """Row i's label distribution over the K classes (one-hot, or the soft labels)."""
    if soft:
        return [float(v) for v in d["L"][i]]
    return [1.0 if c == d["y_idx"][i] else 0.0 for c in range(d["K"])]


def pred_row(d, i, probabilities):
    """Row i's predicted-class distribution."""
    if probabilities:
        return [float(v) for v in d["P"][i]]
    return [1.0 if c == d["pred_idx"][i] else 0.0 for c in range(d["K"])]


def ref_rate(d, member, predicted, num_classes, den_classes, probabilities, soft=False):
    """``sum_{i in S} w_i sum_{y in num} L[i,y] P[i,predicted] / sum_{i in S} w_i sum_{y in den} L[i,y]``.

    Returns None when the denominator is zero.
    """
    num = den = 0.0
    for i in range(d["n"]):
        if not member(d, i):
            continue
        lab = label_row(d, i, soft)
        pr = pred_row(d, i, probabilities)
        for y in range(d["K"]):
            if y in num_classes:
                num += d["w"][i] * lab[y] * pr[predicted]
            if y in den_classes:
                den += d["w"][i] * lab[y]
    return None if den == 0.0 else num / den


def ref_error(d, member, probabilities, soft=False):
    """``sum_{i in S} w_i P(yhat_i != y_i) / W(S)``, row by row."""
    num = den = 0.0
    for i in range(d["n"]):
        if not member(d, i):
            continue
        lab = label_row(d, i, soft)
        pr = pred_row(d, i, probabilities)
        agree = 0.0
        for c in range(d["K"]):
            agree += lab[c] * pr[c]
        num += d["w"][i] * (1.0 - agree)
        den += d["w"][i]
    return num / den


def rate_cases(d):
    """(leaf-building function, reference arguments) for every K-class rate leaf of every class."""
    K, cls = d["K"], d["classes"]
    every = set(range(K))
    out = []
    for k in range(K):
        out.append(("ppr", lambda c, k=k: ro.class_prediction_rate(c, cls[k]), (k, every, every)))
        out.append(("recall", lambda c, k=k: ro.class_recall(c, cls[k]), (k, {k}, {k})))
        out.append(("fpr", lambda c, k=k: ro.class_false_positive_rate(c, cls[k]), (k, every - {k}, every - {k})))
        for j in range(K):
            out.append(("conf", lambda c, j=j, k=k: ro.confusion_rate(c, cls[j], cls[k]), (j, {k}, every)))
    return out


def check(a, b, what):
    assert abs(a - b) <= TOL, f"{what}: {a!r} != {b!r} (diff {a - b:.3g})"


def predictions(d, probabilities):
    return d["P"] if probabilities else d["pred_labels"]


# --------------------------------------------------------------------------- ClassDataset


def test_classes_sorted_by_default():
    ds = ro.ClassDataset(np.zeros((5, 1)), ["b", "c", "a", "b", "c"])
    assert ds.classes.tolist() == ["a", "b", "c"]
    assert ds.n_classes == 3
    assert ds.label_index.tolist() == [1, 2, 0, 1, 2]
    ds = ro.ClassDataset(np.zeros((4, 1)), [30, 10, 20, 10])
    assert ds.classes.tolist() == [10, 20, 30]
    assert ds.label_index.tolist() == [2, 0, 1, 0]
    assert ds.label_index.dtype == np.int32
    assert not ds.label_index.flags.writeable
    assert not ds.classes.flags.writeable


def test_explicit_classes_keep_their_order_and_may_be_absent():
    ds = ro.ClassDataset(np.zeros((3, 1)), ["b", "c", "a"], classes=["c", "a", "b"])
    assert ds.classes.tolist() == ["c", "a", "b"]
    assert ds.label_index.tolist() == [2, 0, 1]
    ds = ro.ClassDataset(np.zeros((3, 1)), ["b", "c", "a"], classes=np.array(["c", "a", "b"], dtype=object))
    assert ds.label_index.tolist() == [2, 0, 1]
    ds = ro.ClassDataset(np.zeros((3, 1)), [1, 2, 2], classes=[2, 1, 3])
    assert ds.classes.tolist() == [2, 1, 3] and ds.n_classes == 3
    assert ds.label_index.tolist() == [1, 0, 0]


def test_labels_outside_classes_refused_naming_y():
    with pytest.raises(RateoptError, match=r"^y has labels that are not among classes \[1, 3\]: \[2\]"):
        ro.ClassDataset(np.zeros((3, 1)), [1, 1, 2], classes=[1, 3])
    with pytest.raises(RateoptError, match=r"y has labels .*\['z'\]"):
        ro.ClassDataset(np.zeros((3, 1)), ["a", "z", "b"], classes=np.array(["a", "b"], dtype=object))


def test_one_class_refused():
    with pytest.raises(RateoptError, match=r"y needs at least two classes, got 1: \[1\]"):
        ro.ClassDataset(np.zeros((3, 1)), [1, 1, 1])
    with pytest.raises(RateoptError, match="at least two classes"):
        ro.ClassDataset(np.zeros((3, 1)), [1, 1, 1], classes=[1])


def test_missing_labels_refused():
    with pytest.raises(RateoptError, match="needs labels y"):
        ro.ClassDataset(np.zeros((3, 1)), None)
    with pytest.raises(RateoptError, match="y contains missing values"):
        ro.ClassDataset(np.zeros((3, 1)), [1.0, np.nan, 2.0])
    with pytest.raises(RateoptError, match="y contains missing values"):
        ro.ClassDataset(np.zeros((3, 1)), ["a", None, "b"])
    with pytest.raises(RateoptError, match="y has 2 entries"):
        ro.ClassDataset(np.zeros((3, 1)), [1, 2])


def test_repeated_or_2d_classes_refused():
    with pytest.raises(RateoptError, match="classes has repeated values"):
        ro.ClassDataset(np.zeros((3, 1)), [1, 2, 2], classes=[2, 1, 2])
    with pytest.raises(RateoptError, match="classes must be 1-D"):
        ro.ClassDataset(np.zeros((3, 1)), [1, 2, 2], classes=[[1, 2]])


# --------------------------------------------------------------------------- every rate vs brute force


@pytest.mark.parametrize("probabilities", [False, True], ids=["labels", "probabilities"])
@pytest.mark.parametrize("K,seed", [(3, 0), (3, 1), (5, 2), (5, 3)])
def test_every_rate_leaf_matches_brute_force(K, seed, probabilities):
    d = make_data(K, seed)
    ds = d["ds"]
    compared = empty = 0
    for sname, ctx, member in subsets(ds, d["mask"]):
        for rname, build, (pred, num, den) in rate_cases(d):
            leaf = build(ctx)
            expected = ref_rate(d, member, pred, num, den, probabilities)
            if expected is None:
                with pytest.raises(EmptySubsetError, match="zero weight"):
                    ro.Problem(objective=leaf, datasets=ds)
                empty += 1
                continue
            ev = ro.Problem(objective=leaf, datasets=ds).evaluate(predictions(d, probabilities))
            check(ev.objective, expected, f"{rname} on {sname}")
            assert list(ev.rates) == [leaf.name]
            check(ev.rates[leaf.name], expected, f"{rname} on {sname} (rates)")
            compared += 1
    assert compared >= 0.95 * (compared + empty)


@pytest.mark.parametrize("probabilities", [False, True], ids=["labels", "probabilities"])
@pytest.mark.parametrize("K,seed", [(3, 4), (5, 5)])
def test_error_and_accuracy_match_brute_force(K, seed, probabilities):
    d = make_data(K, seed)
    for sname, ctx, member in subsets(d["ds"], d["mask"]):
        err = ref_error(d, member, probabilities)
        ev = ro.Problem(objective=ro.multiclass_error_rate(ctx), datasets=d["ds"]).evaluate(
            predictions(d, probabilities))
        check(ev.objective, err, f"error on {sname}")
        ev = ro.Problem(objective=ro.multiclass_accuracy(ctx), datasets=d["ds"]).evaluate(
            predictions(d, probabilities))
        check(ev.objective, 1.0 - err, f"accuracy on {sname}")
        # the leaves of accuracy are the diagonal confusion entries
        assert len(ev.rates) == d["K"]


def test_rates_of_a_dataset_argument_mean_the_whole_dataset():
    d = make_data(3, 6)
    ds = d["ds"]
    for build in (lambda c: ro.class_prediction_rate(c, 5), lambda c: ro.class_recall(c, 9),
                  lambda c: ro.class_false_positive_rate(c, 2), lambda c: ro.confusion_rate(c, 2, 9),
                  ro.multiclass_error_rate, ro.multiclass_accuracy):
        a = ro.Problem(objective=build(ds), datasets=ds).evaluate(d["P"]).objective
        b = ro.Problem(objective=build(ds.context()), datasets=ds).evaluate(d["P"]).objective
        assert a == b


def test_leaf_names():
    ds = ro.ClassDataset(np.zeros((4, 1)), ["a", "b", "c", "a"], groups={"g": [0, 0, 1, 1]})
    sub = ds.context().subset(group="g", value=1)
    assert ro.class_prediction_rate(ds.context(), "b").name == "ppr('b')[all]"
    assert ro.class_recall(sub, "a").name == "recall('a')[g=1]"
    assert ro.class_false_positive_rate(sub, "c").name == "fpr('c')[g=1]"
    assert ro.confusion_rate(sub, "a", "c").name == "conf('a','c')[g=1]"


# --------------------------------------------------------------------------- expressions of rates


@pytest.mark.parametrize("probabilities", [False, True], ids=["labels", "probabilities"])
@pytest.mark.parametrize("K,seed", [(3, 7), (5, 8)])
def test_affine_expressions_and_equal(K, seed, probabilities):
    d = make_data(K, seed)
    ds, cls = d["ds"], d["classes"]
    subs = subsets(ds, d["mask"])
    _, s_or, m_or = subs[4]
    _, s_not, m_not = subs[5]
    every = set(range(K))
    a = ro.class_recall(s_or, cls[1])
    b = ro.confusion_rate(s_not, cls[0], cls[K - 1])
    c = ro.class_false_positive_rate(ds.context(), cls[2])
    ra = ref_rate(d, m_or, 1, {1}, {1}, probabilities)
    rb = ref_rate(d, m_not, 0, {K - 1}, every, probabilities)
    rc = ref_rate(d, lambda d_, i: True, 2, every - {2}, every - {2}, probabilities)
    pred = predictions(d, probabilities)

    ev = ro.Problem(objective=a - 2 * b + 0.3, datasets=ds).evaluate(pred)
    check(ev.objective, ra - 2 * rb + 0.3, "a - 2b + 0.3")
    check(ev.rates[a.name], ra, "a")
    check(ev.rates[b.name], rb, "b")

    cons = [a - 2 * b + 0.3 <= 0.1, 0.5 * c >= b - a, *ro.equal(a, c, 0.05), *ro.equal(b, c, name="bc")]
    p = ro.Problem(objective=-c, constraints=cons, datasets=ds)
    ev = p.evaluate(pred)
    check(ev.objective, -rc, "-c")
    names = list(ev.constraints)
    assert names[4:] == ["bc (<=)", "bc (>=)"]
    assert len(names) == 6 and p.n_constraints == 6
    expected = [ra - 2 * rb + 0.3 - 0.1, (rb - ra) - 0.5 * rc, ra - (rc + 0.05), (rc - 0.05) - ra, rb - rc, rc - rb]
    for name, e in zip(names, expected):
        check(ev.constraints[name], e, name)
        check(ev.violations[name], max(0.0, e), name)
    check(ev.max_violation, max(0.0, *expected), "max_violation")
    assert set(ev.rates) == {a.name, b.name, c.name}


def test_equal_on_class_rates_names():
    ds = ro.ClassDataset(np.zeros((4, 1)), [0, 1, 2, 0], groups={"g": [0, 0, 1, 1]})
    a = ro.class_prediction_rate(ds.context().subset(group="g", value=1), 2)
    b = ro.class_prediction_rate(ds.context(), 2)
    assert [c.name for c in ro.equal(a, b, 0.05)] == ["ppr(2)[g=1] <= ppr(2)[all] + 0.05",
                                                       "ppr(2)[g=1] >= ppr(2)[all] - 0.05"]


# --------------------------------------------------------------------------- soft labels


@pytest.mark.parametrize("probabilities", [False, True], ids=["labels", "probabilities"])
@pytest.mark.parametrize("K,seed", [(3, 9), (5, 10)])
def test_soft_label_reading_matches_brute_force(K, seed, probabilities):
    d = make_data(K, seed, soft=True)
    ds = d["ds"]
    pred = predictions(d, probabilities)
    for sname, ctx, member in subsets(ds, d["mask"])[::2]:
        for rname, build, (k, num, den) in rate_cases(d):
            leaf = build(ctx)
            expected = ref_rate(d, member, k, num, den, probabilities, soft=True)
            ev = ro.Problem(objective=leaf, datasets=ds, label_probabilities=d["L"]).evaluate(pred)
            check(ev.objective, expected, f"soft {rname} on {sname}")
            # the hard reading differs: the soft labels are really used
        err = ref_error(d, member, probabilities, soft=True)
        ev = ro.Problem(objective=ro.multiclass_error_rate(ctx), datasets=ds,
                        label_probabilities=d["L"]).evaluate(pred)
        check(ev.objective, err, f"soft error on {sname}")
        hard = ro.Problem(objective=ro.multiclass_error_rate(ctx), datasets=ds).evaluate(pred)
        assert abs(hard.objective - ev.objective) > 1e-3


def test_soft_labels_that_are_one_hot_give_the_hard_rates():
    d = make_data(5, 11)
    ds = d["ds"]
    onehot = np.eye(5)[np.array(d["y_idx"])]
    ctx = ds.context().subset(group="g1", value=2)
    cons = ro.goals.multiclass_equalized_odds("g2", slack=0.02).bind(ds)
    for obj in (ro.class_recall(ctx, "cat"), ro.multiclass_error_rate(ctx), "balanced_error", "macro_f1"):
        hard = ro.Problem(objective=obj, constraints=cons, datasets=ds).evaluate(d["P"])
        soft = ro.Problem(objective=obj, constraints=cons, datasets=ds,
                                    label_probabilities=onehot).evaluate(d["P"])
        check(soft.objective, hard.objective, str(obj))
        for name in hard.constraints:
            check(soft.constraints[name], hard.constraints[name], name)


def test_label_probabilities_validated():
    d = make_data(3, 12)
    ds, n = d["ds"], d["n"]
    with pytest.raises(RateoptError, match="label_probabilities: every row of class probabilities"):
        ro.Problem(datasets=ds, label_probabilities=np.full((n, 3), 0.5))
    with pytest.raises(RateoptError, match=rf"label_probabilities must be class probabilities of shape \({n}, 3\)"):
        ro.Problem(datasets=ds, label_probabilities=d["pred_labels"])
    with pytest.raises(RateoptError, match=rf"label_probabilities: class probabilities must have shape \({n}, 3\)"):
        ro.Problem(datasets=ds, label_probabilities=np.full((n, 4), 0.25))


# --------------------------------------------------------------------------- errors


def binary_and_class(n=30, seed=13):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    y[:3] = [0, 1, 2]
    g = rng.integers(0, 2, n)
    cds = ro.ClassDataset(np.zeros((n, 1)), y, groups={"g": g}, name="cls")
    bds = ro.Dataset(np.zeros((n, 1)), y=(y == 1).astype(int), groups={"g": g}, name="bin")
    return cds, bds


def test_binary_rate_in_a_k_class_problem_refused():
    cds, bds = binary_and_class()
    for leaf in (ro.positive_prediction_rate(bds.context()), ro.positive_prediction_rate(cds.context())):
        with pytest.raises(RateoptError, match=r"ppr\[(bin|cls):all\] is a binary rate; a K-class problem takes K-class"):
            ro.Problem(objective=leaf, datasets=cds)
        with pytest.raises(RateoptError, match="is a binary rate"):
            ro.Problem(constraints=[ro.class_recall(cds, 1) >= leaf], datasets=cds)
    with pytest.raises(RateoptError, match="is a binary rate"):
        ro.Problem(constraints=ro.goals.demographic_parity("g", slack=0.1).bind(bds), datasets=cds)


def test_k_class_rate_in_a_binary_problem_refused():
    cds, bds = binary_and_class()
    leaf = ro.class_recall(cds.context(), 1)
    with pytest.raises(RateoptError, match=r"recall\(1\)\[(cls:)?all\] is a K-class rate; K-class rates are compiled by a "
                                           r"problem on a ClassDataset"):
        ro.Problem(objective=leaf, datasets=bds)
    with pytest.raises(RateoptError, match="is a K-class rate"):
        ro.Problem(objective=leaf)
    with pytest.raises(RateoptError, match="is a K-class rate"):
        ro.Problem(objective=ro.error_rate(bds.context()), constraints=[leaf >= 0.3], datasets=bds)


def test_rate_on_another_class_dataset_refused():
    cds, _ = binary_and_class()
    other, _ = binary_and_class(seed=14)
    with pytest.raises(RateoptError, match=r"recall\(1\)\[cls:all\] is measured on another dataset than the problem.s \(.cls.\)"):
        ro.Problem(objective=ro.class_recall(other, 1), datasets=cds)


def test_rate_on_an_empty_subset_raises():
    cds, _ = binary_and_class()
    n = cds.n_samples
    empty = cds.context().subset(np.zeros(n, dtype=bool))
    for leaf in (ro.class_prediction_rate(empty, 0), ro.class_recall(empty, 1), ro.confusion_rate(empty, 0, 2)):
        with pytest.raises(EmptySubsetError, match=re.escape(f"rate {leaf.name} is measured on a subset of zero weight")):
            ro.Problem(objective=leaf, datasets=cds)
    # a class absent from the labels: its recall has no denominator
    ds = ro.ClassDataset(np.zeros((4, 1)), [0, 1, 1, 0], classes=[0, 1, 2])
    with pytest.raises(EmptySubsetError, match=r"recall\(2\)\[all\] is measured on a subset of zero weight"):
        ro.Problem(objective=ro.class_recall(ds, 2), datasets=ds)
    # zero weights are an empty subset too
    ds = ro.ClassDataset(np.zeros((4, 1)), [0, 1, 2, 0], weights=[1.0, 1.0, 0.0, 1.0])
    with pytest.raises(EmptySubsetError, match=r"recall\(2\)"):
        ro.Problem(objective=ro.class_recall(ds, 2), datasets=ds)
    # but its prediction rate and false-positive rate are fine
    ev = ro.Problem(objective=ro.class_false_positive_rate(ds, 2), datasets=ds).evaluate(np.array([2, 0, 0, 0]))
    check(ev.objective, 1.0 / 3.0, "fpr with a zero-weight row")


def test_class_not_in_classes_refused():
    cds, _ = binary_and_class()
    with pytest.raises(RateoptError, match=r"class=7 is not a class of dataset 'cls'; classes: \[0, 1, 2\]"):
        ro.class_prediction_rate(cds.context(), 7)
    with pytest.raises(RateoptError, match=r"class=7 is not a class"):
        ro.class_recall(cds, 7)
    with pytest.raises(RateoptError, match=r"class='1' is not a class"):
        ro.class_false_positive_rate(cds, "1")
    with pytest.raises(RateoptError, match=r"predicted=7 is not a class"):
        ro.confusion_rate(cds, 7, 0)
    with pytest.raises(RateoptError, match=r"true=-1 is not a class"):
        ro.confusion_rate(cds, 0, -1)


def test_rates_need_a_class_dataset():
    _, bds = binary_and_class()
    with pytest.raises(TypeError, match="K-class rates take a context of a ClassDataset.*got Context of a Dataset"):
        ro.class_recall(bds.context(), 1)
    with pytest.raises(TypeError, match="got ndarray"):
        ro.class_prediction_rate(np.zeros(3), 1)


def test_predictions_validated():
    d = make_data(3, 15)
    ds, n = d["ds"], d["n"]
    p = ro.Problem(datasets=ds)
    with pytest.raises(RateoptError, match=rf"predictions must be labels of shape \({n},\) or probabilities of "
                                           rf"shape \({n}, 3\); got shape \({n + 1},\)"):
        p.evaluate(np.full(n + 1, 2))
    with pytest.raises(RateoptError, match=r"got shape \(.*, 3, 1\)"):
        p.evaluate(d["P"][:, :, None])
    with pytest.raises(RateoptError, match=rf"class probabilities must have shape \({n}, 3\), got \({n}, 4\)"):
        p.evaluate(np.full((n, 4), 0.25))
    with pytest.raises(RateoptError, match=r"predictions has labels that are not classes \[2, 5, 9\]: \[3\]"):
        p.evaluate(np.where(np.arange(n) == 4, 3, d["pred_labels"]))
    with pytest.raises(RateoptError, match=r"predictions has labels that are not classes"):
        p.evaluate(np.zeros(n, dtype=int))  # class positions are not labels
    with pytest.raises(RateoptError, match=r"predictions has labels that are not classes"):
        p.evaluate(np.full(n, 0.5))
    P = d["P"].copy()
    P[3] *= 1.01
    with pytest.raises(RateoptError, match="every row of class probabilities must be non-negative and sum to 1"):
        p.evaluate(P)
    P = d["P"].copy()
    P[3] = [1.5, -0.5, 0.0]
    with pytest.raises(RateoptError, match="non-negative and sum to 1"):
        p.evaluate(P)
    P = d["P"].copy()
    P[3, 0] = np.nan
    with pytest.raises(RateoptError, match="non-negative and sum to 1"):
        p.evaluate(P)
    # strings among integer classes
    with pytest.raises(RateoptError, match="predictions"):
        p.evaluate(np.full(n, "a"))
