"""The K-class statistics: confusion counts of cells, and K-class rates compiled to tensors over them.

A :class:`~rateopt.Problem` on a :class:`~rateopt.ClassDataset` measures its
rates on the *confusion counts* of the classifier on the dataset's **cells**:
the rows are split by which of the problem's subsets they belong to (one cell
per distinct membership pattern; identical subsets are merged first, by the
two-class compiler's packbits keys, :func:`~rateopt._compiler._compile.merge_contexts`),
and ``N[g, y, k] = sum_{i in cell g} w_i L[i, y] P[i, k]`` where ``P[i, k]``
is the probability that row ``i`` is predicted ``k`` and ``L[i, y]`` its label
indicator (one-hot labels; the plug-in post-processor passes class-probability
estimates instead). A rate leaf ``W(S & label & yhat=j) / W(S & denominator)``
is the tensor ``A`` with ``A[g, y, j] = 1 / W(S & denominator)`` for the cells
``g`` of ``S`` and the true classes ``y`` of its label condition, so that every
objective and constraint is ``<A, N> + constant``: the same affine map from
statistics to values as the two-class atoms' (``C p - kappa``).

Expressions lower through the lowering registry
(:data:`~rateopt._language._lowering.LOWERING_RULES`) with :class:`ClassEnv`,
in which a K-class rate leaf is one term keyed by its statistic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from rateopt._compiler._compile import constant_constraint_error, merge_contexts
from rateopt._compiler._linear_map import LinearMap
from rateopt._language._classes import ClassDataset, ClassRate, class_positions
from rateopt._language._expressions import Constant, Constraint, Expression
from rateopt._language._lowering import CANCEL_RTOL, Affine, Env, lower
from rateopt.exceptions import EmptySubsetError, RateoptError
from rateopt.metrics import MacroF1

__all__ = ["MulticlassCompiled", "ClassEnv", "class_dataset", "compile_multiclass", "confusion_counts",
           "is_multiclass_data", "label_weights", "prediction_distribution"]


def is_multiclass_data(datasets) -> bool:
    """Whether ``datasets`` (a dataset, a mapping or a sequence of them) holds a :class:`ClassDataset`."""
    if isinstance(datasets, ClassDataset):
        return True
    if isinstance(datasets, Mapping):
        return any(isinstance(d, ClassDataset) for d in datasets.values())
    if isinstance(datasets, (list, tuple)):
        return any(isinstance(d, ClassDataset) for d in datasets)
    return False


def class_dataset(datasets) -> ClassDataset:
    """The one :class:`ClassDataset` of ``datasets`` (a dataset, a mapping or a sequence of them).

    Raises
    ------
    RateoptError
        If there is not exactly one dataset, or it is not a ClassDataset.
    """
    if isinstance(datasets, ClassDataset):
        return datasets
    if isinstance(datasets, Mapping):
        found = list({id(d): d for d in datasets.values()}.values())
    elif isinstance(datasets, (list, tuple)):
        found = list(datasets)
    else:
        raise RateoptError("a K-class problem needs datasets=ClassDataset(...)")
    if len(found) != 1 or not isinstance(found[0], ClassDataset):
        raise RateoptError("a K-class problem is measured on one ClassDataset; got "
                           f"{[type(d).__name__ for d in found]!r}")
    return found[0]


# --------------------------------------------------------------------------- the compiled form


@dataclass(frozen=True)
class MulticlassCompiled:
    """The frozen tensors of a K-class problem.

    Attributes
    ----------
    n_classes : int
        K.
    cells : ndarray of shape (n_samples,) of int64
        Each row's cell (its membership pattern over the problem's subsets).
    n_cells : int
        The number of cells G.
    cell_members : ndarray of shape (n_cells, n_contexts) of bool
        Which of the problem's subsets each cell belongs to.
    contexts : tuple of Context
        The subsets, in the columns' order.
    cell_label_weights : ndarray of shape (n_cells, K)
        ``W[g, y]``: the weight of the cell's rows labeled ``y`` (soft labels: their expected weight).
    objective : ndarray of shape (n_cells, K, K) or None
        The objective's tensor (None for a non-linear objective).
    objective_constant : float
    constraint_map : LinearMap of shape (m, n_cells * K * K)
        The constraints' linear part as sparse factors ``B L``: ``L`` holds
        one row per distinct rate statistic (its cells x label classes x
        predicted class, each ``1 / W(denominator)``), ``B`` each constraint's
        coefficients over them. Memory is linear in the statistics' entries,
        where the product is dense over cells (every parity constraint reads
        the overall rate).
    offsets : ndarray of shape (m,)
        ``g_i = <constraints[i], N> - offsets[i] <= 0``.
    constraint_names : tuple of str
    rate_names : tuple of str
    rate_rows : LinearMap of shape (n_rates, n_cells * K * K)
        Every rate leaf's statistic row (one sparse factor), in :attr:`rate_names` order.
    metric : MacroF1 or None
        The non-linear objective (None when the objective is linear).
    """

    n_classes: int
    cells: np.ndarray
    n_cells: int
    cell_members: np.ndarray
    contexts: tuple
    cell_label_weights: np.ndarray
    objective: np.ndarray | None
    objective_constant: float
    constraint_map: LinearMap
    offsets: np.ndarray
    constraint_names: tuple
    rate_names: tuple
    rate_rows: LinearMap
    metric: MacroF1 | None = None
    #: The constraints' lowered forms and each statistic's sparse row (what :attr:`constraint_rows` sums).
    lowered: tuple = ((), {})

    #: What the statistics are called in messages.
    statistics_name = "confusion counts"

    @property
    def n_constraints(self) -> int:
        """The number of constraints m."""
        return int(self.offsets.shape[0])

    @cached_property
    def constraint_rows(self) -> LinearMap:
        """The product of :attr:`constraint_map` as one sparse factor (built on first use), each entry summed
        over its statistics in the form's order and cancelled to round-off as the two-class compiler does:
        the entries of :attr:`constraints`. Its entries number the constraints' references to cells
        (quadratic in the groups for parity, where every constraint reads the overall rate)."""
        forms, rows = self.lowered
        return LinearMap.from_rows([_product_row(f, rows) for f in forms], self.n_cells * self.n_classes ** 2)

    @cached_property
    def constraints(self) -> np.ndarray:
        """The constraints' dense tensor, of shape (m, n_cells, K, K) (built on first use)."""
        return self.constraint_rows.toarray().reshape((self.n_constraints,) + self.statistics_shape)

    @cached_property
    def rates(self) -> np.ndarray:
        """The dense tensor of every rate leaf, of shape (n_rates, n_cells, K, K) (for reports; built on first use)."""
        return self.rate_rows.toarray().reshape((len(self.rate_names),) + self.statistics_shape)

    @property
    def statistics_shape(self) -> tuple:
        """The shape of the statistics ``N``: (n_cells, K, K)."""
        return (self.n_cells, self.n_classes, self.n_classes)

    def context_cells(self, context) -> np.ndarray:
        """The cells of one of the problem's subsets, as a boolean mask of shape (n_cells,)."""
        for j, c in enumerate(self.contexts):
            if c == context:
                return self.cell_members[:, j]
        raise RateoptError(f"subset {context.label!r} is not one of the problem's")

    def objective_value(self, N) -> float:
        """The objective at confusion counts ``N`` (n_cells, K, K)."""
        if self.metric is not None:
            return self.metric.value(self, N)
        return float(np.tensordot(self.objective, N, axes=3) + self.objective_constant)

    def constraint_values(self, N) -> np.ndarray:
        """``g`` (m,) at confusion counts ``N``."""
        return np.tensordot(self.constraints, N, axes=([1, 2, 3], [0, 1, 2])) - self.offsets

    def rate_values(self, N) -> np.ndarray:
        """Every rate leaf's value (in :attr:`rate_names` order) at confusion counts ``N``."""
        return np.tensordot(self.rates, N, axes=([1, 2, 3], [0, 1, 2]))


# --------------------------------------------------------------------------- compiling


class ClassEnv(Env):
    """The lowering environment of K-class statistics: a K-class rate leaf is one term, keyed by its statistic."""

    def class_rate(self, node) -> Affine:
        """``1 * leaf``, keyed by ``(subset, predicted class, label condition, denominator condition)``."""
        return Affine(0.0, {_statistic(node): 1.0})


def _check_leaf(leaf, ds):
    if isinstance(leaf, Constant):
        return
    if not isinstance(leaf, ClassRate):
        raise RateoptError(
            f"{leaf} is a binary rate; a K-class problem takes K-class rates (rateopt.class_prediction_rate, "
            "class_recall, class_false_positive_rate, confusion_rate, multiclass_error_rate) and the "
            "rateopt.goals.multiclass_* goals")
    if leaf.context.dataset is not ds:
        raise RateoptError(f"rate {leaf.name} is measured on another dataset than the problem's "
                           f"({leaf.context.dataset.name!r}); a K-class problem uses one ClassDataset")


def _cells(contexts, ds):
    """Each row's cell (its membership pattern over ``contexts``) and the patterns (n_cells, n_contexts).

    Identical subsets are merged first (the two-class compiler's packbits keys); the patterns over the
    distinct subsets number the cells as the patterns over all of them would (a repeated column never
    decides the order), so the cells do not depend on repeats.
    """
    n = ds.n_samples
    if not contexts:
        return np.zeros(n, dtype=np.int64), np.ones((1, 0), dtype=bool)

    def membership(ctx):
        m = ctx.mask()
        return np.packbits(m).tobytes(), m

    per_ds, ctx_local = merge_contexts({ds.name: ds}, contexts, membership)
    distinct = per_ds[ds.name]
    M = np.stack([mask for mask, _ in distinct], axis=1)
    keys, inverse = np.unique(np.packbits(M, axis=1), axis=0, return_inverse=True)
    members = np.unpackbits(keys, axis=1, count=len(distinct)).astype(bool)
    return inverse.reshape(-1).astype(np.int64), members[:, [ctx_local[c][1] for c in contexts]]


def label_weights(ds, cells, n_cells, soft_labels=None):
    """``W[g, y]``: the weight of cell ``g``'s rows labeled ``y`` (expected weight under ``soft_labels``).

    Parameters
    ----------
    ds : ClassDataset
    cells : ndarray of shape (n_samples,) of int
        Each row's cell.
    n_cells : int
    soft_labels : ndarray of shape (n_samples, K), default=None
        Class-probability estimates that stand in for the labels.

    Returns
    -------
    ndarray of shape (n_cells, K)
    """
    K = ds.n_classes
    w = ds.weights
    if soft_labels is None:
        return np.bincount(cells * K + ds.label_index, weights=w, minlength=n_cells * K).reshape(n_cells, K)
    W = np.empty((n_cells, K))
    for y in range(K):
        W[:, y] = np.bincount(cells, weights=w * soft_labels[:, y], minlength=n_cells)
    return W


def _statistic(leaf):
    """The key of a K-class rate leaf's statistic: leaves with equal keys have equal tensors."""
    return (leaf.context, leaf.predicted, leaf.label, leaf.denominator)


def _leaf_row(leaf, col, members, W, K):
    """A rate leaf's statistic as a sparse row ``(indices into the flattened (n_cells, K, K), value)``:
    ``1 / W(S & denominator)`` at its cells x label classes x predicted class, indices ascending."""
    cells = members[:, col]
    num = leaf.label_mask("label")
    den_mask = leaf.label_mask("denominator")
    den = float(W[np.ix_(cells, den_mask)].sum())
    if not den > 0:
        raise EmptySubsetError(f"rate {leaf.name} is measured on a subset of zero weight")
    g, y = np.flatnonzero(cells), np.flatnonzero(num)
    idx = ((g[:, None] * K + y[None, :]) * K + leaf.predicted).reshape(-1)
    return idx.astype(np.int64), 1.0 / den


def _is_constant(form, rows):
    """Whether a form's statistics cancel everywhere (no classifier changes it), in time linear in its
    statistics' entries when at most two differ in their cells: a statistic with a nonzero coefficient that
    shares no entry with the other is never cancelled (the statistics' values are positive); otherwise the
    entries are summed as :func:`_product_row` sums them."""
    live = [key for key, coef in form.terms.items()
            if abs(coef) > CANCEL_RTOL * form.mass[key] and rows[key][0].size]
    if len(live) == 1 and len(form.terms) == 1:
        return False
    if len(live) == 2 and len(form.terms) == 2:
        (i, _), (j, _) = rows[live[0]], rows[live[1]]
        if i.shape != j.shape or not np.array_equal(i, j):
            return False
    return not _product_row(form, rows)[0].size


def _product_row(form, rows):
    """A lowered form's coefficients over the statistics as ``(indices, values)``, ascending: each entry the sum
    ``0 + coef_1 t_1 + coef_2 t_2 + ...`` of its leaves in the form's term order, and sums that cancel to
    round-off exact zeros (dropped), as the dense tensor's entries were (the two-class compiler's rule)."""
    terms = [(rows[key], coef, form.mass[key]) for key, coef in form.terms.items()]
    if not terms:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    u = np.unique(np.concatenate([idx for (idx, _), _, _ in terms]))
    acc, mass = np.zeros(u.shape[0]), np.zeros(u.shape[0])
    for (idx, value), coef, m in terms:
        pos = np.searchsorted(u, idx)
        acc[pos] += coef * value
        mass[pos] += m * value  # the leaf values are positive
    keep = ~(np.abs(acc) <= CANCEL_RTOL * mass)
    return u[keep], acc[keep]


def compile_multiclass(objective, constraints, ds, soft_labels=None) -> MulticlassCompiled:
    """Compile an objective (expression or :class:`~rateopt.metrics.MacroF1`) and named constraints on ``ds``.

    Parameters
    ----------
    objective : Expression or MacroF1
    constraints : sequence of Constraint
        Named uniquely.
    ds : ClassDataset
    soft_labels : ndarray of shape (n_samples, K), default=None
        Class-probability estimates that stand in for the labels (plug-in post-processing).

    Returns
    -------
    MulticlassCompiled

    Raises
    ------
    RateoptError
        On a two-class rate or metric, or a rate of another dataset.
    EmptySubsetError
        If a rate is measured on a subset of zero weight.
    ConstantConstraintError
        If a constraint does not depend on the classifier.
    """
    K = ds.n_classes
    metric = objective if isinstance(objective, MacroF1) else None
    if metric is None and not isinstance(objective, Expression):
        raise RateoptError(f"a K-class problem's objective is a K-class rate expression or MacroF1, got "
                           f"{type(objective).__name__}")
    for con in constraints:
        if not isinstance(con, Constraint):
            raise RateoptError(f"a K-class problem's constraints are K-class rate constraints and goals; "
                               f"{con!r} is a {type(con).__name__}")
    exprs = [c.expression for c in constraints]
    leaves = []
    for e in ([] if metric is not None else [objective]) + exprs:
        for leaf in e.leaves():
            _check_leaf(leaf, ds)
            if isinstance(leaf, ClassRate):
                leaves.append(leaf)
    contexts = list(dict.fromkeys([leaf.context for leaf in leaves] + ([metric.context] if metric else [])))
    cells, members = _cells(contexts, ds)
    n_cells = members.shape[0]
    W = label_weights(ds, cells, n_cells, soft_labels)
    col = {c: j for j, c in enumerate(contexts)}
    env = ClassEnv()
    env.where = "the objective"
    obj_form = None if metric is not None else lower(objective, env)
    forms = []
    for con, e in zip(constraints, exprs):
        env.where = f"constraint {con.name!r}"
        forms.append(lower(e, env))
    names: dict = {}  # each rate's name -> its statistic, first leaf first
    first: dict = {}  # each statistic -> its first leaf
    for leaf in leaves:
        names.setdefault(leaf.name, _statistic(leaf))
        first.setdefault(_statistic(leaf), leaf)
    rows = {key: _leaf_row(leaf, col[leaf.context], members, W, K) for key, leaf in first.items()}
    S = n_cells * K * K
    leaf_id = {key: i for i, key in enumerate(rows)}
    L = LinearMap.from_rows([(idx, np.full(idx.shape[0], v)) for idx, v in rows.values()], S)
    A0, c0 = None, 0.0
    if obj_form is not None:
        idx, val = _product_row(obj_form, rows)
        A0, c0 = np.zeros(S), obj_form.const
        A0[idx] = val
        A0 = A0.reshape(n_cells, K, K)
    b, outer = np.zeros(len(constraints)), []
    for i, (con, form) in enumerate(zip(constraints, forms)):
        if _is_constant(form, rows):
            raise constant_constraint_error(con, form, {key[0].label for key in form.terms})
        b[i] = -form.const
        outer.append((np.array([leaf_id[key] for key in form.terms], dtype=np.int64),
                      np.fromiter(form.terms.values(), dtype=np.float64, count=len(form.terms))))
    order = [leaf_id[k] for k in names.values()]
    return MulticlassCompiled(
        n_classes=K, cells=cells, n_cells=n_cells, cell_members=members, contexts=tuple(contexts),
        cell_label_weights=W, objective=A0, objective_constant=float(c0),
        constraint_map=LinearMap(LinearMap.from_rows(outer, len(rows)).B, L.B), offsets=b,
        constraint_names=tuple(c.name for c in constraints), rate_names=tuple(names),
        rate_rows=LinearMap(L.B[order] if order else L.B[:0]), metric=metric, lowered=(tuple(forms), rows))


# --------------------------------------------------------------------------- reading predictions


def prediction_distribution(ds, predictions, what="predictions") -> np.ndarray:
    """A K-class predictor's output as class positions (n,) of int, or probabilities (n, K).

    Parameters
    ----------
    ds : ClassDataset
    predictions : array-like
        Labels of shape (n_samples,) among ``ds.classes``, or class
        probabilities of shape (n_samples, K) (non-negative rows summing to 1).
    what : str
        The argument's name in messages.

    Returns
    -------
    ndarray
        Int class positions (n,), or float64 probabilities (n, K).

    Raises
    ------
    RateoptError
        On a wrong shape, an unknown label, or rows that are not distributions.
    """
    a = np.asarray(predictions)
    n, K = ds.n_samples, ds.n_classes
    if a.ndim == 2:
        if a.shape != (n, K):
            raise RateoptError(f"{what}: class probabilities must have shape ({n}, {K}), got {a.shape}")
        P = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(P)) or np.any(P < 0) or np.any(np.abs(P.sum(axis=1) - 1.0) > 1e-6):
            raise RateoptError(f"{what}: every row of class probabilities must be non-negative and sum to 1")
        return P
    if a.ndim != 1 or a.shape[0] != n:
        raise RateoptError(f"{what} must be labels of shape ({n},) or probabilities of shape ({n}, {K}); "
                           f"got shape {a.shape}")
    idx = class_positions(ds.classes, a, what)
    if np.any(idx < 0):
        raise RateoptError(f"{what} has labels that are not classes {ds.classes.tolist()!r}: "
                           f"{np.unique(a[idx < 0])[:5].tolist()!r}")
    return idx


def confusion_counts(compiled, ds, decided, soft_labels=None) -> np.ndarray:
    """``N[g, y, k]`` of shape (n_cells, K, K) for class positions (n,) or probabilities (n, K).

    Parameters
    ----------
    compiled : MulticlassCompiled
    ds : ClassDataset
    decided : ndarray
        Class positions (n_samples,) or probabilities (n_samples, K), as
        :func:`prediction_distribution` returns them.
    soft_labels : ndarray of shape (n_samples, K), default=None
        Class-probability estimates that stand in for the labels.

    Returns
    -------
    ndarray of shape (n_cells, K, K)
    """
    K, G = compiled.n_classes, compiled.n_cells
    w = ds.weights
    if soft_labels is None:
        base = (compiled.cells * K + ds.label_index) * K
        if decided.ndim == 1:
            return np.bincount(base + decided, weights=w, minlength=G * K * K).reshape(G, K, K)
        N = np.empty((G * K, K))
        for k in range(K):
            N[:, k] = np.bincount(base // K, weights=w * decided[:, k], minlength=G * K)
        return N.reshape(G, K, K)
    N = np.empty((G, K, K))
    if decided.ndim == 1:  # one bincount per true class over (cell, decision)
        key = compiled.cells * K + decided
        for y in range(K):
            N[:, y, :] = np.bincount(key, weights=w * soft_labels[:, y], minlength=G * K).reshape(G, K)
        return N
    for y in range(K):
        for k in range(K):
            N[:, y, k] = np.bincount(compiled.cells, weights=w * soft_labels[:, y] * decided[:, k], minlength=G)
    return N
