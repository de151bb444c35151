"""The training contracts shared by two and K classes, each stated once and run for both arities.

Two classes train on a :class:`~rateopt.Dataset` under demographic parity,
three classes on a :class:`~rateopt.ClassDataset` under K-class demographic
parity: the same driver, parameters, callback, records and
:class:`~rateopt.TrainResult`. Every value the library reports is checked
against a recount: the classifier's own expected decisions evaluated by the
problem (``problem.evaluate`` of ``predict_proba``), an independent path.
"""

from __future__ import annotations

import dataclasses
import io
import warnings

import numpy as np
import pytest

import rateopt as ro
from rateopt._compiler import is_class_problem
from rateopt._train import prepare_specs
from rateopt.games._base import model_combinations
from rateopt.exceptions import InfeasibleWarning

ARITIES = [2, 3]


def _data(K, n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    g = rng.integers(0, 2, n)
    W = rng.normal(size=(4, K))
    logits = X @ W + np.outer(g, np.linspace(1.5, -1.5, K))
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = (P.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    return np.column_stack([X, g]), y, np.where(g == 1, "b", "a")


def _problem(K, seed=0, n=600, slack=0.05, **kwargs):
    X, y, g = _data(K, n=n, seed=seed)
    if K == 2:
        ds = ro.Dataset(X, y, groups={"g": g})
        goal = ro.goals.demographic_parity("g", slack=slack)
    else:
        ds = ro.ClassDataset(X, y, groups={"g": g})
        goal = ro.goals.multiclass_demographic_parity("g", slack=slack)
    return ro.Problem(constraints=[goal], datasets=ds, **kwargs), X


def _recount(problem, clf, X):
    """The classifier's expected training values, evaluated by the problem from its predict_proba."""
    proba = clf.predict_proba(X)  # (n, n_classes) at every level
    if is_class_problem(problem):
        ev = problem.evaluate(proba)
    else:  # two classes: the positive decision's probability
        ev = problem.evaluate(proba[:, 1], kind="probabilities")
    return ev.objective, np.array([ev.constraints[n] for n in problem.constraint_names])


def _train(problem, **kwargs):
    kwargs.setdefault("n_iter", 40)
    kwargs.setdefault("random_state", 0)
    return ro.train(problem, **kwargs)


@pytest.mark.parametrize("K", ARITIES)
def test_callback_gets_iteration_and_info_of_each_recorded_iterate(K):
    problem, _ = _problem(K)
    seen = []
    res = _train(problem, record_every=3, callback=lambda t, info: seen.append((t, info)))
    assert [t for t, _ in seen] == res.history["iteration"].tolist() == list(range(0, 40, 3))  # 39 = 13 * 3: the last
    k = res.n_trivial
    for (t, info), obj, g, lam in zip(seen, res.objectives[k:], res.constraints[k:], res.multipliers[k:]):
        assert set(info) == {"objective", "constraints", "multipliers"}
        assert info["objective"] == obj
        np.testing.assert_array_equal(info["constraints"], g)
        np.testing.assert_array_equal(info["multipliers"], lam)


@pytest.mark.parametrize("K", ARITIES)
def test_callback_returning_true_stops_training(K):
    problem, _ = _problem(K)
    res = _train(problem, record_every=1, callback=lambda t, info: t == 4)
    assert res.n_iter == 5 and res.iterations.tolist() == [-1] * K + [0, 1, 2, 3, 4]  # trivial rules first


@pytest.mark.parametrize("K", ARITIES)
def test_recorded_values_are_the_recounted_values_of_each_iterate(K):
    problem, X = _problem(K)
    res = _train(problem, record_every=7)
    for t in range(res.weights.shape[0]):
        obj, g = _recount(problem, res.solution_of_iterate(t), X)
        assert res.objectives[t] == pytest.approx(obj, abs=1e-12)
        np.testing.assert_allclose(res.constraints[t], g, rtol=0, atol=1e-12)


@pytest.mark.parametrize("K", ARITIES)
def test_infeasible_training_warns(K):
    X, y, g = _data(K)
    if K == 2:
        ds = ro.Dataset(X, y, groups={"g": g})
        impossible = [ro.positive_prediction_rate(ds) >= 1.5]  # a rate is at most 1
    else:
        ds = ro.ClassDataset(X, y, groups={"g": g})
        ctx = ds.context()  # two class proportions cannot both exceed 0.6
        impossible = [ro.class_prediction_rate(ctx, 0) >= 0.6, ro.class_prediction_rate(ctx, 1) >= 0.6]
    with pytest.warns(InfeasibleWarning, match="No mixture of the recorded iterates meets every constraint"):
        res = _train(ro.Problem(constraints=impossible, datasets=ds))
    report = res.feasibility()
    assert not report.feasible and report.achievable_violation > 0


@pytest.mark.parametrize("K", ARITIES)
def test_radius_is_honoured_by_every_recorded_iterate(K):
    problem, _ = _problem(K)
    radius = 1e-3
    res = _train(problem, model=ro.LinearModel(radius=radius), record_every=1)
    norms = np.linalg.norm(res.weights.reshape(res.weights.shape[0], -1), axis=1)
    assert np.all(norms <= radius * (1 + 1e-12))
    assert norms[-1] == pytest.approx(radius, rel=1e-9)  # the ball binds: the projection acted
    free = _train(problem, record_every=1)
    assert np.linalg.norm(free.weights[-1]) > 10 * radius


@pytest.mark.parametrize("K", ARITIES)
def test_regularization_disagreeing_with_the_model_is_refused(K):
    problem, _ = _problem(K, regularization=0.5)
    with pytest.raises(ValueError, match=r"problem.regularization=0.5 and model.l2=0"):
        _train(problem, model=ro.LinearModel(l2=0.0))


def _message(call):
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("params", [
    {"no_such_parameter": 1},
    {"method": "unconstrained", "eta_lambda": 0.5},
    {"method": "proxy-external", "update": "additive"},
    {"n_iter": 0},
    {"proxy": "ramp"},
    {"stop_patience": 1},
], ids=lambda p: ",".join(p))
def test_unknown_and_refused_parameters_give_the_same_message_for_both_arities(params):
    two, _ = _problem(2)
    three, _ = _problem(3)
    kind2, text2 = _message(lambda: _train(two, **params))
    kind3, text3 = _message(lambda: _train(three, **params))
    assert (kind2, text2) == (kind3, text3)


@pytest.mark.parametrize("K", ARITIES)
def test_run_parameters_mean_the_same(K):
    problem, _ = _problem(K)
    res = _train(problem, n_iter=30, record_every=10)
    assert res.history["iteration"].tolist() == [0, 10, 20, 29]
    stopped = _train(problem, n_iter=400, record_every=1, stop_tol=1.0, stop_patience=3)
    assert stopped.n_iter < 400  # a tolerance of 1 is met at once: stops after stop_patience records
    logistic = _train(problem, proxy="logistic")
    hinge = _train(problem, proxy="hinge")
    assert logistic.settings["proxy"] == "logistic" and hinge.settings["proxy"] == "hinge"
    assert not np.array_equal(logistic.weights, hinge.weights)


@pytest.mark.parametrize("K", ARITIES)
@pytest.mark.parametrize("proxy", ["hinge", "logistic"])
def test_single_row_minibatches_average_to_the_full_pass(K, proxy):
    """A minibatch pass scales its sums by n / n_batch: the mean of the n one-row passes is the full pass
    (statistics, proxy value and gradients), at a margin other than 1, for both arities."""
    problem, _ = _problem(K, n=120)
    spec = prepare_specs(problem, None, ro.LinearModel(), 1)[0]
    rng = np.random.default_rng(K)
    theta = rng.normal(size=(4 + 1, K) if K > 2 else 4 + 1)
    bias = rng.normal(size=K) if K > 2 else 0.3
    lam = np.abs(rng.normal(size=spec.n_constraints))
    combos = model_combinations(spec, 1.0, lam, proxy)
    full = spec.run_pass(theta, bias, combos, margin=1.75, n_threads=1)
    parts = [spec.run_pass(theta, bias, combos, margin=1.75, rows=[np.array([i])], n_threads=1)
             for i in range(120)]
    for field in ("rates", "grad", "grad_bias", "proxy_values"):
        mean = np.mean([np.asarray(getattr(r, field), dtype=np.float64) for r in parts], axis=0)
        np.testing.assert_allclose(mean, getattr(full, field), rtol=1e-12, atol=1e-13, err_msg=field)
    other = spec.run_pass(theta, bias, combos, margin=1.0, n_threads=1)  # the margin is used
    assert np.sum(other.proxy_values) != np.sum(full.proxy_values)


@pytest.mark.parametrize("K", ARITIES)
def test_minibatches_and_margin_mean_the_same(K):
    """batch_size draws seeded minibatches (records stay full-data values); margin is the hinge's."""
    problem, X = _problem(K)
    mini = _train(problem, batch_size=64, record_every=5, proxy="hinge")
    assert mini.settings["batch_size"] == 64
    for t in (0, mini.weights.shape[0] - 1):  # the records are the full data's, not the minibatch's
        obj, g = _recount(problem, mini.solution_of_iterate(t), X)
        assert mini.objectives[t] == pytest.approx(obj, abs=1e-12)
        np.testing.assert_allclose(mini.constraints[t], g, rtol=0, atol=1e-12)
    again = _train(problem, batch_size=64, record_every=5, proxy="hinge")
    np.testing.assert_array_equal(mini.weights, again.weights)
    reseeded = _train(problem, batch_size=64, record_every=5, proxy="hinge", random_state=1)
    full = _train(problem, record_every=5, proxy="hinge")
    assert not np.array_equal(mini.weights, reseeded.weights)
    assert not np.array_equal(mini.weights, full.weights)
    whole = _train(problem, batch_size=600, record_every=5, proxy="hinge")  # >= n: every row, no draw
    np.testing.assert_array_equal(whole.weights, full.weights)
    wide = _train(problem, margin=2.0, record_every=5, proxy="hinge")
    assert wide.settings["margin"] == 2.0
    assert not np.array_equal(wide.weights, full.weights)


def test_k_class_refusals_name_the_parameter():
    three, _ = _problem(3)
    with pytest.raises(ValueError, match=r"method='three-player' trains two-class problems only"):
        _train(three, method="three-player")
    with pytest.raises(ValueError, match=r"loop='core' cannot run this training: the problem is K-class"):
        _train(three, loop="core")


@pytest.mark.parametrize("K", ARITIES)
def test_solution_kinds_and_their_deprecated_aliases(K):
    problem, X = _problem(K)
    res = _train(problem)
    T = res.weights.shape[0]
    for kind in ("m-stochastic", "T-stochastic", "best", "last"):
        p = res.mixture(kind)
        assert p.shape == (T,) and np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-12)
        obj, g = _recount(problem, res.solution(kind), X)
        lib_obj, lib_g = res.solution_values(kind)
        assert lib_obj == pytest.approx(obj, abs=1e-12)
        np.testing.assert_allclose(lib_g, g, rtol=0, atol=1e-12)
    for alias, kind in (("shrunk", "m-stochastic"), ("average", "T-stochastic")):
        with pytest.warns(DeprecationWarning, match=f"solution kind '{alias}' is deprecated.*'{kind}'"):
            np.testing.assert_array_equal(res.mixture(alias), res.mixture(kind))
        with pytest.warns(DeprecationWarning):
            clf = res.solution(alias)
        np.testing.assert_array_equal(clf.predict_proba(X), res.solution(kind).predict_proba(X))


@pytest.mark.parametrize("K", ARITIES)
def test_save_and_load_give_the_same_solutions(K, tmp_path):
    problem, X = _problem(K)
    res = _train(problem)
    path = tmp_path / "run.result.npz"
    res.save(path)
    back = ro.load(path)
    assert isinstance(back, ro.TrainResult)
    np.testing.assert_array_equal(back.objectives, res.objectives)
    np.testing.assert_array_equal(back.constraints, res.constraints)
    for kind in ("m-stochastic", "T-stochastic", "best", "last"):
        np.testing.assert_array_equal(back.solution(kind).predict_proba(X), res.solution(kind).predict_proba(X))
        np.testing.assert_array_equal(back.solution(kind).predict(X, random_state=3),
                                      res.solution(kind).predict(X, random_state=3))
    assert dataclasses.asdict(back.feasibility()) == dataclasses.asdict(res.feasibility())


@pytest.mark.parametrize("K", ARITIES)
def test_a_non_linear_objective_saves_and_loads(K, tmp_path):
    """F-measure (two classes) and macro-F1 (K classes), with validation records: the loaded result has the
    same values, its metric objective of the solution's expected rates is the problem's recount of the
    solution."""
    name = "f_measure" if K == 2 else "macro_f1"
    problem, X = _problem(K, objective=name)
    validation, Xv = _problem(K, seed=1, objective=name)
    res = _train(problem, validation=validation)
    path = tmp_path / "metric.result.npz"
    res.save(path)
    back = ro.load(path)
    np.testing.assert_array_equal(back.objectives, res.objectives)
    np.testing.assert_array_equal(back.val_objectives, res.val_objectives)
    clf = back.solution("m-stochastic")
    np.testing.assert_array_equal(clf.predict_proba(X), res.solution("m-stochastic").predict_proba(X))
    for validating, (prob, data) in ((False, (problem, X)), (True, (validation, Xv))):
        obj, _ = _recount(prob, clf, data)
        assert back.solution_objective("m-stochastic", validation=validating) == pytest.approx(obj, abs=1e-12)
        assert back.solution_objective("m-stochastic", validation=validating) == \
            res.solution_objective("m-stochastic", validation=validating)


@pytest.mark.parametrize("K", ARITIES)
def test_feasibility_report_states_the_recounted_constraint_values(K):
    problem, X = _problem(K, slack=0.02)
    res = _train(problem, n_iter=80)
    for kind in ("m-stochastic", "best", "last"):
        report = res.feasibility(kind)
        _, g = _recount(problem, res.solution(kind), X)
        values = np.array([report.constraint_values[n] for n in problem.constraint_names])
        np.testing.assert_allclose(values, g, rtol=0, atol=1e-12)
        tol = np.array([report.tolerances[n] for n in problem.constraint_names])
        assert report.feasible == bool(np.all(g <= tol))
        assert report.max_violation == pytest.approx(max(0.0, g.max()), abs=1e-12)
    summary = res.summary(file=io.StringIO())
    assert "solution m-stochastic" in summary


@pytest.mark.parametrize("K", ARITIES)
def test_checkpoint_and_resume(K, tmp_path):
    problem, _ = _problem(K)
    path = tmp_path / "checkpoint.npz"
    first = _train(problem, n_iter=20, record_every=5, checkpoint=path)
    saved = ro.load(path)
    np.testing.assert_array_equal(saved.weights, first.weights)
    np.testing.assert_array_equal(saved.atom_rates, first.atom_rates)
    more = _train(problem, n_iter=10, record_every=5, resume=saved)
    assert more.n_iter == 30
    assert more.iterations.tolist() == [-1] * K + [0, 5, 10, 15, 19, 20, 25, 29]
    n = first.weights.shape[0]  # the K trivial rules and 5 records
    np.testing.assert_array_equal(more.weights[:n], first.weights)
    # the resumed run starts from the last recorded model: its first iterate is that model
    np.testing.assert_array_equal(more.weights[n], first.weights[-1])
    np.testing.assert_array_equal(more.biases[n], first.biases[-1])


@pytest.mark.parametrize("K", ARITIES)
def test_validation_records_are_each_iterates_validation_values(K):
    problem, _ = _problem(K, seed=0)
    held, X_val = _problem(K, seed=1, n=400)
    res = _train(problem, validation=held, record_every=8)
    assert res.val_objectives.shape == res.objectives.shape
    for t in range(res.weights.shape[0]):
        obj, g = _recount(held, res.solution_of_iterate(t), X_val)
        assert res.val_objectives[t] == pytest.approx(obj, abs=1e-12)
        np.testing.assert_allclose(res.val_constraints[t], g, rtol=0, atol=1e-12)


@pytest.mark.parametrize("K", ARITIES)
def test_certify_and_select_certified_bound_the_drawn_decisions_on_held_out_data(K):
    problem, _ = _problem(K, seed=0)
    held, X_val = _problem(K, seed=1, n=400)
    res = _train(problem)
    clf = res.solution("m-stochastic")
    cert = res.certify(held, random_state=3)
    # the certificate's held-out values are the drawn decisions' values, recounted as one-hot decision rows
    labels = clf.predict(X_val, random_state=3)
    onehot = (np.asarray(labels)[:, None] == np.asarray(clf.classes_)[None, :]).astype(float)
    ev = held.evaluate(onehot) if K > 2 else held.evaluate(onehot[:, 1], kind="probabilities")
    assert len(cert.goals) == len(held.constraint_names)
    for bound, name in zip(cert.goals, held.constraint_names):
        assert bound.value == pytest.approx(ev.constraints[name], abs=1e-12)
        assert bound.upper >= bound.value
    with warnings.catch_warnings():  # none certified on 400 rows is allowed here: it warns, and returns the closest
        warnings.simplefilter("ignore", InfeasibleWarning)
        chosen, chosen_cert, label = res.select_certified(held)
    assert label == "m-stochastic" or label.startswith("iterate ")
    if label.startswith("iterate "):  # a deterministic iterate: its certificate is its own decisions'
        t = int(label.split()[1])
        again = res.certify(held, classifier=res.solution_of_iterate(t), confidence=chosen_cert.confidence)
        assert [b.value for b in again.goals] == pytest.approx([b.value for b in chosen_cert.goals], abs=1e-12)


class _NoClasses:
    """A user's classifier without ``classes_``: its predictions are 0/1 decisions (as documented)."""

    def __init__(self, clf, shift=0):
        self.clf, self.shift = clf, shift

    def predict_proba(self, X):
        return self.clf.predict_proba(X)

    def predict(self, X, random_state=0):
        return np.asarray(self.clf.predict(X, random_state=random_state)) + self.shift


def test_certify_reads_a_classifier_without_classes_as_0_1_decisions_and_refuses_other_labels():
    problem, _ = _problem(2, seed=0)
    held, _ = _problem(2, seed=1, n=400)
    res = _train(problem)
    clf = res.solution("m-stochastic")
    cert = res.certify(held, classifier=clf, random_state=3)  # the reference: the classifier's own classes_ [0, 1]
    again = res.certify(held, classifier=_NoClasses(clf), random_state=3)
    assert [b.value for b in again.goals] == [b.value for b in cert.goals]
    assert [b.upper for b in again.goals] == [b.upper for b in cert.goals]
    with pytest.raises(ro.exceptions.RateoptError, match=r"predictions must be among its classes \[0, 1\]"):
        res.certify(held, classifier=_NoClasses(clf, shift=1), random_state=3)  # labels 1 and 2
