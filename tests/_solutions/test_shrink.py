"""Shrinking LP, rank heuristic and mixtures (``rateopt._solutions._shrink``).

References are independent of the code under test: brute force over supports
with ``scipy.optimize.linprog``, the min-max LP solved by ``linprog``,
closed-form cases worked out by hand, and a loop-based re-implementation of the
rank rule. See Cotter et al. (JMLR 2019), Lemma 5 and Eq. 18, and
``/work/shared/papers/notes/001.md`` sections 7 and 12.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

import rateopt._solutions._shrink as shrink_mod
from rateopt._solutions._shrink import (
    ShrinkResult,
    best_iterate,
    lambda_weighted_mixture,
    shrink,
    uniform_mixture,
)

# --------------------------------------------------------------------------- #
# Helpers and independent references
# --------------------------------------------------------------------------- #


def random_problem(rng, T, m, *, grid=True):
    """Objectives and constraints shaped like 0-1 rates.

    On a coarse grid (ties and degenerate vertices are common) or continuous.
    """
    if grid:
        f = rng.integers(0, 21, T) / 20.0
        G = rng.integers(-6, 10, (T, m)) / 20.0
    else:
        f = rng.random(T)
        G = rng.random((T, m)) - 0.3
    return f, G


def check_invariants(res, f, G, eps):
    """Properties every ShrinkResult must have."""
    T, m = G.shape
    assert isinstance(res, ShrinkResult)
    w = res.weights
    assert w.shape == (T,)
    assert np.all(w >= 0)
    assert abs(w.sum() - 1.0) <= 1e-12
    assert 1 <= res.support.size <= m + 1
    np.testing.assert_array_equal(res.support, np.flatnonzero(w))
    assert np.all(w[res.support] >= 1e-12)
    assert res.objective == pytest.approx(float(f @ w), abs=1e-12)
    assert res.constraint_values.shape == (m,)
    np.testing.assert_allclose(res.constraint_values, G.T @ w, rtol=0, atol=1e-12)
    expected_mv = max(0.0, float((G.T @ w).max())) if m else 0.0
    assert res.max_violation == pytest.approx(expected_mv, abs=1e-12)
    assert res.epsilon == eps
    if res.feasible:
        assert res.infeasibility == 0.0
        if m:
            assert res.constraint_values.max() <= eps + 1e-9
    else:
        assert m >= 1
        assert res.infeasibility > eps - 1e-9
        assert res.constraint_values.max() <= res.infeasibility + 1e-9
    for arr in (res.weights, res.support, res.constraint_values):
        assert not arr.flags.writeable


def linprog_restricted(f, G, bound, *, tight=False):
    """min <q, f> over the simplex s.t. G^T q <= bound, by scipy's linprog.

    Returns the optimal value, or None if infeasible. ``tight`` lowers
    linprog's feasibility tolerances from 1e-7 to 1e-10.
    """
    k, m = G.shape
    options = {}
    if tight:
        options = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    out = linprog(
        f,
        A_ub=G.T if m else None,
        b_ub=np.full(m, bound) if m else None,
        A_eq=np.ones((1, k)),
        b_eq=[1.0],
        bounds=[(0, None)] * k,
        method="highs",
        options=options,
    )
    if out.status == 2:
        return None
    assert out.status == 0, out.message
    return float(out.fun)


def brute_force(f, G, eps):
    """Best objective over all mixtures supported on <= m + 1 candidates."""
    T, m = G.shape
    best = None
    for k in range(1, min(T, m + 1) + 1):
        for S in itertools.combinations(range(T), k):
            S = list(S)
            val = linprog_restricted(f[S], G[S], eps)
            if val is not None and (best is None or val < best):
                best = val
    return best


def minmax_reference(G):
    """z* = min over the simplex of max_i (G^T p)_i, by scipy's linprog."""
    T, m = G.shape
    c = np.zeros(T + 1)
    c[T] = 1.0
    A_ub = np.hstack((G.T, -np.ones((m, 1))))
    A_eq = np.concatenate((np.ones(T), [0.0]))[None, :]
    out = linprog(
        c,
        A_ub=A_ub,
        b_ub=np.zeros(m),
        A_eq=A_eq,
        b_eq=[1.0],
        bounds=[(0, None)] * T + [(None, None)],
        method="highs",
    )
    assert out.status == 0, out.message
    return float(out.fun)


def rank_min(x):
    """Ranks 1..T, 1 = smallest, ties share the smallest rank (plain loops)."""
    return [1 + sum(1 for y in x if y < xi) for xi in x]


def best_iterate_reference(f, G):
    """Eq. 18 by plain loops: clipped violation, then the documented tie-breaks."""
    T = len(f)
    raw = [max(row) if len(row) else 0.0 for row in G]
    v = [max(0.0, r) for r in raw]
    rf, rv = rank_min(list(f)), rank_min(v)
    keys = [(max(rf[t], rv[t]), f[t], raw[t], t) for t in range(T)]
    return min(keys)[3]


# --------------------------------------------------------------------------- #
# shrink: closed forms
# --------------------------------------------------------------------------- #


def test_closed_form_two_candidates():
    # (f, g) = (0.1, +0.2) and (0.3, -0.2): g <= 0 forces p1 <= 1/2, and the
    # objective 0.3 - 0.2 p1 is smallest at p1 = 1/2.
    f = np.array([0.1, 0.3])
    G = np.array([[0.2], [-0.2]])
    res = shrink(f, G)
    check_invariants(res, f, G, 0.0)
    np.testing.assert_allclose(res.weights, [0.5, 0.5], atol=1e-12)
    assert res.objective == pytest.approx(0.2, abs=1e-12)
    np.testing.assert_array_equal(res.support, [0, 1])
    assert res.feasible and res.infeasibility == 0.0
    assert res.max_violation == pytest.approx(0.0, abs=1e-12)


def test_closed_form_with_epsilon():
    # 0.2 p1 - 0.2 (1 - p1) <= 0.1  <=>  p1 <= 3/4; objective 0.3 - 0.2 p1 = 0.15.
    f = np.array([0.1, 0.3])
    G = np.array([[0.2], [-0.2]])
    res = shrink(f, G, epsilon=0.1)
    check_invariants(res, f, G, 0.1)
    np.testing.assert_allclose(res.weights, [0.75, 0.25], atol=1e-12)
    assert res.objective == pytest.approx(0.15, abs=1e-12)
    # max_violation is measured against 0, not epsilon.
    assert res.max_violation == pytest.approx(0.1, abs=1e-12)
    assert res.feasible


def test_feasible_best_candidate_wins_alone():
    f = np.array([0.4, 0.1, 0.2])
    G = np.array([[0.1, -0.1], [-0.3, -0.2], [0.0, 0.0]])
    res = shrink(f, G)
    np.testing.assert_array_equal(res.weights, [0.0, 1.0, 0.0])
    assert res.objective == 0.1


def test_closed_form_infeasible():
    # Every candidate has g1 + g2 = 0.2, so every mixture too: z* = 0.1,
    # attained only by mixtures with g1 = g2 = 0.1.
    # Candidates (f, g1, g2): A (0.1, 0.3, -0.1), B (0.2, -0.1, 0.3),
    # C (0.5, 0.1, 0.1). Mixtures with g1 = g2: q A + q B + (1 - 2q) C,
    # objective 0.5 - 0.7 q, best at q = 1/2: weights (1/2, 1/2, 0), 0.15.
    f = np.array([0.1, 0.2, 0.5])
    G = np.array([[0.3, -0.1], [-0.1, 0.3], [0.1, 0.1]])
    res = shrink(f, G)
    check_invariants(res, f, G, 0.0)
    assert not res.feasible
    assert res.infeasibility == pytest.approx(0.1, abs=1e-12)
    assert res.max_violation == pytest.approx(0.1, abs=1e-11)
    np.testing.assert_allclose(res.weights, [0.5, 0.5, 0.0], atol=1e-10)
    assert res.objective == pytest.approx(0.15, abs=1e-10)


def test_infeasible_with_epsilon_below_zstar():
    f = np.array([0.1, 0.2, 0.5])
    G = np.array([[0.3, -0.1], [-0.1, 0.3], [0.1, 0.1]])
    res = shrink(f, G, epsilon=0.05)
    assert not res.feasible
    assert res.infeasibility == pytest.approx(0.1, abs=1e-12)
    # epsilon just above z*: now feasible, and the extra slack helps.
    res2 = shrink(f, G, epsilon=0.12)
    check_invariants(res2, f, G, 0.12)
    assert res2.feasible and res2.objective < res.objective


def test_m_zero_picks_best_candidate_first_of_ties():
    f = np.array([0.3, 0.1, 0.2, 0.1])
    res = shrink(f, np.zeros((4, 0)))
    check_invariants(res, f, np.zeros((4, 0)), 0.0)
    np.testing.assert_array_equal(res.weights, [0, 1, 0, 0])
    assert res.feasible and res.max_violation == 0.0 and res.objective == 0.1


def test_single_candidate():
    res = shrink([0.3], [[0.2, -0.1]])
    np.testing.assert_array_equal(res.weights, [1.0])
    assert not res.feasible
    assert res.infeasibility == pytest.approx(0.2)
    assert res.max_violation == pytest.approx(0.2)
    res = shrink([0.3], [[0.0, -0.1]])
    assert res.feasible and res.max_violation == 0.0


def test_array_like_inputs_and_integer_dtypes():
    res = shrink([1, 3], [[2], [-2]])
    np.testing.assert_allclose(res.weights, [0.5, 0.5], atol=1e-12)
    assert res.objective == pytest.approx(2.0)
    res = shrink(np.array([True, False]), np.array([[True], [False]]))
    np.testing.assert_array_equal(res.weights, [0.0, 1.0])


def test_inputs_not_modified():
    rng = np.random.default_rng(5)
    f, G = random_problem(rng, 30, 3)
    f0, G0 = f.copy(), G.copy()
    shrink(f, G, epsilon=0.01)
    best_iterate(f, G)
    np.testing.assert_array_equal(f, f0)
    np.testing.assert_array_equal(G, G0)


# --------------------------------------------------------------------------- #
# shrink: random problems
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("grid", [True, False])
def test_random_support_bound_and_feasibility(grid):
    rng = np.random.default_rng(20240601 + grid)
    n_feasible = n_infeasible = 0
    for _ in range(120):
        T = int(rng.integers(1, 201))
        m = int(rng.integers(0, 11))
        eps = float(rng.choice([0.0, 0.0, 0.01, 0.1]))
        f, G = random_problem(rng, T, m, grid=grid)
        G = G + rng.choice([0.0, 0.25])  # half the problems lean infeasible
        res = shrink(f, G, epsilon=eps)
        check_invariants(res, f, G, eps)
        n_feasible += res.feasible
        n_infeasible += not res.feasible
    # The generator must exercise both branches.
    assert n_feasible >= 10 and n_infeasible >= 10


def test_degenerate_duplicate_candidates():
    # Many exact copies of a few candidates: the LP is highly degenerate.
    rng = np.random.default_rng(7)
    for _ in range(20):
        m = int(rng.integers(1, 6))
        f0, G0 = random_problem(rng, 4, m)
        reps = int(rng.integers(5, 40))
        f, G = np.tile(f0, reps), np.tile(G0, (reps, 1))
        res = shrink(f, G)
        check_invariants(res, f, G, 0.0)
        res0 = shrink(f0, G0)
        assert res.feasible == res0.feasible
        assert res.objective == pytest.approx(res0.objective, abs=1e-9)


def test_all_identical_and_all_zero_constraints():
    f = np.full(10, 0.25)
    G = np.zeros((10, 4))
    res = shrink(f, G)
    check_invariants(res, f, G, 0.0)
    assert res.feasible and res.objective == pytest.approx(0.25)


def test_brute_force_over_small_supports():
    rng = np.random.default_rng(123)
    n_feasible = n_infeasible = 0
    for _ in range(40):
        T = int(rng.integers(1, 8))
        m = int(rng.integers(0, 3))
        eps = float(rng.choice([0.0, 0.05]))
        f, G = random_problem(rng, T, m, grid=bool(rng.integers(2)))
        G = G + rng.choice([0.0, 0.2])  # half the problems lean infeasible
        res = shrink(f, G, epsilon=eps)
        check_invariants(res, f, G, eps)
        ref = brute_force(f, G, eps)
        if ref is None:
            assert not res.feasible
            n_infeasible += 1
        else:
            assert res.feasible
            assert abs(res.objective - ref) <= 1e-9
            n_feasible += 1
    assert n_feasible >= 5 and n_infeasible >= 5


def test_m_stochastic_no_worse_than_uniform_and_lambda_weighted():
    rng = np.random.default_rng(99)
    for _ in range(60):
        T = int(rng.integers(1, 150))
        m = int(rng.integers(1, 8))
        f, G = random_problem(rng, T, m, grid=bool(rng.integers(2)))
        for w in (uniform_mixture(T), lambda_weighted_mixture(rng.random(T))):
            eps = max(0.0, float((G.T @ w).max()))  # this mixture is LP-feasible
            res = shrink(f, G, epsilon=eps)
            check_invariants(res, f, G, eps)
            assert res.feasible
            assert res.objective <= float(f @ w) + 1e-12
            assert res.constraint_values.max() <= eps + 1e-9


def test_epsilon_zero_when_uniform_feasible():
    # Notes section 12: with eps = 0 and a feasible mixture available, the
    # m-stochastic train violation is 0.
    rng = np.random.default_rng(3)
    for _ in range(30):
        T, m = 50, 3
        f, G = random_problem(rng, T, m)
        G = G - np.maximum(0.0, G.mean(axis=0))  # uniform mixture now feasible
        res = shrink(f, G)
        assert res.feasible
        assert res.max_violation <= 1e-9
        assert res.objective <= f.mean() + 1e-12


def test_infeasible_matches_minmax_linprog():
    rng = np.random.default_rng(2718)
    done = 0
    for _ in range(60):
        T = int(rng.integers(2, 60))
        m = int(rng.integers(1, 6))
        f, G = random_problem(rng, T, m, grid=bool(rng.integers(2)))
        G = G + 0.15  # push towards infeasibility
        eps = float(rng.choice([0.0, 0.02]))
        res = shrink(f, G, epsilon=eps)
        if res.feasible:
            continue
        done += 1
        check_invariants(res, f, G, eps)
        z_ref = minmax_reference(G)
        assert z_ref > eps
        assert res.infeasibility == pytest.approx(z_ref, abs=1e-9)
        assert res.max_violation == pytest.approx(z_ref, abs=1e-9)
        # Objective minimal among mixtures whose largest constraint value is z*
        # (up to the documented slack 1e-12 * max(1, max|G|)). The optimal value
        # can be steep in the bound near z* (slopes ~1e3 occur here), so the
        # reference uses the same slack and tight tolerances.
        slack = 1e-12 * max(1.0, np.abs(G).max())
        obj_ref = linprog_restricted(f, G, z_ref + slack, tight=True)
        assert obj_ref is not None
        assert res.objective == pytest.approx(obj_ref, abs=1e-9)
        # More slack can only help: a sanity bound with a looser reference.
        assert res.objective >= linprog_restricted(f, G, z_ref + 1e-9) - 1e-12
        # No worse than the uniform mixture or any single candidate in violation.
        assert res.max_violation <= max(0.0, (G.T @ uniform_mixture(T)).max()) + 1e-9
        assert res.max_violation <= G.max(axis=1).min() + 1e-9
    assert done >= 15


@pytest.mark.parametrize("row_scales", [
    (1e200, 1.0, 1.0), (1e200, 1e-200, 3.0), (2.0**600, 2.0**-600, 1.0), (1e300, 1e300, 1e300), (1e-300,) * 3,
])
def test_constraints_of_any_magnitude_solve_like_the_unit_scale(row_scales):
    # Regression: a constraint coefficient of 1e200 made HiGHS reject the model
    # (passModel returned kError). Scaling a constraint row by c > 0 keeps the feasible
    # set of G^T p <= 0, so the optimum equals the brute force on the unscaled rows.
    rng = np.random.default_rng(5)
    c = np.array(row_scales)
    done = {True: 0, False: 0}
    for _ in range(25):
        T = int(rng.integers(2, 7))
        f, G = random_problem(rng, T, 3, grid=bool(rng.integers(2)))
        G = G + rng.choice([0.0, 0.2])
        for fscale in (1.0, 1e250):
            res = shrink(f * fscale, G * c)
            ref = brute_force(f, G, 0.0)
            assert res.feasible == (ref is not None)
            assert 1 <= res.support.size <= 4
            assert np.all(res.weights >= 0) and abs(res.weights.sum() - 1) <= 1e-12
            if ref is not None:
                assert f @ res.weights == pytest.approx(ref, abs=1e-9)
                np.testing.assert_array_less(G.T @ res.weights, 1e-9)
            elif len(set(row_scales)) == 1:
                # One scale for every row: z* scales with it (reference on the unscaled rows).
                z_ref = minmax_reference(G)
                assert res.infeasibility == pytest.approx(z_ref * c[0], rel=1e-9, abs=1e-9 * c[0])
                assert np.max(G.T @ res.weights) == pytest.approx(z_ref, abs=1e-9)
            else:
                # Mixed magnitudes: the min-max compares absolute values, so z* is only
                # resolved to ~1e-10 of the largest constraint magnitude (documented).
                Gc = G * c
                big = np.abs(Gc).max()
                lower = Gc.min(axis=0).max()  # no mixture beats any row's best candidate
                upper = Gc.max(axis=1).min()  # the best single candidate
                assert lower - 1e-9 * big <= res.infeasibility <= upper + 1e-9 * big
                # Every row stays within z* up to 1e-9 of its own magnitude.
                vals = Gc.T @ res.weights
                assert np.all(vals <= res.infeasibility + 1e-9 * np.abs(Gc).max(axis=0))
                assert res.max_violation == pytest.approx(res.infeasibility, abs=1e-9 * big)
            done[ref is not None] += 1
    assert done[True] >= 6 and done[False] >= 6


# --------------------------------------------------------------------------- #
# shrink: the support-reduction safeguard and solver failures
# --------------------------------------------------------------------------- #


def test_reduce_support_from_non_vertex_point():
    # Feed a dense (non-basic) mixture to the reduction directly: it must end
    # with <= m + 1 nonzeros, the same expected constraint values and mass,
    # and no larger objective.
    rng = np.random.default_rng(11)
    for _ in range(30):
        T = int(rng.integers(1, 80))
        m = int(rng.integers(0, 8))
        f, G = random_problem(rng, T, m, grid=bool(rng.integers(2)))
        p = rng.random(T) + 0.01
        p /= p.sum()
        q = shrink_mod._reduce_support(p, f, G)
        assert np.count_nonzero(q) <= m + 1
        assert np.all(q >= 0) and abs(q.sum() - 1) <= 1e-12
        np.testing.assert_allclose(G.T @ q, G.T @ p, rtol=0, atol=1e-12)
        assert f @ q <= f @ p + 1e-12


def test_unexpected_highs_status_raises(monkeypatch):
    monkeypatch.setattr(
        shrink_mod,
        "_HIGHS_OPTIONS",
        dict(shrink_mod._HIGHS_OPTIONS, simplex_iteration_limit=0),
    )
    rng = np.random.default_rng(0)
    f, G = random_problem(rng, 20, 3, grid=False)
    with pytest.raises(RuntimeError, match="Iteration limit|kIterationLimit"):
        shrink(f, G)


# --------------------------------------------------------------------------- #
# best_iterate
# --------------------------------------------------------------------------- #


def test_best_iterate_basic():
    # f ranks (1, 2, 3); violations (0.05, 0, 0) rank (3, 1, 1);
    # max ranks (3, 2, 3): candidate 1.
    assert best_iterate([0.10, 0.20, 0.30], [[0.05], [0.0], [-0.1]]) == 1


def test_best_iterate_all_feasible_is_best_objective():
    # All violations clip to 0 and tie at rank 1: only the objective counts,
    # however negative the constraint values are.
    f = [0.3, 0.2, 0.25]
    G = [[-0.5], [-0.01], [-0.9]]
    assert best_iterate(f, G) == 1


def test_best_iterate_rank_tie_broken_by_objective():
    # f ranks (1, 2, 3, 4), violation ranks (4, 3, 2, 1): max (4, 3, 3, 4).
    f = [0.1, 0.2, 0.3, 0.4]
    G = [[0.3], [0.2], [0.1], [0.0]]
    assert best_iterate(f, G) == 1


def test_best_iterate_equal_objective_tie_broken_by_violation():
    # f ranks (2, 2, 1); violation ranks (2, 1, 3); max (2, 2, 3). Candidates 0
    # and 1 tie in rank and objective; 1 has the smaller violation (and
    # dominates 0), so 1 is chosen.
    f = [0.1, 0.1, 0.05]
    G = [[0.3], [0.2], [0.5]]
    assert best_iterate(f, G) == 1
    # Feasible twins: the one with more slack (smaller unclipped max).
    assert best_iterate([0.1, 0.1], [[-0.01], [-0.2]]) == 1


def test_best_iterate_exact_ties_smallest_index():
    # f ranks (3, 1, 1); violation ranks (1, 2, 2); max (3, 2, 2); 1 and 2 are
    # identical: the smaller index wins.
    f = [0.2, 0.1, 0.1]
    G = [[0.0], [0.1], [0.1]]
    assert best_iterate(f, G) == 1
    assert best_iterate([0.5, 0.5, 0.5], [[0.1], [0.1], [0.1]]) == 0


def test_best_iterate_uses_max_over_constraints():
    # Candidate 0 is best in objective but violates constraint 2 badly.
    f = [0.1, 0.2, 0.3]
    G = [[-0.2, 0.4], [0.05, -0.1], [0.0, 0.0]]
    # v = (0.4, 0.05, 0) ranks (3, 2, 1); f ranks (1, 2, 3); max (3, 2, 3).
    assert best_iterate(f, G) == 1


def test_best_iterate_m_zero_and_single():
    assert best_iterate([0.3, 0.1, 0.1], np.zeros((3, 0))) == 1
    assert best_iterate([0.3], [[0.7]]) == 0


def test_best_iterate_matches_loop_reference_and_is_pareto_undominated():
    rng = np.random.default_rng(4242)
    for _ in range(300):
        T = int(rng.integers(1, 25))
        m = int(rng.integers(0, 4))
        # A very coarse grid makes ties in both coordinates common.
        f = rng.integers(0, 5, T) / 4.0
        G = rng.integers(-3, 4, (T, m)) / 4.0
        c = best_iterate(f, G)
        assert isinstance(c, int)
        assert c == best_iterate_reference(f.tolist(), G.tolist())
        raw = G.max(axis=1) if m else np.zeros(T)
        for viol in (np.maximum(raw, 0.0), raw):
            dominated = (f <= f[c]) & (viol <= viol[c]) & ((f < f[c]) | (viol < viol[c]))
            assert not dominated.any()


# --------------------------------------------------------------------------- #
# Mixtures
# --------------------------------------------------------------------------- #


def test_uniform_mixture():
    w = uniform_mixture(4)
    np.testing.assert_array_equal(w, [0.25] * 4)
    assert w.dtype == np.float64
    np.testing.assert_array_equal(uniform_mixture(np.int64(1)), [1.0])


def test_lambda_weighted_mixture():
    w = lambda_weighted_mixture([0.0, 1.0, 3.0])
    np.testing.assert_allclose(w, [0.0, 0.25, 0.75], rtol=0, atol=1e-15)
    np.testing.assert_allclose(lambda_weighted_mixture([2.0, 2.0]), [0.5, 0.5])
    lam = np.array([0.2, 0.4])
    lambda_weighted_mixture(lam)
    np.testing.assert_array_equal(lam, [0.2, 0.4])


# --------------------------------------------------------------------------- #
# Validation
# --------------------------------------------------------------------------- #

GOOD_F = np.array([0.1, 0.2])
GOOD_G = np.array([[0.0], [0.1]])


@pytest.mark.parametrize("func", [shrink, best_iterate])
@pytest.mark.parametrize(
    ("objectives", "constraints", "match"),
    [
        (np.zeros((2, 1)), GOOD_G, "objectives must be 1-D"),
        (np.float64(0.1), GOOD_G[:1], "objectives must be 1-D"),
        (np.zeros(0), np.zeros((0, 1)), "objectives must hold at least one"),
        (np.array([0.1, np.nan]), GOOD_G, "objectives must be finite"),
        (np.array([0.1, np.inf]), GOOD_G, "objectives must be finite"),
        (np.array(["a", "b"]), GOOD_G, "objectives must be a real numeric"),
        (np.array([0.1 + 1j, 0.2]), GOOD_G, "objectives must be a real numeric"),
        ([[0.1], [0.2, 0.3]], GOOD_G, "objectives must be a numeric array"),
        (GOOD_F, np.zeros(2), "constraints must be 2-D"),
        (GOOD_F, np.zeros((2, 1, 1)), "constraints must be 2-D"),
        (GOOD_F, np.zeros((3, 1)), "constraints must have one row per candidate"),
        (GOOD_F, np.array([[0.0], [np.nan]]), "constraints must be finite"),
        (GOOD_F, np.array([[0.0], [-np.inf]]), "constraints must be finite"),
        (GOOD_F, np.array([["x"], ["y"]]), "constraints must be a real numeric"),
        (GOOD_F, np.array([[1j], [0]]), "constraints must be a real numeric"),
    ],
)
def test_validation_arrays(func, objectives, constraints, match):
    with pytest.raises(ValueError, match=match):
        func(objectives, constraints)


@pytest.mark.parametrize(
    ("epsilon", "match"),
    [
        (-0.1, "epsilon must be finite and >= 0"),
        (np.nan, "epsilon must be finite and >= 0"),
        (np.inf, "epsilon must be finite and >= 0"),
        ("0.1", "epsilon must be a real number"),
        (None, "epsilon must be a real number"),
        (True, "epsilon must be a real number"),
        (np.array([0.1]), "epsilon must be a real number"),
        (0.1j, "epsilon must be a real number"),
    ],
)
def test_validation_epsilon(epsilon, match):
    with pytest.raises(ValueError, match=match):
        shrink(GOOD_F, GOOD_G, epsilon=epsilon)


def test_epsilon_accepts_numpy_and_int():
    assert shrink(GOOD_F, GOOD_G, epsilon=np.float32(0.5)).epsilon == 0.5
    assert shrink(GOOD_F, GOOD_G, epsilon=0).feasible


@pytest.mark.parametrize("T", [0, -3, 2.0, 1.5, "3", None, True, np.array([3])])
def test_validation_uniform_mixture(T):
    with pytest.raises(ValueError, match="T must be an integer >= 1"):
        uniform_mixture(T)


@pytest.mark.parametrize(
    ("lam", "match"),
    [
        ([0.0, 0.0, 0.0], "lambda0 is all zero"),
        ([0.5, -0.1], "lambda0 must be nonnegative"),
        ([0.5, np.nan], "lambda0 must be finite"),
        ([0.5, np.inf], "lambda0 must be finite"),
        ([], "lambda0 must hold at least one"),
        ([[0.5, 0.5]], "lambda0 must be 1-D"),
        (["a"], "lambda0 must be a real numeric"),
    ],
)
def test_validation_lambda_weighted_mixture(lam, match):
    with pytest.raises(ValueError, match=match):
        lambda_weighted_mixture(lam)
