"""The m-stochastic solution's candidates: trivial rules first, and a longer run never worse (issue 36).

References are independent of the library's solution code: each constant
rule's training error is counted by hand from the labels (``mean(y != k)``),
its feasibility from the definition of the goal (a constant rule gives every
group the same positive rate, so demographic parity holds at any slack), and
the solution's training error is a NumPy recount of its ``predict_proba``
against the labels.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rateopt as ro


def _tiny_cells(seed=0):
    """Groups of 4-20 rows with 1-2 positives beside two larger groups (3 features + group one-hot)."""
    rng = np.random.default_rng(seed)
    sizes, positives = (120, 80, 16, 4), (None, None, 2, 1)
    Xs, ys, gs = [], [], []
    for k, (n, pos) in enumerate(zip(sizes, positives)):
        x = rng.normal(size=(n, 3))
        logit = x @ np.array([1.0, -0.8, 0.5]) - 0.7 + 0.5 * k
        if pos is None:
            y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
        else:
            y = np.zeros(n, dtype=int)
            y[np.argsort(-logit)[:pos]] = 1
        Xs.append(np.column_stack([x, np.eye(len(sizes))[np.full(n, k)]]))
        ys.append(y)
        gs.append(np.full(n, "abcd"[k]))
    return np.vstack(Xs), np.concatenate(ys), np.concatenate(gs)


def _error(clf, X, y, K):
    """Expected 0-1 error of a (stochastic) classifier, recounted from predict_proba."""
    proba = clf.predict_proba(X)
    return float(np.mean(1.0 - proba[np.arange(len(y)), y])) if K > 2 else float(np.mean(np.abs(proba[:, 1] - y)))


def _skewed(K, seed=0, n=300):
    """Labels mostly of one class, weak features: constant rules are competitive."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g = rng.integers(0, 2, n)
    if K == 2:
        y = (rng.random(n) < 0.12 + 0.25 * g).astype(int)
    else:
        y = np.where(rng.random(n) < 0.8, 0, rng.integers(1, K, n))
    return X, y, np.where(g == 1, "b", "a")


def _fit(X, y, g, K, slack, **kwargs):
    if K == 2:
        ds, goal = ro.Dataset(X, y, groups={"g": g}), ro.goals.demographic_parity("g", slack=slack)
    else:
        ds, goal = ro.ClassDataset(X, y, groups={"g": g}), ro.goals.multiclass_demographic_parity("g", slack=slack)
    problem = ro.Problem(constraints=[goal], datasets=ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ro.train(problem, random_state=0, **kwargs)


@pytest.mark.parametrize("K", [2, 3])
@pytest.mark.parametrize("n_iter", [2, 40])
def test_m_stochastic_is_never_worse_than_a_constant_rule(K, n_iter):
    X, y, g = _skewed(K)
    res = _fit(X, y, g, K, slack=0.0, n_iter=n_iter, lambda_init="uniform", learning_rate=0.5)
    k = res.n_trivial
    assert k == K and np.all(res.iterations[:k] == -1) and np.all(res.iterations[k:] >= 0)
    # The trivial rules' recorded values are the hand counts of the constant rules.
    by_hand = np.array([np.mean(y != c) for c in range(K)])
    np.testing.assert_allclose(res.objectives[:k], by_hand, rtol=0, atol=1e-12)
    assert np.all(res.max_violations[:k] <= 1e-12)  # every constant is feasible for demographic parity
    err = _error(res.solution("m-stochastic"), X, y, K)
    assert res.feasibility("m-stochastic").feasible
    assert err <= by_hand.min() + 1e-12


def test_the_floor_binds_where_the_iterates_are_worse():
    # Two iterations: the iterates are the all-positive start and one step; the best rule is all-negative.
    X, y, g = _skewed(2)
    res = _fit(X, y, g, 2, slack=0.0, n_iter=2, lambda_init="uniform", learning_rate=0.5)
    iterates = res.objectives[res.n_trivial:]
    assert iterates.min() > np.mean(y) + 0.01  # every iterate is worse than always-negative ...
    q = res.mixture("m-stochastic")
    assert q[0] == 1.0  # ... so the solution is always-negative, the first candidate
    assert _error(res.solution("m-stochastic"), X, y, 2) == pytest.approx(np.mean(y), abs=1e-12)
    # The other kinds keep to the recorded iterates.
    for kind in ("T-stochastic", "best", "last"):
        assert np.all(res.mixture(kind)[:res.n_trivial] == 0)


@pytest.mark.parametrize("K", [2, 3])
def test_trivial_rules_survive_save_and_load(K, tmp_path):
    X, y, g = _skewed(K)
    res = _fit(X, y, g, K, slack=0.02, n_iter=10)
    res.save(tmp_path / "r.npz")
    back = ro.load(tmp_path / "r.npz")
    assert back.n_trivial == K
    np.testing.assert_array_equal(back.mixture("m-stochastic"), res.mixture("m-stochastic"))
    assert len(back.history["iteration"]) == res.weights.shape[0] - K


def test_longer_runs_are_never_worse_on_tiny_cells():
    X, y, g = _tiny_cells()
    ds = ro.Dataset(X, y, groups={"g": g})
    problem = ro.Problem(objective=ro.error_rate(ds.context()),
                         constraints=[ro.goals.equal_opportunity("g", slack=0.05)], datasets=ds)
    errs, results = [], []
    for n_iter in (25, 100, 300):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = ro.train(problem, n_iter=n_iter, random_state=0)
        assert res.feasibility("m-stochastic").feasible
        errs.append(_error(res.solution("m-stochastic"), X, y, 2))
        results.append(res)
    # A longer run's candidates hold the shorter run's (the same iterates, every one recorded, the window
    # averages of the windows both runs completed, and those averages' threshold rules) ...
    assert np.any(results[-1].iterations == -3)
    for short, long in zip(results, results[1:]):
        for kind in (-1, -2, -3, None):
            s_rows = np.flatnonzero(short.iterations >= 0 if kind is None else short.iterations == kind)
            l_rows = np.flatnonzero(long.iterations >= 0 if kind is None else long.iterations == kind)
            n = s_rows.size
            np.testing.assert_array_equal(long.weights[l_rows[:n]], short.weights[s_rows])
            np.testing.assert_array_equal(long.atom_rates[l_rows[:n]], short.atom_rates[s_rows])
    # ... so the recounted training error never increases.
    assert errs[0] >= errs[1] - 1e-12 and errs[1] >= errs[2] - 1e-12
    assert errs[2] <= min(np.mean(y), 1 - np.mean(y))
