"""K-class goals: parity of every class's rates across groups, class priors, per-class floors.

They bind to a :class:`~rateopt.ClassDataset` (any other dataset is refused)
and state constraints over the K-class rates of
:mod:`rateopt._language._classes`, for every class (``classes=`` restricts
them):

* :class:`MulticlassDemographicParity`: ``P(yhat=k | g)`` within ``slack`` of
  ``P(yhat=k)``, every group ``g`` and class ``k``;
* :class:`MulticlassEqualOpportunity`: per-class recall ``P(yhat=k | y=k, g)``;
* :class:`MulticlassEqualizedOdds`: per-class recall and false-positive rate
  ``P(yhat=k | y!=k, g)``;
* :class:`ClassPriorMatching` (quantification): the predicted class
  proportions within ``slack`` of given targets;
* :class:`ClassRecallFloor`, :class:`ClassPrecisionFloor`: a floor per class
  (the precision floor in its linear form ``P(yhat=k, y=k) >= tau P(yhat=k)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from rateopt._language._classes import (
    class_false_positive_rate,
    class_prediction_rate,
    class_recall,
    confusion_rate,
)
from rateopt.exceptions import RateoptError
from rateopt.goals._base import GOAL_PARAMS_TAIL, Goal, check_number, goal_fields, validate_group, validate_parity
from rateopt.goals._parity import relative_bounds

__all__ = ["ClassGoal", "ClassPrecisionFloor", "ClassPriorMatching", "ClassRecallFloor",
           "MulticlassDemographicParity", "MulticlassEqualOpportunity", "MulticlassEqualizedOdds",
           "class_precision_floor", "class_prior_matching", "class_recall_floor", "multiclass_demographic_parity",
           "multiclass_equal_opportunity", "multiclass_equalized_odds"]

@dataclass(frozen=True, repr=False)
class ClassGoal(Goal):
    """Base class of the K-class goals: recipes that bind to a :class:`~rateopt.ClassDataset` only."""

    def _build(self, ds):
        return self._build_classes(ds._as_class_dataset(type(self).__name__))

    def _build_classes(self, ds):  # pragma: no cover - abstract
        raise NotImplementedError


def _classes(goal, ds):
    if goal.classes is None:
        return ds.classes.tolist()
    known = ds.classes.tolist()
    for c in goal.classes:
        if c not in known:
            raise RateoptError(f"{type(goal).__name__}: class {c!r} is not a class of dataset {ds.name!r}; "
                               f"classes: {known!r}")
    return list(goal.classes)


def _check_classes(goal):
    if goal.classes is not None:
        if isinstance(goal.classes, (str, bytes)) or not hasattr(goal.classes, "__iter__"):
            raise RateoptError(f"{type(goal).__name__}: classes must be a sequence of class labels or None")
        object.__setattr__(goal, "classes", tuple(goal.classes))
        if not goal.classes:
            raise RateoptError(f"{type(goal).__name__}: classes is empty")


@goal_fields()
class _ClassParityGoal(ClassGoal):
    group: str | tuple
    slack: float = 0.0
    classes: tuple | None = field(default=None, kw_only=True)
    sides: str = field(default="both", kw_only=True)

    _rate_fns: ClassVar[tuple] = ()

    if TYPE_CHECKING:  # the fields goal_fields adds, for type checkers
        values: tuple | None = field(default=None, kw_only=True)

    def _validate(self):
        validate_parity(self)
        _check_classes(self)

    def _build_classes(self, ds):
        groups = self._contexts(ds, self.group, self.values)
        whole = ds.context()
        out = []
        for fn in self._rate_fns:
            for k in _classes(self, ds):
                ref = fn(whole, k)
                for g in groups:
                    out.extend(relative_bounds(fn(g, k), ref, self.slack, False, self.sides))
        return out


_CLASS_PARITY_PARAMS = """group : str or tuple of str
        Group column(s); every value of each column is a group.
    slack : float, default=0.0
        Additive slack in [0, 1].
    classes : tuple, default=None
        Constrain these classes only (default: every class).
    sides : {"both", "lower", "upper"}, default="both"
        Both inequalities, or only ``rate(g) >= rate(all) - slack`` ("lower") or
        only ``rate(g) <= rate(all) + slack`` ("upper").
    """ + GOAL_PARAMS_TAIL


@dataclass(frozen=True, repr=False)
class MulticlassDemographicParity(_ClassParityGoal):
    __doc__ = f"""K-class demographic parity: every class's prediction rate per group within a slack of overall.

    ``|P(yhat=k | g) - P(yhat=k)| <= slack`` for every group ``g`` and class
    ``k``: ``2 x groups x classes`` constraints (the ``<=`` then the ``>=`` of each).

    Parameters
    ----------
    {_CLASS_PARITY_PARAMS}

    Examples
    --------
    >>> from rateopt.goals import multiclass_demographic_parity
    >>> multiclass_demographic_parity("sex", slack=0.05)
    MulticlassDemographicParity(group='sex', slack=0.05)
    """

    _rate_fns: ClassVar[tuple] = (class_prediction_rate,)


@dataclass(frozen=True, repr=False)
class MulticlassEqualOpportunity(_ClassParityGoal):
    __doc__ = f"""K-class equal opportunity: every class's recall per group within a slack of overall.

    ``|P(yhat=k | y=k, g) - P(yhat=k | y=k)| <= slack`` for every group and class.

    Parameters
    ----------
    {_CLASS_PARITY_PARAMS}
    """

    _rate_fns: ClassVar[tuple] = (class_recall,)


@dataclass(frozen=True, repr=False)
class MulticlassEqualizedOdds(_ClassParityGoal):
    __doc__ = f"""K-class equalized odds: every class's recall and false-positive rate per group within a slack.

    Recall ``P(yhat=k | y=k, g)`` and false-positive rate ``P(yhat=k | y!=k, g)``
    within ``slack`` of the whole dataset's, for every group and class (the
    recall constraints first).

    Parameters
    ----------
    {_CLASS_PARITY_PARAMS}
    """

    _rate_fns: ClassVar[tuple] = (class_recall, class_false_positive_rate)


@goal_fields()
class ClassPriorMatching(ClassGoal):
    """Class-prior matching (quantification): predicted class proportions within a slack of targets.

    ``|P(yhat=k | S) - targets[k]| <= slack`` for every class ``k`` and every
    group ``S`` (or the whole dataset when ``group`` is None).

    Parameters
    ----------
    targets : tuple of float
        One target proportion per class, in the order of the dataset's
        ``classes``, each in [0, 1], summing to 1.
    slack : float, default=0.0
        Additive slack in [0, 1].
    group : str or tuple of str, default=None
        Match the priors within every group (None: on the whole dataset).
    values : tuple, default=None
        Restrict to these group values (a single column only).
    dataset : str, default="train"
        Role of the dataset the goal applies to.
    name : str, default=None
        Prefix of the constraint names.

    Examples
    --------
    >>> from rateopt.goals import class_prior_matching
    >>> class_prior_matching((0.5, 0.3, 0.2), slack=0.02)
    ClassPriorMatching(targets=(0.5, 0.3, 0.2), slack=0.02, group=None)
    """

    targets: tuple
    slack: float = 0.0
    group: str | tuple | None = None

    if TYPE_CHECKING:
        values: tuple | None = field(default=None, kw_only=True)

    def _validate(self):
        owner = type(self).__name__
        validate_group(owner, self.group, required=False)
        check_number(owner, "slack", self.slack, lo=0.0, hi=1.0)
        try:
            t = tuple(float(check_number(owner, "targets", v, lo=0.0, hi=1.0)) for v in self.targets)
        except TypeError:
            raise RateoptError(f"{owner}: targets must be a sequence of proportions, one per class") from None
        if len(t) < 2 or abs(sum(t) - 1.0) > 1e-6:
            raise RateoptError(f"{owner}: targets must hold one proportion per class (K >= 2) summing to 1, "
                               f"got {self.targets!r}")
        object.__setattr__(self, "targets", t)

    def _build_classes(self, ds):
        if len(self.targets) != ds.n_classes:
            raise RateoptError(f"ClassPriorMatching: {len(self.targets)} targets for {ds.n_classes} classes "
                               f"{ds.classes.tolist()!r}")
        out = []
        for ctx in self._contexts(ds, self.group, self.values):
            for k, t in zip(ds.classes.tolist(), self.targets):
                r = class_prediction_rate(ctx, k)
                out.extend([r <= min(1.0, t + self.slack), r >= max(0.0, t - self.slack)])
        return out


_FLOOR_PARAMS = """group : str or tuple of str, default=None
        Per group (None: on the whole dataset).
    classes : tuple, default=None
        These classes only.
    """ + GOAL_PARAMS_TAIL


@dataclass(frozen=True, repr=False)
class _ClassFloor(ClassGoal):
    """A floor ``tau`` (the field named by ``bound``) on one K-class rate per class and group."""

    bound: ClassVar[str] = ""

    def _validate(self):
        validate_group(type(self).__name__, self.group, required=False)
        check_number(type(self).__name__, self.bound, getattr(self, self.bound), lo=0.0, hi=1.0)
        _check_classes(self)

    def _build_classes(self, ds):
        tau = getattr(self, self.bound)
        return [self._floor(ctx, k, tau)
                for ctx in self._contexts(ds, self.group, self.values) for k in _classes(self, ds)]

    def _floor(self, ctx, k, tau):  # pragma: no cover - abstract
        raise NotImplementedError


@goal_fields()
class ClassRecallFloor(_ClassFloor):
    __doc__ = f"""A floor on every class's recall: ``P(yhat=k | y=k, S) >= min_recall``.

    Parameters
    ----------
    min_recall : float
        In [0, 1].
    {_FLOOR_PARAMS}
    """

    min_recall: float
    group: str | tuple | None = None
    classes: tuple | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_recall"

    if TYPE_CHECKING:
        values: tuple | None = field(default=None, kw_only=True)

    def _floor(self, ctx, k, tau):
        return class_recall(ctx, k) >= tau


@goal_fields()
class ClassPrecisionFloor(_ClassFloor):
    __doc__ = f"""A floor on every class's precision, in linear form: ``P(yhat=k, y=k | S) >= tau P(yhat=k | S)``.

    Parameters
    ----------
    min_precision : float
        ``tau`` in [0, 1].
    {_FLOOR_PARAMS}
    """

    min_precision: float
    group: str | tuple | None = None
    classes: tuple | None = field(default=None, kw_only=True)
    bound: ClassVar[str] = "min_precision"

    if TYPE_CHECKING:
        values: tuple | None = field(default=None, kw_only=True)

    def _floor(self, ctx, k, tau):
        return confusion_rate(ctx, k, k) >= tau * class_prediction_rate(ctx, k)


multiclass_demographic_parity = MulticlassDemographicParity
multiclass_equal_opportunity = MulticlassEqualOpportunity
multiclass_equalized_odds = MulticlassEqualizedOdds
class_prior_matching = ClassPriorMatching
class_recall_floor = ClassRecallFloor
class_precision_floor = ClassPrecisionFloor
