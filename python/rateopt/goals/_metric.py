"""Goals on non-linear metrics: F-measure and predictive parity, KL divergence, G-mean and F-measure floors, ROC-AUC.

Parities of ratio metrics and bounds on convex metrics bind to metric
constraints of :mod:`rateopt.metrics`, trained by the three-player game
(Narasimhan et al., 2019, Algorithms 2 and 3); an F-measure floor and a ROC-AUC floor bind to linear
rate constraints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rateopt._language._auc import roc_auc
from rateopt.goals._base import (
    BOUND_PARAMS,
    BOUND_PARAMS_HEAD,
    BOUND_PARAMS_TAIL,
    GOAL_PARAMS_TAIL,
    BoundGoal,
    Goal,
    bound_goal,
    check_number,
    goal_fields,
    validate_parity,
)
from rateopt.metrics import f_measure, g_mean, kl_divergence, precision

from .._language._auc import check_slices

__all__ = ["FMeasureFloor", "FMeasureParity", "GMeanFloor", "KLDivergenceCap", "PredictiveParity", "RocAucFloor",
           "f_measure_floor", "f_measure_parity", "g_mean_floor", "kl_divergence_cap", "predictive_parity",
           "roc_auc_floor"]


@goal_fields()
class _MetricParityGoal(Goal):
    group: str | tuple
    slack: float = 0.02
    pairwise: bool = field(default=False, kw_only=True)
    sides: str = field(default="both", kw_only=True)

    if TYPE_CHECKING:  # the fields goal_fields adds, for type checkers (the runtime's are in the dataclass)
        values: tuple | None = field(default=None, kw_only=True)

    def _validate(self):
        validate_parity(self)

    def _metric(self, ctx):  # pragma: no cover - abstract
        raise NotImplementedError

    def _build(self, ds):
        groups = self._contexts(ds, self.group, self.values)
        out = []
        if self.pairwise:
            for gj in groups:
                for gk in groups:
                    if gj is not gk:  # m(g_j) - m(g_k) <= slack, as a ratio sum
                        out.append(self._metric(gj) - self._metric(gk) <= self.slack)
            return out
        ref = ds.context()
        for g in groups:
            diff = self._metric(g) - self._metric(ref)
            if self.sides in ("both", "upper"):
                out.append(diff <= self.slack)
            if self.sides in ("both", "lower"):
                out.append(diff >= -self.slack)
        return out


_METRIC_PARITY_PARAMS = """group : str or tuple of str
        Group column(s) of the dataset; every value of each column is a group.
    slack : float, default=0.02
        Additive slack in [0, 1].
    pairwise : bool, default=False
        Compare every ordered pair of groups (``m(g_j) - m(g_k) <= slack``)
        instead of each group with the whole dataset.
    sides : {"both", "lower", "upper"}, default="both"
        Against the whole dataset: both inequalities, or only
        ``m(g) >= m(all) - slack`` ("lower") or only ``m(g) <= m(all) + slack``
        ("upper"). Ignored when ``pairwise``.
    """ + GOAL_PARAMS_TAIL


@dataclass(frozen=True, repr=False)
class FMeasureParity(_MetricParityGoal):
    __doc__ = f"""F-measure parity: each group's F-measure within ``slack`` of the whole dataset's.

    A difference of ratios (Narasimhan et al., 2019, Table 1, "F-measure parity"), trained by
    the three-player game (Algorithm 3); the constraints are
    :class:`rateopt.metrics.MetricConstraint` s on
    :func:`rateopt.metrics.f_measure_parity`. Narasimhan et al. (2019)'s Experiment 2 is
    ``f_measure_parity("sex", slack=0.02, values=("Female", "Male"),
    pairwise=True)`` (one of the two ordered pairs bounds the protected
    group from below). Needs labels.

    Parameters
    ----------
    {_METRIC_PARITY_PARAMS}
    beta : float, default=1.0
        The weight of recall.
    """

    beta: float = field(default=1.0, kw_only=True)

    def _validate(self):
        super()._validate()
        check_number(type(self).__name__, "beta", self.beta, lo=0.0, lo_open=True)

    def _metric(self, ctx):
        return f_measure(ctx, self.beta)


@dataclass(frozen=True, repr=False)
class PredictiveParity(_MetricParityGoal):
    __doc__ = f"""Predictive parity: each group's precision within ``slack`` of the whole dataset's.

    A difference of ratios (Narasimhan et al., 2019, Table 1), trained by the three-player game
    (Algorithm 3). Needs labels.

    Parameters
    ----------
    {_METRIC_PARITY_PARAMS}
    """

    def _metric(self, ctx):
        return precision(ctx)


@bound_goal("max_divergence", hi=None)
class KLDivergenceCap(BoundGoal):
    __doc__ = f"""Demographic parity as a divergence: ``KL(p || ppr(D_k)) <= max_divergence`` per group.

    ``p`` is the dataset's label prevalence (or ``target``); Narasimhan et al. (2019)'s KLD
    (Table 1). Convex: trained by the three-player game (Algorithm 2). With
    ``total=True`` one constraint bounds the sum over the groups.

    Parameters
    ----------
    max_divergence : float
        The cap, ``>= 0``.
    {BOUND_PARAMS_HEAD}
    target : float, default=None
        The reference prevalence in [0, 1] (default: the dataset's weighted prevalence).
    total : bool, default=False
        Bound the sum over the groups instead of each group.
    {BOUND_PARAMS_TAIL}
    """

    target: float | None = field(default=None, kw_only=True)
    total: bool = field(default=False, kw_only=True)

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        max_divergence: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _validate(self):
        super()._validate()
        if self.target is not None:
            check_number(type(self).__name__, "target", self.target, lo=0.0, hi=1.0)

    def _constraint(self, ctx):
        return kl_divergence(ctx, self.target) <= self.max_divergence

    def _build(self, ds):
        if not self.total:
            return super()._build(ds)
        parts = [kl_divergence(ctx, self.target) for ctx in self._contexts(ds, self.group, self.values)]
        return [sum(parts) <= self.max_divergence]


@bound_goal("min_gmean")
class GMeanFloor(BoundGoal):
    __doc__ = f"""G-mean floor: ``sqrt(TPR * TNR) >= min_gmean`` (per group or overall).

    Stated on the convex loss (``1 - G-mean <= 1 - min_gmean``), trained by the
    three-player game (Narasimhan et al., 2019, Algorithm 2). Needs labels.

    Parameters
    ----------
    min_gmean : float
        The floor, in [0, 1].
    {BOUND_PARAMS}
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        min_gmean: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _constraint(self, ctx):
        return g_mean(ctx) >= self.min_gmean


@bound_goal("min_f")
class FMeasureFloor(BoundGoal):
    __doc__ = f"""F-measure floor: ``F_beta >= min_f`` (per group or overall), a *linear* constraint.

    ``(1 + b^2) TP / ((1 + b^2) TP + b^2 FN + FP) >= min_f`` is rewritten
    ``(1 + b^2) TP >= min_f ((1 + b^2) TP + b^2 FN + FP)`` (equivalent whenever
    the subset has a positive example), so every game trains it (Goh et al. (2016)'s
    F-measure floor; Narasimhan et al., 2019, remarks the same rewrite). Needs labels.

    Parameters
    ----------
    min_f : float
        The floor, in [0, 1].
    {BOUND_PARAMS_HEAD}
    beta : float, default=1.0
        The weight of recall.
    {BOUND_PARAMS_TAIL}
    """

    beta: float = field(default=1.0, kw_only=True)

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        min_f: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _validate(self):
        super()._validate()
        check_number(type(self).__name__, "beta", self.beta, lo=0.0, lo_open=True)

    def _constraint(self, ctx):
        return f_measure(ctx, self.beta) >= self.min_f


@goal_fields(values=False)
class RocAucFloor(Goal):
    """ROC-AUC floor through L FPR slices with trainable thresholds (methods_spec §D.5).

    Binds to the L linear rate constraints of :func:`rateopt.metrics.roc_auc`:
    ``FPR(h - b_l) <= l/L`` for l = 1..L-1 and
    ``(1/L)(sum_{l<L} TPR(h - b_l) + 1) >= min_auc``, with new trainable
    thresholds ``b_l`` at every bind. Any model meeting them (with some
    thresholds) has training ``AUC >= min_auc - 1/L``. The trained
    classifier is the plain model; the thresholds are training variables.
    Needs labels.

    Parameters
    ----------
    min_auc : float
        The floor kappa, in [0, 1].
    L : int, default=10
        Number of FPR slices (>= 2).
    dataset : str, default="train"
        Role of the dataset the goal applies to.
    name : str, default=None
        Prefix of the constraint names (default ``"roc_auc"``).

    See Also
    --------
    rateopt.metrics.roc_auc : The slice form, also as an objective.
    rateopt.metrics.roc_auc_lj : The exact L-slice AUC of scores.
    """

    min_auc: float
    L: int = 10

    def _validate(self):
        check_number(type(self).__name__, "min_auc", self.min_auc, lo=0.0, hi=1.0)
        check_slices(self.L)

    def bind(self, datasets) -> list:
        """Build the goal's L constraints on actual data (new thresholds each time).

        Parameters
        ----------
        datasets : Dataset, mapping of str to Dataset, or sequence of Dataset
            As :meth:`Goal.bind`.

        Returns
        -------
        list of Constraint
            The L-1 FPR slice constraints, then the slice bound's floor.
        """
        ds = self._resolve(datasets)
        return roc_auc(ds, self.L, name=self.name or "roc_auc") >= self.min_auc



# Lower-case spellings, as used in the docs: ``rateopt.goals.f_measure_parity("sex", slack=0.02)``.
f_measure_parity = FMeasureParity
predictive_parity = PredictiveParity
kl_divergence_cap = KLDivergenceCap
g_mean_floor = GMeanFloor
f_measure_floor = FMeasureFloor
roc_auc_floor = RocAucFloor
