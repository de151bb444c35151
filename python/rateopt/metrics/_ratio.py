"""Ratio metrics: sums of ratios of affine rate expressions (Narasimhan et al., 2019, P3 / Algorithm 3).

The F-measure, precision, their differences between groups (F-measure parity,
predictive parity) and the win-loss ratio: :class:`RatioMetric` and its
constructors. A bound on a single ratio is rewritten to a linear constraint.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._language import _rates as R
from .._language._expressions import as_scalar, lift
from ..exceptions import EmptySubsetError, RateoptError
from ._base import Metric, as_context, check_reachable
from ._constraint import MetricConstraint, finite_bound

__all__ = ["RatioMetric", "f_measure", "f_measure_parity", "precision", "predictive_parity", "ratio",
           "win_loss_ratio"]


class RatioMetric(Metric):
    """A sum of ratios of affine rate expressions plus an affine term (Narasimhan et al., 2019, P3 / Algorithm 3).

    ``psi = sum_m c_m N_m / D_m + A`` with ``N_m``, ``D_m`` and ``A`` affine
    :class:`~rateopt.Expression` s (a term whose denominator is 0 counts as 0,
    as scikit-learn's ``zero_division=0``). Its
    coordinates are ``(N_1, D_1, ..., N_M, D_M[, A])``. Unlike the convex
    metrics it supports ``+``, ``-``, scalar ``*`` (with other ratio metrics,
    expressions and numbers) and both ``<=`` and ``>=``: differences of ratios
    (F-measure parity, predictive parity) need no rewriting. Trained by the
    three-player game's ratio players (slack pairs ``(a_m, b_m)`` for
    ``N_m <= a_m`` / ``b_m <= D_m`` or the reverse, by the sign of ``c_m``).

    Parameters
    ----------
    name : str
        Shown in reports and constraint names.
    terms : sequence of (float, Expression, Expression)
        ``(c_m, N_m, D_m)``.
    affine : Expression or None, default=None
        The affine term ``A``.
    """

    kind = "ratio"

    def __init__(self, name, terms, affine=None):
        self.terms = tuple((float(c), N, D) for c, N, D in terms)
        self.affine = affine
        coords = [e for _, N, D in self.terms for e in (N, D)] + ([affine] if affine is not None else [])
        self.name = name
        self.rates = tuple(coords)
        self.signs = np.zeros(len(coords))
        self.target = None
        self.value_range = (-math.inf, math.inf)  # known for the F-measure, precision and their sums

    @classmethod
    def from_params(cls, params):
        coefs = params.get("coefficients")
        if (not isinstance(coefs, list) or not all(isinstance(c, (int, float)) and math.isfinite(c) for c in coefs)
                or not isinstance(params.get("affine"), bool)):
            raise ValueError(f"a ratio metric needs finite coefficients and an affine flag, got {params!r}")
        return cls.detached(str(params.get("name")), coefs, params["affine"])

    @property
    def n_rates(self):
        return len(self.rates)

    def value(self, z):
        z = self._vector(z, "z")
        M = len(self.terms)
        # A ratio with a zero denominator (no predicted positives for a precision)
        # counts as 0, as scikit-learn's zero_division=0.
        out = sum(c * z[2 * m] / z[2 * m + 1] if z[2 * m + 1] != 0 else 0.0
                  for m, (c, _, _) in enumerate(self.terms))
        return float(out + (z[-1] if self.affine is not None else 0.0)) if M or self.affine is not None else 0.0

    def gradient(self, z):
        z = self._vector(z, "z")
        g = np.zeros_like(z)
        for m, (c, _, _) in enumerate(self.terms):
            n, d = z[2 * m], max(z[2 * m + 1], 1e-300)
            g[2 * m], g[2 * m + 1] = c / d, -c * n / (d * d)
        if self.affine is not None:
            g[-1] = 1.0
        return g

    def best_response(self, lam):
        raise TypeError("a ratio metric has no closed-form best response: its slacks take gradient steps")

    def params(self):
        return {"name": self.name, "kind": "ratio", "coefficients": [c for c, _, _ in self.terms],
                "affine": self.affine is not None}

    @classmethod
    def detached(cls, name, coefficients, affine):
        """The ratio sum ``psi`` without its rate expressions (what a saved result keeps).

        Parameters
        ----------
        name : str
            The metric's name.
        coefficients : sequence of float
            ``c_m``.
        affine : bool
            Whether the sum has an affine term (the last coordinate).

        Returns
        -------
        RatioMetric
            Values and gradients work on coordinate vectors; it cannot be compiled.
        """
        out = cls(name, [(c, None, None) for c in coefficients])
        if affine:
            out.affine = _DETACHED
            out.rates = out.rates + (None,)
            out.signs = np.zeros(len(out.rates))
        return out

    # -- algebra: sums of ratios and affine terms, scalar multiples --------------

    def _combine(self, other, sign):
        if isinstance(other, RatioMetric):
            terms = self.terms + tuple((sign * c, N, D) for c, N, D in other.terms)
            aff = _add_affine(self.affine, other.affine, sign)
            out = RatioMetric(f"({self.name} {'+' if sign > 0 else '-'} {other.name})", terms, aff)
            lo, hi = _scaled(other.value_range, sign)
            out.value_range = (self.value_range[0] + lo, self.value_range[1] + hi)
            return out
        lifted = lift(other)
        if lifted is NotImplemented or isinstance(other, Metric):
            return NotImplemented
        return RatioMetric(f"({self.name} {'+' if sign > 0 else '-'} {lifted})", self.terms,
                           _add_affine(self.affine, lifted, sign))

    def __add__(self, other):
        return self._combine(other, 1.0)

    def __radd__(self, other):
        return self._combine(other, 1.0)

    def __sub__(self, other):
        return self._combine(other, -1.0)

    def __rsub__(self, other):
        return (-self)._combine(other, 1.0)

    def __mul__(self, k):
        k = as_scalar(k)
        if k is None:
            return NotImplemented
        aff = None if self.affine is None else self.affine * k
        out = RatioMetric(f"{k:g} * {self.name}", tuple((k * c, N, D) for c, N, D in self.terms), aff)
        out.value_range = _scaled(self.value_range, k)
        return out

    __rmul__ = __mul__

    def __neg__(self):
        out = RatioMetric(f"-{self.name}", tuple((-c, N, D) for c, N, D in self.terms),
                          None if self.affine is None else -self.affine)
        out.value_range = _scaled(self.value_range, -1.0)
        return out

    def __truediv__(self, k):
        k = as_scalar(k)
        if k is None or k == 0:
            raise TypeError("a ratio metric can only be divided by a non-zero number")
        return self * (1.0 / k)

    def __le__(self, bound):
        check_reachable(self, "<=", finite_bound(bound))
        linear = self._linear(bound, "<=")
        return linear if linear is not None else MetricConstraint(self, bound)

    def __ge__(self, bound):
        b = finite_bound(bound)
        check_reachable(self, ">=", b)
        linear = self._linear(b, ">=")
        return linear if linear is not None else MetricConstraint(-self, -b, name=f"{self.name} >= {b:g}")

    def _linear(self, bound, sense):
        """``c N / D + a (<= or >=) b`` as the linear ``c N (<= or >=) (b - a) D`` when ``D >= 0``
        on every model (all its rates enter with non-negative weight); else None.

        The two agree wherever ``D > 0`` (for the F-measure: whenever the subset
        has a positive example). Where ``D = 0`` the ratio counts as 0 and the
        linear form reads ``0 (<= or >=) 0``.
        """
        b = as_scalar(bound)
        if b is None or not math.isfinite(b) or len(self.terms) != 1:
            return None
        a = 0.0
        if self.affine is not None:
            if not all(isinstance(e, R.Constant) for _, e in self.affine._terms()):
                return None
            a = float(sum(k * e.value for k, e in self.affine._terms()))
        c, N, D = self.terms[0]
        if not _nonnegative(D):
            return None
        return R.Constraint(c * N, sense, (b - a) * D, name=f"{self.name} {sense} {b:g}")


#: The affine-term placeholder of a detached ratio metric (a loaded result's).
_DETACHED = object()


def _nonnegative(expr):
    """Whether an affine rate expression is ``>= 0`` for all rates in [0, 1]."""
    const = 0.0
    for k, e in expr._terms():
        if isinstance(e, R.Constant):
            const += k * e.value
        elif k < 0:
            return False
    return const >= 0.0


def _scaled(value_range, k):
    """The interval ``k * [lo, hi]`` (an infinite end stays infinite; ``0 * inf`` is 0)."""
    if k == 0:
        return (0.0, 0.0)
    lo, hi = k * value_range[0], k * value_range[1]
    return (lo, hi) if lo <= hi else (hi, lo)


def _add_affine(a, b, sign):
    if b is None:
        return a
    b = b if sign > 0 else -b
    return b if a is None else a + b


def ratio(numerator, denominator, name=None):
    """``N / D`` of two affine rate expressions, as a :class:`RatioMetric`.

    Parameters
    ----------
    numerator, denominator : Expression or float
        Affine rate expressions or numbers (``D > 0`` on the models
        considered; a denominator that is the constant 0 is refused).
    name : str, default=None
        Default ``"(N)/(D)"``.

    Returns
    -------
    RatioMetric
        The ratio.

    Raises
    ------
    RateoptError
        If the denominator is the constant 0.
    """
    N, D = lift(numerator), lift(denominator)
    if N is NotImplemented or D is NotImplemented:
        raise TypeError("ratio() takes two rate expressions")
    terms = list(D._terms())
    if all(isinstance(e, R.Constant) for _, e in terms) and sum(k * e.value for k, e in terms) == 0:
        raise RateoptError("ratio(): the denominator is the constant 0, so the ratio would be 0 "
                           "for every model (a zero denominator counts as 0): give a rate expression")
    return RatioMetric(name or f"({N})/({D})", [(1.0, N, D)])


def _need_positives(ctx, what):
    """Refuse a subset without positive labels of positive weight: ``what`` (its TP) is 0 for every model.

    Skipped for a dataset whose rows live elsewhere (``rateopt.dask``), checked when compiled there.
    """
    ds = ctx.dataset
    if getattr(ds, "compile_backend", None) is not None or ds.y is None:
        return  # no labels: the rates raise MissingLabelsError when compiled
    if not np.any(ds.weights[ctx.positive().mask()] > 0):
        raise EmptySubsetError(f"{what}[{ctx.label}]: subset {ctx.label!r} of dataset {ds.name!r} has no positive "
                               f"label of positive weight, so its {what} is 0 for every model")


def precision(ctx):
    """``TP / (TP + FP)`` of a labeled subset (as proportions), a :class:`RatioMetric`.

    Parameters
    ----------
    ctx : Context or Dataset
        A labeled subset.

    Returns
    -------
    RatioMetric
        The precision.

    Raises
    ------
    EmptySubsetError
        If the subset has no positive label of positive weight (its precision
        would be 0 for every model).
    """
    ctx = as_context(ctx)
    _need_positives(ctx, "precision")
    tp, fp = R.true_positive_proportion(ctx), R.false_positive_proportion(ctx)
    out = ratio(tp, tp + fp, name=f"precision[{ctx.label}]")
    out.value_range = (0.0, 1.0)
    return out


def f_measure(ctx, beta=1.0):
    """The F-measure ``(1 + b^2) TP / ((1 + b^2) TP + b^2 FN + FP)`` of a labeled subset.

    As TFCO's ``f_score`` (proportions of the subset). Maximize it with
    ``Problem(objective=-f_measure(ctx))``.

    Parameters
    ----------
    ctx : Context or Dataset
        A labeled subset.
    beta : float, default=1.0
        The weight of recall, a positive finite number.

    Returns
    -------
    RatioMetric
        The F-measure (a ratio in [0, 1]; larger is better).

    Raises
    ------
    RateoptError
        If ``beta`` is not a positive finite number.
    EmptySubsetError
        If the subset has no positive label of positive weight (its F-measure
        would be 0 for every model).
    """
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not (math.isfinite(beta) and beta > 0):
        raise RateoptError(f"beta must be a positive finite number, got {beta!r}")
    b = float(beta)
    ctx = as_context(ctx)
    _need_positives(ctx, "F-measure")
    b2 = b * b
    tp, fn, fp = (R.true_positive_proportion(ctx), R.false_negative_proportion(ctx),
                  R.false_positive_proportion(ctx))
    out = ratio((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, name=f"f{b:g}[{ctx.label}]")
    out.value_range = (0.0, 1.0)
    return out


def f_measure_parity(ctx_a, ctx_b, beta=1.0):
    """``F(a) - F(b)``: a difference of two F-measures (bound it on both sides for parity).

    Parameters
    ----------
    ctx_a, ctx_b : Context or Dataset
        Two labeled subsets.
    beta : float, default=1.0
        The weight of recall in both F-measures.

    Returns
    -------
    RatioMetric
        The difference.
    """
    return f_measure(ctx_a, beta) - f_measure(ctx_b, beta)


def predictive_parity(ctx_a, ctx_b):
    """``precision(a) - precision(b)``: bound it on both sides for predictive parity.

    Parameters
    ----------
    ctx_a, ctx_b : Context or Dataset
        Two labeled subsets.

    Returns
    -------
    RatioMetric
        The difference of the two precisions.
    """
    return precision(ctx_a) - precision(ctx_b)


def win_loss_ratio(ctx):
    """``win_rate / loss_rate`` against the dataset's baseline (Cotter et al., 2018, Eq. 11), a :class:`RatioMetric`.

    ``win_loss_ratio(ctx) >= k`` is rewritten to the linear ``win - k loss >= 0``
    (as :func:`rateopt.goals.win_loss_ratio_floor`); differences between groups
    (``win_loss_ratio(a) - win_loss_ratio(b) <= eps``) are ratio sums.

    Parameters
    ----------
    ctx : Context or Dataset
        A subset of a dataset with baseline decisions.

    Returns
    -------
    RatioMetric
        The ratio (0 where the model never loses).
    """
    ctx = as_context(ctx)
    out = ratio(R.win_rate(ctx), R.loss_rate(ctx), name=f"win_loss_ratio[{ctx.label}]")
    out.value_range = (0.0, math.inf)
    return out

