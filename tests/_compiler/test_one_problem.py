"""One :class:`~rateopt.Problem` for two and K classes: the shared contract, stated once for both arities.

Each test runs on a two-class :class:`~rateopt.Dataset` and on a three-class
:class:`~rateopt.ClassDataset` (the dataset type chooses the statistics:
atoms or confusion counts of cells), and compares with a brute-force count
over rows where it checks numbers.
"""

import pickle

import numpy as np
import pytest
import rateopt as ro
from rateopt._compiler import is_class_problem
from rateopt.exceptions import ConstantConstraintError, RateoptError

TOL = 1e-12
ARITIES = pytest.mark.parametrize("K", [2, 3], ids=["two-class", "K-class"])


def make(K, seed=0, n=90):
    """A dataset of arity K (Dataset for 2, ClassDataset for 3), its rows, and the rate constructors."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    y[:K] = np.arange(K)
    g = rng.integers(0, 3, n)
    w = rng.uniform(0.2, 2.0, n)
    X = rng.normal(size=(n, 2))
    if K == 2:
        ds = ro.Dataset(X, y=y, weights=w, groups={"g": g})
        predicted = ro.positive_prediction_rate  # the rate of predicting class 1
        parity = ro.goals.demographic_parity("g", 0.05)
        cls = 1
    else:
        ds = ro.ClassDataset(X, y, weights=w, groups={"g": g})
        predicted = ro.class_prediction_rate
        parity = ro.goals.multiclass_demographic_parity("g", 0.05)
        cls = 2
    rate = (lambda ctx: predicted(ctx)) if K == 2 else (lambda ctx: predicted(ctx, cls))
    pred = rng.integers(0, K, n)
    return {"ds": ds, "y": y, "g": g, "w": w, "n": n, "rate": rate, "cls": cls, "parity": parity, "pred": pred}


def predictions(d, K):
    """The labels ``pred`` as each arity's evaluate reads them (two classes: 0/1 decisions)."""
    return d["pred"] if K > 2 else d["pred"].astype(bool)


def affine_map(problem):
    """``(objective coefficients, objective constant, constraint matrix, offsets)`` over flattened statistics."""
    c = problem.compiled
    if is_class_problem(problem):
        m = c.n_constraints
        return c.objective.reshape(-1), c.objective_constant, c.constraints.reshape(m, -1), c.offsets
    C = c.C.toarray() if hasattr(c.C, "toarray") else np.asarray(c.C)
    return np.asarray(c.objective_coef), c.objective_constant, C, np.asarray(c.kappa)


@ARITIES
def test_one_class_whatever_the_dataset(K):
    d = make(K)
    p = ro.Problem(constraints=[d["parity"]], datasets=d["ds"])
    assert type(p) is ro.Problem and isinstance(p, ro.Problem)
    assert is_class_problem(p) == (K > 2) and p.n_classes == K
    assert p.dataset is d["ds"] and list(p.datasets) == [d["ds"].name]
    # the deprecated alias recognizes exactly the K-class problems
    assert isinstance(p, ro.MulticlassProblem) == (K > 2)


def test_the_deprecated_alias_builds_a_problem_and_warns():
    d = make(3)
    with pytest.warns(DeprecationWarning, match="MulticlassProblem is deprecated"):
        p = ro.MulticlassProblem(constraints=[d["parity"]], datasets=d["ds"])
    assert type(p) is ro.Problem and is_class_problem(p)
    with pytest.warns(DeprecationWarning), pytest.raises(RateoptError, match="measured on one ClassDataset"):
        ro.MulticlassProblem(datasets={"train": make(2)["ds"]})
    with pytest.warns(DeprecationWarning):
        q = ro.MulticlassProblem.from_toml(p.to_toml(), d["ds"])
    assert type(q) is ro.Problem and q.constraint_names == p.constraint_names


@ARITIES
def test_evaluate_matches_a_count_over_rows(K):
    d = make(K, seed=1)
    ctx = d["ds"].context()
    subsets = [ctx] + [ctx.subset(group="g", value=v) for v in range(3)]
    masks = [np.ones(d["n"], bool)] + [d["g"] == v for v in range(3)]
    p = ro.Problem(constraints=[d["rate"](s) <= 0.4 for s in subsets], datasets=d["ds"])
    ev = p.evaluate(predictions(d, K))
    w, pred, y = d["w"], d["pred"], d["y"]
    err = sum(w[i] for i in range(d["n"]) if pred[i] != y[i]) / sum(w)
    assert abs(ev.objective - err) <= TOL
    for name, m in zip(p.constraint_names, masks):
        rows = [i for i in range(d["n"]) if m[i]]
        share = sum(w[i] for i in rows if pred[i] == d["cls"]) / sum(w[i] for i in rows)
        assert abs(ev.constraints[name] - (share - 0.4)) <= TOL, name
        assert abs(ev.violations[name] - max(0.0, share - 0.4)) <= TOL
    assert ev.max_violation == max(ev.violations.values())
    # the statistics are what evaluate reads, and evaluate_statistics gives the same numbers
    again = p.evaluate_statistics(ev.atom_rates)
    assert again.objective == ev.objective and again.constraints == ev.constraints and again.rates == ev.rates
    assert p.objective_value(ev.atom_rates) == ev.objective
    np.testing.assert_array_equal(p.constraint_values(ev.atom_rates), list(ev.constraints.values()))


@ARITIES
def test_evaluate_statistics_refuses_a_wrong_shape(K):
    d = make(K)
    p = ro.Problem(constraints=[d["parity"]], datasets=d["ds"])
    with pytest.raises(RateoptError, match=r"must have shape \("):
        p.evaluate_statistics(np.zeros(7))


@ARITIES
@pytest.mark.parametrize("bad", [-1.0, "strong", True])
def test_regularization_refused_with_one_message(K, bad):
    d = make(K)
    with pytest.raises(RateoptError, match=r"regularization must be a non-negative number or None, got "):
        ro.Problem(datasets=d["ds"], regularization=bad)
    assert ro.Problem(datasets=d["ds"], regularization=0.5).regularization == 0.5


@ARITIES
def test_objective_that_is_a_constraint_refused_with_one_message(K):
    d = make(K)
    with pytest.raises(TypeError, match="objective must be a rate expression or a number, got Constraint"):
        ro.Problem(objective=d["rate"](d["ds"].context()) <= 0.5, datasets=d["ds"])


@ARITIES
def test_constant_constraints_refused_with_one_message(K):
    d = make(K)
    ctx, rate = d["ds"].context(), d["rate"]
    everyone = ctx.subset(np.ones(d["n"], dtype=bool), name="everyone")
    with pytest.raises(ConstantConstraintError, match=r"constraint '.*\[all\] - .*\[everyone\] <= 0.1' is constant: "
                                                      r"it does not depend on the model's decisions .*'all', 'everyone'"):
        ro.Problem(constraints=[rate(ctx) - rate(everyone) <= 0.1], datasets=d["ds"])
    for same in (rate(ctx) - rate(ctx), 0.3 * rate(ctx) - 0.1 * rate(ctx) - 0.2 * rate(ctx)):  # round-off too
        with pytest.raises(ConstantConstraintError, match="is constant"):
            ro.Problem(constraints=[(same <= 0.0).named("cap")], datasets=d["ds"])


@ARITIES
def test_expression_constraints_refused_by_to_toml(K):
    d = make(K)
    with pytest.raises(RateoptError, match="rate expressions"):
        ro.Problem(constraints=[d["rate"](d["ds"].context()) <= 0.5], datasets=d["ds"]).to_toml()


@ARITIES
@pytest.mark.parametrize("objective", [None, "balanced_error"], ids=["default", "named"])
def test_goals_file_round_trip_gives_the_same_compiled_map(K, objective):
    d = make(K, seed=2)
    p = ro.Problem(objective=objective, constraints=[d["parity"]], datasets=d["ds"], regularization=0.01)
    q = ro.Problem.from_toml(p.to_toml(), d["ds"])
    assert type(q) is ro.Problem and is_class_problem(q) == (K > 2)
    assert q.constraint_names == p.constraint_names and q.regularization == p.regularization
    assert q.objective_name == p.objective_name == (objective or "error")
    assert str(q.objective) == str(p.objective)
    for a, b in zip(affine_map(p), affine_map(q)):
        np.testing.assert_array_equal(a, b)
    ev_p, ev_q = p.evaluate(predictions(d, K)), q.evaluate(predictions(d, K))
    assert ev_p.objective == ev_q.objective and ev_p.constraints == ev_q.constraints


def test_k_class_macro_f1_round_trips_by_name():
    d = make(3, seed=3)
    for objective in ("macro_f1", ro.metrics.MacroF1(d["ds"])):
        p = ro.Problem(objective=objective, constraints=[d["parity"]], datasets=d["ds"])
        q = ro.Problem.from_toml(p.to_toml(), d["ds"])
        assert isinstance(q.objective, ro.metrics.MacroF1) and not q.is_linear
        assert q.evaluate(d["pred"]).objective == p.evaluate(d["pred"]).objective
    sub = ro.metrics.MacroF1(d["ds"].context().subset(group="g", value=1))
    with pytest.raises(RateoptError, match="needs a named objective"):
        ro.Problem(objective=sub, datasets=d["ds"]).to_toml()


@ARITIES
def test_pickle_round_trip(K):
    d = make(K, seed=4)
    p = ro.Problem(constraints=[d["parity"]], datasets=d["ds"])
    back = pickle.loads(pickle.dumps(p))
    assert is_class_problem(back) == (K > 2)
    assert back.evaluate(predictions(d, K)).constraints == p.evaluate(predictions(d, K)).constraints


def test_label_probabilities_need_a_class_dataset():
    d = make(2)
    with pytest.raises(RateoptError, match="label_probabilities stand in for K-class labels"):
        ro.Problem(datasets=d["ds"], label_probabilities=np.full((d["n"], 2), 0.5))


def test_k_class_kind_is_read_by_shape():
    d = make(3)
    p = ro.Problem(datasets=d["ds"])
    P = np.eye(3)[d["pred"]]
    assert p.evaluate(d["pred"], kind="labels").objective == p.evaluate(P, kind="probabilities").objective
    with pytest.raises(RateoptError, match=r"kind='probabilities' needs an array of shape \(90, 3\)"):
        p.evaluate(d["pred"], kind="probabilities")
    with pytest.raises(RateoptError, match="K-class predictions are labels"):
        p.evaluate(d["pred"], kind="scores")
