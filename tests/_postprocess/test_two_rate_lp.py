"""The two-shared-rate solver (equalized odds over many cells) against HiGHS, linprog, NumPy recounts and a bound.

References:

- HiGHS on the same threshold LP (``solve_threshold_lp`` with the structured
  solvers switched off): the optimal objective, to 1e-9;
- scipy's ``linprog`` on the LP over the bins' monotone tables with the two
  shared rates fixed: the oracle's least and greatest second sums and its
  membership answer;
- every rule's rates recounted with NumPy from its per-row decision
  probabilities (each group's true and false positive rates against the
  overall ones, the expected error);
- the closed-form bound of ``bench/results/many_groups_eo.md``: with equal
  classes the error is ``(1 - (T - F)) / 2`` and ``T - F <= min_k J_k + 2 slack``
  (``J_k`` the largest ``tpr - fpr`` of group ``k``'s thresholds, counted with
  NumPy), reached when some group ranks both negatives above both positives.
"""

import types

import numpy as np
import pytest
import rateopt as ro
import scipy.sparse as sp
from rateopt._postprocess import _lp
from rateopt._postprocess import _shared_rate_lp as srl
from rateopt._postprocess import _two_rate_lp as trl
from rateopt._postprocess._rule import cell_codes, fit_threshold_rule
from scipy.optimize import linprog


def _instance(seed):
    """2-8 groups of 2-8 rows (both labels in each), few distinct scores, weights on odd seeds, a slack."""
    rng = np.random.default_rng(seed)
    G = int(rng.integers(2, 9))
    n_per = rng.integers(2, 9, G)
    g = np.repeat(np.arange(G), n_per)
    y = rng.integers(0, 2, g.size)
    first = np.concatenate([[0], np.cumsum(n_per)[:-1]])
    y[first], y[first + 1] = 1, 0
    s = rng.integers(0, int(rng.integers(2, 7)), g.size).astype(float)
    w = rng.uniform(0.2, 3.0, g.size) if seed % 2 else np.ones(g.size)
    slack = (0.0, 0.02, 0.1)[seed % 3]
    return s, y, g, w, slack


def _problem(s, y, g, w, slack):
    ds = ro.Dataset(s[:, None], y, weights=w, groups={"g": g})
    return ro.Problem(constraints=[ro.goals.equalized_odds("g", slack=slack)], datasets=ds)


def _fit(s, y, g, w, slack, monkeypatch, structured):
    """The rule, LP solution and per-row probabilities, by the structured solvers (from 1 chain) or HiGHS."""
    monkeypatch.setattr(srl, "MIN_CHAINS", 1 if structured else 10**9)
    problem = _problem(s, y, g, w, slack)
    codes, cells = cell_codes({"g": g}, ["g"])
    rule, sol = fit_threshold_rule(problem.compiled, {"train": s}, {"train": codes}, cells, ["g"])
    return rule, sol, rule.probabilities(s, codes)


def _spy(monkeypatch):
    """Record every call of the two-rate solver: its arguments and its answer."""
    calls = []
    real = trl.solve_two_rate

    def spy(compiled, start, M, *, epsilon=0.0):
        out = real(compiled, start, M, epsilon=epsilon)
        calls.append(types.SimpleNamespace(compiled=compiled, start=start, M=M, out=out))
        return out

    monkeypatch.setattr(trl, "solve_two_rate", spy)
    return calls


def _recount(p, y, g, w):
    """Expected error and, per group, (tpr_g - tpr, fpr_g - fpr), counted with NumPy."""
    error = float(w @ (p * (1 - y) + (1 - p) * y)) / w.sum()
    pos, neg = y == 1, y == 0
    tpr = float(w[pos] @ p[pos]) / w[pos].sum()
    fpr = float(w[neg] @ p[neg]) / w[neg].sum()
    gaps = []
    for grp in np.unique(g):
        mp, mn = (g == grp) & pos, (g == grp) & neg
        gaps.append((float(w[mp] @ p[mp]) / w[mp].sum() - tpr, float(w[mn] @ p[mn]) / w[mn].sum() - fpr))
    return error, np.array(gaps)


@pytest.mark.parametrize("seed", range(36))
def test_random_instances_match_highs_and_recount_feasible(seed, monkeypatch):
    s, y, g, w, slack = _instance(seed)
    _, ref, p_ref = _fit(s, y, g, w, slack, monkeypatch, structured=False)
    calls = _spy(monkeypatch)
    rule, sol, p = _fit(s, y, g, w, slack, monkeypatch, structured=True)
    assert len(calls) == 1
    direct = calls[0].out
    assert direct is not None  # the solver answered (at zero slack by its LP in R alone)
    assert direct.objective == pytest.approx(ref.objective, abs=1e-9)
    # the returned tables: every constraint recounted from M x
    C = np.asarray(calls[0].compiled.C.todense() if hasattr(calls[0].compiled.C, "todense")
                   else calls[0].compiled.C)
    rates = sp.csr_matrix(calls[0].M) @ direct.x
    assert np.max(C @ rates - calls[0].compiled.kappa) <= 1e-9
    for k in range(rule.start.size - 1):
        t = rule.table[rule.start[k]:rule.start[k + 1]]
        assert np.all((t >= 0) & (t <= 1)) and np.all(np.diff(t) >= 0)
    # the rule's per-row decisions: the error is the objective, every gap within the slack
    error, gaps = _recount(p, y, g, w)
    assert error == pytest.approx(ref.objective, abs=1e-9)
    assert np.max(np.abs(gaps)) <= slack + 1e-9
    assert error == pytest.approx(_recount(p_ref, y, g, w)[0], abs=1e-9)


def _reference_range(st, compiled, start, M, R, sense):
    """linprog: the least (sense 1) or greatest (-1) second sum over monotone tables meeting the rows at ``R``."""
    M = sp.csr_matrix(M)
    n_vars = M.shape[1]
    C = np.asarray(compiled.C.todense() if hasattr(compiled.C, "todense") else compiled.C)
    s1, s2 = st.shared
    local = C.copy()
    local[:, [s1, s2]] = 0.0
    A_ub = [local @ M.toarray()]
    b_ub = [compiled.kappa - C[:, s1] * R[0] - C[:, s2] * R[1]]
    mono = []
    for k in range(start.size - 1):
        for v in range(start[k], start[k + 1] - 1):
            row = np.zeros(n_vars)
            row[v], row[v + 1] = 1.0, -1.0
            mono.append(row)
    if mono:
        A_ub.append(np.array(mono))
        b_ub.append(np.zeros(len(mono)))
    return linprog(sense * st.d2, A_ub=np.vstack(A_ub), b_ub=np.concatenate(b_ub), A_eq=st.d1[None],
                   b_eq=[R[0]], bounds=(0, 1), method="highs")


@pytest.mark.parametrize("seed", range(12))
def test_the_oracle_matches_linprog_at_random_shared_rates(seed, monkeypatch):
    s, y, g, w, slack = _instance(seed)
    _, ref, _ = _fit(s, y, g, w, slack, monkeypatch, structured=False)
    calls = _spy(monkeypatch)
    _fit(s, y, g, w, slack, monkeypatch, structured=True)
    compiled, start, M = calls[0].compiled, np.asarray(calls[0].start), calls[0].M
    st = trl.two_rate_structure(compiled, start, M)
    assert st is not None and st.gamma is not None
    C = np.asarray(compiled.C.todense() if hasattr(compiled.C, "todense") else compiled.C)
    rng = np.random.default_rng(seed)
    center = ref.atom_rates[st.shared]
    n_feasible = 0
    for trial in range(25):
        R = center + (rng.normal(0.0, 0.03, 2) if trial else 0.0)
        lo = _reference_range(st, compiled, start, M, R, 1.0)
        o = trl.sum_range(st, R)
        assert o["ok"] == (lo.status == 0)
        if lo.status != 0:
            assert not trl.feasible(st, R) and trl.rule_at(st, R) is None
            continue
        hi = _reference_range(st, compiled, start, M, R, -1.0)
        assert o["f_min"] == pytest.approx(lo.fun, abs=1e-9)
        assert o["f_max"] == pytest.approx(-hi.fun, abs=1e-9)
        inside = lo.fun <= R[1] + 1e-12 and R[1] <= -hi.fun - 1e-12
        outside = R[1] < lo.fun - 1e-9 or R[1] > -hi.fun + 1e-9
        if inside or outside:
            assert trl.feasible(st, R) == inside
        if trl.feasible(st, R):
            n_feasible += 1
            x = trl.rule_at(st, R)
            rates = sp.csr_matrix(M) @ x
            assert np.max(C @ rates - compiled.kappa) <= 1e-9  # every row, recounted
            assert np.max(np.abs(rates[st.shared] - R)) <= 1e-9  # the shared rates are R
            for k in range(start.size - 1):
                assert np.all(np.diff(x[start[k]:start[k + 1]]) >= 0)
    assert n_feasible >= 1  # the HiGHS optimum's rates at least


def _bench_data(n, slack):
    """``bench/many_groups.py --goal eo``'s data: groups of 4 rows (2 positive, 2 negative)."""
    rng = np.random.default_rng(1)
    g = np.repeat(np.arange(n), 4)
    y = np.tile(np.array([1, 0, 1, 0]), n)
    shift = rng.normal(0.0, 0.5, n)[g]
    s = 1.0 / (1.0 + np.exp(-(1.5 * y - 0.75 + shift + rng.normal(size=g.size))))
    return s, y, g, np.ones(g.size), slack


def _youden(s, y, g):
    """Every group's largest tpr - fpr over its thresholds (all off included), counted with NumPy."""
    out = []
    for grp in np.unique(g):
        m = g == grp
        ss, yy = s[m], y[m]
        best = 0.0
        for t in np.unique(ss):
            on = ss >= t
            best = max(best, on[yy == 1].mean() - on[yy == 0].mean())
        out.append(best)
    return np.array(out)


@pytest.mark.parametrize("slack", [0.0, 0.02, 0.1])
def test_many_groups_dispatch_and_reach_the_closed_form_bound_and_highs(slack, monkeypatch):
    n = 600  # above MIN_CHAINS: the dispatch uses the solver
    s, y, g, w, _ = _bench_data(n, slack)
    calls = _spy(monkeypatch)
    problem = _problem(s, y, g, w, slack)
    codes, cells = cell_codes({"g": g}, ["g"])
    rule, sol = fit_threshold_rule(problem.compiled, {"train": s}, {"train": codes}, cells, ["g"])
    assert len(calls) == 1 and calls[0].out is not None
    bound = (1.0 - (float(_youden(s, y, g).min()) + 2 * slack)) / 2
    error, gaps = _recount(rule.probabilities(s, codes), y, g, w)
    assert np.max(np.abs(gaps)) <= slack + 1e-9
    assert error >= bound - 1e-9
    if _youden(s, y, g).min() == 0.0:
        assert sol.objective == pytest.approx(bound, abs=1e-9)
    monkeypatch.setattr(srl, "MIN_CHAINS", 10**9)
    _, ref = fit_threshold_rule(problem.compiled, {"train": s}, {"train": codes}, cells, ["g"])
    assert sol.objective == pytest.approx(ref.objective, abs=1e-9)


def _hand_problem(rows, kappa, M, start, coef):
    """A compiled problem's fields the solver reads, for a hand-made LP."""
    return types.SimpleNamespace(C=sp.csr_matrix(np.asarray(rows, float)), kappa=np.asarray(kappa, float),
                                 n_atoms=np.shape(M)[0], objective_coef=np.asarray(coef, float),
                                 objective_constant=0.0, metric=None, thresholds=(), metric_constraints=()), \
        np.asarray(start), \
        sp.csc_matrix(np.asarray(M, float))


def _two_cells():
    """Two cells of two bins (a positive bin, a negative bin). Atoms: 0 overall tpr, 1 overall fpr,
    2-3 cell 0's tpr and fpr, 4-5 cell 1's, 6 cell 0's positive rate (reads both labels)."""
    M = [[0.5, 0, 0.5, 0], [0, 0.5, 0, 0.5], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1],
         [0.5, 0.5, 0, 0]]
    return M, [0, 2, 4]


def _eo_rows(slack):
    """|tpr_k - tpr| <= slack and |fpr_k - fpr| <= slack for both cells."""
    rows, kappa = [], []
    for local, shared in ((2, 0), (3, 1), (4, 0), (5, 1)):
        for sign in (1, -1):
            r = np.zeros(7)
            r[local], r[shared] = sign, -sign
            rows.append(r)
            kappa.append(slack)
    return rows, kappa


def test_the_hand_made_structure_is_recognized_and_solved():
    M, start = _two_cells()
    rows, kappa = _eo_rows(0.1)
    coef = [-0.5, 0.5, 0, 0, 0, 0, 0]  # error - 1/2 with equal classes: (fpr - tpr) / 2
    compiled, st, Mc = _hand_problem(rows, kappa, M, start, coef)
    sol = trl.solve_two_rate(compiled, st, Mc)
    # HiGHS through the LP path (two chains: below MIN_CHAINS, so HiGHS answers)
    ref = _lp.solve_threshold_lp(compiled, _lp.Chains(start=st, record=np.zeros(2, np.int64), n_records=1,
                                                      M=Mc))
    assert sol is not None
    assert sol.objective == pytest.approx(ref.objective, abs=1e-12)
    # closed form: both cells rank their negative bin above their positive bin, so every cell's point has
    # tpr <= fpr, and so has R (their average): the objective (F - T) / 2 is at least 0, and the rule that
    # takes nothing on reaches it
    assert sol.objective == pytest.approx(0.0, abs=1e-12)
    # with the first cell's positive ranked on top, the second cell still has t_1 <= f_1, and its box gives
    # t_1 >= T - 0.1, f_1 <= F + 0.1: T - F <= 0.2, so (F - T) / 2 >= -0.1, reached
    M2 = np.array(M, float)
    M2[:, [0, 1]] = M2[:, [1, 0]]
    compiled, st, Mc = _hand_problem(rows, kappa, M2, start, coef)
    sol = trl.solve_two_rate(compiled, st, Mc)
    ref = _lp.solve_threshold_lp(compiled, _lp.Chains(start=st, record=np.zeros(2, np.int64), n_records=1,
                                                      M=Mc))
    assert sol is not None
    assert sol.objective == pytest.approx(ref.objective, abs=1e-12)
    assert sol.objective == pytest.approx(-0.1, abs=1e-12)


def test_a_row_reading_both_rates_of_a_cell_is_not_this_structure():
    M, start = _two_cells()
    rows, kappa = _eo_rows(0.1)
    r = np.zeros(7)
    r[2], r[3], r[0] = 1, 1, -1  # tpr_0 + fpr_0 - tpr <= 0.2: not an axis-aligned bound
    compiled, st, Mc = _hand_problem(rows + [r], kappa + [0.2], M, start, [-0.5, 0.5, 0, 0, 0, 0, 0])
    assert trl.two_rate_structure(compiled, st, Mc) is None


def test_a_local_atom_reading_both_labels_is_not_this_structure():
    M, start = _two_cells()
    rows, kappa = _eo_rows(0.1)
    r = np.zeros(7)
    r[6], r[0] = 1, -1  # cell 0's positive rate against the overall tpr
    compiled, st, Mc = _hand_problem(rows + [r], kappa + [0.2], M, start, [-0.5, 0.5, 0, 0, 0, 0, 0])
    assert trl.two_rate_structure(compiled, st, Mc) is None


def test_an_objective_beyond_the_shared_rates_is_refused():
    M, start = _two_cells()
    rows, kappa = _eo_rows(0.1)
    compiled, st, Mc = _hand_problem(rows, kappa, M, start, [0, 0, 1, 0, 0, 0, 0])  # cell 0's tpr alone
    structure = trl.two_rate_structure(compiled, st, Mc)
    assert structure is not None and structure.gamma is None
    assert trl.solve_two_rate(compiled, st, Mc) is None


def test_one_or_three_shared_rates_are_not_this_structure():
    M, start = _two_cells()
    rows, kappa = _eo_rows(0.1)
    tpr_only = [r for r in rows if r[1] == 0]
    k_only = [k for r, k in zip(rows, kappa) if r[1] == 0]
    compiled, st, Mc = _hand_problem(tpr_only, k_only, M, start, [-0.5, 0.5, 0, 0, 0, 0, 0])
    assert trl.two_rate_structure(compiled, st, Mc) is None
    assert srl.shared_rate_structure(compiled, st, Mc) is not None  # the one-rate solver's
    M = np.array(M, float)
    M = np.vstack([M, [0.25, 0.25, 0.25, 0.25]])  # atom 7: the overall positive rate, a third shared atom
    r = np.zeros(8)
    r[6], r[7] = 1, -1
    rows8 = [np.append(row, 0.0) for row in rows] + [r]
    compiled, st, Mc = _hand_problem(rows8, kappa + [0.1], M, start, [-0.5, 0.5, 0, 0, 0, 0, 0, 0])
    assert trl.two_rate_structure(compiled, st, Mc) is None


@pytest.mark.parametrize("seed", range(6))
def test_zero_slack_with_an_interior_is_solved_and_matches_highs(seed, monkeypatch):
    # every group ranks one positive above both its negatives: every ROC polygon holds the triangle
    # (0, 0), (1/2, 0), (1, 1), so their intersection (the feasible rates at zero slack) has an interior
    rng = np.random.default_rng(200 + seed)
    G = int(rng.integers(2, 7))
    g = np.repeat(np.arange(G), 4)
    y = np.tile([1, 0, 0, 1], G)
    s = np.column_stack([np.full(G, 5.0), rng.integers(0, 4, G), rng.integers(0, 4, G),
                         rng.integers(0, 6, G)]).ravel().astype(float)
    w = rng.uniform(0.5, 2.0, g.size)
    _, ref, _ = _fit(s, y, g, w, 0.0, monkeypatch, structured=False)
    calls = _spy(monkeypatch)
    _, sol, p = _fit(s, y, g, w, 0.0, monkeypatch, structured=True)
    assert calls[0].out is not None
    assert sol.objective == pytest.approx(ref.objective, abs=1e-9)
    error, gaps = _recount(p, y, g, w)
    assert error == pytest.approx(ref.objective, abs=1e-9)
    assert np.max(np.abs(gaps)) <= 1e-9


def _fit_goals(s, y, g, w, goals, monkeypatch, structured):
    """As ``_fit``, for a list of goals."""
    monkeypatch.setattr(srl, "MIN_CHAINS", 1 if structured else 10**9)
    ds = ro.Dataset(s[:, None], y, weights=w, groups={"g": g})
    problem = ro.Problem(constraints=goals, datasets=ds)
    codes, cells = cell_codes({"g": g}, ["g"])
    rule, sol = fit_threshold_rule(problem.compiled, {"train": s}, {"train": codes}, cells, ["g"])
    return rule, sol, rule.probabilities(s, codes)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("case", ["one_sided", "tpr_pinned"])
def test_one_sided_rows_and_one_pinned_rate_match_highs(seed, case, monkeypatch):
    # one-sided rows (a cell's box open on one side: several or no rows per cell and side), and true positive
    # rates held exactly equal (slack 0) beside false positive rates within 0.1 (the first coordinate's boxes
    # are points, the second's are not)
    s, y, g, w, _ = _instance(300 + seed)
    if case == "one_sided":
        goals = [ro.goals.equalized_odds("g", slack=0.05, sides="upper")]
    else:
        goals = [ro.goals.equal_opportunity("g", slack=0.0), ro.goals.equalized_odds("g", slack=0.1)]
    _, ref, _ = _fit_goals(s, y, g, w, goals, monkeypatch, structured=False)
    calls = _spy(monkeypatch)
    _, sol, p = _fit_goals(s, y, g, w, goals, monkeypatch, structured=True)
    assert len(calls) == 1 and calls[0].out is not None
    assert sol.objective == pytest.approx(ref.objective, abs=1e-9)
    error, gaps = _recount(p, y, g, w)
    assert error == pytest.approx(ref.objective, abs=1e-9)
    if case == "one_sided":
        assert np.max(gaps) <= 0.05 + 1e-9
    else:
        assert np.max(np.abs(gaps[:, 0])) <= 1e-9 and np.max(np.abs(gaps[:, 1])) <= 0.1 + 1e-9
