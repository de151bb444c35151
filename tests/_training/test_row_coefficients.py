"""Per-row net coefficients of atom-rate combinations (rateopt._training._row_coefficients)."""

from __future__ import annotations

import numpy as np
import pytest

from _rate_reference import make_data
from rateopt._language import _rates as R
from rateopt._training._spec import spec_from_problem
from rateopt._compiler._problem import Problem
from rateopt._training._row_coefficients import problem_row_coefficients, row_coefficients
from rateopt.core import AtomTable, rate_kernel_multi


def several_datasets_problem(seed=0):
    """Two datasets, overlapping groups, labels and a baseline: atoms with
    several memberships per row, and rows in no atom."""
    train, _ = make_data(seed, n=150, zero_weight_frac=0.1)
    unl, _ = make_data(seed + 1, n=60, labels=False, name="unlabeled")
    ctx, uctx = train.context(), unl.context()
    women = ctx.subset(group="sex", value="F")
    old = ctx.subset(train.groups["age"] > 40, name="old")
    cons = [
        R.true_positive_rate(women) >= R.true_positive_rate(ctx) - 0.05,
        0.5 * R.false_positive_rate(old) - R.positive_prediction_rate(women | old) <= 0.2,
        R.churn_rate(uctx.subset(group="race", value="b")) <= 0.1,
        R.positive_prediction_rate(uctx) >= 0.2,
        R.false_negative_rate(ctx.subset(group="race", value="c")) <= 0.3,
    ]
    return Problem(constraints=cons), train, unl


def test_u_dot_decisions_is_the_combination_of_rates():
    problem, train, unl = several_datasets_problem()
    cp = problem.compiled
    assert len(cp.datasets) == 2 and cp.n_constraints == 5 and cp.n_atoms > 6
    rng = np.random.default_rng(0)
    for _ in range(20):
        coef = rng.normal(size=cp.n_atoms)
        U = problem_row_coefficients(problem, coef)
        assert list(U) == list(cp.datasets)
        scores = {"train": rng.normal(size=150), "unlabeled": rng.normal(size=60)}
        pos = {k: (v >= 0).astype(np.float64) for k, v in scores.items()}
        ev = problem.evaluate(scores, kind="scores")
        lhs = sum(U[k] @ pos[k] for k in cp.datasets)
        rhs = coef @ ev.atom_rates
        assert lhs == pytest.approx(rhs, rel=1e-13, abs=1e-13 * np.abs(coef).sum())


def test_objective_and_constraint_columns():
    # U = V [c0; C]^T: column 0 gives the objective, column 1 + i constraint i.
    problem, train, unl = several_datasets_problem(1)
    cp = problem.compiled
    rows = np.vstack([cp.objective_coef, cp.C])
    U = problem_row_coefficients(problem, rows)
    rng = np.random.default_rng(1)
    scores = {"train": rng.normal(size=150), "unlabeled": rng.normal(size=60)}
    ev = problem.evaluate(scores, kind="scores")
    values = sum(U[k].T @ (scores[k] >= 0).astype(np.float64) for k in cp.datasets)
    assert U["train"].shape == (150, 1 + cp.n_constraints)
    assert values[0] + cp.objective_constant == pytest.approx(ev.objective, abs=1e-13)
    g = values[1:] - cp.kappa
    np.testing.assert_allclose(g, [ev.constraints[name] for name in cp.constraint_names], rtol=0, atol=1e-13)
    # The 2-D form is the 1-D form column by column.
    for c in range(rows.shape[0]):
        single = problem_row_coefficients(problem, rows[c])
        for k in cp.datasets:
            np.testing.assert_array_equal(U[k][:, c], single[k])


def test_problem_compiled_problem_and_game_spec_agree():
    problem, _, _ = several_datasets_problem(2)
    coef = np.random.default_rng(2).normal(size=problem.compiled.n_atoms)
    a = problem_row_coefficients(problem, coef)
    b = problem_row_coefficients(problem.compiled, coef)
    c = problem_row_coefficients(spec_from_problem(problem), coef)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
        np.testing.assert_array_equal(a[k], c[k])


def _kernel_order_reference(table, coef):
    """The rate kernel's u, term by term: u_j = 0.0; u_j += coef[a] * v over the row's entries."""
    u = np.zeros(table.n_samples)
    for j in range(table.n_samples):
        acc = 0.0
        for e in range(table.indptr[j], table.indptr[j + 1]):
            acc += coef[table.indices[e]] * table.weights[e]
        u[j] = acc
    return u


def test_u_is_the_kernels_net_coefficient_bit_for_bit():
    rng = np.random.default_rng(3)
    n, n_atoms = 400, 7
    membership = rng.random((n, n_atoms)) < 0.5
    membership[np.arange(n_atoms), np.arange(n_atoms)] = True
    atoms = AtomTable.from_membership(membership, rng.uniform(0.1, 3.0, n))
    coef = rng.normal(size=n_atoms) * 10.0 ** rng.integers(-3, 3, n_atoms)
    u = row_coefficients(atoms, coef)
    np.testing.assert_array_equal(u, _kernel_order_reference(atoms, coef))
    # The kernel's hinge proxy is a function of u alone: rebuild it from u.
    X = rng.normal(size=(n, 3))
    theta, bias, margin = rng.normal(size=3), 0.1, 1.0
    s = X @ theta + bias
    proxy = np.where(u > 0, u * np.maximum(0, margin + s), -u * np.maximum(0, margin - s) + np.minimum(u, 0)).sum()
    res = rate_kernel_multi(X, theta, bias, atoms, coef[None, :], margin=margin, n_threads=1)
    assert res.proxy_values[0] == pytest.approx(proxy, rel=1e-13)
    # u . 1[s >= 0] is the kernel's exact value coef . rates.
    assert u @ (s >= 0) == pytest.approx(res.values[0], rel=1e-13, abs=1e-15)


def test_membership_table_and_atom_table_give_the_same_rows():
    problem, _, _ = several_datasets_problem(4)
    cp = problem.compiled
    t = cp.tables["train"]
    coef = np.random.default_rng(4).normal(size=(3, t.n_atoms))
    core_table = AtomTable(t.indptr, t.indices, t.weights, t.n_atoms)
    np.testing.assert_array_equal(row_coefficients(t, coef), row_coefficients(core_table, coef))
    assert row_coefficients(t, coef).shape == (t.n_samples, 3)
    # Rows of zero sample weight (weight 0 in every atom they belong to) get u = 0.
    row_weight = np.add.reduceat(np.r_[t.weights, 0.0], t.indptr[:-1]) * (np.diff(t.indptr) > 0)
    zero = row_weight == 0
    assert zero.any()
    assert np.all(row_coefficients(t, coef[0])[zero] == 0.0)
    assert np.all(row_coefficients(t, coef[0])[~zero] != 0.0)


def test_bad_input():
    problem, _, _ = several_datasets_problem(5)
    n_atoms = problem.compiled.n_atoms
    with pytest.raises(ValueError, match=f"coef has length 3, expected n_atoms = {n_atoms}"):
        problem_row_coefficients(problem, np.ones(3))
    with pytest.raises(ValueError, match=r"coef has shape \(2, 3\), expected \(k, n_atoms"):
        problem_row_coefficients(problem, np.ones((2, 3)))
    with pytest.raises(ValueError, match="coef must be 1-D"):
        problem_row_coefficients(problem, np.ones((1, 1, n_atoms)))
    with pytest.raises(ValueError, match="coef holds a non-finite value"):
        problem_row_coefficients(problem, np.full(n_atoms, np.nan))
    with pytest.raises(TypeError, match="coef must hold real numbers"):
        problem_row_coefficients(problem, np.array(["a"] * n_atoms))
    with pytest.raises(TypeError, match="problem must be a Problem, CompiledProblem or GameSpec"):
        problem_row_coefficients(object(), np.ones(n_atoms))
    with pytest.raises(TypeError, match="table must be a MembershipTable or an AtomTable"):
        row_coefficients(np.eye(3), np.ones(3))
