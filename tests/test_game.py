"""GameSpec: the hinge upper bounds of the constraints (what the "Hinge" baseline's multipliers see)."""

import numpy as np

from rateopt._game import Block, GameSpec, kernel_pass
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
