"""Parity and relative goals: a rate of each group within a slack of a reference.

Parity goals compare a rate of every group with the same rate on the whole
dataset (or on every other group); relative goals compare a group's rate with a
data constant (the baseline's rate, the label prevalence). Both state the
constraints with an additive or a multiplicative slack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from rateopt._language import _rates as R
from rateopt._language._families import GroupFamily
from rateopt.goals._base import GOAL_PARAMS_TAIL, Goal, check_number, goal_fields, validate_group, validate_parity

__all__ = ["AccurateCoverage", "DemographicParity", "EqualAccuracy", "EqualOpportunity", "EqualizedOdds",
           "NoLostBenefits", "NotWorseOff", "accurate_coverage", "demographic_parity", "equal_accuracy",
           "equal_opportunity", "equalized_odds", "no_lost_benefits", "not_worse_off", "relative_bounds", "statistical_parity"]


def relative_bounds(lhs, ref, slack, multiplicative, sides):
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



# --------------------------------------------------------------------------- parity goals
@goal_fields()
class _ParityGoal(Goal):
    group: str | tuple
    slack: float = 0.0
    pairwise: bool = field(default=False, kw_only=True)
    multiplicative: bool = field(default=False, kw_only=True)
    sides: str = field(default="both", kw_only=True)

    _rate_fns: ClassVar[tuple] = ()

    if TYPE_CHECKING:  # the fields goal_fields adds, for type checkers (the runtime's are in the dataclass)
        values: tuple | None = field(default=None, kw_only=True)

    def _validate(self):
        validate_parity(self, hi_open=self.multiplicative)

    def bind_batched(self, datasets):
        """One batched family of the goal's constraints (see :meth:`Goal.bind_batched`); None when pairwise.

        Parameters
        ----------
        datasets : Dataset, mapping of str to Dataset, or sequence of Dataset
            As :meth:`bind`'s.

        Returns
        -------
        GroupFamily or None
            The family; None when the goal is pairwise, or a group, a value or a rate is not one the family
            can state (then :meth:`bind` does).
        """
        if self.pairwise:
            return None
        ds = self._resolve(datasets)
        columns = self.group if isinstance(self.group, tuple) else (self.group,)
        if self.values is not None and len(columns) != 1:
            return None
        return GroupFamily.build(
            self, ds, columns, self.values, self._rate_fns,
            lambda lhs, ref: relative_bounds(lhs, ref, self.slack, self.multiplicative, self.sides),
            self.name, lambda: self.bind(datasets))

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
                    out.extend(relative_bounds(fn(g), ref, self.slack, self.multiplicative, self.sides))
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
    """ + GOAL_PARAMS_TAIL


@dataclass(frozen=True, repr=False)
class DemographicParity(_ParityGoal):
    __doc__ = f"""Statistical (demographic) parity: equal positive prediction rates.

    ``ppr(D_k)`` within ``slack`` of ``ppr(D)`` for every group ``k`` (Cotter et al., 2019,
    Table 3, "statistical parity"; Goh et al., 2016, "fairness constraint"), or of every
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

    ``tpr(D_k)`` within ``slack`` of ``tpr(D)`` for every group ``k`` (Cotter et al., 2019,
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
    ``fpr`` (Cotter et al., 2019, Table 3, "equal odds"). Needs labels.

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

    ``accuracy(D_k)`` within ``slack`` of ``accuracy(D)`` (Cotter et al., 2019, Table 3).
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
@goal_fields("group")
class _RelativeGoal(Goal):
    if TYPE_CHECKING:  # the fields goal_fields adds, for type checkers (the runtime's are in the dataclass)
        group: str | tuple | None = None
        values: tuple | None = field(default=None, kw_only=True)

    slack: float = 0.0
    multiplicative: bool = field(default=False, kw_only=True)

    _sides: ClassVar[str] = "lower"

    def _validate(self):
        owner = type(self).__name__
        validate_group(owner, self.group, required=False)
        check_number(owner, "slack", self.slack, lo=0.0, hi=1.0, hi_open=self.multiplicative)

    def _pair(self, ctx):  # pragma: no cover - abstract
        raise NotImplementedError

    def _build(self, ds):
        out = []
        for g in self._contexts(ds, self.group, self.values):
            lhs, ref = self._pair(g)
            out.extend(relative_bounds(lhs, ref, self.slack, self.multiplicative, self._sides))
        return out


_RELATIVE_PARAMS = """group : str or tuple of str, default=None
        Group column(s); ``None`` applies the goal to the whole dataset.
    slack : float, default=0.0
        Additive slack in [0, 1], or with ``multiplicative=True`` the relative
        shortfall in [0, 1).
    multiplicative : bool, default=False
        Multiplicative slack.
    """ + GOAL_PARAMS_TAIL


@dataclass(frozen=True, repr=False)
class NoLostBenefits(_RelativeGoal):
    __doc__ = f"""No lost benefits: no group gets fewer positives than from the baseline.

    Each group is classified positive at least as often as by the baseline model:
    ``ppr(D_k) >= baseline_ppr(D_k) - slack`` (Cotter et al., 2019, Table 3), where
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

    ``accuracy(D_k) >= baseline_accuracy(D_k) - slack`` (Cotter et al., 2019, Table 3).
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
    (Cotter et al., 2019, Table 3), both inequalities. Needs labels.

    Parameters
    ----------
    {_RELATIVE_PARAMS}
    """

    _sides: ClassVar[str] = "both"

    def _pair(self, ctx):
        return R.positive_prediction_rate(ctx), R.prevalence(ctx)



# Lower-case spellings, as used in the docs: ``rateopt.goals.equal_opportunity("sex", slack=0.05)``.
demographic_parity = DemographicParity
statistical_parity = DemographicParity
no_lost_benefits = NoLostBenefits
accurate_coverage = AccurateCoverage
equal_opportunity = EqualOpportunity
equalized_odds = EqualizedOdds
equal_accuracy = EqualAccuracy
not_worse_off = NotWorseOff
