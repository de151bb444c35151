"""The goal base class, the checks goals share, and the fields every recipe declares once.

:class:`Goal` binds a recipe to data; :class:`BoundGoal` is a floor or cap on
one rate per group. The fields that recipes share (``group``, ``values``,
``dataset``, ``name``) are declared here once: :func:`goal_fields` and
:func:`bound_goal` make a recipe class a frozen dataclass whose fields are its
own, in its order, with the shared ones in their places.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, ClassVar, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

    from typing_extensions import dataclass_transform
else:  # the decorator only informs type checkers (PEP 681)
    def dataclass_transform(**_kwargs):
        return lambda decorator: decorator

_G = TypeVar("_G")

from rateopt._language._data import Dataset
from rateopt.exceptions import EmptySubsetError, RateoptError

from .._language._expressions import as_scalar

__all__ = ["BOUND_PARAMS", "BOUND_PARAMS_HEAD", "BOUND_PARAMS_TAIL", "GOAL_PARAMS_TAIL", "BoundGoal", "Goal", "SIDES",
           "bound_goal", "check_number", "goal_fields", "validate_group",
           "validate_parity"]


#: The ``sides`` a goal may bound against the whole dataset.
SIDES = ("both", "lower", "upper")


def check_number(owner, name, value, lo=None, hi=None, lo_open=False, hi_open=False):
    """A goal parameter as a finite number within its range.

    Parameters
    ----------
    owner : str
        The goal's class name (the messages start with it).
    name : str
        The parameter's name.
    value : object
        Its value.
    lo, hi : float, default=None
        The bounds (None: unbounded).
    lo_open, hi_open : bool, default=False
        Whether the bounds are excluded.

    Returns
    -------
    float
        The value.

    Raises
    ------
    RateoptError
        If the value is not a finite number in range.
    """
    try:
        v = as_scalar(value)
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

    # Recipes get ``dataset`` and ``name`` as their last fields from goal_fields or
    # bound_goal, so that the signature reads (goal parameters..., dataset=..., name=...).
    # Type checkers see them here (keyword-only, so the recipes' positional fields keep
    # their order); each recipe declares its other fields, the shared ones included,
    # under TYPE_CHECKING (tests/goals/test_typing_view.py compares them with the runtime).
    if TYPE_CHECKING:
        dataset: str = field(default="train", kw_only=True)
        name: str | None = field(default=None, kw_only=True)

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
        EmptySubsetError
            If a group leaves a metric of the goal constant on this data (e.g.
            no positive label for an F-measure); the message names the goal.
        """
        ds = self._resolve(datasets)
        try:
            cons = self._build(ds)
        except EmptySubsetError as exc:  # e.g. a group whose F-measure no model can move: name the goal
            group = getattr(self, "group", None)
            owner = type(self).__name__ + (f"(group={group!r})" if group is not None else "")
            raise EmptySubsetError(f"{owner} on dataset {ds.name!r}: {exc}") from None
        if self.name is None:
            return cons
        return [c.named(f"{self.name}: {c.name}") for c in cons]

    def bind_batched(self, datasets):
        """The goal's constraints as one batched family, or None (then :meth:`bind` states them one by one).

        A goal that states the same constraints for every group of a column
        (the parity goals) returns a
        :class:`~rateopt._language._families.GroupFamily`: the compiler lowers
        its rows at once, to the same rows, names and constraints as
        :meth:`bind`'s.

        Parameters
        ----------
        datasets : Dataset, mapping of str to Dataset, or sequence of Dataset
            As :meth:`bind`'s.

        Returns
        -------
        GroupFamily or None
            The family; None for a goal that binds one constraint at a time.
        """
        return None

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


def validate_group(owner, group, required):
    """Check a goal's ``group``: a column name or a non-empty tuple of them (or None when not required).

    Parameters
    ----------
    owner : str
        The goal's class name (the messages start with it).
    group : str, tuple of str or None
        The group column(s).
    required : bool
        Whether the goal needs a group.

    Raises
    ------
    RateoptError
        If the group is missing but required, or empty.
    """
    if group is None:
        if required:
            raise RateoptError(f"{owner}: group must name a group column")
        return
    cols = group if isinstance(group, tuple) else (group,)
    if not cols:
        raise RateoptError(f"{owner}: group is empty")


def validate_parity(goal, hi_open=False):
    """Check a parity goal's ``group`` (required), ``slack`` (in [0, 1], below 1 with ``hi_open``) and ``sides``."""
    owner = type(goal).__name__
    validate_group(owner, goal.group, required=True)
    check_number(owner, "slack", goal.slack, lo=0.0, hi=1.0, hi_open=hi_open)
    if goal.sides not in SIDES:
        raise RateoptError(f"{owner}: sides must be one of {SIDES}, got {goal.sides!r}")


# --------------------------------------------------------------------------- the shared fields


def _shared_field(name, dataset):
    """``(annotation, default)`` of a field recipes share, fresh for each class."""
    if name == "group":  # positional: goal(bound, "sex")
        return "str | tuple | None", None
    if name == "values":
        return "tuple | None", field(default=None, kw_only=True)
    if name == "dataset":
        return "str", field(default=dataset, kw_only=True)
    if name == "name":
        return "str | None", field(default=None, kw_only=True)
    raise TypeError(f"{name!r} is neither declared by the goal nor a field goals share")


def _is_classvar(annotation):
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _goal_dataclass(cls, layout, dataset, declared=None):
    """``cls`` as a frozen goal dataclass with the fields ``layout`` then ``dataset`` and ``name``.

    A name the class body annotates keeps the body's declaration, one of
    ``declared`` (``{name: annotation}``, positional without default) takes its
    annotation, and any other is a shared field (:func:`_shared_field`).
    """
    own = dict(cls.__dict__.get("__annotations__", {}))  # the body's fields, then its ClassVars
    declared = declared or {}
    annotations = {}
    for name in (*layout, "dataset", "name"):
        if name in own:
            annotations[name] = own.pop(name)
        elif name in declared:
            annotations[name] = declared[name]
        else:
            annotations[name], default = _shared_field(name, dataset)
            setattr(cls, name, default)
    cls.__annotations__ = {**annotations, **own}
    return dataclass(frozen=True, repr=False)(cls)


def _own_fields(cls):
    return [name for name, annotation in cls.__dict__.get("__annotations__", {}).items()
            if not _is_classvar(annotation)]


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def goal_fields(*head: str, values: bool = True, dataset: str = "train") -> Callable[[type[_G]], type[_G]]:
    """Class decorator: a frozen goal dataclass with fields ``head``, the body's, ``values``, ``dataset``, ``name``.

    Parameters
    ----------
    *head : str
        Shared fields that come first (``"group"``: positional, default None).
    values : bool, default=True
        Whether the goal restricts its groups (``values``, keyword-only,
        default None, after the body's fields).
    dataset : str, default="train"
        The default dataset role (``dataset``, keyword-only).

    Returns
    -------
    callable
        The decorator (the class body declares only the goal's own fields;
        ``name``, keyword-only, default None, comes last).
    """
    def make(cls):
        return _goal_dataclass(cls, (*head, *_own_fields(cls), *(("values",) if values else ())), dataset)

    return make


# --------------------------------------------------------------------------- floors and caps


@dataclass(frozen=True, repr=False)
class BoundGoal(Goal):
    """A bound on one rate per group (or on the whole dataset)."""

    bound: ClassVar[str] = ""
    _lo: ClassVar[float] = 0.0
    _hi: ClassVar[float | None] = 1.0

    def _validate(self):
        owner = type(self).__name__
        validate_group(owner, getattr(self, "group", None), required=False)
        check_number(owner, self.bound, getattr(self, self.bound), lo=self._lo, hi=self._hi)

    def _build(self, ds):
        return [
            self._constraint(ctx)
            for ctx in self._contexts(ds, getattr(self, "group", None), getattr(self, "values", None))
        ]


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def bound_goal(bound: str, *, hi: float | None = 1.0, grouped: bool = True, options_first: bool = False,
               dataset: str = "train") -> Callable[[type[_G]], type[_G]]:
    """Class decorator of a floor or cap (a :class:`BoundGoal`): its fields and the bound's range.

    The fields are ``bound`` (a float, positional), ``group`` (positional,
    default None) and ``values`` when ``grouped``, the options the class body
    declares (keyword-only; after ``values``, or before it with
    ``options_first``), then ``dataset`` and ``name``.

    Parameters
    ----------
    bound : str
        The bound's field (e.g. ``"min_rate"``); ``BoundGoal.bound`` names it.
    hi : float or None, default=1.0
        The bound's largest value (None: no upper limit); the smallest is 0.
    grouped : bool, default=True
        Whether the goal applies per group (``group`` and ``values``).
    options_first : bool, default=False
        Place the body's options between ``group`` and ``values``.
    dataset : str, default="train"
        The default dataset role.

    Returns
    -------
    callable
        The decorator.
    """
    def make(cls):
        options = _own_fields(cls)
        if not grouped:
            layout = (bound, *options)
        elif options_first:
            layout = (bound, "group", *options, "values")
        else:
            layout = (bound, "group", "values", *options)
        cls.bound, cls._hi = bound, hi
        return _goal_dataclass(cls, layout, dataset, declared={bound: "float"})

    return make


#: The last three parameters of most goals' docstrings (``values``, ``dataset``, ``name``).
GOAL_PARAMS_TAIL = """values : tuple, default=None
        Restrict to these group values (a single column only).
    dataset : str, default="train"
        Role of the dataset the goal applies to.
    name : str, default=None
        Prefix of the constraint names."""

BOUND_PARAMS = """group : str or tuple of str, default=None
        Group column(s): one constraint per group value; ``None``: one on the
        whole dataset.
    """ + GOAL_PARAMS_TAIL

# BOUND_PARAMS in two parts, for goals with parameters between ``values`` and ``dataset``.
BOUND_PARAMS_HEAD, BOUND_PARAMS_TAIL = BOUND_PARAMS.split("\n    dataset : str", 1)
BOUND_PARAMS_TAIL = "dataset : str" + BOUND_PARAMS_TAIL
