"""The game registry and the driver's seam (``rateopt.games``, ``rateopt.train``).

Checked against independent facts: the number of kernel passes is counted by
wrapping the core function; a game defined here, outside the package, trains
through the unchanged driver; the logistic objective proxy is compared with
scikit-learn's logistic regression on the same data.
"""

from __future__ import annotations

import inspect
import io

import numpy as np
import pytest
import rateopt
from _games_support import params_for
from rateopt import core
from rateopt._training._spec import Combinations
from rateopt.games import GAMES, Game, get_game, register
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

DOCUMENTED = ("proxy-swap", "proxy-external", "lagrangian-hinge", "unconstrained")


def _problem(n=300, seed=0, m=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    g = rng.integers(0, 2, n)
    ds = rateopt.Dataset(X, y, groups={"g": g})
    ctx = ds.context()
    cons = [rateopt.positive_prediction_rate(ctx) <= 0.45,
            rateopt.true_positive_rate(ctx.subset(group="g", value=1)) >= 0.6][:m]
    return rateopt.Problem(constraints=cons), X, y


def test_every_documented_method_is_registered_and_documented():
    assert set(DOCUMENTED) <= set(GAMES)
    assert rateopt._train.METHODS == tuple(GAMES)
    train_doc = rateopt.train.__doc__
    est_doc = rateopt.RateConstrainedClassifier.__doc__
    for name in GAMES:
        assert f'"{name}"' in train_doc and f'"{name}"' in est_doc, name


@pytest.mark.parametrize("method", list(GAMES))
def test_every_registered_game_runs(method):
    problem, X, y = _problem()
    extra = {}
    if "oracle" in method:
        rng = np.random.default_rng(1)
        extra["oracle"] = rateopt.oracles.PoolOracle([(rng.normal(size=3), rng.normal()) for _ in range(10)])
    res = rateopt._train.run_game(problem, method=method, **params_for(method, n_iter=30, eta_lambda=0.5, **extra))
    # L-BFGS (method="unconstrained"'s default optimizer) stops once converged: at most n_iter iterations
    lbfgs = res.settings["optimizer"] == "lbfgs"
    assert res.method == method and (1 < res.n_iter <= 30 if lbfgs else res.n_iter == 30)
    assert res.atom_rates.shape == (res.weights.shape[0], problem.n_atoms)
    assert res.multipliers.shape == (res.weights.shape[0], problem.n_constraints + 1)
    # Recorded objective values are the NumPy error rates of the recorded models.
    for w, b, obj in zip(res.weights, res.biases, res.objectives):
        assert obj == pytest.approx(np.mean((X @ w + b >= 0).astype(int) != y), abs=1e-12)


def test_unknown_method_names_the_registered_ones():
    with pytest.raises(ValueError, match="method must be one of .*proxy-swap"):
        get_game("proxy-swop")
    problem, _, _ = _problem()
    with pytest.raises(ValueError, match="method must be one of"):
        rateopt.train(problem, method="nope")


@pytest.fixture
def count_passes(monkeypatch):
    calls = []
    real = core.rate_kernel_multi

    def counting(*args, **kwargs):
        calls.append(np.asarray(args[4]).shape[0])  # k combinations of this pass
        return real(*args, **kwargs)

    monkeypatch.setattr(core, "rate_kernel_multi", counting)
    return calls


@pytest.mark.parametrize("m", [1, 2])
def test_lagrangian_hinge_makes_one_kernel_pass_per_iteration(count_passes, m):
    problem, _, _ = _problem(m=m)
    # The Python driver's passes (the core loop makes the same passes in C++: tests/core/test_loop.py).
    for proxy, k in (("hinge", m + 1), ("logistic", m + 2)):
        count_passes.clear()
        rateopt._train.run_game(problem, method="lagrangian-hinge", n_iter=25, eta_lambda=0.5, loop="python",
                                proxy=proxy)
        # One dataset, full batch: records reuse the iteration's pass.
        # (and one value pass for each of the 2 trivial rules, at the end: one combination)
        assert len(count_passes) == 25 + 2 and count_passes[25:] == [1, 1]
        # the model's combination (hinge: one; logistic: the objective's and the constraints') and m
        # constraint rows, all in the one pass
        assert set(count_passes[:25]) == {k}


def test_the_multipliers_see_the_per_constraint_hinge_values():
    # One iteration by hand: the Lagrangian-hinge multipliers move by eta * g~(theta_0),
    # with g~ from GameSpec.proxy_constraints (its own reference-tested pass).
    problem, _, _ = _problem()
    res = rateopt._train.run_game(problem, method="lagrangian-hinge", n_iter=2, eta_lambda=0.5,
                                  record_every=1)
    spec = rateopt._training._spec.spec_from_problem(problem)
    g = spec.proxy_constraints(np.zeros(3), 0.0)
    lam = res.history["multipliers"]  # of the recorded iterates (the trivial rules' are 0)
    np.testing.assert_allclose(lam[1, 1:], np.maximum(0.5 * g, 0.0), rtol=0, atol=1e-15)


def test_a_new_game_needs_only_its_class_and_registration(count_passes):
    """A game written outside the package: a fixed-multiplier Lagrangian with the ramp
    proxy on the constraints. The driver runs it unchanged."""

    class FixedPenalty(Game):
        name = "test-fixed-penalty"

        def combinations(self):
            m = self.spec.n_constraints
            model = Combinations.single(self.spec.c0)
            return model + Combinations(self.spec.C, ("ramp",) * m, np.full(m, 2.0))

        def step(self, result):
            self.last_proxy_values = result.proxy_values
            self.model_player.step(result.grad, result.grad_bias)

        def multipliers(self):
            return np.concatenate(([1.0], np.full(self.spec.n_constraints, 2.0)))

    register(FixedPenalty)
    try:
        problem, _, _ = _problem()
        res = rateopt.train(problem, method="test-fixed-penalty", n_iter=40)
        assert res.method == "test-fixed-penalty" and res.n_iter == 40
        # 40 iterations, then one value pass for each of the 2 trivial rules
        assert len(count_passes) == 42 and set(count_passes[:40]) == {3} and count_passes[40:] == [1, 1]
        np.testing.assert_array_equal(res.history["multipliers"][:, 1:], 2.0)
    finally:
        del GAMES["test-fixed-penalty"]
    with pytest.raises(ValueError, match="new, non-empty name"):
        register(type("Unnamed", (Game,), {}))


def test_logistic_objective_proxy_reaches_logistic_regression():
    rng = np.random.default_rng(3)
    n = 600
    X = rng.normal(size=(n, 4))
    y = (X @ np.array([1.0, -0.5, 0.25, 0.0]) + rng.logistic(size=n) > 0).astype(int)
    ds = rateopt.Dataset(X, y)
    problem = rateopt.Problem(objective=rateopt.error_rate(ds.context()))
    res = rateopt.train(problem, method="unconstrained", proxy="logistic", n_iter=3000, learning_rate=0.02,
                        record_every=3000)
    w, b = res.weights[-1], res.biases[-1]
    ours = log_loss(y, 1 / (1 + np.exp(-(X @ w + b))))
    best = LogisticRegression(C=1e8, tol=1e-10, max_iter=10_000).fit(X, y)
    optimum = log_loss(y, best.predict_proba(X)[:, 1])
    assert optimum <= ours <= optimum + 1e-4


def test_logistic_objective_keeps_hinge_constraints(count_passes):
    problem, _, _ = _problem()
    rateopt._train.run_game(problem, method="proxy-swap", proxy="logistic", n_iter=3, eta_lambda=0.5,
                            loop="python")
    # objective (logistic) and constraints (hinge): two combinations; then the 2 trivial rules' value passes
    assert count_passes == [2, 2, 2, 1, 1]


def test_train_takes_exactly_the_parameter_table():
    from rateopt._params import MODEL_PARAMS, SOLUTION_PARAMS, TRAIN_PARAMS

    problem, _, _ = _problem()
    with pytest.raises(TypeError, match="unknown training parameter"):
        rateopt.train(problem, n_iters=10)
    # The estimator exposes every parameter of the tables, with the same defaults.
    est_params = inspect.signature(rateopt.RateConstrainedClassifier).parameters
    for p in TRAIN_PARAMS + MODEL_PARAMS + SOLUTION_PARAMS:
        assert p.name in est_params, p.name
        assert est_params[p.name].default == p.default, p.name


def test_train_result_round_trips_and_reselects_solutions(tmp_path):
    problem, X, y = _problem()
    val_problem, _, _ = _problem(seed=1)
    res = rateopt.train(problem, method="proxy-swap", n_iter=200, eta_lambda=0.5, validation=val_problem)
    path = tmp_path / "result.npz"
    res.save(path)
    back = rateopt.load(path)
    assert isinstance(back, rateopt.TrainResult) and back.method == "proxy-swap" and back.n_iter == 200
    for name in ("weights", "biases", "iterations", "multipliers", "atom_rates", "objectives", "constraints",
                 "val_objectives", "val_constraints"):
        np.testing.assert_array_equal(getattr(back, name), getattr(res, name), err_msg=name)
    assert back.constraint_names == res.constraint_names
    assert back.settings == res.settings and back.settings["eta_lambda"] == 0.5
    for kind in ("m-stochastic", "T-stochastic", "best", "last"):
        np.testing.assert_array_equal(back.mixture(kind), res.mixture(kind))
        a, b = back.solution(kind), res.solution(kind)
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_mixture_is_the_one_source_of_every_solution():
    problem, X, y = _problem()
    res = rateopt._train.run_game(problem, method="proxy-swap", n_iter=200, eta_lambda=0.5)  # no LP yet
    calls = []
    real = rateopt._solutions._shrink.shrink

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    rateopt._solutions._shrink.shrink = counting
    try:
        for kind in ("m-stochastic", "T-stochastic", "best", "last"):
            p = res.mixture(kind)
            obj, g = res.solution_values(kind)
            # Values are the mixture of the iterates' values; the classifier's expected
            # decisions reproduce them through an independent NumPy count.
            proba = res.solution(kind).predict_proba(X)[:, 1]
            assert obj == pytest.approx(np.mean(np.abs(proba - y)), abs=1e-12)
            np.testing.assert_allclose(res.solution_atom_rates(kind), res.atom_rates.T @ p, rtol=0, atol=0)
        res.summary(file=io.StringIO())
        res.feasibility("m-stochastic")
    finally:
        rateopt._solutions._shrink.shrink = real
    assert len(calls) == 1  # the LP was solved once (epsilon = 0) and cached


def test_a_damaged_result_file_is_a_clear_error(tmp_path):
    problem, _, _ = _problem()
    res = rateopt.train(problem, n_iter=20, eta_lambda=0.5)
    path = tmp_path / "r.npz"
    res.save(path)
    data = dict(np.load(path))
    data["atom_rates"] = data["atom_rates"][:, :-1]
    np.savez(path, **data)
    with pytest.raises(rateopt.exceptions.RateoptError, match="atom_rates"):
        rateopt.load(path)


# --------------------------------------------------------------------------- the facts on the game class


def test_a_subclass_under_a_new_name_keeps_the_parents_defaults_and_core_loop():
    from rateopt.games.proxy_lagrangian import ProxySwapGame

    @register
    class RenamedSwap(ProxySwapGame):
        name = "renamed-swap (test)"

    try:
        problem, _, _ = _problem()
        parent = rateopt.train(problem, method="proxy-swap", loop="core", random_state=0)
        child = rateopt.train(problem, method=RenamedSwap.name, loop="core", random_state=0)
        expected = dict(parent.settings, method=RenamedSwap.name)
        assert child.settings == expected
        assert (child.settings["n_iter"], child.settings["learning_rate"], child.settings["proxy"]) == (
            250, 0.1, "logistic")
        # The same core program ran: the same iterates, bit for bit.
        np.testing.assert_array_equal(child.weights, parent.weights)
        np.testing.assert_array_equal(child.multipliers, parent.multipliers)
        assert RenamedSwap.resumable and RenamedSwap.core_loop() == "proxy-swap"
    finally:
        GAMES.pop(RenamedSwap.name, None)


def test_a_subclass_that_changes_a_step_runs_in_the_python_driver():
    from rateopt.games.proxy_lagrangian import ProxySwapGame

    class DampedSwap(ProxySwapGame):
        name = "damped-swap (test)"

        def step(self, result):
            super().step(result)

    assert DampedSwap.core_loop() is None
    register(DampedSwap)
    try:
        problem, _, _ = _problem()
        with pytest.raises(ValueError, match="loop='core' cannot run this training"):
            rateopt.train(problem, method=DampedSwap.name, n_iter=5, loop="core")
        python = rateopt.train(problem, method=DampedSwap.name, n_iter=20, loop="auto", random_state=0)
        reference = rateopt.train(problem, method="proxy-swap", n_iter=20, loop="python", random_state=0)
        np.testing.assert_array_equal(python.weights, reference.weights)
    finally:
        GAMES.pop(DampedSwap.name, None)


@pytest.mark.parametrize("method, param, value", [
    ("oracle-lagrangian", "learning_rate", 0.5),
    ("oracle-lagrangian", "optimizer", "sgd"),
    ("oracle-proxy", "proxy", "logistic"),
    ("oracle-proxy", "margin", 0.5),
    ("proxy-swap", "lambda_radius", 2.0),
    ("lagrangian-hinge", "lambda_floor", 0.01),
    ("unconstrained", "eta_lambda", 0.1),
    ("three-player", "update", "additive"),
])
def test_a_game_refuses_a_setting_it_does_not_read(method, param, value):
    problem, _, _ = _problem()
    rng = np.random.default_rng(1)
    extra = {}
    if "oracle" in method:
        extra["oracle"] = rateopt.oracles.PoolOracle([(rng.normal(size=3), rng.normal()) for _ in range(4)])
    with pytest.raises(ValueError, match=rf"method='{method}' does not use the training parameter\(s\) \['{param}'\]"):
        rateopt._train.run_game(problem, method=method, n_iter=5, **{param: value}, **extra)
    # Given the table's default, the setting is no change and is accepted.
    default = {p.name: p.default for p in rateopt._params.TRAIN_PARAMS}[param]
    rateopt._train.run_game(problem, method=method, n_iter=5, **{param: default}, **extra)


def test_an_oracle_that_reads_a_setting_lends_it_to_its_game():
    problem, X, _ = _problem()
    oracle = rateopt.oracles.HingeOracle(l2=0.1)
    res = rateopt._train.run_game(problem, method="oracle-lagrangian", n_iter=3, margin=0.5, oracle=oracle)
    assert res.settings["margin"] == 0.5
