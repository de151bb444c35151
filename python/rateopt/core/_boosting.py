"""The boosting pass: atom rates and the per-row derivatives of a proxy combination, in one pass over the scores.

:func:`boosting_pass` is what one iteration of the rate-constrained game inside
boosting (:class:`rateopt.BoostingModel`) needs from the current ensemble: the
0-1 rate of every atom at the training scores, and the gradient and Hessian of
the proxy of one combination of atom rates with respect to each row's score,
written into arrays the caller owns (the ones the backend's custom objective
consumes). The proxies and their derivatives are stated in
``cpp/include/rateopt/boosting_pass.hpp``.
"""

from __future__ import annotations

import numpy as np

from .._utils._validation import as_finite_scalar, as_float_vector
from ..exceptions import NumericalError
from ._matrix import AtomTable
from ._multiclass import ClassCells
from ._runtime import extension as _core
from ._threads import resolve_n_threads

__all__ = ["BOOSTING_PROXIES", "boosting_multiclass_pass", "boosting_pass", "boosting_pass_trusted"]

#: The proxies of :func:`boosting_pass`, by name (values are the core's codes).
BOOSTING_PROXIES = {"logistic": 0, "squared_hinge": 1}


def _out_array(a, name, n):
    """``a`` checked as an output of ``n`` rows (an int), or of the shape ``n`` (a tuple)."""
    shape = n if isinstance(n, tuple) else (n,)
    if not isinstance(a, np.ndarray) or a.dtype not in (np.float32, np.float64) or a.ndim != len(shape):
        raise TypeError(f"{name} must be a {len(shape)}-D float32 or float64 ndarray")
    if not (a.flags.c_contiguous and a.flags.writeable):
        raise ValueError(f"{name} must be C-contiguous and writable")
    if a.shape != shape:
        raise ValueError(f"{name} has shape {a.shape}, expected {shape}" if isinstance(n, tuple)
                         else f"{name} has length {a.shape[0]}, expected n_samples={n}")
    return a


def boosting_pass(scores, atoms, coef, *, proxy="logistic", scale=1.0, grad=None, hess=None, n_threads=None,
                  hess_coef=None):
    """Every atom's 0-1 rate and each row's proxy gradient and Hessian, in one pass over the scores.

    With ``u_j = sum_a coef_a v_ja`` the net coefficient of row ``j`` (``v`` the
    atom table's weights), the row's term ``u_j 1[s_j >= 0]`` of the
    combination ``coef . rates`` is replaced by ``u_j psi(s_j)``:

    * ``"logistic"``: ``psi(s) = ln(1 + e^s)`` (``u > 0``), ``-ln(1 + e^-s)``
      (``u < 0``, up to a constant); ``g = u sigmoid(+-s)``,
      ``h = |u| sigmoid(s) sigmoid(-s)``. It bounds ``ln 2 * 1[s >= 0]``.
    * ``"squared_hinge"``: ``psi(s) = max(0, 1 + s)^2 / 2`` (``u > 0``),
      ``-max(0, 1 - s)^2 / 2`` (``u < 0``, up to a constant);
      ``g = u max(0, 1 +- s)``, ``h = |u|`` where that margin term is positive,
      else 0. It bounds ``1[s >= 0] / 2``.

    With ``hess_coef`` (a curvature coefficient per atom, ``>= 0``), each
    row's ``|u_j|`` in the Hessian is replaced by ``w_j = sum_a hess_coef_a v_ja``
    (the gradient is unchanged). Given the sum of the absolute values of the
    terms whose net is ``coef`` (``w_j >= |u_j|``), ``h`` is the curvature of
    the sum of the terms' own proxies, which bounds the net proxy's from
    above: where the terms nearly cancel, the Newton step ``-g / h`` shrinks
    with ``|u_j| / w_j`` instead of staying full size.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,), float32 or float64
        The current scores (positive decision iff ``s >= 0``).
    atoms : AtomTable
        The membership table of the same rows.
    coef : array-like of shape (n_atoms,)
        The combination's per-atom coefficients (finite).
    proxy : {"logistic", "squared_hinge"}, default="logistic"
    scale : float, default=1.0
        Factor on both derivatives.
    grad, hess : ndarray of shape (n_samples,), float32 or float64, default=None
        Where to write the derivatives (C-contiguous, writable, one dtype):
        None allocates float32 arrays, the dtype the boosting backends consume.
    n_threads : int, default=None
        ``None`` follows the OpenMP setting, ``-1`` uses all cores.
    hess_coef : array-like of shape (n_atoms,), default=None
        Curvature coefficients (finite, ``>= 0``) of the Hessian; None:
        ``|u_j|``.

    Returns
    -------
    rates : ndarray of shape (n_atoms,)
        ``sum_j v_ja 1[s_j >= 0]``.
    grad, hess : ndarray of shape (n_samples,)
        The arrays written (``scale`` times each row's derivative).

    Raises
    ------
    ValueError
        On length mismatches, a non-finite ``coef`` or ``scale``, a negative
        or non-finite ``hess_coef``, an unknown
        ``proxy``, or read-only outputs.
    rateopt.exceptions.NumericalError
        If a score is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import AtomTable, boosting_pass
    >>> atoms = AtomTable.from_membership(np.ones((2, 1), bool))  # one atom, weights 1/2
    >>> rates, g, h = boosting_pass(np.array([0.0, -1.0]), atoms, np.array([2.0]), proxy="squared_hinge")
    >>> float(rates[0]), g.tolist(), h.tolist()
    (0.5, [1.0, 0.0], [1.0, 0.0])
    """
    if not isinstance(atoms, AtomTable):
        raise TypeError(f"atoms must be an AtomTable, got {type(atoms).__name__}")
    if proxy not in BOOSTING_PROXIES:
        raise ValueError(f"proxy must be one of {sorted(BOOSTING_PROXIES)}, got {proxy!r}")
    n = atoms.n_samples
    if not isinstance(scores, np.ndarray) or scores.dtype not in (np.float32, np.float64):
        scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.shape[0] != n:
        raise ValueError(f"scores must have shape (n_samples,)=({n},), got {scores.shape}")
    scores = np.ascontiguousarray(scores)
    coef = as_float_vector(coef, "coef", ("n_atoms", atoms.n_atoms))
    scale = as_finite_scalar(scale, "scale")
    grad = np.empty(n, dtype=np.float32) if grad is None else _out_array(grad, "grad", n)
    hess = np.empty(n, dtype=grad.dtype) if hess is None else _out_array(hess, "hess", n)
    if hess.dtype != grad.dtype:
        raise TypeError("grad and hess must have the same dtype")
    if hess_coef is not None:
        hess_coef = as_float_vector(hess_coef, "hess_coef", ("n_atoms", atoms.n_atoms))
        if np.any(hess_coef < 0):
            raise ValueError("hess_coef must be >= 0 (curvature coefficients)")
    rates, nonfinite = _core.boosting_pass(scores, atoms.indptr, atoms.indices, atoms.weights, atoms.n_atoms, coef,
                                           BOOSTING_PROXIES[proxy], scale, grad, hess,
                                           resolve_n_threads(n_threads), hess_coef)
    if nonfinite:
        raise NumericalError(f"{nonfinite} of the {n} scores are not finite")
    return rates, grad, hess


def boosting_pass_trusted(scores, atoms, coef, proxy, scale, grad, hess, n_threads, hess_coef=None):
    """:func:`boosting_pass` for a caller that checked its arguments once: the same computation, the same
    bits, without the per-call Python checks (a boosted run calls it once per tree).

    ``scores``: a C-contiguous float32 or float64 vector; ``proxy``: a code of
    :data:`BOOSTING_PROXIES`; ``grad``, ``hess``: C-contiguous writable arrays of one dtype;
    ``n_threads``: resolved (``resolve_n_threads``); ``hess_coef``: None or a C-contiguous
    float64 vector of finite values ``>= 0``. The compiled module still checks the
    lengths, dtypes and the finiteness of ``coef`` and ``scale``.

    Returns
    -------
    ndarray of shape (n_atoms,)
        The atom rates (``grad`` and ``hess`` are written in place).

    Raises
    ------
    rateopt.exceptions.NumericalError
        If a score is not finite.
    """
    rates, nonfinite = _core.boosting_pass(scores, atoms.indptr, atoms.indices, atoms.weights, atoms.n_atoms, coef,
                                           proxy, scale, grad, hess, n_threads, hess_coef)
    if nonfinite:
        raise NumericalError(f"{nonfinite} of the {atoms.n_samples} scores are not finite")
    return rates


def kept_bin_codes(scores, lows):
    """Each score's quantile bin of a boosted run's kept prefix: ``np.searchsorted(lows, scores, side="right")
    - 1``, as uint8, by a branch-free binary search per row (one step per bit of the bin number).

    ``scores``: a C-contiguous float32 or float64 vector, every score at least ``lows[0]``; ``lows``: 1 to
    256 finite, strictly ascending bounds of the same dtype (checked by the compiled module).

    Returns
    -------
    ndarray of uint8, shape (n_samples,)
    """
    return _core.kept_bin_codes(scores, lows)


def boosting_multiclass_pass(scores, cells, cost, *, scale=1.0, class_major=False, grad=None, hess=None,
                             n_threads=None):
    """The K-class boosting pass: every cell's 0-1 prediction counts and each row's softmax-proxy derivatives.

    Each row ``i`` (cell ``c``, weight ``w_i``) predicts ``argmax_k s_ik``
    (lowest index on ties). With ``a = cost[c]``, ``t = argmin_k a_k`` and
    ``D = a - a_t``, the row's proxy is ``max(D) (logsumexp(s_i) - s_it)``
    (the K-class pass's softmax, :func:`multiclass_pass`), whose derivatives
    with respect to the row's K scores are written, times ``scale * w_i``:
    ``g_ik = max(D) (p_ik - 1[k = t])`` and the diagonal Hessian
    ``h_ik = max(D) p_ik (1 - p_ik)``, ``p_i = softmax(s_i)``. A row of weight
    0, or whose cell's costs are all equal, gets 0.

    Parameters
    ----------
    scores : ndarray, float32 or float64
        The K scores of each row: shape (n_samples, K), or (K, n_samples) with
        ``class_major`` (LightGBM's layout).
    cells : ClassCells
        Each row's cell and weight.
    cost : array-like of shape (n_cells, K)
        The cost of predicting each class in each cell (finite).
    scale : float, default=1.0
        Factor on both derivatives.
    class_major : bool, default=False
        Whether ``scores`` (and ``grad``, ``hess``) are (K, n_samples).
    grad, hess : ndarray of the shape of ``scores``, float32 or float64, default=None
        Where to write the derivatives (C-contiguous, writable, one dtype):
        None allocates float32 arrays, the dtype the boosting backends consume.
    n_threads : int, default=None
        ``None`` follows the OpenMP setting, ``-1`` uses all cores.

    Returns
    -------
    counts : ndarray of shape (n_cells, K)
        ``counts[c, k]``: the weight of the rows of cell ``c`` predicting ``k``.
    grad, hess : ndarray of the shape of ``scores``
        The arrays written.

    Raises
    ------
    ValueError
        On shape mismatches, fewer than 2 classes, a non-finite ``cost`` or
        ``scale``, or read-only outputs.
    rateopt.exceptions.NumericalError
        If a score is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import ClassCells, boosting_multiclass_pass
    >>> cells = ClassCells([0, 0], [1.0, 1.0], n_cells=1)
    >>> counts, g, h = boosting_multiclass_pass(np.zeros((2, 2)), cells, [[0.0, 1.0]])
    >>> counts.tolist(), g[0].tolist(), h[0].tolist()
    ([[2.0, 0.0]], [-0.5, 0.5], [0.25, 0.25])
    """
    if not isinstance(cells, ClassCells):
        raise TypeError(f"cells must be a ClassCells, got {type(cells).__name__}")
    if not isinstance(scores, np.ndarray) or scores.dtype not in (np.float32, np.float64):
        scores = np.asarray(scores, dtype=np.float64)
    n = cells.n_samples
    if scores.ndim != 2 or scores.shape[1 if class_major else 0] != n or scores.shape[0 if class_major else 1] < 2:
        want = "(n_classes >= 2, n_samples)" if class_major else "(n_samples, n_classes >= 2)"
        raise ValueError(f"scores must have shape {want} with n_samples={n}, got {scores.shape}")
    scores = np.ascontiguousarray(scores)
    K = scores.shape[0 if class_major else 1]
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    if cost.shape != (cells.n_cells, K):
        raise ValueError(f"cost must have shape (n_cells, n_classes)=({cells.n_cells}, {K}), got {cost.shape}")
    if not np.all(np.isfinite(cost)):
        raise ValueError("cost must be finite")
    scale = as_finite_scalar(scale, "scale")
    grad = np.empty(scores.shape, dtype=np.float32) if grad is None else _out_array(grad, "grad", scores.shape)
    hess = np.empty(scores.shape, dtype=grad.dtype) if hess is None else _out_array(hess, "hess", scores.shape)
    if hess.dtype != grad.dtype:
        raise TypeError("grad and hess must have the same dtype")
    counts, nonfinite = _core.boosting_multiclass_pass(scores, bool(class_major), cells.cells, cells.weights,
                                                       cells.n_cells, cost, scale, grad, hess,
                                                       resolve_n_threads(n_threads))
    if nonfinite:
        raise NumericalError(f"{nonfinite} of the {n} rows' scores are not finite")
    return counts, grad, hess
