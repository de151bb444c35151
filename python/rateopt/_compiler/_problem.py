"""Rate problems: an objective and constraints over datasets, compiled once.

:class:`Problem` takes an objective and a list of constraints (expressions of
:mod:`rateopt._language._rates`, or goals of :mod:`rateopt.goals`), compiles them once
(:mod:`rateopt._compiler._compile`, by the lowering rules of :mod:`rateopt._language._lowering`)
into a frozen :class:`~rateopt._compiler._compiled.CompiledProblem`:

* the *atoms* ``p+(S_a)`` (one per distinct subset: identical memberships
  within a dataset are merged), numbered so that each dataset's atoms form a
  contiguous block of the global numbering;
* per dataset, the CSR membership table in the format of
  ``rateopt.core.AtomTable``: ``indptr`` int64 ``(n_samples + 1,)``,
  ``indices`` int32 (dataset-local atom ids), ``weights`` float64
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

import numpy as np

from rateopt._compiler._compile import (
    compile_problem,
    datasets_by_name,
    flatten_constraints,
    resolve_role,
)
from rateopt._compiler._compiled import (
    AtomInfo,
    CompiledProblem,
    Evaluation,
    InverseData,
    MembershipTable,
    RateLayer,
    frozen,
)
from rateopt._compiler._multiclass import MulticlassProblem, is_multiclass_data
from rateopt._compiler._toml import GoalsSpec, read_goals, write_goals
from rateopt._language import _rates as R
from rateopt._language._evaluation import prediction_values
from rateopt._language._expressions import as_scalar, lift
from rateopt._language._lowering import LOWERING_RULES
from rateopt.exceptions import RateoptError
from rateopt.goals import objective as named_objective
from rateopt.metrics import Metric

__all__ = [
    "Problem",
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
    objective : Expression, Metric, str or float, default=None
        The rate expression to minimize, a name of
        :data:`rateopt.goals.OBJECTIVES` (on the training dataset; the name is
        kept for :meth:`to_toml`), or a non-linear metric of rates
        (:mod:`rateopt.metrics`: KL divergence, G-/H-/Q-mean), which training
        minimizes with the three-player game (``method="three-player"``). Default: the error rate of the whole
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
        labels) makes a :class:`~rateopt.MulticlassProblem` instead, whose
        ``evaluate`` takes any K-class predictor's labels or class probabilities.

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
    compiled : CompiledProblem
        The compiled arrays.

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

    def __new__(cls, objective=None, constraints=(), *, regularization=None, datasets=None):
        # A ClassDataset makes a K-class problem (its own compiled form over confusion counts).
        if cls is Problem and is_multiclass_data(datasets):
            return MulticlassProblem(objective, constraints, regularization=regularization, datasets=datasets)
        return super().__new__(cls)

    def __init__(self, objective=None, constraints=(), *, regularization=None, datasets=None):
        if regularization is not None:
            reg = as_scalar(regularization)
            if reg is None or reg < 0:
                raise RateoptError(
                    f"regularization must be a non-negative number or None, got {regularization!r}"
                )
            regularization = reg
        self.regularization = regularization
        pairs = list(flatten_constraints(constraints, datasets))
        datasets_by_name([c.expression for c, _ in pairs])  # duplicate names fail first
        # What to_toml() can write: the goals (once each) and the objective's name.
        seen = {}
        for _, goal in pairs:
            if goal is not None:
                seen.setdefault(id(goal), goal)
        self._goals = tuple(seen.values())
        self._expression_constraints = any(goal is None for _, goal in pairs)
        self._objective_name = "error" if objective is None else objective if isinstance(objective, str) else None
        if isinstance(objective, str):
            try:
                objective = named_objective(objective, self._default_objective_dataset(pairs, datasets).dataset)
            except ValueError as exc:
                raise RateoptError(str(exc)) from None
        if objective is None:
            objective = R.error_rate(self._default_objective_dataset(pairs, datasets))
        elif isinstance(objective, Metric):
            pass  # a non-linear metric of rates (rateopt.metrics): compiled to MetricRows
        else:
            obj = lift(objective)
            if obj is NotImplemented or isinstance(objective, R.Constraint):
                raise TypeError(
                    f"objective must be a rate expression or a number, got {type(objective).__name__}"
                )
            objective = obj
        self.objective = objective
        self.datasets, self.constraints, self.compiled = compile_problem(objective, pairs)

    @staticmethod
    def _default_objective_dataset(pairs, datasets):
        if datasets is not None:
            try:
                return resolve_role(datasets, "train").context()
            except RateoptError:
                pass
        used = {}
        for c, _ in pairs:
            for ds in c.expression.datasets:
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
        """Number of atoms."""
        return self.compiled.n_atoms

    # -- evaluation -----------------------------------------------------------------------

    def evaluate(self, predictions, *, kind: str = "auto") -> Evaluation:
        """Objective, constraint values and rates of any predictor (0-1 definitions).

        Parameters
        ----------
        predictions : array-like or mapping
            Per dataset (a mapping from dataset name, or from the
            :class:`~rateopt._language._data.Dataset` object, to an array of shape
            ``(n_samples,)``), the predictor's output on every example; a single
            array when the problem uses one dataset.
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
            never infers probabilities: pass ``kind`` then.

        Returns
        -------
        Evaluation
            ``objective``, ``constraints`` (``g_i`` by name, ``<= 0`` holds),
            ``violations``, ``max_violation``, ``rates`` and ``atom_rates``.

        Raises
        ------
        RateoptError
            If a dataset's predictions are missing or have the wrong length, an
            unknown dataset is given, values are not finite, or ``kind="auto"``
            cannot tell scores from probabilities.
        """
        values = prediction_values(self.datasets, predictions, kind, names=self.compiled.datasets)
        return self.evaluate_atom_rates(self.compiled.atom_rates(values))

    def evaluate_atom_rates(self, atom_rates) -> Evaluation:
        """Evaluation from the atom values ``p+(S_a)`` (e.g. from the core's kernel).

        Parameters
        ----------
        atom_rates : array-like of shape (n_atoms,)
            The atom values, in the global atom order.

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
        p = np.asarray(atom_rates, dtype=np.float64)
        if p.shape != (cp.n_atoms,):
            raise RateoptError(f"atom_rates must have shape ({cp.n_atoms},), got {p.shape}")
        g = cp.constraint_values(p)
        viol = np.maximum(g, 0.0)
        rates = cp.rates.values(p)
        return Evaluation(
            objective=(cp.metric.objective(p) if cp.metric is not None
                       else float(cp.objective_coef @ p + cp.objective_constant)),
            constraints=dict(zip(cp.constraint_names, g.tolist())),
            violations=dict(zip(cp.constraint_names, viol.tolist())),
            max_violation=float(viol.max()) if viol.size else 0.0,
            rates=dict(zip(cp.rate_names, rates.tolist())),
            atom_rates=frozen(p.copy()),
        )

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
            command line and are not read here.

        Returns
        -------
        Problem

        Raises
        ------
        rateopt._compiler._toml.GoalsFileError
            If the file is invalid (the message names the line and key).

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
              "_expression_constraints", "_objective_name")

    def __getstate__(self):
        # A problem pickles its own state only: attributes attached from outside
        # (another library's caches) are not part of the problem.
        return {k: self.__dict__[k] for k in self._STATE}

    def __repr__(self) -> str:
        return (
            f"Problem(objective={self.objective}, n_constraints={self.n_constraints}, "
            f"n_atoms={self.n_atoms}, datasets={list(self.datasets)!r})"
        )
