"""GameSpec: the hinge upper bounds of the constraints (what the "Hinge" baseline's multipliers see),
and the validation every training run repeats on the data it reads in place."""

import numpy as np
import pytest
import scipy.sparse as sp

import rateopt

from rateopt._training._spec import Block, GameSpec, kernel_pass
from rateopt.core import AtomTable, FeatureMatrix


def _spec(seed=0, n=300, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, 2, n)
    g = rng.integers(0, 2, n)
    # atoms: all positives, positives of group 1, everyone, group 0
    member = np.column_stack([y == 1, (y == 1) & (g == 1), np.ones(n, bool), g == 0])
    atoms = AtomTable.from_membership(member)
    C = np.array([[0.95, -1.0, 0.0, 0.0],   # 0.95 tpr(all) - tpr(g1) <= 0: overlapping subsets
                  [0.0, 0.0, 1.0, 0.0],     # coverage <= 0.4
                  [0.0, 0.0, 1.0, -1.0]])   # ppr(all) - ppr(g0) <= 0.02
    spec = GameSpec(blocks=(Block(FeatureMatrix(X), atoms, np.arange(4)),), n_atoms=4, C=C,
                    kappa=np.array([0.0, 0.4, 0.02]), c0=np.zeros(4), const0=0.0,
                    constraint_names=("a", "b", "c"), n_features=d)
    return spec, X, member


def _reference_hinge(X, member, theta, bias, C, kappa, margin):
    W = member / member.sum(axis=0)  # normalized weights per atom (unit sample weights)
    s = X @ theta + bias
    out = []
    for i in range(C.shape[0]):
        u = W @ C[i]
        phi = np.where(u > 0, u * np.maximum(0, margin + s), np.where(u < 0, -u * np.maximum(0, margin - s) + u, 0))
        out.append(phi.sum() - kappa[i])
    return np.array(out)


def test_proxy_constraints_are_the_per_constraint_net_hinge_and_bound_the_01_values():
    spec, X, member = _spec()
    rng = np.random.default_rng(1)
    for _ in range(5):
        theta, bias = rng.normal(size=X.shape[1]), float(rng.normal())
        got = spec.proxy_constraints(theta, bias, margin=1.0)
        ref = _reference_hinge(X, member, theta, bias, spec.C, spec.kappa, 1.0)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
        rates = kernel_pass(spec, theta, bias, np.zeros(4)).rates
        assert np.all(got >= spec.constraints(rates) - 1e-12)


# --------------------------------------------------------------------------- #
# Every train() validates what it reads, even data it validated before
# --------------------------------------------------------------------------- #


def _coverage_problem(X):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, X.shape[0])
    ds = rateopt.Dataset(X, y)
    return rateopt.Problem(constraints=[rateopt.positive_prediction_rate(ds.context()) <= 0.4])


@pytest.mark.filterwarnings("ignore::rateopt.exceptions.InfeasibleWarning")  # 5 iterations
def test_nan_written_into_X_after_a_fit_is_caught():
    X = np.random.default_rng(1).normal(size=(200, 3))
    problem = _coverage_problem(X)
    rateopt.train(problem, n_iter=5)
    X[17, 2] = np.nan  # the Dataset reads X in place
    with pytest.raises(ValueError, match="row 17, column 2"):
        rateopt.train(problem, n_iter=5)


@pytest.mark.filterwarnings("ignore::rateopt.exceptions.InfeasibleWarning")  # 5 iterations
def test_bad_csr_index_written_after_a_fit_is_caught():
    X = sp.random(200, 6, density=0.5, format="csr", random_state=2)
    problem = _coverage_problem(X)
    rateopt.train(problem, n_iter=5)
    X.indices[3] = 10**6
    with pytest.raises(ValueError, match="X.indices holds column 1000000"):
        rateopt.train(problem, n_iter=5)


def test_compiled_atom_tables_cannot_be_written():
    problem = _coverage_problem(np.random.default_rng(3).normal(size=(200, 3)))
    table = next(iter(problem.compiled.tables.values()))
    with pytest.raises(ValueError, match="read-only"):
        table.indices[0] = 10**6


def test_an_atom_index_cannot_be_written_into_a_game_spec():
    spec, X, _ = _spec()
    first = rateopt.train(spec, n_iter=5)
    with pytest.raises(ValueError, match="read-only"):  # the validated table is sealed (issue 24 item 4)
        spec.blocks[0].atoms.indices[2] = 10**6
    with pytest.raises(ValueError, match="WRITEABLE"):
        spec.blocks[0].atoms.indices.flags.writeable = True
    np.testing.assert_array_equal(rateopt.train(spec, n_iter=5).weights, first.weights)


def test_a_game_spec_is_validated_again_by_each_fit():
    spec, X, _ = _spec()
    rateopt.train(spec, n_iter=5)
    with pytest.raises(ValueError, match="read-only"):  # the spec's features are a read-only view ...
        spec.blocks[0].X.data[4, 1] = np.inf
    X[4, 1] = np.inf  # ... of the caller's X, whose values each fit checks again
    with pytest.raises(ValueError, match="row 4, column 1"):
        rateopt.train(spec, n_iter=5)
