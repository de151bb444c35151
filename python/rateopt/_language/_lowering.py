"""Lowering of rate expressions to affine forms of atoms.

Every rate of :mod:`rateopt._language._rates` is an affine function of *atoms*
``p+(S)``, the weighted positive-prediction rates of subsets of a dataset. A
registry of small rules ``{node type: lower_fn}`` (:data:`LOWERING_RULES`)
turns an expression into an :class:`Affine` form ``const + sum_ctx coef *
p+(ctx)``; :class:`Env` gives the rules cached subset masks and weights and
the checks (empty subsets, missing labels or baselines) that name where the
rate is used. A K-class rate leaf (:class:`~rateopt._language._classes.ClassRate`)
lowers through its environment: the two-class :class:`Env` refuses it, the
K-class compiler's environment makes it one term whose key is the leaf's
statistic (its subset, predicted class and label conditions). Compilation (:mod:`rateopt._compiler._compile`) merges the forms' subsets
into atoms.
"""

from __future__ import annotations

import math

import numpy as np

from rateopt._language import _rates as R
from rateopt._language._classes import ClassRate
from rateopt._language._data import Context
from rateopt.exceptions import EmptySubsetError, MissingBaselineError, MissingLabelsError, RateoptError

__all__ = ["LOWERING_RULES", "CANCEL_RTOL", "Affine", "WeightSum", "Env", "lower", "scaled_by_max"]

#: Relative size under which a merged coefficient is treated as an exact zero
#: (cancellation such as ``0.3 p - 0.1 p - 0.2 p``).
CANCEL_RTOL = 1e-12


# --------------------------------------------------------------------------- affine forms


class Affine:
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

    def __add__(self, other: Affine) -> Affine:
        out = Affine(self.const + other.const, self.terms, self.mass)
        for k, v in other.terms.items():
            out.terms[k] = out.terms.get(k, 0.0) + v
            out.mass[k] = out.mass.get(k, 0.0) + other.mass[k]
        return out

    def __mul__(self, c: float) -> Affine:
        return Affine(
            self.const * c,
            {k: v * c for k, v in self.terms.items()},
            {k: m * abs(c) for k, m in self.mass.items()},
        )

    def complement(self) -> Affine:
        """``1 - self``."""
        return Affine(1.0) + self * -1.0


def scaled_by_max(w: np.ndarray):
    """``(w * 2**-e, e)`` with ``2**e`` just above ``max(w)``: an exact rescaling
    (a power of two) that puts the largest weight in [0.5, 1)."""
    top = float(np.max(w)) if w.size else 0.0
    if not top > 0.0:
        return np.zeros(w.shape), 0
    e = int(np.frexp(top)[1])
    return np.ldexp(w, -e), e


class WeightSum:
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
    def of(cls, w: np.ndarray) -> WeightSum:
        scaled, e = scaled_by_max(w)
        return cls(float(np.sum(scaled)), e)

    def __bool__(self) -> bool:
        return self.mant > 0.0

    def __add__(self, other: WeightSum) -> WeightSum:
        if not other:
            return self
        if not self:
            return other
        e = max(self.exp, other.exp)
        return WeightSum(math.ldexp(self.mant, self.exp - e) + math.ldexp(other.mant, other.exp - e), e)

    def __truediv__(self, other: WeightSum) -> float:
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


#: ``denominator`` of :meth:`Env.parts` for weighted counts (no normalization).
_COUNT = None


class Env:
    """Data access during lowering: cached masks and weights, and the checks
    that turn data problems into errors naming the constraint and the subset."""

    def __init__(self):
        self._members: dict = {}
        self._weights: dict = {}
        self.where = "the objective"

    def members(self, ctx: Context) -> np.ndarray:
        """The subset's rows, ascending (int64, read-only; cached: memory linear in the members, so
        many small subsets, e.g. 10^5 one-row groups, cost what their rows do)."""
        idx = self._members.get(ctx)
        if idx is None:
            idx = np.flatnonzero(ctx.mask())
            idx.flags.writeable = False
            self._members[ctx] = idx
        return idx

    def know(self, ctx: Context, rows: np.ndarray):
        """Record a subset's rows found another way (ascending, distinct), so :meth:`members` does not scan.

        Parameters
        ----------
        ctx : Context
            The subset.
        rows : ndarray of int64
            Its rows (kept read-only).
        """
        rows = np.array(rows, dtype=np.int64)
        rows.flags.writeable = False
        self._members.setdefault(ctx, rows)

    def forget_members(self):
        """Drop the cached rows of every subset (their memory: 8 bytes a member), keeping the weight sums.

        For an environment that outlives its compilation (lazily lowered
        report forms): a later :meth:`members` scans its subset again.
        """
        self._members.clear()

    def mask(self, ctx: Context) -> np.ndarray:
        """The subset's membership mask (read-only; rebuilt from :meth:`members` on each call)."""
        m = np.zeros(ctx.dataset.n_samples, dtype=bool)
        m[self.members(ctx)] = True
        m.flags.writeable = False
        return m

    def weight(self, ctx: Context) -> WeightSum:
        """``W(ctx)``, the sum of the subset's weights (see :class:`WeightSum`)."""
        w = self._weights.get(ctx)
        if w is None:
            idx = self.members(ctx)
            weights = ctx.dataset.weights
            if idx.size and weights.ndim == 1 and weights.strides[0] == 0 and float(weights[0]) == 1.0:
                # no weights (a broadcast 1.0): WeightSum.of's halves sum to exactly 0.5 per member
                w = WeightSum(0.5 * idx.size, 1)
            else:
                w = WeightSum.of(weights[idx]) if idx.size else WeightSum()
            self._weights[ctx] = w
        return w

    def nonempty(self, ctx: Context, node) -> WeightSum:
        """Return ``W(ctx)``, raising if the subset is empty or has zero weight."""
        if not self.members(ctx).size:
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

    def atom(self, ctx: Context, node) -> Affine:
        self.nonempty(ctx, node)
        return Affine(0.0, {ctx: 1.0})

    def class_rate(self, node) -> Affine:
        """The form of a K-class rate leaf: an error here, where the statistics are two-class atoms.

        The K-class compiler's environment (:mod:`rateopt._compiler._confusion`)
        returns the leaf as one term of its statistics instead.
        """
        raise RateoptError(
            f"{self.where}: {node} is a K-class rate; K-class rates are compiled by a problem on a ClassDataset "
            "(rateopt.Problem(..., datasets=ClassDataset(...))), not mixed with two-class rates")

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

    def parts(self, node, parts, denominator) -> Affine:
        """``sum_k W(S_k) q_k / denominator`` with ``q_k = p+(S_k)`` (sign +1) or
        ``1 - p+(S_k)`` (sign -1); ``denominator`` is a weight sum, or
        ``_COUNT`` for weighted counts (no denominator). Parts of zero weight
        contribute exactly 0 and are dropped (they have no atom)."""
        out = Affine()
        for sub, sign in parts:
            w = self.weight(sub)
            if not w:
                continue
            a = self.atom(sub, node)
            out = out + (a if sign > 0 else a.complement()) * self.ratio(w, denominator, node, sub)
        return out

    def ratio(self, w: WeightSum, denominator, node, sub) -> float:
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


@_rule(ClassRate)
def _class_rate(node, args, env):
    return env.class_rate(node)


def lower(node, env: Env) -> Affine:
    """The affine form of an expression, by the rules of :data:`LOWERING_RULES`.

    Parameters
    ----------
    node : Expression
        The expression (its arguments are lowered first).
    env : Env
        The data access and the checks; ``env.where`` names the expression's
        place (objective or constraint) in error messages.

    Returns
    -------
    Affine
        ``const + sum_ctx coef * p+(ctx)``.

    Raises
    ------
    TypeError
        If a node type has no rule (an internal error).
    """
    args = tuple(lower(a, env) for a in node.args)
    fn = LOWERING_RULES.get(type(node))
    if fn is None:  # an internal error: every node type must have a rule
        raise TypeError(f"no lowering rule for expression node type {type(node).__name__}")
    return fn(node, args, env)


@_rule(R.Constant)
def _lower_constant(node, args, env):
    return Affine(node.value)


@_rule(R.Sum)
def _lower_sum(node, args, env):
    out = Affine()
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


def _labeled_atom(node, env, label: int) -> Affine:
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


def _label_parts(node, env, which: str, per_weight: bool) -> Affine:
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


def _baseline_label_parts(node, env, which: str, per_weight: bool, den=False) -> Affine:
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
    return Affine(env.weight(node.context.positive()) / w)


@_rule(R.BaselinePositiveRate)
def _lower_baseline_ppr(node, args, env):
    env.need_baseline(node)
    w = env.nonempty(node.context, node)
    return Affine(env.weight(node.context.baseline_positive()) / w)


@_rule(R.BaselineAccuracy)
def _lower_baseline_accuracy(node, args, env):
    env.need_labels(node)
    env.need_baseline(node)
    ctx = node.context
    w = env.nonempty(ctx, node)
    right = env.weight(ctx.baseline_positive().positive()) + env.weight(
        ctx.baseline_negative().negative()
    )
    return Affine(right / w)
