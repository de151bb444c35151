"""The compiled form of a problem: flat, frozen arrays and their metadata.

A :class:`CompiledProblem` is everything the training games and evaluation
need: the atoms (:class:`AtomInfo`), one CSR membership table per dataset
(:class:`MembershipTable`, in the layout of ``rateopt.core.AtomTable``, which
the game builds from it), the constraint matrix ``C`` and offsets ``kappa``
(``g = C p - kappa <= 0``), the objective's coefficients, the rate layer
(:class:`RateLayer`: every named rate as ``A p + b``) and the map back to the
user's constraints (:class:`InverseData`). :class:`Evaluation` is what
evaluating a predictor returns. Nothing here imports the compiled core.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from rateopt.exceptions import RateoptError

__all__ = ["AtomInfo", "MembershipTable", "InverseData", "RateLayer", "MetricRows", "MetricConstraintRows",
           "CompiledProblem", "Evaluation"]


@dataclass(frozen=True)
class AtomInfo:
    """Description of one atom ``p+(S)``.

    Parameters
    ----------
    index : int
        Global atom id (column of ``C``).
    dataset : str
        Name of the dataset the subset belongs to.
    local_index : int
        Id within the dataset's membership table.
    name : str
        Name in reports, ``"ppr[<subset>]"``.
    subset : str
        The subset's name (with a ``"<dataset>:"`` prefix unless the dataset
        is named ``"train"``).
    aliases : tuple of str
        Names of other subsets with the identical membership, merged into
        this atom.
    n_members : int
        Number of examples in the subset.
    total_weight : float
        Sum of the members' weights (the normalizer; ``inf`` when it exceeds the float64
        range, which rates never need: they use exactly rescaled weights).
    """

    index: int
    dataset: str
    local_index: int
    name: str
    subset: str
    aliases: tuple
    n_members: int
    total_weight: float


@dataclass(frozen=True, eq=False)
class MembershipTable:
    """One dataset's atoms in the ``rateopt.core.AtomTable`` format.

    Row ``j`` lists the dataset-local ids of the atoms example ``j`` belongs
    to in ``indices[indptr[j]:indptr[j+1]]`` (ascending), with normalized
    weights ``w_j / sum_{i in S_a} w_i``, so that
    ``p+(S_a) = sum_j weights * 1[h(x_j) >= 0]`` over the entries of atom
    ``a``.

    Parameters
    ----------
    dataset : str
        The dataset's name.
    n_samples : int
        Number of rows.
    n_atoms : int
        Number of dataset-local atoms.
    indptr : ndarray of shape (n_samples + 1,) of int32 or int64
        Row pointers (int32 when ``nnz < 2**31``).
    indices : ndarray of shape (nnz,) of uint8, uint16 or int32
        Dataset-local atom ids (the narrowest dtype that holds ``n_atoms``).
    weights : ndarray of shape (nnz,) of float64
        Normalized weights.
    atom_ids : ndarray of shape (n_atoms,) of int64
        Global atom id of each local atom (``offset + arange(n_atoms)``).
    offset : int
        Global id of local atom 0.
    """

    dataset: str
    n_samples: int
    n_atoms: int
    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    atom_ids: np.ndarray
    offset: int

    def atom_rates(self, values) -> np.ndarray:
        """Atom values for per-example decision values.

        Parameters
        ----------
        values : ndarray of shape (n_samples,)
            Per-example decisions in {0, 1}, or expected decisions in [0, 1].

        Returns
        -------
        ndarray of shape (n_atoms,)
            ``p+(S_a)`` for each local atom.
        """
        v = np.asarray(values, dtype=np.float64)
        contrib = self.weights * np.repeat(v, np.diff(self.indptr))
        return np.bincount(self.indices, weights=contrib, minlength=self.n_atoms)



@dataclass(frozen=True)
class InverseData:
    """Map compiled constraint rows back to the user's constraints.

    Parameters
    ----------
    constraints : tuple of Constraint
        Row ``i``'s constraint, under its final (unique) name.
    originals : tuple of Constraint
        The constraint objects as given (or as produced by a goal).
    sources : tuple
        The goal that produced row ``i``, or ``None``.
    names : tuple of str
        The unique row names.
    """

    constraints: tuple
    originals: tuple
    sources: tuple
    names: tuple
    _by_name: Mapping = field(init=False, repr=False, compare=False, default=None)

    def _names_index(self):
        """``{name: row}``, made on first use (a problem over 10^5 groups has 2 x 10^5 names)."""
        if self._by_name is None:
            object.__setattr__(self, "_by_name", {n: i for i, n in enumerate(self.names)})
        return self._by_name

    def row(self, key) -> int:
        """Row index of a constraint.

        Parameters
        ----------
        key : str or Constraint
            A row name, or a constraint object given to the problem.

        Returns
        -------
        int
            The row index.

        Raises
        ------
        KeyError
            If the constraint is not part of the problem.
        """
        if isinstance(key, str):
            return self._names_index()[key]
        for i, (c, o) in enumerate(zip(self.constraints, self.originals)):
            if key is c or key is o:
                return i
        raise KeyError(f"constraint {key!r} is not part of this problem")

    def by_name(self, values) -> dict:
        """Attach per-row values (multipliers, violations) to constraint names.

        Parameters
        ----------
        values : array-like of shape (n_constraints,)
            One value per row.

        Returns
        -------
        dict
            ``{name: value}`` in row order.
        """
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        if v.shape[0] != len(self.names):
            raise ValueError(f"expected {len(self.names)} values, got {v.shape[0]}")
        return dict(zip(self.names, v.tolist()))


@dataclass(frozen=True, eq=False)
class RateLayer:
    """Named rates as affine functions of the atoms: ``rates = A p + b``.

    The layer a function of rates is stated on: a non-linear metric (an
    F-measure, a G-mean) picks its rates by name and evaluates them from any
    vector of atom rates, including a mixture's expected atom rates.

    Parameters
    ----------
    names : tuple of str
        Unique rate names, in row order.
    A : LinearMap of shape (n_rates, n_atoms)
        Atom coefficients, sparse (``A @ p``, ``A.row(i)``, ``np.asarray(A)`` for small problems).
    b : ndarray of shape (n_rates,)
        Constants (read-only).
    """

    names: tuple
    A: np.ndarray
    b: np.ndarray
    _index: Mapping = field(init=False, repr=False, compare=False, default=None)

    def index(self, name) -> int:
        """Row of the rate called ``name``.

        Parameters
        ----------
        name : str
            A rate name (see ``names``).

        Returns
        -------
        int
            Its row in ``A`` and ``b``.

        Raises
        ------
        KeyError
            If there is no such rate (the message lists a few names).
        """
        try:
            if self._index is None:  # made on first use
                object.__setattr__(self, "_index", {n: i for i, n in enumerate(self.names)})
            return self._index[name]
        except KeyError:
            raise KeyError(f"no rate named {name!r}; rates include {list(self.names[:5])!r}") from None

    def values(self, atom_rates) -> np.ndarray:
        """The rates at given atom rates.

        Parameters
        ----------
        atom_rates : array-like of shape (n_atoms,) or (n_points, n_atoms)
            Atom values (one vector, or one per row).

        Returns
        -------
        ndarray of shape (n_rates,) or (n_points, n_rates)
            ``A p + b`` for each vector ``p``.
        """
        p = np.asarray(atom_rates, dtype=np.float64)
        if p.ndim == 2:  # one product per row: a stack gives exactly each vector's values (BLAS's matrix
            # product may sum in another order than its matrix-vector product)
            return np.array([self.A @ row + self.b for row in p]).reshape(p.shape[0], self.A.shape[0])
        return self.A @ p + self.b


@dataclass(frozen=True, eq=False)
class MetricRows:
    """A non-linear objective ``psi(Z p + z0)`` compiled to atom rows.

    Parameters
    ----------
    metric : rateopt.metrics.Metric
        ``psi``, its slack orientation and its best response.
    Z : ndarray of shape (K, n_atoms)
        The coordinates' atom coefficients (read-only).
    z0 : ndarray of shape (K,)
        Their constants (read-only).
    """

    metric: object
    Z: np.ndarray
    z0: np.ndarray

    def coordinates(self, atom_rates) -> np.ndarray:
        """``Z p + z0`` for one vector of atom rates (K,) or one per row (n, K)."""
        return np.asarray(atom_rates, dtype=np.float64) @ self.Z.T + self.z0

    def objective(self, atom_rates) -> float:
        """``psi(Z p + z0)``: exact for a mixture's expected atom rates."""
        return self.metric.value(self.coordinates(atom_rates))


@dataclass(frozen=True, eq=False)
class MetricConstraintRows(MetricRows):
    """A constraint ``psi(Z p + z0) - bound <= 0`` on a convex metric, compiled to atom rows.

    Parameters
    ----------
    metric, Z, z0
        As :class:`MetricRows`.
    bound : float
        The metric's upper bound.
    """

    bound: float = 0.0

    def value(self, atom_rates) -> float:
        """The constraint value ``psi(Z p + z0) - bound`` (``<= 0`` holds)."""
        return self.objective(atom_rates) - self.bound


@dataclass(frozen=True, eq=False)
class CompiledProblem:
    """The flat arrays a problem compiles to: the only thing the games need.

    Attributes ``kappa``, ``objective_coef`` and the tables are read-only
    arrays; ``C`` is a read-only sparse ``LinearMap``. Atoms are numbered dataset by dataset: the atoms of
    ``datasets[d]`` are the contiguous block
    ``tables[datasets[d]].offset + arange(tables[datasets[d]].n_atoms)``.

    Parameters
    ----------
    datasets : tuple of str
        Dataset names, in atom-block order.
    atoms : tuple of AtomInfo
        One entry per global atom.
    tables : mapping of str to MembershipTable
        The membership table of each dataset.
    atom_dataset : ndarray of shape (n_atoms,) of int64
        Index into ``datasets`` of each atom.
    atom_local : ndarray of shape (n_atoms,) of int64
        Dataset-local id of each atom.
    C : LinearMap of shape (n_constraints, n_atoms)
        Constraint coefficients: ``g_i = C[i] @ p - kappa[i] <= 0``, kept sparse
        (``C @ p``, ``C.T @ lam``, ``C.row(i)``, ``C.nnz``; ``np.asarray(C)`` for small
        problems): memory linear in atoms + constraints + their atom references.
    kappa : ndarray of shape (n_constraints,)
        Offsets.
    objective_coef : ndarray of shape (n_atoms,)
        The objective's atom coefficients (``c0``).
    objective_constant : float
        The objective's constant.
    constraint_names : tuple of str
        Unique names of the rows.
    rates : RateLayer
        Every named rate (every rate leaf of the objective and constraints,
        then every atom) as an affine function of the atoms.
    inverse_data : InverseData
        Rows back to the user's constraints.
    metric : MetricRows or None
        A non-linear objective ``psi(Z p + z0)`` (then ``objective_coef`` is
        zero and ``objective_constant`` 0); None for an affine objective.
    metric_constraints : tuple of MetricConstraintRows
        Constraints on convex metrics; they are the last rows of
        ``constraint_names`` (after the ``C`` rows).
    atom_offsets : ndarray of shape (n_atoms,) of int64 or None
        The trainable threshold (offset) each atom's members are scored
        against, ``h(x) - b[atom_offsets[a]]``; -1 for none (None: no atom has one).
    thresholds : tuple of str
        Names of the thresholds, in offset-id order.
    atom_contexts : tuple of tuple of Context
        For every global atom, the subsets (contexts) merged into it: their
        predicates recompute memberships under other labels (the plug-in
        oracle's counterfactual memberships, :mod:`rateopt._training._counterfactual`).
    """

    datasets: tuple
    atoms: tuple
    tables: Mapping
    atom_dataset: np.ndarray
    atom_local: np.ndarray
    C: np.ndarray
    kappa: np.ndarray
    objective_coef: np.ndarray
    objective_constant: float
    constraint_names: tuple
    rates: RateLayer
    inverse_data: InverseData
    metric: MetricRows = None
    metric_constraints: tuple = ()
    atom_offsets: np.ndarray = None
    thresholds: tuple = ()
    atom_contexts: tuple = ()

    @property
    def n_offsets(self) -> int:
        """Number of trainable thresholds (offsets) of the offset atoms (``rateopt.metrics.roc_auc``)."""
        return len(self.thresholds)

    @property
    def n_atoms(self) -> int:
        """Number of atoms."""
        return len(self.atoms)

    @property
    def rate_names(self) -> tuple:
        """Names of the rate layer's rates."""
        return self.rates.names

    @property
    def rate_coef(self) -> np.ndarray:
        """The rate layer's matrix ``A`` (n_rates, n_atoms), a sparse ``LinearMap``."""
        return self.rates.A

    @property
    def rate_constant(self) -> np.ndarray:
        """The rate layer's offsets ``b`` (n_rates,)."""
        return self.rates.b

    @property
    def n_constraints(self) -> int:
        """Number of constraint rows."""
        return len(self.constraint_names)

    #: What the statistics are called in messages.
    statistics_name = "atom_rates"

    @property
    def statistics_shape(self) -> tuple:
        """The shape of the statistics: (n_atoms,)."""
        return (self.n_atoms,)

    def objective_value(self, atom_rates) -> float:
        """The objective at atom rates ``p``: the metric's value, else ``objective_coef @ p + objective_constant``.

        Parameters
        ----------
        atom_rates : ndarray of shape (n_atoms,)
            The atom values ``p+(S_a)``.

        Returns
        -------
        float
            The objective's value.
        """
        p = atom_rates
        return (self.metric.objective(p) if self.metric is not None
                else float(self.objective_coef @ p + self.objective_constant))

    def rate_values(self, atom_rates) -> np.ndarray:
        """Every named rate's value (in :attr:`rate_names` order) at atom rates ``p``.

        Parameters
        ----------
        atom_rates : ndarray of shape (n_atoms,)
            The atom values ``p+(S_a)``.

        Returns
        -------
        ndarray of shape (n_rates,)
            The rates' values.
        """
        return self.rates.values(atom_rates)

    def constraint_values(self, atom_rates) -> np.ndarray:
        """Every constraint's value at atom rates ``p``: ``C p - kappa``, then the metric constraints.

        Parameters
        ----------
        atom_rates : array-like of shape (n_atoms,)
            The atom values ``p+(S_a)`` (expected values for a mixture).

        Returns
        -------
        ndarray of shape (n_constraints,)
            ``g_i`` in the order of ``constraint_names`` (``<= 0`` holds).
        """
        p = np.asarray(atom_rates, dtype=np.float64)
        g = self.C @ p - self.kappa
        if self.metric_constraints:
            g = np.concatenate([g, [r.value(p) for r in self.metric_constraints]])
        return g

    def atom_rates(self, values) -> np.ndarray:
        """Global atom values from per-example decision values.

        Parameters
        ----------
        values : mapping of str to ndarray of shape (n_samples,)
            Per dataset name, decisions in {0, 1} or expected decisions in [0, 1].

        Returns
        -------
        ndarray of shape (n_atoms,)
            ``p+(S_a)`` for every atom.
        """
        if self.thresholds:
            raise RateoptError(
                f"the problem has trainable thresholds ({', '.join(self.thresholds[:3])}"
                f"{', ...' if len(self.thresholds) > 3 else ''}): their rates depend on the thresholds, not only "
                "on decisions; evaluate ROC-AUC exactly with rateopt.metrics.roc_auc_lj, or pass atom rates "
                "to evaluate_atom_rates")
        out = np.empty(self.n_atoms, dtype=np.float64)
        for name in self.datasets:
            t = self.tables[name]
            out[t.offset : t.offset + t.n_atoms] = t.atom_rates(values[name])
        return out



@dataclass(frozen=True, eq=False)
class Evaluation:
    """Objective, constraint values and rates of one predictor.

    Parameters
    ----------
    objective : float
        The objective's value.
    constraints : dict of str to float
        ``g_i`` per constraint name (LHS minus RHS in the ``<= 0`` normal form;
        positive values are violations).
    violations : dict of str to float
        ``max(0, g_i)`` per constraint name.
    max_violation : float
        The largest violation (0 when every constraint holds or there is none).
    rates : dict of str to float
        Every rate leaf of the problem and every atom, by name.
    atom_rates : ndarray of shape (n_atoms,)
        The atom values ``p+(S_a)``.
    """

    objective: float
    constraints: dict
    violations: dict
    max_violation: float
    rates: dict
    atom_rates: np.ndarray

    def is_feasible(self, tol: float = 0.0) -> bool:
        """Whether every constraint holds up to ``tol``.

        Parameters
        ----------
        tol : float, default=0.0
            Allowed violation.

        Returns
        -------
        bool
            ``max_violation <= tol``.
        """
        return self.max_violation <= tol

    def __repr__(self) -> str:
        return (
            f"Evaluation(objective={self.objective:.6g}, max_violation={self.max_violation:.6g}, "
            f"n_constraints={len(self.constraints)}, n_rates={len(self.rates)})"
        )
