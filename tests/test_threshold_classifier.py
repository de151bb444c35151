"""rateopt.ThresholdClassifier: the scikit-learn contract, per-row draws, files and certificates."""

import itertools

import numpy as np
import pytest
import rateopt as ro
from rateopt.exceptions import InfeasibleWarning, RateoptError
from scipy.optimize import linprog
from scipy.stats import beta
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


@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_scoring_model_is_not_pickled(tmp_path, n_classes):
    X, y, g = _data() if n_classes == 2 else _three_classes(600)
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


# --------------------------------------------------------------------------- two and K classes: one contract


def _scored(n_classes, n, seed):
    """Scores given directly: one score per row (two classes) or class probabilities (K classes), and labels."""
    if n_classes == 2:
        X, y, g = _data(n, seed)
        return X[:, 0], np.where(y == 1, "yes", "no"), g
    X, y, g = _three_classes(n, seed)
    P = LogisticRegression().fit(X, y).predict_proba(X)
    return P, np.array(["lo", "mid", "hi"])[y], g


def _parity(n_classes, group, slack):
    return (ro.goals.demographic_parity(group, slack=slack) if n_classes == 2
            else ro.goals.multiclass_demographic_parity(group, slack=slack))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_save_and_load_round_trip_for_two_and_k_classes(tmp_path, n_classes):
    X, y, g = _scored(n_classes, 900, 0)
    clf = ro.ThresholdClassifier(goals=[_parity(n_classes, "g", 0.02)], random_state=5).fit(X, y, groups={"g": g})
    path = tmp_path / "rule.npz"
    clf.save(path)
    back = ro.load(path)
    assert isinstance(back, ro.ThresholdClassifier)
    np.testing.assert_array_equal(back.classes_, clf.classes_)
    np.testing.assert_array_equal(back.predict_proba(X, groups={"g": g}), clf.predict_proba(X, groups={"g": g}))
    np.testing.assert_array_equal(back.predict(X, groups={"g": g}), clf.predict(X, groups={"g": g}))
    # the loaded rule certifies like the fitted one
    Xh, yh, gh = _scored(n_classes, 900, 1)
    a = clf.certify(Xh, yh, groups={"g": gh})
    b = back.certify(Xh, yh, groups={"g": gh}, goals=clf.goals)
    assert [(x.name, x.value, x.upper) for x in a.goals] == [(x.name, x.value, x.upper) for x in b.goals]


def _rewritten(tmp_path, source, edit):
    """A copy of a saved file with its metadata or arrays edited (the file machinery's own writer)."""
    from rateopt._io import _known_array
    from rateopt._utils._archive import read_archive, write_archive
    meta, arrays = read_archive(source, _known_array)
    fmt = meta.pop("format")
    meta.pop("version")
    edit(meta, arrays)
    out = tmp_path / "edited.npz"
    write_archive(out, meta, arrays, fmt)
    return out


@pytest.mark.parametrize("edit, field", [
    (lambda m, a: m.update(rule="forest"), "'rule'"),
    (lambda m, a: m.update(classes=["lo", "mid"]), "'classes'"),
    (lambda m, a: m.update(classes=["lo", "lo", "hi"]), "'classes'"),
    (lambda m, a: a.update(plugin_probabilities=a["plugin_probabilities"] * 2), "'plugin_probabilities'"),
    (lambda m, a: a.update(plugin_costs=a["plugin_costs"][:, :, :2, :2]), "'plugin_costs'"),
    (lambda m, a: a.update(plugin_costs=a["plugin_costs"][:, :1]), "one table per cell"),
    (lambda m, a: a.pop("plugin_costs"), "'plugin_costs'"),
    (lambda m, a: m.update(cells=[]), "'cells'"),
])
def test_impossible_k_class_files_are_refused_in_one_line(tmp_path, edit, field):
    X, y, g = _scored(3, 600, 0)
    clf = ro.ThresholdClassifier(goals=[_parity(3, "g", 0.05)]).fit(X, y, groups={"g": g})
    clf.save(tmp_path / "rule.npz")
    bad = _rewritten(tmp_path, tmp_path / "rule.npz", edit)
    with pytest.raises(RateoptError, match=field) as info:
        ro.load(bad)
    assert "\n" not in str(info.value) and "edited.npz" in str(info.value)


def test_a_two_class_file_without_the_rule_field_still_loads(tmp_path):
    """Files written before K-class rules could be saved have no 'rule' field: they are threshold rules."""
    X, y, g = _scored(2, 600, 0)
    clf = ro.ThresholdClassifier(goals=[_parity(2, "g", 0.05)]).fit(X, y, groups={"g": g})
    clf.save(tmp_path / "rule.npz")
    old = _rewritten(tmp_path, tmp_path / "rule.npz", lambda m, a: m.pop("rule"))
    back = ro.load(old)
    np.testing.assert_array_equal(back.predict_proba(X, groups={"g": g}), clf.predict_proba(X, groups={"g": g}))


def _tiny(n_classes, seed):
    """Seven rows in two groups: distinct scores (two classes) or class probabilities (three classes)."""
    rng = np.random.default_rng(seed)
    g = np.array(["a", "b"] * 4)[:7]
    if n_classes == 2:
        return rng.permutation(7).astype(float), np.array([0, 1, 0, 1, 1, 0, 1]), g
    return rng.dirichlet(np.ones(3) * 0.7, size=7), np.arange(7) % 3, g


def _deterministic_rules(n_classes, X, y, g):
    """Every deterministic rule's (objective, parity values), counted row by row.

    Two classes: per-group thresholds ``score >= t`` (t over the group's scores and +inf), objective the
    error on y. Three classes: every assignment of a class to each row, objective the error expected
    under the probabilities X (the plug-in reads rates under the model's probabilities).
    """
    n = len(y)
    if n_classes == 2:
        cuts = {v: list(np.sort(X[g == v])) + [np.inf] for v in ("a", "b")}
        rules = [np.array([X[i] >= (ta if g[i] == "a" else tb) for i in range(n)], dtype=int)
                 for ta in cuts["a"] for tb in cuts["b"]]
        objective = [np.mean(d != y) for d in rules]
        shares = [np.column_stack([1 - d, d]) for d in rules]
    else:
        rules = [np.array(d) for d in itertools.product(range(3), repeat=n)]
        objective = [np.mean([1 - X[i, d[i]] for i in range(n)]) for d in rules]
        shares = [np.eye(3)[d] for d in rules]
    values = []
    for D in shares:
        overall = D.mean(axis=0)
        row = []
        for k in range(D.shape[1]) if n_classes > 2 else [1]:
            for v in ("a", "b"):
                r = D[g == v, k].mean()
                row += [r - overall[k], overall[k] - r]
        values.append(row)
    return np.array(objective), np.array(values)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_epsilon_is_the_violation_the_lp_allows(n_classes, seed):
    """Parity at slack 0 on 7 rows: the rule's objective is the brute-force LP's at that epsilon, recounted."""
    X, y, g = _tiny(n_classes, seed)
    F, G = _deterministic_rules(n_classes, X, y, g)
    found = []
    for eps in (0.0, 0.2):
        ref = linprog(F, A_ub=G.T, b_ub=np.full(G.shape[1], eps), A_eq=np.ones((1, len(F))), b_eq=[1.0],
                      bounds=(0, None), method="highs")
        assert ref.status == 0
        clf = ro.ThresholdClassifier(goals=[_parity(n_classes, "g", 0.0)], epsilon=eps).fit(X, y, groups={"g": g})
        Q = clf.predict_proba(X, groups={"g": g})
        # the rule's expected objective and parity values, recounted from its decision distribution
        if n_classes == 2:
            objective = np.mean(np.where(y == 1, Q[:, 0], Q[:, 1]))
            classes = [1]
        else:
            objective = np.mean(np.sum(Q * (1 - X), axis=1))
            classes = range(3)
        assert objective == pytest.approx(ref.fun, abs=1e-9)
        assert clf.training_.objective == pytest.approx(ref.fun, abs=1e-9)
        for k in classes:
            for v in ("a", "b"):
                assert abs(Q[g == v, k].mean() - Q[:, k].mean()) <= eps + 1e-9
        assert clf.violation_ <= 1e-9
        found.append(ref.fun)
    assert found[1] <= found[0] + 1e-12


def test_epsilon_changes_the_k_class_rule():
    """The issue's case: on seven three-class rows the objective at epsilon=0.2 is below the one at 0."""
    X, y, g = _tiny(3, 0)
    objective = [ro.ThresholdClassifier(goals=[_parity(3, "g", 0.0)], epsilon=eps)
                 .fit(X, y, groups={"g": g}).training_.objective for eps in (0.0, 0.2)]
    assert objective[1] < objective[0] - 0.05


def _clopper_pearson(k, n, alpha):
    lo = 0.0 if k == 0 else beta.ppf(alpha / 2, k, n - k + 1)
    hi = 1.0 if k == n else beta.ppf(1 - alpha / 2, k + 1, n - k)
    return lo, hi


@pytest.mark.parametrize("n_classes", [2, 3])
def test_certificate_is_the_union_bound_of_clopper_pearson_intervals(n_classes):
    """Every goal's bound recomputed by hand: counts of the drawn decisions, exact intervals at alpha / L."""
    X, y, g = _scored(n_classes, 3000, 0)
    Xh, yh, gh = _scored(n_classes, 4000, 1)
    clf = ro.ThresholdClassifier(goals=[_parity(n_classes, "g", 0.02)]).fit(X, y, groups={"g": g})
    goal = _parity(n_classes, "g", 0.05)
    cert = clf.certify(Xh, yh, groups={"g": gh}, goals=[goal], confidence=0.9)
    d = np.searchsorted(clf.classes_, clf.predict(Xh, groups={"g": gh}))
    label = np.searchsorted(clf.classes_, yh)
    classes = [1] if n_classes == 2 else list(range(n_classes))
    # the leaves: each class's prediction rate overall and per group, and the error's leaves
    # (two classes: one error rate; K classes: the K diagonal confusion entries)
    L = 3 * len(classes) + (1 if n_classes == 2 else n_classes)
    alpha = 0.1 / L
    n = len(yh)

    def ci(mask, k):
        return _clopper_pearson(int(np.sum(d[mask] == k)), int(mask.sum()), alpha)

    expected = []
    for k in classes:
        everyone = ci(np.ones(n, bool), k)
        for v in ("a", "b") if n_classes == 2 else ("A", "B"):
            part = ci(gh == v, k)
            expected += [part[1] - everyone[0] - 0.05, everyone[1] - part[0] - 0.05]
    np.testing.assert_allclose([b.upper for b in cert.goals], expected, rtol=0, atol=1e-12)
    if n_classes == 2:
        lo, hi = _clopper_pearson(int(np.sum(d != label)), n, alpha)
    else:
        parts = [_clopper_pearson(int(np.sum((d == k) & (label == k))), n, alpha) for k in classes]
        lo, hi = 1 - sum(p[1] for p in parts), 1 - sum(p[0] for p in parts)
    assert cert.objective == pytest.approx(np.mean(d != label), abs=1e-12)
    np.testing.assert_allclose(cert.objective_interval, (lo, hi), rtol=0, atol=1e-12)
    assert cert.method == "clopper-pearson" and cert.n_samples == n


# --------------------------------------------------------------------------- group columns taken out of X


def _frame(n_classes, n=1200, seed=0):
    """A DataFrame of features plus the group column "g" (and a second group column "h"), and labels."""
    pd = pytest.importorskip("pandas")
    if n_classes == 2:
        X, y, g = _data(n, seed)
    else:
        X, y, g = _three_classes(n, seed)
    h = np.where(np.random.default_rng(seed + 7).random(len(y)) < 0.5, "u", "v")
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    frame.insert(1, "g", g)
    frame["h"] = h
    return frame, y, g, h


@pytest.mark.parametrize("n_classes", [2, 3])
def test_group_columns_are_the_groups_taken_out_of_X(n_classes):
    frame, y, g, h = _frame(n_classes)
    goals = [_parity(n_classes, "g", 0.03)]
    features = frame.drop(columns=["g", "h"])
    by_hand = ro.ThresholdClassifier(LogisticRegression(), goals=goals).fit(features, y, groups={"g": g, "h": h})
    inside = ro.ThresholdClassifier(LogisticRegression(), goals=goals, group_columns=["g", "h"]).fit(frame, y)
    # the model never saw the group columns
    assert list(inside.estimator_.feature_names_in_) == list(features.columns)
    np.testing.assert_array_equal(inside.predict_proba(frame), by_hand.predict_proba(features, groups={"g": g, "h": h}))
    np.testing.assert_array_equal(inside.predict(frame), by_hand.predict(features, groups={"g": g, "h": h}))
    # positions of an array's columns name the groups "1" and the last column's position
    arr = frame.to_numpy(dtype=object)
    pos = ro.ThresholdClassifier(LogisticRegression(), goals=[_parity(n_classes, "1", 0.03)],
                                 group_columns=[1, arr.shape[1] - 1], cell_columns=["1"])
    pos.fit(np.asarray(arr), y)
    hand = ro.ThresholdClassifier(LogisticRegression(), goals=goals, cell_columns=["g"])
    hand.fit(features.to_numpy(dtype=float), y, groups={"g": g, "h": h})
    assert pos.cell_columns_ == ("1",) and hand.cell_columns_ == ("g",)
    np.testing.assert_array_equal(pos.predict_proba(arr), hand.predict_proba(features.to_numpy(dtype=float),
                                                                              groups={"g": g, "h": h}))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_group_columns_work_in_a_pipeline_and_in_cross_val_score(n_classes):
    from sklearn.compose import ColumnTransformer
    from sklearn.model_selection import KFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    frame, y, g, h = _frame(n_classes)
    numeric = [c for c in frame.columns if c.startswith("x")]

    def post():
        return ro.ThresholdClassifier(LogisticRegression(), goals=[_parity(n_classes, "g", 0.03)],
                                      group_columns=["g", "h"], cell_columns=["g"])

    def pipeline():
        scale = ColumnTransformer([("num", StandardScaler(), numeric)], remainder="passthrough",
                                  verbose_feature_names_out=False).set_output(transform="pandas")
        return make_pipeline(scale, post())

    folds = KFold(n_splits=3, shuffle=True, random_state=0)
    scores = cross_val_score(pipeline(), frame, y, cv=folds)
    # the same folds by hand: the scaler fitted on the fold's rows, the groups passed explicitly
    expected = []
    for train, test in folds.split(frame):
        scaler = StandardScaler().fit(frame.iloc[train][numeric])
        clf = ro.ThresholdClassifier(LogisticRegression(), goals=[_parity(n_classes, "g", 0.03)])
        clf.fit(scaler.transform(frame.iloc[train][numeric]), y[train], groups={"g": g[train]})
        pred = clf.predict(scaler.transform(frame.iloc[test][numeric]), groups={"g": g[test]})
        expected.append(np.mean(pred == y[test]))
        # and the rule's parity holds on each training fold, by counting its decision distribution
        Q = clf.predict_proba(scaler.transform(frame.iloc[train][numeric]), groups={"g": g[train]})
        for v in np.unique(g):
            assert np.all(np.abs(Q[g[train] == v].mean(axis=0) - Q.mean(axis=0)) <= 0.03 + 1e-9)
    # the same scaled features, rules and per-row draws: the same accuracies
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-12)


def test_group_columns_refusals_name_the_argument():
    frame, y, g, h = _frame(2, n=300)
    goals = [_parity(2, "g", 0.05)]
    with pytest.raises(ValueError, match="not both"):
        ro.ThresholdClassifier(LogisticRegression(), goals=goals, group_columns=["g"]).fit(frame, y,
                                                                                            groups={"g": g})
    with pytest.raises(ValueError, match="group_columns must be a sequence"):
        ro.ThresholdClassifier(LogisticRegression(), goals=goals, group_columns="g").fit(frame, y)
    with pytest.raises(ValueError, match=r"lacks the group column\(s\) \['zz'\]"):
        ro.ThresholdClassifier(LogisticRegression(), goals=goals, group_columns=["g", "zz"]).fit(frame, y)
    with pytest.raises(ValueError, match=r"cell_columns \['h'\] are not among the group columns"):
        ro.ThresholdClassifier(LogisticRegression(), goals=goals, group_columns=["g"],
                               cell_columns=["h"]).fit(frame.drop(columns=["h"]), y)
    clf = ro.ThresholdClassifier(LogisticRegression(), goals=goals, group_columns=["g", "h"]).fit(frame, y)
    with pytest.raises(ValueError, match="group_columns"):
        clf.predict(frame.drop(columns=["g", "h"]))  # the rule is per group: X must hold them at prediction


@pytest.mark.parametrize("n_classes", [2, 3])
def test_group_columns_survive_save_and_load(tmp_path, n_classes):
    """Scores given directly beside the group column: the loaded rule still takes the groups out of X."""
    pd = pytest.importorskip("pandas")
    X, y, g = _scored(n_classes, 900, 0)
    frame = pd.DataFrame(X.reshape(len(y), -1), columns=[f"s{j}" for j in range(X.reshape(len(y), -1).shape[1])])
    frame["g"] = g
    clf = ro.ThresholdClassifier(goals=[_parity(n_classes, "g", 0.02)], group_columns=["g"]).fit(frame, y)
    np.testing.assert_array_equal(
        clf.predict_proba(frame),
        ro.ThresholdClassifier(goals=[_parity(n_classes, "g", 0.02)]).fit(X, y, groups={"g": g})
        .predict_proba(X, groups={"g": g}))
    clf.save(tmp_path / "rule.npz")
    back = ro.load(tmp_path / "rule.npz")
    np.testing.assert_array_equal(back.predict_proba(frame), clf.predict_proba(frame))
    np.testing.assert_array_equal(back.predict(frame), clf.predict(frame))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_weighted_certificate_is_hoeffdings_bound(n_classes):
    """Unequal weights: each rate's interval is Hoeffding's for a weighted mean, recomputed by hand."""
    X, y, g = _scored(n_classes, 2000, 0)
    Xh, yh, gh = _scored(n_classes, 3000, 1)
    w = np.random.default_rng(5).uniform(0.5, 2.0, len(yh))
    clf = ro.ThresholdClassifier(goals=[_parity(n_classes, "g", 0.02)]).fit(X, y, groups={"g": g})
    cert = clf.certify(Xh, yh, groups={"g": gh}, sample_weight=w, goals=[_parity(n_classes, "g", 0.05)])
    d = np.searchsorted(clf.classes_, clf.predict(Xh, groups={"g": gh}))
    k = 1 if n_classes == 2 else 0  # the first goal's class
    first = "a" if n_classes == 2 else "A"
    L = 3 * (1 if n_classes == 2 else n_classes) + (1 if n_classes == 2 else n_classes)
    alpha = 0.05 / L

    def interval(mask):
        v, ww = (d[mask] == k).astype(float), w[mask]
        mean = np.dot(ww, v) / ww.sum()
        h = np.sqrt(np.log(2 / alpha) * np.sum(ww ** 2) / (2 * ww.sum() ** 2))
        return mean, max(0.0, mean - h), min(1.0, mean + h)

    part, everyone = interval(gh == first), interval(np.ones(len(d), bool))
    assert cert.method == "hoeffding"
    assert cert.goals[0].value == pytest.approx(part[0] - everyone[0] - 0.05, abs=1e-12)
    assert cert.goals[0].upper == pytest.approx(part[2] - everyone[1] - 0.05, abs=1e-12)
