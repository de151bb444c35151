"""The three-player game for non-linear metrics (seed 003, Algorithm 2; ``method="three-player"``).

References are independent: one iteration is recomputed with NumPy from the
definitions (best response, brute-force rates, the hinge gradient at theta = 0);
solutions are scored by counting the classifiers' expected decisions.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rateopt
from rateopt import metrics


def _imbalanced(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g = rng.integers(0, 2, n)
    X[:, 1] += g
    y = (X[:, 0] + 0.8 * X[:, 1] + rng.normal(size=n) > 1.2).astype(int)
    w = rng.uniform(0.5, 1.5, n)
    return X, y, g, w, rateopt.Dataset(X, y, weights=w, groups={"g": g})


def _gmean_brute(d, y, w):
    tpr = np.sum(w[y == 1] * d[y == 1]) / np.sum(w[y == 1])
    tnr = np.sum(w[y == 0] * (1 - d[y == 0])) / np.sum(w[y == 0])
    return 1 - np.sqrt(tpr * tnr), tpr, tnr


def test_one_iteration_equals_a_numpy_reference():
    X, y, g, w, ds = _imbalanced(400)
    ctx = ds.context()
    gm = metrics.g_mean(ctx)
    cap = rateopt.positive_prediction_rate(ctx) <= 0.6
    res = rateopt._train.run_game(rateopt.Problem(objective=gm, constraints=[cap]), method="three-player",
                                  n_iter=2, record_every=1, optimizer="sgd", learning_rate=0.1, eta_lambda=0.3)
    # Iteration 0 at theta = 0, bias = 0: every score is 0, every decision positive.
    lam0 = np.array([0.5, 0.5])
    xi0 = gm.best_response(lam0)
    _, tpr, tnr = _gmean_brute(np.ones_like(y), y, w)
    W1, W0, W = np.sum(w[y == 1]), np.sum(w[y == 0]), np.sum(w)
    # d z_k / d decision_j from the definitions: TPR = sum_{y=1} w d / W1, TNR = 1 - sum_{y=0} w d / W0.
    s = gm.signs
    u = s[0] * lam0[0] * np.where(y == 1, w / W1, 0.0) + s[1] * lam0[1] * np.where(y == 0, -w / W0, 0.0)
    # (nu starts at 0: the coverage constraint adds nothing yet.) At s = 0 both hinges are active: slope u.
    theta1, bias1 = -0.1 * (X.T @ u), -0.1 * u.sum()
    lam1 = np.maximum(lam0 + 0.3 * s * (np.array([tpr, tnr]) - xi0), 0.0)
    nu1 = max(0.0 + 0.3 * (1.0 - 0.6), 0.0)  # ppr = 1 at theta = 0
    k = res.n_trivial + 1  # iteration 1, after the trivial rules
    np.testing.assert_allclose(res.weights[k], theta1, rtol=1e-12, atol=1e-15)
    assert res.biases[k] == pytest.approx(bias1, rel=1e-12)
    np.testing.assert_allclose(res.multipliers[k], np.concatenate(([1.0, nu1], lam1)), rtol=1e-12, atol=1e-15)
    assert W == pytest.approx(W0 + W1)


def test_metric_objectives_choose_the_three_player_game():
    X, y, g, w, ds = _imbalanced(300)
    problem = rateopt.Problem(objective=metrics.g_mean(ds.context()))
    assert rateopt.train(problem, n_iter=20).method == "three-player"
    with pytest.raises(ValueError, match="method='three-player'"):
        rateopt.train(problem, method="proxy-swap", n_iter=5)


def test_gmean_beats_the_error_minimizer_and_mixtures_are_scored_exactly():
    X, y, g, w, ds = _imbalanced()
    ctx = ds.context()
    unc = rateopt.train(rateopt.Problem(objective=rateopt.error_rate(ctx)), method="unconstrained", n_iter=1500)
    unc_loss = _gmean_brute((X @ unc.weights[-1] + unc.biases[-1] >= 0).astype(float), y, w)[0]
    res = rateopt.train(rateopt.Problem(objective=metrics.g_mean(ctx)), n_iter=1500, eta_lambda=0.1)
    for kind in ("m-stochastic", "T-stochastic", "best", "last"):
        proba = res.solution(kind).predict_proba(X)[:, 1]
        brute = _gmean_brute(proba, y, w)[0]  # psi of the expected rates
        assert res.solution_objective(kind) == pytest.approx(brute, abs=1e-12), kind
    best = res.solution_objective("best")
    assert best < unc_loss - 0.01, (best, unc_loss)
    # For a convex metric the mixture's exact value is at most the mixture of the iterates' values.
    p = res.mixture("T-stochastic")
    assert res.solution_objective("T-stochastic") <= p @ res.objectives + 1e-12


def test_kld_under_an_error_budget():
    """Seed 003 Experiment 1 in miniature: minimize a group's KL divergence from the
    prevalence subject to error <= 1.1 x the unconstrained error."""
    X, y, g, w, ds = _imbalanced()
    ctx = ds.context()
    unc = rateopt.train(rateopt.Problem(objective=rateopt.error_rate(ctx)), method="unconstrained", n_iter=1500)
    d = (X @ unc.weights[-1] + unc.biases[-1] >= 0).astype(float)
    err = float(np.sum(w * (d != y)) / np.sum(w))
    kld = metrics.kl_divergence(ctx.subset(group="g", value=0))
    unc_kld = kld.evaluate(d)
    res = rateopt.train(rateopt.Problem(objective=kld, constraints=[rateopt.error_rate(ctx) <= 1.1 * err]),
                        n_iter=2000, eta_lambda=0.5)
    proba = res.solution("m-stochastic").predict_proba(X)[:, 1]
    assert kld.evaluate(proba, kind="probabilities") == pytest.approx(res.solution_objective(), abs=1e-12)
    assert float(np.sum(w * np.abs(proba - y)) / np.sum(w)) <= 1.1 * err + 1e-9  # the budget holds
    assert res.solution_objective() <= 0.4 * unc_kld, (res.solution_objective(), unc_kld)


def test_a_metric_result_round_trips(tmp_path):
    X, y, g, w, ds = _imbalanced(300)
    res = rateopt.train(rateopt.Problem(objective=metrics.h_mean(ds.context())), n_iter=50)
    res.save(tmp_path / "r.npz")
    back = rateopt.load(tmp_path / "r.npz")
    np.testing.assert_array_equal(back.objectives, res.objectives)
    assert back.solution_objective("T-stochastic") == res.solution_objective("T-stochastic")


def _synthetic_result(R, metric, C=None, kappa=None):
    """A TrainResult over given atom rates: atoms 0, 1 are the metric's coordinates, C rows constrain."""
    from rateopt._compiler._compiled import MetricRows
    from rateopt._solutions._result import RateMap

    A = R.shape[1]
    Z = np.eye(A)[:2]
    C = np.zeros((0, A)) if C is None else np.atleast_2d(C)
    kappa = np.zeros(0) if kappa is None else np.atleast_1d(kappa)
    rmap = RateMap(np.zeros(A), 0.0, C, kappa, tuple(f"c{i}" for i in range(C.shape[0])),
                   MetricRows(metric, Z, np.zeros(2)))
    T = R.shape[0]
    return rateopt.TrainResult(method="three-player", weights=np.zeros((T, 1)), biases=np.zeros(T),
                               iterations=np.arange(T), multipliers=np.ones((T, 1 + C.shape[0])), atom_rates=R,
                               rate_map=rmap, n_iter=T)


@pytest.mark.parametrize("kind", ["g_mean", "h_mean", "kld"])
def test_exact_mixture_is_the_optimum_over_mixtures(kind):
    rng = np.random.default_rng({"g_mean": 0, "h_mean": 1, "kld": 2}[kind])
    metric = metrics.Metric(kind, (), (-1.0, -1.0), kind, target=0.3 if kind == "kld" else None)
    # Four iterates with extreme coordinates; atom 2 is a rate capped by a constraint (<= 0.5).
    R = np.column_stack([rng.uniform(0.05, 1.0, 4), rng.uniform(0.05, 1.0, 4), rng.uniform(0.0, 1.0, 4)])
    R[0, :2], R[1, :2] = (0.95, 0.1), (0.1, 0.95)
    res = _synthetic_result(R, metric, C=[0.0, 0.0, 1.0], kappa=0.5)
    q = res.mixture("exact")
    # Brute force over the simplex on a 0.01 grid.
    step = np.arange(0, 101) / 100
    a, b, c = np.meshgrid(step, step, step, indexing="ij")
    d = 1 - a - b - c
    ok = d >= -1e-12
    Q = np.column_stack([a[ok], b[ok], c[ok], np.clip(d[ok], 0, None)])
    rates = Q @ R
    feasible = rates[:, 2] <= 0.5 + 1e-12
    grid_best = min(metric.value(z) for z in rates[feasible][:, :2])
    exact = res.solution_objective("exact")
    assert exact <= grid_best + 1e-9, (exact, grid_best)
    assert R[:, 2] @ q <= 0.5 + 1e-9  # the constraint holds
    assert np.count_nonzero(q) <= 2 + 1 + 1  # K + m + 1
    assert exact <= res.solution_objective("m-stochastic") + 1e-12


def test_exact_mixture_of_an_affine_objective_is_the_lp():
    X, y, g, w, ds = _imbalanced(300)
    ctx = ds.context()
    res = rateopt.train(rateopt.Problem(constraints=[rateopt.positive_prediction_rate(ctx) <= 0.3]), n_iter=200,
                        eta_lambda=0.5)
    np.testing.assert_array_equal(res.mixture("exact"), res.mixture("m-stochastic"))


def test_metric_constraints_are_built_evaluated_and_refused_in_the_wrong_direction():
    X, y, g, w, ds = _imbalanced(400)
    ctx = ds.context()
    kld = metrics.kl_divergence(ctx.subset(group="g", value=1))
    c = kld <= 0.02
    assert isinstance(c, metrics.MetricConstraint) and c.name == "kld[g=1] <= 0.02"
    with pytest.raises(TypeError, match="not a convex constraint"):
        kld >= 0.02  # noqa: B015
    problem = rateopt.Problem(constraints=[c, rateopt.positive_prediction_rate(ctx) <= 0.7])
    assert problem.constraint_names == ("ppr[all] <= 0.7", "kld[g=1] <= 0.02")  # metric constraints last
    d = (X[:, 0] > 0.2).astype(float)
    ev = problem.evaluate(d)
    assert ev.constraints["kld[g=1] <= 0.02"] == pytest.approx(kld.evaluate(d) - 0.02, abs=1e-15)
    with pytest.raises(ValueError, match="method='three-player'"):
        rateopt.train(problem, method="proxy-swap", n_iter=5)


def test_one_iteration_with_a_metric_constraint():
    X, y, g, w, ds = _imbalanced(300)
    ctx = ds.context()
    kld = metrics.kl_divergence(ctx.subset(group="g", value=1))
    res = rateopt._train.run_game(rateopt.Problem(constraints=[kld <= 0.02]), n_iter=2, record_every=1,
                                  eta_lambda=0.3)
    # At theta = 0 every decision is positive: z = (ppr, npr) = (1, 0) on the group.
    # mu starts at 0, so xi^1 = 1[s lam > 0] = (0, 0) (s = -1); then
    # mu_1 = max(0, 0.3 (psi(0, 0) - 0.02)) and lam^1 = max(0, 0.5 + 0.3 s (z - 0)).
    mu1 = max(0.0, 0.3 * (kld.value([0.0, 0.0]) - 0.02))
    lam1 = np.maximum(0.5 - 0.3 * np.array([1.0, 0.0]), 0.0)
    np.testing.assert_allclose(res.history["multipliers"][1], np.concatenate(([1.0, mu1], lam1)), rtol=1e-12)


def test_error_under_kl_constraints_on_both_groups():
    X, y, g, w, ds = _imbalanced()
    ctx = ds.context()
    klds = [metrics.kl_divergence(ctx.subset(group="g", value=v)) for v in (0, 1)]
    problem = rateopt.Problem(objective=rateopt.error_rate(ctx), constraints=[k <= 0.01 for k in klds])
    res = rateopt.train(problem, n_iter=2000, eta_lambda=0.5)
    assert res.method == "three-player"
    for kind in ("m-stochastic", "exact"):
        proba = res.solution(kind).predict_proba(X)[:, 1]
        for k in klds:  # the mixture's own divergence, from its expected decisions
            assert k.evaluate(proba, kind="probabilities") <= 0.01 + 1e-9, kind
        assert res.feasibility(kind).feasible
        err = float(np.sum(w * np.abs(proba - y)) / np.sum(w))
        assert err == pytest.approx(res.solution_values(kind)[0], abs=1e-12)
    assert res.solution_values("exact")[0] <= res.solution_values("m-stochastic")[0] + 1e-12


def test_f1_objective_beats_the_error_minimizers_f1():
    """Algorithm 3 on a single ratio: maximize F1 (minimize -F1)."""
    X, y, g, w, ds = _imbalanced()
    ctx = ds.context()
    f1 = metrics.f_measure(ctx)
    unc = rateopt.train(rateopt.Problem(objective=rateopt.error_rate(ctx)), method="unconstrained", n_iter=1500)
    unc_f1 = f1.evaluate((X @ unc.weights[-1] + unc.biases[-1] >= 0).astype(float))
    res = rateopt.train(rateopt.Problem(objective=-f1), n_iter=2000, eta_lambda=0.05)
    proba = res.solution("m-stochastic").predict_proba(X)[:, 1]
    got = f1.evaluate(proba, kind="probabilities")
    assert -res.solution_objective("m-stochastic") == pytest.approx(got, abs=1e-12)
    assert got >= unc_f1 + 0.005, (got, unc_f1)


def test_f1_parity_constraints_are_scored_on_the_mixtures_rates():
    X, y, g, w, ds = _imbalanced(600)
    ctx = ds.context()
    par = metrics.f_measure_parity(ctx.subset(group="g", value=0), ctx.subset(group="g", value=1))
    problem = rateopt.Problem(objective=-metrics.f_measure(ctx), constraints=[par <= 0.05, par >= -0.05])
    with pytest.warns(rateopt.exceptions.InfeasibleWarning):  # a heuristic game: not met in 300 iterations
        res = rateopt.train(problem, n_iter=300, eta_lambda=0.2)
    for kind in ("m-stochastic", "T-stochastic"):
        proba = res.solution(kind).predict_proba(X)[:, 1]
        gap = par.evaluate(proba, kind="probabilities")  # the parity of the mixture, a ratio of expectations
        np.testing.assert_allclose(res.solution_values(kind)[1], [gap - 0.05, -gap - 0.05], atol=1e-12)


def _problem_on(ds, ctx_of):
    ctx = ctx_of(ds)
    g0, g1 = ctx.subset(group="g", value=0), ctx.subset(group="g", value=1)
    par = metrics.f_measure_parity(g0, g1)
    kld = metrics.kl_divergence(g0) + metrics.kl_divergence(g1)
    return rateopt.Problem(objective=-metrics.f_measure(ctx),
                           constraints=[par <= 0.05, kld <= 0.05, rateopt.positive_prediction_rate(ctx) <= 0.7,
                                        metrics.g_mean(ctx) >= 0.5])


def test_results_with_ratio_objectives_metric_sums_and_metric_constraints_round_trip(tmp_path):
    X, y, g, w, ds = _imbalanced(500)
    Xv, yv, gv, wv, dv = _imbalanced(300, seed=1)
    problem = _problem_on(ds, lambda d: d.context())
    val = _problem_on(dv, lambda d: d.context())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rateopt.exceptions.InfeasibleWarning)  # 60 iterations: either way
        res = rateopt.train(problem, validation=val, n_iter=60, eta_lambda=0.2)
    assert len(res.rate_map.metric_constraints) == 3  # parity, the KLD sum, the G-mean floor
    res.save(tmp_path / "r.npz")
    back = rateopt.load(tmp_path / "r.npz")
    assert back.constraint_names == res.constraint_names
    np.testing.assert_array_equal(back.objectives, res.objectives)
    np.testing.assert_array_equal(back.constraints, res.constraints)
    for kind in ("m-stochastic", "T-stochastic", "best", "exact"):
        (obj_b, g_b), (obj_r, g_r) = back.solution_values(kind), res.solution_values(kind)
        assert obj_b == obj_r
        np.testing.assert_array_equal(g_b, g_r)
        assert back.solution_objective(kind) == res.solution_objective(kind)
        np.testing.assert_array_equal(back.solution(kind).predict_proba(X), res.solution(kind).predict_proba(X))
    # The saved psi still scores mixtures exactly: the loaded F1 is psi of the mixture's expected rates.
    proba = back.solution("T-stochastic").predict_proba(X)[:, 1]
    assert -metrics.f_measure(ds.context()).evaluate(proba, kind="probabilities") == pytest.approx(
        back.solution_objective("T-stochastic"), abs=1e-12)
    np.testing.assert_array_equal(back.val_atom_rates, res.val_atom_rates)
    assert back.val_rate_map.constraints(back.val_atom_rates).shape == (res.weights.shape[0], 4)
    np.testing.assert_array_equal(back.val_rate_map.constraints(back.val_atom_rates),
                                  res.val_rate_map.constraints(res.val_atom_rates))


def test_a_damaged_metric_in_a_saved_result_is_named(tmp_path):
    import json

    X, y, g, w, ds = _imbalanced(300)
    ctx = ds.context()
    res = rateopt.train(rateopt.Problem(objective=metrics.g_mean(ctx), constraints=[metrics.h_mean(ctx) <= 0.9]),
                        n_iter=20)
    res.save(tmp_path / "r.npz")
    with np.load(tmp_path / "r.npz", allow_pickle=False) as z:
        arrays = dict(z)
    meta = json.loads(bytes(arrays.pop("__rateopt_metadata__")).decode())

    def write(m, name, **extra):
        payload = dict(arrays, **extra)
        payload["__rateopt_metadata__"] = np.frombuffer(json.dumps(m).encode(), dtype=np.uint8)
        np.savez(tmp_path / name, **payload)
        return tmp_path / name

    cases = [({"metric_constraints": [{"metric": meta["metric_constraints"][0]["metric"], "bound": "x"}]},
              r"metric_constraints\[0\]"),
             ({"metric_constraints": 3}, "metric_constraints"),
             ({"metric_constraints": [{"metric": {"kind": "nope"}, "bound": 0.9}]}, r"metric_constraints\[0\]"),
             ({"metric": {"kind": "g_mean", "signs": [1.0]}}, "metadata.metric")]
    for i, (change, match) in enumerate(cases):
        with pytest.raises(rateopt.exceptions.RateoptError, match=match):
            rateopt.load(write({**meta, **change}, f"bad{i}.npz"))
    bad = write(meta, "short.npz", mc0_Z=arrays["mc0_Z"][:, :-1])
    with pytest.raises(rateopt.exceptions.RateoptError, match="mc0_Z"):
        rateopt.load(bad)


def test_the_feasibility_report_of_metric_constraints_uses_the_exact_mixture():
    """Regression: with ratio constraints the per-iterate LP called a mixture feasible that was not
    (the warning said both 'violates' and 'a mixture meets every constraint (the m-stochastic solution)')."""
    X, y, g, w, ds = _imbalanced(600)
    ctx = ds.context()
    par = metrics.f_measure_parity(ctx.subset(group="g", value=0), ctx.subset(group="g", value=1))
    problem = rateopt.Problem(objective=-metrics.f_measure(ctx), constraints=[par <= 0.05, par >= -0.05])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rateopt.exceptions.InfeasibleWarning)
        res = rateopt.train(problem, n_iter=300, eta_lambda=0.2)
    report = res.feasibility("m-stochastic")
    assert report.achieved_by == "exact"
    proba = res.solution("exact").predict_proba(X)[:, 1]
    gap = par.evaluate(proba, kind="probabilities")  # the exact mixture's own parity, by counting
    exact_violation = max(gap - 0.05, -gap - 0.05)
    assert report.achievable_violation == pytest.approx(max(0.0, exact_violation), abs=1e-12) or (
        exact_violation <= 1e-9 and report.achievable_violation == 0.0)
    text = report.describe()
    if report.max_violation > 1e-9 and report.achievable_violation == 0.0:
        assert "(the exact solution)" in text


def test_the_logistic_proxy_is_refused_where_the_game_cannot_use_it():
    X, y, g, w, ds = _imbalanced(300)
    ctx = ds.context()
    message = (r"^proxy='logistic' cannot be used with a metric objective or metric constraints: "
               r"method='three-player' then trains the hinge proxy of one combination of rates; "
               r"leave proxy=None \(or 'hinge'\)$")
    for problem in (rateopt.Problem(objective=metrics.f_measure(ctx) * -1),
                    rateopt.Problem(objective=rateopt.error_rate(ctx), constraints=[metrics.g_mean(ctx) >= 0.5])):
        with pytest.raises(ValueError, match=message):
            rateopt.train(problem, method="three-player", proxy="logistic", n_iter=3)
        assert rateopt.train(problem, method="three-player", proxy="hinge", n_iter=3).n_iter == 3
    with pytest.raises(ValueError, match=message):
        rateopt.RateConstrainedClassifier(objective="f_measure", proxy="logistic", n_iter=3).fit(X, y)
    # With an affine objective and no metric the game is the Lagrangian with the objective's proxy: honored.
    affine = rateopt.Problem(objective=rateopt.error_rate(ctx))
    runs = [rateopt.train(affine, method="three-player", proxy=p, optimizer="sgd", n_iter=3, record_every=1)
            for p in ("logistic", "hinge")]
    assert not np.allclose(runs[0].weights[-1], runs[1].weights[-1])  # sgd: the first step is the proxy's gradient
