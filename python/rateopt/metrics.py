"""Non-linear rate metrics: convex functions ``psi`` of a few rates (seed 003, Table 1).

A :class:`Metric` is a function ``psi(z)`` of K rate expressions ``z_k`` (each
an affine :class:`~rateopt.Expression` of atoms): the KL divergence of a
group's positive rate from a target prevalence, the G-mean, H-mean and
Q-mean of TPR and TNR (or FPR and FNR). It is a separate, explicit kind of
object: the affine rate algebra keeps refusing non-linear operations, and a
metric refuses ``==``, ``bool()`` and arithmetic.

What a metric provides is what the three-player game of Narasimhan, Cotter and
Gupta (NeurIPS 2019, Algorithm 2) needs from it, and what evaluation needs:

* :meth:`Metric.value` -- ``psi(z)``; for a stochastic classifier it is
  ``psi`` of the *expected* rates (seed 003 §2), which is what evaluating the
  mixture's probabilities gives (:meth:`Metric.evaluate`);
* :meth:`Metric.best_response` -- the slack player's closed-form best response
  ``argmin_{xi in [0,1]^K} psi(xi) - <s * lam, xi>`` where ``s_k = +1`` if psi
  increases in ``z_k`` and ``-1`` if it decreases (the orientation of the
  slack constraints ``s_k (z_k - xi_k) <= 0``).

References
----------
.. [1] H. Narasimhan, A. Cotter, M. Gupta. "Optimizing Generalized Rate
   Metrics with Three Players". NeurIPS 2019 (seed 003), Table 1 and §3.
   Best responses: ``../shared/papers/notes/methods_spec.md`` §A.2 (verified
   there on a 1001 x 1001 grid; here against a grid in the tests).
"""

from __future__ import annotations

import math

import numpy as np

from ._language import _rates as R
from ._language._data import Context, Dataset
from .exceptions import RateoptError

__all__ = ["Metric", "MetricConstraint", "MetricSum", "RatioMetric", "metric_from_params", "kl_divergence", "g_mean", "h_mean", "q_mean", "ratio",
           "precision", "predictive_parity", "f_measure", "f_measure_parity", "win_loss_ratio"]


class Metric:
    """A convex function ``psi`` of K rate expressions.

    Parameters
    ----------
    name : str
        Shown in reports.
    rates : sequence of Expression
        The coordinates ``z_1..z_K`` (affine rate expressions).
    signs : sequence of {+1, -1}
        ``+1`` where psi is non-decreasing in ``z_k``, ``-1`` where non-increasing.
    kind : {"kld", "g_mean", "h_mean", "q_mean"}
        Which psi (its value and best response are closed forms).
    target : float, default=None
        The KL divergence's target prevalence ``p``.

    Notes
    -----
    Metrics are losses (smaller is better): ``1 - G-mean``, ``1 - H-mean``,
    the Q-mean of error rates, the KL divergence.
    """

    KINDS = ("kld", "g_mean", "h_mean", "q_mean")

    def __init__(self, name, rates, signs, kind, target=None):
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {self.KINDS}, got {kind!r}")
        self.name = name
        self.rates = tuple(rates)
        self.signs = np.asarray(signs, dtype=np.float64)
        self.kind = kind
        self.target = target

    @property
    def n_rates(self):
        """K, the number of rate coordinates (2 for every metric here)."""
        return self.signs.shape[0]

    def params(self):
        """``psi`` without its rate expressions, as JSON (saved with a training result).

        Returns
        -------
        dict
            ``name``, ``kind``, ``signs`` and ``target``.
        """
        return {"name": self.name, "kind": self.kind, "signs": self.signs.tolist(), "target": self.target}

    def leaves(self):
        """Iterate over the rate leaves of the coordinates (as :meth:`Expression.leaves`).

        Yields
        ------
        Rate
            Each rate leaf, in order of appearance.
        """
        for r in self.rates:
            yield from r.leaves()

    @property
    def datasets(self) -> tuple:
        """The datasets the coordinates refer to, in order of appearance."""
        seen = {}
        for r in self.rates:
            for ds in r.datasets:
                seen.setdefault(id(ds), ds)
        return tuple(seen.values())

    def values(self, Z):
        """``psi`` of each row of ``Z`` (n_points, K).

        Parameters
        ----------
        Z : array-like of shape (n_points, K)
            Coordinate values, one point per row.

        Returns
        -------
        ndarray of shape (n_points,)
        """
        return np.array([self.value(z) for z in np.asarray(Z, dtype=np.float64).reshape(-1, self.n_rates)])

    # ------------------------------------------------------------------ values

    def value(self, z):
        """``psi(z)`` at rate values ``z`` (shape (K,); rates in [0, 1]).

        Parameters
        ----------
        z : array-like of shape (K,)
            Values of the coordinates (e.g. expected rates of a mixture).

        Returns
        -------
        float
            The metric (the KL divergence with ``KLD_EPS = 1e-10`` added to
            both sides of its ratios, finite at a rate of 0).
        """
        z = self._vector(z, "z")
        if self.kind == "kld":
            p = self.target
            return float(_xlogy_ratio(p, z[0]) + _xlogy_ratio(1.0 - p, z[1]))
        if self.kind == "g_mean":
            return float(1.0 - math.sqrt(max(z[0], 0.0) * max(z[1], 0.0)))
        if self.kind == "h_mean":
            s = z[0] + z[1]
            return float(1.0 - (2.0 * z[0] * z[1] / s if s > 0 else 0.0))
        return float(math.sqrt((z[0] ** 2 + z[1] ** 2) / 2.0))  # q_mean

    def gradient(self, z):
        """``grad psi(z)`` (one-sided where psi has a kink; finite on [0, 1]^K up to 1e-300 clamps).

        Parameters
        ----------
        z : array-like of shape (K,)
            Coordinate values.

        Returns
        -------
        ndarray of shape (K,)
        """
        z = self._vector(z, "z")
        x, y = float(z[0]), float(z[1])
        if self.kind == "kld":
            p, e = self.target, KLD_EPS
            return np.array([-p / (x + e), -(1.0 - p) / (y + e)])
        if self.kind == "g_mean":
            x, y = max(x, 1e-300), max(y, 1e-300)
            return np.array([-0.5 * math.sqrt(y / x), -0.5 * math.sqrt(x / y)])
        if self.kind == "h_mean":
            s = x + y
            if s <= 0:
                return np.zeros(2)
            return np.array([-2.0 * y * y / (s * s), -2.0 * x * x / (s * s)])
        q = math.sqrt((x * x + y * y) / 2.0)
        return np.zeros(2) if q == 0 else np.array([x / (2.0 * q), y / (2.0 * q)])

    def best_response(self, lam):
        """The slack player's best response ``argmin_{xi in [0,1]^K} psi(xi) - <s * lam, xi>``.

        Parameters
        ----------
        lam : array-like of shape (K,)
            Non-negative multipliers of the slack constraints ``s_k (z_k - xi_k) <= 0``.

        Returns
        -------
        ndarray of shape (K,)
            A minimizer in the box (closed forms of seed 003 Table 1; among
            several minimizers of a homogeneous metric, one of them).
        """
        lam = self._vector(lam, "lam")
        if np.any(lam < 0):
            raise ValueError(f"lam must be non-negative, got {lam.tolist()}")
        l1, l2 = float(lam[0]), float(lam[1])
        if self.kind == "kld":
            # psi - <s lam, xi> = p log((p+e)/(xi1+e)) + ... + lam1 xi1 + lam2 xi2:
            # stationary at xi1 = p / lam1 - e, clipped to the box (lam = 0: the box edge 1).
            p = self.target
            return np.array([_clip_ratio(p, l1), _clip_ratio(1.0 - p, l2)])
        if self.kind == "g_mean":
            # 1 - sqrt(x y) + l1 x + l2 y: the origin if 4 l1 l2 >= 1, else an edge.
            if 4.0 * l1 * l2 >= 1.0:
                return np.zeros(2)
            return self._best_of([np.array([1.0, min(1.0, _inv_sq(2.0 * l2))]),
                                  np.array([min(1.0, _inv_sq(2.0 * l1)), 1.0]), np.zeros(2)], lam)
        if self.kind == "h_mean":
            cands = [np.zeros(2), np.array([1.0, _clip01(_sqrt_ratio(2.0, l2) - 1.0)]),
                     np.array([_clip01(_sqrt_ratio(2.0, l1) - 1.0), 1.0])]
            return self._best_of(cands, lam)
        # q_mean, increasing: psi(xi) - l1 xi1 - l2 xi2.
        if math.hypot(l1, l2) <= 1.0 / math.sqrt(2.0):
            return np.zeros(2)
        return self._best_of([np.array([1.0, _q_edge(l2)]), np.array([_q_edge(l1), 1.0]), np.zeros(2)], lam)

    def _best_of(self, candidates, lam):
        obj = [self.value(c) - float(self.signs @ (lam * c)) for c in candidates]
        return candidates[int(np.argmin(obj))]

    def evaluate(self, predictions, *, kind="auto"):
        """The metric of a predictor's output (decisions, scores, probabilities or labels).

        For probabilities (the expected decisions of a stochastic classifier)
        the rates are expected rates, so this is ``psi`` of the expected rates
        (seed 003's definition for a mixture), not the mixture of ``psi``.

        Parameters
        ----------
        predictions : array-like or mapping
            As :meth:`rateopt.Problem.evaluate`.
        kind : str, default="auto"
            As :meth:`rateopt.Problem.evaluate`.

        Returns
        -------
        float
            ``psi`` of the predictor's (expected) rates.
        """
        from ._compiler._problem import Problem

        z = [Problem(objective=expr).evaluate(predictions, kind=kind).objective for expr in self.rates]
        return self.value(z)

    # ------------------------------------------------------------------ guard rails

    def _vector(self, v, name):
        a = np.asarray(v, dtype=np.float64).reshape(-1)
        if a.shape != (self.n_rates,) or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must hold {self.n_rates} finite values, got {np.asarray(v).tolist()}")
        return a

    def __le__(self, bound):
        return MetricConstraint(self, bound)

    def __ge__(self, bound):
        if self.kind in _MEAN_LOSSES:
            # "G-mean >= b" is the convex "1 - G-mean <= 1 - b" on the loss.
            b = R._as_scalar(bound)
            if b is None or not math.isfinite(b):
                raise TypeError(f"a metric constraint's bound must be a finite number, got {bound!r}")
            return MetricConstraint(self, 1.0 - b, name=f"{_MEAN_LOSSES[self.kind]}[{self._label()}] >= {b:g}")
        raise TypeError(f"'{self.name} >= bound' bounds a convex loss from below, which is not a convex "
                        f"constraint: state the goal as an upper bound on the loss ('{self.name} <= b')")

    def _label(self):
        return self.name[self.name.index("[") + 1: -1] if "[" in self.name else self.name

    def __lt__(self, bound):
        raise TypeError("use <= for metric constraints (strict inequalities are not supported)")

    __gt__ = __lt__

    def __bool__(self):
        raise TypeError(f"the truth value of metric {self.name!r} is undefined")

    def __eq__(self, other):
        raise TypeError(f"metric {self.name!r} cannot be compared with '=='")

    __hash__ = object.__hash__

    def _no_algebra(self, *_):
        raise TypeError(f"metric {self.name!r} is a non-linear function of rates: it has no arithmetic")

    __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __neg__ = _no_algebra

    def __add__(self, other):
        # The sum of convex metrics is convex (seed 003's sum of KL divergences over groups).
        if isinstance(other, Metric) and not isinstance(other, RatioMetric):
            return MetricSum([self, other])
        self._no_algebra()

    def __radd__(self, other):
        if R._as_scalar(other) == 0.0:  # builtins.sum starts at 0
            return self
        self._no_algebra()

    def __repr__(self):
        rates = [getattr(r, "name", str(r)) for r in self.rates if r is not None]
        return f"{self.name}[{', '.join(rates)}]" if rates else self.name


#: Metrics that are ``1 - mean``: ``mean >= b`` is the convex ``loss <= 1 - b``.
_MEAN_LOSSES = {"g_mean": "G-mean", "h_mean": "H-mean"}


class MetricSum(Metric):
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

    def __init__(self, parts, name=None):
        flat = []
        for p in parts:
            if isinstance(p, RatioMetric) or not isinstance(p, Metric):
                raise TypeError(f"a metric sum takes convex metrics, got {type(p).__name__}")
            flat.extend(p.parts if isinstance(p, MetricSum) else [p])
        if not flat:
            raise ValueError("a metric sum needs at least one metric")
        self.parts = tuple(flat)
        self.name = name if name is not None else " + ".join(p.name for p in flat)
        self.rates = tuple(r for p in flat for r in p.rates)
        self.signs = np.concatenate([p.signs for p in flat])
        self.kind = "sum"
        self.target = None
        ends = np.cumsum([p.n_rates for p in flat])
        self._slices = [slice(int(e - p.n_rates), int(e)) for p, e in zip(flat, ends)]

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


class MetricConstraint:
    """The constraint ``psi(z) <= bound`` on a convex metric (trained by the three-player game).

    Parameters
    ----------
    metric : Metric
        The loss ``psi``.
    bound : float
        Its upper bound.
    name : str, default=None
        Default ``"<metric> <= <bound>"``.
    """

    def __init__(self, metric, bound, name=None):
        b = R._as_scalar(bound)
        if b is None or not math.isfinite(b):
            raise TypeError(f"a metric constraint's bound must be a finite number, got {bound!r}")
        self.metric = metric
        self.bound = float(b)
        self.name = name if name is not None else f"{metric.name} <= {self.bound:g}"

    @property
    def expression(self):
        """The constrained metric (what :class:`~rateopt.Problem` reads datasets and leaves from)."""
        return self.metric

    def named(self, name):
        """The same constraint under another name.

        Parameters
        ----------
        name : str
            The new name.

        Returns
        -------
        MetricConstraint
        """
        return MetricConstraint(self.metric, self.bound, name)

    def __bool__(self):
        raise TypeError(f"the truth value of constraint {self.name!r} is undefined")

    def __repr__(self):
        return self.name


class RatioMetric(Metric):
    """A sum of ratios of affine rate expressions plus an affine term (seed 003, P3 / Algorithm 3).

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

    def __init__(self, name, terms, affine=None):
        self.terms = tuple((float(c), N, D) for c, N, D in terms)
        self.affine = affine
        coords = [e for _, N, D in self.terms for e in (N, D)] + ([affine] if affine is not None else [])
        self.name = name
        self.rates = tuple(coords)
        self.signs = np.zeros(len(coords))
        self.kind = "ratio"
        self.target = None

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
            return RatioMetric(f"({self.name} {'+' if sign > 0 else '-'} {other.name})", terms, aff)
        lifted = R._lift(other)
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
        k = R._as_scalar(k)
        if k is None:
            return NotImplemented
        aff = None if self.affine is None else self.affine * k
        return RatioMetric(f"{k:g} * {self.name}", tuple((k * c, N, D) for c, N, D in self.terms), aff)

    __rmul__ = __mul__

    def __neg__(self):
        return RatioMetric(f"-{self.name}", tuple((-c, N, D) for c, N, D in self.terms),
                           None if self.affine is None else -self.affine)

    def __truediv__(self, k):
        k = R._as_scalar(k)
        if k is None or k == 0:
            raise TypeError("a ratio metric can only be divided by a non-zero number")
        return self * (1.0 / k)

    def __le__(self, bound):
        linear = self._linear(bound, "<=")
        return linear if linear is not None else MetricConstraint(self, bound)

    def __ge__(self, bound):
        b = R._as_scalar(bound)
        if b is None or not math.isfinite(b):
            raise TypeError(f"a metric constraint's bound must be a finite number, got {bound!r}")
        linear = self._linear(b, ">=")
        return linear if linear is not None else MetricConstraint(-self, -b, name=f"{self.name} >= {b:g}")

    def _linear(self, bound, sense):
        """``c N / D + a (<= or >=) b`` as the linear ``c N (<= or >=) (b - a) D`` when ``D >= 0``
        on every model (all its rates enter with non-negative weight); else None.

        The two agree wherever ``D > 0`` (for the F-measure: whenever the subset
        has a positive example). Where ``D = 0`` the ratio counts as 0 and the
        linear form reads ``0 (<= or >=) 0``.
        """
        b = R._as_scalar(bound)
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


def _add_affine(a, b, sign):
    if b is None:
        return a
    b = b if sign > 0 else -b
    return b if a is None else a + b


def ratio(numerator, denominator, name=None):
    """``N / D`` of two affine rate expressions, as a :class:`RatioMetric`.

    Parameters
    ----------
    numerator, denominator : Expression
        Affine rate expressions (``D > 0`` on the models considered).
    name : str, default=None
        Default ``"(N)/(D)"``.

    Returns
    -------
    RatioMetric
        The ratio.
    """
    N, D = R._lift(numerator), R._lift(denominator)
    if N is NotImplemented or D is NotImplemented:
        raise TypeError("ratio() takes two rate expressions")
    return RatioMetric(name or f"({N})/({D})", [(1.0, N, D)])


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
    """
    ctx = _context(ctx)
    tp, fp = R.true_positive_proportion(ctx), R.false_positive_proportion(ctx)
    return ratio(tp, tp + fp, name=f"precision[{ctx.label}]")


def f_measure(ctx, beta=1.0):
    """The F-measure ``(1 + b^2) TP / ((1 + b^2) TP + b^2 FN + FP)`` of a labeled subset.

    As TFCO's ``f_score`` (proportions of the subset). Maximize it with
    ``Problem(objective=-f_measure(ctx))``.

    Parameters
    ----------
    ctx : Context or Dataset
        A labeled subset.
    beta : float, default=1.0
        The weight of recall.

    Returns
    -------
    RatioMetric
        The F-measure (a ratio; larger is better).
    """
    ctx = _context(ctx)
    b2 = float(beta) ** 2
    tp, fn, fp = (R.true_positive_proportion(ctx), R.false_negative_proportion(ctx),
                  R.false_positive_proportion(ctx))
    return ratio((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, name=f"f{beta:g}[{ctx.label}]")


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
    """``win_rate / loss_rate`` against the dataset's baseline (seed 000 Eq. 11), a :class:`RatioMetric`.

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
    ctx = _context(ctx)
    return ratio(R.win_rate(ctx), R.loss_rate(ctx), name=f"win_loss_ratio[{ctx.label}]")


def metric_from_params(params):
    """Rebuild a metric's ``psi`` from :meth:`Metric.params` (without its rate expressions).

    Parameters
    ----------
    params : dict
        As written by ``params()`` (saved with a training result).

    Returns
    -------
    Metric
        Values, gradients and best responses work on coordinate vectors.

    Raises
    ------
    ValueError
        If the parameters do not describe a metric.
    """
    if not isinstance(params, dict):
        raise ValueError(f"metric parameters must be a dict, got {params!r}")
    kind = params.get("kind")
    name = str(params.get("name"))
    if kind == "sum":
        parts = params.get("parts")
        if not isinstance(parts, list) or not parts:
            raise ValueError(f"a metric sum needs a non-empty list of parts, got {parts!r}")
        return MetricSum([metric_from_params(q) for q in parts], name=name)
    if kind == "ratio":
        coefs = params.get("coefficients")
        if (not isinstance(coefs, list) or not all(isinstance(c, (int, float)) and math.isfinite(c) for c in coefs)
                or not isinstance(params.get("affine"), bool)):
            raise ValueError(f"a ratio metric needs finite coefficients and an affine flag, got {params!r}")
        return RatioMetric.detached(name, coefs, params["affine"])
    signs = params.get("signs")
    if not isinstance(signs, list) or len(signs) != 2 or not all(s in (-1.0, 1.0) for s in signs):
        raise ValueError(f"a metric needs two signs of +1 or -1, got {signs!r}")
    target = params.get("target")
    if kind == "kld" and not (isinstance(target, (int, float)) and 0.0 <= target <= 1.0):
        raise ValueError(f"a KL divergence needs a target in [0, 1], got {target!r}")
    return Metric(name, (), signs, kind, target)


# --------------------------------------------------------------------------- closed-form pieces


#: The KL divergence is evaluated as ``p log((p + eps) / (z + eps))`` (the
#: authors' evaluation code): finite at a rate of 0, where a model that predicts
#: one class only on a group would otherwise get an infinite loss.
KLD_EPS = 1e-10


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


def _context(ctx):
    if isinstance(ctx, Dataset):
        return ctx.context()
    if not isinstance(ctx, Context):
        raise TypeError(f"expected a Context or a Dataset, got {type(ctx).__name__}")
    return ctx


def kl_divergence(ctx, target=None):
    """``KL(p || ppr(ctx))`` of a subset's positive rate from a target prevalence (seed 003).

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
    ctx = _context(ctx)
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
    return Metric(f"kld[{ctx.label}]", [R.positive_prediction_rate(ctx), R.negative_prediction_rate(ctx)],
                  (-1.0, -1.0), "kld", target=target)


def g_mean(ctx):
    """``1 - sqrt(TPR * TNR)`` (seed 003 Table 1): the G-mean loss, for imbalanced classes.

    Parameters
    ----------
    ctx : Context or Dataset
        A labeled subset.

    Returns
    -------
    Metric
        The metric, with its rate coordinates and slack orientation.
    """
    ctx = _context(ctx)
    return Metric(f"gmean[{ctx.label}]", [R.true_positive_rate(ctx), R.true_negative_rate(ctx)], (-1.0, -1.0),
                  "g_mean")


def h_mean(ctx):
    """``1 - 2 TPR TNR / (TPR + TNR)`` (seed 003 Table 1): the H-mean loss.

    Parameters
    ----------
    ctx : Context or Dataset
        A labeled subset.

    Returns
    -------
    Metric
        The metric, with its rate coordinates and slack orientation.
    """
    ctx = _context(ctx)
    return Metric(f"hmean[{ctx.label}]", [R.true_positive_rate(ctx), R.true_negative_rate(ctx)], (-1.0, -1.0),
                  "h_mean")


def q_mean(ctx):
    """``sqrt((FPR^2 + FNR^2) / 2)`` (seed 003 Table 1): the Q-mean loss.

    Parameters
    ----------
    ctx : Context or Dataset
        A labeled subset.

    Returns
    -------
    Metric
        The metric, with its rate coordinates and slack orientation.
    """
    ctx = _context(ctx)
    return Metric(f"qmean[{ctx.label}]", [R.false_positive_rate(ctx), R.false_negative_rate(ctx)], (1.0, 1.0),
                  "q_mean")


# --------------------------------------------------------------------------- ROC-AUC (issue 11 item 7)
# The slice form with trainable thresholds and the exact L-slice AUC live in _auc.py.
from ._language._auc import RocAuc, Threshold, ThresholdedRate, roc_auc, roc_auc_lj  # noqa: E402

__all__ += ["RocAuc", "Threshold", "ThresholdedRate", "roc_auc", "roc_auc_lj"]
