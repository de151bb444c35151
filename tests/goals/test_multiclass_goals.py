"""K-class goals (rateopt.goals._multiclass) against brute-force loops over rows.

Each goal is bound in a :class:`~rateopt.Problem` and evaluated on
random K-class predictors (labels and class probabilities) with random
weights; the reference builds the expected constraint list (count, order and
every value ``g``) from rates computed row by row.
"""

import numpy as np
import pytest
import rateopt as ro
from rateopt._compiler._toml import RECIPES, GoalsSpec, read_goals, write_goals
from rateopt.exceptions import RateoptError
from rateopt.goals import (
    ClassPrecisionFloor,
    ClassPriorMatching,
    ClassRecallFloor,
    MulticlassDemographicParity,
    MulticlassEqualizedOdds,
    MulticlassEqualOpportunity,
    class_precision_floor,
    class_prior_matching,
    class_recall_floor,
    multiclass_demographic_parity,
    multiclass_equal_opportunity,
    multiclass_equalized_odds,
)

TOL = 1e-12

CLASS_VALUES = {3: ["hi", "lo", "mid"], 4: [1, 2, 4, 8], 5: [0, 1, 2, 3, 4]}


def make_data(K, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(60, 81))
    classes = CLASS_VALUES[K]
    y_idx = rng.integers(0, K, n)
    # every class in every value of both group columns
    a = rng.integers(0, 3, n)
    b = np.array(["p", "q"])[rng.integers(0, 2, n)]
    for j in range(3 * K):
        a[j], y_idx[j] = j % 3, j // 3
    for j in range(2 * K):
        b[3 * K + j], y_idx[3 * K + j] = "pq"[j % 2], j // 2
    w = rng.uniform(0.1, 3.0, n)
    y = np.array(classes, dtype=object if isinstance(classes[0], str) else None)[y_idx]
    ds = ro.ClassDataset(np.zeros((n, 1)), y, weights=w, groups={"a": a, "b": b})
    pred_idx = rng.integers(0, K, n)
    return {
        "n": n, "K": K, "classes": classes, "ds": ds, "y": [int(v) for v in y_idx], "w": [float(v) for v in w],
        "a": [int(v) for v in a], "b": [str(v) for v in b],
        "labels": np.array(classes, dtype=object if isinstance(classes[0], str) else None)[pred_idx],
        "onehot": [[1.0 if c == k else 0.0 for c in range(K)] for k in pred_idx],
        "P": rng.dirichlet(np.full(K, 0.8), size=n),
    }


def rows(d, probabilities):
    if probabilities:
        return [[float(v) for v in row] for row in d["P"]]
    return d["onehot"]


def ref(d, P, member, predicted, num, den):
    """``sum_{i in S, y_i in num} w_i P[i, predicted] / sum_{i in S, y_i in den} w_i``, row by row."""
    top = bottom = 0.0
    for i in range(d["n"]):
        if not member(i):
            continue
        if d["y"][i] in num:
            top += d["w"][i] * P[i][predicted]
        if d["y"][i] in den:
            bottom += d["w"][i]
    assert bottom > 0
    return top / bottom


def rate_refs(d, P):
    """Brute-force rate functions by name: (member, k) -> value."""
    every = set(range(d["K"]))
    return {
        "ppr": lambda m, k: ref(d, P, m, k, every, every),
        "recall": lambda m, k: ref(d, P, m, k, {k}, {k}),
        "fpr": lambda m, k: ref(d, P, m, k, every - {k}, every - {k}),
        "tp": lambda m, k: ref(d, P, m, k, {k}, every),
    }


def group_members(d, group, values=None):
    """The group subsets of a goal, in the goal's order (columns, then their sorted values)."""
    cols = group if isinstance(group, tuple) else (group,)
    out = []
    for col in cols:
        vals = values if values is not None else sorted(set(d[col]))
        for v in vals:
            out.append(lambda i, col=col, v=v: d[col][i] == v)
    return out


def everyone(i):
    return True


def within(lhs, ref_, slack, sides):
    """g of ``lhs <= ref + slack`` then of ``lhs >= ref - slack``."""
    out = []
    if sides in ("both", "upper"):
        out.append(lhs - (ref_ + slack))
    if sides in ("both", "lower"):
        out.append((ref_ - slack) - lhs)
    return out


def expected_parity(d, P, rate_names, group, slack, classes=None, sides="both", values=None):
    R = rate_refs(d, P)
    ks = range(d["K"]) if classes is None else [d["classes"].index(c) for c in classes]
    out = []
    for rn in rate_names:
        for k in ks:
            whole = R[rn](everyone, k)
            for m in group_members(d, group, values):
                out.extend(within(R[rn](m, k), whole, slack, sides))
    return out


def check_goal(d, goal, expected, probabilities):
    p = ro.Problem(constraints=[goal], datasets=d["ds"])
    ev = p.evaluate(d["P"] if probabilities else d["labels"])
    got = list(ev.constraints.values())
    assert len(got) == len(expected) == p.n_constraints, (len(got), len(expected))
    for i, (a, b) in enumerate(zip(got, expected)):
        assert abs(a - b) <= TOL, f"constraint {i} ({list(ev.constraints)[i]}): {a!r} != {b!r}"
    assert abs(ev.max_violation - max(0.0, *expected)) <= TOL
    return p, ev


PARITY = [
    (multiclass_demographic_parity, ("ppr",)),
    (multiclass_equal_opportunity, ("recall",)),
    (multiclass_equalized_odds, ("recall", "fpr")),
]

SEEDS = [(3, 0), (4, 1), (5, 2)]
KINDS = pytest.mark.parametrize("probabilities", [False, True], ids=["labels", "probabilities"])


@KINDS
@pytest.mark.parametrize("K,seed", SEEDS)
@pytest.mark.parametrize("recipe,rate_names", PARITY, ids=lambda x: getattr(x, "__name__", None))
def test_parity_goals_default(recipe, rate_names, K, seed, probabilities):
    d = make_data(K, seed)
    check_goal(d, recipe("a", slack=0.05), expected_parity(d, rows(d, probabilities), rate_names, "a", 0.05),
               probabilities)


@KINDS
@pytest.mark.parametrize("K,seed", SEEDS)
@pytest.mark.parametrize("recipe,rate_names", PARITY, ids=lambda x: getattr(x, "__name__", None))
@pytest.mark.parametrize("sides", ["lower", "upper"])
def test_parity_goals_options(recipe, rate_names, K, seed, probabilities, sides):
    d = make_data(K, seed)
    P = rows(d, probabilities)
    cls = d["classes"]
    # two group columns, a class subset out of order, one side
    goal = recipe(("a", "b"), 0.1, classes=(cls[2], cls[0]), sides=sides)
    check_goal(d, goal, expected_parity(d, P, rate_names, ("a", "b"), 0.1, (cls[2], cls[0]), sides), probabilities)
    # group values, zero slack, named
    goal = recipe("a", classes=[cls[1]], values=(2, 0), name="mc")
    _, ev = check_goal(d, goal, expected_parity(d, P, rate_names, "a", 0.0, (cls[1],), "both", (2, 0)),
                       probabilities)
    assert all(n.startswith("mc: ") for n in ev.constraints)
    goal = recipe("b", 0.2, values=("q",), sides=sides)
    check_goal(d, goal, expected_parity(d, P, rate_names, "b", 0.2, None, sides, ("q",)), probabilities)


def test_parity_goal_names_and_order():
    d = make_data(3, 3)
    p = ro.Problem(constraints=[multiclass_equalized_odds("b", 0.1, classes=("hi",))], datasets=d["ds"])
    assert p.constraint_names == (
        "recall('hi')[b=p] <= recall('hi')[all] + 0.1", "recall('hi')[b=p] >= recall('hi')[all] - 0.1",
        "recall('hi')[b=q] <= recall('hi')[all] + 0.1", "recall('hi')[b=q] >= recall('hi')[all] - 0.1",
        "fpr('hi')[b=p] <= fpr('hi')[all] + 0.1", "fpr('hi')[b=p] >= fpr('hi')[all] - 0.1",
        "fpr('hi')[b=q] <= fpr('hi')[all] + 0.1", "fpr('hi')[b=q] >= fpr('hi')[all] - 0.1")


@KINDS
@pytest.mark.parametrize("K,seed", SEEDS)
def test_class_prior_matching(K, seed, probabilities):
    d = make_data(K, seed)
    P = rows(d, probabilities)
    R = rate_refs(d, P)
    rng = np.random.default_rng(seed + 100)
    targets = rng.dirichlet(np.ones(K))
    targets[0] = 0.01  # a target near 0: the lower bound is clipped at 0
    targets[1] = 0.0
    targets = targets / targets.sum()
    targets = tuple(float(t) for t in targets)
    slack = 0.03
    for group in (None, "a", ("a", "b")):
        members = [everyone] if group is None else group_members(d, group)
        expected = []
        for m in members:
            for k, t in enumerate(targets):
                r = R["ppr"](m, k)
                expected += [r - min(1.0, t + slack), max(0.0, t - slack) - r]
        check_goal(d, class_prior_matching(targets, slack, group), expected, probabilities)
    # values
    expected = []
    for k, t in enumerate(targets):
        r = R["ppr"](lambda i: d["b"][i] == "q", k)
        expected += [r - min(1.0, t + slack), max(0.0, t - slack) - r]
    check_goal(d, class_prior_matching(targets, slack, "b", values=("q",)), expected, probabilities)
    # a target of 1 clips the upper bound at 1
    one = tuple([1.0] + [0.0] * (K - 1))
    expected = []
    for k, t in enumerate(one):
        r = R["ppr"](everyone, k)
        expected += [r - min(1.0, t + 0.2), max(0.0, t - 0.2) - r]
    check_goal(d, class_prior_matching(one, 0.2), expected, probabilities)


@KINDS
@pytest.mark.parametrize("K,seed", SEEDS)
def test_class_recall_floor(K, seed, probabilities):
    d = make_data(K, seed)
    R = rate_refs(d, rows(d, probabilities))
    for group, classes in ((None, None), ("a", None), (("a", "b"), (d["classes"][-1], d["classes"][0]))):
        members = [everyone] if group is None else group_members(d, group)
        ks = range(K) if classes is None else [d["classes"].index(c) for c in classes]
        expected = [0.4 - R["recall"](m, k) for m in members for k in ks]
        check_goal(d, class_recall_floor(0.4, group, classes=classes), expected, probabilities)


@KINDS
@pytest.mark.parametrize("K,seed", SEEDS)
def test_class_precision_floor(K, seed, probabilities):
    d = make_data(K, seed)
    R = rate_refs(d, rows(d, probabilities))
    for group, classes in ((None, None), ("b", None), (("b", "a"), (d["classes"][1],))):
        members = [everyone] if group is None else group_members(d, group)
        ks = range(K) if classes is None else [d["classes"].index(c) for c in classes]
        # P(yhat=k, y=k | S) >= tau P(yhat=k | S): g = tau ppr - tp
        expected = [0.35 * R["ppr"](m, k) - R["tp"](m, k) for m in members for k in ks]
        check_goal(d, class_precision_floor(0.35, group, classes=classes), expected, probabilities)


@KINDS
def test_precision_floor_is_a_precision_floor(probabilities):
    """g <= 0 exactly when the class precision P(y=k | yhat=k, S) >= tau (where k is predicted)."""
    d = make_data(4, 4)
    P = rows(d, probabilities)
    p = ro.Problem(constraints=[class_precision_floor(0.3, "a")], datasets=d["ds"])
    ev = p.evaluate(d["P"] if probabilities else d["labels"])
    g = list(ev.constraints.values())
    i = 0
    for m in group_members(d, "a"):
        for k in range(4):
            tp = pred = 0.0
            for r in range(d["n"]):
                if m(r):
                    pred += d["w"][r] * P[r][k]
                    tp += d["w"][r] * P[r][k] * (d["y"][r] == k)
            assert pred > 0
            assert (g[i] <= 0) == (tp / pred >= 0.3)
            i += 1


def test_several_goals_and_expressions_stack_in_order():
    d = make_data(3, 5)
    P = rows(d, True)
    R = rate_refs(d, P)
    goals = [multiclass_demographic_parity("b", 0.02, classes=("mid",)), class_recall_floor(0.3)]
    extra = ro.class_recall(d["ds"], "lo") <= 0.9
    p = ro.Problem(objective="balanced_error", constraints=[goals[0], extra, goals[1]], datasets=d["ds"])
    ev = p.evaluate(d["P"])
    expected = (expected_parity(d, P, ("ppr",), "b", 0.02, ("mid",)) + [R["recall"](everyone, 1) - 0.9]
                + [0.3 - R["recall"](everyone, k) for k in range(3)])
    got = list(ev.constraints.values())
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert abs(a - b) <= TOL


def test_duplicate_goals_get_unique_names():
    d = make_data(3, 6)
    g = class_recall_floor(0.2, classes=("lo",))
    p = ro.Problem(constraints=[g, g], datasets=d["ds"])
    assert p.constraint_names == ("recall('lo')[all] >= 0.2", "recall('lo')[all] >= 0.2 #2")


# --------------------------------------------------------------------------- refusals and validation


ALL_GOALS = [
    multiclass_demographic_parity("g", 0.1),
    multiclass_equal_opportunity("g", 0.1),
    multiclass_equalized_odds("g", 0.1),
    class_prior_matching((0.5, 0.5), 0.1),
    class_prior_matching((0.5, 0.5), 0.1, "g"),
    class_recall_floor(0.5),
    class_precision_floor(0.5),
]


@pytest.mark.parametrize("goal", ALL_GOALS, ids=repr)
def test_k_class_goal_on_a_binary_dataset_refused(goal):
    bds = ro.Dataset(np.zeros((6, 1)), y=[0, 1, 0, 1, 1, 0], groups={"g": [0, 0, 0, 1, 1, 1]})
    msg = f"{type(goal).__name__} is a K-class goal: bind it to a rateopt.ClassDataset, not a Dataset"
    with pytest.raises(RateoptError, match=msg):
        goal.bind(bds)
    with pytest.raises(RateoptError, match=msg):
        ro.Problem(constraints=[goal], datasets=bds)


@pytest.mark.parametrize("recipe", [multiclass_demographic_parity, multiclass_equal_opportunity,
                                    multiclass_equalized_odds])
def test_parity_parameters_validated(recipe):
    owner = recipe.__name__
    for bad, msg in ((-0.01, "slack must be >= 0.0"), (1.5, "slack must be <= 1.0"),
                     (float("nan"), "slack must be a finite number"), ("x", "slack must be a finite number")):
        with pytest.raises(RateoptError, match=f"{owner}: {msg}"):
            recipe("g", bad)
    recipe("g", 0.0), recipe("g", 1.0)
    with pytest.raises(RateoptError, match=f"{owner}: sides must be one of"):
        recipe("g", 0.1, sides="left")
    with pytest.raises(RateoptError, match=f"{owner}: group must name a group column"):
        recipe(None, 0.1)
    with pytest.raises(RateoptError, match=f"{owner}: group is empty"):
        recipe((), 0.1)
    with pytest.raises(RateoptError, match=f"{owner}: classes must be a sequence of class labels or None"):
        recipe("g", 0.1, classes="abc")
    with pytest.raises(RateoptError, match=f"{owner}: classes must be a sequence"):
        recipe("g", 0.1, classes=3)
    with pytest.raises(RateoptError, match=f"{owner}: classes is empty"):
        recipe("g", 0.1, classes=())
    assert recipe("g", 0.1, classes=[1, 2]).classes == (1, 2)


def test_unknown_classes_refused_at_binding():
    d = make_data(3, 7)
    for goal in (multiclass_demographic_parity("a", 0.1, classes=("lo", "top")),
                 multiclass_equalized_odds("a", 0.1, classes=("top",)),
                 class_recall_floor(0.2, classes=("top",)), class_precision_floor(0.2, classes=("top",))):
        with pytest.raises(RateoptError, match=rf"{type(goal).__name__}: class 'top' is not a class of dataset "
                                               r"'train'; classes: \['hi', 'lo', 'mid'\]"):
            ro.Problem(constraints=[goal], datasets=d["ds"])


def test_unknown_group_refused_at_binding():
    d = make_data(3, 8)
    with pytest.raises(RateoptError, match="nope"):
        ro.Problem(constraints=[multiclass_demographic_parity("nope", 0.1)], datasets=d["ds"])
    with pytest.raises(RateoptError, match="values= needs a single group column"):
        ro.Problem(constraints=[multiclass_demographic_parity(("a", "b"), 0.1, values=(0,))], datasets=d["ds"])


def test_class_prior_matching_parameters_validated():
    o = "ClassPriorMatching"
    with pytest.raises(RateoptError, match=f"{o}: targets must hold one proportion per class .* summing to 1"):
        class_prior_matching((0.5, 0.4))
    with pytest.raises(RateoptError, match=f"{o}: targets must hold one proportion per class"):
        class_prior_matching((1.0,))
    with pytest.raises(RateoptError, match=f"{o}: targets must be <= 1.0"):
        class_prior_matching((1.5, -0.5))
    with pytest.raises(RateoptError, match=f"{o}: targets must be >= 0.0"):
        class_prior_matching((-0.5, 1.5))
    with pytest.raises(RateoptError, match=f"{o}: targets must be a sequence of proportions"):
        class_prior_matching(0.5)
    with pytest.raises(RateoptError, match=f"{o}: targets must be a finite number"):
        class_prior_matching((float("nan"), 0.5))
    with pytest.raises(RateoptError, match=f"{o}: slack must be <= 1.0"):
        class_prior_matching((0.5, 0.5), 2.0)
    with pytest.raises(RateoptError, match=f"{o}: slack must be >= 0.0"):
        class_prior_matching((0.5, 0.5), -0.1)
    assert class_prior_matching([0.25, 0.75]).targets == (0.25, 0.75)
    # the wrong number of targets for the dataset: at binding
    d = make_data(5, 9)
    with pytest.raises(RateoptError, match=r"ClassPriorMatching: 3 targets for 5 classes \[0, 1, 2, 3, 4\]"):
        ro.Problem(constraints=[class_prior_matching((0.2, 0.3, 0.5))], datasets=d["ds"])


def test_floor_parameters_validated():
    for recipe, field in ((class_recall_floor, "min_recall"), (class_precision_floor, "min_precision")):
        owner = recipe.__name__
        for bad, msg in ((-0.1, f"{field} must be >= 0.0"), (1.1, f"{field} must be <= 1.0"),
                         (float("inf"), f"{field} must be a finite number")):
            with pytest.raises(RateoptError, match=f"{owner}: {msg}"):
                recipe(bad)
        with pytest.raises(RateoptError, match=f"{owner}: classes is empty"):
            recipe(0.5, classes=[])
        with pytest.raises(RateoptError, match=f"{owner}: group is empty"):
            recipe(0.5, ())
        with pytest.raises(RateoptError, match=f"{owner}: values= needs group="):
            ro.Problem(constraints=[recipe(0.5, values=(1,))], datasets=make_data(3, 10)["ds"])


def test_reprs():
    assert repr(multiclass_demographic_parity("sex", slack=0.05)) == "MulticlassDemographicParity(group='sex', slack=0.05)"
    assert (repr(multiclass_equalized_odds("g", 0.1, classes=[1], sides="lower"))
            == "MulticlassEqualizedOdds(group='g', slack=0.1, classes=(1,), sides='lower')")
    g = class_prior_matching((0.5, 0.3, 0.2), slack=0.02)
    assert eval(repr(g), {"ClassPriorMatching": ClassPriorMatching}) == g


# --------------------------------------------------------------------------- goals files


def test_recipes_in_goals_files():
    for name, cls in (("multiclass_demographic_parity", MulticlassDemographicParity),
                      ("multiclass_equal_opportunity", MulticlassEqualOpportunity),
                      ("multiclass_equalized_odds", MulticlassEqualizedOdds),
                      ("class_prior_matching", ClassPriorMatching),
                      ("class_recall_floor", ClassRecallFloor),
                      ("class_precision_floor", ClassPrecisionFloor)):
        assert RECIPES[name] is cls


def test_read_goals_builds_the_k_class_goals():
    text = '''
objective = "macro_f1"

[[goals]]
recipe = "multiclass_demographic_parity"
group = "a"
slack = 0.05
classes = ["lo", "hi"]
sides = "upper"

[[goals]]
recipe = "class_prior_matching"
targets = [0.5, 0.25, 0.25]
slack = 0.1
group = "b"

[[goals]]
recipe = "class_recall_floor"
min_recall = 0.3
name = "floor"
'''
    spec = read_goals(text)
    assert spec.objective == "macro_f1"
    assert spec.goals == [
        multiclass_demographic_parity("a", 0.05, classes=("lo", "hi"), sides="upper"),
        class_prior_matching((0.5, 0.25, 0.25), 0.1, "b"),
        class_recall_floor(0.3, name="floor"),
    ]
    # the goals and the objective build a K-class problem
    d = make_data(3, 11)
    p = ro.Problem(objective=spec.objective, constraints=spec.goals, datasets=d["ds"])
    assert p.n_constraints == 2 * 3 + 2 * 3 * 2 + 3
    # and write back
    again = read_goals(write_goals(spec))
    assert again.objective == "macro_f1" and again.goals == spec.goals


@pytest.mark.parametrize("objective", ["macro_f1", "balanced_error", "error"])
def test_read_goals_accepts_k_class_objectives(objective):
    assert read_goals(f'objective = "{objective}"\n').objective == objective


def test_read_goals_refuses_bad_k_class_goals():
    from rateopt._compiler._toml import GoalsFileError
    with pytest.raises(GoalsFileError, match="class_prior_matching: ClassPriorMatching: targets must hold"):
        read_goals('[[goals]]\nrecipe = "class_prior_matching"\ntargets = [0.5, 0.4]\n')
    with pytest.raises(GoalsFileError, match="multiclass_equalized_odds needs group"):
        read_goals('[[goals]]\nrecipe = "multiclass_equalized_odds"\nslack = 0.1\n')
    with pytest.raises(GoalsFileError, match="takes no parameter 'pairwise'"):
        read_goals('[[goals]]\nrecipe = "multiclass_demographic_parity"\ngroup = "a"\npairwise = true\n')
    with pytest.raises(GoalsFileError, match="objective"):
        read_goals('objective = "macro_recall"\n')


def test_write_goals_round_trip_every_recipe():
    spec = GoalsSpec(objective="balanced_error", goals=[
        multiclass_demographic_parity(("a", "b"), 0.05, classes=(1, 2), sides="lower", values=None),
        multiclass_equal_opportunity("a", 0.1, values=(0, 2)),
        multiclass_equalized_odds("b", 0.0, name="eo"),
        class_prior_matching((0.2, 0.3, 0.5), 0.01),
        class_recall_floor(0.25, "a", classes=("x",)),
        class_precision_floor(0.6, classes=(3,)),
    ])
    back = read_goals(write_goals(spec))
    assert back.objective == "balanced_error"
    assert back.goals == spec.goals
