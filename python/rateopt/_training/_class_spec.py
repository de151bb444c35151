"""The K-class game spec: what a K-class problem becomes for training, beside the two-class :class:`GameSpec`.

A K-class problem's **statistics** are its confusion counts ``N[g, y, k]``
(cell ``g``, true class ``y``, predicted class ``k``), flattened to a vector
of ``S = n_cells * K * K`` entries and divided by the total row weight, so
that they lie in [0, 1] and sum to 1 (the analogue of two-class atom rates).
The compiled tensors map them affinely, like atom rates: the objective is
``c0 . s + const0`` and the constraints ``C s - kappa`` (``<= 0`` holds), so
the games, the recorder and :class:`~rateopt.TrainResult` (feasibility, the
m+1 shrink, summaries, files) treat both arities alike. A non-linear
objective (macro-F1) is a :class:`ClassObjective` in ``metric``; the games
linearize it at the running average of the iterates' statistics (Narasimhan et al. (2019)'s
Frank-Wolfe objective player).

:meth:`ClassGameSpec.run_pass` is the K-class iteration: one fused core pass
(:func:`rateopt.core.multiclass_pass`) whose two cost tables are the
combinations the game asks for (:func:`rateopt.games._base.model_combinations`:
the objective's ``lam0 c0`` with the objective proxy, the constraints'
``lam C`` with the hinge), read at each row's cell and label. Proxies:
``"logistic"`` is the cost-weighted softmax cross-entropy (the multinomial
logistic loss), ``"hinge"`` the slack-rescaled Crammer-Singer hinge.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .. import core
from .._compiler._linear_map import LinearMap
from ..core._kernel_block import check_block_memory
from ..metrics._macro_f1 import MacroF1, macro_f1_gradient, macro_f1_loss
from ._arity import CLASS_PROXIES, KClasses
from ._spec import Combinations, ConstraintMap, KernelPass, LocalRows

__all__ = ["CLASS_PROXIES", "ClassBlock", "ClassGameSpec", "ClassObjective", "class_spec_from_problem"]



@dataclass(frozen=True)
class ClassBlock(LocalRows):
    """The one dataset of a K-class game: validated features and each row's (cell, label) cell id."""

    X: core.FeatureMatrix
    cells: core.ClassCells
    name: str = "train"


class ClassObjective:
    """A non-linear K-class objective (macro-F1) as a function of the statistics.

    Parameters
    ----------
    cells : ndarray of bool of shape (n_cells,)
        The objective's subset of cells.
    label_weights : ndarray of shape (n_cells, K)
        The weight of each cell's rows of each true class.
    scale : float
        The total row weight (statistics are counts / scale).

    Attributes
    ----------
    name : str
        The objective's name in reports.
    kind : str
        The objective's kind in a result file (:meth:`params`).
    """

    name = MacroF1.name
    kind = "macro_f1"

    def __init__(self, cells, label_weights, scale):
        self.cells = np.asarray(cells, dtype=bool)
        self.label_weights = np.asarray(label_weights, dtype=np.float64)
        self.scale = float(scale)
        self.true = self.label_weights[self.cells].sum(axis=0)
        G, K = self.label_weights.shape
        self.shape = (G, K, K)

    @classmethod
    def of(cls, objective, compiled, scale):
        """The objective ``objective`` (:class:`~rateopt.metrics.MacroF1`) of a compiled K-class problem."""
        cells, _ = objective.subset(compiled)
        return cls(cells, compiled.cell_label_weights, scale)

    def objective(self, stats):
        """The objective's value at the statistics ``stats`` (S,)."""
        return macro_f1_loss(np.reshape(stats, self.shape) * self.scale, self.cells, self.true)

    def gradient(self, stats):
        """The gradient with respect to the statistics, shape (S,)."""
        return (macro_f1_gradient(np.reshape(stats, self.shape) * self.scale, self.cells, self.true)
                * self.scale).reshape(-1)

    def start(self):
        """The first linearization point: every row predicting each class with probability 1/K."""
        W = self.label_weights
        K = W.shape[1]
        return (np.repeat(W[:, :, None] / K, K, axis=2) / self.scale).reshape(-1)

    def params(self):
        """The JSON part of the objective's saved form (:meth:`arrays` holds the rest)."""
        return {"kind": self.kind, "scale": self.scale}

    def arrays(self):
        """The arrays of the objective's saved form: ``{"cells": ..., "label_weights": ...}``."""
        return {"cells": self.cells.astype(np.uint8), "label_weights": self.label_weights}


@dataclass(frozen=True)
class ClassGameSpec(ConstraintMap):
    """Everything a K-class game needs, compiled once (the K-class twin of :class:`GameSpec`).

    Attributes
    ----------
    blocks : tuple of ClassBlock
        The training dataset (one block).
    n_atoms : int
        The number of statistics ``S = n_cells * K * K``.
    C : ndarray of shape (n_constraints, S)
    kappa : ndarray of shape (n_constraints,)
    c0 : ndarray of shape (S,)
        Zero for a non-linear objective (``metric``).
    const0 : float
    constraint_names : tuple of str
    n_features : int
    classes : ndarray of shape (K,)
    n_cells : int
    scale : float
        The total row weight: the statistics are the confusion counts divided by it.
    bound : float
        B, a bound on every ``|g_i|`` over all classifiers.
    metric : ClassObjective or None
    """

    blocks: tuple
    n_atoms: int
    C: np.ndarray
    kappa: np.ndarray
    c0: np.ndarray
    const0: float
    constraint_names: tuple
    n_features: int
    classes: np.ndarray
    n_cells: int
    scale: float
    bound: float
    metric: object = None
    metric_constraints: tuple = ()
    atom_offsets: object = None
    n_offsets: int = 0

    @property
    def arity(self):
        """The run's :class:`~rateopt._training._arity.KClasses`."""
        return KClasses(self.classes)

    @property
    def n_classes(self):
        return len(self.classes)

    def objective(self, stats):
        """Objective at statistics ``stats``."""
        if self.metric is not None:
            return self.metric.objective(stats)
        return float(self.c0 @ stats + self.const0)

    def constraint_bound(self):
        """B: a bound on every ``|g_i|`` (each row's counts sum to its weight); 1 without constraints."""
        return self.bound

    def for_players(self):
        """The game the players see (K-class tensors are rates: never rescaled)."""
        return self

    def run_pass(self, theta, bias, combinations, *, margin=1.0, rows=None, n_threads=None, offsets=None,
                 value=True):
        """One fused K-column pass at ``(theta (d, K), bias (K,))`` for the game's combinations.

        ``combinations``: one (the objective's, any proxy) or two (the
        objective's, then the constraints' with the hinge) rows over the
        statistics, or a plain vector (a value-only pass). ``margin`` is the
        hinge's; ``rows`` is one minibatch per block (the K-class game has
        one), as for :func:`~rateopt._training._spec.kernel_pass`: the
        statistics and gradients are then scaled estimates of the full
        pass's. ``offsets`` are ignored (none). Without ``value`` the
        pass skips the proxy value (``proxy_values`` is NaN; every other
        output is the same): for games that never read it.
        """
        if not isinstance(combinations, Combinations):
            combinations = Combinations(np.asarray(combinations, dtype=np.float64)[None, :], ("hinge",), np.zeros(1))
        if combinations.k > 2 or (combinations.k == 2 and combinations.proxies[1] != "hinge"):
            raise ValueError("a K-class pass takes the objective's combination and the constraints' (hinge) only")
        blk = self.blocks[0]
        K, rows_ = self.n_classes, self.n_cells * self.n_classes
        tables = combinations.coefs / self.scale
        cost_obj = tables[0].reshape(rows_, K)
        cost_con = tables[1].reshape(rows_, K) if combinations.k == 2 else np.zeros((rows_, K))
        con_proxy = CLASS_PROXIES[combinations.proxies[1]] if combinations.k == 2 else "hinge"
        gradient = bool(np.any(combinations.grad_weights))
        res = core.multiclass_pass(blk.X, theta, bias, blk.cells, cost_obj, cost_con,
                                   objective_proxy=CLASS_PROXIES[combinations.proxies[0]],
                                   constraint_proxy=con_proxy, gradient=gradient, margin=margin,
                                   rows=None if rows is None else rows[0], n_threads=n_threads, value=value)
        stats = res.counts.reshape(-1) / self.scale
        empty = np.zeros(0)
        return KernelPass(stats, empty, empty, res.grad, res.grad_intercept, np.array([res.proxy_value]))

    def mapped(self, feature_map, n_threads):
        """The same game on the kernel features of its dataset (memory checked up front)."""
        blk = self.blocks[0]
        check_block_memory(blk.n_samples, feature_map.n_components_, feature_map.dtype)
        X = core.FeatureMatrix(feature_map.transform(blk.X, n_threads=n_threads))
        return dataclasses.replace(self, blocks=(ClassBlock(X, blk.cells, blk.name),),
                                   n_features=feature_map.n_components_)


#: Entries of the constraint map's product formed at once to compute the bound B (about 60 MiB of temporaries).
_BOUND_CHUNK_ENTRIES = 1 << 20


def _constraint_bound(C, kappa, W, scale, K):
    """B = max_i sum_{g,y} W[g, y] / scale * max_k |C_i[g, y, k]| + |kappa_i| (W: the cells' label weights).

    From the factored map's product, a chunk of rows at a time: time linear in the product's entries and
    memory bounded, where a dense (m, n_cells, K, K) tensor is quadratic in the groups.
    """
    m = C.shape[0]
    if not m:
        return 1.0
    B = C.B.tocsr()
    pattern = sp.csr_matrix((np.ones(B.nnz), B.indices, B.indptr), shape=B.shape)
    per_row = pattern @ np.diff(C.A.indptr) if C.A is not None else np.diff(B.indptr)  # the product's entries
    step = max(1, int(_BOUND_CHUNK_ENTRIES // max(1, per_row.max())))
    w = (W / scale).reshape(-1)  # per (cell, label): the flattened index // K
    top = np.empty(m)
    for i in range(0, m, step):
        P = B[i:i + step] if C.A is None else B[i:i + step] @ C.A
        P = P.tocsr()
        P.sum_duplicates()  # canonical: sorted indices, so the (row, cell, label) keys below ascend
        rows = np.repeat(np.arange(P.shape[0]), np.diff(P.indptr))
        key = rows * w.shape[0] + P.indices // K
        first = np.flatnonzero(np.diff(key, prepend=-1))
        keys = key[first]
        top_k = np.maximum.reduceat(np.abs(P.data), first) if keys.size else np.zeros(0)
        top[i:i + step] = np.bincount(keys // w.shape[0], weights=w[keys % w.shape[0]] * top_k,
                                      minlength=P.shape[0])
    return float(np.max(top + np.abs(kappa)))


def class_spec_from_problem(problem):
    """The :class:`ClassGameSpec` of a compiled K-class problem, validated now (as :func:`spec_from_problem`).

    The constraint map stays factored (``B L``, ``MulticlassCompiled.constraint_map``): the games'
    products ``lam @ C`` and ``C @ s`` cost the factors' entries per iteration, linear in the groups,
    where the product reads every cell in every parity constraint (the overall rate)."""
    ds, c = problem.dataset, problem.compiled
    X = core.FeatureMatrix(ds.X)
    K, G, m = ds.n_classes, c.n_cells, c.n_constraints
    S = G * K * K
    W = np.asarray(c.cell_label_weights, dtype=np.float64)
    scale = float(W.sum())
    if not scale > 0:
        raise ValueError("the K-class dataset has no weight: every row weight is 0")
    cells = core.ClassCells(np.asarray(c.cells) * K + ds.label_index, ds.weights, G * K)
    offsets = np.asarray(c.offsets, dtype=np.float64).reshape(m)
    C = LinearMap(c.constraint_map.B * scale, c.constraint_map.A)
    bound = _constraint_bound(C, offsets, W, scale, K)
    if problem.is_linear:
        c0, const0, metric = (np.asarray(c.objective, dtype=np.float64).reshape(S) * scale,
                              float(c.objective_constant), None)
    else:
        c0, const0, metric = np.zeros(S), 0.0, ClassObjective.of(problem.objective, c, scale)
    return ClassGameSpec(
        blocks=(ClassBlock(X, cells, getattr(ds, "name", "train")),), n_atoms=S,
        C=C, kappa=offsets, c0=c0, const0=const0,
        constraint_names=tuple(c.constraint_names), n_features=X.n_features, classes=ds.classes,
        n_cells=G, scale=scale, bound=bound, metric=metric)


KClasses.spec_builder = staticmethod(class_spec_from_problem)  # Arity.game_spec
