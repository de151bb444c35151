"""The one-shared-rate solver against HiGHS on the same LP, a NumPy recount and brute force.

References:

- HiGHS on the same threshold LP (``solve_threshold_lp`` with the solver's
  dispatch switched off): the optimal objective, to 1e-9 relative;
- every rule's rates recounted with NumPy from its per-row decision
  probabilities (group and overall positive rates, true positive rates, the
  expected error): the constraints hold to round-off and the error is the
  LP's objective;
- on tiny instances, the best mixture of every deterministic per-group
  threshold rule (enumerated, rates counted with NumPy), found by scipy's
  ``linprog`` over the mixture weights.
"""

import itertools
import types

import numpy as np
import pytest
import rateopt as ro
import scipy.sparse as sp
from rateopt._postprocess import _shared_rate_lp as srl
from rateopt._postprocess._rule import cell_codes, fit_threshold_rule
from scipy.optimize import linprog


def _instance(seed):
    """Random groups (1-30), distinct scores per group (1-6, ties across rows), labels, weights, a slack."""
    rng = np.random.default_rng(seed)
    G = int(rng.integers(1, 31))
    n = int(rng.integers(2 * G, 6 * G + 1))
    g = np.concatenate([np.arange(G), np.arange(G), rng.integers(0, G, n - 2 * G)])
    y = rng.integers(0, 2, n)
    y[:G], y[G:2 * G] = 1, 0  # every group has both labels (equal opportunity reads its positives)
    s = rng.integers(0, int(rng.integers(1, 7)), n).astype(float)
    w = rng.uniform(0.2, 3.0, n) if seed % 2 else np.ones(n)
    slack = (0.0, 0.02, 0.1)[seed % 3]
    return s, y, g, w, slack


def _fit(s, y, g, w, goal, monkeypatch, structured):
    """The rule and LP solution of ``ThresholdClassifier``'s problem, by the structured solver or by HiGHS."""
    monkeypatch.setattr(srl, "MIN_CHAINS", 1 if structured else 10**9)
    monkeypatch.setattr(srl, "MIN_BINS", 1 if structured else 10**9)
    ds = ro.Dataset(s[:, None], y, weights=w, groups={"g": g})
    problem = ro.Problem(constraints=[goal], datasets=ds)
    codes, cells = cell_codes({"g": g}, ["g"])
    rule, sol = fit_threshold_rule(problem.compiled, {"train": s}, {"train": codes}, cells, ["g"])
    return rule, sol, rule.probabilities(s, codes)


def _recount(p, y, g, w):
    """Expected error, and per group: (ppr_g - ppr, tpr_g - tpr), counted with NumPy."""
    error = float(w @ (p * (1 - y) + (1 - p) * y)) / w.sum()
    ppr = float(w @ p) / w.sum()
    pos = y == 1
    tpr = float(w[pos] @ p[pos]) / w[pos].sum() if pos.any() else np.nan
    gaps = []
    for grp in np.unique(g):
        m = g == grp
        mp = m & pos
        tpr_gap = float(w[mp] @ p[mp]) / w[mp].sum() - tpr if mp.any() else np.nan  # no positives: no rate
        gaps.append((float(w[m] @ p[m]) / w[m].sum() - ppr, tpr_gap))
    return error, np.array(gaps)


def _spy(monkeypatch):
    """Record whether the structured solver answered (not None) on each call."""
    calls = []
    real = srl.solve_shared_rate

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(srl, "solve_shared_rate", spy)
    return calls


@pytest.mark.parametrize("goal_name,column", [("demographic_parity", 0), ("equal_opportunity", 1)])
@pytest.mark.parametrize("seed", range(24))
def test_random_instances_match_highs_and_recount_feasible(seed, goal_name, column, monkeypatch):
    s, y, g, w, slack = _instance(seed)
    goal = getattr(ro.goals, goal_name)("g", slack=slack)
    _, ref, p_ref = _fit(s, y, g, w, goal, monkeypatch, structured=False)
    calls = _spy(monkeypatch)
    rule, sol, p = _fit(s, y, g, w, goal, monkeypatch, structured=True)
    assert calls == [True]  # the structure was recognized and solved without HiGHS
    assert sol.slack == 0.0 and ref.slack == 0.0
    assert sol.objective == pytest.approx(ref.objective, rel=1e-9, abs=1e-12)
    # every chain's table is a monotone rule in [0, 1]
    for k in range(rule.start.size - 1):
        t = rule.table[rule.start[k]:rule.start[k + 1]]
        assert np.all((t >= 0) & (t <= 1)) and np.all(np.diff(t) >= 0)
    error, gaps = _recount(p, y, g, w)
    assert error == pytest.approx(sol.objective, abs=1e-12)
    assert np.max(np.abs(gaps[:, column])) <= slack + 1e-12
    error_ref, _ = _recount(p_ref, y, g, w)
    assert error == pytest.approx(error_ref, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_equalized_odds_has_two_shared_rates_and_goes_to_highs(seed, monkeypatch):
    s, y, g, w, slack = _instance(seed)
    goal = ro.goals.equalized_odds("g", slack=slack)
    _, ref, _ = _fit(s, y, g, w, goal, monkeypatch, structured=False)
    calls = _spy(monkeypatch)
    _, sol, _ = _fit(s, y, g, w, goal, monkeypatch, structured=True)
    assert calls == [False]  # not this solver's structure (the two-rate solver's: test_two_rate_lp.py)
    assert sol.objective == pytest.approx(ref.objective, rel=1e-9, abs=1e-12)


def _deterministic_rules(s, g):
    """Every rule "positive iff score >= t_g": its per-row decisions."""
    groups = np.unique(g)
    options = [list(np.unique(s[g == grp])) + [np.inf] for grp in groups]
    for ts in itertools.product(*options):
        t = dict(zip(groups.tolist(), ts))
        yield (s >= np.array([t[v] for v in g.tolist()])).astype(float)


@pytest.mark.parametrize("seed", range(6))
def test_tiny_instances_match_the_best_mixture_of_enumerated_rules(seed, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    G, n = 3, 14
    g = np.concatenate([np.arange(G), rng.integers(0, G, n - G)])
    y = rng.integers(0, 2, n)
    s = rng.integers(0, 3, n).astype(float)
    w = rng.uniform(0.5, 2.0, n)
    slack = (0.0, 0.05)[seed % 2]
    rows = []
    for d in _deterministic_rules(s, g):
        error, gaps = _recount(d, y, g, w)
        rows.append((error, gaps[:, 0]))
    cost = np.array([r[0] for r in rows])
    gap = np.array([r[1] for r in rows]).T  # (groups, rules)
    ref = linprog(cost, A_ub=np.vstack([gap, -gap]), b_ub=np.full(2 * G, slack), A_eq=np.ones((1, cost.size)),
                  b_eq=[1.0], bounds=(0, None), method="highs")
    assert ref.status == 0
    calls = _spy(monkeypatch)
    _, sol, p = _fit(s, y, g, w, ro.goals.demographic_parity("g", slack=slack), monkeypatch, structured=True)
    assert calls == [True]
    assert sol.objective == pytest.approx(ref.fun, abs=1e-9)
    error, gaps = _recount(p, y, g, w)
    assert error == pytest.approx(ref.fun, abs=1e-9)
    assert np.max(np.abs(gaps[:, 0])) <= slack + 1e-12


def _hand_problem(rows, kappa, M, start, coef):
    """A compiled problem's fields the solver reads, for a hand-made LP."""
    n_atoms = np.shape(M)[0]
    return types.SimpleNamespace(C=sp.csr_matrix(np.asarray(rows, float)), kappa=np.asarray(kappa, float),
                                 n_atoms=n_atoms, objective_coef=np.asarray(coef, float), objective_constant=0.0,
                                 metric=None), np.asarray(start), sp.csc_matrix(np.asarray(M, float))


def _three_chains():
    """Three one-bin chains: atoms 0-2 their rates, atom 3 the mean (shared), atom 4 chain 0's error."""
    M = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1 / 3, 1 / 3, 1 / 3], [-0.5, 0, 0]]
    return M, [0, 1, 2, 3]


def test_an_infeasible_structured_problem_returns_none():
    M, start = _three_chains()
    # every chain's rate >= 0.6 (r_k - 0 >= 0.6 written against the shared rate: -p_k + 0 p_mean <= -0.6)
    # and the mean <= 0.5: no rule meets both
    rows = [[-1, 0, 0, 0, 0], [0, -1, 0, 0, 0], [0, 0, -1, 0, 0], [0, 0, 0, 1, 0],
            [1, 0, 0, -1, 0]]
    compiled, st, Mc = _hand_problem(rows, [-0.6, -0.6, -0.6, 0.5, 0.3], M, start, [0, 0, 0, 0, 1])
    assert srl.solve_shared_rate(compiled, st, Mc) is None
    # the same rows with the mean allowed up to 0.7: feasible; the optimum puts chain 0 as high as allowed
    compiled, st, Mc = _hand_problem(rows, [-0.6, -0.6, -0.6, 0.7, 0.3], M, start, [0, 0, 0, 0, 1])
    sol = srl.solve_shared_rate(compiled, st, Mc)
    assert sol is not None
    # closed form: chain 0 maximal subject to p0 <= mean + 0.3 and mean <= 0.7, p1, p2 >= 0.6:
    # p0 = 0.9 needs mean >= 0.6 -> p1 = p2 = 0.6 gives mean 0.7: objective -0.45
    assert sol.objective == pytest.approx(-0.45, abs=1e-12)
    assert sol.atom_rates[0] == pytest.approx(0.9, abs=1e-12)


def test_rows_across_two_chains_are_not_this_structure():
    M, start = _three_chains()
    rows = [[1, -1, 0, 0, 0], [1, 0, 0, -1, 0]]  # the first row reads two chains' local atoms
    compiled, st, Mc = _hand_problem(rows, [0.1, 0.1], M, start, [0, 0, 0, 0, 1])
    assert srl.shared_rate_structure(compiled, st, Mc) is None


def _dispatched_at_the_highs_optimum(s, y, g, goal, switch, monkeypatch):
    """``ThresholdClassifier`` fitted with the default dispatch, which must take the structured solver, and
    with HiGHS (the dispatch's ``switch`` out of reach): the optimum and the NumPy recount of the error are
    HiGHS'. Returns the classifier, its probabilities and the recounted gaps."""
    monkeypatch.setattr(srl, switch, 10**9)
    ref = ro.ThresholdClassifier(goals=[goal]).fit(s, y, groups={"g": g})
    monkeypatch.undo()
    calls = _spy(monkeypatch)
    clf = ro.ThresholdClassifier(goals=[goal]).fit(s, y, groups={"g": g})
    assert calls == [True]
    assert clf.violation_ == 0.0
    assert clf.training_.objective == pytest.approx(ref.training_.objective, rel=1e-9)
    p = clf.predict_proba(s, groups={"g": g})[:, 1]
    error, gaps = _recount(p, y, g, np.ones(s.size))
    assert error == pytest.approx(ref.training_.objective, rel=1e-9)
    return clf, p, gaps


def _pair_gaps(p, y, g, w):
    """Two groups' (ppr_0 - ppr_1, tpr_0 - tpr_1), counted with NumPy."""
    out = []
    for sel in (np.ones(y.size, dtype=bool), y == 1):
        r = [float(w[sel & (g == k)] @ p[sel & (g == k)]) / w[sel & (g == k)].sum() for k in (0, 1)]
        out.append(r[0] - r[1])
    return np.array(out)


@pytest.mark.parametrize("goal_name,column", [("demographic_parity", 0), ("equal_opportunity", 1)])
@pytest.mark.parametrize("seed", range(16))
def test_two_groups_pairwise_match_highs_and_recount_feasible(seed, goal_name, column, monkeypatch):
    # two chains whose rows compare their rates with each other (no shared atom): their sum is the shared rate
    s, y, g, w, slack = _instance(seed)
    g = g % 2
    goal = getattr(ro.goals, goal_name)("g", slack=slack, pairwise=True)
    _, ref, p_ref = _fit(s, y, g, w, goal, monkeypatch, structured=False)
    calls = _spy(monkeypatch)
    rule, sol, p = _fit(s, y, g, w, goal, monkeypatch, structured=True)
    assert calls == [True]
    assert sol.objective == pytest.approx(ref.objective, rel=1e-9, abs=1e-12)
    for k in range(2):
        t = rule.table[rule.start[k]:rule.start[k + 1]]
        assert np.all((t >= 0) & (t <= 1)) and np.all(np.diff(t) >= 0)
    error, _ = _recount(p, y, g, w)
    assert error == pytest.approx(sol.objective, abs=1e-12)
    assert abs(_pair_gaps(p, y, g, w)[column]) <= slack + 1e-12
    assert abs(_pair_gaps(p_ref, y, g, w)[column]) <= slack + 1e-9


def test_two_chains_compared_with_each_other_reach_the_optimum_by_hand():
    # two one-bin chains, atoms 0 and 1 their rates: minimize -x0 + 0.5 x1 subject to |x0 - x1| <= 0.3;
    # by hand x0 = 1 and x1 = 0.7 (the least x1 the row allows), objective -0.65
    M = [[1, 0], [0, 1]]
    compiled, start, Mc = _hand_problem([[1, -1], [-1, 1]], [0.3, 0.3], M, [0, 1, 2], [-1, 0.5])
    assert srl.shared_rate_structure(compiled, start, Mc) is not None
    sol = srl.solve_shared_rate(compiled, start, Mc)
    assert sol.objective == pytest.approx(-0.65, abs=1e-12)
    np.testing.assert_allclose(sol.x, [1.0, 0.7], atol=1e-12)
    # three chains compared pairwise: not this structure (no one shared rate)
    M3 = np.eye(3)
    compiled, start, Mc = _hand_problem([[1, -1, 0], [0, 1, -1]], [0.3, 0.3], M3, [0, 1, 2, 3], [-1, 0.5, 0])
    assert srl.shared_rate_structure(compiled, start, Mc) is None


@pytest.mark.parametrize("pairwise", [False, True])
@pytest.mark.parametrize("slack", [0.0, 0.02])
def test_two_groups_of_many_bins_dispatch_to_the_structured_solver_with_the_highs_optimum(slack, pairwise,
                                                                                        monkeypatch):
    # two groups, MIN_BINS bins and more (after merging runs of one label): the dispatch solves it without
    # HiGHS, to HiGHS' optimum
    n = 3 * srl.MIN_BINS
    rng = np.random.default_rng(5)
    g = (rng.random(n) < 0.3).astype(int)
    y = (rng.random(n) < 0.4).astype(int)
    s = np.round(1 / (1 + np.exp(-(0.5 * y + rng.normal(size=n) + 0.5 * g))), 6)
    goal = ro.goals.demographic_parity("g", slack=slack, pairwise=pairwise)
    clf, p, gaps = _dispatched_at_the_highs_optimum(s, y, g, goal, "MIN_BINS", monkeypatch)
    assert clf.rule_.edges.size >= srl.MIN_BINS
    gap = abs(_pair_gaps(p, y, g, np.ones(n))[0]) if pairwise else np.max(np.abs(gaps[:, 0]))
    assert gap <= slack + 1e-12


def test_a_local_atom_not_parallel_to_the_shared_one_is_not_this_structure():
    # one chain of two bins: its local atom weighs the bins 1:1, the shared atom 1:2
    M = [[0.5, 0.5, 0], [1 / 6, 2 / 6, 0.5], [0, 0, 1]]
    rows = [[1, -1, 0]]
    compiled, start, Mc = _hand_problem(rows, [0.1], M, [0, 2, 3], [0, 0, 0])
    assert srl.shared_rate_structure(compiled, start, Mc) is None
    M[0] = [1 / 3, 2 / 3, 0]  # now parallel (1:2): the structure holds
    compiled, start, Mc = _hand_problem(rows, [0.1], M, [0, 2, 3], [0, 0, 0])
    assert srl.shared_rate_structure(compiled, start, Mc) is not None


@pytest.mark.parametrize("slack", [0.0, 0.02])
def test_many_groups_dispatch_to_the_structured_solver_with_the_highs_optimum(slack, monkeypatch):
    n = srl.MIN_CHAINS + 88
    rng = np.random.default_rng(7)
    s, y, g = rng.random(n), rng.integers(0, 2, n), np.arange(n)
    goal = ro.goals.demographic_parity("g", slack=slack)
    _, _, gaps = _dispatched_at_the_highs_optimum(s, y, g, goal, "MIN_CHAINS", monkeypatch)
    assert np.max(np.abs(gaps[:, 0])) <= slack + 1e-12


@pytest.mark.parametrize("slack", [0.0, 0.02])
def test_bins_of_many_rows_are_recognized_despite_their_sums_round_off(slack, monkeypatch):
    # 40 groups of 250 rows with 3-digit scores: bins merge many rows, and a group's rate and the overall
    # rate sum a bin's rows divided by different totals, so their ratio varies across bins by round-off
    rng = np.random.default_rng(3)
    G, per = 40, 250
    g = np.repeat(np.arange(G), per)
    s = np.round(rng.random(G * per), 3)
    y = (rng.random(G * per) < s).astype(int)
    w = rng.uniform(0.5, 2.0, G * per)
    goal = ro.goals.demographic_parity("g", slack=slack)
    _, ref, _ = _fit(s, y, g, w, goal, monkeypatch, structured=False)
    calls = _spy(monkeypatch)
    _, sol, p = _fit(s, y, g, w, goal, monkeypatch, structured=True)
    assert calls == [True]
    assert sol.objective == pytest.approx(ref.objective, rel=1e-9)
    error, gaps = _recount(p, y, g, w)
    assert error == pytest.approx(sol.objective, rel=1e-12)
    assert np.max(np.abs(gaps[:, 0])) <= slack + 1e-11


def test_a_chain_outside_the_shared_rate_and_the_rows_takes_its_cheapest_threshold():
    # chains 0 and 1 in the shared rate (their mean, atom 2), chain 2 outside it and every row;
    # minimize 0.3 x0 - 0.2 x1 - x2 subject to |x_k - (x0 + x1) / 2| <= 0.1 (k = 0, 1), i.e. |x0 - x1| <= 0.2:
    # by hand, x2 = 1 and (x0, x1) = (0, 0.2), objective -1.04
    M = [[1, 0, 0], [0, 1, 0], [0.5, 0.5, 0], [0, 0, 1]]
    rows = [[1, 0, -1, 0], [-1, 0, 1, 0], [0, 1, -1, 0], [0, -1, 1, 0]]
    compiled, start, Mc = _hand_problem(rows, [0.1] * 4, M, [0, 1, 2, 3], [0.3, -0.2, 0, -1])
    sol = srl.solve_shared_rate(compiled, start, Mc)
    assert sol.objective == pytest.approx(-1.04, abs=1e-12)
    np.testing.assert_allclose(sol.x, [0.0, 0.2, 1.0], atol=1e-12)


@pytest.mark.parametrize("slack", [0.0, 0.02, 0.1])
def test_equalized_odds_over_many_groups_reaches_its_closed_form_optimum(slack, monkeypatch):
    # 600 groups of 2 positives and 2 negatives: group 0 scores both negatives above both positives (its ROC
    # hull lies under the diagonal: t <= f), every other group both positives above both negatives (t >= f
    # reachable up to (0, 1)). Every group's rates are within `slack` of the overall ones, so T - F <= 2 slack,
    # and the error (equal classes) is (1 - (T - F)) / 2 >= 1/2 - slack. It is reached: group 0 on the diagonal
    # at 1/2, the others at t = 1/2 + slack n/(n-1), f = 1/2 - slack n/(n-1) (within slack/(n-1) of the overall
    # rates 1/2 +- slack). Two shared rates: the structured solver declines, HiGHS solves it.
    n = srl.MIN_CHAINS + 88
    rng = np.random.default_rng(11)
    g = np.repeat(np.arange(n), 4)
    y = np.tile([1, 1, 0, 0], n)
    s = np.empty(4 * n)
    hi, lo = rng.uniform(0.6, 0.9, (n, 2)), rng.uniform(0.1, 0.4, (n, 2))  # distinct scores in every group
    s[0::4], s[1::4], s[2::4], s[3::4] = hi[:, 0], hi[:, 1], lo[:, 0], lo[:, 1]
    s[0:2], s[2:4] = lo[0], hi[0]  # group 0: positives low, negatives high
    calls = _spy(monkeypatch)
    clf = ro.ThresholdClassifier(goals=[ro.goals.equalized_odds("g", slack=slack)]).fit(s, y, groups={"g": g})
    assert calls == [False]
    assert clf.violation_ == 0.0
    assert clf.training_.objective == pytest.approx(0.5 - slack, abs=1e-9)
    p = clf.predict_proba(s, groups={"g": g})[:, 1]
    pos, neg = y == 1, y == 0
    assert float(np.mean(p * neg + (1 - p) * pos)) == pytest.approx(0.5 - slack, abs=1e-9)
    tpr, fpr = p[pos].mean(), p[neg].mean()
    tpr_g = np.bincount(g[pos], weights=p[pos]) / 2
    fpr_g = np.bincount(g[neg], weights=p[neg]) / 2
    assert np.max(np.abs(tpr_g - tpr)) <= slack + 1e-9
    assert np.max(np.abs(fpr_g - fpr)) <= slack + 1e-9
