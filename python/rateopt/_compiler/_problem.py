"""Rate problems: an objective and constraints over datasets, compiled once.

:class:`Problem` takes an objective and a list of constraints (expressions of
:mod:`rateopt._language._rates`, or goals of :mod:`rateopt.goals`), compiles them once
(:mod:`rateopt._compiler._compile`, by the lowering rules of :mod:`rateopt._language._lowering`)
into a frozen :class:`~rateopt._compiler._compiled.CompiledProblem`:

* the *atoms* ``p+(S_a)`` (one per distinct subset: identical memberships
  within a dataset are merged), numbered so that each dataset's atoms form a
  contiguous block of the global numbering;
* per dataset, the CSR membership table in the format of
  ``rateopt.core.AtomTable``: ``indptr`` int32 (int64 from ``2**31``
  entries) ``(n_samples + 1,)``, ``indices`` uint8, uint16 or int32
  (dataset-local atom ids, the narrowest that holds them), ``weights`` float64
  ``w_j / sum_{i in S_a} w_i``;
* the constraint matrix ``C`` (n_constraints, n_atoms), offsets ``kappa`` with
  the normal form ``g_i = C[i] @ p - kappa[i] <= 0``, the objective's
  coefficients and constant, the rate layer of every named rate, and
  ``inverse_data`` mapping rows back to the user's constraints.

:meth:`Problem.evaluate` computes the objective, every constraint ``g_i`` and
every named rate for the 0-1 decisions (or expected decisions) of any model,
with one sparse pass over each membership table.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np

from rateopt._compiler._batched import compile_batched, is_family
from rateopt._compiler._compile import (
    compile_problem,
    datasets_by_name,
    flatten_constraints,
    resolve_role,
    unique_names,
)
from rateopt._compiler._compiled import (
    AtomInfo,
    CompiledProblem,
    Evaluation,
    InverseData,
    MembershipTable,
    RateLayer,
)
from rateopt._compiler._confusion import (
    MulticlassCompiled,
    class_dataset,
    compile_multiclass,
    confusion_counts,
    is_multiclass_data,
    prediction_distribution,
)
from rateopt._compiler._toml import GoalsSpec, read_goals, write_goals
from rateopt._language import _rates as R
from rateopt._language._evaluation import prediction_values
from rateopt._language._expressions import as_scalar, lift
from rateopt._language._lowering import LOWERING_RULES
from rateopt._language._validation import readonly
from rateopt.exceptions import RateoptError
from rateopt.goals import objective as named_objective
from rateopt.metrics import MacroF1, Metric

__all__ = [
    "Problem",
    "MulticlassProblem",
    "is_class_problem",
    "CompiledProblem",
    "MembershipTable",
    "AtomInfo",
    "InverseData",
    "RateLayer",
    "Evaluation",
    "LOWERING_RULES",
]


class Problem:
    """A rate-constrained learning problem, compiled once to atom tables.

    Parameters
    ----------
    objective : Expression, Metric, MacroF1, str or float, default=None
        The rate expression to minimize, a name of
        :data:`rateopt.goals.OBJECTIVES` (on the training dataset; the name is
        kept for :meth:`to_toml`), or a non-linear metric of rates
        (:mod:`rateopt.metrics`: KL divergence, G-/H-/Q-mean), which training
        minimizes with the three-player game (``method="three-player"``); for K classes, a K-class rate
        expression, a name of :data:`rateopt.goals.MULTICLASS_OBJECTIVES` or
        :class:`~rateopt.metrics.MacroF1`. Default: the error rate of the whole
        training dataset (the dataset for role ``"train"`` of ``datasets``, else
        the dataset named ``"train"`` among those the constraints use, else the
        only dataset they use). A number gives a feasibility problem.
    constraints : iterable, default=()
        :class:`~rateopt._language._rates.Constraint` objects, goals of
        :mod:`rateopt.goals` (bound to ``datasets``), or nested lists of them
        (e.g. the result of :func:`~rateopt._language._rates.equal`). Duplicate names are
        made unique by appending ``" #2"``, ``" #3"``, ...
    regularization : float, default=None
        L2 regularization strength of the model (``R(theta) = regularization/2
        ||theta||^2``): :func:`rateopt.train` uses it as the default model's
        ``l2`` (a model given with a different ``l2`` is an error).
    datasets : Dataset, mapping of str to Dataset, or sequence of Dataset, default=None
        What goals bind to: a mapping from role (``"train"``, ``"steering"``,
        ...) to dataset, a sequence of datasets (roles are their names), or one
        dataset (used for every role). A :class:`~rateopt.ClassDataset` (K-class
        labels; one dataset, or a mapping or sequence holding only it) makes the
        problem a K-class one: its statistics are the confusion counts of cells
        (:class:`~rateopt._compiler._confusion.MulticlassCompiled`) instead of
        atoms, its rates K-class rates and goals (:mod:`rateopt.goals` ``multiclass_*``),
        its named objectives :data:`rateopt.goals.MULTICLASS_OBJECTIVES`, and
        ``evaluate`` takes any K-class predictor's labels or class probabilities.
    label_probabilities : array-like of shape (n_samples, K), default=None
        K classes only: class-probability estimates that stand in for the
        labels, so that every rate is its expectation under them (a row counts
        ``eta_y(x)`` towards class ``y``), as plug-in post-processing reads rates.

    Attributes
    ----------
    objective : Expression
        The objective.
    constraints : tuple of Constraint
        The constraints, in row order, under their unique names.
    datasets : mapping of str to Dataset
        The datasets the problem uses, by name.
    regularization : float or None
        As given.
    compiled : CompiledProblem or MulticlassCompiled
        The compiled arrays (two-class atoms, or K-class cells).
    label_probabilities : ndarray of shape (n_samples, K) or None
        As given, validated.

    Raises
    ------
    EmptySubsetError
        If a rate is measured on an empty subset or one of zero total weight.
    MissingLabelsError
        If a rate that needs labels is used on an unlabeled dataset.
    MissingBaselineError
        If a rate that needs a baseline is used on a dataset without one.
    ConstantConstraintError
        If a constraint cannot be changed by any model.
    RateoptError
        If two different datasets share a name, or no objective can be chosen.
    TypeError
        If a constraint is not a Constraint or goal.

    See Also
    --------
    CompiledProblem : The compiled arrays.

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ds = ro.Dataset(np.zeros((4, 1)), y=[0, 1, 1, 0], groups={"g": ["a", "a", "b", "b"]})
    >>> ctx = ds.context()
    >>> p = ro.Problem(constraints=[ro.true_positive_rate(ctx.subset(group="g", value="a"))
    ...                             >= ro.true_positive_rate(ctx) - 0.1])
    >>> ev = p.evaluate(np.array([1, 1, 0, 0]))
    >>> ev.objective, ev.constraints
    (0.5, {'tpr[g=a] >= tpr[all] - 0.1': -0.6})
    """

    def __init__(self, objective=None, constraints=(), *, regularization=None, datasets=None,
                 label_probabilities=None):
        if regularization is not None:
            reg = as_scalar(regularization)
            if reg is None or reg < 0:
                raise RateoptError(
                    f"regularization must be a non-negative number or None, got {regularization!r}"
                )
            regularization = reg
        self.regularization = regularization
        # The dataset type chooses the statistics: K-class confusion counts of cells on a ClassDataset,
        # two-class atoms otherwise. Everything else below is shared.
        if datasets is not None and not (isinstance(datasets, (Mapping, list, tuple)) or hasattr(datasets, "name")):
            raise TypeError(f"datasets must be a Dataset, a ClassDataset or a mapping of names to them, got "
                            f"{type(datasets).__name__}")
        classes = is_multiclass_data(datasets)
        train = class_dataset(datasets) if classes else None
        self.label_probabilities = self._label_probabilities(label_probabilities, train)
        pairs = list(flatten_constraints(constraints, train if classes else datasets, batch=not classes))
        if not classes:
            datasets_by_name([c if is_family(c) else c.expression for c, _ in pairs])  # duplicate names fail first
        # What to_toml() can write: the goals (once each) and the objective's name.
        seen = {}
        for _, goal in pairs:
            if goal is not None:
                seen.setdefault(id(goal), goal)
        self._goals = tuple(seen.values())
        self._expression_constraints = any(goal is None for _, goal in pairs)
        self._objective_name = "error" if objective is None else objective if isinstance(objective, str) else None
        if isinstance(objective, MacroF1) and classes and objective.context == train.context():
            self._objective_name = "macro_f1"
        self.objective = objective = self._objective(objective, pairs, datasets, train)
        if classes:
            constraints = tuple(unique_names(pairs)[0])
            self.datasets, self.constraints = {train.name: train}, constraints
            self.compiled = compile_multiclass(objective, constraints, train, self.label_probabilities)
        else:
            # goals over many groups come as batched families: compiled at once, or else bound one by one
            out = compile_batched(objective, pairs) if any(is_family(c) for c, _ in pairs) else None
            if out is None:
                pairs = [(c2, g) for c, g in pairs for c2 in (c.expand() if is_family(c) else (c,))]
                out = compile_problem(objective, pairs)
            self.datasets, self.constraints, self.compiled = out

    def _objective(self, objective, pairs, datasets, train):
        """The objective to compile: by name (on the training dataset), the default error rate, or as given."""
        if isinstance(objective, str) or (train is not None and objective is None):
            try:
                return named_objective(objective, train if train is not None
                                       else self._default_objective_dataset(pairs, datasets).dataset)
            except ValueError as exc:
                raise RateoptError(str(exc)) from None
        if objective is None:
            return R.error_rate(self._default_objective_dataset(pairs, datasets))
        if isinstance(objective, (Metric, MacroF1)):
            return objective  # a non-linear function of the statistics, compiled beside the affine map
        obj = lift(objective)
        if obj is NotImplemented or isinstance(objective, R.Constraint):
            raise TypeError(f"objective must be a rate expression or a number, got {type(objective).__name__}")
        return obj

    @staticmethod
    def _label_probabilities(label_probabilities, train):
        if label_probabilities is None:
            return None
        if train is None:
            raise RateoptError("label_probabilities stand in for K-class labels: they need "
                               "datasets=ClassDataset(...)")
        out = prediction_distribution(train, label_probabilities, "label_probabilities")
        if out.ndim != 2:
            raise RateoptError("label_probabilities must be class probabilities of shape "
                               f"({train.n_samples}, {train.n_classes})")
        return out

    @staticmethod
    def _default_objective_dataset(pairs, datasets):
        if datasets is not None:
            try:
                return resolve_role(datasets, "train").context()
            except RateoptError:
                pass
        used = {}
        for c, _ in pairs:
            for ds in (c.datasets if is_family(c) else c.expression.datasets):
                used.setdefault(id(ds), ds)
        named = [d for d in used.values() if d.name == "train"]
        if len(named) == 1:
            return named[0].context()
        if len(used) == 1:
            return next(iter(used.values())).context()
        raise RateoptError(
            "cannot choose the default objective (training error rate): "
            + ("no dataset is used" if not used else "several datasets are used and none is "
               "named 'train'")
            + "; pass objective=... explicitly"
        )

    # -- properties ---------------------------------------------------------------------

    @property
    def constraint_names(self) -> tuple:
        """The unique constraint names, in row order."""
        return self.compiled.constraint_names

    @property
    def n_constraints(self) -> int:
        """Number of constraints."""
        return self.compiled.n_constraints

    @property
    def n_atoms(self) -> int:
        """Number of atoms (two-class statistics)."""
        if is_class_problem(self):
            raise RateoptError("a K-class problem has cells, not atoms: see compiled.n_cells")
        return self.compiled.n_atoms

    @property
    def dataset(self):
        """The training dataset: the only dataset, else the one named ``"train"``.

        Raises
        ------
        RateoptError
            If the problem uses several datasets and none is named ``"train"``.
        """
        if len(self.datasets) == 1:
            return next(iter(self.datasets.values()))
        if "train" in self.datasets:
            return self.datasets["train"]
        raise RateoptError(f"the problem uses several datasets ({list(self.datasets)!r}) and none is named "
                           "'train'; pick one from problem.datasets")

    @property
    def classes(self):
        """The training dataset's class labels (the score columns' order for K classes)."""
        return self.dataset.classes

    @property
    def n_classes(self) -> int:
        """The number of classes: K on a ClassDataset, else 2."""
        return self.compiled.n_classes if is_class_problem(self) else 2

    @property
    def is_linear(self) -> bool:
        """Whether the objective is affine in the statistics (not a metric such as :class:`~rateopt.metrics.MacroF1`)."""
        return not isinstance(self.objective, (Metric, MacroF1))

    @property
    def objective_name(self):
        """The objective's name (in :data:`rateopt.goals.OBJECTIVES` or :data:`rateopt.goals.MULTICLASS_OBJECTIVES`), or None."""
        return self._objective_name

    # -- evaluation -----------------------------------------------------------------------

    def evaluate(self, predictions, *, kind: str = "auto") -> Evaluation:
        """Objective, constraint values and rates of any predictor (0-1 definitions).

        Parameters
        ----------
        predictions : array-like or mapping
            Two classes: per dataset (a mapping from dataset name, or from the
            :class:`~rateopt._language._data.Dataset` object, to an array of shape
            ``(n_samples,)``), the predictor's output on every example; a single
            array when the problem uses one dataset. K classes (a
            :class:`~rateopt.ClassDataset`): labels of shape (n_samples,) among
            :attr:`classes` (e.g. ``clf.predict(X)``), or class probabilities
            of shape (n_samples, K) (the expected rates of a stochastic
            classifier, e.g. a mixture's ``predict_proba``).
        kind : {"auto", "decisions", "scores", "probabilities", "labels"}, default="auto"
            How to read the arrays. ``"decisions"``: booleans or 0/1 values.
            ``"scores"``: real values, positive iff ``score >= 0``.
            ``"probabilities"``: expected decisions in [0, 1] (e.g. of a
            stochastic mixture); rates are then expected rates. ``"labels"``:
            values among the dataset's label values (a classifier's ``predict``
            output, e.g. ``"yes"``/``"no"``), positive iff equal to the positive
            label. ``"auto"``: booleans and arrays whose values are all 0 or 1
            are decisions; arrays with values outside [0, 1] are scores; an
            array whose values all lie in [0, 1] but not all in {0, 1} is
            ambiguous (scores or probabilities?) and raises; non-numeric arrays
            are read as labels. When an array could also be read as labels
            (all its values are label values of a labeled dataset, e.g.
            ``{1, 2}``) and that reading differs, ``"auto"`` raises. ``"auto"``
            never infers probabilities: pass ``kind`` then. K classes read the
            array by its shape: ``"auto"``, or ``"labels"`` for (n_samples,) and
            ``"probabilities"`` for (n_samples, K).

        Returns
        -------
        Evaluation
            ``objective``, ``constraints`` (``g_i`` by name, ``<= 0`` holds),
            ``violations``, ``max_violation``, ``rates`` and ``atom_rates``
            (the statistics: atom values, or K-class confusion counts of shape
            (n_cells, K, K)).

        Raises
        ------
        RateoptError
            If a dataset's predictions are missing or have the wrong length, an
            unknown dataset is given, values are not finite, or ``kind="auto"``
            cannot tell scores from probabilities; for K classes, on a wrong
            shape, unknown labels or invalid probabilities.
        """
        return self.evaluate_statistics(self.statistics(predictions, kind=kind))

    def statistics(self, predictions, *, kind: str = "auto") -> np.ndarray:
        """The statistics of a predictor's output: atom values (n_atoms,) or confusion counts (n_cells, K, K).

        Parameters
        ----------
        predictions : array-like or mapping
            As :meth:`evaluate`.
        kind : str, default="auto"
            As :meth:`evaluate`.

        Returns
        -------
        ndarray
            What :meth:`evaluate_statistics` takes.

        Raises
        ------
        RateoptError
            As :meth:`evaluate`.
        """
        if is_class_problem(self):
            ds = self.dataset
            want = {"auto": None, "labels": 1, "probabilities": 2}
            if kind not in want:
                raise RateoptError(f"kind={kind!r}: K-class predictions are labels (kind='labels') or class "
                                   "probabilities (kind='probabilities'), read by their shape with kind='auto'")
            decided = prediction_distribution(ds, predictions)
            if want[kind] not in (None, decided.ndim):
                shape = (ds.n_samples,) if want[kind] == 1 else (ds.n_samples, ds.n_classes)
                raise RateoptError(f"kind={kind!r} needs an array of shape {shape}")
            return confusion_counts(self.compiled, ds, decided, self.label_probabilities)
        values = prediction_values(self.datasets, predictions, kind, names=self.compiled.datasets)
        return self.compiled.atom_rates(values)

    def objective_value(self, statistics) -> float:
        """The objective at the statistics (atom values, or K-class confusion counts).

        Parameters
        ----------
        statistics : ndarray
            As :meth:`evaluate_statistics`.

        Returns
        -------
        float
            The objective's value.
        """
        return self.compiled.objective_value(statistics)

    def constraint_values(self, statistics) -> np.ndarray:
        """Every constraint's ``g_i`` at the statistics (atom values, or K-class confusion counts).

        Parameters
        ----------
        statistics : ndarray
            As :meth:`evaluate_statistics`.

        Returns
        -------
        ndarray of shape (n_constraints,)
            ``g_i`` in the order of :attr:`constraint_names` (``<= 0`` holds).
        """
        return self.compiled.constraint_values(statistics)

    def evaluate_statistics(self, statistics) -> Evaluation:
        """Evaluation from the statistics: atom values ``p+(S_a)`` or K-class confusion counts ``N``.

        Parameters
        ----------
        statistics : array-like
            Two classes: the atom values of shape (n_atoms,), in the global
            atom order (e.g. from the core's kernel). K classes: the
            confusion counts of shape (n_cells, K, K).

        Returns
        -------
        Evaluation
            As :meth:`evaluate`.

        Raises
        ------
        RateoptError
            If the shape is wrong.
        """
        cp = self.compiled
        p = np.asarray(statistics, dtype=np.float64)
        if p.shape != cp.statistics_shape:
            raise RateoptError(f"{cp.statistics_name} must have shape {cp.statistics_shape}, got {p.shape}")
        g = cp.constraint_values(p)
        viol = np.maximum(g, 0.0)
        rates = cp.rate_values(p)
        return Evaluation(
            objective=cp.objective_value(p),
            constraints=dict(zip(cp.constraint_names, g.tolist())),
            violations=dict(zip(cp.constraint_names, viol.tolist())),
            max_violation=float(viol.max()) if viol.size else 0.0,
            rates=dict(zip(cp.rate_names, rates.tolist())),
            atom_rates=readonly(p.copy()),
        )

    #: The two-class name of :meth:`evaluate_statistics` (atom values).
    evaluate_atom_rates = evaluate_statistics
    #: The K-class name of :meth:`evaluate_statistics` (confusion counts).
    evaluate_counts = evaluate_statistics

    # -- goals files ------------------------------------------------------------------------

    def to_toml(self, datasets=None, train=None) -> str:
        """The problem as a goals file (TOML) that :meth:`from_toml` reads back.

        Only problems stated with goals (:mod:`rateopt.goals`) and a named
        objective (``None``, ``"error"`` or another name of
        :data:`rateopt.goals.OBJECTIVES`) can be written.

        Parameters
        ----------
        datasets : mapping of str to str, default=None
            Files of the non-training roles, written to ``[datasets]``.
        train : mapping, default=None
            Training parameters, written to ``[train]``.

        Returns
        -------
        str
            The TOML text.

        Raises
        ------
        RateoptError
            If a constraint was given as a rate expression (not a goal) or the
            objective has no name.
        """
        if self._expression_constraints:
            raise RateoptError("to_toml writes goals (rateopt.goals recipes); this problem has constraints "
                               "given as rate expressions, which a goals file cannot state")
        if self._objective_name is None:
            raise RateoptError("to_toml needs a named objective (a name of rateopt.goals.OBJECTIVES); this "
                               f"problem's objective is the expression {self.objective}")
        return write_goals(GoalsSpec(objective=self._objective_name, goals=list(self._goals),
                                     datasets=dict(datasets or {}), train=dict(train or {}),
                                     regularization=self.regularization))

    @classmethod
    def from_toml(cls, source, datasets):
        r"""Build a problem from a goals file (see :mod:`rateopt._compiler._toml` and ``docs/cli.md``).

        Parameters
        ----------
        source : str or os.PathLike
            The path of a TOML goals file, or its text (a string is a path
            when such a file exists, when it ends with ``.toml``, or when it
            holds neither a newline nor ``=``).
        datasets : Dataset or mapping of str to Dataset
            The datasets by role; the file's ``[datasets]`` paths are for the
            command line and are not read here. The file's ``[train]`` table is
            parsed but not checked here: its entries are ``rateopt fit``'s
            training parameters, which the command line checks (from Python,
            pass them to :func:`rateopt.train`, which checks its arguments).

        Returns
        -------
        Problem

        Raises
        ------
        rateopt._compiler._toml.GoalsFileError
            If the file is not valid TOML (nesting too deep included), has an
            unknown key or recipe, or a goal or objective the recipes refuse
            (the message names the line and key). An invalid ``[train]`` entry
            is not refused here (see ``datasets``).

        Examples
        --------
        >>> import numpy as np
        >>> import rateopt as ro
        >>> ds = ro.Dataset(np.eye(4), y=[0, 1, 1, 0], groups={"g": ["a", "a", "b", "b"]})
        >>> p = ro.Problem.from_toml('[[goals]]\nrecipe = "coverage_budget"\nmax_rate = 0.5\n', ds)
        >>> p.constraint_names
        ('ppr[all] <= 0.5',)
        """
        spec = read_goals(source)
        return cls(objective=spec.objective, constraints=spec.goals, regularization=spec.regularization,
                   datasets=datasets)

    _STATE = ("regularization", "objective", "datasets", "constraints", "compiled", "_goals",
              "_expression_constraints", "_objective_name", "label_probabilities")

    def __getstate__(self):
        # A problem pickles its own state only: attributes attached from outside
        # (another library's caches) are not part of the problem.
        return {k: self.__dict__[k] for k in self._STATE}

    def __repr__(self) -> str:
        size = (f"n_classes={self.n_classes}, n_cells={self.compiled.n_cells}" if is_class_problem(self)
                else f"n_atoms={self.n_atoms}")
        return (
            f"Problem(objective={self.objective}, n_constraints={self.n_constraints}, "
            f"{size}, datasets={list(self.datasets)!r})"
        )


def is_class_problem(problem) -> bool:
    """Whether ``problem`` is measured on K-class confusion counts (a problem on a :class:`~rateopt.ClassDataset`).

    The one arity predicate: code that must branch on K classes vs two asks this.

    Parameters
    ----------
    problem : object
        A :class:`Problem` (any object with a ``compiled`` attribute).

    Returns
    -------
    bool
        True for a problem on a ClassDataset, False for a two-class problem or another object.
    """
    return isinstance(getattr(problem, "compiled", None), MulticlassCompiled)


def _warn_alias():
    warnings.warn("MulticlassProblem is deprecated and will be removed in the next release: "
                  "rateopt.Problem(..., datasets=ClassDataset(...)) is the same problem", DeprecationWarning,
                  stacklevel=3)


class _DeprecatedAlias(type):
    """The metaclass of :class:`MulticlassProblem`: calling it builds a :class:`Problem`, with a warning."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Problem) and is_class_problem(obj)

    def __call__(cls, objective=None, constraints=(), *, regularization=None, datasets=None,
                 label_probabilities=None):
        _warn_alias()
        class_dataset(datasets)  # a K-class problem's refusal of other data
        return Problem(objective, constraints, regularization=regularization, datasets=datasets,
                       label_probabilities=label_probabilities)


class MulticlassProblem(metaclass=_DeprecatedAlias):
    """Deprecated: :class:`Problem` on a :class:`~rateopt.ClassDataset` (one release of this alias).

    ``MulticlassProblem(...)`` warns (``DeprecationWarning``) and returns
    ``Problem(...)``; ``isinstance(p, MulticlassProblem)`` is
    ``rateopt._compiler.is_class_problem`` of a :class:`Problem`.

    Parameters
    ----------
    objective : Expression, str, MacroF1 or None, default=None
        As :class:`Problem`'s.
    constraints : iterable, default=()
        As :class:`Problem`'s.
    regularization : float, default=None
        As :class:`Problem`'s.
    datasets : ClassDataset or mapping
        The one ClassDataset (a two-class dataset is refused).
    label_probabilities : array-like of shape (n_samples, K), default=None
        As :class:`Problem`'s.
    """

    @classmethod
    def from_toml(cls, source, datasets):
        """Deprecated: :meth:`Problem.from_toml`.

        Parameters
        ----------
        source : str or os.PathLike
            As :meth:`Problem.from_toml`.
        datasets : ClassDataset or mapping
            As :meth:`Problem.from_toml`.

        Returns
        -------
        Problem
        """
        _warn_alias()
        return Problem.from_toml(source, datasets)
