"""Seed 004's ramp-loss dataset constraints: ramp rates, the majorizer, MM, the cutting planes, classifiers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from _rate_reference import make_data
from rateopt import _rates as R
from rateopt._game import spec_from_problem
from rateopt._problem import Problem
from rateopt._row_coefficients import problem_row_coefficients
from rateopt.core import AtomTable, ramp_rates


def rho(s):
    return np.clip(0.5 + s, 0.0, 1.0)


def several_datasets_problem(seed=0):
    """Two datasets, overlapping groups, labels and a baseline (atoms with several memberships per row)."""
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
    ]
    return Problem(constraints=cons), train, unl


def _membership(table):
    return sp.csr_matrix((table.weights, table.indices, table.indptr), shape=(table.n_samples, table.n_atoms))


# --------------------------------------------------------------------------- 1. ramp rates


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_ramp_rates_match_numpy(sparse, n_threads):
    problem, train, unl = several_datasets_problem(2)
    spec = spec_from_problem(problem)
    rng = np.random.default_rng(3)
    for blk in spec.blocks:
        X = blk.X.data
        Xs = sp.csr_matrix(X) if sparse else X
        for scale in (0.1, 1.0, 10.0):
            theta = rng.normal(size=X.shape[1]) * scale
            b = float(rng.normal())
            s = np.asarray(X @ theta) + b
            V = _membership(blk.atoms)
            res = ramp_rates(Xs, theta, b, blk.atoms, n_threads=n_threads)
            np.testing.assert_allclose(res.ramp_pos, V.T @ rho(s), rtol=0, atol=1e-13)
            np.testing.assert_allclose(res.ramp_neg, V.T @ rho(-s), rtol=0, atol=1e-13)
            np.testing.assert_array_equal(res.rates, V.T @ (s >= 0).astype(float))
            # r_p + r_n = W_a = 1 for every atom of a compiled problem
            np.testing.assert_allclose(res.ramp_pos + res.ramp_neg, 1.0, rtol=0, atol=1e-14)


def test_ramp_rates_minibatch_is_the_scaled_sum():
    X = np.array([[0.25], [-1.0], [2.0], [0.1]])
    atoms = AtomTable.from_membership(np.array([[1, 0], [1, 1], [0, 1], [1, 1]], bool))
    V = _membership(atoms)
    rows = np.array([0, 0, 3])  # n / len(rows) = 4/3
    s = X[:, 0] * 1.0 + 0.05
    res = ramp_rates(X, np.array([1.0]), 0.05, atoms, rows=rows)
    Vb = V[rows]
    np.testing.assert_allclose(res.ramp_pos, Vb.T @ rho(s[rows]) * 4 / 3, atol=1e-15)
    np.testing.assert_allclose(res.ramp_pos + res.ramp_neg, np.asarray(Vb.sum(axis=0)).ravel() * 4 / 3, atol=1e-15)


def test_problem2_rewrite_equals_C_r_minus_kappa():
    # sum_j [u+ rho(s) + u- rho(-s)] - (kappa + sum_j u-) == C r - kappa (methods_spec C.1, C.11 item 2)
    problem, train, unl = several_datasets_problem(4)
    spec = spec_from_problem(problem)
    rows = np.vstack([spec.c0, spec.C])
    U = problem_row_coefficients(spec, rows)
    rng = np.random.default_rng(5)
    theta = rng.normal(size=spec.n_features)
    b = 0.1
    r = np.zeros(spec.n_atoms)
    lhs = np.zeros(rows.shape[0])
    for blk in spec.blocks:
        r[blk.atom_ids] = ramp_rates(blk.X, theta, b, blk.atoms).ramp_pos
        s = blk.X.data @ theta + b
        u = U[blk.name]
        up, un = np.maximum(u, 0), np.maximum(-u, 0)
        lhs += up.T @ rho(s) + un.T @ rho(-s) - un.sum(axis=0)
    cons = lhs[1:] - spec.kappa
    np.testing.assert_allclose(cons, spec.C @ r - spec.kappa, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lhs[0] + spec.const0, spec.c0 @ r + spec.const0, rtol=0, atol=1e-12)
