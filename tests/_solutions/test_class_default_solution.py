"""The K-class default solution: what it is, what it needs at prediction, and its floors on the training data.

References: rates recounted from the rows by NumPy (expected error
``1 - mean P[i, y_i]`` and the parity gaps of the decision distributions),
each rule's decisions recomputed by ``argmax`` from its parameters, and the
plug-in post-processing of the run's best iterate fitted by
:class:`rateopt.ThresholdClassifier` on the iterate's softmax probabilities
(a separate code path: the K-class plug-in LP of ``_postprocess._plugin``).
"""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

import rateopt as ro

SLACK = 0.03


def _rows(seed, n, group_feature=True):
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < 0.35, "a", "b")
    Z = rng.normal(size=(n, 4)) + (group == "a")[:, None] * 0.7
    y = np.digitize(Z[:, 0] + 0.5 * Z[:, 1] + rng.normal(scale=0.8, size=n), [-0.2, 1.0])
    X = np.column_stack([Z, group == "a"]).astype(np.float64) if group_feature else Z
    return X, y, group


def _problem(X, y, group):
    return ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("group", slack=SLACK)],
                      datasets=ro.ClassDataset(X, y, groups={"group": group}))


def _rates(P, y, group):
    """Expected error and the largest parity excess over the slack, counted from the rows."""
    err = 1.0 - P[np.arange(len(y)), y].mean()
    overall = P.mean(axis=0)
    worst = max(np.abs(P[group == g].mean(axis=0) - overall).max() for g in np.unique(group))
    return err, worst - SLACK


class _Softmax(ClassifierMixin, BaseEstimator):
    """A fitted multinomial linear model's softmax probabilities (the plug-in's class-probability model)."""

    def __init__(self, W=None, b=None, classes=None):
        self.W, self.b, self.classes = W, b, classes
        self.classes_ = None if classes is None else np.asarray(classes)

    def fit(self, X, y):
        return self

    def predict_proba(self, X):
        S = np.asarray(X) @ self.W.T + self.b
        E = np.exp(S - S.max(axis=1, keepdims=True))
        return E / E.sum(axis=1, keepdims=True)

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


@pytest.fixture(scope="module")
def run():
    X, y, group = _rows(0, 900)
    problem = _problem(X, y, group)
    res = ro.train(problem, ro.LinearModel(l2=1e-4), n_iter=200, random_state=0)
    return X, y, group, problem, res


def test_the_default_is_thresholded_and_folds_to_linear_models_when_the_groups_are_features(run):
    X, y, group, problem, res = run
    assert res.default_kind() == "thresholded"
    clf = res.solution()
    assert isinstance(clf, ro.MulticlassClassifier)  # no groups at prediction, saved like any model
    # the folded models decide as the group-aware rule: recount each rule from its parameters
    aware = res.thresholded(problem, group_blind=False)
    assert set(aware.rule.kinds) == {"offsets"}
    cells = np.asarray(problem.compiled.cells)
    Xn, _, gn = _rows(1, 3000)
    cells_new = np.where(gn == group[0], cells[0], 1 - cells[0])
    W, b = aware.scorer.coefs_, aware.scorer.intercepts_
    for Xs, cs in ((X, cells), (Xn, cells_new)):
        votes = np.stack([np.argmax(Xs @ W[t].T + b[t] + o[cs], axis=1)
                          for t, o in zip(aware.rule.iterate, aware.rule.params)], axis=1)
        P = np.zeros((Xs.shape[0], 3))
        for r, p in enumerate(aware.rule.probabilities):
            P[np.arange(Xs.shape[0]), votes[:, r]] += p
        np.testing.assert_allclose(clf.predict_proba(Xs), P, atol=1e-12)
        folded_votes = np.argmax(np.einsum("nd,rkd->nrk", Xs, clf.coefs_) + clf.intercepts_, axis=2)
        assert np.array_equal(folded_votes, votes)


def test_the_default_is_never_worse_than_the_plugin_of_its_best_iterate(run):
    X, y, group, problem, res = run
    err, excess = _rates(res.solution().predict_proba(X), y, group)
    assert excess <= 1e-9
    t = int(np.flatnonzero(res.mixture("best"))[0])
    plug = ro.ThresholdClassifier(_Softmax(res.weights[t], res.biases[t], res.classes), prefit=True,
                                  goals=[ro.goals.multiclass_demographic_parity("group", slack=SLACK)])
    plug.fit(X, y, groups={"group": group})
    err_plug, excess_plug = _rates(plug.predict_proba(X, groups={"group": group}), y, group)
    assert excess_plug <= 1e-9
    assert err <= err_plug + 1e-12
    # and never worse than the m-stochastic solution, nor the best iterate when it meets the goals
    err_m, excess_m = _rates(res.solution("m-stochastic").predict_proba(X), y, group)
    assert excess_m <= 1e-9 and err <= err_m + 1e-12


def test_without_group_features_the_default_is_group_blind():
    X, y, group = _rows(2, 700, group_feature=False)
    problem = _problem(X, y, group)
    res = ro.train(problem, ro.LinearModel(l2=1e-4), n_iter=150, random_state=0)
    clf = res.solution()
    assert isinstance(clf, ro.MulticlassClassifier)
    np.testing.assert_array_equal(clf.coefs_, res.thresholded(problem, group_blind=True).coefs_)
    err, excess = _rates(clf.predict_proba(X), y, group)
    err_m, excess_m = _rates(res.solution("m-stochastic").predict_proba(X), y, group)
    assert excess <= 1e-9 and excess_m <= 1e-9
    assert err <= err_m + 1e-12


def test_the_default_kind(run, tmp_path):
    X, y, group, problem, res = run
    assert res.default_kind() == "thresholded"
    path = tmp_path / "run.result.npz"
    res.save(path)
    loaded = ro.load(path)
    assert loaded.default_kind() == "m-stochastic"  # a loaded result does not know its training problem
    assert loaded.default_kind(problem) == "thresholded"
    rng = np.random.default_rng(0)
    two = ro.Problem(constraints=[ro.goals.demographic_parity("g", slack=0.05)],
                     datasets=ro.Dataset(rng.normal(size=(200, 3)), rng.integers(0, 2, 200),
                                         groups={"g": rng.integers(0, 2, 200)}))
    assert ro.train(two, n_iter=20, random_state=0).default_kind() == "m-stochastic"
