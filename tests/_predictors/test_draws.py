"""Drawn decisions realize their expected rates, also on tied scores and repeated feature rows.

Every stochastic classifier of rateopt reports the exact decision distribution
(``predict_proba``) and draws one decision per row (``predict``). The draws
are checked against ``predict_proba`` by an independent count: in every group,
the share of rows drawn into class ``k`` must lie within 4 binomial standard
errors ``sqrt(sum_i p_ik (1 - p_ik)) / n_group`` of the mean of ``p_ik`` over
the group's rows (the draws are independent given the rows). Where many rows
share a score or a feature row, a draw keyed on the row's content alone gives
them one shared uniform number and misses that band by many standard errors.

The key of a row's draw is its content and its occurrence among identical
rows of the batch, or the ``row_key`` id given for it: the same input gives
the same decisions, and with ``row_key`` a row's decision is the same in any
batch and order.
"""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

import rateopt as ro
from rateopt._predictors._draws import VoteMixture, pick_votes
from rateopt.goals import demographic_parity, multiclass_demographic_parity


def assert_realized(labels, P, classes, groups):
    """Each group's drawn share of each class is within 4 binomial SE of the mean of ``P[:, k]`` on its rows."""
    labels = np.asarray(labels)
    for g in np.unique(groups):
        rows = groups == g
        n = rows.sum()
        for k, c in enumerate(classes):
            p = P[rows, k]
            drawn = np.mean(labels[rows] == c)
            se = np.sqrt(np.sum(p * (1 - p))) / n
            assert abs(drawn - p.mean()) <= 4 * se + 1e-12, (
                f"group {g!r}, class {c!r}: drawn {drawn:.4f}, expected {p.mean():.4f}, SE {se:.4f}")


def _two_class_data(n, rng, *, discrete):
    g = rng.choice(np.array(["a", "b"]), n, p=[0.4, 0.6])
    X = rng.integers(0, 3, size=(n, 3)).astype(np.float64) if discrete else rng.normal(size=(n, 3))
    logit = X @ np.array([0.8, -0.5, 0.3]) + 0.9 * (g == "a") - 0.6
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    return X, y, g


def _k_class_data(n, rng):
    g = rng.choice(np.array(["a", "b"]), n, p=[0.4, 0.6])
    X = rng.integers(0, 3, size=(n, 3)).astype(np.float64)
    S = X @ rng.normal(size=(3, 3)) + np.outer(g == "a", [2.0, 0.0, -2.0])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    return X, y, g


# -- ThresholdClassifier on tied scores, two classes and K classes, scores-only and model-wrapped -----------------

@pytest.mark.parametrize("wrapped", [False, True], ids=["scores-only", "model-wrapped"])
def test_two_class_rule_on_a_depth_3_trees_scores_realizes_its_rates(wrapped):
    rng = np.random.default_rng(0)
    X, y, g = _two_class_data(6000, rng, discrete=wrapped)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    if wrapped:  # discrete features: every feature row repeats about 220 times
        clf = ro.ThresholdClassifier(DecisionTreeClassifier(max_depth=3, random_state=0),
                                     goals=[demographic_parity("g", slack=0.0)])
        inputs = X
    else:
        inputs = tree.predict_proba(X)[:, 1]
        assert np.unique(inputs).size <= 8
        clf = ro.ThresholdClassifier(goals=[demographic_parity("g", slack=0.01)])
    clf.fit(inputs, y, groups={"g": g})
    P = clf.predict_proba(inputs, groups={"g": g})
    assert np.mean((P[:, 1] > 0) & (P[:, 1] < 1)) > 0.1  # many rows in randomized bins
    assert_realized(clf.predict(inputs, groups={"g": g}), P, clf.classes_, g)


def test_two_class_rule_on_integer_scores_at_slack_0_realizes_its_rates():
    rng = np.random.default_rng(1)
    n = 5000
    g = rng.choice(np.array(["a", "b"]), n)
    s = rng.integers(1, 11, size=n).astype(np.float64)
    y = (rng.random(n) < (s + 2 * (g == "a")) / 13).astype(np.int64)
    clf = ro.ThresholdClassifier(goals=[demographic_parity("g", slack=0.0)]).fit(s, y, groups={"g": g})
    P = clf.predict_proba(s, groups={"g": g})
    assert np.any((P[:, 1] > 0) & (P[:, 1] < 1))  # randomized bins exist
    assert_realized(clf.predict(s, groups={"g": g}), P, clf.classes_, g)


@pytest.mark.parametrize("wrapped", [False, True], ids=["scores-only", "model-wrapped"])
def test_k_class_plugin_rule_on_probability_rows_realizes_its_rates(wrapped):
    rng = np.random.default_rng(3)
    X, y, g = _k_class_data(6000, rng)
    goals = [multiclass_demographic_parity("g", slack=0.0)]
    if wrapped:
        clf = ro.ThresholdClassifier(DecisionTreeClassifier(max_depth=3, random_state=0), goals=goals)
        inputs = X
    else:
        inputs = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y).predict_proba(X)
        assert np.unique(inputs, axis=0).shape[0] <= 8
        clf = ro.ThresholdClassifier(goals=goals)
    clf.fit(inputs, y, groups={"g": g})
    P = clf.predict_proba(inputs, groups={"g": g})
    assert P.shape == (6000, 3)
    assert np.mean(np.any((P > 0) & (P < 1), axis=1)) > 0.1  # many rows on which the rule is randomized
    assert_realized(clf.predict(inputs, groups={"g": g}), P, clf.classes_, g)


# -- mixtures of linear models on repeated feature rows ----------------------------------------------------------

def _repeated_rows(rng, d=4, distinct=40, copies=100):
    """``distinct`` feature rows, each repeated ``copies`` times, in shuffled order (as categorical data)."""
    X = np.repeat(rng.normal(size=(distinct, d)), copies, axis=0)
    return X[rng.permutation(X.shape[0])]


def _stochastic(rng, d=4):
    return ro.StochasticClassifier(rng.normal(size=(3, d)), rng.normal(size=3), [0.2, 0.5, 0.3])


def _multiclass(rng, d=4):
    return ro.MulticlassClassifier(rng.normal(size=(3, 3, d)), rng.normal(size=(3, 3)), [0.2, 0.5, 0.3],
                                   classes=np.array(["u", "v", "w"]))


def _ramp(rng, d=4):
    return ro.RampClassifier(0.4 * rng.normal(size=d), 0.1)


def _estimator_mixture(rng, d=4):
    X = rng.normal(size=(300, d))
    trees = [DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, (X[:, j] > 0).astype(int)) for j in range(3)]
    return ro.EstimatorMixture(trees, [0.2, 0.5, 0.3], d)


def _thresholded(rng, d=4):
    """Two scoring models, each followed by a randomized threshold rule (two bins: below and above 0)."""
    from rateopt._postprocess._mixture import ThresholdedMixture

    scorer = ro.StochasticClassifier(rng.normal(size=(2, d)), rng.normal(size=2), [0.5, 0.5])
    return ThresholdedMixture(scorer, [0.4, 0.6], [0, 2, 4], [-np.inf, 0.0, -np.inf, 0.0], [0.2, 0.7, 0.1, 0.9])


MIXTURES = {"two-class": _stochastic, "K-class": _multiclass, "ramp": _ramp, "estimator-mixture": _estimator_mixture,
            "thresholded": _thresholded}


def _classes(clf):
    return clf.classes_ if hasattr(clf, "classes_") else np.array([0, 1])


@pytest.mark.parametrize("make", MIXTURES.values(), ids=MIXTURES.keys())
def test_a_mixture_on_repeated_feature_rows_realizes_its_rates(make):
    rng = np.random.default_rng(3)
    clf = make(rng)
    X = _repeated_rows(rng)
    g = rng.choice(np.array(["a", "b"]), X.shape[0])
    P = clf.predict_proba(X)
    assert np.any((P > 0.05) & (P < 0.95))
    for seed in range(5):
        assert_realized(clf.predict(X, random_state=seed), P, _classes(clf), g)


# -- the same input gives the same decisions; row_key gives a row's decision in any batch and order -------------

@pytest.mark.parametrize("make", MIXTURES.values(), ids=MIXTURES.keys())
def test_same_input_same_decisions_and_row_key_decisions_in_any_batch(make):
    rng = np.random.default_rng(4)
    clf = make(rng)
    X = _repeated_rows(rng, distinct=30, copies=20)
    ids = np.arange(X.shape[0]) * 7 + 1000
    a = clf.predict(X, random_state=5)
    np.testing.assert_array_equal(clf.predict(X.copy(), random_state=5), a)
    keyed = clf.predict(X, random_state=5, row_key=ids)
    for rows in (rng.permutation(X.shape[0]), rng.permutation(X.shape[0])[:77], np.arange(X.shape[0])[::-3]):
        np.testing.assert_array_equal(clf.predict(X[rows], random_state=5, row_key=ids[rows]), keyed[rows])
    names = np.array([f"row-{i}" for i in ids], dtype=object)
    by_name = clf.predict(X, random_state=5, row_key=names)
    perm = rng.permutation(X.shape[0])
    np.testing.assert_array_equal(clf.predict(X[perm], random_state=5, row_key=names[perm]), by_name[perm])
    # keyed draws realize the rates too (the ids separate the repeated rows)
    g = np.where(np.arange(X.shape[0]) % 3 == 0, "a", "b")
    assert_realized(keyed, clf.predict_proba(X), _classes(clf), g)


def test_identical_rows_keep_their_decisions_when_the_batch_is_reordered():
    # without row_key, the decisions given to the copies of a row are a function of the batch's content:
    # reordering the batch permutes them among the copies (the multiset per distinct row is unchanged)
    rng = np.random.default_rng(5)
    clf = _stochastic(rng)
    X = _repeated_rows(rng, distinct=10, copies=50)
    perm = rng.permutation(X.shape[0])
    a, b = clf.predict(X, random_state=2), clf.predict(X[perm], random_state=2)
    codes = np.unique(X, axis=0, return_inverse=True)[1].ravel()
    for c in range(10):
        assert np.sum(a[codes == c]) == np.sum(b[codes[perm] == c])


@pytest.mark.parametrize("wrapped", [False, True], ids=["scores-only", "model-wrapped"])
def test_threshold_classifier_row_key_gives_a_rows_decision_in_any_batch(wrapped):
    rng = np.random.default_rng(6)
    s = rng.integers(1, 6, size=800).astype(np.float64)
    g = rng.choice(np.array(["a", "b"]), 800)
    y = (rng.random(800) < s / 6).astype(np.int64)
    X = np.column_stack([s, np.zeros(800)])
    est = DecisionTreeClassifier(max_depth=3, random_state=0) if wrapped else None
    inputs = X if wrapped else s
    clf = ro.ThresholdClassifier(est, goals=[demographic_parity("g", slack=0.0)]).fit(inputs, y, groups={"g": g})
    ids = np.arange(800)
    full = clf.predict(inputs, groups={"g": g}, row_key=ids)
    np.testing.assert_array_equal(clf.predict(inputs, groups={"g": g}), clf.predict(inputs, groups={"g": g}))
    rows = rng.permutation(800)[:300]
    np.testing.assert_array_equal(clf.predict(inputs[rows], groups={"g": g[rows]}, row_key=ids[rows]), full[rows])


@pytest.mark.parametrize("bad, match", [
    (np.arange(5), "row_key"),  # the wrong length
    (np.ones(10), "row_key"),  # floats
    (np.arange(10).reshape(5, 2), "row_key"),  # not one id per row
])
def test_bad_row_key_is_refused_naming_the_argument(bad, match):
    rng = np.random.default_rng(7)
    clf = _stochastic(rng)
    with pytest.raises(ValueError, match=match):
        clf.predict(rng.normal(size=(10, 4)), row_key=bad)


class _Votes(VoteMixture):
    """A vote mixture whose models' votes are given: the row's features are its index into them."""

    def __init__(self, votes, probabilities, classes):
        self.votes, self.probabilities_ = np.asarray(votes), np.asarray(probabilities)
        self.classes_ = np.asarray(classes)

    def _features(self, X):
        return ro.FeatureMatrix(np.asarray(X, dtype=np.float64))

    def _votes(self, Xm):
        return self.votes[Xm.data[:, 0].astype(np.int64)]


def test_vote_mixture_probabilities_and_draws_against_a_per_row_count():
    rng = np.random.default_rng(3)
    votes = rng.integers(0, 3, size=(400, 5))
    p = np.array([0.1, 0.25, 0.05, 0.4, 0.2])
    clf = _Votes(votes, p, ["a", "b", "c"])
    X = np.arange(400.0)[:, None]
    expected = np.array([[p[votes[i] == k].sum() for k in range(3)] for i in range(400)])  # a loop per row
    assert np.allclose(clf.predict_proba(X), expected, rtol=0, atol=1e-15)
    labels = clf.predict(X, random_state=4)
    # each row's label is the vote of a model of positive probability, and of the model its uniform picks
    u = rng.random(400)  # the draw's reference: the first model whose cumulative probability exceeds u
    first = [votes[i, next(t for t in range(5) if u[i] < p[:t + 1].sum() or t == 4)] for i in range(400)]
    assert pick_votes(votes, p, u).tolist() == first
    assert all(label in np.asarray(["a", "b", "c"])[votes[i]] for i, label in enumerate(labels))
    assert_realized(labels, expected, ["a", "b", "c"], np.zeros(400))


def test_a_single_model_decides_as_its_votes_whatever_the_seed():
    votes = np.array([[0], [2], [1], [2]])
    clf = _Votes(votes, [1.0], [10, 20, 30])
    X = np.arange(4.0)[:, None]
    assert clf.predict(X, random_state=0).tolist() == [10, 30, 20, 30] == clf.predict(X, random_state=99).tolist()
    assert np.array_equal(clf.predict_proba(X), np.eye(3)[[0, 2, 1, 2]])
    with pytest.raises(ValueError, match="random_state"):  # checked as a mixture's, though nothing is drawn
        clf.predict(X, random_state=-1)
