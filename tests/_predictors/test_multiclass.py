"""MulticlassClassifier: scores, argmax, per-row draws of a mixture, exact decision distribution, files."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

import rateopt as ro
from rateopt.exceptions import RateoptError


def _mixture(seed=0, T=3, K=4, d=5):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(T))
    return ro.MulticlassClassifier(rng.normal(size=(T, K, d)), rng.normal(size=(T, K)), p,
                                   classes=np.array(["w", "x", "y", "z"][:K])), rng


def test_deterministic_scores_and_labels_match_numpy():
    clf, rng = _mixture(T=1)
    X = rng.normal(size=(50, 5))
    S = X @ clf.coef_.T + clf.intercept_
    X32 = X.astype(np.float32)
    np.testing.assert_allclose(clf.decision_function(X), S, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(clf.decision_function(sp.csr_matrix(X)), S, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(clf.decision_function(X32), X32.astype(np.float64) @ clf.coef_.T + clf.intercept_,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(S, axis=1)])
    np.testing.assert_array_equal(clf.predict_proba(X), np.eye(4)[np.argmax(S, axis=1)])


def test_mixture_distribution_is_exact_and_draws_are_per_row():
    clf, rng = _mixture()
    X = rng.normal(size=(4000, 5))
    votes = np.stack([np.argmax(X @ clf.coefs_[t].T + clf.intercepts_[t], axis=1) for t in range(3)], axis=1)
    expected = np.zeros((4000, 4))
    for t in range(3):
        expected[np.arange(4000), votes[:, t]] += clf.probabilities_[t]
    np.testing.assert_allclose(clf.predict_proba(X), expected, atol=1e-15)
    idx = clf.predict_index(X, random_state=7)
    assert np.all([idx[i] in votes[i] for i in range(200)])
    # a row's class does not depend on its batch or order
    perm = rng.permutation(4000)[:500]
    np.testing.assert_array_equal(clf.predict_index(X[perm], random_state=7), idx[perm])
    # the draws follow the mixture: the share of rows classified by each model's vote
    chosen_model_rows = (idx[:, None] == votes)
    only = (votes[:, 0] != votes[:, 1]) & (votes[:, 0] != votes[:, 2]) & (votes[:, 1] != votes[:, 2])
    share = chosen_model_rows[only].mean(axis=0)
    assert only.sum() > 800  # rows where the three votes differ identify the drawn model
    np.testing.assert_allclose(share, clf.probabilities_, atol=0.05)


def test_save_and_load_round_trip(tmp_path):
    clf, rng = _mixture()
    X = rng.normal(size=(100, 5))
    clf.save(tmp_path / "m.npz")
    back = ro.load(tmp_path / "m.npz")
    assert isinstance(back, ro.MulticlassClassifier)
    np.testing.assert_array_equal(back.classes_, clf.classes_)
    np.testing.assert_array_equal(back.predict(X, random_state=3), clf.predict(X, random_state=3))
    np.testing.assert_allclose(back.predict_proba(X), clf.predict_proba(X))


def test_kernel_classifier_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.digitize(np.hypot(X[:, 0], X[:, 1]), [0.8, 1.5])
    res = ro.train(ro.Problem(datasets=ro.ClassDataset(X, y)), ro.KernelModel(n_components=50, random_state=0),
                   n_iter=30)
    clf = res.solution("last")
    clf.save(tmp_path / "k.npz")
    np.testing.assert_array_equal(ro.load(tmp_path / "k.npz").predict(X), clf.predict(X))


def test_bad_arguments_and_damaged_files(tmp_path):
    with pytest.raises(ValueError, match="coefs"):
        ro.MulticlassClassifier(np.zeros((1, 1, 3)), np.zeros((1, 1)), classes=[0])
    with pytest.raises(ValueError, match="intercepts"):
        ro.MulticlassClassifier(np.zeros((1, 3, 2)), np.zeros((1, 2)), classes=[0, 1, 2])
    with pytest.raises(ValueError, match="probabilities"):
        ro.MulticlassClassifier(np.zeros((2, 3, 2)), np.zeros((2, 3)), [0.5, 0.6], classes=[0, 1, 2])
    with pytest.raises(ValueError, match="classes"):
        ro.MulticlassClassifier(np.zeros((1, 3, 2)), np.zeros((1, 3)), classes=[0, 1])
    clf, rng = _mixture(T=1)
    with pytest.raises(ValueError, match="features"):
        clf.predict(np.zeros((2, 3)))
    with pytest.raises(AttributeError, match="mixture"):
        _mixture(T=2)[0].coef_
    clf.save(tmp_path / "m.npz")
    data = dict(np.load(tmp_path / "m.npz"))
    data["biases"] = data["biases"][:, :2]
    np.savez(tmp_path / "bad.npz", **data)
    with pytest.raises(RateoptError, match="biases"):
        ro.load(tmp_path / "bad.npz")


@pytest.mark.parametrize("classes", [["1", 1, 2], [1, 1.0, 2], [True, 1, 2], [None, "b", "c"], ["a", 1, 2],
                                     [0, 1, float("nan")], [0, float("inf"), 2]])
def test_class_lists_that_collapse_or_change_type_are_refused(tmp_path, classes):
    clf, _ = _mixture(T=2, K=3)
    clf.save(tmp_path / "m.npz")
    data = dict(np.load(tmp_path / "m.npz"))
    meta = json.loads(bytes(data["__rateopt_metadata__"]).decode())
    assert len(meta["classes"]) == 3
    meta["classes"] = classes  # json.dumps writes NaN and Infinity as the JSON extensions
    data["__rateopt_metadata__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(tmp_path / "bad.npz", **data)
    with pytest.raises(RateoptError, match=r"field 'metadata\.classes' is .*expected") as info:
        ro.load(tmp_path / "bad.npz")
    assert "\n" not in str(info.value)


def test_labels_that_would_not_read_back_are_refused_at_save(tmp_path):
    # NumPy would read the saved [1, 2.5, 3] back as floats: save refuses instead of writing that file
    clf, rng = _mixture(T=1, K=3)
    mixed = ro.MulticlassClassifier(clf.coefs_, clf.intercepts_, clf.probabilities_,
                                    classes=np.array([1, 2.5, 3], dtype=object))
    with pytest.raises(RateoptError, match=r"cannot save the class labels \[1, 2\.5, 3\]: expected labels of one type"):
        mixed.save(tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()
    floats = ro.MulticlassClassifier(clf.coefs_, clf.intercepts_, clf.probabilities_, classes=[1.0, 2.5, 3.0])
    floats.save(tmp_path / "f.npz")
    back = ro.load(tmp_path / "f.npz").classes_
    assert back.dtype == np.float64 and back.tolist() == [1.0, 2.5, 3.0]
