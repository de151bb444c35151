"""K-class rate problems: an objective and constraints over a :class:`~rateopt.ClassDataset`, compiled once.

Every K-class rate is linear in the *confusion counts* of the classifier on
the dataset's **cells**: the rows are split by which of the problem's subsets
they belong to (one cell per distinct membership pattern, as the binary
compiler merges atoms), and ``N[g, y, k] = sum_{i in cell g} w_i L[i, y] P[i, k]``
where ``P[i, k]`` is the probability that row ``i`` is predicted ``k`` and
``L[i, y]`` its label indicator (one-hot labels; the plug-in post-processor
passes class-probability estimates instead). A rate leaf
``W(S & label & yhat=j) / W(S & denominator)`` is the tensor ``A`` with
``A[g, y, j] = 1 / W(S & denominator)`` for the cells ``g`` of ``S`` and the
true classes ``y`` of its label condition, so that every objective and
constraint is ``<A, N> + constant``.

:class:`MulticlassProblem` holds the tensors (:class:`MulticlassCompiled`)
and evaluates any K-class predictor's labels or class probabilities with one
``bincount``. :class:`rateopt.Problem` given a :class:`~rateopt.ClassDataset`
builds one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from rateopt._compiler._compiled import Evaluation
from rateopt._compiler._toml import GoalsSpec, read_goals, write_goals
from rateopt._language import _rates as R
from rateopt._language._classes import (
    ClassDataset,
    ClassRate,
    class_positions,
    class_recall,
    multiclass_error_rate,
)
from rateopt._language._expressions import Constant, Constraint, Expression, Scale, Sum, as_scalar, lift
from rateopt.exceptions import ConstantConstraintError, EmptySubsetError, RateoptError
from rateopt.goals import MULTICLASS_OBJECTIVES, Goal

__all__ = ["MulticlassProblem", "MulticlassCompiled", "MacroF1", "is_multiclass_data",
           "confusion_counts", "prediction_distribution"]


def is_multiclass_data(datasets) -> bool:
    """Whether ``datasets`` (a dataset, a mapping or a sequence of them) holds a :class:`ClassDataset`."""
    if isinstance(datasets, ClassDataset):
        return True
    if isinstance(datasets, Mapping):
        return any(isinstance(d, ClassDataset) for d in datasets.values())
    if isinstance(datasets, (list, tuple)):
        return any(isinstance(d, ClassDataset) for d in datasets)
    return False


def _the_dataset(datasets) -> ClassDataset:
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


# --------------------------------------------------------------------------- non-linear objectives


class MacroF1:
    """Macro-averaged F1 over the classes on a subset, as an objective: ``1 - mean_k F1_k`` is minimized.

    ``F1_k = 2 P(yhat=k, y=k) / (P(yhat=k) + P(y=k))``: a ratio of two
    linear functions of the confusion counts, so ``1 - macro-F1`` is a
    non-linear function of the rates (seed 003's metrics). Training
    linearizes it at the running average of the iterates' counts (the
    Frank-Wolfe player of seed 003, ``lambda_t = grad psi(R_{t-1})``).

    Parameters
    ----------
    context : Context or ClassDataset
        The subset (default: a whole dataset).
    """

    name = "1 - macro_f1"

    def __init__(self, context):
        if isinstance(context, ClassDataset):
            context = context.context()
        self.context = context

    def _parts(self, compiled, N):
        """The subset's cells, each class's true positives and F1 denominator ``P(yhat=k) + P(y=k)`` (unnormalized)."""
        m = compiled.context_cells(self.context)
        true = compiled.cell_label_weights[m].sum(axis=0)
        if true.sum() <= 0:
            raise EmptySubsetError(f"macro-F1 on an empty subset {self.context.label!r}")
        Ns = N[m]  # (g, y, k)
        return m, np.einsum("gkk->k", Ns), Ns.sum(axis=(0, 1)) + true

    def value(self, compiled, N) -> float:
        """``1 - macro-F1`` of confusion counts ``N`` of shape (n_cells, K, K)."""
        _, tp, den = self._parts(compiled, N)
        f1 = np.where(den > 0, 2.0 * tp / np.where(den > 0, den, 1.0), 0.0)
        return float(1.0 - f1.mean())

    def gradient(self, compiled, N) -> np.ndarray:
        """The gradient of :meth:`value` with respect to ``N``: a (n_cells, K, K) tensor."""
        m, tp, den = self._parts(compiled, N)
        K = N.shape[1]
        den = np.where(den > 0, den, 1.0)
        # d(1 - mean F1)/dN[g, y, k] = -1/K (2 [y == k] / den_k - 2 tp_k / den_k^2), for the subset's cells g
        per_cell = np.broadcast_to(2.0 * tp / den**2 / K, (K, K)) - np.diag(2.0 / den / K)
        G = np.zeros_like(N, dtype=np.float64)
        G[m] = per_cell
        return G


def _named_objective(name, ds):
    if name in (None, "error"):
        return multiclass_error_rate(ds.context())
    if name == "balanced_error":
        K = ds.n_classes
        return 1.0 - R.sum([class_recall(ds.context(), c) for c in ds.classes.tolist()]) / K
    if name == "macro_f1":
        return MacroF1(ds.context())
    raise RateoptError(f"objective {name!r} is not a K-class objective; choose one of {list(MULTICLASS_OBJECTIVES)}")


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
    constraints : ndarray of shape (m, n_cells, K, K)
    offsets : ndarray of shape (m,)
        ``g_i = <constraints[i], N> - offsets[i] <= 0``.
    constraint_names : tuple of str
    rate_names : tuple of str
    rates : ndarray of shape (n_rates, n_cells, K, K)
        The tensor of every rate leaf of the problem (for reports).
    """

    n_classes: int
    cells: np.ndarray
    n_cells: int
    cell_members: np.ndarray
    contexts: tuple
    cell_label_weights: np.ndarray
    objective: np.ndarray | None
    objective_constant: float
    constraints: np.ndarray
    offsets: np.ndarray
    constraint_names: tuple
    rate_names: tuple
    rates: np.ndarray

    @property
    def n_constraints(self) -> int:
        """The number of constraints m."""
        return int(self.constraints.shape[0])

    def context_cells(self, context) -> np.ndarray:
        """The cells of one of the problem's subsets, as a boolean mask of shape (n_cells,)."""
        for j, c in enumerate(self.contexts):
            if c == context:
                return self.cell_members[:, j]
        raise RateoptError(f"subset {context.label!r} is not one of the problem's")


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
    """Each row's cell: its membership pattern over ``contexts``; and the patterns."""
    n = ds.n_samples
    if not contexts:
        return np.zeros(n, dtype=np.int64), np.ones((1, 0), dtype=bool)
    M = np.stack([c.mask() for c in contexts], axis=1)
    packed = np.packbits(M, axis=1)
    keys, inverse = np.unique(packed, axis=0, return_inverse=True)
    members = np.unpackbits(keys, axis=1, count=len(contexts)).astype(bool)
    return inverse.reshape(-1).astype(np.int64), members


def label_weights(ds, cells, n_cells, soft_labels=None):
    """``W[g, y]``: the weight of cell ``g``'s rows labeled ``y`` (expected weight under ``soft_labels``)."""
    K = ds.n_classes
    w = ds.weights
    if soft_labels is None:
        return np.bincount(cells * K + ds.label_index, weights=w, minlength=n_cells * K).reshape(n_cells, K)
    W = np.empty((n_cells, K))
    for y in range(K):
        W[:, y] = np.bincount(cells, weights=w * soft_labels[:, y], minlength=n_cells)
    return W


def _leaf_tensor(leaf, col, members, W, K):
    cells = members[:, col]
    num = leaf.label_mask("label")
    den_mask = leaf.label_mask("denominator")
    den = float(W[np.ix_(cells, den_mask)].sum())
    if not den > 0:
        raise EmptySubsetError(f"rate {leaf.name} is measured on a subset of zero weight")
    A = np.zeros((members.shape[0], K, K))
    A[np.ix_(cells, num, [leaf.predicted])] = 1.0 / den
    return A


def _linear_tensor(expr, index, tensors, shape):
    """``(A, constant)`` of an affine expression, from the leaf tensors."""
    if isinstance(expr, Constant):
        return np.zeros(shape), expr.value
    if isinstance(expr, ClassRate):
        return tensors[index[id(expr)]], 0.0
    if isinstance(expr, Scale):
        A, c = _linear_tensor(expr.args[0], index, tensors, shape)
        return expr.factor * A, expr.factor * c
    if isinstance(expr, Sum):
        A, c = np.zeros(shape), 0.0
        for a in expr.args:
            Aa, ca = _linear_tensor(a, index, tensors, shape)
            A, c = A + Aa, c + ca
        return A, c
    raise RateoptError(f"cannot lower {type(expr).__name__} in a K-class problem")


def compile_multiclass(objective, constraints, ds, soft_labels=None) -> MulticlassCompiled:
    """Compile an objective (expression or :class:`MacroF1`) and named constraints on ``ds``.

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
    """
    K = ds.n_classes
    exprs = [c.expression for c in constraints]
    leaves = []
    for e in [objective, *exprs]:
        if isinstance(e, MacroF1):
            continue
        for leaf in e.leaves():
            _check_leaf(leaf, ds)
            if isinstance(leaf, ClassRate):
                leaves.append(leaf)
    contexts = list(dict.fromkeys([leaf.context for leaf in leaves]
                                  + ([objective.context] if isinstance(objective, MacroF1) else [])))
    cells, members = _cells(contexts, ds)
    n_cells = members.shape[0]
    W = label_weights(ds, cells, n_cells, soft_labels)
    col = {c: j for j, c in enumerate(contexts)}
    unique_leaves = list({id(leaf): leaf for leaf in leaves}.values())
    index = {id(leaf): i for i, leaf in enumerate(unique_leaves)}
    tensors = [_leaf_tensor(leaf, col[leaf.context], members, W, K) for leaf in unique_leaves]
    shape = (n_cells, K, K)
    if isinstance(objective, MacroF1):
        A0, c0 = None, 0.0
    else:
        A0, c0 = _linear_tensor(objective, index, tensors, shape)
    A = np.zeros((len(constraints),) + shape)
    b = np.zeros(len(constraints))
    for i, (con, e) in enumerate(zip(constraints, exprs)):
        Ai, ci = _linear_tensor(e, index, tensors, shape)
        if not np.any(Ai):
            raise ConstantConstraintError(f"constraint {con.name!r} does not depend on the classifier")
        A[i], b[i] = Ai, -ci
    names = {}
    for leaf in unique_leaves:
        names.setdefault(leaf.name, index[id(leaf)])
    rates = np.stack([tensors[i] for i in names.values()]) if names else np.zeros((0,) + shape)
    return MulticlassCompiled(
        n_classes=K, cells=cells, n_cells=n_cells, cell_members=members, contexts=tuple(contexts),
        cell_label_weights=W, objective=A0, objective_constant=float(c0), constraints=A, offsets=b,
        constraint_names=tuple(c.name for c in constraints), rate_names=tuple(names), rates=rates)


# --------------------------------------------------------------------------- reading predictions


def prediction_distribution(ds, predictions, what="predictions") -> np.ndarray | None:
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
    """``N[g, y, k]`` of shape (n_cells, K, K) for class positions (n,) or probabilities (n, K)."""
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


# --------------------------------------------------------------------------- the problem


def _flatten(constraints, ds):
    """Yield ``(constraint, source goal or None)``."""
    if isinstance(constraints, (Constraint, Goal)):
        constraints = [constraints]
    for item in constraints:
        if isinstance(item, Constraint):
            yield item, None
        elif isinstance(item, Goal):
            for c in item.bind(ds):
                yield c, item
        elif isinstance(item, Expression):
            raise TypeError(f"{item} is an expression, not a constraint: compare it with <= or >=")
        elif isinstance(item, Iterable) and not isinstance(item, (str, bytes)):
            yield from _flatten(list(item), ds)
        else:
            raise TypeError(f"constraints must be Constraint objects or goals, got {type(item).__name__}")


def _unique_names(constraints):
    seen, out = {}, []
    for c in constraints:
        n = seen.get(c.name, 0) + 1
        seen[c.name] = n
        out.append(c if n == 1 else c.named(f"{c.name} #{n}"))
    return out


class MulticlassProblem:
    """A rate-constrained K-class problem on one :class:`~rateopt.ClassDataset`, compiled once.

    ``rateopt.Problem(..., datasets=ClassDataset(...))`` builds one.

    Parameters
    ----------
    objective : Expression, str, MacroF1 or None, default=None
        A K-class rate expression to minimize, a name of
        :data:`rateopt.goals.MULTICLASS_OBJECTIVES` (``"error"``, ``"balanced_error"``,
        ``"macro_f1"``), or ``None``: the error rate.
    constraints : iterable, default=()
        Constraints over K-class rates, and goals (e.g.
        :func:`rateopt.goals.multiclass_demographic_parity`), bound to the dataset.
    regularization : float, default=None
        L2 strength of the model (as :class:`~rateopt.Problem`'s).
    datasets : ClassDataset or mapping
        The dataset (a mapping's single value, e.g. ``{"train": ds}``).
    label_probabilities : array-like of shape (n_samples, K), default=None
        Class-probability estimates that stand in for the labels: every rate
        is then its expectation under them (a row counts ``eta_y(x)`` towards
        class ``y``), as plug-in post-processing reads rates.

    Attributes
    ----------
    dataset : ClassDataset
    objective : Expression or MacroF1
    constraints : tuple of Constraint
    compiled : MulticlassCompiled
    classes : ndarray
    n_classes : int

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ds = ro.ClassDataset(np.zeros((6, 1)), [0, 1, 2, 0, 1, 2], groups={"g": [0, 0, 0, 1, 1, 1]})
    >>> p = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.1)], datasets=ds)
    >>> ev = p.evaluate(np.array([0, 1, 2, 0, 0, 0]))
    >>> round(ev.objective, 4), round(ev.max_violation, 4)
    (0.3333, 0.2333)
    """

    def __init__(self, objective=None, constraints=(), *, regularization=None, datasets=None,
                 label_probabilities=None):
        if regularization is not None:
            reg = as_scalar(regularization)
            if reg is None or reg < 0:
                raise RateoptError(f"regularization must be a non-negative number or None, got {regularization!r}")
            regularization = reg
        self.regularization = regularization
        ds = _the_dataset(datasets)
        self.dataset = ds
        if label_probabilities is not None:
            label_probabilities = prediction_distribution(ds, label_probabilities, "label_probabilities")
            if label_probabilities.ndim != 2:
                raise RateoptError("label_probabilities must be class probabilities of shape "
                                   f"({ds.n_samples}, {ds.n_classes})")
        self.label_probabilities = label_probabilities
        self.objective_name = objective if isinstance(objective, str) or objective is None else None
        if objective is None or isinstance(objective, str):
            objective = _named_objective(objective, ds)
        elif not isinstance(objective, MacroF1):
            obj = lift(objective)
            if obj is NotImplemented or isinstance(objective, Constraint):
                raise TypeError(f"objective must be a K-class rate expression, got {type(objective).__name__}")
            objective = obj
        self.objective = objective
        pairs = list(_flatten(constraints, ds))
        self._goals = tuple({id(g): g for _, g in pairs if g is not None}.values())
        self._expression_constraints = any(g is None for _, g in pairs)
        self.constraints = tuple(_unique_names([c for c, _ in pairs]))
        self.compiled = compile_multiclass(objective, self.constraints, ds, label_probabilities)

    @property
    def classes(self) -> np.ndarray:
        """The class labels (the score columns' order)."""
        return self.dataset.classes

    @property
    def n_classes(self) -> int:
        """The number of classes K."""
        return self.dataset.n_classes

    @property
    def constraint_names(self) -> tuple:
        """The unique constraint names, in row order."""
        return self.compiled.constraint_names

    @property
    def n_constraints(self) -> int:
        """The number of constraints m."""
        return self.compiled.n_constraints

    @property
    def is_linear(self) -> bool:
        """Whether the objective is linear in the rates (not :class:`MacroF1`)."""
        return self.compiled.objective is not None

    def objective_value(self, N) -> float:
        """The objective at confusion counts ``N`` (n_cells, K, K)."""
        if isinstance(self.objective, MacroF1):
            return self.objective.value(self.compiled, N)
        return float(np.tensordot(self.compiled.objective, N, axes=3) + self.compiled.objective_constant)

    def constraint_values(self, N) -> np.ndarray:
        """``g`` (m,) at confusion counts ``N``."""
        c = self.compiled
        return np.tensordot(c.constraints, N, axes=([1, 2, 3], [0, 1, 2])) - c.offsets

    def evaluate(self, predictions) -> Evaluation:
        """Objective, constraint values and every rate of a K-class predictor.

        Parameters
        ----------
        predictions : array-like
            Labels of shape (n_samples,) among :attr:`classes` (e.g.
            ``clf.predict(X)``), or class probabilities of shape (n_samples, K)
            (the expected rates of a stochastic classifier, e.g. a mixture's
            ``predict_proba``).

        Returns
        -------
        Evaluation
            ``objective``, ``constraints`` (``g_i`` by name; ``g_i <= 0`` holds),
            ``violations``, ``max_violation``, ``rates`` (every rate leaf by name)
            and ``atom_rates``: the confusion counts ``N`` of shape (n_cells, K, K).

        Raises
        ------
        RateoptError
            On a wrong shape, unknown labels or invalid probabilities.
        """
        decided = prediction_distribution(self.dataset, predictions)
        return self.evaluate_counts(confusion_counts(self.compiled, self.dataset, decided, self.label_probabilities))

    def evaluate_counts(self, N) -> Evaluation:
        """:meth:`evaluate` from confusion counts ``N`` of shape (n_cells, K, K)."""
        g = self.constraint_values(N)
        cons = dict(zip(self.constraint_names, g.tolist()))
        viol = {k: max(0.0, v) for k, v in cons.items()}
        rates = dict(zip(self.compiled.rate_names,
                         np.tensordot(self.compiled.rates, N, axes=([1, 2, 3], [0, 1, 2])).tolist()))
        return Evaluation(objective=self.objective_value(N), constraints=cons, violations=viol,
                          max_violation=max(viol.values(), default=0.0), rates=rates, atom_rates=N)

    def to_toml(self, train=None) -> str:
        """The problem as a goals file (TOML) that :meth:`from_toml` reads back.

        Parameters
        ----------
        train : mapping, default=None
            Training parameters, written to ``[train]``.

        Returns
        -------
        str

        Raises
        ------
        RateoptError
            If a constraint was given as a rate expression (not a goal) or the objective has no name.
        """
        if self._expression_constraints:
            raise RateoptError("to_toml writes goals (rateopt.goals recipes); this problem has constraints given "
                               "as rate expressions, which a goals file cannot state")
        if self.objective_name is None and not isinstance(self.objective, MacroF1):
            raise RateoptError("to_toml needs a named objective (a name of rateopt.goals.MULTICLASS_OBJECTIVES)")
        name = "macro_f1" if isinstance(self.objective, MacroF1) else (self.objective_name or "error")
        return write_goals(GoalsSpec(objective=name, goals=list(self._goals), train=dict(train or {}),
                                     regularization=self.regularization))

    @classmethod
    def from_toml(cls, source, datasets):
        """Build a K-class problem from a goals file (``recipe = "multiclass_demographic_parity"``, ...).

        Parameters
        ----------
        source : str or os.PathLike
            The file's path or text (as :meth:`rateopt.Problem.from_toml`).
        datasets : ClassDataset or mapping
            The dataset.

        Returns
        -------
        MulticlassProblem
        """
        spec = read_goals(source)
        return cls(objective=spec.objective, constraints=spec.goals, regularization=spec.regularization,
                   datasets=datasets)

    def __repr__(self) -> str:
        return (f"MulticlassProblem(n_classes={self.n_classes}, n_constraints={self.n_constraints}, "
                f"n_cells={self.compiled.n_cells})")
