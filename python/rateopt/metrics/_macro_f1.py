"""Macro-averaged F1 of a K-class classifier: a non-linear function of its confusion counts.

:class:`MacroF1` is the K-class objective ``1 - mean_k F1_k``. It reads the
confusion counts ``N[g, y, k]`` of a K-class problem's cells (see
:mod:`rateopt._compiler._confusion`) and gives its value and its gradient in
``N``, which K-class training uses to linearize it at the running average of
the iterates (the Frank-Wolfe player of Narasimhan et al. (2019)).

It is not registered in :data:`~rateopt.metrics._base.METRIC_KINDS`: a
:class:`~rateopt.metrics.Metric` is a function ``psi(z)`` of a few affine rate
expressions with a closed-form best response of the three-player game's slack
player, rebuilt from saved parameters; macro-F1 is a function of the whole
(n_cells, K, K) counts tensor, with no slack player and no saved form.
"""

from __future__ import annotations

import numpy as np

from .._language._classes import ClassDataset
from ..exceptions import EmptySubsetError

__all__ = ["MacroF1"]


class MacroF1:
    """Macro-averaged F1 over the classes on a subset, as an objective: ``1 - mean_k F1_k`` is minimized.

    ``F1_k = 2 P(yhat=k, y=k) / (P(yhat=k) + P(y=k))``: a ratio of two
    linear functions of the confusion counts, so ``1 - macro-F1`` is a
    non-linear function of the rates (Narasimhan et al. (2019)'s metrics). Training
    linearizes it at the running average of the iterates' counts (the
    Frank-Wolfe player of Narasimhan et al. (2019), ``lambda_t = grad psi(R_{t-1})``).

    Parameters
    ----------
    context : Context or ClassDataset
        The subset (default: a whole dataset).

    Attributes
    ----------
    context : Context
        The subset.
    name : str
        ``"1 - macro_f1"``, in reports.

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> ds = ro.ClassDataset(np.zeros((4, 1)), [0, 1, 2, 0])
    >>> p = ro.Problem(objective=ro.metrics.MacroF1(ds), datasets=ds)
    >>> round(p.evaluate(np.array([0, 1, 1, 0])).objective, 4)
    0.4444
    """

    name = "1 - macro_f1"

    def __init__(self, context):
        if isinstance(context, ClassDataset):
            context = context.context()
        self.context = context

    def _parts(self, compiled, N):
        """The subset's cells, each class's true positives and F1 denominator ``P(yhat=k) + P(y=k)`` (unnormalized)."""
        m = compiled.context_cells(self.context)
        true = compiled.cell_label_weights[m].sum(axis=0)
        if true.sum() <= 0:
            raise EmptySubsetError(f"macro-F1 on an empty subset {self.context.label!r}")
        Ns = N[m]  # (g, y, k)
        return m, np.einsum("gkk->k", Ns), Ns.sum(axis=(0, 1)) + true

    def value(self, compiled, N) -> float:
        """``1 - macro-F1`` of confusion counts.

        Parameters
        ----------
        compiled : MulticlassCompiled
            The problem's compiled form (its cells and label weights).
        N : ndarray of shape (n_cells, K, K)
            The confusion counts.

        Returns
        -------
        float
        """
        _, tp, den = self._parts(compiled, N)
        f1 = np.where(den > 0, 2.0 * tp / np.where(den > 0, den, 1.0), 0.0)
        return float(1.0 - f1.mean())

    def gradient(self, compiled, N) -> np.ndarray:
        """The gradient of :meth:`value` with respect to ``N``.

        Parameters
        ----------
        compiled : MulticlassCompiled
            The problem's compiled form.
        N : ndarray of shape (n_cells, K, K)
            The confusion counts.

        Returns
        -------
        ndarray of shape (n_cells, K, K)
        """
        m, tp, den = self._parts(compiled, N)
        K = N.shape[1]
        den = np.where(den > 0, den, 1.0)
        # d(1 - mean F1)/dN[g, y, k] = -1/K (2 [y == k] / den_k - 2 tp_k / den_k^2), for the subset's cells g
        per_cell = np.broadcast_to(2.0 * tp / den**2 / K, (K, K)) - np.diag(2.0 / den / K)
        G = np.zeros_like(N, dtype=np.float64)
        G[m] = per_cell
        return G

    def __repr__(self) -> str:
        return f"MacroF1({self.context.label})"
