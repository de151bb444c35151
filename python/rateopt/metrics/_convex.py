"""Convex metrics with closed-form best responses (Narasimhan et al., 2019, Table 1), and their sums.

The KL divergence of a group's positive rate from a target prevalence, and the
G-mean, H-mean and Q-mean losses of TPR and TNR (or FPR and FNR): one class
each, with the closed forms of ``psi``, its gradient and the slack player's
best response; :class:`MetricSum` adds convex metrics on their own coordinates.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from .._language import _rates as R
from ..exceptions import RateoptError
from ._base import Metric, as_context, check_reachable, metric_from_params
from ._constraint import MetricConstraint, finite_bound

__all__ = ["ConvexMetric", "GMean", "HMean", "KLD_EPS", "KLDivergence", "MetricSum", "QMean", "g_mean", "h_mean",
           "kl_divergence", "q_mean"]

#: The KL divergence is evaluated as ``p log((p + eps) / (z + eps))`` (the
#: authors' evaluation code): finite at a rate of 0, where a model that predicts
#: one class only on a group would otherwise get an infinite loss.
KLD_EPS = 1e-10


class ConvexMetric(Metric):
    """A convex metric: ``+`` adds it to other convex metrics (a :class:`MetricSum`).

    ``mean >= b`` on a mean loss ``1 - mean`` (the G-mean, the H-mean) is the
    convex ``1 - mean <= 1 - b``; other convex metrics refuse lower bounds.
    """

    #: The mean of a mean loss ``1 - mean`` (named in its floors); None for other metrics.
    mean_name: ClassVar[str | None] = None

    def __add__(self, other):
        # The sum of convex metrics is convex (Narasimhan et al. (2019)'s sum of KL divergences over groups).
        if isinstance(other, ConvexMetric):
            return MetricSum([self, other])
        self._no_algebra()

    def __ge__(self, bound):
        if self.mean_name is None:
            return super().__ge__(bound)
        # "G-mean >= b" is the convex "1 - G-mean <= 1 - b" on the loss.
        b = finite_bound(bound)
        lo, hi = self.value_range
        check_reachable(self, ">=", b, shown=f"{self.mean_name}[{self._label()}]", value_range=(1.0 - hi, 1.0 - lo))
        return MetricConstraint(self, 1.0 - b, name=f"{self.mean_name}[{self._label()}] >= {b:g}")

    def _best_of(self, candidates, lam):
        obj = [self.value(c) - float(self.signs @ (lam * c)) for c in candidates]
        return candidates[int(np.argmin(obj))]

    def _lam(self, lam):
        lam = self._vector(lam, "lam")
        if np.any(lam < 0):
            raise ValueError(f"lam must be non-negative, got {lam.tolist()}")
        return float(lam[0]), float(lam[1]), lam


class KLDivergence(ConvexMetric):
    """``KL(p || z) = p log(p / z1) + (1 - p) log((1 - p) / z2)`` (see :func:`kl_divergence`)."""

    kind = "kld"
    value_range = (0.0, math.inf)

    @classmethod
    def check_target(cls, target):
        if isinstance(target, bool) or not (isinstance(target, (int, float)) and 0.0 <= target <= 1.0):
            raise ValueError(f"a KL divergence needs a target in [0, 1], got {target!r}")
        return target

    def value(self, z):
        z = self._vector(z, "z")
        p = self.target
        return float(_xlogy_ratio(p, z[0]) + _xlogy_ratio(1.0 - p, z[1]))

    def gradient(self, z):
        z = self._vector(z, "z")
        x, y = float(z[0]), float(z[1])
        p, e = self.target, KLD_EPS
        return np.array([-p / (x + e), -(1.0 - p) / (y + e)])

    def best_response(self, lam):
        l1, l2, _ = self._lam(lam)
        # psi - <s lam, xi> = p log((p+e)/(xi1+e)) + ... + lam1 xi1 + lam2 xi2:
        # stationary at xi1 = p / lam1 - e, clipped to the box (lam = 0: the box edge 1).
        p = self.target
        return np.array([_clip_ratio(p, l1), _clip_ratio(1.0 - p, l2)])


class GMean(ConvexMetric):
    """``1 - sqrt(z1 z2)``, the G-mean loss (see :func:`g_mean`)."""

    kind = "g_mean"
    value_range = (0.0, 1.0)
    mean_name = "G-mean"

    def value(self, z):
        z = self._vector(z, "z")
        return float(1.0 - math.sqrt(max(z[0], 0.0) * max(z[1], 0.0)))

    def gradient(self, z):
        z = self._vector(z, "z")
        x, y = max(float(z[0]), 1e-300), max(float(z[1]), 1e-300)
        return np.array([-0.5 * math.sqrt(y / x), -0.5 * math.sqrt(x / y)])

    def best_response(self, lam):
        l1, l2, lam = self._lam(lam)
        # 1 - sqrt(x y) + l1 x + l2 y: the origin if 4 l1 l2 >= 1, else an edge.
        if 4.0 * l1 * l2 >= 1.0:
            return np.zeros(2)
        return self._best_of([np.array([1.0, min(1.0, _inv_sq(2.0 * l2))]),
                              np.array([min(1.0, _inv_sq(2.0 * l1)), 1.0]), np.zeros(2)], lam)


class HMean(ConvexMetric):
    """``1 - 2 z1 z2 / (z1 + z2)``, the H-mean loss (see :func:`h_mean`)."""

    kind = "h_mean"
    value_range = (0.0, 1.0)
    mean_name = "H-mean"

    def value(self, z):
        z = self._vector(z, "z")
        s = z[0] + z[1]
        return float(1.0 - (2.0 * z[0] * z[1] / s if s > 0 else 0.0))

    def gradient(self, z):
        z = self._vector(z, "z")
        x, y = float(z[0]), float(z[1])
        s = x + y
        if s <= 0:
            return np.zeros(2)
        return np.array([-2.0 * y * y / (s * s), -2.0 * x * x / (s * s)])

    def best_response(self, lam):
        l1, l2, lam = self._lam(lam)
        cands = [np.zeros(2), np.array([1.0, _clip01(_sqrt_ratio(2.0, l2) - 1.0)]),
                 np.array([_clip01(_sqrt_ratio(2.0, l1) - 1.0), 1.0])]
        return self._best_of(cands, lam)


class QMean(ConvexMetric):
    """``sqrt((z1^2 + z2^2) / 2)``, the Q-mean loss (see :func:`q_mean`)."""

    kind = "q_mean"
    value_range = (0.0, 1.0)

    def value(self, z):
        z = self._vector(z, "z")
        return float(math.sqrt((z[0] ** 2 + z[1] ** 2) / 2.0))

    def gradient(self, z):
        z = self._vector(z, "z")
        x, y = float(z[0]), float(z[1])
        q = math.sqrt((x * x + y * y) / 2.0)
        return np.zeros(2) if q == 0 else np.array([x / (2.0 * q), y / (2.0 * q)])

    def best_response(self, lam):
        l1, l2, lam = self._lam(lam)
        # Increasing: psi(xi) - l1 xi1 - l2 xi2.
        if math.hypot(l1, l2) <= 1.0 / math.sqrt(2.0):
            return np.zeros(2)
        return self._best_of([np.array([1.0, _q_edge(l2)]), np.array([_q_edge(l1), 1.0]), np.zeros(2)], lam)


class MetricSum(ConvexMetric):
    """A sum ``psi = sum_i psi_i(z^i)`` of convex metrics, each on its own coordinates.

    Built with ``+`` (``kl_divergence(a) + kl_divergence(b)``, or
    ``sum([...])``). It is convex, and its slack best response is the
    concatenation of the parts' (the Lagrangian separates over the parts), so
    the three-player game trains it like any convex metric.

    Parameters
    ----------
    parts : sequence of Metric
        Convex metrics (sums are flattened; ratio metrics are refused).
    name : str, default=None
        Default ``"psi_1 + psi_2 + ..."``.
    """

    kind = "sum"

    def __init__(self, parts, name=None):
        flat = []
        for p in parts:
            if not isinstance(p, ConvexMetric):
                raise TypeError(f"a metric sum takes convex metrics, got {type(p).__name__}")
            flat.extend(p.parts if isinstance(p, MetricSum) else [p])
        if not flat:
            raise ValueError("a metric sum needs at least one metric")
        self.parts = tuple(flat)
        self.value_range = (sum(p.value_range[0] for p in flat), sum(p.value_range[1] for p in flat))
        self.name = name if name is not None else " + ".join(p.name for p in flat)
        self.rates = tuple(r for p in flat for r in p.rates)
        self.signs = np.concatenate([p.signs for p in flat])
        self.target = None
        ends = np.cumsum([p.n_rates for p in flat])
        self._slices = [slice(int(e - p.n_rates), int(e)) for p, e in zip(flat, ends)]

    @classmethod
    def from_params(cls, params):
        parts = params.get("parts")
        if not isinstance(parts, list) or not parts:
            raise ValueError(f"a metric sum needs a non-empty list of parts, got {parts!r}")
        return cls([metric_from_params(q) for q in parts], name=str(params.get("name")))

    def params(self):
        return {"name": self.name, "kind": "sum", "parts": [p.params() for p in self.parts]}

    def value(self, z):
        z = self._vector(z, "z")
        return float(sum(p.value(z[s]) for p, s in zip(self.parts, self._slices)))

    def gradient(self, z):
        z = self._vector(z, "z")
        return np.concatenate([p.gradient(z[s]) for p, s in zip(self.parts, self._slices)])

    def best_response(self, lam):
        lam = self._vector(lam, "lam")
        return np.concatenate([p.best_response(lam[s]) for p, s in zip(self.parts, self._slices)])

    def __ge__(self, bound):
        raise TypeError(f"'{self.name} >= bound' bounds a convex loss from below, which is not a convex "
                        f"constraint: state the goal as an upper bound ('<= b')")


# --------------------------------------------------------------------------- closed-form pieces


def _xlogy_ratio(p, z):
    """``p log((p + eps) / (z + eps))``, 0 for ``p = 0``."""
    if p == 0.0:
        return 0.0
    return p * math.log((p + KLD_EPS) / (z + KLD_EPS))


def _clip_ratio(a, lam):
    """``argmin_{x in [0,1]} a log((a + eps)/(x + eps)) + lam x`` = ``clip(a / lam - eps, 0, 1)`` (1 when lam = 0)."""
    if a == 0.0:
        return 0.0 if lam > 0 else 1.0
    return 1.0 if lam <= a / (1.0 + KLD_EPS) else max(0.0, a / lam - KLD_EPS)


def _inv_sq(x):
    return math.inf if x == 0 else 1.0 / (x * x)


def _sqrt_ratio(a, lam):
    return math.inf if lam == 0 else math.sqrt(a / lam)


def _clip01(x):
    return min(1.0, max(0.0, x))


def _q_edge(lam):
    """The Q-mean's other coordinate on the edge ``xi_k = 1``: ``argmin_y sqrt((1 + y^2)/2) - lam y``."""
    if lam >= 1.0 / math.sqrt(2.0):
        return 1.0
    return min(1.0, math.sqrt(2.0 * lam * lam / (1.0 - 2.0 * lam * lam)))


# --------------------------------------------------------------------------- constructors


def kl_divergence(ctx, target=None):
    """``KL(p || ppr(ctx))`` of a subset's positive rate from a target prevalence (Narasimhan et al., 2019).

    ``psi(z) = p log(p / z1) + (1 - p) log((1 - p) / z2)`` with
    ``z1 = ppr(ctx)``, ``z2 = npr(ctx)``: 0 when the subset's positive rate is
    ``p``, growing as it moves away (evaluated with ``1e-10`` added inside the
    logarithms' ratios, as the authors' code does, so it stays finite). Both coordinates decrease psi's slack
    orientation (``s = (-1, -1)``).

    Parameters
    ----------
    ctx : Context or Dataset
        The subset (e.g. one group).
    target : float, default=None
        ``p`` in [0, 1]; default: the weighted prevalence of the labels of the
        whole dataset the subset belongs to.

    Returns
    -------
    Metric
        The metric, with its rate coordinates and slack orientation.
    """
    ctx = as_context(ctx)
    if target is None:
        ds = ctx.dataset
        if ds.y is None:
            raise RateoptError(f"dataset {ds.name!r} has no labels: pass target=... to kl_divergence")
        w = np.asarray(ds.weights, dtype=np.float64)
        w = w / w.max()
        target = float(w @ ds.y / w.sum())
    target = float(target)
    if not 0.0 <= target <= 1.0:
        raise ValueError(f"target must lie in [0, 1], got {target!r}")
    return KLDivergence(f"kld[{ctx.label}]", [R.positive_prediction_rate(ctx), R.negative_prediction_rate(ctx)],
                        (-1.0, -1.0), target=target)


def g_mean(ctx):
    """``1 - sqrt(TPR * TNR)`` (Narasimhan et al., 2019, Table 1): the G-mean loss, for imbalanced classes.

    Parameters
    ----------
    ctx : Context or Dataset
        A labeled subset.

    Returns
    -------
    Metric
        The metric, with its rate coordinates and slack orientation.
    """
    ctx = as_context(ctx)
    return GMean(f"gmean[{ctx.label}]", [R.true_positive_rate(ctx), R.true_negative_rate(ctx)], (-1.0, -1.0))


def h_mean(ctx):
    """``1 - 2 TPR TNR / (TPR + TNR)`` (Narasimhan et al., 2019, Table 1): the H-mean loss.

    Parameters
    ----------
    ctx : Context or Dataset
        A labeled subset.

    Returns
    -------
    Metric
        The metric, with its rate coordinates and slack orientation.
    """
    ctx = as_context(ctx)
    return HMean(f"hmean[{ctx.label}]", [R.true_positive_rate(ctx), R.true_negative_rate(ctx)], (-1.0, -1.0))


def q_mean(ctx):
    """``sqrt((FPR^2 + FNR^2) / 2)`` (Narasimhan et al., 2019, Table 1): the Q-mean loss.

    Parameters
    ----------
    ctx : Context or Dataset
        A labeled subset.

    Returns
    -------
    Metric
        The metric, with its rate coordinates and slack orientation.
    """
    ctx = as_context(ctx)
    return QMean(f"qmean[{ctx.label}]", [R.false_positive_rate(ctx), R.false_negative_rate(ctx)], (1.0, 1.0))
