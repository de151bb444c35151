"""The K-class group-aware thresholded mixture at prediction: its cells from group columns, and its file.

The cells a rule reads are the problem's (``problem.compiled.cells`` on the training rows, the reference
here); the groups give them through the mixture's table of group value combinations. A saved and loaded
mixture must give the same probabilities and the same drawn decisions as the one saved.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import rateopt as ro
from rateopt._postprocess._class_mixture import (
    ClassThresholdedMixture,
    fit_class_thresholded_mixture,
    group_cell_table,
    thresholded_from_iterates,
)
from rateopt.exceptions import RateoptError

# A DataFrame's feature columns reach the scorer as a copy (the warning says so): not what is tested here.
pytestmark = pytest.mark.filterwarnings("ignore::rateopt.exceptions.DataCopyWarning")


def _data(seed=0, n=500):
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < 0.4, "a", "b")
    region = rng.integers(0, 3, n)  # a second group column the goals do not use
    Z = rng.normal(size=(n, 4)) + (group == "a")[:, None] * 0.7
    y = np.digitize(Z[:, 0] + 0.5 * Z[:, 1] + rng.normal(scale=0.8, size=n), [-0.2, 1.0])
    return Z, y, group, region


def _models(X, y, K=3, T=6, seed=1):
    rng = np.random.default_rng(seed)
    A = np.column_stack([X, np.ones(len(y))])
    coef = np.linalg.lstsq(A, np.eye(K)[y], rcond=None)[0].T
    W = coef[None, :, :-1] + rng.normal(scale=0.3, size=(T, K, X.shape[1])) * (np.arange(T) > 0)[:, None, None]
    b = coef[None, :, -1] + rng.normal(scale=0.1, size=(T, K)) * (np.arange(T) > 0)[:, None]
    return W, b


def _problem(X, y, group, region, goals=None):
    ds = ro.ClassDataset(X, y, groups={"group": group, "region": region})
    goals = goals or [ro.goals.multiclass_demographic_parity("group", slack=0.02)]
    return ro.Problem(constraints=goals, datasets=ds)


@pytest.fixture(scope="module")
def fitted():
    X, y, group, region = _data()
    problem = _problem(X, y, group, region)
    W, b = _models(X, y)
    clf, fit, _ = thresholded_from_iterates(problem, W, b, classes=np.array(["lo", "mid", "hi"]))
    return X, y, group, region, problem, clf, fit


def test_the_cells_are_the_goals_group_values(fitted):
    X, y, group, region, problem, clf, fit = fitted
    assert clf.cell_columns_ == ("group",)  # "region" is not needed: the goals read "group" only
    cells = np.asarray(problem.compiled.cells)
    by_cells = clf.predict_proba(X, cells)
    np.testing.assert_array_equal(clf.predict_proba(X, groups={"group": group}), by_cells)
    np.testing.assert_array_equal(clf.predict_proba(X, groups={"group": group, "region": region}), by_cells)
    np.testing.assert_array_equal(clf.predict(X, groups={"group": group}, random_state=4),
                                  clf.predict(X, cells, random_state=4))
    # the rule does read the cells: swapping the groups changes the probabilities
    swapped = np.where(group == "a", "b", "a")
    assert not np.array_equal(clf.predict_proba(X, groups={"group": swapped}), by_cells)


def test_two_goal_columns_make_the_cells_and_a_mask_subset_has_no_table():
    X, y, group, region = _data(seed=2)
    ds = ro.ClassDataset(X, y, groups={"group": group, "region": region})
    both = _problem(X, y, group, region, goals=[ro.goals.multiclass_demographic_parity("group", slack=0.05),
                                                ro.goals.multiclass_demographic_parity("region", slack=0.05)])
    columns, combos, index = group_cell_table(both)
    assert columns == ("group", "region")
    # brute force: every training row's combination maps to that row's cell
    lookup = {c: i for c, i in zip(combos, index)}
    np.testing.assert_array_equal([lookup[(g, int(r))] for g, r in zip(group, region)], both.compiled.cells)
    mask = np.random.default_rng(0).random(len(y)) < 0.5
    sub = ds.context().subset(mask)
    masked = ro.Problem(constraints=[ro.class_prediction_rate(sub, 0) <= 0.5], datasets=ds)
    assert group_cell_table(masked) is None
    W, b = _models(X, y)
    clf, _, _ = thresholded_from_iterates(masked, W, b)
    with pytest.raises(ValueError, match="not combinations of group values.*give cells="):
        clf.predict_proba(X, groups={"group": group})
    assert clf.predict_proba(X, masked.compiled.cells).shape == (len(y), 3)


def _copy(clf, *, group_columns, cell_table=None):
    """``clf`` rebuilt (its rules on its own models) with ``group_columns`` and, if given, another cell table."""
    table = cell_table or (clf.cell_columns_, clf.cells_, clf._cell_index)
    return ClassThresholdedMixture(clf.rule, clf.scorer.coefs_, clf.scorer.intercepts_, classes=clf.classes_,
                                   cell_table=table, group_columns=group_columns)


def test_group_columns_are_taken_out_of_X(fitted):
    X, y, group, region, problem, clf, fit = fitted
    want = clf.predict_proba(X, groups={"group": group})
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(group=group)
    np.testing.assert_array_equal(_copy(clf, group_columns=["group"]).predict_proba(frame), want)
    with pytest.raises(ValueError, match="give groups= or group_columns=, not both"):
        _copy(clf, group_columns=["group"]).predict_proba(frame[["a", "b", "c", "d"]], groups={"group": group})
    # an array's group column is named by its position; here group a is coded 0.0 and b 1.0
    assert clf.cells_ == [("a",), ("b",)]
    coded = _copy(clf, group_columns=[4], cell_table=(("4",), [(0.0,), (1.0,)], clf._cell_index))
    mixed = np.column_stack([X, np.where(group == "a", 0.0, 1.0)])
    np.testing.assert_array_equal(coded.predict_proba(mixed), want)
    np.testing.assert_array_equal(coded.predict(mixed, random_state=2), clf.predict(X, groups={"group": group},
                                                                                    random_state=2))
    with pytest.raises(ValueError, match="give groups= or group_columns=, not both"):
        coded.predict_proba(mixed, groups={"4": group})


def test_refusals_name_what_is_missing(fitted):
    X, y, group, region, problem, clf, fit = fitted
    with pytest.raises(ValueError, match=r"give groups= \(the columns \['group'\]\)"):
        clf.predict_proba(X)
    with pytest.raises(ValueError, match="not both"):
        clf.predict_proba(X, problem.compiled.cells, groups={"group": group})
    with pytest.raises(RateoptError, match="the group cell {'group': 'c'}, which the rule was not fitted on"):
        clf.predict_proba(X[:3], groups={"group": np.array(["a", "c", "b"])})
    with pytest.raises(RateoptError, match="no column 'group'"):
        clf.predict_proba(X, groups={"region": region})


@pytest.mark.parametrize("variant", ["aware", "plugin", "blind"])
def test_save_and_load_give_the_same_probabilities_and_draws(fitted, tmp_path, variant):
    X, y, group, region, problem, clf, fit = fitted
    if variant != "aware":
        W, b = _models(X, y)
        options = {"group_blind": True} if variant == "blind" else {"rules": ("plugin",)}
        clf, fit, _ = thresholded_from_iterates(problem, W, b, **options)
    assert "plugin" in fit.rule.kinds if variant == "plugin" else set(fit.rule.kinds) == {"offsets"}
    clf.save(tmp_path / "m.npz")
    back = ro.load(tmp_path / "m.npz")
    assert isinstance(back, ClassThresholdedMixture) and back.rule.group_blind == (variant == "blind")
    groups = {"group": group}
    np.testing.assert_array_equal(back.predict_proba(X, groups=groups), clf.predict_proba(X, groups=groups))
    np.testing.assert_array_equal(back.predict(X, groups=groups, random_state=7, row_key=np.arange(len(y))),
                                  clf.predict(X, groups=groups, random_state=7, row_key=np.arange(len(y))))
    np.testing.assert_array_equal(back.classes_, clf.classes_)
    assert back.cell_columns_ == clf.cell_columns_ and back.cells_ == clf.cells_


def test_a_kernel_mixture_with_group_columns_round_trips(tmp_path):
    X, y, group, region = _data(seed=3, n=300)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    problem = _problem(frame, y, group, region)
    res = ro.train(problem, ro.KernelModel(n_components=20, random_state=0), n_iter=30, random_state=0)
    clf = res.thresholded(problem, group_blind=False)
    clf.group_columns = ["group"]
    clf.save(tmp_path / "k.npz")
    back = ro.load(tmp_path / "k.npz")
    with_groups = frame.assign(group=group)
    np.testing.assert_array_equal(back.predict_proba(with_groups), clf.predict_proba(with_groups))
    np.testing.assert_array_equal(back.predict_proba(with_groups), clf.predict_proba(frame, problem.compiled.cells))
    assert back.group_columns == ["group"] and list(back.feature_names_in_) == ["a", "b", "c", "d"]


def _rewrite(src, dst, meta_edit=None, **arrays):
    data = dict(np.load(src))
    meta = json.loads(bytes(data["__rateopt_metadata__"]).decode())
    if meta_edit is not None:
        meta_edit(meta)
    data["__rateopt_metadata__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    for name, edit in arrays.items():
        data[name] = edit(data[name])
    np.savez(dst, **data)
    return dst


@pytest.fixture(scope="module")
def saved(fitted, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "m.npz"
    fitted[5].save(path)
    return path


@pytest.mark.parametrize("meta_edit, arrays, match", [
    (lambda m: m["rule"].update(iterate=[99] * len(m["rule"]["iterate"])), {}, r"metadata.rule.iterate"),
    (lambda m: m["rule"].update(kinds=["trees"] * len(m["rule"]["kinds"])), {}, r"metadata.rule.kinds"),
    (lambda m: m["rule"].update(kinds=m["rule"]["kinds"][:-1]), {}, r"metadata.rule.kinds"),
    (lambda m: m["rule"].update(group_blind="no"), {}, r"metadata.rule.group_blind"),
    (lambda m: m["rule"].update(group_blind=True), {}, r"metadata.rule.group_blind.*reads the cells"),
    (None, {"rule_probabilities": lambda p: p * 2}, r"rule_probabilities"),
    (None, {"rule_probabilities": lambda p: -p}, r"rule_probabilities"),
    (None, {"rule_offsets": lambda a: a[:, :, :2]}, r"rule_offsets"),
    (None, {"rule_costs": lambda a: np.zeros((a.shape[0] + 1,) + a.shape[1:])}, r"rule_costs"),
    (lambda m: m.update(cell_index=[0, 5]), {}, r"metadata.cell_index"),
    (lambda m: m.update(cells=[["a"], ["a"]]), {}, r"lists the cell \['a'\] twice"),
    (lambda m: m.update(group_columns="group"), {}, r"metadata.group_columns"),
    (lambda m: m.update(classes=["x"]), {}, r"metadata.classes"),
])
def test_impossible_files_are_refused_naming_the_field(saved, tmp_path, meta_edit, arrays, match):
    with pytest.raises(RateoptError, match=match):
        ro.load(_rewrite(saved, tmp_path / "bad.npz", meta_edit, **arrays))
