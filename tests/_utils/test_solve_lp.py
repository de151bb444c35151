"""solve_lp / solve_mixture_lp: the one HiGHS LP helper, checked against hand-solved LPs and scipy's linprog.

The references are independent of the helper: optima and duals worked out by
hand (KKT conditions written below each LP) and :func:`scipy.optimize.linprog`
(its own HiGHS build, its own model assembly) with its ``marginals``.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from rateopt._utils._highs import LpSolution, LpSolveError, solve_lp, solve_mixture_lp
from rateopt.exceptions import RateoptError


def test_hand_solved_two_variable_lp_primal_and_duals():
    # min -x - 2y  s.t.  x + y <= 4,  x + 3y <= 6,  x, y >= 0.
    # Vertex where both rows bind: y = 1, x = 3, objective -5.
    # Duals (objective's derivative in each right-hand side): y1 + y2 = -1, y1 + 3 y2 = -2
    # => y2 = -1/2, y1 = -1/2. Reduced costs c - A^T y = (-1 + 1/2 + 1/2, -2 + 1/2 + 3/2) = (0, 0).
    sol = solve_lp([-1.0, -2.0], [[1.0, 1.0], [1.0, 3.0]], -np.inf, [4.0, 6.0])
    assert sol.status == "optimal" and sol.optimal
    np.testing.assert_allclose(sol.x, [3.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(sol.row_dual, [-0.5, -0.5], atol=1e-9)
    np.testing.assert_allclose(sol.col_dual, [0.0, 0.0], atol=1e-9)
    assert sol.objective == pytest.approx(-5.0, abs=1e-9)


def test_duals_are_the_objectives_sensitivity_to_the_bounds():
    # The same LP: moving a binding right-hand side by h moves the optimum by dual * h.
    A, c = np.array([[1.0, 1.0], [1.0, 3.0]]), np.array([-1.0, -2.0])
    base = solve_lp(c, A, -np.inf, [4.0, 6.0])
    h = 1e-3
    for i in range(2):
        b = np.array([4.0, 6.0])
        b[i] += h
        moved = solve_lp(c, A, -np.inf, b)
        assert (moved.objective - base.objective) / h == pytest.approx(base.row_dual[i], abs=1e-6)


def test_a_bound_at_its_limit_has_a_reduced_cost():
    # min x + y  s.t.  x + y >= 1,  0 <= x <= 0.25,  y >= 0, cost on y higher: min x + 3y.
    # Optimum x = 0.25 (its upper bound), y = 0.75; row dual 3 (y basic: 3 - 1*y_row = 0),
    # x's reduced cost 1 - 3 = -2 (negative at an active upper bound).
    sol = solve_lp([1.0, 3.0], [[1.0, 1.0]], 1.0, np.inf, col_upper=[0.25, np.inf])
    np.testing.assert_allclose(sol.x, [0.25, 0.75], atol=1e-9)
    np.testing.assert_allclose(sol.row_dual, [3.0], atol=1e-9)
    np.testing.assert_allclose(sol.col_dual, [-2.0, 0.0], atol=1e-9)
    assert sol.objective == pytest.approx(2.5, abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("sparse", [False, True])
def test_random_lps_match_linprog_values_and_marginals(seed, sparse):
    rng = np.random.default_rng(seed)
    n_rows, n_cols = 6, 9
    A_ub = rng.normal(size=(n_rows, n_cols))
    A_ub[rng.random(A_ub.shape) < 0.3] = 0.0
    b_ub = rng.uniform(1.0, 2.0, n_rows)  # x = 0 is feasible
    A_eq, b_eq = np.ones((1, n_cols)), np.array([1.0])  # ... and the simplex keeps it bounded
    c = rng.normal(size=n_cols)
    ref = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    assert ref.status == 0
    A = np.vstack([A_ub, A_eq])
    sol = solve_lp(c, sp.csr_matrix(A) if sparse else A, np.concatenate([np.full(n_rows, -np.inf), b_eq]),
                   np.concatenate([b_ub, b_eq]), options={"primal_feasibility_tolerance": 1e-10,
                                                        "dual_feasibility_tolerance": 1e-10})
    assert sol.objective == pytest.approx(ref.fun, abs=1e-9)
    np.testing.assert_allclose(sol.x, ref.x, atol=1e-8)  # a generic LP: one optimal vertex
    np.testing.assert_allclose(sol.row_dual, np.concatenate([ref.ineqlin.marginals, ref.eqlin.marginals]),
                               atol=1e-8)
    np.testing.assert_allclose(sol.col_dual, ref.lower.marginals, atol=1e-8)


def test_infeasible_and_unbounded_are_statuses_not_errors():
    infeasible = solve_lp([1.0], [[1.0]], 2.0, 3.0, col_upper=1.0)  # x <= 1 but x >= 2
    assert infeasible.status == "infeasible" and infeasible.x is None and infeasible.row_dual is None
    unbounded = solve_lp([-1.0], [[1.0]], 0.0, np.inf)  # min -x, x >= 0 unbounded above
    assert unbounded.status in ("unbounded", "infeasible")  # HiGHS may only prove "unbounded or infeasible"
    assert unbounded.x is None and unbounded.objective is None


def test_a_solver_limit_raises_naming_the_lp():
    rng = np.random.default_rng(0)
    A = rng.uniform(0.5, 1.5, size=(30, 40))
    with pytest.raises(LpSolveError, match="the test LP") as info:
        solve_lp(-np.ones(40), A, -np.inf, np.ones(30), options={"simplex_iteration_limit": 1, "presolve": "off"},
                 what="the test LP")
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, RateoptError)


@pytest.mark.parametrize("kwargs, name", [
    (dict(cost=[1.0, np.nan]), "cost"),
    (dict(cost=[1.0]), "cost"),
    (dict(A=[[1.0, np.inf]]), "A"),
    (dict(A=[1.0, 1.0]), "A"),
    (dict(row_lower=[np.nan]), "row_lower"),
    (dict(row_upper=[1.0, 2.0]), "row_upper"),
    (dict(col_lower=[0.0, 0.0, 0.0]), "col_lower"),
    (dict(col_upper=[1.0, -1.0]), "col_lower"),  # lower > upper names both
])
def test_bad_arguments_are_refused_naming_them(kwargs, name):
    args = dict(cost=[1.0, 1.0], A=[[1.0, 1.0]], row_lower=1.0, row_upper=np.inf)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        solve_lp(**args)


def test_mixture_lp_is_the_lp_over_the_simplex():
    # Candidates with objectives f and one constraint each; min f.p s.t. G^T p <= 0, sum p = 1:
    # f = (0.1, 0.3), G = (0.2, -0.2): p = (1/2, 1/2), objective 0.2 (shrink's docstring example).
    sol = solve_mixture_lp([0.1, 0.3], [[0.2], [-0.2]], [0.0], with_z=False)
    np.testing.assert_allclose(sol.x, [0.5, 0.5], atol=1e-12)
    assert sol.objective == pytest.approx(0.2, abs=1e-12)
    # Duals by hand: both columns basic, so 0.1 = 0.2 y + s and 0.3 = -0.2 y + s => y = -0.5, s = 0.2.
    np.testing.assert_allclose(sol.row_dual, [-0.5, 0.2], atol=1e-12)
    # With z: min z s.t. G^T p - z <= 0: the least largest constraint value over the simplex, 0 here.
    with_z = solve_mixture_lp([0.0, 0.0, 1.0], [[0.2], [-0.2]], [0.0], with_z=True)
    assert with_z.x[-1] == pytest.approx(-0.2, abs=1e-12)  # all weight on the second candidate
    with pytest.raises(ValueError, match="row_upper"):
        solve_mixture_lp([0.1, 0.3], [[0.2], [-0.2]], [0.0, 1.0], with_z=False)


def test_solution_is_a_frozen_record():
    sol = LpSolution("infeasible")
    assert not sol.optimal
    with pytest.raises(AttributeError):
        sol.status = "optimal"
