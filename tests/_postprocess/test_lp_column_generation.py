"""The threshold LP by column generation (``_lp.solve_threshold_lp_generated``) against HiGHS on the whole LP.

References:

- HiGHS on the same increment-form LP over every bin (``solve_threshold_lp``):
  the optimal objective to 1e-9 and the same slack (0, or the least largest
  violation when no rule meets the goals);
- the mixture of threshold rules the solution describes, applied to every row
  (each record's table looked up by the row's score) and its rates counted
  with NumPy: the error is the LP's objective and every goal holds to 1e-9
  beyond ``epsilon`` plus the reported slack.

The first subset and the bins a round adds are made small, so that the
solutions need several pricing rounds.
"""

import numpy as np
import pytest
import rateopt as ro
from rateopt._postprocess import _lp as cg
from rateopt._postprocess._lp import Chains, solve_threshold_lp
from rateopt._postprocess._mixture import _chain_bins


def _instance(seed, n=400, R=3):
    """Rows in 3 groups with labels and weights, and R records' scores of them (ties included)."""
    rng = np.random.default_rng(seed)
    g = rng.choice(np.array(["a", "b", "c"]), n, p=[0.5, 0.3, 0.2])
    y = rng.integers(0, 2, n)
    y[:3], y[3:6] = 1, 0
    g[:6] = ["a", "b", "c", "a", "b", "c"]
    w = rng.uniform(0.3, 2.0, n) if seed % 2 else np.ones(n)
    latent = y + 0.6 * (g == "b") - 0.4 * (g == "c")
    scores = np.stack([np.round(latent + rng.normal(scale=0.5 + 0.3 * r, size=n), 1 + r % 2) for r in range(R)])
    return scores, y, g, w


def _goals(kind, slack):
    if kind == "dp":
        return [ro.goals.demographic_parity("g", slack=slack)]
    if kind == "eo":
        return [ro.goals.equal_opportunity("g", slack=slack)]
    # a recall floor no rule within the positive rate budget meets: the violation phase
    return [ro.goals.recall_floor(0.95), ro.goals.coverage_budget(0.2), ro.goals.demographic_parity("g", slack=slack)]


def _lp(scores, y, g, w, goals):
    problem = ro.Problem(constraints=goals, datasets=ro.Dataset(np.zeros((y.size, 1)), y, weights=w,
                                                                groups={"g": g}))
    compiled = problem.compiled
    start, edges, M = _chain_bins(compiled, (scores, np.argsort(scores, axis=1, kind="stable")), None)
    R = scores.shape[0]
    return compiled, Chains(start=start, record=np.arange(R, dtype=np.int64), n_records=R, M=M), edges


def _decisions(sol, chains, edges, scores):
    """Every row's probability of a positive decision under the solution's mixture of rules."""
    p = np.zeros(scores.shape[1])
    for r in range(scores.shape[0]):
        a, b = chains.start[r], chains.start[r + 1]
        pos = np.searchsorted(edges[a:b], scores[r], side="right") - 1
        p += sol.mu[r] * sol.x[a:b][pos]
    return p


def _violations(p, y, g, w, kind, slack):
    """The goals' largest violation beyond their own slack, recounted with NumPy."""
    def rate(m):
        return float(w[m] @ p[m]) / w[m].sum()

    pos = y == 1
    if kind == "dp":
        return max(abs(rate(g == k) - rate(np.ones_like(pos))) for k in "abc") - slack
    if kind == "eo":
        return max(abs(rate((g == k) & pos) - rate(pos)) for k in "abc") - slack
    every = np.ones_like(pos)
    return max(0.95 - rate(pos), rate(every) - 0.2, max(abs(rate(g == k) - rate(every)) for k in "abc") - slack)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["dp", "eo", "infeasible"])
def test_generated_lp_reaches_the_full_lps_optimum(seed, kind, monkeypatch):
    monkeypatch.setattr(cg, "_GENERATED_ADD_BINS", 2)  # a few bins a round: several pricing rounds
    scores, y, g, w = _instance(seed)
    slack = (0.0, 0.02, 0.05)[seed % 3]
    compiled, chains, edges = _lp(scores, y, g, w, _goals(kind, slack))
    rounds = []
    real = cg._RestrictedLP

    def spy(*args):
        rounds.append(args[-1].size)
        return real(*args)

    monkeypatch.setattr(cg, "_RestrictedLP", spy)
    full = solve_threshold_lp(compiled, chains, epsilon=0.0)
    got = cg.solve_threshold_lp_generated(compiled, chains, epsilon=0.0, initial_bins=3)
    assert len(rounds) >= 2 and rounds[-1] < chains.n_vars  # priced in rounds, never the whole LP
    assert got.objective == pytest.approx(full.objective, abs=1e-9)
    assert got.slack == pytest.approx(full.slack, abs=1e-9)
    assert (got.slack > 0) == (kind == "infeasible")
    p = _decisions(got, chains, edges, scores)
    error = float(w @ (p * (1 - y) + (1 - p) * y)) / w.sum()
    assert error == pytest.approx(got.objective, abs=1e-9)
    assert _violations(p, y, g, w, kind, slack) <= got.slack * (1 + 1e-9) + 1e-9
    assert np.all(np.diff(got.x[chains.start[0]:chains.start[1]]) >= 0)  # a monotone table per record
    assert np.all((got.x >= 0) & (got.x <= 1)) and got.mu.sum() == pytest.approx(1.0)


def test_pricing_matches_highs_reduced_costs(monkeypatch):
    """The reduced costs priced from the duals (suffix sums of ``M^T y``) are HiGHS's own on the chosen bins."""
    scores, y, g, w = _instance(3)
    compiled, chains, _ = _lp(scores, y, g, w, _goals("eo", 0.0))
    lp = cg._RestrictedLP(compiled, chains, chains.M, cg._initial_bins(chains, 5))
    seen = {}
    real = cg.solve_lp

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen["col_dual"] = out.col_dual
        return out

    monkeypatch.setattr(cg, "solve_lp", spy)
    status, _, y_rows = lp.builder.solve(cg.objective_of(compiled), slack=0.0, duals=True)
    assert status == "optimal"
    reduced = lp.reduced_costs(y_rows)
    assert np.allclose(reduced[lp.chosen], seen["col_dual"][:lp.chosen.size], atol=1e-12)
