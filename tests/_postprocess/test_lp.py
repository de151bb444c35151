"""The threshold LP against brute force over every per-group threshold combination.

Small data (3 groups, at most 5 distinct scores per group, 13 in all): every
deterministic rule "positive iff score >= t_g" is enumerated, its rates are
counted with NumPy, and the best *mixture* of those rules is found by an
independent LP over the mixture weights (scipy's linprog), or, for the
F-measure, by Dinkelbach's iteration over that LP. The threshold LP must reach
the same optimum. Without constraints the optimum of a linear or a
linear-fractional objective is a vertex, a single deterministic rule: then the
brute-force maximum itself is the reference.
"""

import itertools

import numpy as np
import pytest
import rateopt as ro
from rateopt._postprocess._rule import cell_codes, fit_threshold_rule
from scipy.optimize import linprog

GROUPS = ("a", "b", "c")


def _data(seed, weighted=False):
    rng = np.random.default_rng(seed)
    n = 90
    g = rng.choice(GROUPS, n, p=[0.45, 0.35, 0.2])
    y = rng.integers(0, 2, n)
    offset = {"a": 0, "b": 3, "c": 7}
    s = np.array([offset[gi] + min(4, max(0, int(round(yi * 1.5 + rng.normal(1.2, 1.0))))) for gi, yi in zip(g, y)],
                 dtype=float)
    w = rng.uniform(0.5, 2.0, n) if weighted else np.ones(n)
    return s, y, g, w


def _combos(s, g):
    """Every deterministic per-group rule: (thresholds, decisions)."""
    per_group = []
    for grp in GROUPS:
        vals = np.unique(s[g == grp])
        per_group.append(list(vals) + [np.inf])  # inf: no positive in the group
    for ts in itertools.product(*per_group):
        t = dict(zip(GROUPS, ts))
        yield ts, (s >= np.array([t[gi] for gi in g])).astype(float)


def _rates(d, y, g, w):
    """Reference counts with NumPy: error, ppr per group and overall, tp, fp, fn proportions."""
    W = w.sum()
    out = {"error": float(w @ (d != y)) / W, "ppr": float(w @ d) / W,
           "tp": float(w @ (d * y)) / W, "fp": float(w @ (d * (1 - y))) / W, "fn": float(w @ ((1 - d) * y)) / W}
    for grp in GROUPS:
        m = g == grp
        out[f"ppr_{grp}"] = float(w[m] @ d[m]) / w[m].sum()
    return out


def _problem(s, y, g, w, slack, objective=None):
    ds = ro.Dataset(s[:, None], y, weights=w, groups={"g": g})
    ctx = ds.context()
    cons = []
    if slack is not None:
        for grp in GROUPS:
            sub = ctx.subset(group="g", value=grp)
            cons += [ro.positive_prediction_rate(sub) <= ro.positive_prediction_rate(ctx) + slack,
                     ro.positive_prediction_rate(sub) >= ro.positive_prediction_rate(ctx) - slack]
    obj = None if objective is None else ro.goals.objective(objective, ds)
    return ro.Problem(objective=obj, constraints=cons, datasets=ds)


def _fit(problem, s, g, merge=True):
    codes, cells = cell_codes({"g": g}, ["g"])
    rule, sol = fit_threshold_rule(problem.compiled, {"train": s}, {"train": codes}, cells, ["g"], merge=merge)
    return rule, sol, codes


def _mixture_constraints(R, slack):
    """Rows of ``|ppr_g - ppr| <= slack`` over the mixture weights of the enumerated rules."""
    A, b = [], []
    for grp in GROUPS:
        diff = np.array([r[f"ppr_{grp}"] - r["ppr"] for r in R])
        A += [diff, -diff]
        b += [slack, slack]
    return np.array(A), np.array(b)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_error_under_parity_matches_the_best_mixture_of_enumerated_rules(seed, weighted):
    s, y, g, w = _data(seed, weighted)
    assert np.unique(s).size <= 15
    slack = 0.03
    R = [_rates(d, y, g, w) for _, d in _combos(s, g)]
    A, b = _mixture_constraints(R, slack)
    ref = linprog([r["error"] for r in R], A_ub=A, b_ub=b, A_eq=np.ones((1, len(R))), b_eq=[1.0],
                  bounds=(0, None), method="highs")
    assert ref.status == 0
    rule, sol, codes = _fit(_problem(s, y, g, w, slack), s, g)
    assert sol.slack == 0.0
    assert sol.objective == pytest.approx(ref.fun, abs=1e-8)
    # the rule's own expected decisions, counted with NumPy, give that error and meet the constraints
    p = rule.probabilities(s, codes)
    got = _rates(p, y, g, w)
    assert float(w @ (p * (1 - y) + (1 - p) * y)) / w.sum() == pytest.approx(ref.fun, abs=1e-8)
    for grp in GROUPS:
        assert abs(got[f"ppr_{grp}"] - got["ppr"]) <= slack + 1e-8


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unconstrained_optimum_is_the_best_enumerated_rule(seed):
    s, y, g, w = _data(seed)
    best_error = min(_rates(d, y, g, w)["error"] for _, d in _combos(s, g))
    _, sol, _ = _fit(_problem(s, y, g, w, None), s, g)
    assert sol.objective == pytest.approx(best_error, abs=1e-10)

    def f1(d):
        r = _rates(d, y, g, w)
        return 2 * r["tp"] / (2 * r["tp"] + r["fp"] + r["fn"])

    best_f1 = max(f1(d) for _, d in _combos(s, g))
    _, sol, _ = _fit(_problem(s, y, g, w, None, objective="f_measure"), s, g)
    assert -sol.objective == pytest.approx(best_f1, abs=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [0, 3])
def test_f_measure_under_parity_matches_dinkelbach_over_enumerated_rules(seed, weighted):
    s, y, g, w = _data(seed, weighted)
    slack = 0.04
    R = [_rates(d, y, g, w) for _, d in _combos(s, g)]
    N = np.array([2 * r["tp"] for r in R])
    D = np.array([2 * r["tp"] + r["fp"] + r["fn"] for r in R])
    A, b = _mixture_constraints(R, slack)
    F = 0.0
    for _ in range(100):  # Dinkelbach: maximize N - F D over mixtures until F = N / D at the maximizer
        res = linprog(-(N - F * D), A_ub=A, b_ub=b, A_eq=np.ones((1, len(R))), b_eq=[1.0], bounds=(0, None),
                      method="highs")
        lam = res.x
        F_new = (N @ lam) / (D @ lam)
        if abs(F_new - F) < 1e-13:
            break
        F = F_new
    rule, sol, codes = _fit(_problem(s, y, g, w, slack, objective="f_measure"), s, g)
    assert -sol.objective == pytest.approx(F, abs=1e-8)
    p = rule.probabilities(s, codes)
    got = _rates(p, y, g, w)
    assert 2 * got["tp"] / (2 * got["tp"] + got["fp"] + got["fn"]) == pytest.approx(F, abs=1e-8)
    # the constrained optimum is below the unconstrained one (the constraint binds on these data)
    assert F <= max(2 * r["tp"] / (2 * r["tp"] + r["fp"] + r["fn"]) for r in R) + 1e-12


def test_infeasible_goals_give_the_least_violation():
    s, y, g, w = _data(0)
    # group a's positive rate >= 0.9 but the overall one <= 0.1 cannot both hold: the least largest
    # violation is computed by linprog over the enumerated rules' mixtures (with a slack column)
    ds = ro.Dataset(s[:, None], y, groups={"g": g})
    ctx = ds.context()
    cons = [ro.positive_prediction_rate(ctx.subset(group="g", value="a")) >= 0.9,
            ro.positive_prediction_rate(ctx) <= 0.1]
    problem = ro.Problem(constraints=cons, datasets=ds)
    R = [_rates(d, y, g, w) for _, d in _combos(s, g)]
    k = len(R)
    # variables: lambda (k), z; rows: 0.9 - ppr_a - z <= 0, ppr - 0.1 - z <= 0
    A = np.array([[-r["ppr_a"] for r in R] + [-1.0], [r["ppr"] for r in R] + [-1.0]])
    ref = linprog(np.r_[np.zeros(k), 1.0], A_ub=A, b_ub=[-0.9, 0.1], A_eq=np.r_[np.ones(k), 0.0][None, :],
                  b_eq=[1.0], bounds=[(0, None)] * k + [(None, None)], method="highs")
    _, sol, _ = _fit(problem, s, g)
    assert ref.fun > 0.01
    assert sol.slack == pytest.approx(ref.fun, abs=1e-8)


@pytest.mark.parametrize("objective", [None, "f_measure"])
def test_merging_runs_of_one_membership_keeps_the_optimum(objective):
    # continuous scores, weights, a parity goal: the merged LP has far fewer bins and the same optimum
    rng = np.random.default_rng(11)
    n = 3000
    g = rng.choice(GROUPS, n)
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + y + (g == "a") * 0.4
    w = rng.uniform(0.5, 2.0, n)
    problem = _problem(s, y, g, w, 0.02, objective=objective)
    rule, sol, _ = _fit(problem, s, g)
    full_rule, full, _ = _fit(problem, s, g, merge=False)
    assert rule.edges.size < full_rule.edges.size / 1.5
    assert sol.objective == pytest.approx(full.objective, abs=1e-9)


@pytest.mark.parametrize("objective", [None, "f_measure"])
def test_the_table_form_and_the_increment_form_reach_one_optimum(monkeypatch, objective):
    # the table form (a row per neighbouring pair of bins) is the fallback when the increment form is too dense
    s, y, g, w = _data(2, weighted=True)
    problem = _problem(s, y, g, w, 0.03, objective=objective)
    _, increments, _ = _fit(problem, s, g)
    import rateopt._postprocess._lp as lp_module

    monkeypatch.setattr(lp_module, "_INCREMENT_FORM_MAX_NNZ", 0)
    rule, table, codes = _fit(problem, s, g)
    assert table.objective == pytest.approx(increments.objective, abs=1e-9)
    p = rule.probabilities(s, codes)
    got = _rates(p, y, g, w)
    for grp in GROUPS:
        assert abs(got[f"ppr_{grp}"] - got["ppr"]) <= 0.03 + 1e-8
