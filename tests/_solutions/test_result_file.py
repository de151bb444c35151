"""A saved training result read back (``rateopt._solutions._result_file``, through ``rateopt.load``)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import rateopt as ro
from rateopt.exceptions import DataCopyWarning, RateoptError


def _trained_with_validation(n_iter=20):
    X, y, g = ro.make_groups_dataset(300)
    Xv, yv, gv = ro.make_groups_dataset(200, random_state=1)
    goal = ro.goals.demographic_parity("group", slack=0.05)
    v = ro.Problem(constraints=[goal], datasets=ro.Dataset(Xv, yv, groups={"group": gv}, name="validation"))
    problem = ro.Problem(constraints=[goal], datasets=ro.Dataset(X, y, groups={"group": g}))
    return ro.train(problem, n_iter=n_iter, validation=v)


def test_a_result_with_a_named_validation_dataset_round_trips(tmp_path):
    r = _trained_with_validation()
    # The validation constraints are named after their dataset, unlike the training ones.
    assert r.val_rate_map.constraint_names != r.rate_map.constraint_names
    assert all("validation:" in n for n in r.val_rate_map.constraint_names)
    r.save(tmp_path / "r.npz")
    back = ro.load(tmp_path / "r.npz")
    assert back.val_rate_map.constraint_names == r.val_rate_map.constraint_names
    assert back.rate_map.constraint_names == r.rate_map.constraint_names
    assert back.val_rate_map.const0 == r.val_rate_map.const0
    for name in ("c0", "C", "kappa"):
        np.testing.assert_array_equal(getattr(back.val_rate_map, name), getattr(r.val_rate_map, name), err_msg=name)
    for name in ("val_atom_rates", "val_objectives", "val_constraints"):
        np.testing.assert_array_equal(getattr(back, name), getattr(r, name), err_msg=name)


def _rewrite(src, dst, meta_edit=None, **arrays):
    """A copy of the saved file ``src`` at ``dst`` with its metadata edited and some arrays replaced."""
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
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "r.npz"
    _trained_with_validation().save(path)
    return path


def _set(a, value):
    a = a.copy()
    a.flat[-1] = value
    return a


@pytest.mark.parametrize("name, value, match", [
    ("multipliers", -0.25, r"field 'multipliers' holds -0\.25 at index \[\d+, \d+\], expected multipliers >= 0"),
    ("atom_rates", 7.0, r"field 'atom_rates' holds 7\.0 at index \[\d+, \d+\], expected rates in \[0, 1\]"),
    ("atom_rates", -0.5, r"field 'atom_rates' holds -0\.5 .*expected rates in \[0, 1\]"),
    ("val_atom_rates", 1.5, r"field 'val_atom_rates' holds 1\.5 .*expected rates in \[0, 1\]"),
    ("iterations", 2.5, r"field 'iterations' holds a value that is not a whole number >= 0"),
    ("iterations", -1, r"field 'iterations' holds a value that is not a whole number >= 0"),
])
def test_impossible_values_are_refused_naming_the_field(saved, tmp_path, name, value, match):
    bad = _rewrite(saved, tmp_path / "bad.npz", **{name: lambda a: _set(a.astype(np.float64), value)})
    with pytest.raises(RateoptError, match=match):
        ro.load(bad)


def test_a_rate_of_one_plus_round_off_still_loads(saved, tmp_path):
    ok = _rewrite(saved, tmp_path / "ok.npz", atom_rates=lambda a: _set(a, 1.0 + 1e-12))
    assert ro.load(ok).atom_rates.flat[-1] == 1.0 + 1e-12


def test_a_validation_without_as_many_constraint_names_is_refused(saved, tmp_path):
    bad = _rewrite(saved, tmp_path / "bad.npz",
                   meta_edit=lambda m: m["validation"]["constraint_names"].pop())
    with pytest.raises(RateoptError, match=r"'metadata\.validation\.constraint_names' is .*expected a list of 4"):
        ro.load(bad)


@pytest.fixture(scope="module")
def saved_kl(tmp_path_factory):
    X, y, g = ro.make_groups_dataset(300)
    ctx = ro.Dataset(X, y, groups={"group": g}).context()
    objective = ro.metrics.kl_divergence(ctx.subset(group="group", value="A"), target=0.3)
    path = tmp_path_factory.mktemp("saved") / "kl.npz"
    ro.train(ro.Problem(objective=objective, constraints=[]), n_iter=10, method="three-player").save(path)
    return path


@pytest.mark.parametrize("target", [5, -0.1, True, None, "0.3"])
def test_a_kl_target_outside_0_1_is_refused(saved_kl, tmp_path, target):
    assert ro.load(saved_kl).rate_map.metric.metric.target == 0.3
    bad = _rewrite(saved_kl, tmp_path / "bad.npz", meta_edit=lambda m: m["metric"].__setitem__("target", target))
    with pytest.raises(RateoptError, match=r"field 'metadata\.metric' is not a valid metric \(a KL divergence "
                                           r"needs a target in \[0, 1\], got " + repr(target)):
        ro.load(bad)


@pytest.fixture(scope="module")
def saved_k_class(tmp_path_factory):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 3)), rng.integers(0, 3, 300)
    g = np.where(rng.random(300) < 0.5, "a", "b")
    ds = ro.ClassDataset(X, y, groups={"g": g})
    problem = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.05)], datasets=ds)
    path = tmp_path_factory.mktemp("saved") / "k.npz"
    ro.train(problem, n_iter=10).save(path)
    return path


def test_a_k_class_file_without_its_classes_is_refused_as_damaged(saved_k_class, tmp_path):
    # Without metadata.classes the file reads as a two-class result, whose weights are 2-D.
    dst = _rewrite(saved_k_class, tmp_path / "no_classes.npz", lambda meta: meta.pop("classes"))
    with pytest.raises(RateoptError, match=r"weights.*expected a 2-D array"):
        ro.load(dst)


@pytest.mark.parametrize("classes, match", [(["x"], "metadata.classes"), (["a", "a", "b"], "metadata.classes"),
                                            ([0, 1], r"weights.*expected \(n_recorded, 2, n_features\)")])
def test_k_class_labels_that_disagree_with_the_weights_are_refused(saved_k_class, tmp_path, classes, match):
    dst = _rewrite(saved_k_class, tmp_path / "bad.npz", lambda meta: meta.update(classes=classes))
    with pytest.raises(RateoptError, match=match):
        ro.load(dst)


def test_k_class_biases_of_the_wrong_shape_are_refused(saved_k_class, tmp_path):
    dst = _rewrite(saved_k_class, tmp_path / "bad.npz", biases=lambda b: b[:, :2])
    # 10 recorded iterates after the 3 trivial rules (the constant classes)
    with pytest.raises(RateoptError, match=r"biases.*expected \(13, 3\)"):
        ro.load(dst)


@pytest.fixture(scope="module")
def saved_macro_f1(tmp_path_factory):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(300, 3)), rng.integers(0, 3, 300)
    ds = ro.ClassDataset(X, y, groups={"g": np.where(rng.random(300) < 0.5, "a", "b")})
    problem = ro.Problem(objective=ro.metrics.MacroF1(ds.context().subset(group="g", value="a")), datasets=ds)
    path = tmp_path_factory.mktemp("saved") / "f1.npz"
    ro.train(problem, n_iter=10).save(path)
    return path


def test_a_macro_f1_result_keeps_its_subset(saved_macro_f1):
    """The saved objective is macro-F1 on the subset g=a: its value at the stored statistics is the metric
    recomputed from the stored confusion counts of that subset's cells (sklearn's macro-F1 formula)."""
    back = ro.load(saved_macro_f1)
    rows = back.rate_map.metric
    assert 0 < rows.cells.sum() < rows.cells.size  # the subset g=a: some of the cells
    K = 3
    for r, obj in zip(back.atom_rates, back.objectives):
        N = r.reshape(-1, K, K)[rows.cells].sum(axis=0)  # (y, k) on the subset
        tp, pred, true = np.diag(N), N.sum(axis=0), N.sum(axis=1)
        f1 = np.where(pred + true > 0, 2 * tp / np.where(pred + true > 0, pred + true, 1), 0.0)
        assert obj == pytest.approx(1 - f1.mean(), abs=1e-12)


@pytest.mark.parametrize("name, edit, match", [
    ("objective_cells", lambda a: a[:-1], r"objective_label_weights.*expected \(n_cells, 3\)"),
    ("objective_cells", lambda a: np.full_like(a, 2), r"objective_cells.*expected 0 or 1"),
    ("objective_cells", lambda a: np.zeros_like(a), r"objective_cells.*selects no row weight"),
    ("objective_label_weights", lambda a: -a, r"objective_label_weights.*expected weights >= 0"),
    ("objective_label_weights", lambda a: a[:, :2], r"objective_label_weights.*expected \(n_cells, 3\)"),
])
def test_impossible_macro_f1_fields_are_refused(saved_macro_f1, tmp_path, name, edit, match):
    with pytest.raises(RateoptError, match=match):
        ro.load(_rewrite(saved_macro_f1, tmp_path / "bad.npz", **{name: edit}))


@pytest.mark.parametrize("edit, match", [
    (lambda meta: meta["metric"].update(scale=0), r"metadata.metric.scale"),
    (lambda meta: meta["metric"].update(scale="x"), r"metadata.metric.scale"),
])
def test_impossible_macro_f1_metadata_is_refused(saved_macro_f1, tmp_path, edit, match):
    with pytest.raises(RateoptError, match=match):
        ro.load(_rewrite(saved_macro_f1, tmp_path / "bad.npz", edit))


def test_a_missing_macro_f1_field_is_refused(saved_macro_f1, tmp_path):
    data = dict(np.load(saved_macro_f1))
    del data["objective_label_weights"]
    np.savez(tmp_path / "bad.npz", **data)
    with pytest.raises(RateoptError, match=r"objective_label_weights' is missing"):
        ro.load(tmp_path / "bad.npz")


def _with_classes_text(src, dst, text):
    """``src`` with ``metadata.classes`` replaced by raw JSON text (``NaN``, ``Infinity`` included)."""
    data = dict(np.load(src))
    meta = json.loads(bytes(data["__rateopt_metadata__"]).decode())
    meta["classes"] = "@@"
    data["__rateopt_metadata__"] = np.frombuffer(json.dumps(meta).replace('"@@"', text).encode(), dtype=np.uint8)
    np.savez(dst, **data)
    return dst


@pytest.mark.parametrize("text", ['["1", 1, 2]', "[1, 1.0, 2]", "[true, 1, 2]", '[null, "b", "c"]', '["a", 1, 2]',
                                  "[0, 1, NaN]", "[0, Infinity, 2]"])
def test_k_class_lists_that_collapse_or_change_type_are_refused(saved_k_class, tmp_path, text):
    assert ro.load(saved_k_class).classes.tolist() == [0, 1, 2]
    dst = _with_classes_text(saved_k_class, tmp_path / "bad.npz", text)
    with pytest.raises(RateoptError, match=r"field 'metadata\.classes' is .*expected") as info:
        ro.load(dst)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("swap", [(2, 3), (0, 9), (4, 5)])
def test_iterations_that_do_not_increase_are_refused(saved, tmp_path, swap):
    loaded = ro.load(saved)
    its, k = np.asarray(loaded.iterations), loaded.n_trivial
    assert k == 2 and np.all(its[:k] == -1)  # the trivial rules, then the iterates
    assert np.all(np.diff(its[k:]) > 0)  # as fit writes them
    i, j = swap[0] + k, swap[1] + k
    bad = _rewrite(saved, tmp_path / "bad.npz", iterations=lambda a: a[np.r_[:i, j, i + 1:j, i, j + 1:a.size]])
    with pytest.raises(RateoptError, match=rf"field 'iterations' does not increase: {its[j]} at index {i} ") as info:
        ro.load(bad)
    assert "\n" not in str(info.value)


def test_repeated_iterations_are_refused(saved, tmp_path):
    bad = _rewrite(saved, tmp_path / "bad.npz", iterations=lambda a: np.zeros_like(a))
    with pytest.raises(RateoptError, match=r"field 'iterations' does not increase: 0 at index 0 is followed by 0"):
        ro.load(bad)


# --------------------------------------------------------------------------- issue 32 item 13: the training columns


@pytest.fixture(scope="module")
def saved_named(tmp_path_factory):
    pd = pytest.importorskip("pandas")
    X, y, g = ro.make_groups_dataset(300, random_state=2)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    problem = ro.Problem(constraints=[ro.goals.demographic_parity("group", slack=0.1)],
                         datasets=ro.Dataset(frame, y, groups={"group": g}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataCopyWarning)  # a DataFrame is copied into the core's layout
        r = ro.train(problem, n_iter=10, random_state=0)
    path = tmp_path_factory.mktemp("named") / "r.npz"
    r.save(path)
    return path, r, frame


def _meta(path):
    return json.loads(bytes(np.load(path)["__rateopt_metadata__"]).decode())


@pytest.mark.filterwarnings("ignore::rateopt.exceptions.DataCopyWarning")
def test_the_training_columns_are_saved_and_loaded(saved_named):
    path, r, frame = saved_named
    names = [f"f{j}" for j in range(frame.shape[1])]
    assert r.feature_names == tuple(names)
    assert _meta(path)["feature_names"] == names  # in the file's own metadata, read with json
    back = ro.load(path)
    assert back.feature_names == tuple(names)
    clf = back.solution("best")
    assert list(clf.feature_names_in_) == names
    np.testing.assert_array_equal(clf.predict(frame), r.solution("best").predict(frame.to_numpy()))
    with pytest.raises(RateoptError, match="the same columns in another order"):
        clf.predict(frame[names[::-1]])


@pytest.mark.filterwarnings("ignore::rateopt.exceptions.DataCopyWarning")
def test_a_result_file_without_the_training_columns_still_loads(saved_named, tmp_path):
    path, r, frame = saved_named
    old = _rewrite(path, tmp_path / "old.npz", lambda m: m.pop("feature_names"))  # a file written before
    back = ro.load(old)
    assert back.feature_names is None and back.solution("best").feature_names_in_ is None
    np.testing.assert_array_equal(back.solution("best").predict(frame.to_numpy()),
                                  r.solution("best").predict(frame.to_numpy()))


@pytest.mark.parametrize("names", [["f0"], "f0", ["f0", "f0", "f1", "f2", "f3"], [1, 2, 3, 4, 5], {"f0": 1}])
def test_impossible_training_columns_are_refused_naming_the_field(saved_named, tmp_path, names):
    path, _, frame = saved_named
    n = frame.shape[1]
    names = names if not isinstance(names, list) or len(names) != 5 else names[:n]  # n columns, but not distinct/str
    bad = _rewrite(path, tmp_path / "bad.npz", lambda m: m.__setitem__("feature_names", names))
    with pytest.raises(RateoptError, match=r"metadata\.feature_names") as info:
        ro.load(bad)
    assert "\n" not in str(info.value)
