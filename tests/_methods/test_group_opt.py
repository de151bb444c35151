"""GroupOpt (seed 002, Algorithm 1) and the minimax Hedge game (``rateopt.group_opt``).

Seed 002 has no experiments: the checks are its theorem-level statements
(methods_spec §B.8) against independent ground truth: the constants table,
Theorem 4.3 against a dense sampling (or an LP) of the convex hull of a finite
vertex set with oracle and assessor errors injected up to tau, Lemma 8.1 at
every step against a QP for the distance to the hull, and end to end against
the LP over every per-group threshold pair.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog, minimize

import rateopt
from rateopt._methods import _group_opt as G
from rateopt import oracles


@pytest.mark.parametrize("K, eps, q, pts, size, tau, T", [
    (1, 0.5, 0.1, 11, 11, 0.01, 461),
    (1, 0.1, 0.02, 51, 51, 4e-4, 19561),
    (2, 0.5, 0.0707, 15, 225, 7.07e-3, 1060),
    (2, 0.1, 0.0141, 71, 5041, 2.83e-4, 42586),
    (3, 0.5, 0.0577, 18, 5832, 5.77e-3, 1712),
    (4, 0.5, 0.05, 21, 194481, 5e-3, 2397),
])
def test_the_constants_reproduce_the_spec_table(K, eps, q, pts, size, tau, T):
    c = G.group_opt_constants(K, eps)
    assert c.q == pytest.approx(q, rel=5e-3) and c.tau == pytest.approx(tau, rel=5e-3)  # the table's 3 digits
    assert (c.points_per_dim, c.grid_size, c.T) == (pts, size, T)
    assert c.worst_case_calls == size * T


class _Vertices:
    """A linear optimizer over conv(V): exact, or tau-approximate with the worst admissible vertex, and an
    assessor off by up to tau (what the algorithm sees differs from the true loss vector)."""

    def __init__(self, V, tau=0.0, assess_error=0.0):
        self.V, self.K, self.tau, self.err = V, V.shape[1], tau, assess_error
        self.vectors, self.true, self.weights, self.calls = [], [], [], 0

    def respond(self, w):
        self.calls += 1
        self.weights.append(np.array(w, dtype=np.float64))
        vals = self.V @ w
        ok = np.flatnonzero(vals <= vals.min() + self.tau * np.linalg.norm(w) + 1e-15)
        k = ok[np.argmax(vals[ok])]  # adversarial within the allowance
        true = self.V[k]
        bump = np.full(self.K, self.err / math.sqrt(self.K)) * (1 if self.calls % 2 else -1)
        self.true.append(true)
        self.vectors.append(true + bump)
        return len(self.vectors) - 1

    def losses(self, counts):
        return (counts / counts.sum()) @ np.array(self.true)


def _hull_min(f, V, n=200_000, seed=0):
    """min f over conv(V) (K = 2), by dense sampling: Dirichlet mixtures and every edge."""
    rng = np.random.default_rng(seed)
    pts = [rng.dirichlet(np.full(V.shape[0], 0.3), size=n) @ V]
    s = np.linspace(0, 1, 401)[:, None]
    for i in range(V.shape[0]):
        for j in range(i + 1, V.shape[0]):
            pts.append((1 - s) * V[i] + s * V[j])
    return float(np.min(f(np.vstack(pts))))


def _max(L):
    return L.max(axis=1)


def _sqrt_sum(L):
    return np.sqrt(L + 0.1).sum(axis=1)


def _bump(L):
    return np.linalg.norm(L - np.array([0.55, 0.35]), axis=1) + 0.1 * np.sin(10 * L[:, 0])


@pytest.mark.parametrize("f, lip, eps", [(_max, 1.0, 0.15), (_sqrt_sum, math.sqrt(2) / (2 * math.sqrt(0.1)), 0.4),
                                         (_bump, 2.0, 0.3)])
@pytest.mark.parametrize("errors", [False, True])
def test_theorem_4_3_on_a_finite_vertex_set(f, lip, eps, errors):
    rng = np.random.default_rng(1)
    V = rng.uniform(0.05, 0.95, size=(9, 2))
    tau = G.group_opt_constants(2, min(1.0, eps / lip)).tau if errors else 0.0
    prob = _Vertices(V, tau=tau, assess_error=tau)
    counts, diag = G._run_group_opt(prob, f, eps=eps, lipschitz=lip, mode="fast")
    got = float(f(prob.losses(counts)[None, :])[0])
    best, worst = _hull_min(f, V), float(np.max(f(V)))
    assert worst > best + eps  # the bound is not met by any vertex
    assert got <= best + eps
    if f is _max:  # exact ground truth by LP: min z s.t. V^T q <= z
        lp = linprog(np.r_[np.zeros(len(V)), 1.0], A_ub=np.c_[V.T, -np.ones(2)], b_ub=np.zeros(2),
                     A_eq=np.r_[np.ones(len(V)), 0.0][None, :], b_eq=[1.0], bounds=[(0, None)] * len(V) + [(None, None)])
        assert got <= lp.fun + eps


def test_paper_mode_meets_theorem_4_3_and_every_monotone_weight_is_nonnegative():
    rng = np.random.default_rng(2)
    V = rng.uniform(0.1, 0.9, size=(6, 2))
    prob = _Vertices(V)
    counts, diag = G._run_group_opt(prob, _max, eps=0.5, mode="paper")
    assert diag["monotone"] is True and diag["distance"] <= 3 * diag["constants"].beta
    assert all(np.all(w >= 0) for w in prob.weights)  # N = 1: the nonnegative optimizer suffices
    assert float(_max(prob.losses(counts)[None, :])[0]) <= _hull_min(_max, V) + 0.5
    # The accepted point comes no later than the grid point nearest the optimum (f-sorted order).
    assert diag["grid_points_tried"] <= diag["constants"].grid_size


def test_lemma_8_1_at_every_step():
    """Algorithm 1's inner loop at a fixed grid point r (N = 0: Frank-Wolfe with step 1/t toward r):
    ||l_t - r||^2 <= min_{conv V} ||l - r||^2 + 4 tau sqrt(K) + K (1 + ln t) / t at every t."""
    rng = np.random.default_rng(3)
    V = rng.uniform(0.3, 0.6, size=(7, 2))
    c = G.group_opt_constants(2, 0.5)
    r = np.round(np.array([0.95, 0.02]) / c.q) * c.q  # a grid point far from the hull
    res = minimize(lambda q: np.sum((q @ V - r) ** 2), np.full(len(V), 1 / len(V)), method="SLSQP",
                   bounds=[(0, 1)] * len(V), constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1}],
                   options={"ftol": 1e-15, "maxiter": 500})
    dmin = float(res.fun)
    assert dmin > (3 * c.beta) ** 2  # so r is run for all T steps and rejected

    def f(L):  # 0 at r only: r is the first grid point tried
        return np.where(np.all(np.abs(L - r) < c.q / 4, axis=1), 0.0, 1.0)

    trace = []
    G._run_group_opt(_Vertices(V), f, eps=0.5, monotone=False, mode="paper", trace=trace)
    steps = [(t, lhat) for rr, t, lhat in trace if np.array_equal(rr, r)]
    assert len(steps) == c.T
    for t, lhat in steps:
        assert np.sum((lhat - r) ** 2) <= dmin + 4 * c.tau * math.sqrt(2) + 2 * (1 + math.log(t)) / t + 1e-9


def test_group_opt_and_hedge_against_the_lp_over_every_threshold_pair():
    rng = np.random.default_rng(4)
    n = 240
    X = rng.normal(size=(n, 3))
    g = rng.integers(0, 2, n)
    X[:, 2] = g
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.8 * g + rng.normal(size=n) > 0.5).astype(int)
    ds = rateopt.Dataset(X, y, groups={"g": g})
    ctx = ds.context()
    losses = [rateopt.error_rate(ctx.subset(group="g", value=v)) for v in (0, 1)]
    direction = np.array([1.0, 0.5, 0.0])
    oracle = oracles.ThresholdOracle(direction, group_columns=[2])
    # Ground truth: every per-group threshold pair's error pair, then the LP min_q max_k.
    s = X @ direction
    errs = []
    for v in (0, 1):
        m = g == v
        u = np.unique(s[m])
        cuts = np.concatenate(([u[0] - 1], 0.5 * (u[:-1] + u[1:]), [u[-1] + 1]))
        errs.append(np.array([np.mean((s[m] >= t) != y[m]) for t in cuts]))
    E = np.array([(a, b) for a in errs[0] for b in errs[1]])
    lp = linprog(np.r_[np.zeros(len(E)), 1.0], A_ub=np.c_[E.T, -np.ones(2)], b_ub=np.zeros(2),
                 A_eq=np.r_[np.ones(len(E)), 0.0][None, :], b_eq=[1.0],
                 bounds=[(0, None)] * len(E) + [(None, None)], method="highs")
    opt = lp.fun
    res = G.group_opt(losses, _max, oracle, eps=0.2)
    assert res.value <= opt + 0.2
    assert len(res.probabilities) <= 3  # K + 1
    # The classifier's own expected errors, counted, are the reported losses.
    p = res.classifier.predict_proba(X)[:, 1]
    np.testing.assert_allclose([np.mean(np.abs(p[g == v] - y[g == v])) for v in (0, 1)], res.losses, atol=1e-12)
    T = 400
    hedge = G.minimax_group_loss(losses, oracle, n_iter=T)
    assert hedge.diagnostics["uniform_max_loss"] <= opt + math.sqrt(math.log(2) / (2 * T)) + 1e-12
    assert hedge.value <= hedge.diagnostics["uniform_max_loss"] + 1e-12 and hedge.value >= opt - 1e-9
    assert len(hedge.probabilities) <= 3


def test_caratheodory_keeps_the_loss_vector():
    rng = np.random.default_rng(5)
    n = 300
    X = rng.normal(size=(n, 3))
    g = rng.integers(0, 3, n)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    ds = rateopt.Dataset(X, y, groups={"g": g})
    ctx = ds.context()
    losses = [rateopt.error_rate(ctx.subset(group="g", value=v)) for v in (0, 1, 2)]
    pool = [(rng.normal(size=3), rng.normal()) for _ in range(30)]
    prob = G._Losses(losses, oracles.PoolOracle(pool))
    counts, _ = G._run_group_opt(prob, _max, eps=0.6)
    V = np.array(prob.vectors)
    idx, p = prob.mixture(counts)
    assert idx.size <= 4
    np.testing.assert_allclose(p @ V[idx], (counts / counts.sum()) @ V, atol=1e-12)


def test_validation():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(50, 2))
    ds = rateopt.Dataset(X, rng.integers(0, 2, 50))
    oracle = oracles.ThresholdOracle([1.0, 0.0])
    ctx = ds.context()
    with pytest.raises(ValueError, match=r"losses\[0\].*\[0, 1\]"):
        G.group_opt([2 * rateopt.error_rate(ctx)], _max, oracle)
    with pytest.raises(ValueError, match="at least one"):
        G.group_opt([], _max, oracle)
    with pytest.raises(ValueError, match="mode"):
        G.group_opt([rateopt.error_rate(ctx)], _max, oracle, mode="quick")
    with pytest.raises(ValueError, match="grid has"):
        G.group_opt([rateopt.error_rate(ctx)] * 4, _max, oracle, eps=0.1)
    with pytest.raises(ValueError, match="n_iter"):
        G.minimax_group_loss([rateopt.error_rate(ctx)], oracle, n_iter=0)
    with pytest.raises(ValueError, match="eps"):
        G.group_opt_constants(2, 0.0)


def _hull_distance(V, r, upward):
    """dist(r, conv V) -- or to its upward closure conv V + R^K_+ -- by SLSQP over the mixture weights."""
    def h(q):
        x = q @ V - r
        return np.sum(np.maximum(x, 0) ** 2) if upward else np.sum(x**2)

    best = minimize(h, np.full(len(V), 1 / len(V)), method="SLSQP", bounds=[(0, 1)] * len(V),
                    constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1}],
                    options={"ftol": 1e-15, "maxiter": 500}).fun  # convex: one start
    return math.sqrt(max(best, 0.0))


def test_fast_and_paper_modes_both_meet_theorem_4_3_and_fast_calls_the_oracle_less():
    f, lip, eps = _max, 1.0, 0.5
    rng = np.random.default_rng(7)
    V = rng.uniform(0.3, 0.95, size=(9, 2))
    best = _hull_min(f, V)
    got, calls = {}, {}
    for mode in ("paper", "fast"):
        prob = _Vertices(V)
        counts, diag = G._run_group_opt(prob, f, eps=eps, lipschitz=lip, mode=mode)
        got[mode] = float(f(prob.losses(counts)[None, :])[0])
        calls[mode] = diag["calls"]
        assert diag["calls"] == prob.calls and not diag["fallback"]
        assert got[mode] <= best + eps, (mode, got[mode], best)
    lp = linprog(np.r_[np.zeros(len(V)), 1.0], A_ub=np.c_[V.T, -np.ones(2)], b_ub=np.zeros(2),
                 A_eq=np.r_[np.ones(len(V)), 0.0][None, :], b_eq=[1.0], bounds=[(0, None)] * len(V) + [(None, None)])
    assert max(got.values()) <= lp.fun + eps  # the LP optimum itself
    assert calls["fast"] * 10 < calls["paper"], calls


@pytest.mark.parametrize("errors", [False, True])
def test_every_fast_mode_decision_is_certified(errors):
    """Speed-ups 1-3: every accepted grid point has a mixture within 3 beta (of r, or of its upward closure
    for a monotone f), and every rejected one -- by a new or a cached certificate -- is truly farther than
    beta / 2 from the achievable set (SLSQP here), also with oracle and assessor errors up to tau."""
    rng = np.random.default_rng(8)
    V = rng.uniform(0.3, 0.95, size=(8, 2))
    eps = 0.3
    c = G.group_opt_constants(2, eps)
    tau = c.tau if errors else 0.0
    for f, monotone in ((_max, True), (_bump, False)):
        prob = _Vertices(V, tau=tau, assess_error=tau)
        decisions = []
        counts, diag = G._run_group_opt(prob, f, eps=eps, mode="fast", decisions=decisions)
        assert diag["monotone"] is monotone
        kinds = [k for k, _, _ in decisions]
        assert kinds[-1] == "accept" and kinds.count("accept") == 1 and "reject" in kinds
        for kind, r, value in decisions[:-1]:
            assert _hull_distance(V, r, monotone) > c.beta / 2 - 1e-9, (r, value)
        r, dist = decisions[-1][1], decisions[-1][2]
        seen = (counts / counts.sum()) @ np.array(prob.vectors)  # what the algorithm measured
        assert np.linalg.norm(np.maximum(seen, monotone * r) - r) == pytest.approx(dist, abs=1e-12)
        assert dist <= 3 * c.beta
    assert diag["rejected_without_calls"] > 0  # the cached certificates spare oracle calls


def test_the_fast_mode_falls_back_to_the_best_cached_mixture_when_no_point_can_be_accepted():
    """Speed-up 4: losses outside [0, 1] (a broken assessor, far beyond tau) leave no grid point within
    3 beta; the paper's algorithm then has nothing to return, the fast mode returns the best cached mixture by f."""
    rng = np.random.default_rng(9)
    V = rng.uniform(1.4, 1.9, size=(6, 1))
    with pytest.raises(RuntimeError, match="accepted no grid point"):
        G._run_group_opt(_Vertices(V), _max, eps=0.5, mode="paper")
    prob = _Vertices(V)
    with pytest.warns(UserWarning, match="best cached mixture"):
        q, diag = G._run_group_opt(prob, _max, eps=0.5, mode="fast")
    assert diag["fallback"] and diag["r"] is None
    S = np.array(prob.vectors)
    assert q.shape == (S.shape[0],) and np.all(q >= 0) and q.sum() == pytest.approx(1.0)
    value = float(_max((q @ S)[None, :])[0])
    assert value <= float(_max(S).min()) + 1e-12  # no single cached model does better
    assert value == pytest.approx(V.min())  # here: the oracle's best vertex, which it returns for w > 0


def test_eq_3_folding_bounds_the_constraint_at_the_output():
    """Seed 002 eq. (3): GroupOpt on h = f + Gamma max(0, g) returns h <= min_{g <= 0} f + eps, hence
    f <= opt + eps and g <= (eps + R) / Gamma at the output (opt and the check by dense sampling of the hull)."""
    rng = np.random.default_rng(10)
    V = np.array([[0.1, 0.5], [0.5, 0.45], [0.7, 0.8], [0.4, 0.9], [0.9, 0.6], [0.6, 0.95]])

    def f(L):  # the mean loss
        return L.mean(axis=1)

    def g(L):  # a loss gap: l_1 - l_0 <= 0.05
        return L[:, 1] - L[:, 0] - 0.05

    gamma = 8.0
    h = G.fold_constraints(f, g, gamma, f_lipschitz=1 / math.sqrt(2), g_lipschitz=math.sqrt(2), K=2)
    assert h.lipschitz == pytest.approx(1 / math.sqrt(2) + gamma * math.sqrt(2))
    L = rng.uniform(size=(50, 2))
    np.testing.assert_allclose(h(L), f(L) + gamma * np.maximum(g(L), 0))
    eps = 2.4
    # The constrained optimum of f: dense points of conv V with g <= 0.
    pts = np.vstack([rng.dirichlet(np.full(len(V), 0.3), size=200_000) @ V] +
                    [(1 - s) * V[i] + s * V[j] for s in [np.linspace(0, 1, 401)[:, None]]
                     for i in range(len(V)) for j in range(i + 1, len(V))])
    feasible = pts[g(pts) <= 0]
    opt = float(f(feasible).min())
    assert float(f(pts).min()) < opt - 0.05  # the constraint binds
    prob = _Vertices(V)
    q, diag = G._run_group_opt(prob, h, eps=eps, lipschitz=h.lipschitz, mode="fast")
    out = prob.losses(q)[None, :]
    assert float(h(out)[0]) <= opt + eps
    assert float(f(out)[0]) <= opt + eps
    assert float(g(out)[0]) <= h.violation_bound(eps)
    assert h.violation_bound(eps) == pytest.approx((eps + 1.0) / gamma)  # R = L_f sqrt(K) = 1
    assert h.violation_bound(eps) < float(g(V).max())  # the bound says something on this vertex set
    with pytest.raises(ValueError, match="gamma"):
        G.fold_constraints(f, g, 0.0, K=2)
    with pytest.raises(ValueError, match="f_range"):
        G.fold_constraints(f, g, 1.0)


@pytest.mark.parametrize("eps", [float("nan"), float("inf"), 0.0, -0.5, True, "0.5"])
def test_eps_must_be_a_positive_finite_number(eps):
    V = np.array([[0.2, 0.8], [0.8, 0.2]])
    with pytest.raises(ValueError, match=r"^eps must be a positive finite number, got "):
        G._run_group_opt(_Vertices(V), _max, eps=eps)
    X = np.array([[0.0, 0.0], [1.0, 1.0]])
    ds = rateopt.Dataset(X, [0, 1], groups={"g": [0, 1]})
    losses = [rateopt.error_rate(ds.context().subset(group="g", value=v)) for v in (0, 1)]
    with pytest.raises(ValueError, match=r"^eps must be a positive finite number, got "):
        G.group_opt(losses, _max, oracles.ThresholdOracle(np.array([1.0, 0.0])), eps=eps)
