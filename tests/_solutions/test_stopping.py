"""The optional stopping rule (``stop_tol``, ``stop_patience``; rateopt._solutions._stopping).

References: the LP's value over every prefix of the records is recomputed here
with SciPy's ``linprog`` (not rateopt's shrink), and the iteration at which the
rule must stop is found by replaying the rule's definition on those values.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import linprog

import rateopt
from rateopt._solutions._stopping import PlateauRule, improved_by, lp_score


def _problem(seed=0, n=600):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    g = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.8 * g + rng.normal(scale=0.7, size=n) > 0.4).astype(int)
    ds = rateopt.Dataset(X, y, groups={"g": g})
    return rateopt.Problem(constraints=[rateopt.goals.equal_opportunity("g", slack=0.02)], datasets=ds)


def scipy_lp_score(f, G):
    """(z, objective) of min <p, f> s.t. G^T p <= 0 on the simplex (z > 0: the min-max violation)."""
    T, m = G.shape
    A_eq, b_eq = np.ones((1, T)), [1.0]
    res = linprog(f, A_ub=G.T if m else None, b_ub=np.zeros(m) if m else None, A_eq=A_eq, b_eq=b_eq,
                  bounds=(0, None), method="highs")
    if res.status == 0:
        return 0.0, float(res.fun)
    # infeasible: min z s.t. G^T p <= z
    c = np.r_[np.zeros(T), 1.0]
    A_ub = np.c_[G.T, -np.ones(m)]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(m), A_eq=np.c_[A_eq, [[0.0]]], b_eq=b_eq,
                  bounds=[(0, None)] * T + [(None, None)], method="highs")
    return float(res.fun), math.inf


def replay(f, G, tol, patience, trivial=None):
    """Index (into the records) after which the rule stops, by its definition, or None (``trivial``: the
    trivial rules' ``(f, G)``, in every LP beside the records)."""
    every = max(1, patience // 4)
    best, best_at = None, 0
    tf, tG = (np.zeros(0), np.zeros((0, G.shape[1]))) if trivial is None else trivial
    for n in range(every, len(f) + 1, every):
        score = scipy_lp_score(np.r_[tf, f[:n]], np.r_[tG, G[:n]])
        if best is None or improved_by(best, score, tol):
            best, best_at = score, n
        elif n - best_at >= patience:
            return n
    return None


def test_lp_score_matches_scipy():
    rng = np.random.default_rng(3)
    for m in (0, 1, 3):
        for _ in range(5):
            f = rng.random(12)
            G = rng.normal(0.0, 0.05, (12, m)) + (0.04 if _ % 2 else 0.0)
            mine, ref = lp_score(f, G), scipy_lp_score(f, G)
            assert mine[0] == pytest.approx(ref[0], abs=1e-9)
            assert (mine[1] == ref[1]) if math.isinf(ref[1]) else mine[1] == pytest.approx(ref[1], abs=1e-9)


def test_improvement_order():
    assert improved_by((0.1, math.inf), (0.0, 0.3), 1.0)  # becoming feasible always counts
    assert improved_by((0.1, math.inf), (0.05, math.inf), 1e-3)
    assert not improved_by((0.1, math.inf), (0.0999, math.inf), 1e-3)
    assert improved_by((0.0, 0.3), (0.0, 0.29), 1e-3)
    assert not improved_by((0.0, 0.3), (0.0, 0.2995), 1e-3)


@pytest.mark.parametrize("loop", ["core", "python"])
def test_training_stops_where_the_rule_says_and_keeps_the_prefix(loop):
    problem = _problem()
    kw = dict(n_iter=600, record_every=3, random_state=0, loop=loop)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = rateopt.train(problem, **kw)
        tol, patience = 1e-3, 8
        stopped = rateopt.train(problem, stop_tol=tol, stop_patience=patience, **kw)
    k = full.n_trivial  # the trivial rules come first (record_every=3: no window averages)
    n = replay(full.objectives[k:], full.constraints[k:], tol, patience,
               trivial=(full.objectives[:k], full.constraints[:k]))
    assert n is not None and n < full.objectives.shape[0] - k  # this run does plateau
    # the stopped run is the uninterrupted run's first n records, bit for bit
    assert stopped.objectives.shape[0] == k + n
    np.testing.assert_array_equal(stopped.weights, full.weights[:k + n])
    np.testing.assert_array_equal(stopped.constraints, full.constraints[:k + n])
    assert stopped.n_iter == int(full.iterations[k + n - 1]) + 1


def test_a_run_that_keeps_improving_is_not_stopped_and_the_user_callback_still_runs():
    problem = _problem(seed=1)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rateopt.train(problem, n_iter=60, record_every=3, stop_tol=1e-12, stop_patience=1000,
                            callback=lambda t, info: seen.append(t) and False, random_state=0)
    assert res.n_iter == 60
    assert seen == list(res.history["iteration"])


def test_a_user_callback_can_still_stop_training():
    problem = _problem(seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rateopt.train(problem, n_iter=300, record_every=5, stop_tol=1e-9,
                            callback=lambda t, info: t >= 50)
    assert res.n_iter == 51


def test_rule_counts_its_lp_solves():
    rule = PlateauRule(1e-3, 8)  # an LP every 8 // 4 = 2 records
    for t in range(10):
        assert rule(t, {"objective": 0.3, "constraints": np.array([-0.1])}) is (t == 9)
    # flat from the first check (record 2): 8 records later, at record 10, it stops
    assert rule.n_checks == 5 and rule.stopped_at == 9


@pytest.mark.parametrize("bad, msg", [(dict(stop_tol=-1.0), "stop_tol"), (dict(stop_tol=math.inf), "stop_tol"),
                                      (dict(stop_tol=1e-3, stop_patience=1), "stop_patience")])
def test_bad_stopping_parameters_name_themselves(bad, msg):
    with pytest.raises(ValueError, match=msg):
        rateopt.train(_problem(), n_iter=5, **bad)


# --------------------------------------------------------------------------- K classes: the rule is on by default


def _class_problem(seed=0, n=1200):
    """Three classes, a binary group shifting the class logits (as tests/_training/test_class_training.py)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    g = rng.integers(0, 2, n)
    logits = X[:, :3] @ np.array([[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-0.5, 0.5, 1.0]]) + np.outer(g, [1.5, 0, -1.5])
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, 1)).sum(1)
    ds = rateopt.ClassDataset(np.c_[X, g], y, groups={"g": g})
    return rateopt.Problem(constraints=[rateopt.goals.multiclass_demographic_parity("g", slack=0.05)], datasets=ds)


def replay_k_class(res_full, tol, patience, start):
    """The iteration at which the K-class default rule stops, by its definition, on the uninterrupted run.

    The rule's LP at a check holds the trivial rules, the records so far and the window averages (iterations
    [50 j, 50 j + 50)) complete so far; it checks every ``patience // 4`` records counted from the first record
    at ``start``."""
    f, G, its = res_full.objectives, res_full.constraints, res_full.iterations
    trivial = np.flatnonzero(its == -1)
    avg = np.flatnonzero(its == -2)  # the window averages, in window order
    rec = np.flatnonzero(its >= 0)
    every = max(1, patience // 4)
    n_before = int(np.sum(its[rec] < start))
    best, best_at = None, 0
    for n in range(n_before + every, rec.size + 1, every):
        t = int(its[rec[n - 1]])
        done = avg[:(t + 1) // 50]
        idx = np.r_[trivial, done, rec[:n]]
        score = scipy_lp_score(f[idx], G[idx])
        if best is None or improved_by(best, score, tol):
            best, best_at = score, n
        elif n - best_at >= patience:
            return t
    return None


def test_k_class_default_rule_stops_where_its_definition_says_and_keeps_the_prefix():
    problem = _class_problem()
    stopped = rateopt.train(problem, method="proxy-swap", random_state=0)
    full = rateopt.train(problem, method="proxy-swap", random_state=0, stop_tol=0)  # 0: off
    s = stopped.settings
    assert (s["stop_tol"], s["stop_patience"], s["record_every"], s["n_iter"]) == (1e-4, 50, 1, 500)
    assert full.settings["stop_tol"] is None and full.n_iter == 500
    warmup = round(0.2 * 500)
    t = replay_k_class(full, 1e-4, 50, warmup)
    assert t is not None and warmup + 50 <= t < 499  # this run plateaus, after the warm-up and one patience
    assert stopped.n_iter == t + 1
    # the stopped run's iterates are the uninterrupted run's first t + 1, bit for bit
    a, b = stopped.iterations >= 0, full.iterations >= 0
    np.testing.assert_array_equal(stopped.weights[a], full.weights[b][:t + 1])
    np.testing.assert_array_equal(stopped.constraints[a], full.constraints[b][:t + 1])
    # its window averages are the uninterrupted run's first ones
    wa, wb = stopped.iterations == -2, full.iterations == -2
    np.testing.assert_array_equal(stopped.weights[wa], full.weights[wb][:int(wa.sum())])


def test_k_class_rule_is_off_for_minibatches_and_two_classes_keep_theirs():
    problem = _class_problem(n=400)
    res = rateopt.train(problem, method="proxy-swap", random_state=0, n_iter=20, batch_size=64)
    assert res.settings["stop_tol"] is None and res.n_iter == 20
    two = rateopt.train(_problem(), n_iter=5, random_state=0)
    assert two.settings["stop_tol"] is None and two.settings["stop_patience"] == 20


# --------------------------------------------------------------------------- both arities: the LP sees the candidates


def _arity_problem(K, seed=0, n=1500):
    """Two classes (``K == 2``, a ``Dataset`` under equal opportunity) or K (a ``ClassDataset`` under parity)."""
    if K == 2:
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, 4))
        g = rng.integers(0, 2, n)
        y = (X[:, 0] + 0.8 * g + rng.normal(scale=0.7, size=n) > 0.4).astype(int)
        ds = rateopt.Dataset(np.c_[X, g], y, groups={"g": g})
        return rateopt.Problem(constraints=[rateopt.goals.equal_opportunity("g", slack=0.01)], datasets=ds)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    g = rng.integers(0, 2, n)
    logits = X[:, :3] @ rng.normal(size=(3, K)) + np.outer(g, np.linspace(1.5, -1.5, K))
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, 1)).sum(1)
    ds = rateopt.ClassDataset(np.c_[X, g], y, groups={"g": g})
    return rateopt.Problem(constraints=[rateopt.goals.multiclass_demographic_parity("g", slack=0.05)], datasets=ds)


def _recount(problem, res):
    """Objective and constraint values of every candidate of ``res``, from its weights, by ``Problem.evaluate``
    on the candidate's decisions (scores >= 0 for two classes, the argmax class for K) -- not from the
    training run's recorded rates."""
    X = problem.datasets["default"].X if "default" in problem.datasets else next(iter(problem.datasets.values())).X
    f, G = [], []
    for w, b in zip(res.weights, res.biases):
        if np.ndim(w) == 1:
            ev = problem.evaluate(X @ w + b, kind="scores")
        else:
            ev = problem.evaluate(np.argmax(X @ w.T + b, axis=1), kind="labels")
        f.append(ev.objective)
        G.append([ev.constraints[c] for c in problem.constraint_names])
    return np.array(f), np.array(G)


def _rows(f, G):
    """The rows ``(f_i, g_i)`` in a canonical order (a multiset to compare)."""
    rows = np.c_[np.asarray(f, dtype=np.float64), np.asarray(G, dtype=np.float64).reshape(len(f), -1)]
    return rows[np.lexsort(np.round(rows, 9).T[::-1])]


@pytest.mark.parametrize("K", [2, 3, 4])
def test_the_rules_lps_hold_exactly_the_solutions_candidates(K, monkeypatch):
    """At the check where the rule stops, its LP holds every candidate the m-stochastic solution mixes (the
    trivial rules, the window averages, for two classes their threshold rules, the records), and no other
    row; every earlier LP holds a subset of them, the trivial rules and the records so far included."""
    from rateopt._solutions import _stopping

    calls = []

    def spy(f, G):
        calls.append((np.array(f, dtype=np.float64), np.array(G, dtype=np.float64)))
        return lp_score(f, G)

    monkeypatch.setattr(_stopping, "lp_score", spy)
    problem = _arity_problem(K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rateopt.train(problem, method="proxy-swap", n_iter=600, stop_tol=1e-4, stop_patience=50,
                            record_every=1, random_state=0)
    assert 100 <= res.n_iter < 600  # it stopped, after at least two complete windows
    its = res.iterations
    assert np.sum(its == -1) == K and np.sum(its == -2) >= 2  # the trivial rules, the window averages
    assert np.sum(its == -3) >= (1 if K == 2 else 0) and (K == 2 or not np.any(its == -3))  # rules: two classes
    f, G = _recount(problem, res)
    # the recount is the result's own candidate values (to round-off), so the comparison below is against it
    np.testing.assert_allclose(f, res.objectives, atol=1e-12)
    np.testing.assert_allclose(G, res.constraints, atol=1e-12)
    last = _rows(*calls[-1])
    np.testing.assert_allclose(last, _rows(f, G), atol=1e-12)
    final = {tuple(r) for r in np.round(last, 12)}
    n_trivial = int(np.sum(its == -1))
    trivial = {tuple(r) for r in np.round(_rows(f[:n_trivial], G[:n_trivial]), 12)}
    rec = np.flatnonzero(its >= 0)
    for cf, cG in calls:
        rows = {tuple(r) for r in np.round(_rows(cf, cG), 12)}
        assert rows <= final and trivial <= rows
        # the records so far come last, in order: the run's first records
        k = next((i for i in range(cf.shape[0])
                  if np.array_equal(cf[i:], res.objectives[rec[:cf.shape[0] - i]])), None)
        assert k is not None and k >= n_trivial
        np.testing.assert_array_equal(cG[k:].reshape(-1, G.shape[1]), res.constraints[rec[:cf.shape[0] - k]])
