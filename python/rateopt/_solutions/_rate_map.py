"""The affine maps from a run's statistics to the objective and the constraints (:class:`RateMap`).

Two-class statistics are atom rates; K-class statistics are the flattened,
normalized confusion counts (:mod:`rateopt._training._class_spec`). Both
arities compile to the same maps, so :class:`~rateopt.TrainResult` derives
every value from its recorded statistics the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._compiler._linear_map import LinearMap

__all__ = ["RateMap"]


@dataclass(frozen=True, eq=False)
class RateMap:
    """The affine maps from atom rates to the objective and the constraints.

    ``objective = c0 . rates + const0`` and ``constraints = C rates - kappa``
    (``<= 0`` holds). ``C`` is the compiled ``LinearMap``
    (an array given here becomes one).
    """

    c0: np.ndarray
    const0: float
    C: np.ndarray
    kappa: np.ndarray
    constraint_names: tuple
    metric: object = None
    metric_constraints: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "C", LinearMap.from_dense(self.C, (np.shape(self.C)[0], np.shape(self.c0)[0])))

    @classmethod
    def of(cls, spec):
        """The maps of a :class:`~rateopt._training._spec.GameSpec`.

        A factored ``C = B A`` (the K-class games' map) is kept as its
        product, one sparse factor: the form a result file stores, so that a
        loaded result recomputes its constraint values bit for bit.
        """
        C = spec.C if spec.C.A is None else LinearMap(spec.C.tocsr())
        return cls(spec.c0, float(spec.const0), C, spec.kappa, tuple(spec.constraint_names), spec.metric,
                   tuple(spec.metric_constraints))

    def objective(self, atom_rates):
        """The objective at one vector of atom rates: exact for a mixture's expected atom rates."""
        if self.metric is not None:
            return self.metric.objective(atom_rates)
        return float(self.c0 @ atom_rates + self.const0)

    def objectives(self, atom_rates):
        """Objective of each row of ``atom_rates`` (n_recorded, n_atoms)."""
        return np.array([self.objective(r) for r in atom_rates])

    def constraints(self, atom_rates):
        """Constraint values of each row of ``atom_rates``: shape (n_recorded, n_constraints)
        (the rows of ``C``, then the metric constraints)."""
        m = self.C.shape[0]
        n = len(atom_rates)
        R = np.asarray(atom_rates, dtype=np.float64).reshape(n, self.C.shape[1])
        # one product for every record (row by row, each entry the same sum as C @ r in the same order)
        G = (np.asarray(self.C @ R.T).reshape(m, n).T - self.kappa).reshape(n, m)
        if self.metric_constraints:
            extra = np.array([[c.value(r) for c in self.metric_constraints] for r in atom_rates])
            G = np.hstack([G, extra.reshape(len(atom_rates), len(self.metric_constraints))])
        return G
