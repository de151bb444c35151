"""Compilation of rate problems to atom tables, and evaluation of any predictor.

:class:`Problem` lowers an objective and a list of constraints (expressions of
:mod:`rateopt._rates`, or goals of :mod:`rateopt.goals`) once, by a registry of
small rules ``{node type: lower_fn}``, into a flat frozen
:class:`CompiledProblem`:

* the *atoms* ``p+(S_a)`` (one per distinct subset: identical memberships
  within a dataset are merged), numbered so that each dataset's atoms form a
  contiguous block of the global numbering;
* per dataset, the CSR membership table in the format of
  ``rateopt.core.AtomTable``: ``indptr`` int64 ``(n_samples + 1,)``,
  ``indices`` int32 (dataset-local atom ids), ``weights`` float64
  ``w_j / sum_{i in S_a} w_i``;
* the constraint matrix ``C`` (n_constraints, n_atoms), offsets ``kappa`` with
  the normal form ``g_i = C[i] @ p - kappa[i] <= 0``, the objective's
  coefficients and constant, and ``inverse_data`` mapping rows back to the
  user's constraints.

:meth:`Problem.evaluate` computes the objective, every constraint ``g_i`` and
every named rate for the 0-1 decisions (or expected decisions) of any model,
with one sparse pass over each membership table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from rateopt import _rates as R
from rateopt._data import Context, Dataset
from rateopt.exceptions import (
    ConstantConstraintError,
    EmptySubsetError,
    MissingBaselineError,
    MissingLabelsError,
    RateoptError,
)
from rateopt.goals import Goal

__all__ = [
    "Problem",
    "CompiledProblem",
    "MembershipTable",
    "AtomInfo",
    "InverseData",
    "Evaluation",
    "LOWERING_RULES",
]

#: Relative size under which a merged coefficient is treated as an exact zero
#: (cancellation such as ``0.3 p - 0.1 p - 0.2 p``).
_CANCEL_RTOL = 1e-12


# --------------------------------------------------------------------------- affine forms


class _Affine:
    """``const + sum_ctx coef * p+(ctx)``: the lowered form of an expression.

    ``mass`` tracks, per atom, the sum of the absolute values of every
    contribution to its coefficient, so that a cancellation such as
    ``0.3 p - 0.1 p - 0.2 p`` (which leaves ~1e-17) is recognized as an exact 0.
    """

    __slots__ = ("const", "terms", "mass")

    def __init__(self, const=0.0, terms=None, mass=None):
        self.const = float(const)
        self.terms = dict(terms) if terms else {}
        self.mass = dict(mass) if mass is not None else {k: abs(v) for k, v in self.terms.items()}

    def __add__(self, other: _Affine) -> _Affine:
        out = _Affine(self.const + other.const, self.terms, self.mass)
        for k, v in other.terms.items():
            out.terms[k] = out.terms.get(k, 0.0) + v
            out.mass[k] = out.mass.get(k, 0.0) + other.mass[k]
        return out

    def __mul__(self, c: float) -> _Affine:
        return _Affine(
            self.const * c,
            {k: v * c for k, v in self.terms.items()},
            {k: m * abs(c) for k, m in self.mass.items()},
        )

    def complement(self) -> _Affine:
        """``1 - self``."""
        return _Affine(1.0) + self * -1.0


def _scaled_by_max(w: np.ndarray):
    """``(w * 2**-e, e)`` with ``2**e`` just above ``max(w)``: an exact rescaling
    (a power of two) that puts the largest weight in [0.5, 1)."""
    top = float(np.max(w)) if w.size else 0.0
    if not top > 0.0:
        return np.zeros(w.shape), 0
    e = int(np.frexp(top)[1])
    return np.ldexp(w, -e), e


class _WeightSum:
    """A sum of non-negative weights kept as ``mant * 2**exp``.

    Weights are rescaled by a power of two (exactly) before they are summed, so
    a sum of weights near the float64 maximum does not overflow. Rates are
    ratios of such sums and do not depend on the scale of the weights; only
    weighted counts need the sum itself (:meth:`value`).
    """

    __slots__ = ("mant", "exp")

    def __init__(self, mant=0.0, exp=0):
        self.mant = float(mant)
        self.exp = int(exp)

    @classmethod
    def of(cls, w: np.ndarray) -> _WeightSum:
        scaled, e = _scaled_by_max(w)
        return cls(float(np.sum(scaled)), e)

    def __bool__(self) -> bool:
        return self.mant > 0.0

    def __add__(self, other: _WeightSum) -> _WeightSum:
        if not other:
            return self
        if not self:
            return other
        e = max(self.exp, other.exp)
        return _WeightSum(math.ldexp(self.mant, self.exp - e) + math.ldexp(other.mant, other.exp - e), e)

    def __truediv__(self, other: _WeightSum) -> float:
        """The ratio of two sums (a rate's coefficient)."""
        if not self:
            return 0.0
        return math.ldexp(self.mant / other.mant, self.exp - other.exp)

    def value(self) -> float:
        """The sum itself (``inf`` when it exceeds the float64 range)."""
        try:
            return math.ldexp(self.mant, self.exp)
        except OverflowError:
            return math.inf


#: ``denominator`` of :meth:`_Env.parts` for weighted counts (no normalization).
_COUNT = None


class _Env:
    """Data access during lowering: cached masks and weights, and the checks
    that turn data problems into errors naming the constraint and the subset."""

    def __init__(self):
        self._masks: dict = {}
        self._weights: dict = {}
        self.where = "the objective"

    def mask(self, ctx: Context) -> np.ndarray:
        m = self._masks.get(ctx)
        if m is None:
            m = ctx.mask()
            m.flags.writeable = False
            self._masks[ctx] = m
        return m

    def weight(self, ctx: Context) -> _WeightSum:
        """``W(ctx)``, the sum of the subset's weights (see :class:`_WeightSum`)."""
        w = self._weights.get(ctx)
        if w is None:
            m = self.mask(ctx)
            w = _WeightSum.of(ctx.dataset.weights[m]) if m.any() else _WeightSum()
            self._weights[ctx] = w
        return w

    def nonempty(self, ctx: Context, node) -> _WeightSum:
        """Return ``W(ctx)``, raising if the subset is empty or has zero weight."""
        if not self.mask(ctx).any():
            raise EmptySubsetError(
                f"{self.where}: {node} is measured on subset {ctx.label!r} of dataset "
                f"{ctx.dataset.name!r}, which is empty"
            )
        w = self.weight(ctx)
        if not w:
            raise EmptySubsetError(
                f"{self.where}: {node} is measured on subset {ctx.label!r} of dataset "
                f"{ctx.dataset.name!r}, whose weights sum to zero"
            )
        return w

    def atom(self, ctx: Context, node) -> _Affine:
        self.nonempty(ctx, node)
        return _Affine(0.0, {ctx: 1.0})

    def need_labels(self, node):
        ds = node.context.dataset
        if not ds.has_labels:
            raise MissingLabelsError(
                f"{self.where}: {node} needs labels, but subset {node.context.label!r} "
                f"belongs to the unlabeled dataset {ds.name!r}"
            )

    def need_baseline(self, node):
        ds = node.context.dataset
        if not ds.has_baseline:
            raise MissingBaselineError(
                f"{self.where}: {node} needs baseline decisions, but dataset {ds.name!r} "
                f"(subset {node.context.label!r}) has no baseline"
            )

    def parts(self, node, parts, denominator) -> _Affine:
        """``sum_k W(S_k) q_k / denominator`` with ``q_k = p+(S_k)`` (sign +1) or
        ``1 - p+(S_k)`` (sign -1); ``denominator`` is a weight sum, or
        ``_COUNT`` for weighted counts (no denominator). Parts of zero weight
        contribute exactly 0 and are dropped (they have no atom)."""
        out = _Affine()
        for sub, sign in parts:
            w = self.weight(sub)
            if not w:
                continue
            a = self.atom(sub, node)
            out = out + (a if sign > 0 else a.complement()) * self.ratio(w, denominator, node, sub)
        return out

    def ratio(self, w: _WeightSum, denominator, node, sub) -> float:
        if denominator is not _COUNT:
            return w / denominator
        value = w.value()
        if not math.isfinite(value):
            log10 = math.log10(w.mant) + w.exp * math.log10(2.0)
            e10 = math.floor(log10)
            raise RateoptError(
                f"{self.where}: {node} is a weighted count, and the weights of subset "
                f"{sub.label!r} of dataset {sub.dataset.name!r} sum to about "
                f"{10 ** (log10 - e10):.3f}e+{e10}, more than the float64 maximum; rescale the "
                "weights (rates do not depend on their scale, counts do)"
            )
        return value


# --------------------------------------------------------------------------- registry

#: The lowering registry: ``{node type: lower_fn(node, lowered_args, env) -> affine form}``.
LOWERING_RULES: dict = {}


def _rule(*types):
    def deco(fn):
        for t in types:
            LOWERING_RULES[t] = fn
        return fn

    return deco


def _lower(node, env: _Env) -> _Affine:
    args = tuple(_lower(a, env) for a in node.args)
    fn = LOWERING_RULES.get(type(node))
    if fn is None:  # an internal error: every node type must have a rule
        raise TypeError(f"no lowering rule for expression node type {type(node).__name__}")
    return fn(node, args, env)


@_rule(R.Constant)
def _lower_constant(node, args, env):
    return _Affine(node.value)


@_rule(R.Sum)
def _lower_sum(node, args, env):
    out = _Affine()
    for a in args:
        out = out + a
    return out


@_rule(R.Scale)
def _lower_scale(node, args, env):
    return args[0] * node.factor


@_rule(R.PositivePredictionRate)
def _lower_ppr(node, args, env):
    return env.atom(node.context, node)


@_rule(R.NegativePredictionRate)
def _lower_npr(node, args, env):
    return env.atom(node.context, node).complement()


def _labeled_atom(node, env, label: int) -> _Affine:
    env.need_labels(node)
    env.nonempty(node.context, node)
    sub = node.context.positive() if label == 1 else node.context.negative()
    return env.atom(sub, node)


@_rule(R.TruePositiveRate)
def _lower_tpr(node, args, env):
    return _labeled_atom(node, env, 1)


@_rule(R.FalseNegativeRate)
def _lower_fnr(node, args, env):
    return _labeled_atom(node, env, 1).complement()


@_rule(R.FalsePositiveRate)
def _lower_fpr(node, args, env):
    return _labeled_atom(node, env, 0)


@_rule(R.TrueNegativeRate)
def _lower_tnr(node, args, env):
    return _labeled_atom(node, env, 0).complement()


def _label_parts(node, env, which: str, per_weight: bool) -> _Affine:
    """Proportions (``per_weight``: divided by ``W(S)``) or weighted counts of
    TP/FP/TN/FN/errors on ``S``."""
    env.need_labels(node)
    ctx = node.context
    w = env.nonempty(ctx, node)
    den = w if per_weight else _COUNT
    pos, neg = ctx.positive(), ctx.negative()
    table = {
        "tp": [(pos, +1)],
        "fn": [(pos, -1)],
        "fp": [(neg, +1)],
        "tn": [(neg, -1)],
        "error": [(pos, -1), (neg, +1)],
    }
    return env.parts(node, table[which], den)


@_rule(R.ErrorRate)
def _lower_error(node, args, env):
    return _label_parts(node, env, "error", True)


@_rule(R.Accuracy)
def _lower_accuracy(node, args, env):
    return _label_parts(node, env, "error", True).complement()


_rule(R.TruePositiveProportion)(lambda node, args, env: _label_parts(node, env, "tp", True))
_rule(R.FalsePositiveProportion)(lambda node, args, env: _label_parts(node, env, "fp", True))
_rule(R.TrueNegativeProportion)(lambda node, args, env: _label_parts(node, env, "tn", True))
_rule(R.FalseNegativeProportion)(lambda node, args, env: _label_parts(node, env, "fn", True))
_rule(R.TruePositiveCount)(lambda node, args, env: _label_parts(node, env, "tp", False))
_rule(R.FalsePositiveCount)(lambda node, args, env: _label_parts(node, env, "fp", False))
_rule(R.TrueNegativeCount)(lambda node, args, env: _label_parts(node, env, "tn", False))
_rule(R.FalseNegativeCount)(lambda node, args, env: _label_parts(node, env, "fn", False))


@_rule(R.PositivePredictionCount)
def _lower_pos_count(node, args, env):
    env.nonempty(node.context, node)
    return env.parts(node, [(node.context, +1)], _COUNT)


@_rule(R.NegativePredictionCount)
def _lower_neg_count(node, args, env):
    env.nonempty(node.context, node)
    return env.parts(node, [(node.context, -1)], _COUNT)


@_rule(R.ChurnRate)
def _lower_churn(node, args, env):
    env.need_baseline(node)
    ctx = node.context
    w = env.nonempty(ctx, node)
    return env.parts(node, [(ctx.baseline_positive(), -1), (ctx.baseline_negative(), +1)], w)


def _baseline_label_parts(node, env, which: str, per_weight: bool, den=False) -> _Affine:
    env.need_labels(node)
    env.need_baseline(node)
    ctx = node.context
    w = env.nonempty(ctx, node)
    b1, b0 = ctx.baseline_positive(), ctx.baseline_negative()
    if which == "wins":  # baseline wrong, model right
        parts = [(b0.positive(), +1), (b1.negative(), -1)]
    else:  # losses: baseline right, model wrong
        parts = [(b0.negative(), +1), (b1.positive(), -1)]
    if den is False:
        den = w if per_weight else _COUNT
    return env.parts(node, parts, den)


_rule(R.WinRate)(lambda node, args, env: _baseline_label_parts(node, env, "wins", True))
_rule(R.LossRate)(lambda node, args, env: _baseline_label_parts(node, env, "losses", True))
_rule(R.WinCount)(lambda node, args, env: _baseline_label_parts(node, env, "wins", False))
_rule(R.LossCount)(lambda node, args, env: _baseline_label_parts(node, env, "losses", False))


@_rule(R.LossOnlyChurnRate)
def _lower_loss_churn(node, args, env):
    if node.normalize == "all":
        return _baseline_label_parts(node, env, "losses", True)
    env.need_labels(node)
    env.need_baseline(node)
    ctx = node.context
    env.nonempty(ctx, node)
    den = env.weight(ctx.baseline_negative().negative()) + env.weight(
        ctx.baseline_positive().positive()
    )
    if not den:
        raise EmptySubsetError(
            f"{env.where}: {node} is normalized by subset {ctx.label + ' & baseline=y'!r} "
            f"of dataset {ctx.dataset.name!r}, whose weights sum to zero (the baseline is "
            "never right there)"
        )
    return _baseline_label_parts(node, env, "losses", True, den=den)


@_rule(R.Prevalence)
def _lower_prevalence(node, args, env):
    env.need_labels(node)
    w = env.nonempty(node.context, node)
    return _Affine(env.weight(node.context.positive()) / w)


@_rule(R.BaselinePositiveRate)
def _lower_baseline_ppr(node, args, env):
    env.need_baseline(node)
    w = env.nonempty(node.context, node)
    return _Affine(env.weight(node.context.baseline_positive()) / w)


@_rule(R.BaselineAccuracy)
def _lower_baseline_accuracy(node, args, env):
    env.need_labels(node)
    env.need_baseline(node)
    ctx = node.context
    w = env.nonempty(ctx, node)
    right = env.weight(ctx.baseline_positive().positive()) + env.weight(
        ctx.baseline_negative().negative()
    )
    return _Affine(right / w)


# --------------------------------------------------------------------------- compiled data


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class AtomInfo:
    """Description of one atom ``p+(S)``.

    Parameters
    ----------
    index : int
        Global atom id (column of ``C``).
    dataset : str
        Name of the dataset the subset belongs to.
    local_index : int
        Id within the dataset's membership table.
    name : str
        Name in reports, ``"ppr[<subset>]"``.
    subset : str
        The subset's name (with a ``"<dataset>:"`` prefix unless the dataset
        is named ``"train"``).
    aliases : tuple of str
        Names of other subsets with the identical membership, merged into
        this atom.
    n_members : int
        Number of examples in the subset.
    total_weight : float
        Sum of the members' weights (the normalizer; ``inf`` when it exceeds the float64
        range, which rates never need: they use exactly rescaled weights).
    """

    index: int
    dataset: str
    local_index: int
    name: str
    subset: str
    aliases: tuple
    n_members: int
    total_weight: float


@dataclass(frozen=True, eq=False)
class MembershipTable:
    """One dataset's atoms in the ``rateopt.core.AtomTable`` format.

    Row ``j`` lists the dataset-local ids of the atoms example ``j`` belongs
    to in ``indices[indptr[j]:indptr[j+1]]`` (ascending), with normalized
    weights ``w_j / sum_{i in S_a} w_i``, so that
    ``p+(S_a) = sum_j weights * 1[h(x_j) >= 0]`` over the entries of atom
    ``a``.

    Parameters
    ----------
    dataset : str
        The dataset's name.
    n_samples : int
        Number of rows.
    n_atoms : int
        Number of dataset-local atoms.
    indptr : ndarray of shape (n_samples + 1,) of int64
        Row pointers.
    indices : ndarray of shape (nnz,) of int32
        Dataset-local atom ids.
    weights : ndarray of shape (nnz,) of float64
        Normalized weights.
    atom_ids : ndarray of shape (n_atoms,) of int64
        Global atom id of each local atom (``offset + arange(n_atoms)``).
    offset : int
        Global id of local atom 0.
    """

    dataset: str
    n_samples: int
    n_atoms: int
    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    atom_ids: np.ndarray
    offset: int

    def atom_rates(self, values) -> np.ndarray:
        """Atom values for per-example decision values.

        Parameters
        ----------
        values : ndarray of shape (n_samples,)
            Per-example decisions in {0, 1}, or expected decisions in [0, 1].

        Returns
        -------
        ndarray of shape (n_atoms,)
            ``p+(S_a)`` for each local atom.
        """
        v = np.asarray(values, dtype=np.float64)
        contrib = self.weights * np.repeat(v, np.diff(self.indptr))
        return np.bincount(self.indices, weights=contrib, minlength=self.n_atoms)

    def to_atom_table(self):
        """Build the core's ``AtomTable`` (imports :mod:`rateopt.core` lazily).

        Returns
        -------
        rateopt.core.AtomTable
            The validated table, sharing these arrays.
        """
        from rateopt.core import AtomTable

        return AtomTable(self.indptr, self.indices, self.weights, self.n_atoms)


@dataclass(frozen=True)
class InverseData:
    """Map compiled constraint rows back to the user's constraints.

    Parameters
    ----------
    constraints : tuple of Constraint
        Row ``i``'s constraint, under its final (unique) name.
    originals : tuple of Constraint
        The constraint objects as given (or as produced by a goal).
    sources : tuple
        The goal that produced row ``i``, or ``None``.
    names : tuple of str
        The unique row names.
    """

    constraints: tuple
    originals: tuple
    sources: tuple
    names: tuple
    _by_name: Mapping = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_by_name", {n: i for i, n in enumerate(self.names)})

    def row(self, key) -> int:
        """Row index of a constraint.

        Parameters
        ----------
        key : str or Constraint
            A row name, or a constraint object given to the problem.

        Returns
        -------
        int
            The row index.

        Raises
        ------
        KeyError
            If the constraint is not part of the problem.
        """
        if isinstance(key, str):
            return self._by_name[key]
        for i, (c, o) in enumerate(zip(self.constraints, self.originals)):
            if key is c or key is o:
                return i
        raise KeyError(f"constraint {key!r} is not part of this problem")

    def by_name(self, values) -> dict:
        """Attach per-row values (multipliers, violations) to constraint names.

        Parameters
        ----------
        values : array-like of shape (n_constraints,)
            One value per row.

        Returns
        -------
        dict
            ``{name: value}`` in row order.
        """
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        if v.shape[0] != len(self.names):
            raise ValueError(f"expected {len(self.names)} values, got {v.shape[0]}")
        return dict(zip(self.names, v.tolist()))


@dataclass(frozen=True, eq=False)
class CompiledProblem:
    """The flat arrays a problem compiles to: the only thing the games need.

    Attributes ``C``, ``kappa``, ``objective_coef`` and the tables are
    read-only arrays. Atoms are numbered dataset by dataset: the atoms of
    ``datasets[d]`` are the contiguous block
    ``tables[datasets[d]].offset + arange(tables[datasets[d]].n_atoms)``.

    Parameters
    ----------
    datasets : tuple of str
        Dataset names, in atom-block order.
    atoms : tuple of AtomInfo
        One entry per global atom.
    tables : mapping of str to MembershipTable
        The membership table of each dataset.
    atom_dataset : ndarray of shape (n_atoms,) of int64
        Index into ``datasets`` of each atom.
    atom_local : ndarray of shape (n_atoms,) of int64
        Dataset-local id of each atom.
    C : ndarray of shape (n_constraints, n_atoms)
        Constraint coefficients: ``g_i = C[i] @ p - kappa[i] <= 0``.
    kappa : ndarray of shape (n_constraints,)
        Offsets.
    objective_coef : ndarray of shape (n_atoms,)
        The objective's atom coefficients (``c0``).
    objective_constant : float
        The objective's constant.
    constraint_names : tuple of str
        Unique names of the rows.
    rate_names : tuple of str
        Names of the reported rates (every rate leaf and every atom).
    rate_coef : ndarray of shape (n_rates, n_atoms)
        Their atom coefficients.
    rate_constant : ndarray of shape (n_rates,)
        Their constants.
    inverse_data : InverseData
        Rows back to the user's constraints.
    """

    datasets: tuple
    atoms: tuple
    tables: Mapping
    atom_dataset: np.ndarray
    atom_local: np.ndarray
    C: np.ndarray
    kappa: np.ndarray
    objective_coef: np.ndarray
    objective_constant: float
    constraint_names: tuple
    rate_names: tuple
    rate_coef: np.ndarray
    rate_constant: np.ndarray
    inverse_data: InverseData

    @property
    def n_atoms(self) -> int:
        """Number of atoms."""
        return len(self.atoms)

    @property
    def n_constraints(self) -> int:
        """Number of constraint rows."""
        return len(self.constraint_names)

    def atom_rates(self, values) -> np.ndarray:
        """Global atom values from per-example decision values.

        Parameters
        ----------
        values : mapping of str to ndarray of shape (n_samples,)
            Per dataset name, decisions in {0, 1} or expected decisions in [0, 1].

        Returns
        -------
        ndarray of shape (n_atoms,)
            ``p+(S_a)`` for every atom.
        """
        out = np.empty(self.n_atoms, dtype=np.float64)
        for name in self.datasets:
            t = self.tables[name]
            out[t.offset : t.offset + t.n_atoms] = t.atom_rates(values[name])
        return out

    def to_atom_table(self, dataset: str):
        """The core's ``AtomTable`` of one dataset (imports :mod:`rateopt.core` lazily).

        Parameters
        ----------
        dataset : str
            A dataset name.

        Returns
        -------
        rateopt.core.AtomTable
            The validated table.
        """
        return self.tables[dataset].to_atom_table()


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Objective, constraint values and rates of one predictor.

    Parameters
    ----------
    objective : float
        The objective's value.
    constraints : dict of str to float
        ``g_i`` per constraint name (LHS minus RHS in the ``<= 0`` normal form;
        positive values are violations).
    violations : dict of str to float
        ``max(0, g_i)`` per constraint name.
    max_violation : float
        The largest violation (0 when every constraint holds or there is none).
    rates : dict of str to float
        Every rate leaf of the problem and every atom, by name.
    atom_rates : ndarray of shape (n_atoms,)
        The atom values ``p+(S_a)``.
    """

    objective: float
    constraints: dict
    violations: dict
    max_violation: float
    rates: dict
    atom_rates: np.ndarray

    def is_feasible(self, tol: float = 0.0) -> bool:
        """Whether every constraint holds up to ``tol``.

        Parameters
        ----------
        tol : float, default=0.0
            Allowed violation.

        Returns
        -------
        bool
            ``max_violation <= tol``.
        """
        return self.max_violation <= tol

    def __repr__(self) -> str:
        return (
            f"Evaluation(objective={self.objective:.6g}, max_violation={self.max_violation:.6g}, "
            f"n_constraints={len(self.constraints)}, n_rates={len(self.rates)})"
        )


# --------------------------------------------------------------------------- Problem


def _resolve_role(datasets, role: str):
    if isinstance(datasets, Dataset):
        return datasets
    if isinstance(datasets, Mapping):
        if role not in datasets:
            raise RateoptError(
                f"no dataset for role {role!r}; datasets given: {list(datasets)!r}"
            )
        return datasets[role]
    for ds in datasets:
        if ds.name == role:
            return ds
    raise RateoptError(
        f"no dataset named {role!r}; datasets given: {[d.name for d in datasets]!r}"
    )


def _datasets_by_name(expressions) -> dict:
    """The datasets used by ``expressions``, by name, in order of appearance."""
    datasets: dict = {}
    for expr in expressions:
        for ds in expr.datasets:
            other = datasets.get(ds.name)
            if other is None:
                datasets[ds.name] = ds
            elif other is not ds:
                raise RateoptError(
                    f"two different datasets are both named {ds.name!r}; give them "
                    "distinct names with Dataset(..., name=...)"
                )
    return datasets


def _flatten_constraints(constraints, datasets):
    """Yield ``(constraint, source_goal)`` from constraints, goals and nested lists."""
    if isinstance(constraints, (R.Constraint, Goal)):
        constraints = [constraints]
    for item in constraints:
        if isinstance(item, R.Constraint):
            yield item, None
        elif isinstance(item, Goal):
            if datasets is None:
                raise RateoptError(
                    f"goal {item!r} needs datasets to bind to: pass Problem(..., datasets=...)"
                )
            for c in item.bind(datasets):
                yield c, item
        elif isinstance(item, R.Expression):
            raise TypeError(
                f"{item} is an expression, not a constraint: compare it with <= or >= "
                "(e.g. rate <= 0.1)"
            )
        elif isinstance(item, Iterable) and not isinstance(item, (str, bytes)):
            yield from _flatten_constraints(list(item), datasets)
        else:
            raise TypeError(
                f"constraints must be Constraint objects or goals, got {type(item).__name__}"
            )


class Problem:
    """A rate-constrained learning problem, compiled once to atom tables.

    Parameters
    ----------
    objective : Expression or float, default=None
        The rate expression to minimize. Default: the error rate of the whole
        training dataset (the dataset for role ``"train"`` of ``datasets``, else
        the dataset named ``"train"`` among those the constraints use, else the
        only dataset they use). A number gives a feasibility problem.
    constraints : iterable, default=()
        :class:`~rateopt._rates.Constraint` objects, goals of
        :mod:`rateopt.goals` (bound to ``datasets``), or nested lists of them
        (e.g. the result of :func:`~rateopt._rates.equal`). Duplicate names are
        made unique by appending ``" #2"``, ``" #3"``, ...
    regularization : float, default=None
        L2 regularization strength of the model (``R(theta)``), carried for the
        training games; compilation does not use it.
    datasets : Dataset, mapping of str to Dataset, or sequence of Dataset, default=None
        What goals bind to: a mapping from role (``"train"``, ``"steering"``,
        ...) to dataset, a sequence of datasets (roles are their names), or one
        dataset (used for every role).

    Attributes
    ----------
    objective : Expression
        The objective.
    constraints : tuple of Constraint
        The constraints, in row order, under their unique names.
    datasets : mapping of str to Dataset
        The datasets the problem uses, by name.
    regularization : float or None
        As given.
    compiled : CompiledProblem
        The compiled arrays.

    Raises
    ------
    EmptySubsetError
        If a rate is measured on an empty subset or one of zero total weight.
    MissingLabelsError
        If a rate that needs labels is used on an unlabeled dataset.
    MissingBaselineError
        If a rate that needs a baseline is used on a dataset without one.
    ConstantConstraintError
        If a constraint cannot be changed by any model.
    RateoptError
        If two different datasets share a name, or no objective can be chosen.
    TypeError
        If a constraint is not a Constraint or goal.

    See Also
    --------
    CompiledProblem : The compiled arrays.

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ds = ro.Dataset(np.zeros((4, 1)), y=[0, 1, 1, 0], groups={"g": ["a", "a", "b", "b"]})
    >>> ctx = ds.context()
    >>> p = ro.Problem(constraints=[ro.true_positive_rate(ctx.subset(group="g", value="a"))
    ...                             >= ro.true_positive_rate(ctx) - 0.1])
    >>> ev = p.evaluate(np.array([1, 1, 0, 0]))
    >>> ev.objective, ev.constraints
    (0.5, {'tpr[g=a] >= tpr[all] - 0.1': -0.6})
    """

    def __init__(self, objective=None, constraints=(), *, regularization=None, datasets=None):
        if regularization is not None:
            reg = R._as_scalar(regularization)
            if reg is None or reg < 0:
                raise RateoptError(
                    f"regularization must be a non-negative number or None, got {regularization!r}"
                )
            regularization = reg
        self.regularization = regularization
        pairs = list(_flatten_constraints(constraints, datasets))
        _datasets_by_name([c.expression for c, _ in pairs])  # duplicate names fail first
        if objective is None:
            objective = R.error_rate(self._default_objective_dataset(pairs, datasets))
        else:
            obj = R._lift(objective)
            if obj is NotImplemented or isinstance(objective, R.Constraint):
                raise TypeError(
                    f"objective must be a rate expression or a number, got {type(objective).__name__}"
                )
            objective = obj
        self.objective = objective
        self._compile(objective, pairs)

    @staticmethod
    def _default_objective_dataset(pairs, datasets):
        if datasets is not None:
            try:
                return _resolve_role(datasets, "train").context()
            except RateoptError:
                pass
        used = {}
        for c, _ in pairs:
            for ds in c.expression.datasets:
                used.setdefault(id(ds), ds)
        named = [d for d in used.values() if d.name == "train"]
        if len(named) == 1:
            return named[0].context()
        if len(used) == 1:
            return next(iter(used.values())).context()
        raise RateoptError(
            "cannot choose the default objective (training error rate): "
            + ("no dataset is used" if not used else "several datasets are used and none is "
               "named 'train'")
            + "; pass objective=... explicitly"
        )

    # -- compilation -------------------------------------------------------------------

    def _compile(self, objective, pairs):
        # unique names
        used: set = set()
        constraints, originals, sources, names = [], [], [], []
        for c, src in pairs:
            base = name = c.name
            k = 1
            while name in used:
                k += 1
                name = f"{base} #{k}"
            used.add(name)
            constraints.append(c if name == c.name else c.named(name))
            originals.append(c)
            sources.append(src)
            names.append(name)

        # datasets, by name, in order of appearance
        datasets = _datasets_by_name([objective] + [c.expression for c in constraints])
        self.datasets = datasets
        self.constraints = tuple(constraints)

        env = _Env()
        env.where = "the objective"
        obj_form = _lower(objective, env)
        forms = []
        for c in constraints:
            env.where = f"constraint {c.name!r}"
            forms.append(_lower(c.expression, env))

        # every rate leaf, for reports
        leaf_forms: dict = {}
        for where, expr in [("the objective", objective)] + [
            (f"constraint {c.name!r}", c.expression) for c in constraints
        ]:
            env.where = where
            for leaf in expr.leaves():
                if leaf.name not in leaf_forms:
                    leaf_forms[leaf.name] = _lower(leaf, env)

        # atoms: merge identical memberships per dataset, number dataset by dataset
        ctx_order: dict = {}
        for f in [obj_form, *forms, *leaf_forms.values()]:
            for ctx in f.terms:
                ctx_order.setdefault(ctx, None)
        per_ds: dict = {name: [] for name in datasets}  # name -> list of (mask, [ctx...])
        key_to_local: dict = {name: {} for name in datasets}
        ctx_local: dict = {}
        for ctx in ctx_order:
            dsname = ctx.dataset.name
            m = env.mask(ctx)
            key = np.packbits(m).tobytes()
            local = key_to_local[dsname].get(key)
            if local is None:
                local = len(per_ds[dsname])
                key_to_local[dsname][key] = local
                per_ds[dsname].append((m, [ctx]))
            else:
                per_ds[dsname][local][1].append(ctx)
            ctx_local[ctx] = (dsname, local)

        ds_names = tuple(datasets)
        offsets, off = {}, 0
        for name in ds_names:
            offsets[name] = off
            off += len(per_ds[name])
        n_atoms = off
        atoms, tables = [], {}
        atom_dataset = np.empty(n_atoms, dtype=np.int64)
        atom_local = np.empty(n_atoms, dtype=np.int64)
        for d, name in enumerate(ds_names):
            ds = datasets[name]
            entries = per_ds[name]
            for local, (m, ctxs) in enumerate(entries):
                gid = offsets[name] + local
                atom_dataset[gid], atom_local[gid] = d, local
                first = ctxs[0]
                aliases = tuple(dict.fromkeys(c.label for c in ctxs[1:] if c.label != first.label))
                atoms.append(
                    AtomInfo(
                        index=gid,
                        dataset=name,
                        local_index=local,
                        name=f"ppr[{first.label}]",
                        subset=first.label,
                        aliases=aliases,
                        n_members=int(np.count_nonzero(m)),
                        total_weight=env.weight(first).value(),
                    )
                )
            tables[name] = _membership_table(ds, [e[0] for e in entries], offsets[name])
        gid_of = {ctx: offsets[d] + loc for ctx, (d, loc) in ctx_local.items()}

        def row(form: _Affine):
            coef = np.zeros(n_atoms)
            mass = np.zeros(n_atoms)
            for ctx, v in form.terms.items():
                g = gid_of[ctx]
                coef[g] += v
                mass[g] += form.mass[ctx]
            coef[np.abs(coef) <= _CANCEL_RTOL * mass] = 0.0
            return coef

        C = np.zeros((len(forms), n_atoms))
        kappa = np.zeros(len(forms))
        for i, (c, f) in enumerate(zip(constraints, forms)):
            C[i] = row(f)
            kappa[i] = -f.const
            if not np.any(C[i]):
                subsets = sorted({ctx.label for ctx in f.terms}) or ["(none)"]
                raise ConstantConstraintError(
                    f"constraint {c.name!r} is constant: it does not depend on the model's "
                    f"decisions (its value is always {f.const:.6g}; rates on subsets "
                    f"{', '.join(repr(s) for s in subsets)} cancel out or none is used), "
                    "so no model can change whether it holds"
                )
        obj_coef = row(obj_form)

        # reported rates: every leaf, then every atom (names made unique)
        rate_names, rate_rows, rate_consts = [], [], []
        seen: dict = {}

        def add_rate(name, coef, const):
            k = seen.get(name)
            if k is not None:
                if np.array_equal(rate_rows[k], coef) and rate_consts[k] == const:
                    return
                j = 2
                while f"{name} #{j}" in seen:
                    j += 1
                name = f"{name} #{j}"
            seen[name] = len(rate_names)
            rate_names.append(name)
            rate_rows.append(coef)
            rate_consts.append(const)

        for name, f in leaf_forms.items():
            add_rate(name, row(f), f.const)
        for a in atoms:
            e = np.zeros(n_atoms)
            e[a.index] = 1.0
            add_rate(a.name, e, 0.0)

        inverse = InverseData(
            constraints=tuple(constraints),
            originals=tuple(originals),
            sources=tuple(sources),
            names=tuple(names),
        )
        self.compiled = CompiledProblem(
            datasets=ds_names,
            atoms=tuple(atoms),
            tables=tables,
            atom_dataset=_frozen(atom_dataset),
            atom_local=_frozen(atom_local),
            C=_frozen(C),
            kappa=_frozen(kappa),
            objective_coef=_frozen(obj_coef),
            objective_constant=float(obj_form.const),
            constraint_names=tuple(names),
            rate_names=tuple(rate_names),
            rate_coef=_frozen(np.array(rate_rows).reshape(len(rate_rows), n_atoms)),
            rate_constant=_frozen(np.array(rate_consts, dtype=np.float64)),
            inverse_data=inverse,
        )

    # -- properties ---------------------------------------------------------------------

    @property
    def constraint_names(self) -> tuple:
        """The unique constraint names, in row order."""
        return self.compiled.constraint_names

    @property
    def n_constraints(self) -> int:
        """Number of constraints."""
        return self.compiled.n_constraints

    @property
    def n_atoms(self) -> int:
        """Number of atoms."""
        return self.compiled.n_atoms

    # -- evaluation -----------------------------------------------------------------------

    def evaluate(self, predictions, *, kind: str = "auto") -> Evaluation:
        """Objective, constraint values and rates of any predictor (0-1 definitions).

        Parameters
        ----------
        predictions : array-like or mapping
            Per dataset (a mapping from dataset name, or from the
            :class:`~rateopt._data.Dataset` object, to an array of shape
            ``(n_samples,)``), the predictor's output on every example; a single
            array when the problem uses one dataset.
        kind : {"auto", "decisions", "scores", "probabilities", "labels"}, default="auto"
            How to read the arrays. ``"decisions"``: booleans or 0/1 values.
            ``"scores"``: real values, positive iff ``score >= 0``.
            ``"probabilities"``: expected decisions in [0, 1] (e.g. of a
            stochastic mixture); rates are then expected rates. ``"labels"``:
            values among the dataset's label values (a classifier's ``predict``
            output, e.g. ``"yes"``/``"no"``), positive iff equal to the positive
            label. ``"auto"``: booleans and arrays whose values are all 0 or 1
            are decisions; arrays with values outside [0, 1] are scores; an
            array whose values all lie in [0, 1] but not all in {0, 1} is
            ambiguous (scores or probabilities?) and raises; non-numeric arrays
            are read as labels. When an array could also be read as labels
            (all its values are label values of a labeled dataset, e.g.
            ``{1, 2}``) and that reading differs, ``"auto"`` raises. ``"auto"``
            never infers probabilities: pass ``kind`` then.

        Returns
        -------
        Evaluation
            ``objective``, ``constraints`` (``g_i`` by name, ``<= 0`` holds),
            ``violations``, ``max_violation``, ``rates`` and ``atom_rates``.

        Raises
        ------
        RateoptError
            If a dataset's predictions are missing or have the wrong length, an
            unknown dataset is given, values are not finite, or ``kind="auto"``
            cannot tell scores from probabilities.
        """
        values = self._prediction_values(predictions, kind)
        return self.evaluate_atom_rates(self.compiled.atom_rates(values))

    def evaluate_atom_rates(self, atom_rates) -> Evaluation:
        """Evaluation from the atom values ``p+(S_a)`` (e.g. from the core's kernel).

        Parameters
        ----------
        atom_rates : array-like of shape (n_atoms,)
            The atom values, in the global atom order.

        Returns
        -------
        Evaluation
            As :meth:`evaluate`.

        Raises
        ------
        RateoptError
            If the shape is wrong.
        """
        cp = self.compiled
        p = np.asarray(atom_rates, dtype=np.float64)
        if p.shape != (cp.n_atoms,):
            raise RateoptError(f"atom_rates must have shape ({cp.n_atoms},), got {p.shape}")
        g = cp.C @ p - cp.kappa
        viol = np.maximum(g, 0.0)
        rates = cp.rate_coef @ p + cp.rate_constant
        return Evaluation(
            objective=float(cp.objective_coef @ p + cp.objective_constant),
            constraints=dict(zip(cp.constraint_names, g.tolist())),
            violations=dict(zip(cp.constraint_names, viol.tolist())),
            max_violation=float(viol.max()) if viol.size else 0.0,
            rates=dict(zip(cp.rate_names, rates.tolist())),
            atom_rates=_frozen(p.copy()),
        )

    def _prediction_values(self, predictions, kind) -> dict:
        if kind not in ("auto", "decisions", "scores", "probabilities", "labels"):
            raise RateoptError(
                "kind must be 'auto', 'decisions', 'scores', 'probabilities' or 'labels', "
                f"got {kind!r}"
            )
        names = self.compiled.datasets
        if isinstance(predictions, Mapping):
            given = {}
            for k, v in predictions.items():
                key = k.name if isinstance(k, Dataset) else k
                if key not in self.datasets or (
                    isinstance(k, Dataset) and self.datasets[key] is not k
                ):
                    raise RateoptError(
                        f"predictions given for dataset {key!r}, which the problem does not "
                        f"use; its datasets: {list(names)!r}"
                    )
                given[key] = v
        else:
            if len(names) != 1:
                raise RateoptError(
                    f"the problem uses {len(names)} datasets {list(names)!r}: pass predictions "
                    "as a dict {dataset name: array}"
                )
            given = {names[0]: predictions}
        out = {}
        for name in names:
            if name not in given:
                raise RateoptError(f"no predictions given for dataset {name!r}")
            out[name] = _decision_values(given[name], kind, self.datasets[name])
        return out

    def __getstate__(self):
        # caches that other modules attach to a problem (``_rateopt_*``, e.g. the
        # training games' validated feature matrices) are rebuilt, not pickled
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_rateopt_")}

    def __repr__(self) -> str:
        return (
            f"Problem(objective={self.objective}, n_constraints={self.n_constraints}, "
            f"n_atoms={self.n_atoms}, datasets={list(self.datasets)!r})"
        )


def _decision_values(pred, kind: str, ds: Dataset) -> np.ndarray:
    """Per-example decision values in [0, 1] (see :meth:`Problem.evaluate` for the rules)."""
    name, n_samples = ds.name, ds.n_samples
    a = np.asarray(pred)
    if a.ndim != 1 or a.shape[0] != n_samples:
        raise RateoptError(
            f"predictions for dataset {name!r} must have shape ({n_samples},), got {a.shape}"
        )
    by_label = None  # the reading as a classifier's predict output in the label values
    if kind in ("auto", "labels") and ds.classes is not None:
        known = np.array([c for c in ds.classes if c is not None], dtype=object)
        if bool(np.all(np.isin(a, known))):
            by_label = np.asarray(a == ds.classes[1], dtype=np.float64)
    if kind == "labels":
        if by_label is None:
            raise RateoptError(
                f"kind='labels' but the predictions for dataset {name!r} are not all among its "
                f"label values {ds.classes!r}"
                if ds.classes is not None
                else f"kind='labels' but dataset {name!r} has no labels"
            )
        return by_label
    if a.dtype.kind not in "biuf":
        if by_label is not None:
            return by_label
        raise RateoptError(
            f"predictions for dataset {name!r} must be numeric or boolean (or the dataset's "
            f"label values), got dtype {a.dtype}"
        )
    try:
        values = _numeric_decision_values(a, kind, name)
    except RateoptError:
        if by_label is None:
            raise
        values = None
    if by_label is not None and (values is None or not np.array_equal(values, by_label)):
        raise RateoptError(
            f"predictions for dataset {name!r} are ambiguous: read as label values "
            f"{ds.classes!r} (positive label {ds.classes[1]!r}) they differ from their reading "
            "as 0/1 decisions or scores; pass kind='labels', 'decisions' or 'scores'"
        )
    return values


def _numeric_decision_values(a: np.ndarray, kind: str, name: str) -> np.ndarray:
    if a.dtype.kind == "b":
        if kind in ("auto", "decisions", "probabilities"):
            return a.astype(np.float64)
        raise RateoptError(f"predictions for dataset {name!r} are boolean but kind={kind!r}")
    v = a.astype(np.float64)
    if not np.all(np.isfinite(v)):
        raise RateoptError(f"predictions for dataset {name!r} contain NaN or inf")
    if kind == "scores":
        return (v >= 0).astype(np.float64)
    is01 = bool(np.all((v == 0) | (v == 1)))
    if kind == "decisions":
        if not is01:
            raise RateoptError(
                f"kind='decisions' but predictions for dataset {name!r} have values other than 0/1"
            )
        return v
    in01 = bool(np.all((v >= 0) & (v <= 1)))
    if kind == "probabilities":
        if not in01:
            raise RateoptError(
                f"kind='probabilities' but predictions for dataset {name!r} are outside [0, 1]"
            )
        return v
    if is01:
        return v
    if in01:
        raise RateoptError(
            f"predictions for dataset {name!r} all lie in [0, 1] but are not all 0/1: pass "
            "kind='probabilities' (expected decisions) or kind='scores' (positive iff >= 0)"
        )
    return (v >= 0).astype(np.float64)


def _membership_table(ds: Dataset, masks: list, offset: int) -> MembershipTable:
    """Build the CSR membership table of one dataset (vectorized; loops over atoms only)."""
    n = ds.n_samples
    k = len(masks)
    w = ds.weights
    rows_parts, cols_parts, val_parts = [], [], []
    for a, m in enumerate(masks):
        idx = np.flatnonzero(m)
        rows_parts.append(idx)
        cols_parts.append(np.full(idx.size, a, dtype=np.int32))
        wa = _scaled_by_max(w[idx])[0]  # exact power-of-two rescaling: no overflow in the sum
        val_parts.append(wa / np.sum(wa))
    if k:
        rows = np.concatenate(rows_parts)
        cols = np.concatenate(cols_parts)
        vals = np.concatenate(val_parts)
    else:
        rows = np.empty(0, dtype=np.int64)
        cols = np.empty(0, dtype=np.int32)
        vals = np.empty(0, dtype=np.float64)
    order = np.argsort(rows, kind="stable")  # keeps ascending atom ids within a row
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return MembershipTable(
        dataset=ds.name,
        n_samples=n,
        n_atoms=k,
        indptr=_frozen(indptr),
        indices=_frozen(np.ascontiguousarray(cols[order], dtype=np.int32)),
        weights=_frozen(np.ascontiguousarray(vals[order], dtype=np.float64)),
        atom_ids=_frozen(np.arange(offset, offset + k, dtype=np.int64)),
        offset=offset,
    )

