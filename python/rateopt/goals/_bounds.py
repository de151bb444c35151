"""Floors and caps: a bound on one rate per group (or on the whole dataset).

Coverage, accuracy, recall, churn, and the linear forms of the precision,
win-loss and win-change ratio floors (Cotter et al., 2018, Eqs. 9 to 13, Cotter et al. (2019) Table 3,
Goh et al. (2016) Table 4). Each recipe is a :class:`~rateopt.goals._base.BoundGoal`
declared by :func:`~rateopt.goals._base.bound_goal` with its bound's name; the


class body holds only its options and its constraint.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from rateopt._language import _rates as R
from rateopt.exceptions import RateoptError
from rateopt.goals._base import BOUND_PARAMS, BoundGoal, bound_goal

__all__ = ["ChurnCap", "CoverageBudget", "DecisionRulePrior", "LossOnlyChurnCap", "MinimumAccuracy",
           "MinimumCoverage", "PrecisionFloor", "RecallFloor", "SteeringAccuracy", "WinChangeRatioFloor",
           "WinLossRatioFloor", "churn_cap", "coverage_budget", "decision_rule_prior", "loss_only_churn_cap",
           "minimum_accuracy", "minimum_coverage", "precision_floor", "recall_floor", "steering_accuracy",
           "win_change_ratio_floor", "win_loss_ratio_floor"]


def _fmt(x: float) -> str:
    return f"{x:.6g}"


@bound_goal("min_rate")
class MinimumCoverage(BoundGoal):
    __doc__ = f"""Minimum coverage: ``ppr(D_k) >= min_rate`` for every group.

    Cotter et al. (2019) Table 3. Needs no labels (use an unlabeled dataset role if you like).

    Parameters
    ----------
    min_rate : float
        The floor, in [0, 1].
    {BOUND_PARAMS}
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        min_rate: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _constraint(self, ctx):
        return R.positive_prediction_rate(ctx) >= self.min_rate


@bound_goal("max_rate")
class CoverageBudget(BoundGoal):
    __doc__ = f"""Coverage budget: ``ppr(D_k) <= max_rate`` (e.g. "at most 10% get a catalog").

    Parameters
    ----------
    max_rate : float
        The cap, in [0, 1].
    {BOUND_PARAMS}
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        max_rate: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _constraint(self, ctx):
        return R.positive_prediction_rate(ctx) <= self.max_rate


@bound_goal("min_accuracy")
class MinimumAccuracy(BoundGoal):
    __doc__ = f"""Minimum accuracy: ``accuracy(D_k) >= min_accuracy`` for every group.

    Cotter et al. (2019) Table 3. Needs labels.

    Parameters
    ----------
    min_accuracy : float
        The floor, in [0, 1].
    {BOUND_PARAMS}
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        min_accuracy: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _constraint(self, ctx):
        return R.accuracy(ctx) >= self.min_accuracy


@bound_goal("min_recall")
class RecallFloor(BoundGoal):
    __doc__ = f"""Recall floor: ``tpr(D_k) >= min_recall``.

    Cotter et al. (2019) Sec. 3.2 (e.g. 95% recall); Goh et al. (2016), Neyman-Pearson. Needs labels.

    Parameters
    ----------
    min_recall : float
        The floor, in [0, 1].
    {BOUND_PARAMS}
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        min_recall: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _constraint(self, ctx):
        return R.true_positive_rate(ctx) >= self.min_recall


@bound_goal("min_precision")
class PrecisionFloor(BoundGoal):
    __doc__ = f"""Precision floor in the linear form of Cotter et al. (2018) Eq. 9.

    ``precision >= k`` is written ``c+(D[y=1]) - k c+(D) >= 0``; divided by
    ``W(D)`` it is ``tp_prop(D) - k ppr(D) >= 0``, affine in the atoms. The
    constraint is named ``"precision[<subset>] >= k"``. Its value ``g`` is *not*
    a precision gap: a violation of ``eps`` means ``TP - k (TP + FP)`` falls
    short by ``eps W(D)`` (see the paper's caveat on ratio metrics). Needs labels.

    Parameters
    ----------
    min_precision : float
        The floor ``k``, in [0, 1].
    {BOUND_PARAMS}
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        min_precision: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _constraint(self, ctx):
        k = self.min_precision
        c = R.true_positive_proportion(ctx) - k * R.positive_prediction_rate(ctx) >= 0.0
        return c.named(f"precision[{ctx.label}] >= {_fmt(k)}")


@bound_goal("min_ratio", hi=None)
class WinLossRatioFloor(BoundGoal):
    __doc__ = f"""Win-loss ratio floor in the linear form of Cotter et al. (2018) Eq. 11.

    ``wins / losses >= k`` against the baseline is written ``wins - k losses >=
    0``; divided by ``W(D)``: ``win_rate(D) - k loss_rate(D) >= 0``. Named
    ``"win_loss_ratio[<subset>] >= k"``. Needs labels and baseline decisions.

    Parameters
    ----------
    min_ratio : float
        The floor ``k >= 0``.
    {BOUND_PARAMS}
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        min_ratio: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _constraint(self, ctx):
        k = self.min_ratio
        c = R.win_rate(ctx) - k * R.loss_rate(ctx) >= 0.0
        return c.named(f"win_loss_ratio[{ctx.label}] >= {_fmt(k)}")


@bound_goal("max_churn")
class ChurnCap(BoundGoal):
    __doc__ = f"""Churn cap (Cotter et al., 2018, Eq. 12): ``churn(D_k) <= max_churn``.

    ``c+(D[b=0]) + c-(D[b=1]) <= k |D|`` divided by ``W(D)``; constraining
    churn per slice (``group=``) is suggested in the paper. Needs baseline
    decisions, not labels (apply it to a large unlabeled dataset with
    ``dataset="unlabeled"``).

    Parameters
    ----------
    max_churn : float
        The cap, in [0, 1].
    {BOUND_PARAMS}
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        max_churn: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _constraint(self, ctx):
        return R.churn_rate(ctx) <= self.max_churn


@bound_goal("max_churn", options_first=True)
class LossOnlyChurnCap(BoundGoal):
    __doc__ = """Loss-only churn cap (Cotter et al., 2018, Eq. 13): ``loss_churn(D_k) <= max_churn``.

    Only changes away from a correct baseline decision count. With
    ``normalize="all"`` (Eq. 13) the count is divided by ``W(D)``; with
    ``"baseline_correct"`` by ``W(D[b=y])`` (the paper's Table 1 and
    Filtering experiment). Needs labels and baseline decisions.

    Parameters
    ----------
    max_churn : float
        The cap, in [0, 1].
    group : str or tuple of str, default=None
        Group column(s) (e.g. the Filtering experiment's regions).
    normalize : {"all", "baseline_correct"}, default="all"
        The denominator.
    values : tuple, default=None
        Restrict to these group values.
    dataset : str, default="train"
        Role of the dataset the goal applies to.
    name : str, default=None
        Prefix of the constraint names.
    """

    normalize: str = field(default="all", kw_only=True)

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        max_churn: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _validate(self):
        super()._validate()
        if self.normalize not in ("all", "baseline_correct"):
            raise RateoptError(
                f"LossOnlyChurnCap: normalize must be 'all' or 'baseline_correct', "
                f"got {self.normalize!r}"
            )

    def _constraint(self, ctx):
        return R.loss_only_churn_rate(ctx, self.normalize) <= self.max_churn


@bound_goal("min_accuracy", grouped=False, dataset="steering")
class SteeringAccuracy(BoundGoal):
    """Minimum accuracy on a steering (or egregious-examples) dataset.

    ``accuracy(D_steer) >= min_accuracy`` on a small expert-labeled dataset,
    while the objective is trained on large noisy data (Cotter et al., 2019, Sec. 3.5).

    Parameters
    ----------
    min_accuracy : float
        The floor, in [0, 1].
    dataset : str, default="steering"
        Role of the steering dataset.
    name : str, default=None
        Prefix of the constraint names.
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        min_accuracy: float

    def _constraint(self, ctx):
        return R.accuracy(ctx) >= self.min_accuracy


@bound_goal("min_accuracy", grouped=False, dataset="rule")
class DecisionRulePrior(BoundGoal):
    """Decision-rule prior: minimum agreement with a rule on a rule-labeled dataset.

    Label a (typically large, unlabeled) dataset with a decision rule and
    constrain the accuracy against those labels: ``accuracy(D_rule) >=
    min_accuracy`` (Cotter et al., 2019, Sec. 3.5).

    Parameters
    ----------
    min_accuracy : float
        The floor, in [0, 1].
    dataset : str, default="rule"
        Role of the rule-labeled dataset.
    name : str, default=None
        Prefix of the constraint names.
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        min_accuracy: float

    def _constraint(self, ctx):
        return R.accuracy(ctx) >= self.min_accuracy


@bound_goal("min_ratio")
class WinChangeRatioFloor(BoundGoal):
    __doc__ = f"""Win-change ratio floor (Goh et al., 2016, Table 4), linear: ``wins / changes >= k``.

    Against the baseline, every change of a binary decision is a win or a
    loss, so ``wins >= k (wins + losses)`` is ``(1 - k) win_rate(D) - k
    loss_rate(D) >= 0`` (divided by ``W(D)``), affine in the rates: every game
    and :func:`rateopt.ramp_mm` take it. Named ``"win_change_ratio[<subset>] >=
    k"``; its value is ``(k changes - wins) / W(D)``. Needs labels and baseline
    decisions.

    Parameters
    ----------
    min_ratio : float
        The floor ``k``, in [0, 1].
    {BOUND_PARAMS}
    """

    if TYPE_CHECKING:  # the fields bound_goal adds, for type checkers (the runtime's are in the dataclass)
        min_ratio: float
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    def _constraint(self, ctx):
        k = self.min_ratio
        c = (1.0 - k) * R.win_rate(ctx) - k * R.loss_rate(ctx) >= 0.0
        return c.named(f"win_change_ratio[{ctx.label}] >= {_fmt(k)}")



# Lower-case spellings, as used in the docs: ``rateopt.goals.recall_floor(0.9)``.
minimum_coverage = MinimumCoverage
coverage_budget = CoverageBudget
minimum_accuracy = MinimumAccuracy
recall_floor = RecallFloor
precision_floor = PrecisionFloor
win_loss_ratio_floor = WinLossRatioFloor
churn_cap = ChurnCap
loss_only_churn_cap = LossOnlyChurnCap
steering_accuracy = SteeringAccuracy
decision_rule_prior = DecisionRulePrior
win_change_ratio_floor = WinChangeRatioFloor
