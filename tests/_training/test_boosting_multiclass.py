"""K-class boosting (the backends' multiclass custom objectives) against independent recounts and references.

* The player's training scores are the backend's fresh prediction of the prefix.
* Every recorded prefix's confusion statistics are recounted with NumPy from the
  backend's own ``predict(X, num_iteration=t)`` (LightGBM) or
  ``predict(DMatrix(X), iteration_range=(0, t))`` (XGBoost) argmax.
* The m-stochastic mixture's ``predict_proba`` is recounted by brute force (each
  support prefix's argmax, weighted by its probability), and the goals of a
  feasible problem are met on the training rows to 1e-3 by that recount.
* Unconstrained K-class boosting grows the trees LightGBM grows with the
  softmax log-loss written as a NumPy custom objective.
"""

import numpy as np
import pytest

import rateopt

lgb = pytest.importorskip("lightgbm")

BACKENDS = ["lightgbm", pytest.param("xgboost", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("xgboost") is None, reason="xgboost not installed"))]

from rateopt._params import train_settings  # noqa: E402
from rateopt._training._boosting import ClassBoostingPlayer  # noqa: E402
from rateopt._training._class_spec import class_spec_from_problem  # noqa: E402
from rateopt.games import get_game  # noqa: E402

SLACK = 0.05


def _data(n=1500, seed=0):
    """Three classes whose proportions differ by group (so parity binds), the group a feature."""
    rng = np.random.default_rng(seed)
    g = rng.random(n) < 0.4
    Z = rng.normal(size=(n, 4)) + 0.7 * g[:, None]
    y = np.digitize(Z[:, 0] + 0.5 * Z[:, 1] + rng.normal(0, 0.6, n), [-0.2, 1.0])
    X = np.column_stack([Z, g])
    return X, y, np.where(g, "a", "b")


def _problem(X, y, groups, weights=None, slack=SLACK):
    ds = rateopt.ClassDataset(X, y, weights=weights, groups={"group": groups})
    goals = [rateopt.goals.multiclass_demographic_parity("group", slack=slack)] if slack is not None else []
    return rateopt.Problem(constraints=goals, datasets=ds)


def _backend_scores(booster, X, t, K=3):
    """The raw (n, K) scores of the first ``t`` rounds, from the backend's own prediction call."""
    if t == 0:
        return np.zeros((X.shape[0], K))
    if booster.backend == "lightgbm":
        return booster.booster.predict(X, num_iteration=t, raw_score=True)
    import xgboost as xgb

    return booster.booster.predict(xgb.DMatrix(X), iteration_range=(0, t), output_margin=True)


def _parity_excess(P, groups, w):
    """The worst |P(yhat = k | g) - P(yhat = k)| - slack, recounted from decision distributions P (n, K)."""
    overall = (w[:, None] * P).sum(axis=0) / w.sum()
    worst = -np.inf
    for v in np.unique(groups):
        m = groups == v
        worst = max(worst, np.abs((w[m, None] * P[m]).sum(axis=0) / w[m].sum() - overall).max())
    return worst - SLACK


@pytest.mark.parametrize("backend", BACKENDS)
def test_player_scores_are_the_backends_fresh_predictions(backend):
    X, y, g = _data(n=600)
    problem = _problem(X, y, g)
    spec = class_spec_from_problem(problem)
    model = rateopt.BoostingModel(backend, num_leaves=7)
    player = ClassBoostingPlayer(spec, model, train_settings(get_game("proxy-swap"), model, arity=spec.arity))
    rng = np.random.default_rng(1)
    for t in range(1, 8):
        player.step(player.run_pass(rng.normal(size=spec.n_atoms)).grad)
        fresh = _backend_scores(player.booster, X, t)
        assert fresh.shape == (600, 3)
        held = player.scores.T if player.booster.class_major else player.scores
        assert np.array_equal(fresh, held), t  # bit for bit: the recorded statistics are the solution's


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_recorded_statistics_are_recounted_from_each_prefix(backend, weighted):
    X, y, g = _data(n=900, seed=1)
    w = np.random.default_rng(2).uniform(0.2, 2.0, y.shape[0]) if weighted else np.ones(y.shape[0])
    if weighted:
        w[:20] = 0.0  # zero-weight rows count nothing (and XGBoost leaves them out of its cuts)
    problem = _problem(X, y, g, weights=w if weighted else None)
    result = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=12, num_leaves=7), random_state=0)
    assert result.n_trivial == 0 and [m.n_trees for m in result.models] == list(range(13))
    booster = result.models[-1].booster
    cells = np.asarray(problem.compiled.cells)
    classes = np.unique(y)
    G, K = int(cells.max()) + 1, classes.shape[0]
    for t in range(13):
        yhat = np.argmax(_backend_scores(booster, X, t), axis=1)
        counts = np.zeros((G, K, K))
        np.add.at(counts, (cells, np.searchsorted(classes, y), yhat), w)
        np.testing.assert_allclose(result.atom_rates[t], counts.reshape(-1) / w.sum(), rtol=0, atol=1e-12)
        # and through the evaluated problem: the objective is the weighted error of the prefix
        assert result.objectives[t] == pytest.approx(np.sum(w * (yhat != np.searchsorted(classes, y))) / w.sum(),
                                                     abs=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_shrunk_mixture_is_recounted_and_meets_the_goals(backend):
    X, y, g = _data(n=2000, seed=3)
    w = np.ones(y.shape[0])
    problem = _problem(X, y, g)
    free = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=60), method="unconstrained",
                         random_state=0)
    last = free.solution("last").predict_proba(X)
    assert _parity_excess(last, g, w) > 0.02  # the goal binds: the unconstrained booster violates it
    result = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=60), random_state=0)
    assert result.default_kind(problem) == "m-stochastic"
    clf = result.solution()
    assert type(clf).__name__ == "ClassBoostedMixture" and list(clf.classes_) == [0, 1, 2]
    P = clf.predict_proba(X)
    # brute force: each support prefix's argmax from the backend's own predict, weighted by its probability
    booster = result.models[-1].booster
    want = np.zeros_like(P)
    for t, p in zip(clf.prefix_lengths_, clf.probabilities_):
        want[np.arange(X.shape[0]), np.argmax(_backend_scores(booster, X, int(t)), axis=1)] += p
    np.testing.assert_allclose(P, want, rtol=0, atol=1e-12)
    assert _parity_excess(P, g, w) <= 1e-3  # the "Feasible" target, recounted
    assert result.feasibility("m-stochastic").feasible
    error = 1 - P[np.arange(y.shape[0]), y].mean()
    # no collapse: not worse on the training rows than the K-class linear default under the same goal
    linear = rateopt.train(problem, random_state=0)
    P_lin = linear.solution(problem=problem).predict_proba(X)
    assert _parity_excess(P_lin, g, w) <= 1e-3 and error <= 1 - P_lin[np.arange(y.shape[0]), y].mean()
    # drawn labels follow the distribution: each row's label is one its support predicts
    labels = clf.predict(X, random_state=0)
    assert np.all(P[np.arange(y.shape[0]), labels] > 0)


def test_unconstrained_boosting_is_lightgbms_softmax_boosting():
    """The error rate's derivatives with unit weights are the softmax log-loss's p - e_y and p (1 - p): the
    trees are the ones LightGBM grows from that objective written in NumPy."""
    X, y, g = _data(n=700, seed=4)
    problem = _problem(X, y, g, slack=None)
    result = rateopt.train(problem, rateopt.BoostingModel(n_rounds=8, num_leaves=7), method="unconstrained")

    def softmax_objective(preds, data):
        S = preds.reshape(X.shape[0], 3) if preds.ndim == 1 else preds
        P = np.exp(S - S.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        return P - np.eye(3)[y], P * (1 - P)

    params = {"objective": softmax_objective, "num_class": 3, "learning_rate": 0.1, "max_depth": 6,
              "num_leaves": 7, "min_sum_hessian_in_leaf": 1e-3, "boost_from_average": False,
              "deterministic": True, "num_threads": 1, "verbosity": -1, "seed": 0}
    booster = lgb.train(params, lgb.Dataset(X, params={"feature_pre_filter": False}), num_boost_round=8)
    splits = ["tree_index", "split_feature", "threshold"]
    ours = result.models[-1].booster.booster
    assert ours.trees_to_dataframe()[splits].equals(booster.trees_to_dataframe()[splits])
    np.testing.assert_allclose(result.models[-1].decision_function(X), booster.predict(X, raw_score=True),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_result_and_mixture_save_and_load(backend, tmp_path):
    X, y, g = _data(n=500, seed=5)
    labels = np.array(["c", "a", "b"])[y]  # string labels: the solution predicts them
    problem = rateopt.Problem(constraints=[rateopt.goals.multiclass_demographic_parity("group", slack=SLACK)],
                              datasets=rateopt.ClassDataset(X, labels, groups={"group": g}))
    result = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=10, num_leaves=7))
    result.save(tmp_path / "run.npz")
    back = rateopt.load(tmp_path / "run.npz")
    assert np.array_equal(back.atom_rates, result.atom_rates)
    clf, clf_back = result.solution(), back.solution()
    assert np.array_equal(clf.predict_proba(X), clf_back.predict_proba(X))
    assert set(clf.predict(X)) <= {"a", "b", "c"}
    clf.save(tmp_path / "clf.npz")
    loaded = rateopt.load(tmp_path / "clf.npz")
    assert type(loaded).__name__ == "ClassBoostedMixture" and list(loaded.classes_) == ["a", "b", "c"]
    assert np.array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    assert np.array_equal(loaded.predict(X, random_state=3), clf.predict(X, random_state=3))
    one = result.solution_of_iterate(result.n_trivial + 10)
    np.testing.assert_array_equal(one.predict(X), np.array(["a", "b", "c"])[np.argmax(
        _backend_scores(result.models[-1].booster, X, 10), axis=1)])
    assert np.array_equal(clf_back.predict(X, random_state=1), clf.predict(X, random_state=1))


def test_the_hinge_is_refused():
    X, y, g = _data(n=60)
    with pytest.raises(ValueError, match="proxy='logistic' \\(the softmax\\)"):
        rateopt.train(_problem(X, y, g), rateopt.BoostingModel(n_rounds=3), proxy="hinge")


def test_the_thresholded_solution_is_refused_with_the_kinds_that_work():
    X, y, g = _data(n=200)
    problem = _problem(X, y, g)
    result = rateopt.train(problem, rateopt.BoostingModel(n_rounds=3))
    with pytest.raises(rateopt.exceptions.RateoptError, match="has no thresholded solution"):
        result.solution("thresholded", problem=problem)


def test_validation_is_refused():
    X, y, g = _data(n=60)
    with pytest.raises(ValueError, match="takes no validation dataset"):
        rateopt.train(_problem(X, y, g), rateopt.BoostingModel(n_rounds=3), validation=_problem(X, y, g))
