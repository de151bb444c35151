"""Goals: data-independent recipes for families of rate constraints.

A goal (e.g. ``equal_opportunity("sex", slack=0.05)``) is a small frozen
object holding only simple parameters (group column, slack, bound, dataset
role), so a scikit-learn estimator can take it as a parameter, print it and
clone it. :meth:`Goal.bind` turns it into :class:`~rateopt._language._rates.Constraint`
objects on actual datasets; :class:`~rateopt.Problem` binds goals passed
among its constraints.

Goals over a group column give constraints for every group value (sorted,
missing values left out; ``values=`` restricts them), or for every ordered
pair of values when ``pairwise=True``. Two-sided goals (``sides="both"``) give,
per group, the ``<=`` constraint then the ``>=`` one; goals with several rates
(equalized odds: TPR then FPR) give all groups for the first rate first.

Slack is additive by default (seed 001 Sec. 3.7): ``rate(g) >= rate(all) -
slack``. With ``multiplicative=True`` the slack is a relative shortfall, the
ratio ``r = 1 - slack``: ``rate(g) >= r * rate(all)`` and ``r * rate(g) <=
rate(all)``; e.g. the "80% rule" is ``demographic_parity(group, slack=0.2,
multiplicative=True)``.

The seed tables' rows map to goals as follows: statistical/demographic parity
:class:`DemographicParity`; minimum coverage :class:`MinimumCoverage`;
coverage budget :class:`CoverageBudget`; no lost benefits
:class:`NoLostBenefits`; accurate coverage :class:`AccurateCoverage`; equal
opportunity :class:`EqualOpportunity`; equalized odds
:class:`EqualizedOdds`; equal accuracy :class:`EqualAccuracy`; minimum
accuracy :class:`MinimumAccuracy`; not worse off :class:`NotWorseOff`; recall
floor :class:`RecallFloor`; precision floor (seed 000 Eq. 9)
:class:`PrecisionFloor`; win-loss ratio floor (Eq. 11)
:class:`WinLossRatioFloor`; churn cap (Eq. 12) :class:`ChurnCap`; loss-only
churn cap (Eq. 13) :class:`LossOnlyChurnCap`; steering/egregious examples
:class:`SteeringAccuracy`; decision-rule prior :class:`DecisionRulePrior`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import ClassVar

from rateopt._language import _rates as R
from rateopt._language._data import Dataset
from rateopt.exceptions import RateoptError

__all__ = [
    "Goal",
    "DemographicParity",
    "MinimumCoverage",
    "CoverageBudget",
    "NoLostBenefits",
    "AccurateCoverage",
    "EqualOpportunity",
    "EqualizedOdds",
    "EqualAccuracy",
    "MinimumAccuracy",
    "NotWorseOff",
    "RecallFloor",
    "PrecisionFloor",
    "WinLossRatioFloor",
    "ChurnCap",
    "LossOnlyChurnCap",
    "SteeringAccuracy",
    "DecisionRulePrior",
    "demographic_parity",
    "statistical_parity",
    "minimum_coverage",
    "coverage_budget",
    "no_lost_benefits",
    "accurate_coverage",
    "equal_opportunity",
    "equalized_odds",
    "equal_accuracy",
    "minimum_accuracy",
    "not_worse_off",
    "recall_floor",
    "precision_floor",
    "win_loss_ratio_floor",
    "churn_cap",
    "loss_only_churn_cap",
    "steering_accuracy",
    "decision_rule_prior",
    "FMeasureParity",
    "PredictiveParity",
    "KLDivergenceCap",
    "GMeanFloor",
    "FMeasureFloor",
    "f_measure_parity",
    "predictive_parity",
    "kl_divergence_cap",
    "g_mean_floor",
    "f_measure_floor",
    "OBJECTIVES",
    "objective",
]


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _check_number(owner, name, value, lo=None, hi=None, lo_open=False, hi_open=False):
    try:
        v = R._as_scalar(value)
    except ValueError:  # NaN or inf
        v = None
    if v is None or not math.isfinite(v):
        raise RateoptError(f"{owner}: {name} must be a finite number, got {value!r}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise RateoptError(f"{owner}: {name} must be {'>' if lo_open else '>='} {lo}, got {value!r}")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise RateoptError(f"{owner}: {name} must be {'<' if hi_open else '<='} {hi}, got {value!r}")
    return v


@dataclass(frozen=True, repr=False)
class Goal:
    """Base class of goals: a recipe for rate constraints, bound to data later.

    Every goal is a frozen dataclass of simple parameters; besides its own, each
    has the two below (its last two, keyword-only parameters).

    Attributes
    ----------
    dataset : str
        The role of the dataset the goal applies to (see :meth:`bind`);
        ``"train"`` unless stated otherwise.
    name : str or None
        Prefix of the constraint names (``"<name>: <constraint>"``); ``None``:
        the constraints' readable forms.
    """

    # Subclasses declare ``dataset`` and ``name`` as their last fields, so that
    # the signature reads (goal parameters..., dataset=..., name=...).

    def __post_init__(self):
        if not isinstance(self.dataset, str) or not self.dataset:
            raise RateoptError(f"{type(self).__name__}: dataset must be a non-empty string")
        if self.name is not None and (not isinstance(self.name, str) or not self.name):
            raise RateoptError(f"{type(self).__name__}: name must be a non-empty string or None")
        for f in fields(self):
            if f.name in ("values", "group") and isinstance(getattr(self, f.name), list):
                object.__setattr__(self, f.name, tuple(getattr(self, f.name)))
        self._validate()

    def _validate(self):  # pragma: no cover - overridden
        pass

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            v = getattr(self, f.name)
            if f.kw_only and f.default is not MISSING and v == f.default:
                continue
            parts.append(f"{f.name}={v!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def get_params(self, deep: bool = True) -> dict:
        """The goal's parameters.

        Parameters
        ----------
        deep : bool, default=True
            Ignored (goals hold no nested objects); kept for scikit-learn.

        Returns
        -------
        dict
            Parameter names mapped to values; ``type(goal)(**params)`` rebuilds it.
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def bind(self, datasets) -> list:
        """Build the goal's constraints on actual data.

        Parameters
        ----------
        datasets : Dataset, mapping of str to Dataset, or sequence of Dataset
            One dataset (used whatever the goal's role), a mapping from role to
            dataset, or a sequence of datasets looked up by name.

        Returns
        -------
        list of Constraint
            The constraints, named.

        Raises
        ------
        RateoptError
            If no dataset fills the goal's role, or a group column is unknown or
            has no values.
        """
        ds = self._resolve(datasets)
        cons = self._build(ds)
        if self.name is None:
            return cons
        return [c.named(f"{self.name}: {c.name}") for c in cons]

    def _resolve(self, datasets) -> Dataset:
        if isinstance(datasets, Dataset):
            return datasets
        if isinstance(datasets, Mapping):
            if self.dataset not in datasets:
                raise RateoptError(
                    f"{type(self).__name__} applies to dataset role {self.dataset!r}, which is "
                    f"not among the datasets given: {list(datasets)!r}"
                )
            ds = datasets[self.dataset]
        else:
            matches = [d for d in datasets if d.name == self.dataset]
            if not matches:
                raise RateoptError(
                    f"{type(self).__name__} applies to the dataset named {self.dataset!r}, "
                    f"which is not among the datasets given: {[d.name for d in datasets]!r}"
                )
            ds = matches[0]
        if not isinstance(ds, Dataset):
            raise TypeError(f"expected a Dataset for role {self.dataset!r}, got {type(ds).__name__}")
        return ds

    def _build(self, ds: Dataset) -> list:  # pragma: no cover - abstract
        raise NotImplementedError

    def _contexts(self, ds: Dataset, group, values) -> list:
        """Contexts of each group value (or the whole dataset when group is None)."""
        ctx = ds.context()
        if group is None:
            if values is not None:
                raise RateoptError(f"{type(self).__name__}: values= needs group=")
            return [ctx]
        columns = (group,) if not isinstance(group, tuple) else group
        if values is not None and len(columns) != 1:
            raise RateoptError(f"{type(self).__name__}: values= needs a single group column")
        out = []
        for col in columns:
            vals = values if values is not None else tuple(ds.group_values(col).tolist())
            if len(vals) == 0:
                raise RateoptError(
                    f"{type(self).__name__}: group column {col!r} of dataset {ds.name!r} has "
                    "no (non-missing) values"
                )
            out.extend(ctx.subset(group=col, value=v) for v in vals)
        return out


def _validate_group(owner, group, required):
    if group is None:
        if required:
            raise RateoptError(f"{owner}: group must name a group column")
        return
    cols = group if isinstance(group, tuple) else (group,)
    if not cols:
        raise RateoptError(f"{owner}: group is empty")


def _relative(lhs, ref, slack, multiplicative, sides):
    """``lhs`` within ``slack`` of ``ref`` (additive or multiplicative), ``<=`` first."""
    out = []
    if multiplicative:
        r = 1.0 - slack
        if sides in ("both", "upper"):
            out.append((r * lhs if r != 1.0 else lhs) <= ref)
        if sides in ("both", "lower"):
            out.append(lhs >= (r * ref if r != 1.0 else ref))
    else:
        if sides in ("both", "upper"):
            out.append(lhs <= (ref + slack if slack else ref))
        if sides in ("both", "lower"):
            out.append(lhs >= (ref - slack if slack else ref))
    return out


_SIDES = ("both", "lower", "upper")


# --------------------------------------------------------------------------- parity goals


@dataclass(frozen=True, repr=False)
class _ParityGoal(Goal):
    group: str | tuple
    slack: float = 0.0
    pairwise: bool = field(default=False, kw_only=True)
    multiplicative: bool = field(default=False, kw_only=True)
    sides: str = field(default="both", kw_only=True)
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)

    _rate_fns: ClassVar[tuple] = ()

    def _validate(self):
        owner = type(self).__name__
        _validate_group(owner, self.group, required=True)
        _check_number(owner, "slack", self.slack, lo=0.0, hi=1.0, hi_open=self.multiplicative)
        if self.sides not in _SIDES:
            raise RateoptError(f"{owner}: sides must be one of {_SIDES}, got {self.sides!r}")

    def _build(self, ds):
        groups = self._contexts(ds, self.group, self.values)
        out = []
        for fn in self._rate_fns:
            if self.pairwise:
                for gj in groups:
                    for gk in groups:
                        if gj is gk:
                            continue
                        a, b = fn(gj), fn(gk)
                        if self.multiplicative:
                            r = 1.0 - self.slack
                            out.append((r * a if r != 1.0 else a) <= b)
                        else:
                            out.append(a <= (b + self.slack if self.slack else b))
            else:
                ref = fn(ds.context())
                for g in groups:
                    out.extend(_relative(fn(g), ref, self.slack, self.multiplicative, self.sides))
        return out


_PARITY_PARAMS = """group : str or tuple of str
        Group column(s) of the dataset; every value of each column is a group.
    slack : float, default=0.0
        Additive slack in [0, 1], or with ``multiplicative=True`` the relative
        shortfall in [0, 1) (ratio ``1 - slack``).
    pairwise : bool, default=False
        Compare every ordered pair of groups (``rate(g_j) <= rate(g_k) +
        slack``) instead of each group with the whole dataset.
    multiplicative : bool, default=False
        Multiplicative slack (see the module docstring).
    sides : {"both", "lower", "upper"}, default="both"
        Against the whole dataset: both inequalities, or only
        ``rate(g) >= ...`` ("lower") or only ``rate(g) <= ...`` ("upper").
        Ignored when ``pairwise`` (which is symmetric).
    values : tuple, default=None
        Restrict to these group values (a single column only).
    dataset : str, default="train"
        Role of the dataset the goal applies to.
    name : str, default=None
        Prefix of the constraint names."""


@dataclass(frozen=True, repr=False)
class DemographicParity(_ParityGoal):
    __doc__ = f"""Statistical (demographic) parity: equal positive prediction rates.

    ``ppr(D_k)`` within ``slack`` of ``ppr(D)`` for every group ``k`` (seed 001
    Table 3, "statistical parity"; seed 004 "fairness constraint"), or of every
    other group when ``pairwise``. Needs no labels.

    Parameters
    ----------
    {_PARITY_PARAMS}

    See Also
    --------
    EqualOpportunity : The same on true positive rates.
    EqualizedOdds : The same on true and false positive rates.

    Examples
    --------
    >>> from rateopt.goals import demographic_parity
    >>> demographic_parity("race", slack=0.02)
    DemographicParity(group='race', slack=0.02)
    >>> demographic_parity("race", slack=0.2, multiplicative=True)  # the 80% rule
    DemographicParity(group='race', slack=0.2, multiplicative=True)
    """

    _rate_fns: ClassVar[tuple] = (R.positive_prediction_rate,)


@dataclass(frozen=True, repr=False)
class EqualOpportunity(_ParityGoal):
    __doc__ = f"""Equal opportunity: equal true positive rates across groups.

    ``tpr(D_k)`` within ``slack`` of ``tpr(D)`` for every group ``k`` (seed 001
    Table 3; Hardt et al. 2016). Needs labels.

    Parameters
    ----------
    {_PARITY_PARAMS}

    See Also
    --------
    EqualizedOdds : Also equal false positive rates.
    DemographicParity : The same on positive prediction rates.
    """

    _rate_fns: ClassVar[tuple] = (R.true_positive_rate,)


@dataclass(frozen=True, repr=False)
class EqualizedOdds(_ParityGoal):
    __doc__ = f"""Equalized odds: equal true and false positive rates across groups.

    The constraints of equal opportunity on ``tpr`` followed by the same on
    ``fpr`` (seed 001 Table 3, "equal odds"). Needs labels.

    Parameters
    ----------
    {_PARITY_PARAMS}

    See Also
    --------
    EqualOpportunity : True positive rates only.
    """

    _rate_fns: ClassVar[tuple] = (R.true_positive_rate, R.false_positive_rate)


@dataclass(frozen=True, repr=False)
class EqualAccuracy(_ParityGoal):
    __doc__ = f"""Equal accuracy across groups.

    ``accuracy(D_k)`` within ``slack`` of ``accuracy(D)`` (seed 001 Table 3).
    Needs labels.

    Parameters
    ----------
    {_PARITY_PARAMS}

    See Also
    --------
    MinimumAccuracy : A floor on each group's accuracy.
    NotWorseOff : Each group's accuracy at least the baseline's.
    """

    _rate_fns: ClassVar[tuple] = (R.accuracy,)


# --------------------------------------------------------------------------- data-relative goals


@dataclass(frozen=True, repr=False)
class _RelativeGoal(Goal):
    group: str | tuple | None = None
    slack: float = 0.0
    multiplicative: bool = field(default=False, kw_only=True)
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)

    _sides: ClassVar[str] = "lower"

    def _validate(self):
        owner = type(self).__name__
        _validate_group(owner, self.group, required=False)
        _check_number(owner, "slack", self.slack, lo=0.0, hi=1.0, hi_open=self.multiplicative)

    def _pair(self, ctx):  # pragma: no cover - abstract
        raise NotImplementedError

    def _build(self, ds):
        out = []
        for g in self._contexts(ds, self.group, self.values):
            lhs, ref = self._pair(g)
            out.extend(_relative(lhs, ref, self.slack, self.multiplicative, self._sides))
        return out


_RELATIVE_PARAMS = """group : str or tuple of str, default=None
        Group column(s); ``None`` applies the goal to the whole dataset.
    slack : float, default=0.0
        Additive slack in [0, 1], or with ``multiplicative=True`` the relative
        shortfall in [0, 1).
    multiplicative : bool, default=False
        Multiplicative slack.
    values : tuple, default=None
        Restrict to these group values (a single column only).
    dataset : str, default="train"
        Role of the dataset the goal applies to.
    name : str, default=None
        Prefix of the constraint names."""


@dataclass(frozen=True, repr=False)
class NoLostBenefits(_RelativeGoal):
    __doc__ = f"""No lost benefits: no group gets fewer positives than from the baseline.

    Each group is classified positive at least as often as by the baseline model:
    ``ppr(D_k) >= baseline_ppr(D_k) - slack`` (seed 001 Table 3), where
    ``baseline_ppr`` is the baseline's weighted positive rate on the group (a
    data constant). Needs baseline decisions, not labels.

    Parameters
    ----------
    {_RELATIVE_PARAMS}
    """

    def _pair(self, ctx):
        return R.positive_prediction_rate(ctx), R.baseline_positive_rate(ctx)


@dataclass(frozen=True, repr=False)
class NotWorseOff(_RelativeGoal):
    __doc__ = f"""Not worse off: each group's accuracy is at least the baseline model's.

    ``accuracy(D_k) >= baseline_accuracy(D_k) - slack`` (seed 001 Table 3).
    Needs labels and baseline decisions.

    Parameters
    ----------
    {_RELATIVE_PARAMS}
    """

    def _pair(self, ctx):
        return R.accuracy(ctx), R.baseline_accuracy(ctx)


@dataclass(frozen=True, repr=False)
class AccurateCoverage(_RelativeGoal):
    __doc__ = f"""Accurate coverage: each group's positive rate matches its label prevalence.

    ``ppr(D_k)`` within ``slack`` of ``prevalence(D_k) = W(D_k[y=1]) / W(D_k)``
    (seed 001 Table 3), both inequalities. Needs labels.

    Parameters
    ----------
    {_RELATIVE_PARAMS}
    """

    _sides: ClassVar[str] = "both"

    def _pair(self, ctx):
        return R.positive_prediction_rate(ctx), R.prevalence(ctx)


# --------------------------------------------------------------------------- floors and caps


@dataclass(frozen=True, repr=False)
class _BoundGoal(Goal):
    """A bound on one rate per group (or on the whole dataset)."""

    bound: ClassVar[str] = ""
    _lo: ClassVar[float] = 0.0
    _hi: ClassVar[float | None] = 1.0

    def _validate(self):
        owner = type(self).__name__
        _validate_group(owner, getattr(self, "group", None), required=False)
        _check_number(owner, self.bound, getattr(self, self.bound), lo=self._lo, hi=self._hi)

    def _build(self, ds):
        return [
            self._constraint(ctx)
            for ctx in self._contexts(ds, getattr(self, "group", None), getattr(self, "values", None))
        ]


_BOUND_PARAMS = """group : str or tuple of str, default=None
        Group column(s): one constraint per group value; ``None``: one on the
        whole dataset.
    values : tuple, default=None
        Restrict to these group values (a single column only).
    dataset : str, default="train"
        Role of the dataset the goal applies to.
    name : str, default=None
        Prefix of the constraint names."""


@dataclass(frozen=True, repr=False)
class MinimumCoverage(_BoundGoal):
    __doc__ = f"""Minimum coverage: ``ppr(D_k) >= min_rate`` for every group.

    Seed 001 Table 3. Needs no labels (use an unlabeled dataset role if you like).

    Parameters
    ----------
    min_rate : float
        The floor, in [0, 1].
    {_BOUND_PARAMS}
    """

    min_rate: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_rate"

    def _constraint(self, ctx):
        return R.positive_prediction_rate(ctx) >= self.min_rate


@dataclass(frozen=True, repr=False)
class CoverageBudget(_BoundGoal):
    __doc__ = f"""Coverage budget: ``ppr(D_k) <= max_rate`` (e.g. "at most 10% get a catalog").

    Parameters
    ----------
    max_rate : float
        The cap, in [0, 1].
    {_BOUND_PARAMS}
    """

    max_rate: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "max_rate"

    def _constraint(self, ctx):
        return R.positive_prediction_rate(ctx) <= self.max_rate


@dataclass(frozen=True, repr=False)
class MinimumAccuracy(_BoundGoal):
    __doc__ = f"""Minimum accuracy: ``accuracy(D_k) >= min_accuracy`` for every group.

    Seed 001 Table 3. Needs labels.

    Parameters
    ----------
    min_accuracy : float
        The floor, in [0, 1].
    {_BOUND_PARAMS}
    """

    min_accuracy: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_accuracy"

    def _constraint(self, ctx):
        return R.accuracy(ctx) >= self.min_accuracy


@dataclass(frozen=True, repr=False)
class RecallFloor(_BoundGoal):
    __doc__ = f"""Recall floor: ``tpr(D_k) >= min_recall``.

    Seed 001 Sec. 3.2 (e.g. 95% recall); seed 004 Neyman-Pearson. Needs labels.

    Parameters
    ----------
    min_recall : float
        The floor, in [0, 1].
    {_BOUND_PARAMS}
    """

    min_recall: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_recall"

    def _constraint(self, ctx):
        return R.true_positive_rate(ctx) >= self.min_recall


@dataclass(frozen=True, repr=False)
class PrecisionFloor(_BoundGoal):
    __doc__ = f"""Precision floor in the linear form of seed 000 Eq. 9.

    ``precision >= k`` is written ``c+(D[y=1]) - k c+(D) >= 0``; divided by
    ``W(D)`` it is ``tp_prop(D) - k ppr(D) >= 0``, affine in the atoms. The
    constraint is named ``"precision[<subset>] >= k"``. Its value ``g`` is *not*
    a precision gap: a violation of ``eps`` means ``TP - k (TP + FP)`` falls
    short by ``eps W(D)`` (see the paper's caveat on ratio metrics). Needs labels.

    Parameters
    ----------
    min_precision : float
        The floor ``k``, in [0, 1].
    {_BOUND_PARAMS}
    """

    min_precision: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_precision"

    def _constraint(self, ctx):
        k = self.min_precision
        c = R.true_positive_proportion(ctx) - k * R.positive_prediction_rate(ctx) >= 0.0
        return c.named(f"precision[{ctx.label}] >= {_fmt(k)}")


@dataclass(frozen=True, repr=False)
class WinLossRatioFloor(_BoundGoal):
    __doc__ = f"""Win-loss ratio floor in the linear form of seed 000 Eq. 11.

    ``wins / losses >= k`` against the baseline is written ``wins - k losses >=
    0``; divided by ``W(D)``: ``win_rate(D) - k loss_rate(D) >= 0``. Named
    ``"win_loss_ratio[<subset>] >= k"``. Needs labels and baseline decisions.

    Parameters
    ----------
    min_ratio : float
        The floor ``k >= 0``.
    {_BOUND_PARAMS}
    """

    min_ratio: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_ratio"
    _hi: ClassVar[float | None] = None

    def _constraint(self, ctx):
        k = self.min_ratio
        c = R.win_rate(ctx) - k * R.loss_rate(ctx) >= 0.0
        return c.named(f"win_loss_ratio[{ctx.label}] >= {_fmt(k)}")


@dataclass(frozen=True, repr=False)
class ChurnCap(_BoundGoal):
    __doc__ = f"""Churn cap (seed 000 Eq. 12): ``churn(D_k) <= max_churn``.

    ``c+(D[b=0]) + c-(D[b=1]) <= k |D|`` divided by ``W(D)``; constraining
    churn per slice (``group=``) is suggested in the paper. Needs baseline
    decisions, not labels (apply it to a large unlabeled dataset with
    ``dataset="unlabeled"``).

    Parameters
    ----------
    max_churn : float
        The cap, in [0, 1].
    {_BOUND_PARAMS}
    """

    max_churn: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "max_churn"

    def _constraint(self, ctx):
        return R.churn_rate(ctx) <= self.max_churn


@dataclass(frozen=True, repr=False)
class LossOnlyChurnCap(_BoundGoal):
    __doc__ = """Loss-only churn cap (seed 000 Eq. 13): ``loss_churn(D_k) <= max_churn``.

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

    max_churn: float
    group: str | tuple | None = None
    normalize: str = field(default="all", kw_only=True)
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "max_churn"

    def _validate(self):
        super()._validate()
        if self.normalize not in ("all", "baseline_correct"):
            raise RateoptError(
                f"LossOnlyChurnCap: normalize must be 'all' or 'baseline_correct', "
                f"got {self.normalize!r}"
            )

    def _constraint(self, ctx):
        return R.loss_only_churn_rate(ctx, self.normalize) <= self.max_churn


@dataclass(frozen=True, repr=False)
class SteeringAccuracy(_BoundGoal):
    """Minimum accuracy on a steering (or egregious-examples) dataset.

    ``accuracy(D_steer) >= min_accuracy`` on a small expert-labeled dataset,
    while the objective is trained on large noisy data (seed 001 Sec. 3.5).

    Parameters
    ----------
    min_accuracy : float
        The floor, in [0, 1].
    dataset : str, default="steering"
        Role of the steering dataset.
    name : str, default=None
        Prefix of the constraint names.
    """

    min_accuracy: float
    dataset: str = field(default="steering", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_accuracy"

    def _constraint(self, ctx):
        return R.accuracy(ctx) >= self.min_accuracy


@dataclass(frozen=True, repr=False)
class DecisionRulePrior(_BoundGoal):
    """Decision-rule prior: minimum agreement with a rule on a rule-labeled dataset.

    Label a (typically large, unlabeled) dataset with a decision rule and
    constrain the accuracy against those labels: ``accuracy(D_rule) >=
    min_accuracy`` (seed 001 Sec. 3.5).

    Parameters
    ----------
    min_accuracy : float
        The floor, in [0, 1].
    dataset : str, default="rule"
        Role of the rule-labeled dataset.
    name : str, default=None
        Prefix of the constraint names.
    """

    min_accuracy: float
    dataset: str = field(default="rule", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_accuracy"

    def _constraint(self, ctx):
        return R.accuracy(ctx) >= self.min_accuracy


# --------------------------------------------------------------------------- non-linear metric goals

# _BOUND_PARAMS in two parts, for goals with parameters between ``values`` and ``dataset``.
_BOUND_PARAMS_HEAD, _BOUND_PARAMS_TAIL = _BOUND_PARAMS.split("\n    dataset : str", 1)
_BOUND_PARAMS_TAIL = "dataset : str" + _BOUND_PARAMS_TAIL


def _metrics():
    from rateopt import metrics  # metrics imports the rate layer; goals stays importable on its own

    return metrics


@dataclass(frozen=True, repr=False)
class _MetricParityGoal(Goal):
    group: str | tuple
    slack: float = 0.02
    pairwise: bool = field(default=False, kw_only=True)
    sides: str = field(default="both", kw_only=True)
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)

    def _validate(self):
        owner = type(self).__name__
        _validate_group(owner, self.group, required=True)
        _check_number(owner, "slack", self.slack, lo=0.0, hi=1.0)
        if self.sides not in _SIDES:
            raise RateoptError(f"{owner}: sides must be one of {_SIDES}, got {self.sides!r}")

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
    values : tuple, default=None
        Restrict to these group values (a single column only).
    dataset : str, default="train"
        Role of the dataset the goal applies to.
    name : str, default=None
        Prefix of the constraint names."""


@dataclass(frozen=True, repr=False)
class FMeasureParity(_MetricParityGoal):
    __doc__ = f"""F-measure parity: each group's F-measure within ``slack`` of the whole dataset's.

    A difference of ratios (seed 003 Table 1, "F-measure parity"), trained by
    the three-player game (Algorithm 3); the constraints are
    :class:`rateopt.metrics.MetricConstraint` s on
    :func:`rateopt.metrics.f_measure_parity`. Seed 003's Experiment 2 is
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
        _check_number(type(self).__name__, "beta", self.beta, lo=0.0, lo_open=True)

    def _metric(self, ctx):
        return _metrics().f_measure(ctx, self.beta)


@dataclass(frozen=True, repr=False)
class PredictiveParity(_MetricParityGoal):
    __doc__ = f"""Predictive parity: each group's precision within ``slack`` of the whole dataset's.

    A difference of ratios (seed 003 Table 1), trained by the three-player game
    (Algorithm 3). Needs labels.

    Parameters
    ----------
    {_METRIC_PARITY_PARAMS}
    """

    def _metric(self, ctx):
        return _metrics().precision(ctx)


@dataclass(frozen=True, repr=False)
class KLDivergenceCap(_BoundGoal):
    __doc__ = f"""Demographic parity as a divergence: ``KL(p || ppr(D_k)) <= max_divergence`` per group.

    ``p`` is the dataset's label prevalence (or ``target``); seed 003's KLD
    (Table 1). Convex: trained by the three-player game (Algorithm 2). With
    ``total=True`` one constraint bounds the sum over the groups.

    Parameters
    ----------
    max_divergence : float
        The cap, ``>= 0``.
    {_BOUND_PARAMS_HEAD}
    target : float, default=None
        The reference prevalence in [0, 1] (default: the dataset's weighted prevalence).
    total : bool, default=False
        Bound the sum over the groups instead of each group.
    {_BOUND_PARAMS_TAIL}
    """

    max_divergence: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    target: float | None = field(default=None, kw_only=True)
    total: bool = field(default=False, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "max_divergence"
    _hi: ClassVar[float | None] = None

    def _validate(self):
        super()._validate()
        if self.target is not None:
            _check_number(type(self).__name__, "target", self.target, lo=0.0, hi=1.0)

    def _constraint(self, ctx):
        return _metrics().kl_divergence(ctx, self.target) <= self.max_divergence

    def _build(self, ds):
        if not self.total:
            return super()._build(ds)
        parts = [_metrics().kl_divergence(ctx, self.target) for ctx in self._contexts(ds, self.group, self.values)]
        return [sum(parts) <= self.max_divergence]


@dataclass(frozen=True, repr=False)
class GMeanFloor(_BoundGoal):
    __doc__ = f"""G-mean floor: ``sqrt(TPR * TNR) >= min_gmean`` (per group or overall).

    Stated on the convex loss (``1 - G-mean <= 1 - min_gmean``), trained by the
    three-player game (seed 003 Algorithm 2). Needs labels.

    Parameters
    ----------
    min_gmean : float
        The floor, in [0, 1].
    {_BOUND_PARAMS}
    """

    min_gmean: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_gmean"

    def _constraint(self, ctx):
        return _metrics().g_mean(ctx) >= self.min_gmean


@dataclass(frozen=True, repr=False)
class FMeasureFloor(_BoundGoal):
    __doc__ = f"""F-measure floor: ``F_beta >= min_f`` (per group or overall), a *linear* constraint.

    ``(1 + b^2) TP / ((1 + b^2) TP + b^2 FN + FP) >= min_f`` is rewritten
    ``(1 + b^2) TP >= min_f ((1 + b^2) TP + b^2 FN + FP)`` (equivalent whenever
    the subset has a positive example), so every game trains it (seed 004's
    F-measure floor; seed 003 remarks the same rewrite). Needs labels.

    Parameters
    ----------
    min_f : float
        The floor, in [0, 1].
    {_BOUND_PARAMS_HEAD}
    beta : float, default=1.0
        The weight of recall.
    {_BOUND_PARAMS_TAIL}
    """

    min_f: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    beta: float = field(default=1.0, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_f"

    def _validate(self):
        super()._validate()
        _check_number(type(self).__name__, "beta", self.beta, lo=0.0, lo_open=True)

    def _constraint(self, ctx):
        return _metrics().f_measure(ctx, self.beta) >= self.min_f


# --------------------------------------------------------------------------- objectives by name

#: Objectives the estimator takes by name: what each minimizes on the training data.
OBJECTIVES = {
    "error": "the error rate (the default)",
    "f_measure": "minus the F1 score (maximizes F1; seed 003 Algorithm 3)",
    "g_mean": "1 - G-mean of TPR and TNR (seed 003 Algorithm 2)",
    "h_mean": "1 - H-mean of TPR and TNR",
    "q_mean": "the Q-mean of FPR and FNR",
    "balanced_error": "the mean of FPR and FNR (linear)",
}


def objective(spec, dataset):
    """The objective named (or built) by ``spec``, on ``dataset``.

    Parameters
    ----------
    spec : str, callable or None
        A name of :data:`OBJECTIVES`; a callable taking the training
        :class:`~rateopt.Dataset` and returning a rate expression or a
        :class:`~rateopt.metrics.Metric`; or None (the error rate).
    dataset : Dataset
        The training data.

    Returns
    -------
    Expression or Metric
        What the problem minimizes.

    Raises
    ------
    ValueError
        If the name is unknown or the callable returns something else.
    """
    metrics = _metrics()
    ctx = dataset.context()
    if spec is None or spec == "error":
        return R.error_rate(ctx)
    if callable(spec):
        out = spec(dataset)
        if isinstance(out, (R.Expression, metrics.Metric)):
            return out
        raise ValueError(f"objective callable must return a rate expression or a metric, got {type(out).__name__}")
    builders = {"f_measure": lambda: -metrics.f_measure(ctx), "g_mean": lambda: metrics.g_mean(ctx),
                "h_mean": lambda: metrics.h_mean(ctx), "q_mean": lambda: metrics.q_mean(ctx),
                "balanced_error": lambda: 0.5 * (R.false_positive_rate(ctx) + R.false_negative_rate(ctx))}
    if isinstance(spec, str) and spec in builders:
        return builders[spec]()
    raise ValueError(f"objective must be one of {sorted(OBJECTIVES)}, a callable or None, got {spec!r}")


# Lower-case spellings, as used in the docs: ``rateopt.goals.equal_opportunity("sex", slack=0.05)``.
demographic_parity = DemographicParity
statistical_parity = DemographicParity
minimum_coverage = MinimumCoverage
coverage_budget = CoverageBudget
no_lost_benefits = NoLostBenefits
accurate_coverage = AccurateCoverage
equal_opportunity = EqualOpportunity
equalized_odds = EqualizedOdds
equal_accuracy = EqualAccuracy
minimum_accuracy = MinimumAccuracy
not_worse_off = NotWorseOff
recall_floor = RecallFloor
precision_floor = PrecisionFloor
win_loss_ratio_floor = WinLossRatioFloor
churn_cap = ChurnCap
loss_only_churn_cap = LossOnlyChurnCap
steering_accuracy = SteeringAccuracy
decision_rule_prior = DecisionRulePrior
f_measure_parity = FMeasureParity
predictive_parity = PredictiveParity
kl_divergence_cap = KLDivergenceCap
g_mean_floor = GMeanFloor
f_measure_floor = FMeasureFloor


# --------------------------------------------------------------------------- ROC-AUC floor (issue 11 item 7)


@dataclass(frozen=True, repr=False)
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
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)

    def _validate(self):
        from rateopt._language._auc import _check_slices

        _check_number(type(self).__name__, "min_auc", self.min_auc, lo=0.0, hi=1.0)
        _check_slices(self.L)

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
        from rateopt._language._auc import roc_auc

        ds = self._resolve(datasets)
        return roc_auc(ds, self.L, name=self.name or "roc_auc") >= self.min_auc


roc_auc_floor = RocAucFloor
__all__ += ["RocAucFloor", "roc_auc_floor"]


# --------------------------------------------------------------------------- win/change ratio (seed 004 Table 4)


@dataclass(frozen=True, repr=False)
class WinChangeRatioFloor(_BoundGoal):
    __doc__ = f"""Win-change ratio floor (seed 004 Table 4), linear: ``wins / changes >= k``.

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
    {_BOUND_PARAMS}
    """

    min_ratio: float
    group: str | tuple | None = None
    values: tuple | None = field(default=None, kw_only=True)
    dataset: str = field(default="train", kw_only=True)
    name: str | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_ratio"

    def _constraint(self, ctx):
        k = self.min_ratio
        c = (1.0 - k) * R.win_rate(ctx) - k * R.loss_rate(ctx) >= 0.0
        return c.named(f"win_change_ratio[{ctx.label}] >= {_fmt(k)}")


win_change_ratio_floor = WinChangeRatioFloor
__all__ += ["WinChangeRatioFloor", "win_change_ratio_floor"]
