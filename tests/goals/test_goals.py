"""Goals (rateopt.goals) against brute-force loops over examples."""

import copy
import dataclasses
import pickle
import re

import numpy as np
import pytest

from _rate_reference import brute, make_data, member_list, random_predictions
from rateopt import goals as G
from rateopt._compiler._problem import Problem
from rateopt._language._rates import Constraint
from rateopt.exceptions import RateoptError

TOL = 1e-12
SEX = ["F", "M"]
RACE = ["a", "b", "c"]


class Ref:
    """Brute-force rate values on one dataset for one prediction vector."""

    def __init__(self, rec, v):
        self.rec, self.v = rec, v

    def __call__(self, kind, col=None, val=None):
        if col is None:
            m = [True] * self.rec["n"]
        else:
            m = member_list(self.rec, lambda r, j: r[col][j] == val)
        return brute(kind, self.rec, m, self.v)


def parity(ref, kind, col, values, s, mult=False, sides="both"):
    out, all_ = [], ref(kind)
    for k in values:
        g = ref(kind, col, k)
        if mult:
            r = 1 - s
            if sides in ("both", "upper"):
                out.append(r * g - all_)
            if sides in ("both", "lower"):
                out.append(r * all_ - g)
        else:
            if sides in ("both", "upper"):
                out.append(g - all_ - s)
            if sides in ("both", "lower"):
                out.append(all_ - s - g)
    return out


def pairwise(ref, kind, col, values, s, mult=False):
    out = []
    for j in values:
        for k in values:
            if j != k:
                a, b = ref(kind, col, j), ref(kind, col, k)
                out.append((1 - s) * a - b if mult else a - b - s)
    return out


def floor(ref, kind, bound, col=None, values=(None,), sign=+1):
    """sign=+1: rate >= bound (g = bound - rate); sign=-1: rate <= bound."""
    return [sign * (bound - ref(kind, col, k)) for k in values]


def vs(ref, lhs, rhs, col, values, s, mult=False, sides="lower"):
    out = []
    for k in values:
        a, b = ref(lhs, col, k), ref(rhs, col, k)
        if mult:
            r = 1 - s
            if sides == "both":
                out.append(r * a - b)
            out.append(r * b - a)
        else:
            if sides == "both":
                out.append(a - b - s)
            out.append(b - s - a)
    return out


CASES = [
    (G.demographic_parity("race", 0.02), lambda f: parity(f, "ppr", "race", RACE, 0.02)),
    (G.statistical_parity("race", 0.2, multiplicative=True),
     lambda f: parity(f, "ppr", "race", RACE, 0.2, mult=True)),
    (G.demographic_parity("race", 0.02, pairwise=True), lambda f: pairwise(f, "ppr", "race", RACE, 0.02)),
    (G.demographic_parity("race", 0.1, pairwise=True, multiplicative=True),
     lambda f: pairwise(f, "ppr", "race", RACE, 0.1, mult=True)),
    (G.demographic_parity("sex", 0.05, sides="lower"),
     lambda f: parity(f, "ppr", "sex", SEX, 0.05, sides="lower")),
    (G.demographic_parity("sex", 0.05, sides="upper"),
     lambda f: parity(f, "ppr", "sex", SEX, 0.05, sides="upper")),
    (G.demographic_parity(("sex", "race"), 0.03),
     lambda f: parity(f, "ppr", "sex", SEX, 0.03) + parity(f, "ppr", "race", RACE, 0.03)),
    (G.demographic_parity("race", 0.03, values=["a", "c"]),
     lambda f: parity(f, "ppr", "race", ["a", "c"], 0.03)),
    (G.minimum_coverage(0.3), lambda f: floor(f, "ppr", 0.3)),
    (G.minimum_coverage(0.3, "sex"), lambda f: floor(f, "ppr", 0.3, "sex", SEX)),
    (G.coverage_budget(0.4, "race"), lambda f: floor(f, "ppr", 0.4, "race", RACE, sign=-1)),
    (G.no_lost_benefits("sex", 0.01), lambda f: vs(f, "ppr", "baseline_ppr", "sex", SEX, 0.01)),
    (G.no_lost_benefits(), lambda f: vs(f, "ppr", "baseline_ppr", None, [None], 0.0)),
    (G.no_lost_benefits("race", 0.1, multiplicative=True),
     lambda f: vs(f, "ppr", "baseline_ppr", "race", RACE, 0.1, mult=True)),
    (G.accurate_coverage("race", 0.05),
     lambda f: vs(f, "ppr", "prevalence", "race", RACE, 0.05, sides="both")),
    (G.accurate_coverage(slack=0.1, multiplicative=True),
     lambda f: vs(f, "ppr", "prevalence", None, [None], 0.1, mult=True, sides="both")),
    (G.equal_opportunity("sex", 0.05), lambda f: parity(f, "tpr", "sex", SEX, 0.05)),
    (G.equal_opportunity("race", 0.05, multiplicative=True),
     lambda f: parity(f, "tpr", "race", RACE, 0.05, mult=True)),
    (G.equal_opportunity("race", 0.04, pairwise=True), lambda f: pairwise(f, "tpr", "race", RACE, 0.04)),
    (G.equalized_odds("race", 0.05),
     lambda f: parity(f, "tpr", "race", RACE, 0.05) + parity(f, "fpr", "race", RACE, 0.05)),
    (G.equal_accuracy("sex", 0.02), lambda f: parity(f, "accuracy", "sex", SEX, 0.02)),
    (G.minimum_accuracy(0.6, "race"), lambda f: floor(f, "accuracy", 0.6, "race", RACE)),
    (G.not_worse_off("race"), lambda f: vs(f, "accuracy", "baseline_accuracy", "race", RACE, 0.0)),
    (G.not_worse_off("sex", 0.02), lambda f: vs(f, "accuracy", "baseline_accuracy", "sex", SEX, 0.02)),
    (G.recall_floor(0.7), lambda f: floor(f, "tpr", 0.7)),
    (G.recall_floor(0.7, "sex"), lambda f: floor(f, "tpr", 0.7, "sex", SEX)),
    (G.precision_floor(0.6), lambda f: [0.6 * f("ppr") - f("tp_prop")]),
    (G.precision_floor(0.55, "race"),
     lambda f: [0.55 * f("ppr", "race", k) - f("tp_prop", "race", k) for k in RACE]),
    (G.win_loss_ratio_floor(1.5), lambda f: [1.5 * f("loss_rate") - f("win_rate")]),
    (G.churn_cap(0.1, "race"), lambda f: floor(f, "churn", 0.1, "race", RACE, sign=-1)),
    (G.churn_cap(0.2), lambda f: floor(f, "churn", 0.2, sign=-1)),
    (G.loss_only_churn_cap(0.05), lambda f: floor(f, "loss_churn", 0.05, sign=-1)),
    (G.loss_only_churn_cap(0.05, "sex", normalize="baseline_correct"),
     lambda f: floor(f, "loss_churn_bc", 0.05, "sex", SEX, sign=-1)),
]


@pytest.mark.parametrize("goal,expected", CASES, ids=[repr(c[0]) for c in CASES])
def test_goal_matches_brute_force(goal, expected):
    for seed in range(2):
        ds, rec = make_data(seed)
        for pk in ("decisions", "probabilities"):
            preds, v = random_predictions(seed + 20, rec["n"], pk)
            cons = goal.bind(ds)
            assert all(isinstance(c, Constraint) for c in cons)
            ev = Problem(objective=0.0, constraints=[goal], datasets=ds).evaluate(
                preds, kind="probabilities" if pk == "probabilities" else "auto"
            )
            got = list(ev.constraints.values())
            want = expected(Ref(rec, v))
            assert list(ev.constraints) == [c.name for c in cons]
            assert len(got) == len(want)
            np.testing.assert_allclose(got, want, rtol=0, atol=TOL)


def test_steering_and_decision_rule_datasets():
    train, rec_t = make_data(0)
    steer, rec_s = make_data(1, n=30, baseline=False, name="steering")
    rule, rec_r = make_data(2, n=50, baseline=False, name="rule")
    unl, rec_u = make_data(3, n=60, labels=False, name="unlabeled")
    goals = [
        G.steering_accuracy(0.9),
        G.decision_rule_prior(0.8),
        G.churn_cap(0.1, dataset="unlabeled"),
        G.demographic_parity("sex", 0.05, dataset="unlabeled"),
        G.recall_floor(0.7),
    ]
    roles = {"train": train, "steering": steer, "rule": rule, "unlabeled": unl}
    p = Problem(constraints=goals, datasets=roles)
    assert set(p.datasets) == {"train", "steering", "rule", "unlabeled"}
    preds, vals = {}, {}
    for i, (ds, rec) in enumerate([(train, rec_t), (steer, rec_s), (rule, rec_r), (unl, rec_u)]):
        preds[ds.name], vals[ds.name] = random_predictions(40 + i, rec["n"], "scores")
    ev = p.evaluate(preds)
    want = [
        0.9 - brute("accuracy", rec_s, [True] * rec_s["n"], vals["steering"]),
        0.8 - brute("accuracy", rec_r, [True] * rec_r["n"], vals["rule"]),
        brute("churn", rec_u, [True] * rec_u["n"], vals["unlabeled"]) - 0.1,
        *parity(Ref(rec_u, vals["unlabeled"]), "ppr", "sex", SEX, 0.05),
        0.7 - brute("tpr", rec_t, [True] * rec_t["n"], vals["train"]),
    ]
    np.testing.assert_allclose(list(ev.constraints.values()), want, rtol=0, atol=TOL)
    assert abs(ev.objective - brute("error", rec_t, [True] * rec_t["n"], vals["train"])) <= TOL
    assert list(ev.constraints)[:3] == [
        "accuracy[steering:all] >= 0.9",
        "accuracy[rule:all] >= 0.8",
        "churn[unlabeled:all] <= 0.1",
    ]
    # a sequence of datasets is looked up by name; a single dataset serves every role
    assert [c.name for c in G.steering_accuracy(0.9).bind([train, steer])] == [
        "accuracy[steering:all] >= 0.9"
    ]
    assert [c.name for c in G.steering_accuracy(0.9).bind(train)] == ["accuracy[all] >= 0.9"]


@pytest.mark.parametrize("sides", ["both", "lower"])
def test_equal_opportunity_satisfied_iff_gap_within_slack(sides):
    checked = {True: 0, False: 0}
    for seed in range(4):
        ds, rec = make_data(seed, n=60)
        for t in range(15):
            preds, v = random_predictions(100 * seed + t, rec["n"], "decisions")
            ref = Ref(rec, v)
            t_all = ref("tpr")
            gaps = [ref("tpr", "race", k) - t_all for k in RACE]
            gap = max(abs(g) for g in gaps) if sides == "both" else max(-g for g in gaps)
            for s in (0.0, 0.02, 0.05, 0.1, 0.2, 0.3):
                if abs(gap - s) < 1e-9:
                    continue  # too close to call in floating point
                p = Problem(constraints=[G.equal_opportunity("race", s, sides=sides)], datasets=ds)
                ok = p.evaluate(preds).is_feasible()
                assert ok == (gap <= s), (seed, t, s, gap)
                checked[ok] += 1
    assert checked[True] > 10 and checked[False] > 10


def test_multiplicative_equal_opportunity_at_95_percent():
    for seed in range(3):
        ds, rec = make_data(seed)
        for t in range(10):
            preds, v = random_predictions(seed * 50 + t, rec["n"], "decisions")
            ref = Ref(rec, v)
            t_all = ref("tpr")
            ok_bf = all(0.95 * t_all <= ref("tpr", "sex", k) and 0.95 * ref("tpr", "sex", k) <= t_all
                        for k in SEX)
            p = Problem(constraints=[G.equal_opportunity("sex", 0.05, multiplicative=True)], datasets=ds)
            assert p.evaluate(preds).is_feasible() == ok_bf


# --------------------------------------------------------------------------- goal objects


def test_goal_names():
    ds, _ = make_data(0)
    names = [c.name for c in G.equal_opportunity("sex", 0.05).bind(ds)]
    assert names == [
        "tpr[sex=F] <= tpr[all] + 0.05",
        "tpr[sex=F] >= tpr[all] - 0.05",
        "tpr[sex=M] <= tpr[all] + 0.05",
        "tpr[sex=M] >= tpr[all] - 0.05",
    ]
    assert [c.name for c in G.equal_opportunity("sex", 0.05, multiplicative=True).bind(ds)][:2] == [
        "0.95*tpr[sex=F] <= tpr[all]",
        "tpr[sex=F] >= 0.95*tpr[all]",
    ]
    assert [c.name for c in G.demographic_parity("sex", pairwise=True).bind(ds)] == [
        "ppr[sex=F] <= ppr[sex=M]",
        "ppr[sex=M] <= ppr[sex=F]",
    ]
    assert [c.name for c in G.equal_opportunity("sex", 0.05, name="EO").bind(ds)][0] == (
        "EO: tpr[sex=F] <= tpr[all] + 0.05"
    )
    assert [c.name for c in G.precision_floor(0.8).bind(ds)] == ["precision[all] >= 0.8"]
    assert [c.name for c in G.win_loss_ratio_floor(2).bind(ds)] == ["win_loss_ratio[all] >= 2"]
    assert [c.name for c in G.no_lost_benefits("sex").bind(ds)] == [
        "ppr[sex=F] >= baseline_ppr[sex=F]",
        "ppr[sex=M] >= baseline_ppr[sex=M]",
    ]


def test_goals_are_simple_frozen_parameter_objects():
    goals = [c[0] for c in CASES] + [G.steering_accuracy(0.9), G.decision_rule_prior(0.7)]
    for g in goals:
        params = g.get_params()
        assert type(g)(**params) == g
        assert copy.deepcopy(g) == g and pickle.loads(pickle.dumps(g)) == g
        assert hash(g) == hash(copy.deepcopy(g))
        assert repr(g).startswith(type(g).__name__ + "(")
        assert eval(repr(g), vars(G)) == g  # noqa: S307 - the repr is a constructor call
        with pytest.raises(dataclasses.FrozenInstanceError):
            g.name = "x"
    assert repr(G.equal_opportunity("sex", slack=0.05)) == "EqualOpportunity(group='sex', slack=0.05)"
    assert repr(G.churn_cap(0.05)) == "ChurnCap(max_churn=0.05, group=None)"
    assert G.demographic_parity(["sex", "race"]).group == ("sex", "race")
    assert G.demographic_parity("race", values=["a"]).values == ("a",)


def test_goals_clone_with_scikit_learn():
    base = pytest.importorskip("sklearn.base")
    g = G.equalized_odds("race", 0.05, pairwise=True)
    c = base.clone(g, safe=False)
    assert c == g and c is not g


def test_goal_validation_errors():
    with pytest.raises(RateoptError, match="slack must be >= 0"):
        G.equal_opportunity("sex", -0.1)
    with pytest.raises(RateoptError, match="slack must be < 1"):
        G.equal_opportunity("sex", 1.0, multiplicative=True)
    with pytest.raises(RateoptError, match="slack must be a finite number"):
        G.equal_opportunity("sex", float("nan"))
    with pytest.raises(RateoptError, match="sides must be one of"):
        G.demographic_parity("sex", sides="left")
    with pytest.raises(RateoptError, match="min_rate must be <= 1"):
        G.minimum_coverage(1.5)
    with pytest.raises(RateoptError, match="min_ratio must be >= 0"):
        G.win_loss_ratio_floor(-1)
    with pytest.raises(RateoptError, match="normalize must be"):
        G.loss_only_churn_cap(0.1, normalize="x")
    with pytest.raises(RateoptError, match="group must name a group column"):
        G.equal_opportunity(None)
    with pytest.raises(TypeError):
        G.equal_opportunity()  # group is required
    with pytest.raises(RateoptError, match="dataset must be a non-empty string"):
        G.churn_cap(0.1, dataset="")
    ds, _ = make_data(0)
    with pytest.raises(RateoptError, match="has no group column 'zip'"):
        G.equal_opportunity("zip").bind(ds)
    with pytest.raises(RateoptError, match="role 'steering'"):
        G.steering_accuracy(0.9).bind({"train": ds})
    with pytest.raises(RateoptError, match="named 'steering'"):
        G.steering_accuracy(0.9).bind([ds])
    with pytest.raises(RateoptError, match="values= needs a single group column"):
        G.demographic_parity(("sex", "race"), values=("a",)).bind(ds)
    with pytest.raises(RateoptError, match="values= needs group="):
        G.minimum_coverage(0.1, values=("a",)).bind(ds)


# --------------------------------------------------------------------------- non-linear metric goals


def _metric_data(n=600, seed=3):
    import rateopt

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = rng.integers(0, 2, n)
    g = rng.choice(["a", "b", "c"], n)
    w = rng.uniform(0.5, 2.0, n)
    return rateopt.Dataset(X, y, weights=w, groups={"g": g}), y, g, w


def _f(d, y, w, m, beta=1.0):
    tp = np.sum(w[m] * d[m] * y[m])
    fp = np.sum(w[m] * d[m] * (1 - y[m]))
    fn = np.sum(w[m] * (1 - d[m]) * y[m])
    b2 = beta**2
    return (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp)


@pytest.mark.parametrize("pairwise", [False, True])
def test_f_measure_parity_goal_against_brute_force(pairwise):
    ds, y, g, w = _metric_data()
    goal = G.f_measure_parity("g", slack=0.03, pairwise=pairwise, beta=2.0)
    cons = goal.bind(ds)
    d = np.random.default_rng(1).uniform(size=y.size)  # probabilities: expected rates
    values = Problem(constraints=cons, datasets=ds).evaluate(d, kind="probabilities").constraints
    f = {v: _f(d, y, w, g == v, 2.0) for v in "abc"}
    every = _f(d, y, w, np.ones(y.size, bool), 2.0)
    if pairwise:
        expected = [f[a] - f[b] - 0.03 for a in "abc" for b in "abc" if a != b]
    else:
        expected = [x for v in "abc" for x in (f[v] - every - 0.03, every - f[v] - 0.03)]
    np.testing.assert_allclose(list(values.values()), expected, atol=1e-12)


def test_predictive_parity_kld_cap_and_floors_against_brute_force():
    ds, y, g, w = _metric_data(seed=4)
    d = np.random.default_rng(2).integers(0, 2, y.size).astype(float)
    cons = (G.predictive_parity("g", slack=0.1, sides="lower").bind(ds)
            + G.kl_divergence_cap(0.01, "g").bind(ds) + G.kl_divergence_cap(0.02, "g", total=True).bind(ds)
            + G.g_mean_floor(0.6).bind(ds) + G.f_measure_floor(0.4, "g", values=("a",)).bind(ds))
    got = list(Problem(constraints=cons, datasets=ds).evaluate(d).constraints.values())
    every = np.ones(y.size, bool)

    def prec(m):
        return np.sum(w[m] * d[m] * y[m]) / np.sum(w[m] * d[m])

    p = np.sum(w * y) / np.sum(w)  # the dataset's weighted prevalence

    def kld(m):
        q = np.sum(w[m] * d[m]) / np.sum(w[m])
        e = 1e-10
        return p * np.log((p + e) / (q + e)) + (1 - p) * np.log((1 - p + e) / (1 - q + e))

    tpr = np.sum(w * d * y) / np.sum(w * y)
    tnr = np.sum(w * (1 - d) * (1 - y)) / np.sum(w * (1 - y))
    a = g == "a"
    tp, fp, fn = (np.sum(w[a] * d[a] * y[a]), np.sum(w[a] * d[a] * (1 - y[a])), np.sum(w[a] * (1 - d[a]) * y[a]))
    # Affine constraints come first (the linear F1 floor: (0.4 (2 TP + FN + FP) - 2 TP) / W(group a)),
    # then the metric constraints in the order given.
    expected = ([(0.4 * (2 * tp + fn + fp) - 2 * tp) / np.sum(w[a])]
                + [prec(every) - prec(g == v) - 0.1 for v in "abc"] + [kld(g == v) - 0.01 for v in "abc"]
                + [sum(kld(g == v) for v in "abc") - 0.02] + [0.6 - np.sqrt(tpr * tnr)])
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert isinstance(G.f_measure_floor(0.4).bind(ds)[0], Constraint)  # linear: any game


def test_metric_goals_validate_and_clone():
    from sklearn.base import clone

    for bad, match in ((lambda: G.f_measure_parity("g", slack=1.5), "slack"),
                       (lambda: G.f_measure_parity("g", beta=0.0), "beta"),
                       (lambda: G.kl_divergence_cap(-0.1), "max_divergence"),
                       (lambda: G.kl_divergence_cap(0.1, target=2.0), "target"),
                       (lambda: G.g_mean_floor(1.2), "min_gmean"),
                       (lambda: G.predictive_parity(None), "group")):
        with pytest.raises(RateoptError, match=match):
            bad()
    goal = G.f_measure_parity("g", slack=0.02, pairwise=True, name="fair F1")
    assert clone(goal) == goal and pickle.loads(pickle.dumps(goal)) == goal
    ds, *_ = _metric_data()
    assert all(c.name.startswith("fair F1: ") for c in goal.bind(ds))


def test_objectives_by_name():
    import rateopt
    from rateopt import metrics

    ds, y, g, w = _metric_data(seed=5)
    d = np.random.default_rng(3).uniform(size=y.size)
    every = np.ones(y.size, bool)
    tpr = np.sum(w * d * y) / np.sum(w * y)
    fpr = np.sum(w * d * (1 - y)) / np.sum(w * (1 - y))
    expected = {"error": np.sum(w * np.abs(d - y)) / np.sum(w), "f_measure": -_f(d, y, w, every),
                "g_mean": 1 - np.sqrt(tpr * (1 - fpr)), "h_mean": 1 - 2 * tpr * (1 - fpr) / (tpr + 1 - fpr),
                "q_mean": np.sqrt((fpr**2 + (1 - tpr) ** 2) / 2), "balanced_error": 0.5 * (fpr + 1 - tpr)}
    assert set(expected) == set(G.OBJECTIVES)
    for name, value in expected.items():
        obj = G.objective(name, ds)
        got = (obj.evaluate(d, kind="probabilities") if isinstance(obj, metrics.Metric)
               else Problem(objective=obj, datasets=ds).evaluate(d, kind="probabilities").objective)
        assert got == pytest.approx(value, abs=1e-12), name
    assert G.objective(lambda data: rateopt.positive_prediction_rate(data.context()), ds) is not None
    with pytest.raises(ValueError, match="objective must be one of"):
        G.objective("accuracy", ds)
    with pytest.raises(ValueError, match="must return"):
        G.objective(lambda data: 3, ds)


def test_metric_parity_with_a_group_without_positive_labels_is_refused_naming_the_goal_and_group():
    import rateopt

    rng = np.random.default_rng(0)
    n = 600
    X = rng.normal(size=(n, 3))
    g = rng.choice(["a", "b", "c"], n)
    y = ((X[:, 0] > 0) & (g != "c")).astype(int)  # group c has no positive label
    for goal, what in ((rateopt.goals.f_measure_parity("g", slack=0.05), ("FMeasureParity", "F-measure")),
                       (rateopt.goals.predictive_parity("g", slack=0.05), ("PredictiveParity", "precision"))):
        message = (f"{what[0]}(group='g') on dataset 'train': {what[1]}[g=c]: subset 'g=c' of dataset 'train' has "
                   f"no positive label of positive weight, so its {what[1]} is 0 for every model")
        with pytest.raises(rateopt.exceptions.EmptySubsetError, match=f"^{re.escape(message)}$"):
            rateopt.RateConstrainedClassifier(objective="f_measure", goals=[goal], n_iter=5).fit(
                X, y, groups={"g": g})
    # Positives of zero weight are no positives either; positive weight on one of them is enough.
    y = (X[:, 0] > 0).astype(int)  # every group has positive labels
    w = np.ones(n)
    w[(g == "b") & (y == 1)] = 0.0
    ds = rateopt.Dataset(X, y, weights=w, groups={"g": g})
    with pytest.raises(rateopt.exceptions.EmptySubsetError, match=r"^FMeasureParity\(group='g'\).*F-measure\[g=b\]"):
        rateopt.goals.f_measure_parity("g").bind(ds)
    w[np.flatnonzero((g == "b") & (y == 1))[0]] = 1e-3
    assert len(rateopt.goals.f_measure_parity("g").bind(rateopt.Dataset(X, y, weights=w, groups={"g": g}))) == 6


def test_each_dataset_kind_has_its_objective_table_and_refuses_the_others_names():
    import rateopt
    from rateopt._language._classes import multiclass_error_rate

    ds, y, g, w = _metric_data(seed=5)
    labels = np.array([0, 1, 2, 0, 1, 2])
    cds = rateopt.ClassDataset(np.zeros((6, 1)), labels)
    assert list(type(ds)._named_objectives) == sorted(G.OBJECTIVES)  # the documented tables, nothing else
    assert list(type(cds)._named_objectives) == list(G.MULTICLASS_OBJECTIVES)
    for name in sorted(set(G.MULTICLASS_OBJECTIVES) - set(G.OBJECTIVES)):
        with pytest.raises(ValueError, match=rf"objective must be one of {re.escape(str(sorted(G.OBJECTIVES)))}"):
            G.objective(name, ds)
    for name in sorted(set(G.OBJECTIVES) - set(G.MULTICLASS_OBJECTIVES)):
        with pytest.raises(ValueError, match=rf"objective '{name}' is not a K-class objective"):
            G.objective(name, cds)
    d = np.array([0, 1, 1, 0, 2, 2])  # class decisions
    err = Problem(objective=G.objective(None, cds), datasets=cds).evaluate(d).objective
    assert err == pytest.approx(np.mean(d != labels), abs=1e-12)
    assert str(G.objective("error", cds)) == str(multiclass_error_rate(cds.context()))
