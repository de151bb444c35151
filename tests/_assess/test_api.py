"""rateopt.assess: point estimates against NumPy loops over the cells, two and K classes, weights, intersections."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import rateopt as ro
from rateopt.exceptions import RateoptError

pd = pytest.importorskip("pandas")


def _ratio(num, den):
    return num / den if den > 0 else np.nan


def _two_class_reference(y, p, w, m):
    """The two-class rates of the rows ``m`` by their formulas, one sum at a time."""
    y, p, w = y[m].astype(float), p[m], w[m]
    return {
        "selection_rate": _ratio(np.sum(w * p), np.sum(w)),
        "tpr": _ratio(np.sum(w * y * p), np.sum(w * y)),
        "fpr": _ratio(np.sum(w * (1 - y) * p), np.sum(w * (1 - y))),
        "fnr": _ratio(np.sum(w * y * (1 - p)), np.sum(w * y)),
        "tnr": _ratio(np.sum(w * (1 - y) * (1 - p)), np.sum(w * (1 - y))),
        "precision": _ratio(np.sum(w * y * p), np.sum(w * p)),
        "accuracy": _ratio(np.sum(w * (y * p + (1 - y) * (1 - p))), np.sum(w)),
        "error": _ratio(np.sum(w * (y * (1 - p) + (1 - y) * p)), np.sum(w)),
        "prevalence": _ratio(np.sum(w * y), np.sum(w)),
    }


NAMES = ["selection_rate", "tpr", "fpr", "fnr", "tnr", "precision", "accuracy", "error", "prevalence"]


def _data(seed=0, n=600, hard=True):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = rng.integers(0, 2, n).astype(float) if hard else rng.random(n)
    w = rng.random(n) * 3
    sex = rng.choice(["F", "M"], n).astype(object)
    race = rng.choice(["a", "b", "c"], n).astype(object)
    race[:7] = None  # in no group
    return y, p, w, sex, race


@pytest.mark.parametrize("hard", [True, False])
@pytest.mark.parametrize("weighted", [True, False])
def test_intersections_match_a_loop_over_combinations(hard, weighted):
    y, p, w, sex, race = _data(hard=hard)
    weights = w if weighted else np.ones_like(w)
    a = ro.assess(y, p, {"sex": sex, "race": race}, metrics=NAMES, sample_weight=w if weighted else None, ci=None)
    combos = [(s, r) for s, r in itertools.product(["F", "M"], ["a", "b", "c"])]
    assert list(a.by_group.index) == combos and a.by_group.index.names == ["sex", "race"]
    for s, r in combos:
        ref = _two_class_reference(y, p, weights, (sex == s) & (race == r))
        for name in NAMES:
            assert a.by_group.loc[(s, r), name] == pytest.approx(ref[name], rel=1e-12, abs=1e-15), (s, r, name)
    ref = _two_class_reference(y, p, weights, np.ones(len(y), bool))
    for name in NAMES:
        assert a.overall[name] == pytest.approx(ref[name], rel=1e-12)
    assert a.count.tolist() == [int(np.sum((sex == s) & (race == r))) for s, r in combos]


def test_intersections_match_pandas_groupby():
    y, p, w, sex, race = _data(seed=1)
    frame = pd.DataFrame({"sex": sex, "race": race, "y": y, "p": p})
    a = ro.assess(y, p, frame[["sex", "race"]], metrics=["selection_rate", "tpr"], ci=None)
    ref = frame.dropna().groupby(["sex", "race"]).apply(
        lambda d: pd.Series({"selection_rate": d.p.mean(), "tpr": d.p[d.y == 1].mean()}), include_groups=False)
    pd.testing.assert_frame_equal(a.by_group, ref, check_names=False, rtol=1e-12)


def test_each_column_separately():
    y, p, w, sex, race = _data(seed=2)
    a = ro.assess(y, p, {"sex": sex, "race": race}, metrics=["tpr"], sample_weight=w, intersections=False, ci=None)
    assert list(a.by_group.index) == [("sex", "F"), ("sex", "M"), ("race", "a"), ("race", "b"), ("race", "c")]
    for (col, v), masks in zip(a.by_group.index, [sex == "F", sex == "M", race == "a", race == "b", race == "c"]):
        assert a.by_group.loc[(col, v), "tpr"] == pytest.approx(_two_class_reference(y, p, w, masks)["tpr"], rel=1e-12)


def test_summaries_match_their_definitions():
    y, p, w, sex, race = _data(seed=3, hard=False)
    a = ro.assess(y, p, race, metrics=["selection_rate", "tpr"], sample_weight=w, ci=None)
    for name in ["selection_rate", "tpr"]:
        vals = np.array([_two_class_reference(y, p, w, race == g)[name] for g in "abc"])
        overall = _two_class_reference(y, p, w, np.ones(len(y), bool))[name]
        assert a.group_min()[name] == vals.min() and a.group_max()[name] == vals.max()
        assert a.difference()[name] == pytest.approx(vals.max() - vals.min(), rel=1e-12)
        assert a.difference("to_overall")[name] == pytest.approx(np.max(np.abs(vals - overall)), rel=1e-12)
        assert a.ratio()[name] == pytest.approx(vals.min() / vals.max(), rel=1e-12)
        r = vals / overall
        assert a.ratio("to_overall")[name] == pytest.approx(np.min(np.minimum(r, 1 / r)), rel=1e-12)
    with pytest.raises(RateoptError, match="method"):
        a.difference("pairwise")


def _k_reference(yk, P, w, m, K):
    yk, P, w = yk[m], P[m], w[m]
    out = {"accuracy": np.sum(w * P[np.arange(len(yk)), yk]) / np.sum(w)}
    for k in range(K):
        out[f"proportion[{k}]"] = np.sum(w * P[:, k]) / np.sum(w)
        out[f"recall[{k}]"] = _ratio(np.sum(w * (yk == k) * P[:, k]), np.sum(w * (yk == k)))
        out[f"precision[{k}]"] = _ratio(np.sum(w * (yk == k) * P[:, k]), np.sum(w * P[:, k]))
        out[f"prevalence[{k}]"] = np.sum(w * (yk == k)) / np.sum(w)
    return out


@pytest.mark.parametrize("hard", [True, False])
def test_k_classes_match_a_loop(hard):
    rng = np.random.default_rng(4)
    n, K, classes = 500, 3, ["lo", "mid", "hi"]
    yk = rng.integers(0, K, n)
    P = np.eye(K)[rng.integers(0, K, n)] if hard else rng.dirichlet(np.ones(K), n)
    w = rng.random(n)
    g = rng.choice(["u", "v"], n)
    names = ["accuracy", "proportion", "recall", "precision", "prevalence"]
    a = ro.assess(np.array(classes)[yk], P, {"g": g}, metrics=names, sample_weight=w, classes=classes, ci=None)
    assert a.metrics[:4] == ["accuracy", "proportion[lo]", "proportion[mid]", "proportion[hi]"]
    for v in ["u", "v"]:
        ref = _k_reference(yk, P, w, g == v, K)
        for k, c in enumerate(classes):
            for base in ["proportion", "recall", "precision", "prevalence"]:
                assert a.by_group.loc[v, f"{base}[{c}]"] == pytest.approx(ref[f"{base}[{k}]"], rel=1e-12)
        assert a.by_group.loc[v, "accuracy"] == pytest.approx(ref["accuracy"], rel=1e-12)
    if hard:  # predicted labels give the same table as their one-hot matrix
        b = ro.assess(np.array(classes)[yk], np.array(classes)[P.argmax(axis=1)], {"g": g}, metrics=names,
                      sample_weight=w, classes=classes, ci=None)
        pd.testing.assert_frame_equal(a.by_group, b.by_group, rtol=1e-15)
    with pytest.raises(RateoptError, match="two-class rate"):
        ro.assess(np.array(classes)[yk], P, g, metrics="tpr", classes=classes)


def test_predict_proba_of_two_classes_is_expected_decisions():
    y, p, w, sex, race = _data(seed=5, hard=False)
    a = ro.assess(y, p, sex, metrics=NAMES, sample_weight=w, ci=None)
    b = ro.assess(y, np.column_stack([1 - p, p]), sex, metrics=NAMES, sample_weight=w, ci=None)
    pd.testing.assert_frame_equal(a.by_group, b.by_group, rtol=1e-12)


def test_callables_and_rate_language():
    from sklearn.metrics import accuracy_score, f1_score, recall_score

    y, p, w, sex, race = _data(seed=6)
    metrics = {"acc": accuracy_score, "f1": f1_score, "rec": recall_score, "tpr_lang": ro.true_positive_rate,
               "youden": lambda S: ro.true_positive_rate(S) - ro.false_positive_rate(S)}
    a = ro.assess(y, p, sex, metrics=metrics, sample_weight=w, ci=None)
    assert a.methods == {"acc": "bootstrap", "f1": "bootstrap", "rec": "bootstrap", "tpr_lang": "clopper-pearson",
                         "youden": "bootstrap"}
    for v in ["F", "M"]:
        m = sex == v
        ref = _two_class_reference(y, p, w, m)
        assert a.by_group.loc[v, "acc"] == pytest.approx(ref["accuracy"], rel=1e-12)
        assert a.by_group.loc[v, "rec"] == pytest.approx(ref["tpr"], rel=1e-12)
        assert a.by_group.loc[v, "tpr_lang"] == pytest.approx(ref["tpr"], rel=1e-12)
        assert a.by_group.loc[v, "youden"] == pytest.approx(ref["tpr"] - ref["fpr"], rel=1e-12)
        prec = ref["precision"]
        assert a.by_group.loc[v, "f1"] == pytest.approx(2 * prec * ref["tpr"] / (prec + ref["tpr"]), rel=1e-12)


def test_unlabeled_and_missing_groups():
    a = ro.assess(None, [1, 0, 1, 1], {"g": ["a", "a", None, "b"]}, ci=None)
    assert a.metrics == ["selection_rate"] and a.by_group["selection_rate"].tolist() == [0.5, 1.0]
    assert a.overall["selection_rate"] == 0.75
    with pytest.raises(RateoptError, match="need labels"):
        ro.assess(None, [1, 0], metrics="tpr")


def test_no_groups_is_one_cell():
    a = ro.assess([0, 1, 1], [0, 1, 0], metrics="tpr", ci=None)
    assert list(a.by_group.index) == ["all"] and a.by_group["tpr"].tolist() == [0.5]


@pytest.mark.parametrize("kwargs, message", [
    ({"predictions": [0.5, 1.5]}, "probabilities in \\[0, 1\\]"),
    ({"y": [0, 2]}, "0/1 labels"),
    ({"y": [0, 1, 1]}, "y has shape"),
    ({"sample_weight": [1, -1]}, "sample_weight"),
    ({"groups": {"g": ["a"]}}, "column 'g'"),
    ({"metrics": "auc"}, "unknown metric name 'auc'"),
    ({"metrics": 3}, "metrics must be"),
    ({"metrics": ["tpr", "recall"], "groups": None}, None),
    ({"ci": 1.5}, "ci must be"),
    ({"n_boot": 0}, "n_boot"),
    ({"random_state": -1}, "random_state"),
    ({"min_count": -1}, "min_count"),
    ({"simultaneous": "yes"}, "simultaneous"),
])
def test_bad_input_is_named(kwargs, message):
    args = {"y": [0, 1], "predictions": [0, 1], **kwargs}
    if message is None:  # two names of one rate are two columns
        assert ro.assess(**args).metrics == ["tpr", "recall"]
        return
    with pytest.raises(RateoptError, match=message):
        ro.assess(**args)


def test_repeated_name_is_refused():
    with pytest.raises(RateoptError, match="repeat"):
        ro.assess([0, 1], [0, 1], metrics=["tpr", "tpr"])


def test_the_inputs_find_the_arity_and_the_form_of_the_predictions_once():
    from rateopt._assess._inputs import read_inputs
    from rateopt._training._arity import TWO_CLASSES, KClasses

    rng = np.random.default_rng(4)
    y2, p = rng.integers(0, 2, 9), rng.uniform(size=9)
    cases = [  # predictions, classes, (arity's classes or None: two), given per class
        (p, None, None, False),
        (np.column_stack([1 - p, p]), None, None, True),
        (rng.dirichlet(np.ones(3), size=9), None, [0, 1, 2], True),
        (np.array(list("abcabcabc")), ["a", "b", "c"], ["a", "b", "c"], True),
        (np.array(list("ababababa")), ["a", "b"], None, True),
    ]
    for predictions, classes, arity_classes, per_class in cases:
        inp = read_inputs(None, predictions, classes=classes)
        if arity_classes is None:
            assert inp.arity is TWO_CLASSES
        else:
            assert isinstance(inp.arity, KClasses) and inp.arity.classes.tolist() == arity_classes
        assert inp.per_class == per_class and inp.n_classes == len(inp.classes)
    assert read_inputs(y2, p).y.tolist() == y2.tolist()
    with pytest.raises(RateoptError, match=r"group_rates: classes= names the columns of 2-D \(K-class\) predictions; "
                                           r"predictions are 1-D \(0/1 decisions\)"):
        ro.group_rates(y2, (p > 0.5).astype(int), {"g": np.zeros(9)}, classes=[0, 1])
