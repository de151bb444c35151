"""Per-group threshold rules of a linear model, folded into linear models (issue 36).

References are independent of rateopt's threshold LP, bins and fold: the best
randomized per-group threshold rule is solved here with SciPy's ``linprog``
over one decision probability per row (non-decreasing in the score within a
group, equal on tied scores), and every folded model's decisions, error and
parity gaps are recounted by NumPy from ``X @ w + b >= 0``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import linprog

import rateopt as ro
from rateopt._postprocess._folded_rules import deterministic_rules, folded_threshold_rules, rule_cells
from rateopt._solutions._candidates import AVERAGE_ITERATION, THRESHOLD_RULE_ITERATION, rule_window

SLACK = 0.03


def _data(seed=0, n=300, groups_as_features=True):
    rng = np.random.default_rng(seed)
    g = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    score = np.round(rng.normal(size=n), 1)  # ties within groups
    y = (score + np.array([0.6, -0.4, 0.0])[g] + 0.8 * rng.normal(size=n) > 0).astype(int)
    other = rng.normal(size=n)
    X = np.column_stack([score, other, np.eye(3)[g]]) if groups_as_features else np.column_stack([score, other])
    return X, y, np.array(["a", "b", "c"])[g]


def _problem(X, y, g):
    ds = ro.Dataset(X, y, groups={"g": g})
    return ro.Problem(objective=ro.error_rate(ds.context()),
                      constraints=[ro.goals.demographic_parity("g", slack=SLACK)], datasets=ds)


def _recount(d, y, g):
    """Error and largest demographic-parity excess of decisions (or decision probabilities) ``d``."""
    err = float(np.mean(np.where(y == 1, 1.0 - d, d)))
    gaps = [np.mean(d[g == c]) - np.mean(d) for c in np.unique(g)]
    return err, max(max(gaps), -min(gaps)) - SLACK


def _best_threshold_rule_scipy(s, y, g, cells):
    """The least-error randomized rule, non-decreasing in ``s`` within each cell, under the parity goal on ``g``."""
    n = s.size
    c_obj = np.where(y == 1, -1.0, 1.0) / n  # error = mean(y) + c . p
    A_ub, b_ub, A_eq = [], [], []
    for c in np.unique(cells):
        rows = np.flatnonzero(cells == c)
        rows = rows[np.argsort(s[rows], kind="stable")]
        for i, j in zip(rows[:-1], rows[1:]):
            row = np.zeros(n)
            row[i], row[j] = 1.0, -1.0
            (A_eq if s[i] == s[j] else A_ub).append(row)  # p_i <= p_j; equal on ties
            if s[i] != s[j]:
                b_ub.append(0.0)
    for c in np.unique(g):
        gap = (g == c) / np.sum(g == c) - 1.0 / n
        A_ub += [gap, -gap]
        b_ub += [SLACK, SLACK]
    res = linprog(c_obj, A_ub=np.array(A_ub), b_ub=np.array(b_ub), A_eq=np.array(A_eq) if A_eq else None,
                  b_eq=np.zeros(len(A_eq)) if A_eq else None, bounds=(0, 1), method="highs")
    assert res.status == 0
    return float(np.mean(y) + res.fun)


def test_deterministic_rules_mix_back_to_the_table():
    rng = np.random.default_rng(1)
    sizes = [4, 1, 6]
    start = np.concatenate([[0], np.cumsum(sizes)])
    table = np.concatenate([np.sort(np.round(rng.random(k), 2)) for k in sizes])
    table[start[1]:start[2]] = 1.0  # a cell positive everywhere
    table[start[2]:start[2] + 2] = 0.0
    firsts, weights = deterministic_rules(table, start)
    assert np.all(weights > 0) and weights.sum() == pytest.approx(1.0, abs=1e-15)
    mixed = np.zeros_like(table)
    for first, w in zip(firsts, weights):
        for c in range(len(sizes)):
            mixed[start[c]:start[c + 1]] += w * (np.arange(sizes[c]) >= first[c])
    np.testing.assert_allclose(mixed, table, rtol=0, atol=1e-14)


@pytest.mark.parametrize("groups_as_features", [True, False])
def test_folded_rules_are_the_best_threshold_rule(groups_as_features):
    X, y, g = _data(groups_as_features=groups_as_features)
    problem = _problem(X, y, g)
    cells = rule_cells(problem)
    assert (cells.cell_map is not None) == groups_as_features
    w = np.zeros(X.shape[1])
    w[0], w[1] = 1.5, 0.02  # a fixed model, mostly the score
    b = -0.1
    rules = folded_threshold_rules(problem.compiled, cells, w, b)
    assert len(rules) >= 1 and sum(p for *_, p in rules) == pytest.approx(1.0, abs=1e-12)
    s = X @ w + b
    cell = g if groups_as_features else np.zeros_like(g)
    mix = np.zeros(X.shape[0])
    for wr, br, p in rules:
        d = (X @ wr + br >= 0).astype(float)
        # a deterministic per-cell threshold of the model's score: within a cell, positive rows score higher
        for c in np.unique(cell):
            m = cell == c
            if d[m].any() and not d[m].all():
                assert s[m][d[m] == 1].min() > s[m][d[m] == 0].max()
        if groups_as_features:  # folded into the group columns and the intercept only
            np.testing.assert_array_equal(wr[:2], w[:2])
        else:  # group-blind: one threshold, in the bias
            np.testing.assert_array_equal(wr, w)
        mix += p * d
    err, excess = _recount(mix, y, g)
    reference = _best_threshold_rule_scipy(s, y, g, cell)
    assert excess <= 1e-9
    assert err == pytest.approx(reference, abs=1e-9)


def _train(X, y, g, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ro.train(_problem(X, y, g), random_state=0, **kwargs)


def test_training_candidates_are_recounted_and_floor_the_default_solution(tmp_path):
    X, y, g = _data()
    res = _train(X, y, g, n_iter=200)
    rules = np.flatnonzero(res.iterations == THRESHOLD_RULE_ITERATION)
    averages = np.flatnonzero(res.iterations == AVERAGE_ITERATION)
    assert rules.size > 0 and averages.size == 4 and res.n_trivial == 2 + 4 + rules.size
    assert rules.min() > averages.max()  # after the window averages, before the iterates
    for i in rules:  # the records' statistics, recounted from the folded model's decisions
        err, excess = _recount((X @ res.weights[i] + res.biases[i] >= 0).astype(float), y, g)
        assert res.objectives[i] == pytest.approx(err, abs=1e-12)
        assert res.constraints[i].max() == pytest.approx(excess, abs=1e-12)
    # the m-stochastic solution is no worse on training data than the best threshold rule of the rule
    # windows' averages (windows 0, 1, 3 of 50 iterations), each solved by SciPy
    its = np.flatnonzero(res.iterations >= 0)
    for j in (0, 1, 3):
        window = its[50 * j:50 * (j + 1)]
        s = X @ res.weights[window].mean(axis=0) + res.biases[window].mean()
        reference = _best_threshold_rule_scipy(s, y, g, g)
        err, excess = _recount(res.solution("m-stochastic").predict_proba(X)[:, 1], y, g)
        assert excess <= 1e-9 and err <= reference + 1e-9
    # saved and loaded with the rest of the candidates
    res.save(tmp_path / "r.npz")
    back = ro.load(tmp_path / "r.npz")
    assert back.n_trivial == res.n_trivial
    np.testing.assert_array_equal(back.iterations, res.iterations)
    np.testing.assert_array_equal(back.weights, res.weights)
    np.testing.assert_array_equal(back.mixture("m-stochastic"), res.mixture("m-stochastic"))
    np.testing.assert_array_equal(back.solution("m-stochastic").predict_proba(X),
                                  res.solution("m-stochastic").predict_proba(X))


def test_rule_windows_are_fixed_by_their_index():
    assert [s for s in range(0, 1600, 50) if rule_window(s)] == [0, 50, 150, 350, 750, 1550]
    X, y, g = _data()
    short, long_ = _train(X, y, g, n_iter=150), _train(X, y, g, n_iter=260)
    a, b = (r.weights[r.iterations == THRESHOLD_RULE_ITERATION] for r in (short, long_))
    # windows 0 and 1 for both runs; window 3 ([150, 200)) only for the longer one: a prefix
    assert 0 < a.shape[0] < b.shape[0]
    np.testing.assert_array_equal(b[:a.shape[0]], a)


def test_no_threshold_rules_without_constraints_or_for_k_classes():
    X, y, g = _data()
    ds = ro.Dataset(X, y, groups={"g": g})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        free = ro.train(ro.Problem(objective=ro.error_rate(ds.context()), datasets=ds), n_iter=100, random_state=0)
        cds = ro.ClassDataset(X, np.where(y == 1, 2, X[:, 1] > 0).astype(int), groups={"g": g})
        multi = ro.train(ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.05)],
                                    datasets=cds), n_iter=100, random_state=0)
    assert not np.any(free.iterations == THRESHOLD_RULE_ITERATION)
    assert not np.any(multi.iterations == THRESHOLD_RULE_ITERATION)


def test_no_threshold_rules_above_the_constraint_cap(monkeypatch):
    import rateopt._train as driver

    X, y, g = _data()
    assert np.any(_train(X, y, g, n_iter=60).iterations == THRESHOLD_RULE_ITERATION)
    n_constraints = _problem(X, y, g).compiled.n_constraints  # demographic parity over 3 groups, both sides
    monkeypatch.setattr(driver, "MAX_RULE_CONSTRAINTS", n_constraints - 1)
    assert not np.any(_train(X, y, g, n_iter=60).iterations == THRESHOLD_RULE_ITERATION)


def test_more_cells_than_an_affine_map_of_the_features_can_give_is_group_blind():
    X, y, g = _data()
    # one feature holds the group's code: 3 cells from 1 feature would need 3 independent indicators
    Xc = np.column_stack([np.searchsorted(["a", "b", "c"], g).astype(float)])
    cells = rule_cells(_problem(Xc, y, g))
    assert cells.cell_map is None and cells.columns == ()
    assert rule_cells(_problem(X, y, g)).columns == ("g",)


def test_round_off_in_the_table_is_not_a_rule():
    start = np.array([0, 3, 5])
    table = np.array([0.0, 0.25, 1.0 - 2e-16, 0.0, 1.0])
    firsts, weights = deterministic_rules(table, start)
    # the levels 0.25 and 1 - 2e-16 ~ 1: two rules, (first positive bins (2, 1), 0.75) and ((1, 1), 0.25)
    np.testing.assert_array_equal(firsts, [[1, 1], [2, 1]])
    np.testing.assert_allclose(weights, [0.25, 0.75], rtol=0, atol=1e-15)
