"""The fused K-column multiclass pass: K scores per row, prediction counts, cost proxies and gradients.

:class:`ClassCells` (each row's cell and weight) is validated once, like
:class:`~rateopt.core.AtomTable`. :func:`multiclass_pass` then runs one pass
over the features at a linear model with K columns and returns the weighted
prediction counts per cell, the exact values and convex proxies of two cost
tables, and the proxy's gradient; :func:`multiclass_scores` gives the K scores
of every row. The cheap checks of the small arrays (model, costs, proxies) are
made here on every call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._utils._validation import as_real_array
from ..exceptions import NumericalError
from ._kernel import margin_and_rows
from ._matrix import FeatureMatrix, check_finite, checked_count, checked_ids, checked_weights
from ._runtime import extension as _core
from ._threads import resolve_n_threads

__all__ = ["ClassCells", "MULTICLASS_PROXIES", "MulticlassPassResult", "multiclass_pass", "multiclass_scores"]

MULTICLASS_PROXIES = {"softmax": 0, "hinge": 1}
"""The proxies of a cost table in :func:`multiclass_pass`, by name (values are the core's codes)."""


class ClassCells:
    """Each row's cell and weight, validated once, for :func:`multiclass_pass`.

    A cell groups rows that share a cost vector: the cost tables of a pass have
    one row per cell (a cell is typically a (label, group) pair).

    Parameters
    ----------
    cells : array-like of int of shape (n_samples,)
        The cell of every row, in ``[0, n_cells)``.
    weights : array-like of float of shape (n_samples,)
        Row weights, finite and non-negative.
    n_cells : int
        The number of cells (>= 1).

    Attributes
    ----------
    cells : ndarray of int32 of shape (n_samples,)
        Read-only.
    weights : ndarray of float64 of shape (n_samples,)
        Read-only.
    n_samples : int
        Number of rows.
    n_cells : int
        Number of cells.

    Raises
    ------
    ValueError
        If an array is not 1-D or not numeric, the lengths differ, a cell id is
        outside ``[0, n_cells)``, a weight is negative or not finite, or
        ``n_cells`` is not an integer in ``[1, 2**31)``. The message names the
        argument.

    Examples
    --------
    >>> from rateopt.core import ClassCells
    >>> c = ClassCells([0, 1, 1], [1.0, 0.5, 2.0], n_cells=2)
    >>> c.n_samples, c.n_cells, c.cells.dtype.name
    (3, 2, 'int32')
    """

    # Read-only properties over private slots, as AtomTable: the core trusts the ids it was given.
    __slots__ = ("_cells", "_weights", "_n_cells")

    def __init__(self, cells, weights, n_cells):
        n_cells = checked_count(n_cells, "n_cells", low=1, not_integer=ValueError)
        ids = np.asarray(cells)
        if ids.ndim != 1:
            raise ValueError(f"cells must be 1-D (n_samples,), got shape {ids.shape}")
        if ids.size and ids.dtype.kind not in "iu":
            raise ValueError(f"cells must hold integers, got dtype {ids.dtype}")
        w = np.asarray(weights)
        if w.dtype.kind not in "biuf":
            raise ValueError(f"weights must hold real numbers, got dtype {w.dtype}")
        if w.shape != ids.shape:
            raise ValueError(f"weights must have shape (n_samples={ids.shape[0]},), got {w.shape}")
        self._cells = checked_ids(ids, "cells", n_cells, n_name="n_cells", kind="cell", at="row")
        self._weights = checked_weights(w, "weights", at="row")
        self._n_cells = n_cells

    @property
    def cells(self):
        """Cell ids (int32, read-only)."""
        return self._cells

    @property
    def weights(self):
        """Row weights (float64, read-only)."""
        return self._weights

    @property
    def n_samples(self):
        """Number of rows."""
        return self._cells.shape[0]

    @property
    def n_cells(self):
        """Number of cells."""
        return self._n_cells

    def __repr__(self):
        return f"ClassCells(n_samples={self.n_samples}, n_cells={self.n_cells})"


@dataclass(frozen=True)
class MulticlassPassResult:
    """What one call of :func:`multiclass_pass` returns.

    Parameters
    ----------
    counts, proxy_value, objective_value, constraint_value, grad, grad_intercept : ndarray, float or None
        The attributes below.

    Attributes
    ----------
    counts : ndarray of shape (n_cells, n_classes)
        ``counts[c, k]``: the total weight of the rows of cell ``c`` predicted ``k``.
    proxy_value : float
        The summed proxies of both cost tables.
    objective_value : float
        The exact 0-1 value ``sum_i w_i cost_objective[c_i, yhat_i]``.
    constraint_value : float
        The exact 0-1 value ``sum_i w_i cost_constraints[c_i, yhat_i]``.
    grad : ndarray of shape (n_features, n_classes) or None
        Subgradient of ``proxy_value`` with respect to ``coef`` (None without ``gradient``).
    grad_intercept : ndarray of shape (n_classes,) or None
        Subgradient of ``proxy_value`` with respect to ``intercept`` (None without ``gradient``).
    """

    counts: np.ndarray
    proxy_value: float
    objective_value: float
    constraint_value: float
    grad: np.ndarray | None
    grad_intercept: np.ndarray | None


def _proxy_code(name, arg):
    if not isinstance(name, str) or name not in MULTICLASS_PROXIES:
        raise ValueError(f"{arg} must be one of {sorted(MULTICLASS_PROXIES)}, got {name!r}")
    return MULTICLASS_PROXIES[name]


def _finite_float_array(a, name, shape, spelled):
    """``a`` as a finite C-contiguous float64 array of ``shape`` (errors name ``name`` and ``spelled``)."""
    try:
        arr = as_real_array(a, name)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of real numbers of shape {spelled} ({exc})") from None
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {spelled}, got {arr.shape}")
    check_finite(arr, name)
    return arr


def _model(X, coef, intercept):
    """The features and the checked model (coef, intercept) of a pass."""
    Xm = X if isinstance(X, FeatureMatrix) else FeatureMatrix(X)
    d = Xm.n_features
    shape = np.shape(coef) if not isinstance(coef, np.ndarray) else coef.shape
    if len(shape) != 2 or shape[0] != d or shape[1] < 2:
        raise ValueError(f"coef must have shape (n_features={d}, n_classes >= 2), got {tuple(shape)}")
    coef = _finite_float_array(coef, "coef", tuple(shape), f"(n_features={d}, n_classes >= 2)")
    K = coef.shape[1]
    intercept = _finite_float_array(intercept, "intercept", (K,), f"(n_classes={K},)")
    return Xm, coef, intercept


def _nonfinite_error(count):
    return NumericalError(
        f"the scores x.coef + intercept of {count} row(s) are not finite (overflow, or inf - inf): "
        "scale X or reduce coef"
    )


def multiclass_pass(X, coef, intercept, cells, cost_objective, cost_constraints, *, objective_proxy="softmax",
                    constraint_proxy="hinge", gradient=True, margin=1.0, rows=None, n_threads=None, value=True):
    """Prediction counts, cost values, their proxies and gradients of a K-class linear model in one pass.

    Row ``i`` has the K scores ``s_k = x_i . coef[:, k] + intercept[k]`` and
    predicts ``yhat_i = argmax_k s_k`` (lowest index on ties, as
    :func:`numpy.argmax`). For a cost table ``cost`` of shape
    ``(n_cells, n_classes)`` and the row's cost vector ``a = cost[c_i]``, let
    ``t = argmin_k a_k`` (lowest index on ties) and ``D_k = a_k - a_t``; a row
    whose ``max_k D_k`` is 0 adds no proxy. The proxies (:data:`MULTICLASS_PROXIES`):

    * ``"softmax"``: ``(max_k D_k) (logsumexp(s) - s_t)``, the cost-weighted
      softmax cross-entropy, with gradient ``(max_k D_k) (softmax(s) - e_t)``;
    * ``"hinge"``: ``max_{k != t} D_k max(0, margin + s_k - s_t)``
      (slack-rescaled Crammer-Singer), with subgradient ``+D_k*`` at the
      maximizing ``k*`` (lowest index on ties) and ``-D_k*`` at ``t`` when the
      loss is > 0. The softmax does not use ``margin``.

    With ``rows`` (a minibatch), only those rows are visited (repeats count
    once per occurrence) and every output is scaled by
    ``n_samples / len(rows)``: an unbiased estimate of the full pass, as in
    :func:`rate_kernel`. Without it the pass reads every row, unscaled.

    One pass over ``X`` (its K scores share each read of ``x_ij``), with
    OpenMP over contiguous row chunks reduced in order: bit-identical results
    for a fixed ``n_threads``.

    Parameters
    ----------
    X : FeatureMatrix or array-like of shape (n_samples, n_features)
        The features, dense or CSR, float32 or float64. Pass a
        :class:`FeatureMatrix` inside loops: anything else is validated on every call.
    coef : array-like of shape (n_features, n_classes)
        The model's weights, feature-major (finite; ``n_classes >= 2``).
    intercept : array-like of shape (n_classes,)
        The model's intercepts (finite).
    cells : ClassCells
        Each row's cell and weight, with ``cells.n_samples == n_samples``.
    cost_objective : array-like of shape (n_cells, n_classes)
        The objective's cost of predicting each class in each cell (finite).
    cost_constraints : array-like of shape (n_cells, n_classes)
        The constraints' combined cost table (finite), e.g. multipliers times constraint costs.
    objective_proxy : {"softmax", "hinge"}, default="softmax"
        The proxy of ``cost_objective``.
    constraint_proxy : {"softmax", "hinge"}, default="hinge"
        The proxy of ``cost_constraints``.
    gradient : bool, default=True
        Whether to compute the gradient (without it ``grad`` and
        ``grad_intercept`` are None and no gradient work is done).
    margin : float, default=1.0
        The hinge's margin (finite, > 0).
    rows : array-like of int of shape (n_batch,), default=None
        Minibatch row ids in ``[0, n_samples)`` (None: every row).
    n_threads : int, default=None
        ``None`` follows the OpenMP setting, ``-1`` uses all cores.
    value : bool, default=True
        Whether to compute ``proxy_value``. Without it (a training loop that
        reads only the counts and the gradient) no row's softmax logarithm is
        taken, ``proxy_value`` is NaN, and every other output is the same,
        bit for bit.

    Returns
    -------
    MulticlassPassResult
        The counts, the proxy value ``sum_i w_i (phi_obj,i + phi_con,i)``
        (NaN without ``value``), both exact cost values and, with
        ``gradient``, the gradients.

    Raises
    ------
    ValueError
        On a shape mismatch (the message names the argument and the expected
        shape), non-finite ``coef``/``intercept``/costs, ``n_classes < 2``, an
        unknown proxy, a ``margin`` that is not a finite number > 0, empty or
        out-of-range ``rows``, or an invalid ``n_threads``.
    TypeError
        If ``cells`` is not a :class:`ClassCells`.
    rateopt.exceptions.NumericalError
        If a row's scores are not finite, or a proxy value or gradient overflowed.

    See Also
    --------
    multiclass_scores : The K scores of every row.
    ClassCells : The rows' cells and weights.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import ClassCells, multiclass_pass
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> cells = ClassCells([0, 1, 1], np.ones(3), n_cells=2)
    >>> cost = np.array([[0.0, 1.0], [1.0, 0.0]])  # cell c's correct class is c
    >>> res = multiclass_pass(X, np.eye(2), np.zeros(2), cells, cost, np.zeros((2, 2)))
    >>> res.counts.tolist(), res.objective_value  # row 2 ties: predicted 0, wrong
    ([[1.0, 0.0], [1.0, 1.0]], 1.0)
    """
    Xm, coef, intercept = _model(X, coef, intercept)
    K = coef.shape[1]
    if not isinstance(cells, ClassCells):
        raise TypeError(f"cells must be a ClassCells, got {type(cells).__name__}")
    if cells.n_samples != Xm.n_samples:
        raise ValueError(f"cells has n_samples = {cells.n_samples} but X has n_samples = {Xm.n_samples}")
    spelled = f"(n_cells={cells.n_cells}, n_classes={K})"
    cost_objective = _finite_float_array(cost_objective, "cost_objective", (cells.n_cells, K), spelled)
    cost_constraints = _finite_float_array(cost_constraints, "cost_constraints", (cells.n_cells, K), spelled)
    obj_code = _proxy_code(objective_proxy, "objective_proxy")
    con_code = _proxy_code(constraint_proxy, "constraint_proxy")
    if not isinstance(gradient, (bool, np.bool_)):
        raise ValueError(f"gradient must be a bool, got {gradient!r}")
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"value must be a bool, got {value!r}")
    threads = resolve_n_threads(n_threads)
    margin, rows = margin_and_rows(Xm, margin, rows)
    args = (coef, intercept, cells.cells, cells.weights, cells.n_cells, cost_objective, cost_constraints, obj_code,
            con_code, bool(gradient), margin, rows, threads)
    if Xm.is_sparse:
        out = _core.multiclass_pass_csr(*Xm.csr_arrays, Xm.n_samples, Xm.n_features, *args, value=bool(value))
    else:
        out = _core.multiclass_pass_dense(Xm.data, *args, value=bool(value))
    counts, proxy_value, objective_value, constraint_value, grad, grad_intercept, n_nonfinite = out
    if n_nonfinite:
        raise _nonfinite_error(n_nonfinite)
    checked = [counts, np.array([proxy_value if value else 0.0, objective_value, constraint_value])]
    if gradient:
        checked += [grad, grad_intercept]
    if not all(np.all(np.isfinite(a)) for a in checked):
        raise NumericalError("the multiclass pass overflowed (a non-finite count, cost value, proxy value or "
                             "gradient): scale X or reduce coef, or the costs and weights")
    return MulticlassPassResult(counts=counts, proxy_value=float(proxy_value),
                                objective_value=float(objective_value), constraint_value=float(constraint_value),
                                grad=grad, grad_intercept=grad_intercept)


def multiclass_scores(X, coef, intercept, *, n_threads=None):
    """The K scores of every row, ``X @ coef + intercept``, in one pass over ``X``.

    The scores are those :func:`multiclass_pass` predicts with (the same
    arithmetic, row by row), so ``argmax`` of a row gives its prediction.

    Parameters
    ----------
    X : FeatureMatrix or array-like of shape (n_samples, n_features)
        The features, dense or CSR, float32 or float64.
    coef : array-like of shape (n_features, n_classes)
        The model's weights, feature-major (finite; ``n_classes >= 2``).
    intercept : array-like of shape (n_classes,)
        The model's intercepts (finite).
    n_threads : int, default=None
        ``None`` follows the OpenMP setting, ``-1`` uses all cores.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        The scores, float64.

    Raises
    ------
    ValueError
        On a shape mismatch, non-finite ``coef``/``intercept``, ``n_classes < 2``
        or an invalid ``n_threads``.
    rateopt.exceptions.NumericalError
        If a row's scores are not finite.

    See Also
    --------
    multiclass_pass : Counts, costs, proxies and gradients at these scores.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import multiclass_scores
    >>> multiclass_scores(np.array([[1.0, 2.0]]), np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0.5, 0.0]))
    array([[1.5, 2. ]])
    """
    Xm, coef, intercept = _model(X, coef, intercept)
    threads = resolve_n_threads(n_threads)
    if Xm.is_sparse:
        scores, n_nonfinite = _core.multiclass_scores_csr(*Xm.csr_arrays, Xm.n_samples, Xm.n_features, coef,
                                                          intercept, threads)
    else:
        scores, n_nonfinite = _core.multiclass_scores_dense(Xm.data, coef, intercept, threads)
    if n_nonfinite:
        raise _nonfinite_error(n_nonfinite)
    return scores
