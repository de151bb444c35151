"""The metric base class, the registry of metric classes by kind, and saved metrics read back.

Every metric is a subclass of :class:`Metric` that names its ``kind``; naming
it registers the class in :data:`METRIC_KINDS`, through which
:func:`metric_from_params` rebuilds a saved metric (``params()`` holds the
kind) and ``Metric(name, rates, signs, kind)`` builds the class of a kind.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from .._language._data import Context, Dataset
from .._language._evaluation import expression_value
from .._language._expressions import as_scalar
from ..exceptions import RateoptError
from ._constraint import MetricConstraint, finite_bound

__all__ = ["METRIC_KINDS", "Metric", "as_context", "metric_from_params"]

#: The metric classes by kind: every subclass of :class:`Metric` that sets ``kind`` registers itself.
METRIC_KINDS: dict = {}


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
        Which psi (its value and best response are closed forms): ``Metric(...)``
        builds the class registered for the kind; a subclass needs no kind.
    target : float, default=None
        The KL divergence's target prevalence ``p``.

    Notes
    -----
    Metrics are losses (smaller is better): ``1 - G-mean``, ``1 - H-mean``,
    the Q-mean of error rates, the KL divergence.

    A metric is a subclass that sets the class attribute ``kind`` (which
    registers it in :data:`METRIC_KINDS`) and implements :meth:`value`,
    :meth:`gradient` and :meth:`best_response`; one that keeps this
    constructor adds its kind to :attr:`KINDS`.
    """

    #: The kinds ``Metric(name, rates, signs, kind)`` builds (the subclasses that keep this constructor).
    KINDS: ClassVar[tuple] = ()
    #: The metric's kind, written by :meth:`params` (None: an abstract class).
    kind: ClassVar[str | None] = None
    #: ``(low, high)``: the values ``psi`` can take when every rate lies in [0, 1] (unknown: infinite ends);
    #: a bound outside it can never hold and is refused.
    value_range: tuple = (-math.inf, math.inf)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if kind is not None:
            METRIC_KINDS[kind] = cls
            if cls.__init__ is Metric.__init__:
                Metric.KINDS += (kind,)

    def __new__(cls, *args, **kwargs):
        if cls is Metric:  # Metric(name, rates, signs, kind[, target]): the class of the kind
            kind = kwargs["kind"] if "kind" in kwargs else args[3] if len(args) > 3 else None
            if kind not in Metric.KINDS:
                raise ValueError(f"kind must be one of {Metric.KINDS}, got {kind!r}")
            cls = METRIC_KINDS[kind]
        return super().__new__(cls)

    def __init__(self, name, rates, signs, kind=None, target=None):
        if kind is not None and kind != self.kind:
            raise ValueError(f"a {type(self).__name__} has kind {self.kind!r}, got {kind!r}")
        self.name = name
        self.rates = tuple(rates)
        self.signs = np.asarray(signs, dtype=np.float64)
        self.target = target

    @classmethod
    def from_params(cls, params):
        """Rebuild the metric from :meth:`params` (see :func:`metric_from_params`).

        Parameters
        ----------
        params : dict
            ``name``, ``kind``, ``signs`` and ``target``.

        Returns
        -------
        Metric
            Without rate expressions.

        Raises
        ------
        ValueError
            If the parameters do not describe a metric of the class.
        """
        signs = params.get("signs")
        if not isinstance(signs, list) or len(signs) != 2 or not all(s in (-1.0, 1.0) for s in signs):
            raise ValueError(f"a metric needs two signs of +1 or -1, got {signs!r}")
        target = cls.check_target(params.get("target"))
        return cls(str(params.get("name")), (), signs, params.get("kind"), target)

    @classmethod
    def check_target(cls, target):
        """The saved ``target`` (a subclass that needs one checks it).

        Parameters
        ----------
        target : object
            As saved.

        Returns
        -------
        object
            ``target``.
        """
        return target

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
        raise NotImplementedError

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
        raise NotImplementedError

    def best_response(self, lam):
        """The slack player's best response ``argmin_{xi in [0,1]^K} psi(xi) - <s * lam, xi>``.

        Parameters
        ----------
        lam : array-like of shape (K,)
            Non-negative multipliers of the slack constraints ``s_k (z_k - xi_k) <= 0``.

        Returns
        -------
        ndarray of shape (K,)
            A minimizer in the box (closed forms of Narasimhan et al. (2019) Table 1; among
            several minimizers of a homogeneous metric, one of them).
        """
        raise NotImplementedError

    def evaluate(self, predictions, *, kind="auto"):
        """The metric of a predictor's output (decisions, scores, probabilities or labels).

        For probabilities (the expected decisions of a stochastic classifier)
        the rates are expected rates, so this is ``psi`` of the expected rates
        (Narasimhan et al. (2019)'s definition for a mixture), not the mixture of ``psi``.

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

        Raises
        ------
        RateoptError
            As :meth:`rateopt.Problem.evaluate`; or for a metric read back
            without its rate expressions (:func:`metric_from_params`).
        """
        if any(expr is None for expr in self.rates):
            raise RateoptError(f"metric {self.name!r} was read back without its rate expressions: evaluate its "
                               "value at rate values (value) instead of on predictions")
        # A constant coordinate (a ratio's number denominator) reads no predictions.
        return self.value([expression_value(expr, predictions if _uses_data(expr) else {}, kind=kind)
                           for expr in self.rates])

    # ------------------------------------------------------------------ guard rails

    def _vector(self, v, name):
        a = np.asarray(v, dtype=np.float64).reshape(-1)
        if a.shape != (self.n_rates,) or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must hold {self.n_rates} finite values, got {np.asarray(v).tolist()}")
        return a

    def __le__(self, bound):
        check_reachable(self, "<=", finite_bound(bound))
        return MetricConstraint(self, bound)

    def __ge__(self, bound):
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

    __add__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __neg__ = _no_algebra

    def __radd__(self, other):
        if as_scalar(other) == 0.0:  # builtins.sum starts at 0
            return self
        self._no_algebra()

    def __repr__(self):
        rates = [getattr(r, "name", str(r)) for r in self.rates if r is not None]
        return f"{self.name}[{', '.join(rates)}]" if rates else self.name


def _uses_data(expr):
    return bool(getattr(expr, "datasets", ()))


def _fmt_range(lo, hi):
    return f"[{lo:g}, {hi:g}]"


def check_reachable(metric, sense, bound, shown=None, value_range=None):
    """Refuse a bound that no model can meet: outside the metric's :attr:`Metric.value_range`.

    Parameters
    ----------
    metric : Metric
        The bounded metric (its ``name`` and ``value_range``).
    sense : {"<=", ">="}
        Whether the metric is bounded above or below.
    bound : float
        The bound.
    shown : str, default=None
        What the message calls the bounded quantity (default: the metric's name).
    value_range : tuple of float, default=None
        The bounded quantity's range (default: the metric's ``value_range``).

    Raises
    ------
    RateoptError
        If ``metric <= bound`` with ``bound`` below the range's low end, or
        ``metric >= bound`` with ``bound`` above its high end.
    """
    lo, hi = metric.value_range if value_range is None else value_range
    if (sense == "<=" and bound < lo) or (sense == ">=" and bound > hi):
        name = metric.name if shown is None else shown
        raise RateoptError(f"'{name} {sense} {bound:g}' can never hold: {name} takes values in "
                           f"{_fmt_range(lo, hi)}")


def metric_from_params(params):
    """Rebuild a metric's ``psi`` from :meth:`Metric.params` (without its rate expressions).

    The class is the one registered for the saved kind (:data:`METRIC_KINDS`).

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
    # An unknown kind takes Metric's own reading, which names the kinds it knows.
    return (METRIC_KINDS.get(kind, Metric) if isinstance(kind, str) else Metric).from_params(params)


def as_context(ctx):
    """The context of a subset (a whole dataset's for a :class:`~rateopt.Dataset`).

    Parameters
    ----------
    ctx : Context or Dataset
        A subset, or a dataset.

    Returns
    -------
    Context

    Raises
    ------
    TypeError
        If ``ctx`` is neither.
    """
    if isinstance(ctx, Dataset):
        return ctx.context()
    if not isinstance(ctx, Context):
        raise TypeError(f"expected a Context or a Dataset, got {type(ctx).__name__}")
    return ctx
