"""The data a training game runs on, in the form the core consumes.

A :class:`GameSpec` is what a compiled :class:`~rateopt.Problem` becomes for
training: for each dataset a validated feature matrix, its atom table and the
global ids of its atoms, plus the affine maps from atom rates to the objective
``g0 = c0 . rates + const0`` and the constraints ``g = C rates - kappa``.
:func:`kernel_pass` runs the fused kernel once per dataset at a given model for
the :class:`Combinations` a game asks for, and returns the atom rates, each
combination's proxy value and the weighted gradient.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .. import core
from .._compiler._linear_map import LinearMap
from .._language._predictions import positive_decisions
from ..core._kernel_block import check_block_memory
from ._arity import TWO_CLASSES, Arity, TwoClasses

__all__ = ["Block", "ConstraintMap", "GameSpec", "LocalRows", "Combinations", "KernelPass", "kernel_pass", "atom_table", "revalidated",
           "spec_from_problem"]

#: Constraint rows (and the objective) with a coefficient or offset above this
#: magnitude are rescaled for the players (see :meth:`GameSpec.for_players`).
PLAYER_MAX_MAGNITUDE = 2.0**64


class LocalRows:
    """``n_samples`` and ``n_features`` of a block whose features ``X`` (a FeatureMatrix) are here."""

    @property
    def n_samples(self):
        return self.X.n_samples

    @property
    def n_features(self):
        return self.X.n_features


class ConstraintMap:
    """``n_constraints`` and the constraint values ``C s - kappa`` of a spec (two-class or K-class)."""

    @property
    def n_constraints(self):
        return self.C.shape[0]

    def constraints(self, stats):
        """0-1 constraint values ``C s - kappa`` at statistics ``s`` (<= 0 means satisfied)."""
        return self.C @ stats - self.kappa


@dataclass(frozen=True)
class Block(LocalRows):
    """One dataset of a game: features, atom table, global ids of its atoms.

    A block runs the fused kernel on its rows (:meth:`run_kernel`). Blocks whose
    rows live elsewhere (:class:`rateopt.dask.RemoteBlock`, partitions on a Dask
    cluster) implement the same four members: ``n_samples``, ``n_features``,
    ``run_kernel`` and ``revalidated``.
    """

    X: core.FeatureMatrix
    atoms: core.AtomTable
    atom_ids: np.ndarray
    name: str = "data"

    def run_kernel(self, theta, bias, coefs, proxies, grad_weights, offset_ids, offsets, *, margin, rows,
                   n_threads):
        """The core's kernel on this block: ``coefs`` are the block's atom columns; ``offset_ids`` the
        offset id of each of its atoms (None: no offset atom, the plain kernel)."""
        if offset_ids is not None:
            return core.rate_kernel_offsets(self.X, theta, bias, self.atoms, coefs, offset_ids, offsets,
                                            proxies=proxies, grad_weights=grad_weights, margin=margin, rows=rows,
                                            n_threads=n_threads)
        return core.rate_kernel_multi(self.X, theta, bias, self.atoms, coefs, proxies=proxies,
                                      grad_weights=grad_weights, margin=margin, rows=rows, n_threads=n_threads)

    def revalidated(self):
        """The same block with its features and atom table validated again (see :func:`revalidated`)."""
        return Block(core.FeatureMatrix(self.X.data),
                     core.AtomTable(self.atoms.indptr, self.atoms.indices, self.atoms.weights, self.atoms.n_atoms),
                     self.atom_ids, self.name)


@dataclass(frozen=True)
class GameSpec(ConstraintMap):
    """Everything a game needs, compiled once.

    Attributes
    ----------
    blocks : tuple of Block
    n_atoms : int
    C : LinearMap of shape (n_constraints, n_atoms)
    kappa : ndarray of shape (n_constraints,)
    c0 : ndarray of shape (n_atoms,)
    const0 : float
    constraint_names : tuple of str
    n_features : int
    metric : MetricRows or None
        A non-linear objective ``psi(Z p + z0)`` (``c0`` is then zero).
    metric_constraints : tuple of MetricConstraintRows
        Constraints ``psi_j(Z_j p + z0_j) <= bound_j``, named after the rows of
        ``C`` in ``constraint_names``; ``n_constraints`` counts the rows of ``C``.
    atom_offsets : ndarray of shape (n_atoms,) of int64 or None
        Offset atoms (``rateopt.metrics.roc_auc``): atom ``a`` scores its members
        ``h(x) - b[atom_offsets[a]]`` (-1: plain); None when no atom has an offset.
    n_offsets : int
        Number of trainable offsets ``b`` (trained with the model).
    atom_contexts : tuple of tuple of Context
        The subsets merged into each atom (``CompiledProblem.atom_contexts``;
        empty for a spec built by hand): what recomputes memberships under
        other labels (:mod:`rateopt._training._counterfactual`).
    """

    blocks: tuple
    n_atoms: int
    C: np.ndarray
    kappa: np.ndarray
    c0: np.ndarray
    const0: float
    constraint_names: tuple
    n_features: int
    metric: object = None
    metric_constraints: tuple = ()
    atom_offsets: object = None
    n_offsets: int = 0
    atom_contexts: tuple = ()

    def __post_init__(self):  # a spec built by hand may give C as an array: the games read the map's methods
        object.__setattr__(self, "C", LinearMap.from_dense(self.C, (np.shape(self.C)[0], self.n_atoms)))

    #: Two-class statistics (atom rates); :class:`~rateopt._training._class_spec.ClassGameSpec` is the K-class spec.
    arity: ClassVar[Arity] = TWO_CLASSES
    #: The class labels of a K-class spec (None: two classes).
    classes: ClassVar = None

    def run_pass(self, theta, bias, combinations, *, margin=1.0, rows=None, n_threads=None, offsets=None):
        """The driver's one pass per iteration: :func:`kernel_pass` on this spec."""
        return kernel_pass(self, theta, bias, combinations, margin=margin, rows=rows, n_threads=n_threads,
                           offsets=offsets)

    def mapped(self, feature_map, n_threads):
        """The same game on the kernel features of every dataset (built once, memory checked up front)."""
        total = sum(b.X.n_samples for b in self.blocks)
        check_block_memory(total, feature_map.n_components_, feature_map.dtype)
        blocks = tuple(
            Block(core.FeatureMatrix(feature_map.transform(b.X, n_threads=n_threads)), b.atoms, b.atom_ids, b.name)
            for b in self.blocks
        )
        return dataclasses.replace(self, blocks=blocks, n_features=feature_map.n_components_)

    def objective(self, rates):
        """0-1 objective from atom rates."""
        return float(self.c0 @ rates + self.const0)

    def proxy_constraints(self, theta, bias, *, margin=1.0):
        """Hinge upper bounds ``g~_i`` of every constraint at ``(theta, bias)``.

        Each constraint gets the net per-example hinge of its own coefficients
        (all m in one kernel pass): the bound TFCO's hinge relaxation
        computes, and what the Lagrangian "Hinge" baseline's multipliers see.
        Bounding each atom separately would be looser: a constraint comparing
        overlapping subsets (``tpr(g) >= 0.95 tpr(all)``) could then never be
        met by any model.
        """
        m = self.n_constraints
        if m == 0:
            return np.zeros(0)
        combos = Combinations(np.asarray(self.C), ("hinge",) * m, np.zeros(m))
        return kernel_pass(self, theta, bias, combos, margin=margin).proxy_values - self.kappa

    def constraint_bound(self):
        """B: the largest ``|g_i|`` any model can produce (rates lie in [0, 1]); 1 without constraints."""
        if self.n_constraints == 0:
            return 1.0
        hi = self.C.row_sums(1) - self.kappa
        lo = self.C.row_sums(-1) - self.kappa
        return float(max(np.max(np.abs(hi)), np.max(np.abs(lo)), 1e-12))

    def for_players(self):
        """The game the players see: rows of extreme magnitude rescaled by a power of two.

        A constraint ``C_i p - kappa_i <= 0`` whose coefficients or offset exceed
        ``2**64`` (e.g. a rate multiplied by 1e200) would overflow the players'
        arithmetic (Adam squares gradients of that size). Dividing the row by a
        power of two that brings it to unit magnitude is exact and keeps its
        feasible set; the objective is treated alike (its minimizers do not
        change). Rows within the limit, i.e. every ordinary problem, are
        untouched (``self`` is returned), and recorded values always use the
        problem as stated.
        """
        m = self.n_constraints
        row_top = (np.maximum(self.C.row_abs_max(), np.abs(self.kappa)) if m
                   else np.zeros(0))
        e_row = _pow2_exponents(row_top)
        e_obj = int(_pow2_exponents(max(float(np.abs(self.c0).max(initial=0.0)), abs(float(self.const0)))))
        if not e_row.any() and e_obj == 0:
            return self
        return dataclasses.replace(self, C=self.C.scaled_rows(e_row), kappa=np.ldexp(self.kappa, -e_row),
                                   c0=np.ldexp(self.c0, -e_obj), const0=math.ldexp(float(self.const0), -e_obj))


def _pow2_exponents(top):
    """``e`` with ``top * 2**-e`` in [0.5, 1) where ``top`` exceeds the players' limit, else 0."""
    top = np.asarray(top, dtype=np.float64)
    return np.where(top > PLAYER_MAX_MAGNITUDE, np.frexp(top)[1], 0).astype(np.int64)


@dataclass(frozen=True)
class Combinations:
    """The rate combinations one kernel pass evaluates.

    Attributes
    ----------
    coefs : ndarray of shape (k, n_atoms)
        Each row a linear combination of atom rates.
    proxies : tuple of str
        The proxy of each combination (``"hinge"``, ``"logistic"``, ``"ramp"``).
    grad_weights : ndarray of shape (k,)
        Weights of the combinations in the returned gradient (0: value only).
    """

    coefs: np.ndarray
    proxies: tuple
    grad_weights: np.ndarray

    @classmethod
    def single(cls, coef, proxy="hinge"):
        """One combination, with its gradient."""
        return cls(np.asarray(coef, dtype=np.float64)[None, :], (proxy,), np.ones(1))

    def __add__(self, other):
        return Combinations(np.vstack([self.coefs, other.coefs]), self.proxies + other.proxies,
                            np.concatenate([self.grad_weights, other.grad_weights]))

    @property
    def k(self):
        return self.coefs.shape[0]


@dataclass
class KernelPass:
    """Results of one kernel pass over every dataset at one model.

    ``proxy_values`` has one entry per combination; ``proxy_value`` is the
    first (the only one when a single coefficient vector was passed).
    ``grad_offsets`` is the weighted gradient with respect to the offsets
    (empty without offset atoms).
    """

    rates: np.ndarray
    proxy_pos_rates: np.ndarray
    proxy_neg_rates: np.ndarray
    grad: np.ndarray
    grad_bias: float
    proxy_values: np.ndarray
    grad_offsets: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))

    @property
    def proxy_value(self):
        return float(self.proxy_values[0])


def kernel_pass(spec, theta, bias, combinations, *, margin=1.0, rows=None, n_threads=None, offsets=None):
    """Run the fused kernel once on every dataset of ``spec`` at ``(theta, bias)``.

    Parameters
    ----------
    spec : GameSpec
    theta : ndarray of shape (n_features,)
    bias : float
    combinations : Combinations or ndarray of shape (n_atoms,)
        Global atom coefficients of the combinations to evaluate (a plain
        vector is one hinge combination with its gradient).
    margin : float
    rows : list of (ndarray or None), default=None
        Per-block minibatch rows (None: full pass).
    n_threads : int or None
    offsets : ndarray of shape (spec.n_offsets,), default=None
        The trainable offsets, required when the spec has offset atoms. A
        dataset with an offset atom runs the offset-atom kernel
        (:func:`~rateopt.core.rate_kernel_offsets`); the others, and every
        problem without offsets, the plain kernel.

    Returns
    -------
    KernelPass
    """
    if not isinstance(combinations, Combinations):
        combinations = Combinations.single(combinations)
    A = spec.n_atoms
    rates, ppos, pneg = np.zeros(A), np.zeros(A), np.zeros(A)
    grad = np.zeros(spec.n_features)
    pv = np.zeros(combinations.k)
    gb = 0.0
    n_off = spec.n_offsets
    goff = np.zeros(n_off)
    if n_off and (offsets is None or np.shape(offsets) != (n_off,)):
        raise ValueError(f"the problem has {n_off} trainable offsets (thresholds): pass offsets of shape ({n_off},)")
    for i, blk in enumerate(spec.blocks):
        r = None if rows is None else rows[i]
        ids = spec.atom_offsets[blk.atom_ids] if n_off else None
        if ids is not None and not np.any(ids >= 0):
            ids = None
        res = blk.run_kernel(theta, bias, combinations.coefs[:, blk.atom_ids], combinations.proxies,
                             combinations.grad_weights, ids, offsets, margin=margin, rows=r, n_threads=n_threads)
        if ids is not None:
            goff += res.grad_offsets
        rates[blk.atom_ids] = res.rates
        ppos[blk.atom_ids] = res.proxy_pos_rates
        pneg[blk.atom_ids] = res.proxy_neg_rates
        grad += res.grad
        gb += res.grad_bias
        pv += res.proxy_values
    return KernelPass(rates, ppos, pneg, grad, gb, pv, goff)


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
        table = cp.tables[name]
        game_block = getattr(ds, "game_block", None)  # a partitioned dataset (rateopt.dask) makes its own
        blk = (game_block(table) if game_block is not None else
               Block(core.FeatureMatrix(ds.X), atom_table(table), np.asarray(table.atom_ids, dtype=np.int64), name))
        if n_features is None:
            n_features = blk.n_features
        elif blk.n_features != n_features:
            raise ValueError(
                f"dataset {name!r} has {blk.n_features} features but another dataset has {n_features}: "
                "one model cannot score both"
            )
        blocks.append(blk)
    return GameSpec(
        blocks=tuple(blocks),
        n_atoms=cp.n_atoms,
        C=LinearMap.from_dense(cp.C, (np.shape(cp.C)[0], cp.n_atoms)),
        kappa=np.asarray(cp.kappa, dtype=np.float64),
        c0=np.asarray(cp.objective_coef, dtype=np.float64),
        const0=float(cp.objective_constant),
        constraint_names=tuple(cp.constraint_names),
        n_features=int(n_features),
        metric=cp.metric,
        metric_constraints=tuple(cp.metric_constraints),
        atom_offsets=None if not cp.n_offsets else np.asarray(cp.atom_offsets, dtype=np.int64),
        n_offsets=cp.n_offsets,
        atom_contexts=cp.atom_contexts,
    )


def atom_table(table):
    """The core's validated :class:`~rateopt.core.AtomTable` of a compiled
    :class:`~rateopt._compiler._compiled.MembershipTable` (its arrays are shared, not copied)."""
    return core.AtomTable(table.indptr, table.indices, table.weights, table.n_atoms)


def revalidated(spec):
    """``spec`` with every block's features and atom table validated again.

    A :class:`GameSpec` holds views of arrays that the caller can still write
    to; a new training run re-checks them (finiteness, index ranges) rather than
    trust a validation done before.
    """
    return dataclasses.replace(spec, blocks=tuple(b.revalidated() for b in spec.blocks))


@dataclass(frozen=True)
class DecisionPass:
    """The atom rates of a fitted classifier iterate (an estimator oracle's), measured from its decisions."""

    rates: np.ndarray


def decision_rates(spec, model):
    """Every atom's positive rate under ``model``'s 0/1 decisions: ``V^T 1[model(x) = 1]`` per dataset.

    Parameters
    ----------
    spec : GameSpec
    model : fitted classifier
        ``predict`` returns 0/1 labels.

    Returns
    -------
    ndarray of shape (n_atoms,)
        Exact: the same sums the kernel forms from ``1[s >= 0]``.
    """
    rates = np.zeros(spec.n_atoms)
    for blk in spec.blocks:
        t = blk.atoms
        V = sp.csr_matrix((t.weights, t.indices, t.indptr), shape=(t.n_samples, t.n_atoms))
        rates[blk.atom_ids] = V.T @ positive_decisions(model, blk.X.data)
    return rates


TwoClasses.spec_builder = staticmethod(spec_from_problem)  # Arity.game_spec
