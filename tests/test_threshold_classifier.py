"""rateopt.ThresholdClassifier: the scikit-learn contract, per-row draws, files and certificates."""

import numpy as np
import pytest
import rateopt as ro
from rateopt.exceptions import InfeasibleWarning, RateoptError
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    y = rng.integers(0, 2, n)
    X = np.column_stack([y + rng.normal(size=n) + (g == "a"), rng.normal(size=n)])
    return X, y, g


def test_scores_given_directly_meet_the_goal_on_training_data():
    X, y, g = _data()
    s = X[:, 0]
    clf = ro.ThresholdClassifier(goals=[ro.goals.demographic_parity("g", slack=0.02)]).fit(s, y, groups={"g": g})
    p = clf.predict_proba(s, groups={"g": g})[:, 1]
    assert p.shape == (s.size,)
    overall = p.mean()
    for grp in "ab":
        assert abs(p[g == grp].mean() - overall) <= 0.02 + 1e-9
    # the training evaluation is the rule's expected error, counted with NumPy
    assert clf.training_.objective == pytest.approx(float(np.mean(np.where(y == 1, 1 - p, p))), abs=1e-10)
    assert clf.violation_ == 0.0


def test_estimator_is_fitted_on_X_or_used_prefit():
    X, y, g = _data()
    base = LogisticRegression().fit(X, y)
    pre = ro.ThresholdClassifier(base, goals=[ro.goals.equal_opportunity("g", slack=0.02)], prefit=True)
    pre.fit(X, y, groups={"g": g})
    assert pre.estimator_ is base
    fresh = ro.ThresholdClassifier(LogisticRegression(), goals=[ro.goals.equal_opportunity("g", slack=0.02)])
    fresh.fit(X, y, groups={"g": g})
    assert fresh.estimator_ is not fresh.estimator
    np.testing.assert_allclose(fresh.estimator_.coef_, base.coef_)
    # the same scores give the same rule
    np.testing.assert_array_equal(fresh.rule_.table, pre.rule_.table)
    # and a rule on the scores taken by hand is the same rule
    by_hand = ro.ThresholdClassifier(goals=[ro.goals.equal_opportunity("g", slack=0.02)])
    by_hand.fit(base.predict_proba(X)[:, 1], y, groups={"g": g})
    np.testing.assert_array_equal(by_hand.rule_.table, pre.rule_.table)


def test_predict_is_a_property_of_the_row():
    X, y, g = _data()
    clf = ro.ThresholdClassifier(HistGradientBoostingClassifier(max_iter=30, random_state=0),
                                 goals=[ro.goals.equalized_odds("g", slack=0.01)], random_state=3)
    clf.fit(X, y, groups={"g": g})
    labels = clf.predict(X, groups={"g": g})
    perm = np.random.default_rng(1).permutation(y.size)
    np.testing.assert_array_equal(clf.predict(X[perm], groups={"g": g[perm]}), labels[perm])
    np.testing.assert_array_equal(clf.predict(X[:7], groups={"g": g[:7]}), labels[:7])
    p = clf.predict_proba(X, groups={"g": g})[:, 1]
    assert np.all(labels[p == 1.0] == 1) and np.all(labels[p == 0.0] == 0)
    assert set(np.unique(labels)) <= {0, 1}


def test_group_blind_rule_needs_no_groups_at_prediction():
    X, y, g = _data()
    s = X[:, 0]
    clf = ro.ThresholdClassifier(goals=[ro.goals.demographic_parity("g", slack=0.2)], group_blind=True)
    clf.fit(s, y, groups={"g": g})
    assert clf.rule_.n_cells == 1 and clf.rule_.columns == ()
    p = clf.predict_proba(s)[:, 1]
    # one non-decreasing function of the score for everyone
    order = np.argsort(s, kind="stable")
    assert np.all(np.diff(p[order]) >= 0)


def test_f_measure_objective_is_at_least_every_single_threshold():
    X, y, g = _data(seed=4)
    s = X[:, 0]
    clf = ro.ThresholdClassifier(objective="f_measure", group_blind=True).fit(s, y, groups={"g": g})
    best = 0.0
    for t in np.unique(s):
        d = s >= t
        tp = np.sum(d & (y == 1))
        best = max(best, 2 * tp / (2 * tp + np.sum(d & (y == 0)) + np.sum(~d & (y == 1))))
    assert -clf.training_.objective == pytest.approx(best, abs=1e-9)


def test_save_and_load_round_trip(tmp_path):
    X, y, g = _data()
    s = X[:, 0]
    clf = ro.ThresholdClassifier(goals=[ro.goals.equalized_odds("g", slack=0.03)], random_state=5)
    clf.fit(s, np.where(y == 1, "yes", "no"), groups={"g": g})
    path = tmp_path / "rule.npz"
    clf.save(path)
    back = ro.load(path)
    assert isinstance(back, ro.ThresholdClassifier)
    np.testing.assert_array_equal(back.predict_proba(s, groups={"g": g}), clf.predict_proba(s, groups={"g": g}))
    np.testing.assert_array_equal(back.predict(s, groups={"g": g}), clf.predict(s, groups={"g": g}))


def test_a_scoring_model_is_not_pickled(tmp_path):
    X, y, g = _data()
    clf = ro.ThresholdClassifier(LogisticRegression()).fit(X, y, groups={"g": g})
    with pytest.raises(RateoptError, match="skops"):
        clf.save(tmp_path / "x.npz")


def test_bad_input_is_refused_with_the_argument_named():
    X, y, g = _data()
    with pytest.raises(ValueError, match="estimator must be a classifier"):
        ro.ThresholdClassifier(LinearRegression()).fit(X, y, groups={"g": g})
    with pytest.raises(ValueError, match="n_bins"):
        ro.ThresholdClassifier(n_bins=0).fit(X[:, 0], y, groups={"g": g})
    with pytest.raises(ValueError, match="scores of shape"):
        ro.ThresholdClassifier().fit(X, y, groups={"g": g})
    clf = ro.ThresholdClassifier().fit(X[:, 0], y, groups={"g": g})
    with pytest.raises(ValueError, match="groups is required"):
        clf.predict(X[:, 0])
    with pytest.raises(RateoptError, match="not fitted on"):
        clf.predict(X[:3, 0], groups={"g": np.array(["a", "b", "zzz"])})


def test_infeasible_goals_warn_and_give_the_least_violation():
    X, y, g = _data()
    goals = [ro.goals.coverage_budget(0.1), ro.goals.recall_floor(0.95)]  # ~half the rows are positives
    with pytest.warns(InfeasibleWarning, match="smallest possible largest violation"):
        clf = ro.ThresholdClassifier(goals=goals).fit(X[:, 0], y, groups={"g": g})
    assert clf.violation_ > 0.1
    assert clf.training_.max_violation == pytest.approx(clf.violation_, abs=1e-7)


def test_certify_on_held_out_data():
    X, y, g = _data(4000, seed=1)
    Xv, yv, gv = _data(20000, seed=2)
    goal = ro.goals.demographic_parity("g", slack=0.05)
    clf = ro.ThresholdClassifier(goals=[goal]).fit(X[:, 0], y, groups={"g": g})
    cert = clf.certify(Xv[:, 0], yv, groups={"g": gv}, confidence=0.9)
    assert isinstance(cert, ro.Certificate)
    assert cert.confidence == 0.9 and cert.n_samples == 20000
    assert [b.name for b in cert.goals] == list(clf.problem_.constraint_names)
    d = clf.predict(Xv[:, 0], groups={"g": gv})
    for b in cert.goals:
        assert b.upper >= b.value
    # the held-out value of the first goal, counted with NumPy
    sub = "a" if "group=a" in cert.goals[0].name or "g=a" in cert.goals[0].name else "b"
    diff = d[gv == sub].mean() - d.mean()
    assert cert.goals[0].value in (pytest.approx(diff - 0.05), pytest.approx(-diff - 0.05))


def test_clone_keeps_parameters():
    clf = ro.ThresholdClassifier(LogisticRegression(C=2.0), n_bins=64, group_blind=True, epsilon=0.01)
    c2 = clone(clf)
    assert c2.get_params()["n_bins"] == 64 and c2.get_params()["estimator__C"] == 2.0


# --------------------------------------------------------------------------- K classes: the plug-in rule


def _three_classes(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    g = np.where(rng.random(n) < 0.4, "A", "B")
    X = np.column_stack([rng.normal(size=(n, 3)) + 0.7 * (g == "A")[:, None], g == "A"]).astype(float)
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.7, size=n), [-0.3, 1.0])
    return X, y, g


def test_k_class_plugin_meets_parity_and_draws_follow_its_distribution():
    X, y, g = _three_classes()
    goal = ro.goals.multiclass_demographic_parity("g", slack=0.03)
    post = ro.ThresholdClassifier(LogisticRegression(), goals=[goal]).fit(X, y, groups={"g": g})
    P = post.predict_proba(X, groups={"g": g})
    assert P.shape == (len(y), 3) and np.allclose(P.sum(axis=1), 1.0)
    for v in ("A", "B"):  # by counting the expected decisions
        assert np.all(np.abs(P[g == v].mean(axis=0) - P.mean(axis=0)) <= 0.03 + 1e-9)
    pred = post.predict(X, groups={"g": g})
    assert set(pred) <= {0, 1, 2}
    np.testing.assert_array_equal(post.predict(X[:200], groups={"g": g[:200]}), pred[:200])  # per row
    # the drawn labels' class shares follow the rule's distribution (3000 rows: a few standard errors)
    np.testing.assert_allclose(np.bincount(pred, minlength=3) / len(pred), P.mean(axis=0), atol=0.03)
    assert len(post.plugin_.probabilities) <= len(post.problem_.constraints) + 1


def test_k_class_plugin_refusals():
    X, y, g = _three_classes(600)
    goal = ro.goals.multiclass_demographic_parity("g", slack=0.05)
    with pytest.raises(ValueError, match="group_blind"):
        ro.ThresholdClassifier(LogisticRegression(), goals=[goal], group_blind=True).fit(X, y, groups={"g": g})
    post = ro.ThresholdClassifier(LogisticRegression(), goals=[goal]).fit(X, y, groups={"g": g})
    with pytest.raises(ValueError, match="groups is required"):
        post.predict(X)
    with pytest.raises(RateoptError, match="two-class"):
        post.save("never.npz")
