"""TrainResult's thresholded and certified solutions."""

import warnings

import numpy as np
import pytest
import rateopt as ro
from rateopt.exceptions import InfeasibleWarning


def _f1(d, y):
    tp = np.sum(d * y)
    return 2 * tp / (2 * tp + np.sum(d * (1 - y)) + np.sum((1 - d) * y))


@pytest.fixture(scope="module")
def f1_run():
    X, y, g = ro.make_groups_dataset(400, random_state=3)
    ds = ro.Dataset(X, y, groups={"group": g})
    problem = ro.Problem(objective=ro.goals.objective("f_measure", ds), datasets=ds)
    return X, y, problem, ro.train(problem, n_iter=60)


def test_thresholded_beats_every_iterate_with_its_best_threshold(f1_run):
    X, y, problem, result = f1_run
    mix = result.solution("thresholded", problem=problem, n_bins=None)
    got = _f1(mix.predict_proba(X)[:, 1], y)  # the expected decisions' F1 (a ratio of expected counts)
    # brute force: every recorded iterate, every threshold on its training scores
    best = 0.0
    for w, b in zip(result.weights, result.biases):
        s = X @ w + b
        for t in np.unique(s):
            best = max(best, _f1((s >= t).astype(float), y))
    assert got >= best - 1e-9
    # and the training F1 the LP reports is the classifier's own
    assert -problem.evaluate(mix.predict_proba(X)[:, 1], kind="probabilities").objective == pytest.approx(got, abs=1e-9)
    # never worse than the m-stochastic mixture as trained
    m = result.solution("m-stochastic")
    assert got >= -problem.evaluate(m.predict_proba(X)[:, 1], kind="probabilities").objective - 1e-9


def test_thresholded_predictions_are_per_row_draws(f1_run):
    X, y, problem, result = f1_run
    mix = result.thresholded(problem)
    d = mix.predict(X, random_state=2)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    np.testing.assert_array_equal(mix.predict(X[perm], random_state=2), d[perm])
    p = mix.predict_proba(X)[:, 1]
    assert np.all(d[p == 0] == 0) and np.all(d[p == 1] == 1)


def test_thresholded_needs_the_problem(f1_run):
    _, _, _, result = f1_run
    with pytest.raises(ValueError, match="needs problem="):
        result.solution("thresholded")


def test_certified_selection_holds_its_certificate_or_warns():
    X, y, g = ro.make_groups_dataset(600, random_state=0)
    goal = ro.goals.demographic_parity("group", slack=0.1)
    result = ro.train(ro.Problem(constraints=[goal], datasets=ro.Dataset(X, y, groups={"group": g})), n_iter=80)
    Xv, yv, gv = ro.make_groups_dataset(20000, random_state=1)
    held = ro.Problem(constraints=[goal], datasets=ro.Dataset(Xv, yv, groups={"group": gv}))
    clf, cert, name = result.select_certified(held, confidence=0.9)
    assert cert.certified
    T = result.weights.shape[0]
    assert cert.confidence == pytest.approx(1 - 0.1 / (T + 1))
    # the chosen classifier's own certificate (recomputed) agrees
    again = ro._solutions._result.certify_classifier(held, clf, confidence=cert.confidence)
    assert [b.upper for b in again.goals] == pytest.approx([b.upper for b in cert.goals])
    # among certified candidates it has the least training objective
    if name.startswith("iterate"):
        t = int(name.split()[1])
        assert result.objectives[t] <= result.solution_objective("m-stochastic") or not result.certify(
            held, confidence=cert.confidence).certified
    # 20 held-out rows certify nothing tight: a clear warning
    tiny = ro.Problem(constraints=[ro.goals.demographic_parity("group", slack=0.0)],
                      datasets=ro.Dataset(Xv[:20], yv[:20], groups={"group": gv[:20]}))
    with pytest.warns(InfeasibleWarning, match="no recorded solution is certified"):
        result.select_certified(tiny)


def test_result_certify_matches_the_classifier_certificate():
    X, y, g = ro.make_groups_dataset(500, random_state=5)
    goal = ro.goals.coverage_budget(0.4)
    result = ro.train(ro.Problem(constraints=[goal], datasets=ro.Dataset(X, y, groups={"group": g})), n_iter=50)
    Xv, yv, gv = ro.make_groups_dataset(3000, random_state=6)
    held = ro.Problem(constraints=[goal], datasets=ro.Dataset(Xv, yv, groups={"group": gv}))
    cert = result.certify(held, kind="best")
    d = result.solution("best").predict(Xv)
    assert cert.goals[0].value == pytest.approx(d.mean() - 0.4)
    from scipy.stats import beta
    k, n, a = int(d.sum()), d.size, 0.05 / 2  # two leaves share alpha: ppr[all] and the objective's error[all]
    assert cert.goals[0].upper == pytest.approx(beta.ppf(1 - a / 2, k + 1, n - k) - 0.4, rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(str(cert), str)


def test_thresholded_mixture_round_trips_through_a_file(f1_run, tmp_path):
    X, y, problem, result = f1_run
    mix = result.thresholded(problem)
    mix.save(tmp_path / "m.npz")
    back = ro.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.predict_proba(X), mix.predict_proba(X))
    np.testing.assert_array_equal(back.predict(X, random_state=4), mix.predict(X, random_state=4))
    np.testing.assert_array_equal(back.support, mix.support)
    # the support names recorded iterates: their weights reproduce the models
    np.testing.assert_array_equal(back.scorer.weights_, result.weights[mix.support])


def _three_class_run(n=1200, seed=5, slack=0.02):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    g = rng.integers(0, 2, n)
    logits = X @ rng.normal(size=(4, 3)) + np.outer(g, [1.2, 0.0, -1.2])
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = (P.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    ds = ro.ClassDataset(X, y, groups={"g": np.where(g == 1, "b", "a")})
    problem = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=slack)], datasets=ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleWarning)
        res = ro.train(problem, n_iter=200, random_state=0)
    return problem, res, X


def test_k_class_thresholded_solutions_are_never_worse_than_the_m_stochastic_one_or_the_best_iterates_plugin(tmp_path):
    from rateopt._postprocess._plugin import fit_plugin_rule

    problem, res, X = _three_class_run()
    m_obj = problem.evaluate(res.solution("m-stochastic").predict_proba(X)).objective
    blind = res.solution("thresholded", problem=problem)
    assert isinstance(blind, ro.MulticlassClassifier)  # group-blind: a mixture of linear models, no groups needed
    ev_blind = problem.evaluate(blind.predict_proba(X))
    assert ev_blind.max_violation <= 1e-9 and ev_blind.objective <= m_obj + 1e-9
    blind.save(tmp_path / "blind.npz")  # saved and loaded as any model
    np.testing.assert_array_equal(ro.load(tmp_path / "blind.npz").predict_proba(X), blind.predict_proba(X))
    aware = res.thresholded(problem, group_blind=False)
    cells = problem.compiled.cells
    ev_aware = problem.evaluate(aware.predict_proba(X, cells))
    assert ev_aware.max_violation <= 1e-9 and ev_aware.objective <= ev_blind.objective + 1e-9
    # the exact plug-in rule of the best iterate (an independent solve), recounted on the true labels
    best = res.solution("best").decision_function(X)
    proba = np.exp(best - best.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    soft = ro.Problem(constraints=list(problem.constraints), datasets=problem.dataset, label_probabilities=proba)
    rule = fit_plugin_rule(soft, proba).rule
    plugin = problem.evaluate(rule.distribution(proba, cells))
    if plugin.max_violation <= 1e-9:
        assert ev_aware.objective <= plugin.objective + 1e-9
    assert res.feasibility("thresholded", problem=problem, classifier=blind).feasible
