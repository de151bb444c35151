"""ROC-AUC through thresholded rates (issue 11 item 7; methods_spec §D.5).

Two parts:

* **Exact evaluation**, :func:`roc_auc_lj`: Eq. 10 of Cotter et al. (2018),
  ``AUC_{L,J} = (1/L) sum_{l=1..L} max_{j: FPR(alpha_j) <= l/L} TPR(alpha_j)``,
  from the thresholded 0-1 rates ``TPR(a) = p+_a(D[y=1])``,
  ``FPR(a) = p+_a(D[y=0])`` with ``p+_a(S)`` the weighted fraction of ``S``
  whose score is ``>= a``.
* **Training**: a *thresholded rate* ``p+(S; h >= b)`` whose threshold ``b`` is
  a trainable variable (:class:`Threshold`). It lowers to an *offset atom*: an
  atom whose members are scored ``h(x) - b`` (the core's
  :func:`~rateopt.core.rate_kernel_offsets`). :func:`roc_auc` states the
  slice formulation: thresholds ``b_1..b_{L-1}``, the constraints
  ``FPR(h - b_l) <= l/L`` and the bound
  ``(1/L) (sum_{l<L} TPR(h - b_l) + 1)``; ``roc_auc(ctx, L) >= kappa`` gives
  the L linear rate constraints that guarantee ``AUC >= kappa - 1/L``. The
  last slice, ``l = L``, is the constant 1: ``FPR <= 1`` always holds and the
  best threshold gives ``TPR = 1``.

Why the guarantee holds: with ``FPR(h - b_l) <= l/L``, ``TPR(h - b_l)`` is at
most ``ROC(l/L)``, the largest TPR any threshold of ``h`` reaches at that FPR
(the step ROC curve); ``(1/L) sum_l ROC(l/L)`` is an upper Riemann sum of the
non-decreasing ROC, at most its integral plus ``1/L``, and the integral is the
AUC (the Mann-Whitney statistic without ties; with ties the step curve counts a
tied pair as 0, the statistic as 1/2, so the bound holds too).
"""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np

from rateopt._language import _rates as R
from rateopt._language._data import Context, Dataset
from rateopt._language._expressions import as_scalar
from rateopt._language._lowering import LOWERING_RULES
from rateopt.exceptions import RateoptError

__all__ = ["Threshold", "ThresholdedRate", "RocAuc", "roc_auc", "roc_auc_lj", "check_slices"]

_COUNTER = itertools.count(1)


class Threshold:
    """A trainable score threshold ``b`` (an offset of the model's score).

    Thresholds are training variables, not part of the trained classifier:
    the game trains them with the model's optimizer and records them
    (``TrainResult.offsets``). Identity is by object: two thresholds with the
    same name are two variables.

    Parameters
    ----------
    name : str, default=None
        Name in rate names; default ``"b<k>"`` with a process-wide counter.

    Examples
    --------
    >>> from rateopt.metrics import Threshold
    >>> Threshold("b1").name
    'b1'
    """

    __slots__ = ("name",)

    def __init__(self, name=None):
        if name is None:
            name = f"b{next(_COUNTER)}"
        if not isinstance(name, str) or not name:
            raise RateoptError(f"a threshold name must be a non-empty string, got {name!r}")
        self.name = name

    def __repr__(self):
        return f"Threshold({self.name!r})"


class _ThresholdedContext(Context):
    """A subset seen through a threshold: the key of one offset atom.

    Same members as the subset; equal to another only with the same
    threshold object, so the compiler keeps it apart from the plain subset.
    """

    __slots__ = ("threshold",)

    def __init__(self, ctx: Context, threshold: Threshold):
        super().__init__(ctx.dataset, ctx._predicate, ctx._name)
        self.threshold = threshold

    @property
    def label(self) -> str:
        return f"{super().label} ; h>={self.threshold.name}"

    def __eq__(self, other):
        if not isinstance(other, _ThresholdedContext):
            return False
        return Context.__eq__(self, other) is True and self.threshold is other.threshold

    def __hash__(self):
        return hash((Context.__hash__(self), id(self.threshold)))


class ThresholdedRate(R.Rate):
    """``p+(S; h >= b)``: the weighted fraction of a subset whose score is at least a trainable threshold.

    Built by :func:`roc_auc` (``FPR`` and ``TPR`` at each slice's threshold);
    an affine leaf like every rate, so it takes part in ``+ - *`` and
    ``<=``/``>=``. It compiles to an offset atom (scores ``h(x) - b``).

    Parameters
    ----------
    context : Context or Dataset
        The subset.
    threshold : Threshold
        The trainable threshold ``b``.
    """

    __slots__ = ("threshold",)
    short_name = "ppr"

    def __init__(self, context, threshold):
        super().__init__(context)
        if not isinstance(threshold, Threshold):
            raise TypeError(f"threshold must be a rateopt Threshold, got {type(threshold).__name__}")
        object.__setattr__(self, "threshold", threshold)

    @property
    def name(self) -> str:
        """The rate's name in reports, e.g. ``"ppr[y=0 ; h>=roc_auc.b1]"``."""
        return f"ppr[{self.context.label} ; h>={self.threshold.name}]"


def _lower_thresholded(node, args, env):
    return env.atom(_ThresholdedContext(node.context, node.threshold), node)


LOWERING_RULES[ThresholdedRate] = _lower_thresholded


def check_slices(L):
    """The number of FPR slices ``L``, checked: an integer >= 2.

    Parameters
    ----------
    L : int
        The number of slices.

    Returns
    -------
    int
        ``L`` as an ``int``.

    Raises
    ------
    RateoptError
        If ``L`` is not an integer (booleans included) or is below 2.
    """
    if isinstance(L, bool):
        raise RateoptError(f"L must be an integer >= 2, got {L!r}")
    try:
        L = operator.index(L)
    except TypeError:
        raise RateoptError(f"L must be an integer >= 2, got {L!r}") from None
    if L < 2:
        raise RateoptError(f"L must be an integer >= 2 (the number of FPR slices), got {L}")
    return L


class RocAuc:
    """The L-slice lower bound of ROC-AUC with trainable thresholds (methods_spec §D.5).

    Not an expression: ``auc >= kappa`` gives the list of L rate constraints
    ``FPR(h - b_l) <= l/L`` (l < L) and ``bound >= kappa``, which together
    guarantee ``AUC(h) >= kappa - 1/L``; :meth:`maximize` gives the objective
    and constraints of the slice form of AUC maximization. Build it with
    :func:`roc_auc`.

    Parameters
    ----------
    ctx : Context or Dataset
        The subset (needs labels).
    L : int
        Number of FPR slices (>= 2).
    name : str, default="roc_auc"
        Prefix of the constraint and threshold names.

    Attributes
    ----------
    L : int
        Number of FPR slices.
    thresholds : tuple of Threshold
        ``b_1 .. b_{L-1}``.
    bound : Expression
        ``(1/L) (sum_{l<L} TPR(h - b_l) + 1)``, affine in the rates.
    slice_constraints : list of Constraint
        ``FPR(h - b_l) <= l/L`` for l = 1..L-1.
    """

    __array_ufunc__ = None

    def __init__(self, ctx, L, name="roc_auc"):
        if isinstance(ctx, Dataset):
            ctx = ctx.context()
        if not isinstance(ctx, Context):
            raise TypeError(f"roc_auc takes a Context or a Dataset, got {type(ctx).__name__}")
        self.L = check_slices(L)
        self.name = name
        self.context = ctx
        pos, neg = ctx.positive(), ctx.negative()
        self.thresholds = tuple(Threshold(f"{name}.b{l}") for l in range(1, self.L))
        tprs = [ThresholdedRate(pos, b) for b in self.thresholds]
        self.bound = (R.sum(tprs) + 1.0) / self.L
        self.slice_constraints = [
            (ThresholdedRate(neg, b) <= l / self.L).named(f"{name}: fpr slice {l}/{self.L}")
            for l, b in enumerate(self.thresholds, start=1)
        ]

    def __ge__(self, kappa):
        k = as_scalar(kappa)
        if k is None:
            return NotImplemented
        if not 0.0 <= k <= 1.0:
            raise RateoptError(f"an AUC floor must be in [0, 1], got {kappa!r}")
        return [*self.slice_constraints, (self.bound >= k).named(f"{self.name}: slice bound >= {k:g}")]

    def __le__(self, other):
        raise RateoptError("the slice form bounds ROC-AUC from below only: use roc_auc(...) >= kappa")

    def __gt__(self, other):
        raise RateoptError("use >= for an AUC floor")

    __lt__ = __gt__

    def __bool__(self):
        raise RateoptError("a RocAuc has no truth value; compare it with >= to get constraints")

    def maximize(self):
        """The slice form of AUC maximization as ``(objective, constraints)`` for a :class:`~rateopt.Problem`.

        Returns
        -------
        objective : Expression
            ``1 - bound`` (minimized).
        constraints : list of Constraint
            The slice constraints ``FPR(h - b_l) <= l/L``.
        """
        return 1.0 - self.bound, list(self.slice_constraints)

    def __repr__(self):
        return f"RocAuc({self.context.label!r}, L={self.L})"


def roc_auc(ctx, L=10, *, name="roc_auc"):
    """ROC-AUC of a subset as L slices with trainable thresholds (for training).

    ``roc_auc(ctx, L) >= kappa`` is the list of L rate constraints of
    methods_spec §D.5 (``FPR(h - b_l) <= l/L`` for l < L and
    ``(1/L)(sum_{l<L} TPR(h - b_l) + 1) >= kappa``); any model and thresholds
    meeting them have ``AUC >= kappa - 1/L`` on the subset (ask for
    ``kappa + 1/L`` to guarantee ``kappa``). ``Problem(*roc_auc(ctx, L).maximize())``
    maximizes the slice bound. Evaluate the AUC of trained models exactly
    with :func:`roc_auc_lj` or :func:`sklearn.metrics.roc_auc_score`.

    Parameters
    ----------
    ctx : Context or Dataset
        The subset (needs labels).
    L : int, default=10
        Number of FPR slices (>= 2); the guarantee loses ``1/L``.
    name : str, default="roc_auc"
        Prefix of the constraint and threshold names.

    Returns
    -------
    RocAuc
        The slice form; compare it with ``>=`` or call :meth:`RocAuc.maximize`.

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt
    >>> ds = rateopt.Dataset(np.zeros((4, 1)), y=[0, 1, 1, 0])
    >>> cons = rateopt.metrics.roc_auc(ds, L=4) >= 0.8
    >>> len(cons), cons[0].name
    (4, 'roc_auc: fpr slice 1/4')
    """
    return RocAuc(ctx, L, name)


def _as_labels(y, n):
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},) like scores, got {y.shape}")
    if y.dtype.kind == "b":
        return y
    if y.dtype.kind not in "iuf" or not np.all(np.isin(y, (0, 1))):
        raise ValueError("y must hold 0/1 (or boolean) labels")
    return y == 1


def roc_auc_lj(scores, y, L, J=None, *, thresholds=None, sample_weight=None):
    """``AUC_{L,J}`` of Cotter et al. (2018) Eq. 10: the L-slice ROC-AUC from thresholded 0-1 rates (exact).

    ``AUC_{L,J} = (1/L) sum_{l=1..L} max {TPR(a) : a in A, FPR(a) <= l/L}``
    (an empty max is 0), where ``TPR(a)`` and ``FPR(a)`` are the weighted
    fractions of positives and negatives with ``score >= a``. With the
    thresholds at every distinct score it is the upper Riemann sum of the step
    ROC curve at ``l/L``: for tie-free scores it lies in
    ``[AUC, AUC + 1/L]``, AUC the Mann-Whitney statistic.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Real scores (finite).
    y : array-like of shape (n_samples,)
        Labels in {0, 1} (or booleans); both classes must occur.
    L : int
        Number of FPR slices (>= 1).
    J : int, default=None
        Use the J thresholds ``alpha_j = (2j - 1) / (2J)`` of Eq. 10 (scores on
        a [0, 1] scale, e.g. probabilities).
    thresholds : array-like, default=None
        Use these thresholds instead. With neither ``J`` nor ``thresholds``,
        every distinct score is a threshold.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights (default all ones).

    Returns
    -------
    float
        ``AUC_{L,J}`` in [0, 1].

    Raises
    ------
    ValueError
        On mismatched lengths, non-finite scores or thresholds, labels other
        than 0/1, a class with zero weight, both ``J`` and ``thresholds``, or
        ``L``/``J`` < 1.

    Examples
    --------
    >>> from rateopt.metrics import roc_auc_lj
    >>> roc_auc_lj([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], L=2)
    1.0
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scores must be a non-empty 1-D array, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores holds a non-finite value (NaN or inf)")
    pos = _as_labels(y, s.shape[0])
    for name, v in (("L", L), ("J", J)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if J is not None and thresholds is not None:
        raise ValueError("pass J or thresholds, not both")
    if J is not None:
        alpha = (2.0 * np.arange(1, J + 1) - 1.0) / (2.0 * J)
    elif thresholds is not None:
        alpha = np.asarray(thresholds, dtype=np.float64).reshape(-1)
        if alpha.size == 0 or not np.all(np.isfinite(alpha)):
            raise ValueError("thresholds must be a non-empty array of finite values")
    else:
        alpha = np.unique(s)
    w = np.ones(s.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if w.shape != s.shape or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight must be finite, non-negative, one per score")
    alpha = np.sort(alpha)

    def at_least(cls):  # W(cls & score >= a) for every threshold a (non-increasing in a)
        order = np.argsort(s[cls], kind="stable")
        ss, ww = s[cls][order], w[cls][order]
        suffix = np.concatenate([np.cumsum(ww[::-1])[::-1], [0.0]])  # suffix[i] = sum ww[i:]
        return suffix[np.searchsorted(ss, alpha, side="left")], suffix[0]

    wpos_ge, wpos = at_least(pos)
    wneg_ge, wneg = at_least(~pos)
    if not (wpos > 0 and wneg > 0):
        raise ValueError("both classes need positive total weight")
    tpr = wpos_ge / wpos
    # FPR(a_j) <= l/L  <=>  L W-(>= a_j) <= l W-: exact for integer weights. FPR is
    # non-increasing along the sorted thresholds, so the feasible ones are a suffix
    # and the largest TPR among them is at its first index.
    first = np.searchsorted(-(L * wneg_ge), -(np.arange(1, L + 1) * wneg), side="left")
    best = np.where(first < alpha.size, tpr[np.minimum(first, alpha.size - 1)], 0.0)
    return math.fsum(best.tolist()) / L  # correctly rounded: independent of summation order
