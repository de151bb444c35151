"""rateopt.group_rates against a brute-force loop over groups."""

import sys

import numpy as np
import pytest

import rateopt
from rateopt._group_rates import RATE_COLUMNS


def _brute(y, p, w, mask):
    rows = [i for i in range(len(y)) if mask[i]]
    W = sum(w[i] for i in rows)
    pos = [i for i in rows if y[i] == 1]
    neg = [i for i in rows if y[i] == 0]
    Wp, Wn = sum(w[i] for i in pos), sum(w[i] for i in neg)
    tpr = sum(w[i] * p[i] for i in pos) / Wp if Wp else np.nan
    fpr = sum(w[i] * p[i] for i in neg) / Wn if Wn else np.nan
    return {"count": len(rows), "weight": W, "positive_rate": sum(w[i] * p[i] for i in rows) / W,
            "tpr": tpr, "fpr": fpr, "fnr": 1 - tpr, "tnr": 1 - fpr,
            "error": sum(w[i] * (p[i] if y[i] == 0 else 1 - p[i]) for i in rows) / W, "prevalence": Wp / W}


@pytest.mark.parametrize("as_frame", [False, True])
def test_rates_match_brute_force(as_frame):
    if as_frame:
        pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    n = 300
    y = rng.integers(0, 2, n)
    p = rng.random(n)  # expected decisions
    w = rng.random(n) * 3
    sex = rng.choice(["F", "M"], n)
    race = rng.choice(["a", "b", "c"], n).astype(object)
    race[:5] = None  # missing: in no group
    t = rateopt.group_rates(y, p, {"sex": sex, "race": race}, sample_weight=w, as_frame=as_frame)
    if as_frame:
        keys = list(t.index)
        table = {c: t[c].to_numpy() for c in RATE_COLUMNS}
    else:
        keys = list(zip(t["group"], t["value"]))
        table = t
    assert keys == [("all", "all"), ("sex", "F"), ("sex", "M"), ("race", "a"), ("race", "b"), ("race", "c")]
    masks = [np.ones(n, bool), sex == "F", sex == "M", race == "a", race == "b", race == "c"]
    for i, m in enumerate(masks):
        ref = _brute(y, p, w, m)
        for c in RATE_COLUMNS:
            assert table[c][i] == pytest.approx(ref[c], rel=1e-12), (keys[i], c)


def test_unlabeled_and_empty_class_give_nan():
    t = rateopt.group_rates(None, [1, 0, 1], {"g": ["a", "a", "b"]}, as_frame=False)
    assert t["positive_rate"].tolist() == pytest.approx([2 / 3, 0.5, 1.0])
    assert np.isnan(t["tpr"]).all()
    t = rateopt.group_rates([0, 0, 1], [1, 0, 1], {"g": ["a", "a", "b"]}, as_frame=False)
    assert np.isnan(t["tpr"][1]) and t["fpr"][1] == 0.5 and np.isnan(t["fpr"][2])


@pytest.mark.parametrize("kwargs, message", [
    ({"y": [0, 1], "predictions": [0.5, 1.5]}, "probabilities in \\[0, 1\\]"),
    ({"y": [0, 2], "predictions": [0, 1]}, "0/1 labels"),
    ({"y": [0, 1, 1], "predictions": [0, 1]}, "y has shape"),
    ({"y": [0, 1], "predictions": [0, 1], "sample_weight": [1, -1]}, "sample_weight"),
    ({"y": [0, 1], "predictions": [0, 1], "groups": {"g": ["a"]}}, "column 'g'"),
])
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(rateopt.exceptions.RateoptError, match=message):
        rateopt.group_rates(**kwargs)


def _brute_k(y, P, w, mask, classes):
    """Per-class rates of one group by a loop over its rows."""
    rows = [i for i in range(len(y)) if mask[i]]
    W = sum(w[i] for i in rows)
    out = {"count": len(rows), "weight": W,
           "error": sum(w[i] * (1 - P[i][classes.index(y[i])]) for i in rows) / W}
    for k, c in enumerate(classes):
        of_c = [i for i in rows if y[i] == c]
        Wc = sum(w[i] for i in of_c)
        out[f"proportion[{c}]"] = sum(w[i] * P[i][k] for i in rows) / W
        out[f"prevalence[{c}]"] = Wc / W
        out[f"recall[{c}]"] = sum(w[i] * P[i][k] for i in of_c) / Wc if Wc else np.nan
    return out


@pytest.mark.parametrize("hard", [False, True])
def test_k_class_rates_match_brute_force(hard):
    from rateopt._group_rates import class_rate_columns

    rng = np.random.default_rng(5)
    n, classes = 240, ["lo", "mid", "hi"]
    y = rng.choice(classes, n)
    y[:3] = "hi"
    P = rng.dirichlet(np.ones(3), n)
    if hard:  # one-hot decisions
        P = np.eye(3)[rng.integers(0, 3, n)]
    w = rng.random(n) * 2
    g = rng.choice(["a", "b", "c"], n)
    g[np.isin(y, ["lo", "mid"]) & (g == "c")] = "a"  # group c holds no row of class lo or mid: NaN recall
    t = rateopt.group_rates(y, P, {"g": g}, sample_weight=w, classes=classes, as_frame=False)
    assert list(zip(t["group"], t["value"])) == [("all", "all"), ("g", "a"), ("g", "b"), ("g", "c")]
    assert set(class_rate_columns(classes)) <= set(t)
    for i, m in enumerate([np.ones(n, bool), g == "a", g == "b", g == "c"]):
        ref = _brute_k(y.tolist(), P.tolist(), w.tolist(), m, classes)
        for c in class_rate_columns(classes):
            if np.isnan(ref[c]):
                assert np.isnan(t[c][i]), (i, c)
            else:
                assert t[c][i] == pytest.approx(ref[c], rel=1e-12, abs=1e-15), (i, c)
    assert np.isnan(t["recall[lo]"][3]) and not np.isnan(t["recall[hi]"][3])


def test_k_class_rates_as_frame_and_default_classes():
    pd = pytest.importorskip("pandas")
    P = np.array([[0.2, 0.8], [1.0, 0.0], [0.5, 0.5]])
    t = rateopt.group_rates([1, 0, 0], P, {"g": ["a", "a", "b"]})
    assert isinstance(t, pd.DataFrame) and list(t.index) == [("all", "all"), ("g", "a"), ("g", "b")]
    assert t["recall[1]"].tolist()[:2] == pytest.approx([0.8, 0.8])
    assert t["recall[0]"].tolist() == pytest.approx([0.75, 1.0, 0.5])


@pytest.mark.parametrize("kwargs, message", [
    ({"y": [0, 1], "predictions": [[0.5, 0.6], [1, 0]]}, "sum to 1"),
    ({"y": ["a", "q"], "predictions": np.eye(2), "classes": ["a", "b"]}, "not among classes"),
    ({"y": [0, 1], "predictions": np.eye(2), "classes": ["a"]}, "classes must name"),
    ({"y": [0, 1], "predictions": [0, 1], "classes": [0, 1]}, "2-D"),
    ({"y": [0, 1], "predictions": np.ones((2, 1))}, "K >= 2"),
])
def test_k_class_bad_input_is_named(kwargs, message):
    with pytest.raises(rateopt.exceptions.RateoptError, match=message):
        rateopt.group_rates(**kwargs)


@pytest.mark.parametrize("groups", [None, {}], ids=["none", "no-columns"])
def test_without_groups_only_the_overall_row(groups):
    """``groups=None`` (the default) gave an IndexError; now one ("all", "all") row, recounted here."""
    rng = np.random.default_rng(7)
    y, p, w = rng.integers(0, 2, 50), rng.random(50), rng.uniform(0.5, 2.0, 50)
    t = rateopt.group_rates(y, p, groups, sample_weight=w, as_frame=False)
    assert t["group"] == ["all"] and t["value"] == ["all"]
    assert t["count"].tolist() == [50.0] and t["weight"][0] == pytest.approx(w.sum(), rel=1e-12)
    assert t["tpr"][0] == pytest.approx((w * p)[y == 1].sum() / w[y == 1].sum(), rel=1e-12)
    assert t["error"][0] == pytest.approx((w * np.where(y == 1, 1 - p, p)).sum() / w.sum(), rel=1e-12)
    probs = rng.dirichlet(np.ones(3), size=50)
    k = rateopt.group_rates(rng.integers(0, 3, 50), probs, groups, as_frame=False)
    assert k["value"] == ["all"] and k["proportion[1]"][0] == pytest.approx(probs[:, 1].mean(), rel=1e-12)


def test_as_frame_without_pandas_names_the_missing_package(monkeypatch):
    # pandas made unimportable: as_frame=True is refused with its reason, as_frame=None falls back to a dict
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(rateopt.exceptions.RateoptError, match="needs pandas"):
        rateopt.group_rates([0, 1, 1], [1, 0, 1], {"g": ["a", "a", "b"]}, as_frame=True)
    t = rateopt.group_rates([0, 1, 1], [1, 0, 1], {"g": ["a", "a", "b"]}, as_frame=None)
    ref = rateopt.group_rates([0, 1, 1], [1, 0, 1], {"g": ["a", "a", "b"]}, as_frame=False)
    assert isinstance(t, dict) and t.keys() == ref.keys()
    for key in ref:
        np.testing.assert_array_equal(t[key], ref[key])
