"""The K-class plug-in rule against an LP over every deterministic rule of a tiny problem (brute force)."""

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

import rateopt as ro
from rateopt.exceptions import RateoptError
from rateopt._postprocess._plugin import fit_plugin_rule, plugin_decisions


def _tiny(seed, n=7, K=3):
    rng = np.random.default_rng(seed)
    eta = rng.dirichlet(np.ones(K) * 0.7, size=n)
    y = np.arange(n) % K  # every class present
    g = np.array(["a", "b"] * n)[:n]
    w = rng.uniform(0.5, 2.0, size=n)
    return eta, y, g, w


def _expected_rates(decisions, eta, g, w, K, goals_fn):
    """Objective (expected error under eta) and constraint values, by explicit sums over rows."""
    n = len(decisions)
    err = sum(w[i] * (1.0 - eta[i, decisions[i]]) for i in range(n)) / w.sum()
    return err, goals_fn(decisions)


def _dp_values(decisions, g, w, K, slack):
    out = []
    for k in range(K):
        overall = sum(w[i] for i in range(len(w)) if decisions[i] == k) / w.sum()
        for v in ("a", "b"):
            rows = [i for i in range(len(w)) if g[i] == v]
            r = sum(w[i] for i in rows if decisions[i] == k) / sum(w[i] for i in rows)
            out += [r - overall - slack, overall - slack - r]
    return np.array(out)


def _eo_values(decisions, eta, g, w, K, slack):
    """Per-class recall parity read under eta: recall_k(S) = sum_S w eta_k [d=k] / sum_S w eta_k."""
    out = []
    for k in range(K):
        def rec(rows):
            return (sum(w[i] * eta[i, k] for i in rows if decisions[i] == k) / sum(w[i] * eta[i, k] for i in rows))
        overall = rec(range(len(w)))
        for v in ("a", "b"):
            r = rec([i for i in range(len(w)) if g[i] == v])
            out += [r - overall - slack, overall - slack - r]
    return np.array(out)


def _brute_force_optimum(eta, g, w, K, cons, epsilon=0.0):
    n = len(w)
    F, G = [], []
    for d in itertools.product(range(K), repeat=n):
        d = np.array(d)
        f, gv = _expected_rates(d, eta, g, w, K, cons)
        F.append(f)
        G.append(gv)
    F, G = np.array(F), np.array(G)
    res = linprog(F, A_ub=G.T, b_ub=np.full(G.shape[1], epsilon), A_eq=np.ones((1, len(F))), b_eq=[1.0],
                  bounds=(0, None), method="highs")
    return res


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("goal", ["dp", "eo"])
@pytest.mark.parametrize("epsilon", [0.0, 0.07])
def test_plugin_matches_lp_over_all_deterministic_rules(seed, goal, epsilon):
    K = 3
    eta, y, g, w = _tiny(seed, K=K)
    slack = 0.1
    ds = ro.ClassDataset(eta, y, weights=w, groups={"g": g})
    if goal == "dp":
        recipe = ro.goals.multiclass_demographic_parity("g", slack=slack)
        cons = lambda d: _dp_values(d, g, w, K, slack)  # noqa: E731
    else:
        recipe = ro.goals.multiclass_equal_opportunity("g", slack=slack)
        cons = lambda d: _eo_values(d, eta, g, w, K, slack)  # noqa: E731
    problem = ro.Problem(constraints=[recipe], datasets=ds, label_probabilities=eta)
    fit = fit_plugin_rule(problem, eta, epsilon=epsilon)
    ref = _brute_force_optimum(eta, g, w, K, cons, epsilon)
    if ref.status != 0:  # infeasible: the plug-in reports a positive violation beyond epsilon
        assert fit.max_violation > 1e-9
        return
    assert fit.max_violation <= 1e-9
    assert fit.objective == pytest.approx(ref.fun, abs=1e-9)
    # the rule's own decisions, recounted by brute force, give the LP's values
    cells = problem.compiled.cells
    mix_f, mix_g = 0.0, 0.0
    for C, p in zip(fit.rule.costs, fit.rule.probabilities):
        d = plugin_decisions(eta, cells, C)
        f, gv = _expected_rates(d, eta, g, w, K, cons)
        mix_f, mix_g = mix_f + p * f, mix_g + p * gv
    assert mix_f == pytest.approx(ref.fun, abs=1e-9)
    assert np.max(mix_g) <= epsilon + 1e-9
    assert len(fit.rule.probabilities) <= len(problem.constraints) + 1


@pytest.mark.parametrize("seed", range(6))
def test_epsilon_allows_the_violation_the_lp_allows(seed):
    """Parity at slack 0 on 7 rows: the optimum with epsilon=0.2 is the brute-force LP's with 0.2 (not the 0 one's)."""
    K = 3
    eta, y, g, _ = _tiny(seed, K=K)
    w = np.ones(len(y))
    ds = ro.ClassDataset(eta, y, groups={"g": g})
    recipe = ro.goals.multiclass_demographic_parity("g", slack=0.0)
    cons = lambda d: _dp_values(d, g, w, K, 0.0)  # noqa: E731
    problem = ro.Problem(constraints=[recipe], datasets=ds, label_probabilities=eta)
    strict = _brute_force_optimum(eta, g, w, K, cons, 0.0)
    loose = _brute_force_optimum(eta, g, w, K, cons, 0.2)
    assert strict.status == 0 and loose.status == 0
    fit0 = fit_plugin_rule(problem, eta)
    fit2 = fit_plugin_rule(problem, eta, epsilon=0.2)
    assert fit0.objective == pytest.approx(strict.fun, abs=1e-9)
    assert fit2.objective == pytest.approx(loose.fun, abs=1e-9)
    assert fit2.max_violation <= 1e-9 and np.max(fit2.constraint_values) <= 0.2 + 1e-9


def test_epsilon_is_checked():
    eta, y, g, w = _tiny(0)
    ds = ro.ClassDataset(eta, y, groups={"g": g})
    problem = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.0)],
                                   datasets=ds, label_probabilities=eta)
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(RateoptError, match="epsilon"):
            fit_plugin_rule(problem, eta, epsilon=bad)


def test_plugin_rule_is_a_per_group_argmax_of_weighted_probabilities():
    eta, y, g, w = _tiny(3, n=40, K=4)
    ds = ro.ClassDataset(eta, y, weights=w, groups={"g": g})
    problem = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.05)], datasets=ds,
                         label_probabilities=eta)
    fit = fit_plugin_rule(problem, eta)
    cells = problem.compiled.cells
    for C in fit.rule.costs:
        d = plugin_decisions(eta, cells, C)
        # argmax_k sum_y eta_y (-C[g, y, k]): the same decisions, row by row
        for i in range(len(d)):
            assert d[i] == np.argmin(eta[i] @ C[cells[i]])


def test_unconstrained_plugin_is_the_bayes_rule():
    eta, y, g, w = _tiny(4, n=50, K=3)
    ds = ro.ClassDataset(eta, y, weights=w, groups={"g": g})
    problem = ro.Problem(datasets=ds, label_probabilities=eta)
    fit = fit_plugin_rule(problem, eta)
    d = plugin_decisions(eta, problem.compiled.cells, fit.rule.costs[0])
    np.testing.assert_array_equal(d, np.argmax(eta, axis=1))
