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

from .._language._data import Dataset
from ..exceptions import EmptySubsetError

__all__ = ["MacroF1", "macro_f1_gradient", "macro_f1_loss"]


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
        if isinstance(context, Dataset):  # a dataset: its whole context
            context = context.context()
        self.context = context

    def subset(self, compiled):
        """The subset's cells in a compiled problem, and each class's weight among their rows.

        Parameters
        ----------
        compiled : MulticlassCompiled
            The problem's compiled form.

        Returns
        -------
        cells : ndarray of bool of shape (n_cells,)
        true : ndarray of shape (K,)
            The weight of the subset's rows of each true class.
        """
        m = np.asarray(compiled.context_cells(self.context), dtype=bool)
        true = np.asarray(compiled.cell_label_weights, dtype=np.float64)[m].sum(axis=0)
        if true.sum() <= 0:
            raise EmptySubsetError(f"macro-F1 on an empty subset {self.context.label!r}")
        return m, true

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
        return macro_f1_loss(N, *self.subset(compiled))

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
        return macro_f1_gradient(N, *self.subset(compiled))

    def __repr__(self) -> str:
        return f"MacroF1({self.context.label})"


def _parts(N, cells, true):
    """Each class's true positives and F1 denominator ``P(yhat=k) + P(y=k)`` (unnormalized) on the cells."""
    Ns = N[cells]  # (g, y, k)
    return np.einsum("gkk->k", Ns), Ns.sum(axis=(0, 1)) + true


def macro_f1_loss(N, cells, true):
    """``1 - macro-F1`` of confusion counts on a subset of cells.

    Parameters
    ----------
    N : ndarray of shape (n_cells, K, K)
        The confusion counts.
    cells : ndarray of bool of shape (n_cells,)
        The subset's cells.
    true : ndarray of shape (K,)
        The weight of the subset's rows of each true class (:meth:`MacroF1.subset`).

    Returns
    -------
    float
    """
    tp, den = _parts(N, cells, true)
    f1 = np.where(den > 0, 2.0 * tp / np.where(den > 0, den, 1.0), 0.0)
    return float(1.0 - f1.mean())


def macro_f1_gradient(N, cells, true):
    """The gradient of :func:`macro_f1_loss` with respect to ``N``.

    Parameters
    ----------
    N : ndarray of shape (n_cells, K, K)
        The confusion counts.
    cells : ndarray of bool of shape (n_cells,)
        The subset's cells.
    true : ndarray of shape (K,)
        The weight of the subset's rows of each true class.

    Returns
    -------
    ndarray of shape (n_cells, K, K)
    """
    tp, den = _parts(N, cells, true)
    K = N.shape[1]
    den = np.where(den > 0, den, 1.0)
    # d(1 - mean F1)/dN[g, y, k] = -1/K (2 [y == k] / den_k - 2 tp_k / den_k^2), for the subset's cells g
    per_cell = np.broadcast_to(2.0 * tp / den**2 / K, (K, K)) - np.diag(2.0 / den / K)
    G = np.zeros_like(N, dtype=np.float64)
    G[cells] = per_cell
    return G
