"""The data a training game runs on, in the form the core consumes.

A :class:`GameSpec` is what a compiled :class:`~rateopt.Problem` becomes for
training: for each dataset a validated feature matrix, its atom table and the
global ids of its atoms, plus the affine maps from atom rates to the objective
``g0 = c0 . rates + const0`` and the constraints ``g = C rates - kappa``.
:func:`evaluate_spec` runs the fused kernel once per dataset at a given model
and returns the atom rates and everything derived from them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from . import core

__all__ = ["Block", "GameSpec", "KernelPass", "kernel_pass", "revalidated", "spec_from_problem"]


@dataclass(frozen=True)
class Block:
    """One dataset of a game: features, atom table, global ids of its atoms."""

    X: core.FeatureMatrix
    atoms: core.AtomTable
    atom_ids: np.ndarray
    name: str = "data"


@dataclass(frozen=True)
class GameSpec:
    """Everything a game needs, compiled once.

    Attributes
    ----------
    blocks : tuple of Block
    n_atoms : int
    C : ndarray of shape (n_constraints, n_atoms)
    kappa : ndarray of shape (n_constraints,)
    c0 : ndarray of shape (n_atoms,)
    const0 : float
    constraint_names : tuple of str
    n_features : int
    """

    blocks: tuple
    n_atoms: int
    C: np.ndarray
    kappa: np.ndarray
    c0: np.ndarray
    const0: float
    constraint_names: tuple
    n_features: int

    @property
    def n_constraints(self):
        return self.C.shape[0]

    def objective(self, rates):
        """0-1 objective from atom rates."""
        return float(self.c0 @ rates + self.const0)

    def constraints(self, rates):
        """0-1 constraint values ``C rates - kappa`` (<= 0 means satisfied)."""
        return self.C @ rates - self.kappa

    def proxy_constraints(self, theta, bias, *, margin=1.0, rows=None, n_threads=None):
        """Hinge upper bounds ``g~_i`` of every constraint at ``(theta, bias)``.

        Each constraint gets the net per-example hinge of its own coefficients
        (one kernel pass per constraint): the bound TFCO's hinge relaxation
        computes, and what the Lagrangian \"Hinge\" baseline's multipliers see.
        Bounding each atom separately would be looser: a constraint comparing
        overlapping subsets (``tpr(g) >= 0.95 tpr(all)``) could then never be
        met by any model.
        """
        return np.array([kernel_pass(self, theta, bias, self.C[i], margin=margin, rows=rows,
                                     n_threads=n_threads).proxy_value
                         for i in range(self.n_constraints)]) - self.kappa


@dataclass
class KernelPass:
    """Results of one kernel pass over every dataset at one model."""

    rates: np.ndarray
    proxy_pos_rates: np.ndarray
    proxy_neg_rates: np.ndarray
    grad: np.ndarray
    grad_bias: float
    proxy_value: float


def kernel_pass(spec, theta, bias, coef, *, margin=1.0, rows=None, n_threads=None):
    """Run the fused kernel on every dataset of ``spec`` at ``(theta, bias)``.

    Parameters
    ----------
    spec : GameSpec
    theta : ndarray of shape (n_features,)
    bias : float
    coef : ndarray of shape (n_atoms,)
        Global atom coefficients of the combination whose proxy gradient is wanted.
    margin : float
    rows : list of (ndarray or None), default=None
        Per-block minibatch rows (None: full pass).
    n_threads : int or None

    Returns
    -------
    KernelPass
    """
    A = spec.n_atoms
    rates, ppos, pneg = np.zeros(A), np.zeros(A), np.zeros(A)
    grad = np.zeros(spec.n_features)
    gb = pv = 0.0
    for i, blk in enumerate(spec.blocks):
        r = None if rows is None else rows[i]
        res = core.rate_kernel(blk.X, theta, bias, blk.atoms, coef[blk.atom_ids], margin=margin, rows=r,
                               n_threads=n_threads)
        rates[blk.atom_ids] = res.rates
        ppos[blk.atom_ids] = res.proxy_pos_rates
        pneg[blk.atom_ids] = res.proxy_neg_rates
        grad += res.grad
        gb += res.grad_bias
        pv += res.proxy_value
    return KernelPass(rates, ppos, pneg, grad, gb, pv)


def spec_from_problem(problem):
    """The :class:`GameSpec` of a compiled :class:`~rateopt.Problem`, validated now.

    Each dataset's features are validated here (:class:`~rateopt.core.FeatureMatrix`)
    and its membership table becomes a validated :class:`~rateopt.core.AtomTable`.
    Nothing is cached: the arrays are the user's (read in place, never copied),
    so they may have changed since an earlier call, and every training run
    must validate what it is about to read (one parallel pass over X).
    """
    cp = problem.compiled
    blocks = []
    n_features = None
    for name in cp.datasets:
        ds = problem.datasets[name]
        X = core.FeatureMatrix(ds.X)
        if n_features is None:
            n_features = X.n_features
        elif X.n_features != n_features:
            raise ValueError(
                f"dataset {name!r} has {X.n_features} features but another dataset has {n_features}: "
                "one model cannot score both"
            )
        table = cp.tables[name]
        blocks.append(Block(X, table.to_atom_table(), np.asarray(table.atom_ids, dtype=np.int64), name))
    return GameSpec(
        blocks=tuple(blocks),
        n_atoms=cp.n_atoms,
        C=np.asarray(cp.C, dtype=np.float64).reshape(cp.n_constraints, cp.n_atoms),
        kappa=np.asarray(cp.kappa, dtype=np.float64),
        c0=np.asarray(cp.objective_coef, dtype=np.float64),
        const0=float(cp.objective_constant),
        constraint_names=tuple(cp.constraint_names),
        n_features=int(n_features),
    )


def revalidated(spec):
    """``spec`` with every block's features and atom table validated again.

    A :class:`GameSpec` holds views of arrays that the caller can still write
    to; a new training run re-checks them (finiteness, index ranges) rather than
    trust a validation done before.
    """
    blocks = tuple(
        Block(core.FeatureMatrix(b.X.data),
              core.AtomTable(b.atoms.indptr, b.atoms.indices, b.atoms.weights, b.atoms.n_atoms),
              b.atom_ids, b.name)
        for b in spec.blocks
    )
    return dataclasses.replace(spec, blocks=blocks)
