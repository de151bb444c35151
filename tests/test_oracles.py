"""Oracles (``rateopt.oracles``) and the oracle games (seed 001, Algorithms 1 and 2).

References are independent: the exact oracles are checked against brute force
over every threshold (pair) or pool model; the games against the optimum over
mixtures of the pool computed by an LP (scipy's HiGHS), through the inequalities
of seed 001 Theorems 2 and 6 with the constants of Lemmas 3 and 7.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import rateopt
import scipy.sparse as sp
from rateopt import oracles
from rateopt._params import train_settings
from rateopt._training._spec import kernel_pass, spec_from_problem
from rateopt.games import get_game
from scipy.optimize import linprog

from _hinge_qp import highs_hinge_qp


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g = rng.integers(0, 2, n)
    X[:, 2] = g
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.8 * g + rng.normal(size=n) > 0.5).astype(int)
    return X, y, g, rateopt.Dataset(X, y, weights=rng.uniform(0.5, 1.5, n), groups={"g": g})


def _problem(ds, slack=0.02):
    ctx = ds.context()
    return rateopt.Problem(objective=rateopt.error_rate(ctx),
                           constraints=rateopt.goals.demographic_parity("g", slack=slack).bind(ds))


def _settings():
    return train_settings(get_game("oracle-proxy"), rateopt.LinearModel())


def _cuts(s):
    """Every realizable decision set ``1[s >= t]``: thresholds between distinct scores and beyond both ends
    (midpoints, so that recomputing the scores in another order cannot move a row across)."""
    u = np.unique(s)
    return np.concatenate(([u[0] - 1.0], 0.5 * (u[:-1] + u[1:]), [u[-1] + 1.0]))


def _value(spec, coef, theta, bias):
    return float(coef @ kernel_pass(spec, theta, bias, np.zeros(spec.n_atoms)).rates)


def _pool_rates(spec, pool):
    """Every pool model's atom rates (rows), from one kernel pass each."""
    return np.array([kernel_pass(spec, t, b, np.zeros(spec.n_atoms)).rates for t, b in pool])


def test_net_coefficients_give_the_weighted_rates_exactly():
    X, y, g, ds = _data(300)
    rng = np.random.default_rng(1)
    other = rateopt.Dataset(rng.normal(size=(200, 3)), rng.integers(0, 2, 200), name="steer")
    problem = rateopt.Problem(objective=rateopt.error_rate(ds.context()),
                              constraints=[*rateopt.goals.equal_opportunity("g", slack=0.05).bind(ds),
                                           rateopt.accuracy(other.context()) >= 0.6])
    spec = spec_from_problem(problem)
    for _ in range(5):
        coef = rng.normal(size=spec.n_atoms)
        theta, bias = rng.normal(size=3), rng.normal()
        u = oracles.net_coefficients(spec, coef)
        decisions = [(np.asarray(b.X.data @ theta).ravel() + bias >= 0) for b in spec.blocks]
        got = sum(float(uu @ d) for uu, d in zip(u, decisions))
        assert got == pytest.approx(_value(spec, coef, theta, bias), abs=1e-12)


def test_the_threshold_oracle_is_exact_over_every_threshold():
    X, y, g, ds = _data(80, seed=2)
    spec = spec_from_problem(_problem(ds))
    direction = np.array([1.0, 0.5, 0.0])
    best = oracles.ThresholdOracle(direction).bind(spec, _settings())
    s = X @ direction
    candidates = _cuts(s)
    rng = np.random.default_rng(3)
    for _ in range(20):
        coef = rng.normal(size=spec.n_atoms)
        brute = min(_value(spec, coef, direction, -t) for t in candidates)
        theta, bias = best(coef)
        np.testing.assert_array_equal(theta, direction)
        assert _value(spec, coef, theta, bias) == pytest.approx(brute, abs=1e-12)


def test_the_per_group_threshold_oracle_is_exact_over_every_threshold_pair():
    X, y, g, ds = _data(40, seed=4)
    spec = spec_from_problem(_problem(ds))
    direction = np.array([1.0, 0.5, 0.0])
    best = oracles.ThresholdOracle(direction, group_columns=[2]).bind(spec, _settings())
    s = X @ direction
    cand = [_cuts(s[g == k]) for k in (0, 1)]
    rng = np.random.default_rng(5)
    for _ in range(5):
        coef = rng.normal(size=spec.n_atoms)
        brute = min(_value(spec, coef, np.array([1.0, 0.5, -(t1 - t0)]), -t0) for t0 in cand[0] for t1 in cand[1])
        theta, bias = best(coef)
        assert _value(spec, coef, theta, bias) == pytest.approx(brute, abs=1e-12)


def test_the_pool_oracle_is_exact_over_its_pool():
    X, y, g, ds = _data(300, seed=6)
    spec = spec_from_problem(_problem(ds))
    rng = np.random.default_rng(7)
    pool = [(rng.normal(size=3), rng.normal()) for _ in range(25)]
    best = oracles.PoolOracle(pool).bind(spec, _settings())
    for _ in range(10):
        coef = rng.normal(size=spec.n_atoms)
        values = [_value(spec, coef, t, b) for t, b in pool]
        theta, bias = best(coef)
        k = int(np.argmin(values))
        np.testing.assert_array_equal(theta, pool[k][0])
        assert bias == pool[k][1]


def _pool_game(seed=8, n_models=30):
    X, y, g, ds = _data(seed=seed)
    problem = _problem(ds)
    spec = spec_from_problem(problem)
    rng = np.random.default_rng(seed)
    pool = [(rng.normal(size=3), rng.normal()) for _ in range(n_models)]
    oracle = oracles.PoolOracle(pool)
    R = _pool_rates(spec, pool)
    obj, G = R @ spec.c0 + spec.const0, R @ spec.C.T - spec.kappa
    lp = linprog(obj, A_ub=G.T, b_ub=np.zeros(G.shape[1]), A_eq=np.ones((1, len(obj))), b_eq=[1.0],
                 bounds=(0, None), method="highs")
    assert lp.status == 0
    return problem, spec, oracle, lp.fun


def test_oracle_lagrangian_meets_theorem_2_against_the_best_mixture_of_the_pool():
    problem, spec, oracle, opt = _pool_game()
    m, B, R = spec.n_constraints, spec.constraint_bound(), 5.0
    violations, Ts = [], (100, 400, 1600, 6400)
    for T in Ts:
        res = rateopt.train(problem, method="oracle-lagrangian", oracle=oracle, n_iter=T, lambda_radius=R,
                            record_every=1)
        obj, g = res.solution_values("T-stochastic")
        eps = R * math.sqrt(m) * B * math.sqrt(2.0 / T)  # Lemma 3 with the 2-norm bound, rho = 0
        lam_bar = res.multipliers[:, 1:].mean(axis=0).sum()
        assert obj <= opt + eps
        assert lam_bar < R and g.max() <= eps / (R - lam_bar)
        violations.append(max(g.max(), 1e-12))
    slope = np.polyfit(np.log(Ts), np.log(violations), 1)[0]
    assert slope <= -0.4, violations  # at least the O(1/sqrt(T)) rate


def test_oracle_proxy_meets_theorem_6_against_the_best_mixture_of_the_pool():
    problem, spec, oracle, opt = _pool_game(seed=9)
    m, B = spec.n_constraints, spec.constraint_bound()
    for T in (200, 1600):
        res = rateopt.train(problem, method="oracle-proxy", oracle=oracle, n_iter=T, record_every=1)
        obj, g = res.solution_values("T-stochastic", weighting="lambda")
        eps_lam = 2 * B * math.sqrt((m + 1) * math.log(m + 1) / T)  # Lemma 7, rho = 0
        lam1 = res.multipliers[:, 0].mean()
        assert obj <= opt + eps_lam / lam1
        assert g.max() <= eps_lam / lam1
        # The m-stochastic shrink keeps at most m + 1 models and is feasible when a mixture of the iterates is.
        if res.feasibility("m-stochastic").achievable_violation <= 0:
            assert res.feasibility("m-stochastic").feasible


def test_oracle_games_beat_or_match_gradient_training_with_an_exact_threshold_oracle():
    X, y, g, ds = _data(2000, seed=10)
    problem = _problem(ds, slack=0.03)
    grad = rateopt.train(problem, n_iter=1000)
    exact = rateopt.train(problem, method="oracle-proxy", n_iter=300,
                          oracle=oracles.ThresholdOracle([1.0, 0.5, 0.0], group_columns=[2]))
    (e_obj, e_g), (g_obj, g_g) = exact.solution_values(), grad.solution_values()
    assert e_g.max() <= 1e-9
    assert e_obj <= g_obj + 1e-3


def test_oracle_validation():
    X, y, g, ds = _data(100)
    problem = _problem(ds)
    with pytest.raises(ValueError, match="needs an oracle"):
        rateopt.train(problem, method="oracle-proxy", n_iter=5)
    with pytest.raises(ValueError, match="oracle must be"):
        rateopt.train(problem, method="oracle-proxy", n_iter=5, oracle="pool")
    with pytest.raises(ValueError, match="2 weights"):
        rateopt.train(problem, method="oracle-lagrangian", n_iter=5, oracle=oracles.PoolOracle([(np.ones(2), 0.0)]))
    with pytest.raises(ValueError, match="at least one"):
        oracles.PoolOracle([])
    with pytest.raises(ValueError, match="non-finite"):
        oracles.PoolOracle([(np.array([np.nan, 0, 0]), 0.0)])
    with pytest.raises(ValueError, match="must be 0 on the group_columns"):
        oracles.ThresholdOracle([1.0, 0.0, 2.0], group_columns=[2])
    with pytest.raises(ValueError, match="distinct indices"):
        oracles.ThresholdOracle([1.0, 0.0, 0.0], group_columns=[5])
    auc = rateopt.Problem(constraints=rateopt.goals.roc_auc_floor(0.7, L=4).bind(ds))
    with pytest.raises(ValueError, match="ROC-AUC"):
        rateopt.train(auc, method="oracle-proxy", n_iter=5, oracle=oracles.ThresholdOracle([1.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="not one-hot"):
        rateopt.train(problem, method="oracle-proxy", n_iter=5,
                      oracle=oracles.ThresholdOracle([0.0, 0.0, 0.0], group_columns=[0]))


def test_a_result_of_an_oracle_game_saves_and_loads(tmp_path):
    X, y, g, ds = _data(300)
    res = rateopt.train(_problem(ds, slack=0.2), method="oracle-proxy", n_iter=20,
                        oracle=oracles.ThresholdOracle([1.0, 0.5, 0.0], group_columns=[2]))
    res.save(tmp_path / "r.npz")
    back = rateopt.load(tmp_path / "r.npz")
    assert back.settings["oracle"].startswith("ThresholdOracle")
    np.testing.assert_array_equal(back.solution("m-stochastic").predict_proba(X),
                                  res.solution("m-stochastic").predict_proba(X))


# --------------------------------------------------------------------------- the estimator oracle


def _nonlinear(n=1500, seed=11):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g = rng.integers(0, 2, n)
    X[:, 2] = g
    y = (X[:, 0] ** 2 + 0.5 * X[:, 1] + 0.8 * g + rng.normal(scale=0.5, size=n) > 1.5).astype(int)
    return X, y, g, rateopt.Dataset(X, y, groups={"g": g})


def test_decision_rates_are_the_kernels_rates_for_a_linear_estimator():
    from rateopt._training._spec import decision_rates
    from sklearn.linear_model import LogisticRegression

    X, y, g, ds = _nonlinear(500)
    spec = spec_from_problem(_problem(ds))
    lr = LogisticRegression().fit(X, y)
    kernel = kernel_pass(spec, lr.coef_[0], float(lr.intercept_[0]), np.zeros(spec.n_atoms)).rates
    np.testing.assert_allclose(decision_rates(spec, lr), kernel, rtol=0, atol=1e-15)


def test_the_estimator_oracle_reduction_is_exact_for_a_model_that_fits_every_row():
    """A fully grown tree fits any labeling of distinct rows, so on the weighted problem it reaches the
    sample's lower bound sum_j min(u_j, 0) (positive exactly where u_j < 0)."""
    from sklearn.tree import DecisionTreeClassifier

    X, y, g, ds = _nonlinear(400)
    spec = spec_from_problem(_problem(ds))
    best = oracles.EstimatorOracle(DecisionTreeClassifier(random_state=0)).bind(spec, _settings())
    rng = np.random.default_rng(12)
    from rateopt._training._spec import decision_rates

    for _ in range(5):
        coef = rng.normal(size=spec.n_atoms)
        u = np.concatenate(oracles.net_coefficients(spec, coef))
        model = best(coef)
        assert float(coef @ decision_rates(spec, model)) == pytest.approx(np.minimum(u, 0).sum(), abs=1e-12)


def test_boosted_trees_under_equal_opportunity_through_the_estimator():
    from sklearn.tree import DecisionTreeClassifier

    X, y, g, ds = _nonlinear()
    est = rateopt.RateConstrainedClassifier(goals=[rateopt.goals.equal_opportunity("g", slack=0.03)],
                                            estimator=DecisionTreeClassifier(max_depth=4, random_state=0), n_iter=40)
    est.fit(X, y, groups={"g": g})
    assert est.result_.method == "oracle-proxy"
    clf = est.classifier_
    assert isinstance(clf, rateopt.EstimatorMixture) and clf.n_models <= 5  # m + 1 = 5 at most
    # The expected decisions, counted: equal opportunity holds within the slack, and the error beats the
    # best linear model under the same goal on this quadratic boundary.
    p = est.predict_proba(X)[:, 1]
    tpr = [p[(g == v) & (y == 1)].mean() for v in (0, 1)]
    overall = p[y == 1].mean()
    assert all(abs(t - overall) <= 0.03 + 1e-9 for t in tpr)
    err = np.mean(np.abs(p - y))
    assert err == pytest.approx(est.result_.solution_values("m-stochastic")[0], abs=1e-12)
    linear = rateopt.RateConstrainedClassifier(goals=[rateopt.goals.equal_opportunity("g", slack=0.03)],
                                               n_iter=1000).fit(X, y, groups={"g": g})
    assert err < np.mean(np.abs(linear.predict_proba(X)[:, 1] - y)) - 0.05
    # Draws depend on the row only: a row predicts the same alone or in the whole batch.
    whole = est.predict(X)
    np.testing.assert_array_equal([est.predict(X[i:i + 1])[0] for i in range(20)], whole[:20])
    with pytest.raises(rateopt.exceptions.RateoptError, match="pickle"):
        clf.save("unused.npz")
    with pytest.raises(rateopt.exceptions.RateoptError, match="pickle"):
        est.result_.save("unused.npz")


def test_estimator_oracle_validation_and_the_ignored_weights_warning():
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.neighbors import KNeighborsClassifier

    with pytest.raises(TypeError, match="sample_weight"):
        oracles.EstimatorOracle(KNeighborsClassifier())
    with pytest.raises(TypeError, match="scikit-learn classifier"):
        oracles.EstimatorOracle(object())

    class IgnoresWeights(ClassifierMixin, BaseEstimator):
        """Predicts the unweighted majority label: the weights are silently dropped."""

        def fit(self, X, y, sample_weight=None):
            self.label = int(np.mean(y) >= 0.5)
            self.n_features_in_ = X.shape[1]
            return self

        def predict(self, X):
            return np.full(X.shape[0], self.label)

        def get_params(self, deep=True):
            return {}

        def set_params(self, **params):
            return self

    X, y, g, ds = _nonlinear(300)
    spec = spec_from_problem(rateopt.Problem(objective=rateopt.error_rate(ds.context())))
    best = oracles.EstimatorOracle(IgnoresWeights()).bind(spec, _settings())
    # Most rows are negatives (u > 0: predicting them positive costs), a few positives with huge weight:
    # the weighted optimum predicts positives, the unweighted majority predicts nothing positive.
    coef = np.zeros(spec.n_atoms)
    u_rows = np.concatenate(oracles.net_coefficients(spec, spec.c0))
    assert np.any(u_rows < 0) and np.any(u_rows > 0)
    with pytest.warns(UserWarning, match="ignore sample_weight"):
        best(spec.c0 * np.where(spec.c0 < 0, 50.0, 1.0) + coef)


@pytest.mark.parametrize("kind", ["h_mean", "q_mean"])
def test_three_player_oracle_approaches_the_best_mixture_of_the_pool(kind):
    """Seed 003 Algorithm 1 with an exact (pool) oracle: psi of the uniform mixture's rates approaches
    min_q psi(R_pool^T q), computed here by a convex solve over the pool's mixtures (Theorem 1's rate,
    for a Lipschitz psi: the H-mean and the Q-mean; the pool's best mixture beats its best model)."""
    from rateopt import metrics
    from scipy.optimize import minimize_scalar
    from scipy.spatial import ConvexHull, Delaunay

    rng = np.random.default_rng(13)
    n = 1500
    X = rng.normal(size=(n, 3))
    g = rng.integers(0, 2, n)
    X[:, 2] = g
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.8 * g + rng.normal(size=n) > 1.2).astype(int)
    ds = rateopt.Dataset(X, y, groups={"g": g})
    psi = getattr(metrics, kind)(ds.context())
    problem = rateopt.Problem(objective=psi)
    spec = spec_from_problem(problem)
    pool = [(np.array([1.0, 0.5, 0.8]) * a, b) for a in (0.5, 1, 2) for b in np.linspace(-4, 4, 9)]
    pool += [(rng.normal(size=3), rng.normal()) for _ in range(10)]
    oracle = oracles.PoolOracle(pool)
    rows = problem.compiled.metric
    Z = rows.Z @ _pool_rates(spec, pool).T + rows.z0[:, None]
    k = Z.shape[1]
    # psi has two coordinates, so the pool's mixtures reach exactly the polygon conv(columns of Z); psi is
    # convex with its minimum over the box at a corner no mixture reaches (perfect rates), so the optimum lies
    # on the polygon's boundary: a bounded 1-D convex minimization per hull edge.
    hull = ConvexHull(Z.T)
    assert np.all(Delaunay(Z.T).find_simplex(np.array([[1.0, 1.0], [0.0, 0.0]])) < 0)  # outside the polygon
    best = min(minimize_scalar(lambda t: psi.value((1 - t) * Z[:, i] + t * Z[:, j]), bounds=(0, 1),
                               method="bounded", options={"xatol": 1e-12}).fun for i, j in hull.simplices)
    assert best < min(psi.value(Z[:, i]) for i in range(k)) - 1e-3  # mixing is needed
    Ts, gaps = (100, 400, 1600), []
    for T in Ts:
        res = rateopt.train(problem, method="three-player-oracle", oracle=oracle, n_iter=T, record_every=1)
        assert res.method == "three-player-oracle"
        gap = res.solution_objective("T-stochastic") - best
        assert gap >= -1e-9  # nothing beats the optimum over the pool's mixtures
        gaps.append(max(gap, 1e-12))
    assert np.polyfit(np.log(Ts), np.log(gaps), 1)[0] <= -0.4, gaps
    assert gaps[-1] <= 1e-4


# --------------------------------------------------------------------------- the hinge oracle


def test_the_hinge_oracle_minimizes_the_regularized_net_hinge_proxy():
    X, y, g, ds = _data(400, seed=14)
    spec = spec_from_problem(_problem(ds))
    lam, m = 1e-3, 1.0
    best = oracles.HingeOracle(l2=lam, tol=1e-10).bind(spec, _settings())
    rng = np.random.default_rng(15)
    coef = rng.normal(size=spec.n_atoms)
    u = np.concatenate(oracles.net_coefficients(spec, coef))

    def F(theta, b):  # the net-hinge proxy (without its constant) plus the L2 term on (theta, b)
        s = X @ theta + b
        return (np.sum(np.maximum(u, 0) * np.maximum(0, m + s) + np.maximum(-u, 0) * np.maximum(0, m - s))
                + 0.5 * lam * (theta @ theta + b * b))

    theta, b = best(coef)
    f0 = F(theta, b)
    for _ in range(300):  # no nearby point does better (convex: local = global)
        d = rng.normal(size=4) * rng.choice([1e-4, 1e-2, 1e-1])
        assert F(theta + d[:3], b + d[3]) >= f0 - 1e-9
    # The 0-1 combination it implies is what the kernel measures at that model.
    rates = kernel_pass(spec, theta, b, np.zeros(spec.n_atoms)).rates
    assert float(u @ (X @ theta + b >= 0)) == pytest.approx(float(coef @ rates), abs=1e-12)


def test_oracle_proxy_with_the_hinge_oracle_is_feasible_and_no_worse_than_gradient_training():
    X, y, g, ds = _data(3000, seed=16)
    problem = _problem(ds, slack=0.03)
    exact = rateopt.train(problem, method="oracle-proxy", oracle=oracles.HingeOracle(), n_iter=100)
    # gradient training of the same length: since issue 36's window averages joined the candidates, a
    # 1000-iteration gradient run reaches 0.2370 here, 0.0024 below the hinge oracle's 0.2394 (its best
    # responses minimize the hinge proxy, not the 0-1 error; 300 oracle iterations give 0.2392)
    grad = rateopt.train(problem, n_iter=100)
    (e_obj, e_g), (g_obj, g_g) = exact.solution_values(), grad.solution_values()
    assert e_g.max() <= 1e-9 and g_g.max() <= 1e-9
    assert e_obj <= g_obj + 2e-3
    with pytest.raises(ValueError, match="l2"):
        oracles.HingeOracle(l2=0.0)


def test_the_estimator_oracle_passes_weights_averaging_one():
    """Regression: weights |u| (about 1/n each) made LogisticRegression n times more regularized. With the
    error objective alone every |u_j| is equal, so the first oracle fit is plain logistic regression."""
    from sklearn.linear_model import LogisticRegression

    X, y, g, ds = _nonlinear(600)
    spec = spec_from_problem(rateopt.Problem(objective=rateopt.error_rate(ds.context())))
    model = oracles.EstimatorOracle(LogisticRegression()).bind(spec, _settings())(spec.c0)
    plain = LogisticRegression().fit(X, y)
    np.testing.assert_allclose(model.coef_, plain.coef_, rtol=1e-6)
    np.testing.assert_allclose(model.intercept_, plain.intercept_, rtol=1e-6)


# --------------------------------------------------------------------------- the plug-in oracle (counterfactuals)


def _cells(n=400, seed=20, label_feature=True):
    """Features [x0, x1, g, y]: the group one-hot column 2 and (for eta = the labels) the label as column 3."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    g = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.8 * g + rng.normal(size=n) > 0.5).astype(int)
    X[:, 2], X[:, 3] = g, y if label_feature else 0.0
    return X, y, g, rateopt.Dataset(X, y, weights=rng.uniform(0.5, 1.5, n), groups={"g": g})


def _labels_as_eta(X):
    return X[:, 3]


def _counterfactual_coefficients(spec, coef, w):
    """``u^(1), u^(0)`` of a one-dataset spec: each row's coefficient ``sum_a coef_a w_j / W(S_a)`` over the atoms
    it would belong to with its label set to 1 (0), from the counterfactual memberships and real normalizers."""
    from rateopt._training._counterfactual import counterfactual_memberships

    [blk], [m] = spec.blocks, counterfactual_memberships(spec)
    per_atom = np.asarray(coef, dtype=np.float64)[blk.atom_ids] * m.inverse_normalizers()
    return tuple(w * (M.astype(np.float64) @ per_atom) for M in (m.M1, m.M0))


def test_counterfactual_coefficients_match_the_rates_written_out_by_hand():
    """u^(1), u^(0) of 0.7 err - 1.3 tpr(g=1) + 0.4 ppr(g=1) + 0.9 fpr(g=0), from the rates' definitions: a row
    relabeled 1 (0) enters the label-1 (label-0) subsets, with the normalizers W of the real labels."""
    from rateopt._training._counterfactual import counterfactual_memberships

    X, y, g, ds = _cells(200)
    w = ds.weights
    c = ds.context()
    g1, g0 = c.subset(group="g", value=1), c.subset(group="g", value=0)
    objective = (0.7 * rateopt.error_rate(c) - 1.3 * rateopt.true_positive_rate(g1)
                 + 0.4 * rateopt.positive_prediction_rate(g1) + 0.9 * rateopt.false_positive_rate(g0))
    spec = spec_from_problem(rateopt.Problem(objective=objective))
    W, W1, W11, W00 = w.sum(), w[g == 1].sum(), w[(g == 1) & (y == 1)].sum(), w[(g == 0) & (y == 0)].sum()
    u1 = -0.7 * w / W + (g == 1) * (-1.3 * w / W11 + 0.4 * w / W1)
    u0 = 0.7 * w / W + (g == 1) * 0.4 * w / W1 + (g == 0) * 0.9 * w / W00
    got1, got0 = _counterfactual_coefficients(spec, spec.c0, w)
    np.testing.assert_allclose(got1, u1, rtol=1e-13, atol=1e-17)
    np.testing.assert_allclose(got0, u0, rtol=1e-13, atol=1e-17)
    # On each row's real label its memberships are the real atom table's.
    [m] = counterfactual_memberships(spec)
    t = spec.blocks[0].atoms
    real = sp.csr_matrix((np.ones(len(t.indices)), t.indices, t.indptr), shape=m.M1.shape).toarray() != 0
    np.testing.assert_array_equal(np.where((y == 1)[:, None], m.M1, m.M0), real)


def test_the_plug_in_rule_minimizes_the_expected_cost_over_every_decision_vector():
    """Brute force over all 2^n decision vectors of sum_j (eta_j u1_j + (1 - eta_j) u0_j) d_j."""
    X, y, g, ds = _cells(12, seed=21)
    assert len({(a, b) for a, b in zip(g, y)}) == 4
    spec = spec_from_problem(_problem(ds, slack=0.05))
    rng = np.random.default_rng(22)
    eta = rng.uniform(size=12)
    X[:, 3] = eta  # eta_hat reads it back: any function of x will do
    best = oracles.PlugInOracle(_labels_as_eta, group_columns=[2]).bind(spec, _settings())
    D = (np.arange(2**12)[:, None] >> np.arange(12)) & 1
    for _ in range(10):
        coef = rng.normal(size=spec.n_atoms)
        u1, u0 = _counterfactual_coefficients(spec, coef, ds.weights)
        cost = eta * u1 + (1 - eta) * u0
        d = best(coef).predict(X)
        assert float(cost @ d) == pytest.approx(float(np.min(D @ cost)), abs=1e-14)


def test_with_the_labels_as_eta_the_plug_in_rule_is_the_sample_bayes_rule():
    X, y, g, ds = _cells(500, seed=23)
    spec = spec_from_problem(_problem(ds))
    best = oracles.PlugInOracle(_labels_as_eta, group_columns=[2]).bind(spec, _settings())
    rng = np.random.default_rng(24)
    for _ in range(10):
        coef = rng.normal(size=spec.n_atoms)
        u = oracles.net_coefficients(spec, coef)[0]
        np.testing.assert_array_equal(best(coef).predict(X), (u < 0).astype(int))


def test_the_plug_in_rule_is_a_per_group_threshold_on_eta():
    X, y, g, ds = _cells(300, seed=25)
    spec = spec_from_problem(_problem(ds))
    best = oracles.PlugInOracle(_labels_as_eta, group_columns=[2]).bind(spec, _settings())
    grid = np.linspace(0, 1, 101)
    rng = np.random.default_rng(26)
    for _ in range(10):
        rule = best(rng.normal(size=spec.n_atoms))
        for k, (t, side) in enumerate(rule.thresholds()):
            Xg = np.zeros((grid.size, 4))
            Xg[:, 2], Xg[:, 3] = k, grid
            expect = {"above": grid > t, "below": grid < t, "all": np.ones(grid.size, bool),
                      "none": np.zeros(grid.size, bool)}[side]
            near = np.abs(grid - t) < 1e-9 if side in ("above", "below") else np.zeros(grid.size, bool)
            np.testing.assert_array_equal(rule.predict(Xg)[~near], expect[~near].astype(int))


def _cell_functions_lp(problem, X, g, y):
    """Every rule (g, y) -> {0, 1} (16 of them): atom rates, and the best mixture by LP (the ground truth
    against which eta = the labels makes the plug-in oracle exact)."""
    cp = problem.compiled
    rates = []
    for bits in range(16):
        d = ((bits >> (2 * g + y)) & 1).astype(np.float64)
        rates.append(cp.atom_rates({"train": d}))
    return np.array(rates)


def test_the_plug_in_oracle_in_the_oracle_lagrangian_meets_theorem_2():
    X, y, g, ds = _cells(1000, seed=27)
    problem = _problem(ds, slack=0.02)
    spec = spec_from_problem(problem)
    Rr = _cell_functions_lp(problem, X, g, y)
    obj, G = Rr @ spec.c0 + spec.const0, Rr @ spec.C.T - spec.kappa
    lp = linprog(obj, A_ub=G.T, b_ub=np.zeros(G.shape[1]), A_eq=np.ones((1, 16)), b_eq=[1.0], bounds=(0, None),
                 method="highs")
    feasible = G.max(axis=1) <= 0
    assert lp.status == 0 and lp.fun < obj[feasible].min() - 1e-3  # the best feasible rule needs mixing
    m, B, R, T = spec.n_constraints, spec.constraint_bound(), 5.0, 800
    oracle = oracles.PlugInOracle(_labels_as_eta, group_columns=[2])
    res = rateopt.train(problem, method="oracle-lagrangian", oracle=oracle, n_iter=T, lambda_radius=R,
                        record_every=1)
    o, gv = res.solution_values("T-stochastic")
    eps = R * math.sqrt(m) * B * math.sqrt(2.0 / T)
    lam_bar = res.multipliers[:, 1:].mean(axis=0).sum()
    assert o <= lp.fun + eps and o >= lp.fun - 1e-9 - eps
    assert lam_bar < R and gv.max() <= eps / (R - lam_bar)
    clf = res.solution("m-stochastic")
    assert isinstance(clf, rateopt.EstimatorMixture)
    assert all(isinstance(e, oracles.PlugInRule) for e in clf.estimators_)
    # The mixture's expected decisions, counted on the rows, give the reported values.
    p = clf.predict_proba(X)[:, 1]
    np.testing.assert_allclose(problem.compiled.atom_rates({"train": p}) @ spec.c0 + spec.const0,
                               res.solution_values("m-stochastic")[0], atol=1e-12)


def test_three_player_oracle_with_the_plug_in_oracle_approaches_the_best_mixture():
    """Seed 003 Algorithm 1 with the plug-in oracle (COCO) on the sum of group KLDs under an error bound:
    with eta = the labels the oracle is exact over the 16 rules (g, y) -> {0, 1}; the best mixture of them is
    a convex program (SLSQP here)."""
    from rateopt import metrics
    from scipy.optimize import minimize

    X, y, g, ds = _cells(1000, seed=28)
    c = ds.context()
    p = float(y.mean())
    problem = rateopt.Problem(objective=metrics.kl_divergence(c.subset(group="g", value=0), target=p)
                              + metrics.kl_divergence(c.subset(group="g", value=1), target=p),
                              constraints=[rateopt.error_rate(c) <= 0.05])
    spec = spec_from_problem(problem)
    Rr = _cell_functions_lp(problem, X, g, y)
    rows = problem.compiled.metric
    Z, Gc = rows.Z @ Rr.T + rows.z0[:, None], spec.C @ Rr.T - spec.kappa[:, None]
    psi = rows.metric
    cons = [{"type": "eq", "fun": lambda q: q.sum() - 1}, {"type": "ineq", "fun": lambda q: -(Gc @ q)}]
    best = min(minimize(lambda q: psi.value(Z @ q), x0, method="SLSQP", bounds=[(0, 1)] * 16, constraints=cons,
                        options={"ftol": 1e-14, "maxiter": 1000}).fun for x0 in [np.full(16, 1 / 16)])
    assert best < min(psi.value(Z[:, i]) for i in range(16) if np.all(Gc[:, i] <= 0)) - 1e-3  # mixing is needed
    oracle = oracles.PlugInOracle(_labels_as_eta, group_columns=[2])
    Ts, violations = (250, 1000, 4000), []
    for T in Ts:
        res = rateopt.train(problem, method="three-player-oracle", oracle=oracle, n_iter=T, record_every=1,
                            eta_lambda=0.1)
        o, gv = res.solution_values("T-stochastic")
        violations.append(max(gv.max(), 1e-12))
    assert np.polyfit(np.log(Ts), np.log(violations), 1)[0] <= -0.4, violations  # at least O(1/sqrt(T))
    assert violations[-1] <= 0.005 and abs(o - best) <= 0.005


def test_plug_in_oracle_validation():
    from rateopt._training._counterfactual import counterfactual_memberships
    from rateopt.exceptions import RateoptError

    X, y, g, ds = _cells(100, seed=29)
    spec = spec_from_problem(_problem(ds))
    with pytest.raises(TypeError, match="eta_hat"):
        oracles.PlugInOracle(0.5)
    with pytest.raises(ValueError, match="distinct indices"):
        oracles.PlugInOracle(_labels_as_eta, group_columns=[2, 2])
    with pytest.raises(ValueError, match="outside"):
        oracles.PlugInOracle(lambda X: X[:, 0], group_columns=[2]).bind(spec, _settings())
    with pytest.raises(ValueError, match="shape"):
        oracles.PlugInOracle(lambda X: np.ones(3), group_columns=[2]).bind(spec, _settings())
    # Without group columns the atoms (per group) are not a function of the label alone.
    with pytest.raises(ValueError, match="differs between rows"):
        oracles.PlugInOracle(_labels_as_eta).bind(spec, _settings())
    # A mask computed from the labels: fixed under relabeling, so not a function of (group, label).
    c = ds.context()
    masked = rateopt.Problem(objective=rateopt.positive_prediction_rate(c.subset(ds.y == 1)))
    with pytest.raises(ValueError, match="positive\\(\\)/negative\\(\\)"):
        oracles.PlugInOracle(_labels_as_eta, group_columns=[2]).bind(spec_from_problem(masked), _settings())
    # ... and merged with positive(), it has no single counterfactual at all.
    both = rateopt.Problem(objective=rateopt.positive_prediction_rate(c.subset(ds.y == 1))
                           + rateopt.true_positive_rate(c))
    with pytest.raises(RateoptError, match="merges the subsets"):
        counterfactual_memberships(spec_from_problem(both))
    other = rateopt.Dataset(X, y, groups={"g": g}, name="other")
    two = rateopt.Problem(objective=rateopt.error_rate(c) + rateopt.error_rate(other.context()))
    with pytest.raises(ValueError, match="2 datasets"):
        oracles.PlugInOracle(_labels_as_eta, group_columns=[2]).bind(spec_from_problem(two), _settings())
    import dataclasses

    with pytest.raises(RateoptError, match="atom contexts"):
        counterfactual_memberships(dataclasses.replace(spec, atom_contexts=()))
    rule = oracles.PlugInOracle(_labels_as_eta, group_columns=[2]).bind(spec, _settings())(spec.c0)
    with pytest.raises(ValueError, match="features"):
        rule.predict(X[:, :3])


def test_a_fitted_classifier_as_eta_hat_is_its_class_1_probability():
    from sklearn.linear_model import LogisticRegression

    X, y, g, ds = _cells(400, seed=30, label_feature=False)
    spec = spec_from_problem(_problem(ds))
    lr = LogisticRegression().fit(X[:, :2], 1 - y)  # classes_ [0, 1]; its class 1 is our negative label
    coef = np.random.default_rng(31).normal(size=spec.n_atoms)
    Xs = X.copy()
    Xs[:, 3] = lr.predict_proba(X[:, :2])[:, 1]

    class OnTwoColumns:
        classes_ = np.array([1, 0])  # the column of class 1 is the first one here

        def predict_proba(self, X):
            return lr.predict_proba(X[:, :2])[:, ::-1]

    via_fit = oracles.PlugInOracle(OnTwoColumns(), group_columns=[2]).bind(spec, _settings())(coef)
    via_callable = oracles.PlugInOracle(_labels_as_eta, group_columns=[2]).bind(spec, _settings())(coef)
    np.testing.assert_array_equal(via_fit.predict(X), via_callable.predict(Xs))


def test_the_estimator_oracle_refuses_models_that_are_not_classifiers():
    from sklearn.cluster import KMeans
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge

    class DuckRegressor:  # no scikit-learn tags, no predict_proba or decision_function
        def fit(self, X, y, sample_weight=None):
            return self

        def predict(self, X):
            return np.zeros(X.shape[0])

    for model in (LinearRegression(), Ridge(), KMeans(n_clusters=2), DuckRegressor()):
        with pytest.raises(TypeError, match=rf"^estimator must be a scikit-learn classifier, got "
                                            rf"{type(model).__name__}$"):
            oracles.EstimatorOracle(model)
    oracles.EstimatorOracle(LogisticRegression())  # a classifier by its tags

    class DuckClassifier(DuckRegressor):
        def decision_function(self, X):
            return np.zeros(X.shape[0])

    oracles.EstimatorOracle(DuckClassifier())
    X, y, g, ds = _nonlinear(200)
    with pytest.raises(TypeError, match=r"^estimator must be a scikit-learn classifier, got LinearRegression$"):
        rateopt.RateConstrainedClassifier(estimator=LinearRegression(), n_iter=3).fit(X, y)


# --------------------------------------------------------------------------- defaults that converge


def test_the_default_hinge_oracle_converges_on_700_rows_to_the_qp_optimum(monkeypatch):
    X, y, g, ds = _data(700, seed=21)
    spec = spec_from_problem(_problem(ds, slack=0.02))
    solves = []
    real = oracles.core.sdca_two_sided_hinge

    def recording(*args, **kwargs):
        res = real(*args, **kwargs)
        solves.append((args, kwargs, res))
        return res

    monkeypatch.setattr(oracles.core, "sdca_two_sided_hinge", recording)
    best = oracles.HingeOracle().bind(spec, _settings())  # the model's l2 is 0: the oracle's default l2
    rng = np.random.default_rng(22)
    for coef in (spec.c0, spec.c0 + rng.uniform(0, 2, spec.n_constraints) @ spec.C):
        theta, b = best(coef)
        (Xs, A, B), kw, res = solves[-1]
        assert kw["lam"] == pytest.approx(1 / 700)  # 1/n
        assert res.converged and res.n_epochs < 100_000 // 10
        # The same objective, solved by HiGHS' QP: the intercept is a regularized constant feature of 1.
        Xa = np.column_stack([X, np.ones(len(y))])
        w = highs_hinge_qp(Xa, A, B, 1 / 700, 1.0)

        def P(wv):
            s = Xa @ wv
            return (np.sum(A * np.maximum(0, 1 + s) + B * np.maximum(0, 1 - s)) / len(y)
                    + 0.5 / 700 * (wv @ wv))

        ours = np.r_[theta, b]
        assert P(ours) <= P(w) + 1e-6 * max(1.0, P(w)) + 1e-9  # within the duality-gap tolerance of the optimum
        np.testing.assert_allclose(ours, w, atol=2e-2 * max(1.0, np.abs(w).max()))


def test_oracle_lagrangian_derives_a_radius_that_reaches_feasibility():
    rng = np.random.default_rng(0)
    n, T = 700, 1000
    X = rng.normal(size=(n, 5))
    g = rng.integers(0, 2, n)
    X[:, 2] = g
    y = (X[:, 0] + 0.5 * X[:, 1] + 1.5 * g + rng.normal(size=n) * 0.5 > 0.8).astype(int)
    ds = rateopt.Dataset(X, y, groups={"g": g})
    problem = rateopt.Problem(objective=rateopt.error_rate(ds.context()),
                              constraints=rateopt.goals.demographic_parity("g", slack=0.01).bind(ds))
    oracle = oracles.ThresholdOracle([1.0, 0.5, 0.0, 0.0, 0.0], group_columns=[2])  # exact over its class
    res = rateopt.train(problem, method="oracle-lagrangian", oracle=oracle, n_iter=T, record_every=1)
    # R = B0 / gamma: the error rate's range is 1, and a constant classifier meets each parity constraint
    # (every group rate equal to the overall one) with margin 0.01, the slack.
    assert res.settings["lambda_radius"] == pytest.approx(1 / 0.01, rel=1e-9)
    new = res.feasibility("T-stochastic").max_violation
    # The former default: no cap, the step of R = 1 (Lemma 3 with B_2 = sqrt(m) B).
    players = spec_from_problem(problem).for_players()
    old_eta = 1.0 / (math.sqrt(players.n_constraints) * players.constraint_bound() * math.sqrt(2 * T))
    old = rateopt.train(problem, method="oracle-lagrangian", oracle=oracle, n_iter=T, record_every=1,
                        eta_lambda=old_eta)  # the cap of 100 is never reached at this step
    assert np.abs(old.multipliers[:, 1:]).sum(axis=1).max() < 10
    assert old.feasibility("T-stochastic").max_violation > 0.03  # what the issue saw: stuck infeasible
    assert new <= 1e-3
    assert res.feasibility("m-stochastic").feasible
