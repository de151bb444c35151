"""High-confidence bounds on goals' population values from a held-out dataset.

Every rate leaf a goal is built from (a true positive rate, a positive
prediction rate, an error rate, a joint proportion, a churn rate, ...) is the
mean of an indicator over a subset of the held-out rows: the rows of its
context, restricted to positive labels for ``tpr``/``fnr`` and to negative
labels for ``fpr``/``tnr``. On independent rows from the population, the
leaf's count is binomial given the subset's size, so an exact Clopper-Pearson
interval covers the population rate with the stated probability. With
unequal weights, or expected decisions in [0, 1] rather than 0/1 decisions,
Hoeffding's inequality for a weighted mean of bounded values is used instead.

A goal ``g = sum_l c_l r_l + c_0 <= 0`` (affine in its leaves with constant
coefficients) gets the upper bound ``sum_l c_l (hi_l if c_l > 0 else lo_l) + c_0``.
Every leaf's two-sided interval is taken at level ``alpha / K`` for the ``K``
distinct rates of all goals (and of the objective) that get an interval: by the
union bound, all intervals hold at once with probability at least ``1 - alpha``,
and then every goal's bound holds. A rate is counted once however many goals use
it (pairwise equalized odds on 3 groups uses 24 leaves but 6 distinct rates):
leaves are the same rate when they have the same kind and subset (:func:`_rate_key`).

K-class rates (:class:`~rateopt._language._classes.ClassRate`: a class's
prediction rate, recall, false-positive rate, a confusion entry) are such means
too: ``W(S & label & yhat = k) / W(S & denominator)`` averages the indicator of
``label & yhat = k`` over the rows of ``S`` whose label meets the denominator's
condition. Their decisions are class positions (n,) (or a decision
distribution (n, K)), and the same intervals and union bound apply: one
certificate code for two and K classes.

Counts (``tp_count``, ...) and leaves that are not means over a fixed subset
(win/loss rates, loss-only churn) have no such bound: their goals are reported
as not certifiable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._language._classes import ClassRate
from .._language._evaluation import expression_value
from .._language._expressions import Constant
from ..exceptions import RateoptError

__all__ = ["Certificate", "GoalBound", "certify_expressions", "clopper_pearson", "hoeffding"]

_MEAN_OVER_CONTEXT = frozenset({"ppr", "npr", "error", "accuracy", "tp_prop", "fp_prop", "tn_prop", "fn_prop",
                                "churn", "prevalence", "baseline_ppr", "baseline_accuracy"})
_MEAN_OVER_POSITIVES = frozenset({"tpr", "fnr"})
_MEAN_OVER_NEGATIVES = frozenset({"fpr", "tnr"})


def clopper_pearson(k, n, alpha):
    """The exact two-sided ``1 - alpha`` binomial interval (Clopper–Pearson) for ``k`` successes in ``n`` trials.

    Parameters
    ----------
    k : float
        The successes: a count, or a weighted rate times its effective number of trials (clipped to [0, n]).
    n : float
        The (effective) number of trials.
    alpha : float
        In (0, 1).

    Returns
    -------
    (float, float)
        ``(lo, hi)``: ``P(p in [lo, hi]) >= 1 - alpha`` for every ``p`` (beta quantiles; ``lo`` is 0 at no
        success, ``hi`` 1 at all); ``(nan, nan)`` when ``n`` is not positive or ``k`` is not finite.
    """
    from scipy.special import betaincinv  # lazy: scipy.special takes ~0.4 s to import, see tests/test_layers.py

    if not n > 0 or not np.isfinite(k):
        return np.nan, np.nan
    x = min(max(k, 0.0), n)
    tiny = 1e-12 * max(n, 1.0)
    lower = 0.0 if x <= tiny else float(betaincinv(x, n - x + 1.0, alpha / 2))
    upper = 1.0 if x >= n - tiny else float(betaincinv(x + 1.0, n - x, 1.0 - alpha / 2))
    return lower, upper


def hoeffding(values, weights, alpha):
    """A two-sided ``1 - alpha`` interval for the mean of a weighted average of values in [0, 1].

    Parameters
    ----------
    values : ndarray of shape (n,)
        Independent values in [0, 1].
    weights : ndarray of shape (n,)
        Fixed non-negative weights (not all zero).
    alpha : float

    Returns
    -------
    (float, float)
        ``mean +- sqrt(log(2 / alpha) * sum(w^2) / (2 sum(w)^2))``, clipped to [0, 1].
    """
    w = np.asarray(weights, dtype=np.float64)
    total = w.sum()
    mean = float(w @ np.asarray(values, dtype=np.float64) / total)
    half = math.sqrt(math.log(2.0 / alpha) * float(w @ w) / (2.0 * total * total))
    return max(0.0, mean - half), min(1.0, mean + half)


@dataclass(frozen=True)
class GoalBound:
    """One goal's held-out value and its high-confidence bound.

    Parameters
    ----------
    name : str
        The constraint's name.
    value : float
        ``g`` on the held-out data (``<= 0`` holds).
    upper : float
        With the certificate's confidence, the population's ``g`` is at most
        this (NaN: not certifiable).
    certified : bool or None
        ``upper <= 0``; None when the goal is not certifiable.
    """

    name: str
    value: float
    upper: float
    certified: object


@dataclass(frozen=True)
class Certificate:
    """High-confidence bounds on every goal's population value (and the objective's).

    Parameters
    ----------
    confidence : float
        All bounds hold together with at least this probability.
    goals : tuple of GoalBound
        One entry per constraint.
    objective : float
        The objective on the held-out data.
    objective_interval : (float, float)
        Its interval (NaNs when the objective is not an affine expression of rates).
    n_samples : int
        Held-out rows.
    method : str
        ``"clopper-pearson"`` or ``"hoeffding"`` (the weaker one used by any leaf).
    """

    confidence: float
    goals: tuple
    objective: float
    objective_interval: tuple
    n_samples: int
    method: str

    @property
    def certified(self) -> bool:
        """Whether every goal's bound holds (``upper <= 0`` for all)."""
        return all(g.certified is True for g in self.goals)

    def to_dict(self) -> dict:
        """The certificate as plain JSON-able data.

        Returns
        -------
        dict
        """
        return {"confidence": self.confidence, "certified": self.certified, "n_samples": self.n_samples,
                "method": self.method, "objective": self.objective,
                "objective_interval": list(self.objective_interval),
                "goals": [{"name": g.name, "value": g.value, "upper": g.upper, "certified": g.certified}
                          for g in self.goals]}

    def __str__(self) -> str:
        lines = [f"certificate at confidence {self.confidence:g} from {self.n_samples} held-out rows "
                 f"({self.method}): {'all goals certified' if self.certified else 'NOT all goals certified'}"]
        width = max([len(g.name) for g in self.goals] + [4])
        for g in self.goals:
            mark = "n/a" if g.certified is None else ("holds" if g.certified else "NOT certified")
            lines.append(f"  {g.name:<{width}}  g={g.value:+.5f}  upper bound {g.upper:+.5f}  {mark}")
        lo, hi = self.objective_interval
        lines.append(f"  objective {self.objective:.5f}  interval [{lo:.5f}, {hi:.5f}]")
        return "\n".join(lines)


def _rate_key(leaf):
    """What makes two leaf objects the same population rate: its kind and the subset it averages over.

    Goals build a fresh leaf object for every use (pairwise parity builds
    ``tpr(g_j)`` once per pair), so leaves are compared by this key, not by
    identity: a rate used by several goals gets one interval and is counted
    once in the union bound. A K-class rate is its class conditions on its
    subset (its display name plays no part).
    """
    if isinstance(leaf, ClassRate):
        return (ClassRate, leaf.context, leaf.predicted, leaf.label, leaf.denominator)
    return (type(leaf), tuple(sorted((k, v) for k, v in leaf._state().items() if k != "args")))


def _affine_terms(expression):
    """``({rate key: (leaf, coefficient)}, constant)`` of an affine rate expression.

    Uses of one rate (by :func:`_rate_key`) are merged into one term.
    """
    coefs, const = {}, 0.0
    for c, e in expression._terms():
        if isinstance(e, Constant):
            const += c * e.value
        else:
            key = _rate_key(e)
            leaf, total = coefs.get(key, (e, 0.0))
            coefs[key] = (leaf, total + c)
    return coefs, const


def _leaf_rows(leaf):
    """The mask of the rows a leaf averages over, or None when it is not such a mean."""
    short = getattr(leaf, "short_name", None)
    ctx = getattr(leaf, "context", None)
    if ctx is None or getattr(ctx, "threshold", None) is not None:
        return None
    mask = np.asarray(ctx.mask(), dtype=bool)
    if isinstance(leaf, ClassRate):  # the rows of S whose label meets the denominator's condition
        return mask & leaf.label_mask("denominator")[ctx.dataset.label_index]
    if short in _MEAN_OVER_CONTEXT:
        return mask
    if short in _MEAN_OVER_POSITIVES:
        return mask & (ctx.dataset.y == 1)
    if short in _MEAN_OVER_NEGATIVES:
        return mask & (ctx.dataset.y == 0)
    return None


def _has_interval(leaf):
    """Whether a leaf gets an interval: a mean over a fixed, non-empty subset of the held-out rows."""
    rows = _leaf_rows(leaf)
    return rows is not None and bool(rows.any())


def _leaf_interval(leaf, decisions, alpha):
    """``(lo, hi, method)`` for one leaf's population value, or None when it has no bound."""
    rows = _leaf_rows(leaf)
    if rows is None or not rows.any():
        return None
    ds = leaf.context.dataset
    d = decisions[ds.name]
    value = _value(leaf, decisions)
    w = ds.weights[rows]
    if isinstance(leaf, ClassRate):  # class positions (0/1 indicators) or a decision distribution
        binary = bool(np.issubdtype(np.asarray(d).dtype, np.integer) and np.asarray(d).ndim == 1)
    else:
        binary = bool(np.all((d == 0) | (d == 1)))
    if binary and np.all(w == w[0]):
        # value = k / n exactly up to round-off: the leaf's indicator count
        n = int(rows.sum())
        k = int(round(value * n))
        lo, hi = clopper_pearson(k, n, alpha)
        return lo, hi, "clopper-pearson"
    # weighted or expected decisions: Hoeffding on the leaf's per-row indicator values
    per_row = _per_row_values(leaf, d, rows)
    lo, hi = hoeffding(per_row, w, alpha)
    return lo, hi, "hoeffding"


def _value(expression, decisions):
    """An expression's value for decisions given per dataset name (only its own datasets are passed on)."""
    if any(isinstance(leaf, ClassRate) for leaf in expression.leaves()):
        return _class_value(expression, decisions)
    names = {ds.name for ds in expression.datasets}
    return float(expression_value(expression, {n: decisions[n] for n in names}, kind="probabilities"))


def _class_value(expression, decisions):
    """An affine expression of K-class rates: each rate the weighted mean of its per-row values."""
    coefs, const = _affine_terms(expression)
    total = const
    for leaf, c in coefs.values():
        if not isinstance(leaf, ClassRate):
            raise RateoptError(f"{leaf} is not a K-class rate: a K-class certificate takes K-class rates only")
        rows = _leaf_rows(leaf)
        w = leaf.context.dataset.weights[rows]
        total += c * float(np.dot(w, _per_row_values(leaf, decisions[leaf.context.dataset.name], rows)) / w.sum())
    return float(total)


def _per_row_values(leaf, d, rows):
    """The values in [0, 1] a leaf averages over its rows (decision values, or their complements)."""
    short = leaf.short_name
    ds = leaf.context.dataset
    if isinstance(leaf, ClassRate):  # [label condition] * P(yhat = k): class positions or a distribution
        d = np.asarray(d)
        chosen = (d[rows] == leaf.predicted).astype(np.float64) if d.ndim == 1 else d[rows, leaf.predicted]
        return leaf.label_mask("label")[ds.label_index[rows]] * chosen
    y = ds.y[rows]
    dv = d[rows]
    if short in ("ppr", "tpr", "fpr"):
        return dv
    if short in ("npr", "fnr", "tnr"):
        return 1.0 - dv
    if short == "error":
        return np.where(y == 1, 1.0 - dv, dv)
    if short == "accuracy":
        return np.where(y == 1, dv, 1.0 - dv)
    if short == "tp_prop":
        return np.where(y == 1, dv, 0.0)
    if short == "fp_prop":
        return np.where(y == 0, dv, 0.0)
    if short == "tn_prop":
        return np.where(y == 0, 1.0 - dv, 0.0)
    if short == "fn_prop":
        return np.where(y == 1, 1.0 - dv, 0.0)
    if short == "churn":
        b = np.asarray(ds.baseline, dtype=np.float64)[rows] >= 0.5
        return np.where(b, 1.0 - dv, dv)
    if short == "prevalence":
        return y.astype(np.float64)
    if short in ("baseline_ppr", "baseline_accuracy"):
        b = (np.asarray(ds.baseline, dtype=np.float64)[rows] >= 0.5).astype(np.float64)
        return b if short == "baseline_ppr" else (b == y).astype(np.float64)
    raise RateoptError(f"no per-row values for the rate {leaf.name!r}")  # pragma: no cover - guarded by _leaf_rows


def certify_expressions(constraints, objective, decisions, *, confidence=0.95):
    """Bounds on constraints' population values from decisions on held-out data.

    Parameters
    ----------
    constraints : sequence of Constraint
        Bound to the held-out datasets (``g <= 0`` holds).
    objective : Expression or None
        An affine objective to give an interval for (None or a metric: none).
    decisions : mapping of str to ndarray
        Per held-out dataset name, the classifier's decisions (0/1) or expected
        decisions in [0, 1] on every row; for K-class rates, class positions
        (n,) of int or a decision distribution (n, K).
    confidence : float, default=0.95
        In (0, 1): all bounds hold together with at least this probability.

    Returns
    -------
    Certificate

    Raises
    ------
    RateoptError
        If ``confidence`` is not in (0, 1).
    """
    if not (isinstance(confidence, (int, float)) and 0.0 < float(confidence) < 1.0):
        raise RateoptError(f"confidence must be a number in (0, 1), got {confidence!r}")
    alpha = 1.0 - float(confidence)
    forms = [_affine_terms(c.expression) for c in constraints]
    obj_form = None
    if objective is not None and hasattr(objective, "_terms") and not hasattr(objective, "terms"):
        obj_form = _affine_terms(objective)
    # one interval per distinct rate (not per use), and the union bound over the rates that get one
    leaves = {}
    for coefs, _ in forms + ([obj_form] if obj_form else []):
        for key, (leaf, c) in coefs.items():
            if c != 0.0:
                leaves.setdefault(key, leaf)
    bounded = [key for key, leaf in leaves.items() if _has_interval(leaf)]
    n_rates = max(len(bounded), 1)
    intervals = {key: _leaf_interval(leaves[key], decisions, alpha / n_rates) for key in bounded}
    methods = {iv[2] for iv in intervals.values()}

    def bound(form, upper=True):
        coefs, const = form
        total = const
        for key, (_, c) in coefs.items():
            if c == 0.0:
                continue
            iv = intervals.get(key)
            if iv is None:
                return float("nan")
            lo, hi, _ = iv
            total += c * (hi if (c > 0) == upper else lo)
        return float(total)

    goals = []
    for c, form in zip(constraints, forms):
        value = _value(c.expression, decisions)
        up = bound(form)
        goals.append(GoalBound(c.name, value, up, None if math.isnan(up) else bool(up <= 0.0)))
    if obj_form is not None:
        obj_value = _value(objective, decisions)
        interval = (bound(obj_form, upper=False), bound(obj_form))
    else:
        obj_value, interval = float("nan"), (float("nan"), float("nan"))
    n = int(sum(np.asarray(v).shape[0] for v in decisions.values()))
    method = "hoeffding" if "hoeffding" in methods else "clopper-pearson"
    return Certificate(float(confidence), tuple(goals), obj_value, interval, n, method)
