"""The validated Python face of the compiled core.

This module is the boundary between user data and the C++ kernels in
:mod:`rateopt._core`. Data objects (:class:`FeatureMatrix`, :class:`AtomTable`)
are validated **once**, when they are built; the per-iteration functions then
check only cheap invariants (lengths, finiteness of the small vectors) before
releasing the GIL and calling the core.

See ``docs/core_api.md`` for the mathematical contract.

References
----------
.. [1] A. Cotter, H. Jiang, S. Wang, T. Narayan, M. Gupta, S. You, K. Sridharan.
   "Optimization with Non-Differentiable Constraints with Applications to
   Fairness, Recall, Churn, and Other Goals". JMLR 20(172), 2019.
"""

from __future__ import annotations

import math
import operator
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .. import _core
from ._threads import resolve_n_threads
from .._utils._validation import as_finite_scalar, as_float_vector, as_index_array, as_real_array
from ..exceptions import DataCopyWarning, NumericalError

__all__ = [
    "FeatureMatrix",
    "AtomTable",
    "KernelResult",
    "rate_kernel",
    "rate_kernel_multi",
    "MultiKernelResult",
    "PROXIES",
    "swap_regret_update",
    "swap_regret_update_additive",
    "stationary_distribution",
    "external_update_multiplicative",
    "external_update_additive",
    "project_simplex",
    "project_l1_ball_nonneg",
    "LOOP_GAMES",
    "LoopState",
    "LoopRecords",
    "LoopOutcome",
    "run_train_loop",
]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_INDEX = (np.dtype(np.int32), np.dtype(np.int64))
# The checks below are memory-bound passes; two threads saturate this kind of machine.
_CHECK_THREADS = None


def _check_threads():
    return resolve_n_threads(_CHECK_THREADS)


def _warn_copy(name, why):
    warnings.warn(
        f"{name} was copied to {why}; pass it in that layout to avoid the copy",
        DataCopyWarning,
        stacklevel=4,
    )


class FeatureMatrix:
    """Features validated once, then read in place by every kernel call.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features) or scipy.sparse matrix/array
        A C-contiguous float32/float64 array or a CSR matrix with float32/float64
        data and int32/int64 indices is wrapped without a copy. Anything else
        (other dtypes, Fortran order, other sparse formats, lists, DataFrames)
        is converted once, with a :class:`~rateopt.exceptions.DataCopyWarning`.

    Attributes
    ----------
    data : ndarray or scipy.sparse.csr_matrix
        The wrapped (possibly converted) matrix.
    n_samples, n_features : int
        The shape.
    dtype : numpy.dtype
        float32 or float64.
    is_sparse : bool
        Whether ``data`` is CSR.
    index_dtype : numpy.dtype or None
        int32 or int64 for CSR, None for dense.

    Raises
    ------
    ValueError
        If ``X`` is not 2-D, has no rows, holds NaN or inf, or (CSR) has an
        inconsistent ``indptr`` or column indices outside ``[0, n_features)``.

    Notes
    -----
    A CSR matrix with unsorted column indices or duplicate entries is accepted;
    duplicates are summed, which is what scipy means by such a matrix. The
    core reads every stored value as float64 and sums in float64, so float32
    duplicates whose sum would pass the float32 range (where scipy's own
    ``sum_duplicates`` gives inf) still mean their finite float64 sum.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import FeatureMatrix
    >>> Xm = FeatureMatrix(np.ones((3, 2)))
    >>> Xm.n_samples, Xm.n_features, Xm.is_sparse
    (3, 2, False)
    """

    __slots__ = ("data", "n_samples", "n_features", "dtype", "is_sparse", "index_dtype")

    def __init__(self, X):
        if isinstance(X, FeatureMatrix):
            for name in self.__slots__:
                setattr(self, name, getattr(X, name))
            return
        if sp.issparse(X):
            self._init_sparse(X)
        else:
            self._init_dense(X)

    def _init_dense(self, X):
        converted = not isinstance(X, np.ndarray)
        if converted:
            try:
                arr = np.asarray(X)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"X could not be read as a numeric 2-D array: {exc}") from None
        else:
            arr = X
        if arr.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features), got an array with ndim={arr.ndim}")
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"X must hold real numbers, got dtype {arr.dtype}")
        if converted or arr.dtype not in _FLOATS or not arr.flags.c_contiguous:
            dtype = arr.dtype if arr.dtype in _FLOATS else np.float64
            arr = np.ascontiguousarray(arr, dtype=dtype)
            _warn_copy("X", f"a C-contiguous {np.dtype(dtype).name} NumPy array")
        if arr.shape[0] == 0:
            raise ValueError("X has no rows (n_samples == 0)")
        bad = _core.first_nonfinite(arr.reshape(-1), _check_threads())
        if bad >= 0:
            i, j = divmod(int(bad), arr.shape[1])
            raise ValueError(f"X holds a non-finite value (NaN or inf) at row {i}, column {j}")
        self.data = arr
        self.n_samples, self.n_features = arr.shape
        self.dtype = arr.dtype
        self.is_sparse = False
        self.index_dtype = None

    def _init_sparse(self, X):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got a sparse array with ndim={X.ndim}")
        if X.format != "csr":
            X = X.tocsr()
            _warn_copy("X", "CSR format")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must hold real numbers, got dtype {X.dtype}")
        if X.dtype not in _FLOATS:
            X = X.astype(np.float64)
            _warn_copy("X", "float64 data")
        if (
            X.indices.dtype not in _INDEX
            or X.indices.dtype != X.indptr.dtype
            or not (X.indices.flags.c_contiguous and X.indptr.flags.c_contiguous and X.data.flags.c_contiguous)
        ):
            X = sp.csr_matrix((np.ascontiguousarray(X.data), X.indices.astype(np.int64),
                               X.indptr.astype(np.int64)), shape=X.shape)
            # scipy picks the index dtype (int32 when the values fit): name what it chose.
            _warn_copy("X", f"CSR with contiguous {X.indices.dtype.name} indices")
        n, d = X.shape
        if n == 0:
            raise ValueError("X has no rows (n_samples == 0)")
        indptr, indices, data = X.indptr, X.indices, X.data
        threads = _check_threads()
        if indptr.shape[0] != n + 1:
            raise ValueError(f"X.indptr has length {indptr.shape[0]}, expected n_samples + 1 = {n + 1}")
        if indices.shape[0] != data.shape[0]:
            raise ValueError("X.indices and X.data have different lengths")
        if indptr[0] != 0 or indptr[-1] > indices.shape[0]:
            raise ValueError("X.indptr must start at 0 and end at most at len(X.indices)")
        bad = _core.first_decrease(indptr, threads)
        if bad >= 0:
            raise ValueError(f"X.indptr decreases at row {bad}: not a valid CSR matrix")
        nnz = int(indptr[-1])
        bad = _core.first_out_of_range(indices[:nnz], d, threads)
        if bad >= 0:
            raise ValueError(
                f"X.indices holds column {int(indices[bad])} at position {bad}, outside [0, n_features={d})"
            )
        bad = _core.first_nonfinite(data[:nnz], threads)
        if bad >= 0:
            row = int(np.searchsorted(indptr, bad, side="right") - 1)
            raise ValueError(f"X holds a non-finite value (NaN or inf) at row {row}, column {int(indices[bad])}")
        self.data = X
        self.n_samples, self.n_features = n, d
        self.dtype = X.dtype
        self.is_sparse = True
        self.index_dtype = indices.dtype

    def __repr__(self):
        kind = f"CSR[{self.index_dtype}]" if self.is_sparse else "dense"
        return f"FeatureMatrix({self.n_samples}x{self.n_features}, {self.dtype}, {kind})"


class AtomTable:
    """The atom-membership table the fused kernel consumes (CSR over examples).

    Row ``j`` lists the atoms example ``j`` belongs to,
    ``indices[indptr[j]:indptr[j+1]]``, with normalized weights
    ``weights[...] = w_j / sum_{i in S_a} w_i``, so that the positive-prediction
    rate of atom ``a`` is ``p+(S_a) = sum_j weights_ja * 1[s_j >= 0]``.

    Parameters
    ----------
    indptr : array-like of int, shape (n_samples + 1,)
        Row pointers, starting at 0, non-decreasing, ending at ``len(indices)``.
    indices : array-like of int, shape (nnz,)
        Atom ids in ``[0, n_atoms)``.
    weights : array-like of float, shape (nnz,)
        Normalized weights, finite and non-negative.
    n_atoms : int
        Number of atoms.

    Attributes
    ----------
    indptr : ndarray of int64
    indices : ndarray of int32
    weights : ndarray of float64
    n_samples : int
    n_atoms : int

    Raises
    ------
    ValueError
        If the arrays are inconsistent, an atom id is out of range or a weight is
        negative or not finite.

    See Also
    --------
    AtomTable.from_membership : build the table from a boolean membership matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import AtomTable
    >>> t = AtomTable.from_membership(np.array([[1, 0], [1, 1], [0, 1]], bool))
    >>> t.weights
    array([0.5, 0.5, 0.5, 0.5])
    """

    __slots__ = ("indptr", "indices", "weights", "n_samples", "n_atoms")

    def __init__(self, indptr, indices, weights, n_atoms):
        indptr = as_index_array(indptr, "atoms.indptr", np.int64)
        # int32 ids (what compiled tables hold) are read in place; other integer
        # dtypes go through int64 for the range check, then to the core's int32.
        indices = as_index_array(indices, "atoms.indices",
                                 np.int32 if getattr(indices, "dtype", None) == np.int32 else np.int64)
        weights = as_real_array(weights, "atoms.weights")
        try:
            n_atoms = operator.index(n_atoms)
        except TypeError:
            raise TypeError(f"atoms.n_atoms must be an integer, got {n_atoms!r}") from None
        if not 0 <= n_atoms <= np.iinfo(np.int32).max:
            raise ValueError(f"atoms.n_atoms must be in [0, 2**31), got {n_atoms}")
        if indptr.shape[0] < 2:
            raise ValueError("atoms.indptr must have length n_samples + 1 >= 2")
        if weights.ndim != 1 or weights.shape[0] != indices.shape[0]:
            raise ValueError("atoms.weights must be 1-D with the same length as atoms.indices")
        if indptr[0] != 0 or indptr[-1] != indices.shape[0]:
            raise ValueError("atoms.indptr must start at 0 and end at len(atoms.indices)")
        threads = _check_threads()
        bad = _core.first_decrease(indptr, threads)
        if bad >= 0:
            raise ValueError(f"atoms.indptr decreases at row {bad}")
        bad = _core.first_out_of_range(indices, n_atoms, threads)
        if bad >= 0:
            raise ValueError(f"atoms.indices holds atom id {int(indices[bad])} outside [0, n_atoms={n_atoms})")
        bad = _core.first_nonfinite(weights, threads)
        if bad >= 0:
            raise ValueError(f"atoms.weights holds a non-finite value at position {bad}")
        bad = _core.first_negative(weights, threads)
        if bad >= 0:
            raise ValueError(f"atoms.weights holds a negative weight {weights[bad]} at position {bad}")
        self.indptr = indptr
        self.indices = indices.astype(np.int32, copy=False)  # in range: ids < n_atoms < 2**31
        self.weights = weights
        self.n_samples = indptr.shape[0] - 1
        self.n_atoms = n_atoms

    @classmethod
    def from_membership(cls, membership, sample_weight=None):
        """Build the table from a membership matrix and per-example weights.

        Parameters
        ----------
        membership : array-like or sparse matrix of shape (n_samples, n_atoms)
            Nonzero where example ``j`` belongs to atom ``a``.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative example weights; ``None`` means all ones.

        Returns
        -------
        AtomTable

        Raises
        ------
        ValueError
            If a weight is negative or not finite, or an atom's weights sum to 0
            (an empty atom has no rate).
        """
        if getattr(membership, "ndim", np.ndim(membership)) != 2:
            raise ValueError("membership must be 2-D (n_samples, n_atoms)")
        M = sp.csr_matrix(membership, dtype=bool)
        M.sum_duplicates()
        M.eliminate_zeros()
        M.sort_indices()
        n, n_atoms = M.shape
        if sample_weight is None:
            w = np.ones(n)
        else:
            w = as_real_array(sample_weight, "sample_weight")
            if w.shape != (n,):
                raise ValueError(f"sample_weight has shape {w.shape}, expected ({n},)")
            if not np.all(np.isfinite(w)) or np.any(w < 0):
                raise ValueError("sample_weight must be finite and non-negative")
        rows = np.repeat(np.arange(n), np.diff(M.indptr))
        cols = M.indices
        # Normalized weights do not change when an atom's weights are scaled:
        # divide each atom's weights by the power of two at its largest weight
        # (exact), so that neither sums near 1e308 overflow nor subnormal
        # weights lose digits.
        wr = w[rows]
        top = np.zeros(n_atoms)
        np.maximum.at(top, cols, wr)
        empty = np.flatnonzero(top <= 0)
        if empty.size:
            raise ValueError(
                f"membership: atom {int(empty[0])} has zero total sample_weight; its rate is undefined"
            )
        scaled = np.ldexp(wr, -np.frexp(top)[1][cols])
        sizes = np.bincount(cols, weights=scaled, minlength=n_atoms)
        return cls(M.indptr, cols, scaled / sizes[cols], n_atoms)

    def __repr__(self):
        return f"AtomTable(n_samples={self.n_samples}, n_atoms={self.n_atoms}, nnz={self.indices.shape[0]})"


@dataclass(frozen=True)
class KernelResult:
    """What one call of the fused rate kernel returns.

    Attributes
    ----------
    rates : ndarray of shape (n_atoms,)
        0-1 positive-prediction rate of every atom (positive iff score >= 0).
    proxy_pos_rates : ndarray of shape (n_atoms,)
        ``sum_j v_ja max(0, margin + s_j)``: hinge upper bound of each ``p+``.
    proxy_neg_rates : ndarray of shape (n_atoms,)
        ``sum_j v_ja max(0, margin - s_j)``: hinge upper bound of each ``p-``.
    proxy_value : float
        The net per-example hinge upper bound of ``sum_a coef_a p+(S_a)``.
    grad : ndarray of shape (n_features,)
        Subgradient of ``proxy_value`` with respect to ``theta``.
    grad_bias : float
        Subgradient of ``proxy_value`` with respect to the bias.
    value : float
        The exact 0-1 value ``sum_a coef_a rates[a]``.
    """

    rates: np.ndarray
    proxy_pos_rates: np.ndarray
    proxy_neg_rates: np.ndarray
    proxy_value: float
    grad: np.ndarray
    grad_bias: float
    value: float


def rate_kernel(X, theta, bias, atoms, coef, *, margin=1.0, rows=None, n_threads=None):
    """Atom rates, hinge proxy value and its gradient in one pass over the data.

    With ``s_j = x_j . theta + bias`` and the net coefficient
    ``u_j = sum_a coef_a v_ja`` of each row, the proxy replaces ``u_j 1[s_j >= 0]``
    by ``u_j max(0, margin + s_j)`` when ``u_j > 0`` and by
    ``|u_j| max(0, margin - s_j) - |u_j|`` when ``u_j < 0`` (an upper bound for
    ``margin >= 1``; DESIGN.md §1).

    Parameters
    ----------
    X : FeatureMatrix or array-like of shape (n_samples, n_features)
        The features. Pass a :class:`FeatureMatrix` inside loops: anything else is
        validated on every call.
    theta : array-like of shape (n_features,)
        Model weights (float64, finite).
    bias : float
        Model intercept.
    atoms : AtomTable
        Membership table with ``atoms.n_samples == n_samples``.
    coef : array-like of shape (n_atoms,)
        Per-atom coefficients of the linear combination to bound.
    margin : float, default=1.0
        Hinge margin (> 0; the hinge upper-bounds the indicator for ``margin >= 1``).
    rows : array-like of int, default=None
        Minibatch row ids (repeats allowed). Sums run over these rows and are
        scaled by ``n_samples / len(rows)``: unbiased estimates of the full values.
    n_threads : int, default=None
        ``None`` follows the OpenMP setting, ``-1`` uses all cores.

    Returns
    -------
    KernelResult

    Raises
    ------
    ValueError
        On shape mismatches, non-finite ``theta``/``bias``/``coef``/``margin``,
        ``rows`` out of range, or invalid ``n_threads``.
    rateopt.exceptions.NumericalError
        If a score ``x_j . theta + bias`` is not finite (it overflowed, or
        ``inf - inf`` gave NaN), or the proxy or gradient overflowed.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import AtomTable, rate_kernel
    >>> X = np.array([[1.0], [-1.0], [2.0]])
    >>> atoms = AtomTable.from_membership(np.ones((3, 1), bool))
    >>> res = rate_kernel(X, np.array([1.0]), 0.0, atoms, np.array([1.0]))
    >>> float(res.rates[0])  # two of three scores are >= 0
    0.6666666666666666
    """
    if not isinstance(atoms, AtomTable):
        raise TypeError(f"atoms must be an AtomTable, got {type(atoms).__name__}")
    coef = as_float_vector(coef, "coef", ("n_atoms", atoms.n_atoms))
    m = rate_kernel_multi(X, theta, bias, atoms, coef[None, :], margin=margin, rows=rows, n_threads=n_threads)
    return KernelResult(rates=m.rates, proxy_pos_rates=m.proxy_pos_rates, proxy_neg_rates=m.proxy_neg_rates,
                        proxy_value=float(m.proxy_values[0]), grad=m.grad, grad_bias=float(m.grad_bias),
                        value=float(m.values[0]))


PROXIES = {"hinge": 0, "logistic": 1, "ramp": 2}
"""The proxy kinds of :func:`rate_kernel_multi`, by name (values are the core's codes)."""


@dataclass(frozen=True)
class MultiKernelResult:
    """What one call of :func:`rate_kernel_multi` returns (k combinations).

    Attributes
    ----------
    rates, proxy_pos_rates, proxy_neg_rates : ndarray of shape (n_atoms,)
        As in :class:`KernelResult` (the hinge rates use ``margin``).
    proxy_values : ndarray of shape (k,)
        Each combination's proxy value under the net per-example rule.
    values : ndarray of shape (k,)
        Each combination's exact 0-1 value ``coefs[c] . rates``.
    grad : ndarray of shape (n_features,) or (k, n_features)
        The ``grad_weights``-weighted sum of the combinations' subgradients with
        respect to ``theta``, or (``separate_gradients``) one row per combination.
    grad_bias : float or ndarray of shape (k,)
        The same for the bias.
    """

    rates: np.ndarray
    proxy_pos_rates: np.ndarray
    proxy_neg_rates: np.ndarray
    proxy_values: np.ndarray
    values: np.ndarray
    grad: np.ndarray
    grad_bias: object


def _proxy_codes(proxies, k):
    names = [proxies] * k if isinstance(proxies, str) else list(proxies)
    if len(names) != k:
        raise ValueError(f"proxies has {len(names)} entries, expected one per combination (k = {k})")
    bad = [p for p in names if p not in PROXIES]
    if bad:
        raise ValueError(f"proxies must be among {sorted(PROXIES)}, got {bad[0]!r}")
    return np.array([PROXIES[p] for p in names], dtype=np.int32)


def _pass_scalars(Xm, bias, margin, rows):
    """The bias, margin and minibatch rows of one kernel pass over ``Xm``, checked (errors name them)."""
    bias = as_finite_scalar(bias, "bias")
    margin = as_finite_scalar(margin, "margin")
    if margin <= 0:
        raise ValueError(f"margin must be > 0, got {margin}")
    if rows is not None:
        rows = as_index_array(rows, "rows", np.int64)
        if rows.shape[0] == 0:
            raise ValueError("rows must not be empty")
        if rows.min() < 0 or rows.max() >= Xm.n_samples:
            raise ValueError(f"rows holds a row index outside [0, n_samples={Xm.n_samples})")
    return bias, margin, rows


def _kernel_inputs(X, theta, atoms, coefs, proxies, grad_weights):
    """The checks shared by the multi-combination kernels: features, atom table, theta, coefficients,
    proxies and gradient weights (each error names its argument)."""
    Xm = X if isinstance(X, FeatureMatrix) else FeatureMatrix(X)
    if not isinstance(atoms, AtomTable):
        raise TypeError(f"atoms must be an AtomTable, got {type(atoms).__name__}")
    if atoms.n_samples != Xm.n_samples:
        raise ValueError(f"atoms has {atoms.n_samples} rows but X has n_samples = {Xm.n_samples}")
    theta = as_float_vector(theta, "theta", ("n_features", Xm.n_features))
    coefs = as_real_array(coefs, "coefs")
    if coefs.ndim != 2 or coefs.shape[0] < 1 or coefs.shape[1] != atoms.n_atoms:
        raise ValueError(f"coefs must have shape (k >= 1, n_atoms = {atoms.n_atoms}), got {coefs.shape}")
    if not np.all(np.isfinite(coefs)):
        raise ValueError("coefs holds a non-finite value (NaN or inf)")
    k = coefs.shape[0]
    codes = _proxy_codes(proxies, k)
    weights = np.ones(k) if grad_weights is None else as_float_vector(grad_weights, "grad_weights", ("k", k))
    return Xm, theta, coefs, k, codes, weights


def rate_kernel_multi(X, theta, bias, atoms, coefs, *, proxies="hinge", grad_weights=None,
                      separate_gradients=False, margin=1.0, rows=None, n_threads=None):
    """Atom rates and the proxies of k rate combinations in one pass over the data.

    For each combination ``c`` (a row of ``coefs``) and each row ``j``, the net
    coefficient ``u_cj = sum_a coefs[c, a] v_ja`` makes the row's term
    ``u_cj 1[s_j >= 0]``, which the combination's proxy replaces: ``"hinge"``
    (``u max(0, margin + s)`` for ``u > 0``, ``|u| max(0, margin - s) - |u|``
    for ``u < 0``), ``"logistic"`` (the same with ``log2(1 + e^{+-s})``: on the
    error rate, logistic regression's loss in bits) or ``"ramp"``
    (``u clip(1/2 + s, 0, 1)``, seed 004). Hinge and logistic are upper bounds
    of the 0-1 value; ramp is not.

    Parameters
    ----------
    X, theta, bias, atoms, margin, rows, n_threads
        As in :func:`rate_kernel`. ``margin`` applies to the hinge only.
    coefs : array-like of shape (k, n_atoms)
        One combination of atom rates per row.
    proxies : str or sequence of str, default="hinge"
        The proxy of every combination, or one per combination.
    grad_weights : array-like of shape (k,), default=None
        Weights of the combinations in the summed gradient (default: all ones).
        Zero weights give a combination's proxy value without its gradient.
    separate_gradients : bool, default=False
        Return each combination's gradient (k axpys per row) instead of the sum.

    Returns
    -------
    MultiKernelResult

    Raises
    ------
    ValueError
        As :func:`rate_kernel`, and on an unknown proxy or mismatched lengths.
    rateopt.exceptions.NumericalError
        If a score is not finite, or a proxy value or gradient overflowed.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import AtomTable, rate_kernel_multi
    >>> X = np.array([[1.0], [-1.0], [2.0]])
    >>> atoms = AtomTable.from_membership(np.ones((3, 1), bool))
    >>> res = rate_kernel_multi(X, np.array([1.0]), 0.0, atoms, np.array([[1.0], [-1.0]]),
    ...                         proxies=["hinge", "ramp"])
    >>> res.values.tolist()  # +p and -p of the one atom, p = 2/3
    [0.6666666666666666, -0.6666666666666666]
    """
    Xm, theta, coefs, k, codes, weights = _kernel_inputs(X, theta, atoms, coefs, proxies, grad_weights)
    bias, margin, rows = _pass_scalars(Xm, bias, margin, rows)
    threads = resolve_n_threads(n_threads)
    args = (theta, bias, atoms.indptr, atoms.indices, atoms.weights, atoms.n_atoms, coefs, codes, weights,
            bool(separate_gradients), margin, rows, threads)
    if Xm.is_sparse:
        D = Xm.data
        out = _core.rate_kernel_csr(D.data, D.indices, D.indptr, Xm.n_samples, Xm.n_features, *args)
    else:
        out = _core.rate_kernel_dense(Xm.data, *args)
    rates, ppos, pneg, proxy_values, values, grad, grad_bias, n_nonfinite = out
    if n_nonfinite:
        raise NumericalError(
            f"the scores x.theta + bias of {n_nonfinite} row(s) are not finite (overflow, or inf - inf): "
            "scale X or reduce theta"
        )
    if not all(np.all(np.isfinite(a)) for a in (proxy_values, values, grad_bias, grad, ppos, pneg)):
        raise NumericalError("the proxies overflowed (a non-finite proxy value, combination value, hinge rate or "
                             "gradient): scale X or reduce theta, or the coefficients")
    if not separate_gradients:
        grad, grad_bias = grad[0], float(grad_bias[0])
    return MultiKernelResult(rates=rates, proxy_pos_rates=ppos, proxy_neg_rates=pneg, proxy_values=proxy_values,
                             values=values, grad=grad, grad_bias=grad_bias)


# ---------------------------------------------------------------------------
# The lambda player's primitives
# ---------------------------------------------------------------------------


def _square(a, name):
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {arr.shape}")
    return arr


def _finite_matrix(a, name, allow_neg_inf=False):
    arr = _square(a, name)
    ok = np.isfinite(arr) | (allow_neg_inf & np.isneginf(arr))
    if not np.all(ok):
        raise ValueError(f"{name} holds a non-finite value")
    return arr


def _check_update(z, eta, *, log_space):
    """Refuse a multiplier update whose result the core cannot represent.

    ``z`` is the updated matrix or vector before normalization or projection,
    computed in the core's order (``(eta * delta[j]) * lam[i]``). In log space
    ``-inf`` entries are probabilities of 0 and allowed, but NaN (``inf * 0``,
    ``inf - inf``) and ``+inf`` are not, nor a column with no finite entry;
    otherwise every entry must be finite.
    """
    if log_space:
        bad = bool(np.any(np.isnan(z) | np.isposinf(z))) or not bool(np.all(np.any(np.isfinite(z), axis=0)))
    else:
        bad = not bool(np.all(np.isfinite(z)))
    if bad:
        raise NumericalError(
            f"the multiplier update overflows: eta * delta * lam leaves the float64 range (eta={eta!r}); "
            "reduce eta or rescale the constraints"
        )


def _step(eta, delta, lam=None):
    """``eta * delta`` (outer with ``lam``), in the core's order of operations."""
    with np.errstate(over="ignore", invalid="ignore"):
        d = eta * delta
        return d if lam is None else d[:, None] * lam[None, :]


def _check_stochastic(M, name):
    if np.any(M < 0) or not np.allclose(M.sum(axis=0), 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"{name} must be left-stochastic: non-negative with every column summing to 1")


def swap_regret_update(log_M, delta, lam, eta, floor=0.0):
    """Multiplicative swap-regret step of the proxy-Lagrangian multiplier player.

    Computes ``M <- colnormalize(M * exp(eta * outer(delta, lam)))`` in log space:
    ``log_M[j, i] += eta * delta[j] * lam[i]``, then each column is normalized
    with log-sum-exp (seed 001, Algorithm 3, lines 8-9). With ``floor > 0``,
    entries below ``floor`` are then raised to it and their columns normalized
    again (TFCO's ``minimum_multiplier_radius`` r gives ``floor = r / k``).

    Parameters
    ----------
    log_M : array-like of shape (k, k)
        Logarithm of a left-stochastic matrix (entries may be ``-inf``).
    delta : array-like of shape (k,)
        The gain ``(0, g_1, ..., g_m)`` (the 0-1 constraint values).
    lam : array-like of shape (k,)
        The current multipliers (the stationary distribution of ``M``).
    eta : float
        Step size.
    floor : float, default=0.0
        Smallest entry of the updated ``M`` (up to the renormalization), in
        ``[0, 1/k)``; 0: none.

    Returns
    -------
    ndarray of shape (k, k)
        The updated ``log M``; ``exp`` of it has columns summing to 1.
    """
    log_M = _finite_matrix(log_M, "log_M", allow_neg_inf=True)
    k = log_M.shape[0]
    if not np.all(np.any(np.isfinite(log_M), axis=0)):
        raise ValueError("log_M has a column of only -inf: it is not the logarithm of a stochastic matrix")
    delta = as_float_vector(delta, "delta", ("k", k))
    lam = as_float_vector(lam, "lam", ("k", k))
    eta = as_finite_scalar(eta, "eta")
    floor = as_finite_scalar(floor, "floor")
    if not 0.0 <= floor < 1.0 / k:
        raise ValueError(f"floor must be in [0, 1/k) = [0, {1.0 / k:g}), got {floor!r}")
    with np.errstate(invalid="ignore"):
        _check_update(log_M + _step(eta, delta, lam), eta, log_space=True)
    return _core.swap_update_multiplicative(log_M, delta, lam, eta, floor)


def swap_regret_update_additive(M, delta, lam, eta):
    """Additive swap-regret step: ``M + eta * outer(delta, lam)``, columns projected onto the simplex.

    Parameters
    ----------
    M : array-like of shape (k, k)
        A left-stochastic matrix.
    delta : array-like of shape (k,)
        The gain ``(0, g_1, ..., g_m)``.
    lam : array-like of shape (k,)
        The current multipliers.
    eta : float
        Step size.

    Returns
    -------
    ndarray of shape (k, k)
        The updated left-stochastic matrix.
    """
    M = _finite_matrix(M, "M")
    k = M.shape[0]
    delta = as_float_vector(delta, "delta", ("k", k))
    lam = as_float_vector(lam, "lam", ("k", k))
    eta = as_finite_scalar(eta, "eta")
    with np.errstate(over="ignore", invalid="ignore"):
        _check_update(M + _step(eta, delta, lam), eta, log_space=False)
    return _core.swap_update_additive(M, delta, lam, eta)


def stationary_distribution(M, lam0=None, *, tol=1e-12, max_iter=100, return_info=False):
    """A stationary distribution ``lam = M lam`` of a left-stochastic matrix.

    Power iteration ``lam <- M lam`` from ``lam0`` until ``||M lam - lam||_1 <= tol``;
    if that does not happen within ``max_iter`` steps (periodic or slowly mixing
    chains), the exact GTH state reduction is used instead, which also handles
    reducible chains (it then returns one of their stationary distributions).

    Parameters
    ----------
    M : array-like of shape (k, k)
        Left-stochastic matrix (columns sum to 1).
    lam0 : array-like of shape (k,), default=None
        Warm start (a distribution); ``None`` means uniform.
    tol : float, default=1e-12
        Tolerance on the L1 residual of the power iteration.
    max_iter : int, default=100
        Maximum number of power-iteration steps before the exact fallback.
    return_info : bool, default=False
        Also return ``{"n_iter", "fallback", "residual"}``.

    Returns
    -------
    lam : ndarray of shape (k,)
        Non-negative, sums to 1, ``M @ lam == lam`` up to rounding.
    info : dict
        Only when ``return_info`` is True.
    """
    M = _finite_matrix(M, "M")
    _check_stochastic(M, "M")
    k = M.shape[0]
    if lam0 is None:
        lam0 = np.full(k, 1.0 / k)
    else:
        lam0 = as_float_vector(lam0, "lam0", ("k", k))
        if np.any(lam0 < 0) or lam0.sum() <= 0:
            raise ValueError("lam0 must be non-negative with a positive sum")
        lam0 = lam0 / lam0.sum()
    tol = as_finite_scalar(tol, "tol")
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    max_iter = operator.index(max_iter)
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    lam, n_iter, fallback, residual = _core.stationary_distribution(M, lam0, tol, max_iter)
    if return_info:
        return lam, {"n_iter": int(n_iter), "fallback": bool(fallback), "residual": float(residual)}
    return lam


def external_update_multiplicative(log_lam, delta, eta):
    """Multiplicative (Hedge) step on the simplex: ``log_softmax(log_lam + eta * delta)``.

    Parameters
    ----------
    log_lam : array-like of shape (k,)
        Logarithm of the current distribution (entries may be ``-inf``).
    delta : array-like of shape (k,)
        The gain vector.
    eta : float
        Step size.

    Returns
    -------
    ndarray of shape (k,)
        The updated log-distribution.
    """
    log_lam = np.ascontiguousarray(log_lam, dtype=np.float64)
    if log_lam.ndim != 1 or log_lam.shape[0] == 0 or np.any(np.isnan(log_lam) | np.isposinf(log_lam)):
        raise ValueError("log_lam must be a non-empty vector of finite values or -inf")
    if not np.any(np.isfinite(log_lam)):
        raise ValueError("log_lam is all -inf: it is not the logarithm of a distribution")
    delta = as_float_vector(delta, "delta", ("k", log_lam.shape[0]))
    eta = as_finite_scalar(eta, "eta")
    with np.errstate(invalid="ignore"):
        _check_update(log_lam + _step(eta, delta), eta, log_space=True)
    return _core.external_update_multiplicative(log_lam, delta, eta)


def external_update_additive(lam, delta, eta, *, radius=None, simplex=False):
    """Projected gradient-ascent step on the multipliers.

    ``lam + eta * delta`` projected onto the simplex (``simplex=True``, the
    proxy-Lagrangian's domain) or onto ``{lam >= 0, sum(lam) <= radius}`` (the
    Lagrangian's domain; ``radius=None`` means no cap).

    Parameters
    ----------
    lam : array-like of shape (k,)
        Current multipliers.
    delta : array-like of shape (k,)
        The constraint values (the gradient of the Lagrangian in ``lam``).
    eta : float
        Step size.
    radius : float, default=None
        L1 radius of the Lagrangian's domain (> 0); ignored when ``simplex``.
    simplex : bool, default=False
        Project onto the probability simplex instead.

    Returns
    -------
    ndarray of shape (k,)
    """
    lam = as_float_vector(lam, "lam")
    delta = as_float_vector(delta, "delta", ("k", lam.shape[0]))
    eta = as_finite_scalar(eta, "eta")
    r = _radius(radius)
    with np.errstate(over="ignore", invalid="ignore"):
        _check_update(lam + _step(eta, delta), eta, log_space=False)
    return _core.external_update_additive(lam, delta, eta, bool(simplex), r)


def _radius(radius):
    if radius is None:
        return math.inf
    r = float(radius)
    if not r > 0:
        raise ValueError(f"radius must be > 0, got {radius!r}")
    return r


def project_simplex(v, radius=1.0):
    """Euclidean projection onto ``{x >= 0, sum(x) = radius}``.

    Parameters
    ----------
    v : array-like of shape (k,)
    radius : float, default=1.0
        Must be > 0.

    Returns
    -------
    ndarray of shape (k,)

    Examples
    --------
    >>> from rateopt.core import project_simplex
    >>> project_simplex([0.5, 0.5, 1.0]).tolist()
    [0.25, 0.25, 0.5]
    """
    v = as_float_vector(v, "v")
    r = _radius(radius)
    if not math.isfinite(r):
        raise ValueError("radius must be finite for the simplex")
    return _core.project_simplex(v, r)


def project_l1_ball_nonneg(v, radius=None):
    """Euclidean projection onto ``{x >= 0, sum(x) <= radius}``.

    Parameters
    ----------
    v : array-like of shape (k,)
    radius : float, default=None
        Must be > 0; ``None`` means no cap (the projection is then ``max(v, 0)``).

    Returns
    -------
    ndarray of shape (k,)
    """
    v = as_float_vector(v, "v")
    return _core.project_l1_ball_nonneg(v, _radius(radius))


# --- offset-atom kernel (AUC, issue 11) -------------------------------------

__all__ += ["OffsetKernelResult", "rate_kernel_offsets"]


@dataclass(frozen=True)
class OffsetKernelResult:
    """What one call of :func:`rate_kernel_offsets` returns.

    Parameters
    ----------
    rates, proxy_pos_rates, proxy_neg_rates, proxy_values, values, grad, grad_bias, grad_offsets : ndarray or float
        The attributes below.

    Attributes
    ----------
    rates, proxy_pos_rates, proxy_neg_rates : ndarray of shape (n_atoms,)
        As in :class:`MultiKernelResult`, each atom at its shifted scores
        ``s_j - offsets[offset_ids[a]]``.
    proxy_values : ndarray of shape (k,)
        Each combination's proxy value (net rule within a row's atoms of one
        offset, bounded separately across offsets).
    values : ndarray of shape (k,)
        Each combination's exact 0-1 value ``coefs[c] . rates``.
    grad : ndarray of shape (n_features,) or (k, n_features)
        Subgradient(s) of the proxy value(s) with respect to ``theta``.
    grad_bias : float or ndarray of shape (k,)
        The same for the bias.
    grad_offsets : ndarray of shape (n_offsets,) or (k, n_offsets)
        The same for the offsets.
    """

    rates: np.ndarray
    proxy_pos_rates: np.ndarray
    proxy_neg_rates: np.ndarray
    proxy_values: np.ndarray
    values: np.ndarray
    grad: np.ndarray
    grad_bias: object
    grad_offsets: np.ndarray


def rate_kernel_offsets(X, theta, bias, atoms, coefs, offset_ids, offsets, *, proxies="hinge", grad_weights=None,
                        separate_gradients=False, margin=1.0, rows=None, n_threads=None):
    """Atom rates and proxies of k rate combinations when atoms see shifted scores.

    Atom ``a`` sees row ``j`` through the score
    ``s_ja = x_j . theta + bias - offsets[offset_ids[a]]`` (``offset_ids[a] = -1``:
    no shift), so ``rates[a] = sum_j v_ja 1[s_ja >= 0]`` is a *thresholded*
    rate with a trainable threshold (methods_spec §D.5: ROC-AUC through L
    slices). Within one row, atoms with the same offset id see the same score
    and their coefficients net as in :func:`rate_kernel_multi`; atoms with
    different offsets are bounded separately (the per-atom rule: for a term
    ``u 1[s_ja >= 0]`` the hinge is ``u max(0, margin + s_ja)`` when ``u > 0``
    and ``|u| max(0, margin - s_ja) - |u|`` when ``u < 0``). Without any
    offset the result is :func:`rate_kernel_multi`'s. One pass over the data:
    ``O(nnz(X) + k nnz(atoms))``.

    Parameters
    ----------
    X : FeatureMatrix or array-like of shape (n_samples, n_features)
        The features (pass a :class:`FeatureMatrix` inside loops).
    theta : array-like of shape (n_features,)
        Model weights (finite).
    bias : float
        Model intercept.
    atoms : AtomTable
        Membership table with ``atoms.n_samples == n_samples``.
    coefs : array-like of shape (k, n_atoms)
        One combination of atom rates per row.
    offset_ids : array-like of int of shape (n_atoms,)
        The offset each atom sees, in ``[-1, n_offsets)``; ``-1`` means none.
    offsets : array-like of float of shape (n_offsets,)
        The offsets (finite; may be empty when every id is -1).
    proxies : str or sequence of str, default="hinge"
        The proxy of every combination, or one per combination (:data:`PROXIES`).
    grad_weights : array-like of shape (k,), default=None
        Weights of the combinations in the summed gradient (default: all ones).
    separate_gradients : bool, default=False
        Return each combination's gradients instead of their weighted sum.
    margin : float, default=1.0
        Hinge margin (> 0).
    rows : array-like of int, default=None
        Minibatch row ids; sums are scaled by ``n_samples / len(rows)``.
    n_threads : int, default=None
        ``None`` follows the OpenMP setting, ``-1`` uses all cores.

    Returns
    -------
    OffsetKernelResult
        Also ``grad_offsets``, the (weighted) subgradient with respect to the
        offsets: each active term's slope, negated.

    Raises
    ------
    ValueError
        As :func:`rate_kernel_multi`, and when ``offset_ids`` has the wrong
        length or an id outside ``[-1, n_offsets)``, or ``offsets`` holds NaN
        or inf.
    rateopt.exceptions.NumericalError
        If a (shifted) score is not finite, or a proxy value or gradient overflowed.

    See Also
    --------
    rate_kernel_multi : The kernel without offsets.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import AtomTable, rate_kernel_offsets
    >>> X = np.array([[1.0], [-1.0], [2.0]])
    >>> atoms = AtomTable.from_membership(np.ones((3, 2), bool))
    >>> res = rate_kernel_offsets(X, np.array([1.0]), 0.0, atoms, np.array([[1.0, 1.0]]),
    ...                           offset_ids=[-1, 0], offsets=[1.5])
    >>> res.rates.tolist()  # scores >= 0, and scores >= 1.5
    [0.6666666666666666, 0.3333333333333333]
    """
    Xm, theta, coefs, k, codes, weights = _kernel_inputs(X, theta, atoms, coefs, proxies, grad_weights)
    offsets = as_real_array(offsets, "offsets")
    if offsets.ndim != 1:
        raise ValueError(f"offsets must be 1-D, got shape {offsets.shape}")
    offsets = np.ascontiguousarray(offsets, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(offsets))
    if bad.size:
        raise ValueError(f"offsets holds a non-finite value (NaN or inf) at position {int(bad[0])}")
    ids = as_index_array(offset_ids, "offset_ids", np.int64)
    if ids.shape != (atoms.n_atoms,):
        raise ValueError(f"offset_ids must have shape (n_atoms = {atoms.n_atoms},), got {ids.shape}")
    bad = np.flatnonzero((ids < -1) | (ids >= offsets.shape[0]))
    if bad.size:
        raise ValueError(f"offset_ids holds {int(ids[bad[0]])} at atom {int(bad[0])}, outside "
                         f"[-1, n_offsets={offsets.shape[0]})")
    ids = ids.astype(np.int32)
    bias, margin, rows = _pass_scalars(Xm, bias, margin, rows)
    threads = resolve_n_threads(n_threads)
    args = (theta, bias, atoms.indptr, atoms.indices, atoms.weights, atoms.n_atoms, ids, offsets, coefs, codes,
            weights, bool(separate_gradients), margin, rows, threads)
    if Xm.is_sparse:
        D = Xm.data
        out = _core.offset_kernel_csr(D.data, D.indices, D.indptr, Xm.n_samples, Xm.n_features, *args)
    else:
        out = _core.offset_kernel_dense(Xm.data, *args)
    rates, ppos, pneg, proxy_values, values, grad, grad_bias, grad_offsets, n_nonfinite = out
    if n_nonfinite:
        raise NumericalError(
            f"the shifted scores x.theta + bias - offset of {n_nonfinite} row(s) are not finite (overflow, or "
            "inf - inf): scale X or reduce theta and the offsets"
        )
    if not all(np.all(np.isfinite(a)) for a in (proxy_values, values, grad_bias, grad, grad_offsets, ppos, pneg)):
        raise NumericalError("the proxies overflowed (a non-finite proxy value, combination value, hinge rate or "
                             "gradient): scale X or reduce theta and the offsets, or the coefficients")
    if not separate_gradients:
        grad, grad_bias, grad_offsets = grad[0], float(grad_bias[0]), grad_offsets[0]
    return OffsetKernelResult(rates=rates, proxy_pos_rates=ppos, proxy_neg_rates=pneg, proxy_values=proxy_values,
                              values=values, grad=grad, grad_bias=grad_bias, grad_offsets=grad_offsets)

# --- end offset-atom kernel (AUC, issue 11) ---------------------------------


# ---------------------------------------------------------------------------
# SDCA: the exact weighted two-sided hinge solver (issue 12)
# ---------------------------------------------------------------------------

__all__ += ["SdcaResult", "sdca_two_sided_hinge"]

_SDCA_STATUS = {0: "converged", 1: "max_epochs", 2: "nonfinite"}


@dataclass(frozen=True)
class SdcaResult:
    """What :func:`sdca_two_sided_hinge` returns.

    Parameters
    ----------
    theta : ndarray of shape (n_features,)
        The weights, ``theta(xi) = -(1/(lam n)) sum_j xi_j x_j``.
    bias : float
        ``beta`` (fixed bias) or ``bias_scale * w_c`` (regularized bias).
    xi : ndarray of shape (n_samples,)
        The dual variables, ``xi_j`` in ``[-B_j, A_j]`` (0 for rows with
        ``A_j = B_j = 0``); pass them back as ``xi0`` to warm-start.
    primal : float
        ``P(theta)``, the objective at the returned model.
    dual : float
        ``D(xi)``, a lower bound on the optimal ``P``.
    gap : float
        ``primal - dual`` (>= 0 up to rounding): ``primal`` is within ``gap`` of
        the optimum.
    n_epochs : int
        Epochs run (passes of coordinate steps over the rows not shrunk).
    sum_xi : float
        ``sum_j xi_j``; ``sum_xi / n`` is the derivative of the dual value in
        ``beta`` (the slope of a cutting plane over a fixed bias).
    converged : bool
        Whether ``gap <= tol * max(1, |primal|)``.
    """

    theta: np.ndarray
    bias: float
    xi: np.ndarray
    primal: float
    dual: float
    gap: float
    n_epochs: int
    sum_xi: float
    converged: bool


def _sdca_weights(v, name, n):
    v = as_float_vector(v, name, ("n_samples", n))
    if np.any(v < 0):
        j = int(np.flatnonzero(v < 0)[0])
        raise ValueError(f"{name} must be non-negative, got {float(v[j])!r} at position {j}")
    return v


def sdca_two_sided_hinge(X, A, B, *, lam, tau=1.0, beta=0.0, bias="fixed", bias_scale=1.0, theta0=None,
                         bias0=None, xi0=None, tol=1e-8, max_epochs=100_000, random_state=0):
    """Minimize a weighted two-sided hinge loss with L2 regularization exactly (SDCA).

    Solves

    ``P(theta) = (1/n) sum_j [A_j max(0, tau + s_j) + B_j max(0, tau - s_j)] + (lam/2) ||theta||^2``

    with ``s_j = x_j . theta + bias``, by stochastic dual coordinate ascent with
    the closed-form coordinate step, until the duality gap
    ``P(theta(xi)) - D(xi) <= tol * max(1, |P|)``. Each row may carry both
    hinges. With ``A_j = n max(u_j, 0)``, ``B_j = n max(-u_j, 0)`` and
    ``tau = margin`` this minimizes the net-hinge proxy that
    :func:`rate_kernel` computes for the per-row coefficients ``u`` (up to the
    constant ``-sum_j max(-u_j, 0)`` and the regularizer).

    Parameters
    ----------
    X : FeatureMatrix or array-like of shape (n_samples, n_features)
        Dense or CSR, float32 or float64 (every sum in float64).
    A : array-like of shape (n_samples,)
        Weights of ``max(0, tau + s_j)`` (the cost of scoring row ``j``
        positive), finite and non-negative.
    B : array-like of shape (n_samples,)
        Weights of ``max(0, tau - s_j)`` (the cost of scoring it negative).
    lam : float
        L2 regularization, > 0.
    tau : float, default=1.0
        The hinge margin, > 0.
    beta : float, default=0.0
        The fixed bias (``bias="fixed"``); must be 0 with ``bias="regularized"``.
    bias : {"fixed", "regularized"}, default="fixed"
        ``"fixed"``: the bias is ``beta``. ``"regularized"``: each row gets a
        constant feature ``bias_scale`` whose weight ``w_c`` is penalized like
        ``theta`` (LIBLINEAR's bias, scikit-learn's ``intercept_scaling``); the
        returned bias is ``bias_scale * w_c`` and ``lam/2 w_c^2`` is part of ``P``.
    bias_scale : float, default=1.0
        The constant feature's value (> 0) for ``bias="regularized"``.
    theta0 : array-like of shape (n_features,), default=None
        Primal warm start, used when ``xi0`` is None: each ``xi_j`` starts at
        the subgradient of its loss at ``s_j = x_j . theta0 + bias0``
        (``A_j`` above ``tau``, ``-B_j`` below ``-tau``, ``A_j - B_j`` between),
        and the start is ``theta(xi)``, not ``theta0`` itself (the gap is only
        valid for a model that is ``theta(xi)``). From an exact solution this is
        that solution except for rows on a kink, whose ``xi`` it cannot know.
        Ignored when ``xi0`` is given (``xi0`` determines the start).
    bias0 : float, default=None
        The model's bias for the primal warm start with
        ``bias="regularized"`` (None: 0); with ``bias="fixed"`` the bias is
        ``beta`` and ``bias0`` must be None.
    xi0 : array-like of shape (n_samples,), default=None
        Dual warm start (e.g. ``SdcaResult.xi`` of an earlier solve): each
        ``xi0_j`` is clipped into ``[-B_j, A_j]`` (so a solution for other
        weights is a valid start) and the start is ``theta(xi)``.
    tol : float, default=1e-8
        Relative duality-gap tolerance (>= 0).
    max_epochs : int, default=100_000
        At most this many epochs (>= 0). An epoch is one pass over the rows
        not shrunk (see Notes), so late epochs are cheap. ``0`` only evaluates
        the start: ``primal``, ``dual`` and ``gap`` of ``theta(xi0)`` and ``xi0``.
    random_state : int, default=0
        Seed (0 <= seed < 2**64) of the per-epoch row permutations (splitmix64:
        the same iterates on every platform).

    Returns
    -------
    SdcaResult
        The model (``theta``, ``bias``), the dual point ``xi``, the primal and
        dual values, the gap, the epochs run and ``converged``.

    Raises
    ------
    ValueError
        On shape mismatches, non-finite or negative ``A``/``B``, non-finite
        ``X``/``theta0``/``xi0``, ``lam <= 0``, ``tau <= 0``,
        ``bias_scale <= 0``, a nonzero ``beta`` with a regularized bias, or
        an invalid ``bias``, ``tol``, ``max_epochs`` or ``random_state``.
    rateopt.exceptions.NumericalError
        If the objective overflowed, or a row's ``||x||^2 / (lam n)`` did
        (scale ``X`` or the weights, or increase ``lam``).

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        If ``max_epochs >= 1`` epochs did not reach the tolerance.

    Notes
    -----
    Dual: ``D(xi) = -(1/n) sum_j l_j*(xi_j) - (lam/2) ||theta(xi)||^2 + (beta/n) sum_j xi_j``
    with ``l_j*(xi) = tau (|xi - A_j + B_j| - A_j - B_j)`` on ``[-B_j, A_j]``
    (``methods_spec.md`` §1.4). The solver is sequential (coordinate steps
    depend on each other) and deterministic: rows with ``A_j = B_j = 0`` keep
    ``xi_j = 0`` and are never visited; the others are reshuffled before every
    epoch from the seed. Rows that are optimal with room to spare (their score
    could move by more than the last epoch's largest violation without their
    ``xi`` moving) are shrunk out of the epochs, as in LIBLINEAR, and put back
    whenever a gap check fails; the gap (one pass over every row) is checked
    after every full epoch and when a shrunk epoch's violation has fallen
    tenfold, so every stop is decided on all rows. The returned ``theta`` is
    recomputed from ``xi`` before the final gap is evaluated. See
    ``cpp/include/rateopt/sdca.hpp``.

    References
    ----------
    .. [1] S. Shalev-Shwartz, T. Zhang. "Stochastic Dual Coordinate Ascent
       Methods for Regularized Loss Minimization". JMLR 14, 2013.
    .. [2] G. Goh, A. Cotter, M. Gupta, M. Friedlander. "Satisfying Real-world
       Goals with Dataset Constraints". NIPS 2016 (Eqs. 16-19, App. F).

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import sdca_two_sided_hinge
    >>> X = np.array([[1.0], [-1.0], [2.0], [-2.0]])
    >>> A = np.array([0.0, 1.0, 0.0, 1.0])   # rows 1, 3: cost of a positive score
    >>> B = np.array([1.0, 0.0, 1.0, 0.0])   # rows 0, 2: cost of a negative score
    >>> res = sdca_two_sided_hinge(X, A, B, lam=0.1, tol=1e-12)
    >>> res.converged, round(float(res.theta[0]), 6)
    (True, 1.0)
    """
    Xm = X if isinstance(X, FeatureMatrix) else FeatureMatrix(X)
    n, d = Xm.n_samples, Xm.n_features
    A = _sdca_weights(A, "A", n)
    B = _sdca_weights(B, "B", n)
    lam = as_finite_scalar(lam, "lam")
    if lam <= 0:
        raise ValueError(f"lam must be > 0, got {lam}")
    tau = as_finite_scalar(tau, "tau")
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    beta = as_finite_scalar(beta, "beta")
    if bias not in ("fixed", "regularized"):
        raise ValueError(f"bias must be 'fixed' or 'regularized', got {bias!r}")
    regularized = bias == "regularized"
    bias_scale = as_finite_scalar(bias_scale, "bias_scale")
    if bias_scale <= 0:
        raise ValueError(f"bias_scale must be > 0, got {bias_scale}")
    if regularized and beta != 0:
        raise ValueError(f"beta must be 0 with bias='regularized' (the bias is learned), got {beta}")
    if bias0 is not None and not regularized:
        raise ValueError("bias0 is only used with bias='regularized' (with bias='fixed' the bias is beta)")
    bias0 = 0.0 if bias0 is None else as_finite_scalar(bias0, "bias0")
    if theta0 is not None:
        theta0 = as_float_vector(theta0, "theta0", ("n_features", d))
    if xi0 is not None:
        xi0 = as_float_vector(xi0, "xi0", ("n_samples", n))
    tol = as_finite_scalar(tol, "tol")
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    if isinstance(max_epochs, bool):
        raise ValueError(f"max_epochs must be an integer, got {max_epochs!r}")
    try:
        max_epochs = operator.index(max_epochs)
    except TypeError:
        raise ValueError(f"max_epochs must be an integer, got {max_epochs!r}") from None
    if max_epochs < 0:
        raise ValueError(f"max_epochs must be >= 0, got {max_epochs}")
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) \
            or not 0 <= int(random_state) < 2**64:
        raise ValueError(f"random_state must be an integer in [0, 2**64), got {random_state!r}")
    args = (A, B, lam, tau, beta, regularized, bias_scale, theta0, bias0, xi0, tol, max_epochs, int(random_state))
    if Xm.is_sparse:
        D = Xm.data
        out = _core.sdca_two_sided_hinge_csr(D.data, D.indices, D.indptr, n, d, *args)
    else:
        out = _core.sdca_two_sided_hinge_dense(Xm.data, *args)
    theta, b, xi, primal, dual, gap, epochs, sum_xi, status = out
    status = _SDCA_STATUS[int(status)]
    if status == "nonfinite":
        raise NumericalError("the SDCA objective overflowed (a non-finite primal or dual value, or a row's "
                             "||x||^2 / (lam n) beyond the float64 range): scale X or the weights A and B, "
                             "or increase lam")
    converged = status == "converged"
    if not converged and max_epochs > 0:
        from sklearn.exceptions import ConvergenceWarning

        warnings.warn(f"SDCA stopped after max_epochs={max_epochs} epochs with duality gap {gap:.3g} "
                      f"(tolerance {tol:g} x max(1, |P| = {abs(primal):.3g})): increase max_epochs or lam",
                      ConvergenceWarning, stacklevel=2)
    return SdcaResult(theta=theta, bias=float(b), xi=xi, primal=float(primal), dual=float(dual), gap=float(gap),
                      n_epochs=int(epochs), sum_xi=float(sum_xi), converged=converged)


# ---------------------------------------------------------------------------
# Ramp rates (seed 004): the kernel's "ramp" proxy on one combination per atom
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RampRates:
    """What :func:`ramp_rates` returns.

    Parameters
    ----------
    rates : ndarray of shape (n_atoms,)
        0-1 positive rate of every atom, ``sum_j v_ja 1[s_j >= 0]``.
    ramp_pos : ndarray of shape (n_atoms,)
        Ramp positive rate ``r_p(S_a) = sum_j v_ja rho(s_j)``,
        ``rho(s) = clip(1/2 + s, 0, 1)``: the exact expected positive rate of
        the randomized rule ``P(+|x) = rho(s)``.
    ramp_neg : ndarray of shape (n_atoms,)
        The mirror ``r_n(S_a) = sum_j v_ja rho(-s_j) = W_a - r_p(S_a)``, with
        ``W_a = sum_j v_ja`` (1 for every atom of a compiled problem).
    """

    rates: np.ndarray
    ramp_pos: np.ndarray
    ramp_neg: np.ndarray


def ramp_rates(X, theta, bias, atoms, *, rows=None, n_threads=None):
    """Per-atom ramp rates and 0-1 rates in one pass over the data (seed 004).

    The fused kernel's ``"ramp"`` proxy is exact for either sign of a row's
    net coefficient (``rho(s) + rho(-s) = 1``), so one ramp combination per
    atom (the identity coefficients, no gradient) gives every atom's
    ``r_p(S_a) = sum_j v_ja clip(1/2 + s_j, 0, 1)`` in the same pass as the 0-1
    rates. Problem-2 values of a compiled problem are then ``C r_p - kappa``
    and ``c0 . r_p + const0``, exactly.

    Parameters
    ----------
    X : FeatureMatrix or array-like of shape (n_samples, n_features)
        The features.
    theta : array-like of shape (n_features,)
        Model weights.
    bias : float
        Model intercept.
    atoms : AtomTable
        Membership table with ``atoms.n_samples == n_samples``.
    rows : array-like of int, default=None
        Minibatch row ids, as in :func:`rate_kernel` (unbiased estimates).
    n_threads : int, default=None
        ``None`` follows the OpenMP setting, ``-1`` uses all cores.

    Returns
    -------
    RampRates
        The 0-1 rates, the ramp positive rates and their mirror.

    Raises
    ------
    ValueError
        As :func:`rate_kernel_multi`.
    rateopt.exceptions.NumericalError
        If a score is not finite.

    See Also
    --------
    rate_kernel_multi : The kernel (``proxies="ramp"``) this reads.

    Notes
    -----
    The cost is that of ``n_atoms`` combinations, ``O(nnz(X) + n_atoms
    nnz(atoms))``: meant for the few atoms of a rate problem.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import AtomTable, ramp_rates
    >>> X = np.array([[0.25], [-1.0], [2.0]])
    >>> atoms = AtomTable.from_membership(np.ones((3, 1), bool))
    >>> r = ramp_rates(X, np.array([1.0]), 0.0, atoms)
    >>> round(float(r.ramp_pos[0]), 12), round(float(r.rates[0]), 12)  # (0.75 + 0 + 1) / 3, 2 / 3
    (0.583333333333, 0.666666666667)
    """
    if not isinstance(atoms, AtomTable):
        raise TypeError(f"atoms must be an AtomTable, got {type(atoms).__name__}")
    A = atoms.n_atoms
    res = rate_kernel_multi(X, theta, bias, atoms, np.eye(A), proxies="ramp", grad_weights=np.zeros(A),
                            rows=rows, n_threads=n_threads)
    idx, w = np.asarray(atoms.indices, dtype=np.int64), np.asarray(atoms.weights, dtype=np.float64)
    if rows is None:
        total = np.bincount(idx, weights=w, minlength=A)
    else:  # the kernel scales a minibatch's sums by n / len(rows): the same estimate of W_a
        r = np.asarray(rows, dtype=np.int64)
        count = np.bincount(r, minlength=atoms.n_samples)
        per_entry = np.repeat(count, np.diff(np.asarray(atoms.indptr, dtype=np.int64)))
        total = np.bincount(idx, weights=w * per_entry, minlength=A) * (atoms.n_samples / r.size)
    pos = np.asarray(res.proxy_values, dtype=np.float64)
    return RampRates(rates=res.rates, ramp_pos=pos, ramp_neg=total - pos)


__all__ += ["RampRates", "ramp_rates"]


# ---------------------------------------------------------------------------
# The core training loop (issue 14 item 1)
# ---------------------------------------------------------------------------

LOOP_GAMES = {"proxy-swap": 0, "proxy-external": 1, "lagrangian-hinge": 2, "unconstrained": 3}
"""The games the core loop runs, with their codes in ``_core.train_loop``."""

_LOOP_OPTIMIZERS = {"sgd": 0, "adagrad": 1, "adam": 2}
_LOOP_STATUS = ("done", "stopped", "nonfinite_scores", "nonfinite_outputs", "multiplier_overflow")


@dataclass
class LoopState:
    """The players' state the core loop reads and writes in place.

    Attributes
    ----------
    theta : ndarray of shape (n_features,)
    bias : ndarray of shape (1,)
    opt_m, opt_v : ndarray of shape (n_features + 1,)
        Adam's moments (``opt_v`` is also Adagrad's sum of squares); the bias last.
    opt_t : ndarray of shape (1,) of int64
        Model steps taken.
    matrix : ndarray of shape (m + 1, m + 1)
        ``"proxy-swap"``: ``log M`` (multiplicative update) or ``M`` (additive).
    lam : ndarray
        ``"proxy-swap"``: the stationary distribution (m + 1,); the Lagrangian
        games: ``lambda >= 0`` (m,); unused by ``"unconstrained"``.
    """

    theta: np.ndarray
    bias: np.ndarray
    opt_m: np.ndarray
    opt_v: np.ndarray
    opt_t: np.ndarray
    matrix: np.ndarray
    lam: np.ndarray


@dataclass
class LoopRecords:
    """Record buffers the core loop fills (``count`` rows so far).

    Attributes
    ----------
    weights : ndarray of shape (capacity, n_features)
    biases, iterations : ndarray of shape (capacity,)
    multipliers : ndarray of shape (capacity, m + 1)
        Objective weight first (the driver's layout).
    rates : ndarray of shape (capacity, n_atoms)
        Full-data atom rates of each recorded iterate.
    val_rates : ndarray of shape (capacity, n_val_atoms) or None
    count : int
    """

    weights: np.ndarray
    biases: np.ndarray
    iterations: np.ndarray
    multipliers: np.ndarray
    rates: np.ndarray
    val_rates: object = None
    count: int = 0

    @classmethod
    def allocate(cls, capacity, n_features, n_constraints, n_atoms, n_val_atoms=None):
        """Empty buffers for ``capacity`` records."""
        return cls(np.zeros((capacity, n_features)), np.zeros(capacity), np.zeros(capacity, dtype=np.int64),
                   np.zeros((capacity, n_constraints + 1)), np.zeros((capacity, n_atoms)),
                   None if n_val_atoms is None else np.zeros((capacity, n_val_atoms)))


@dataclass(frozen=True)
class LoopOutcome:
    """How a call of :func:`run_train_loop` ended: ``status`` (``"done"`` or
    ``"stopped"``), the iteration ``t`` it ended at (``t_end`` when done; the
    iteration whose callback asked to stop otherwise) and the records so far."""

    status: str
    t: int
    n_records: int


def _loop_block(block):
    X, atoms, atom_ids = block
    if not isinstance(X, FeatureMatrix):
        raise TypeError(f"each block's features must be a FeatureMatrix, got {type(X).__name__}")
    if not isinstance(atoms, AtomTable):
        raise TypeError(f"each block's atoms must be an AtomTable, got {type(atoms).__name__}")
    if atoms.n_samples != X.n_samples:
        raise ValueError(f"a block's atoms have {atoms.n_samples} rows but its X has {X.n_samples}")
    ids = np.ascontiguousarray(atom_ids, dtype=np.int64)
    table = (atoms.indptr, atoms.indices, atoms.weights, atoms.n_atoms, ids)
    if X.is_sparse:
        D = X.data
        return ("csr", D.data, D.indices, D.indptr, X.n_samples, X.n_features) + table
    return ("dense", X.data) + table


def run_train_loop(blocks, game, C, kappa, c0, state, records, *, n_iter, record_every, t_begin=0, t_end=None,
                   optimizer="adam", learning_rate=0.01, l2=0.0, radius=None, fit_intercept=True, eta_lambda=0.0,
                   update="multiplicative", lambda_radius=None, lambda_floor=0.0, proxy="hinge", margin=1.0,
                   val_blocks=(),
                   rows=None, sampled=None, callback=None, progress_every=0, n_threads=None):
    """Run iterations ``[t_begin, t_end)`` of a built-in game in the core, the GIL released.

    Each iteration is one fused kernel pass over every block (for the game's
    combinations at its current multipliers), the model player's step and the
    multiplier player's step, with the arithmetic of ``rateopt._training._players``;
    iterations ``t`` with ``t % record_every == 0`` and the last one
    (``n_iter - 1``) are recorded into ``records`` (model, multipliers,
    full-data atom rates of the blocks and of ``val_blocks``). The players'
    state is read from and written back to ``state``, so a run can continue
    in later calls. :func:`rateopt.train` uses this for its built-in games
    (``loop="auto"``); it is the same game as the Python driver to round-off.

    Parameters
    ----------
    blocks : sequence of (FeatureMatrix, AtomTable, ndarray)
        Each dataset: features, atom table, the global ids of its atoms.
    game : {"proxy-swap", "proxy-external", "lagrangian-hinge", "unconstrained"}
    C : ndarray of shape (m, n_atoms)
    kappa : ndarray of shape (m,)
    c0 : ndarray of shape (n_atoms,)
        The players' rate maps (``GameSpec.for_players()``).
    state : LoopState
        Updated in place.
    records : LoopRecords
        Filled in place from row ``records.count`` on (``count`` is updated).
    n_iter : int
        T of the whole run (its last iterate is always recorded).
    record_every : int
    t_begin, t_end : int
        The iterations this call runs (``t_end=None``: ``n_iter``).
    optimizer, learning_rate, l2, radius, fit_intercept
        The model player (``radius=None``: no projection).
    eta_lambda, update, lambda_radius, lambda_floor
        The multiplier player (``update``: proxy-swap's; ``lambda_radius``: the
        Lagrangian games' L1 cap, None for none; ``lambda_floor``: proxy-swap's
        multiplicative update keeps every entry of its matrix at least
        ``lambda_floor / (m + 1)``, 0 for no floor).
    proxy : {"hinge", "logistic"}
        The objective's proxy (constraints keep the hinge).
    margin : float
    val_blocks : sequence of (FeatureMatrix, AtomTable, ndarray)
        Validation datasets whose atom rates are recorded too.
    rows : ndarray of shape (t_end - t_begin, n_sampled, batch) of int64, default=None
        Minibatch rows of the sampled blocks for each iteration (None: full batch).
    sampled : array-like of shape (len(blocks),) of bool
        Which blocks ``rows`` samples (the others are read in full).
    callback : callable, default=None
        ``callback(t, n_records) -> bool`` after every record and every
        ``progress_every`` iterations, with the GIL held; True stops the loop
        before iteration ``t``'s step. Its exceptions propagate.
    progress_every : int, default=0
    n_threads : int or None

    Returns
    -------
    LoopOutcome

    Raises
    ------
    ValueError
        On an unknown game, optimizer, update or proxy, or inconsistent shapes.
    rateopt.exceptions.NumericalError
        If a score or a kernel output is not finite, or a multiplier step overflows.
    """
    if game not in LOOP_GAMES:
        raise ValueError(f"game must be one of {tuple(LOOP_GAMES)}, got {game!r}")
    if optimizer not in _LOOP_OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {tuple(_LOOP_OPTIMIZERS)}, got {optimizer!r}")
    if update not in ("multiplicative", "additive"):
        raise ValueError(f"update must be 'multiplicative' or 'additive', got {update!r}")
    if proxy not in ("hinge", "logistic"):
        raise ValueError(f"proxy must be 'hinge' or 'logistic', got {proxy!r}")
    if not isinstance(state, LoopState):
        raise TypeError(f"state must be a LoopState, got {type(state).__name__}")
    if not isinstance(records, LoopRecords):
        raise TypeError(f"records must be a LoopRecords, got {type(records).__name__}")
    c0 = as_float_vector(c0, "c0")
    C = np.asarray(C, dtype=np.float64)
    C = C.reshape(0, c0.shape[0]) if C.size == 0 else C
    if C.ndim != 2 or C.shape[1] != c0.shape[0]:
        raise ValueError(f"C must have shape (n_constraints, n_atoms = {c0.shape[0]}), got {C.shape}")
    C = np.ascontiguousarray(C)
    written = [(f"state.{n}", getattr(state, n), np.int64 if n == "opt_t" else np.float64)
               for n in ("theta", "bias", "opt_m", "opt_v", "opt_t", "matrix", "lam")]
    written += [(f"records.{n}", getattr(records, n), np.int64 if n == "iterations" else np.float64)
                for n in ("weights", "biases", "iterations", "multipliers", "rates", "val_rates")
                if getattr(records, n) is not None]
    for name, a, dtype in written:
        if not (isinstance(a, np.ndarray) and a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable):
            raise TypeError(f"{name} must be a writeable C-contiguous {np.dtype(dtype)} ndarray "
                            "(the loop writes it in place)")
    kappa = as_float_vector(kappa, "kappa", ("n_constraints", C.shape[0]))
    if not (np.all(np.isfinite(C)) and np.all(np.isfinite(c0))):
        raise ValueError("C and c0 must be finite")
    blocks = [_loop_block(b) for b in blocks]
    val_blocks = [_loop_block(b) for b in val_blocks]
    if not blocks:
        raise ValueError("blocks must hold at least one dataset")
    n_features = int(blocks[0][5] if blocks[0][0] == "csr" else blocks[0][1].shape[1])
    if state.theta.shape != (n_features,):
        raise ValueError(f"state.theta has shape {state.theta.shape}, expected (n_features,) = ({n_features},)")
    if (val_blocks and records.val_rates is None) or (not val_blocks and records.val_rates is not None):
        raise ValueError("records.val_rates must be given exactly when val_blocks are")
    t_end = n_iter if t_end is None else t_end
    schedule = dict(t_begin=int(t_begin), t_end=int(t_end), n_iter=int(n_iter), record_every=int(record_every),
                    n_threads=resolve_n_threads(n_threads), progress_every=int(progress_every), rows=None)
    if rows is not None:
        schedule["rows"] = np.ascontiguousarray(rows, dtype=np.int64)
        if sampled is None:
            raise ValueError("sampled must be given with rows")
        schedule["sampled"] = np.ascontiguousarray(sampled, dtype=np.uint8)
    game_d = dict(game=LOOP_GAMES[game], C=C, kappa=kappa, c0=c0, n_features=int(state.theta.shape[0]),
                  objective_proxy=PROXIES[proxy], margin=float(margin))
    model_d = dict(optimizer=_LOOP_OPTIMIZERS[optimizer], learning_rate=float(learning_rate), l2=float(l2),
                   radius=None if radius is None else float(radius), fit_intercept=bool(fit_intercept))
    lambda_floor = as_finite_scalar(lambda_floor, "lambda_floor")
    if not 0.0 <= lambda_floor < 1.0:
        raise ValueError(f"lambda_floor must be in [0, 1), got {lambda_floor!r}")
    mult_d = dict(eta=float(eta_lambda or 0.0), multiplicative=update == "multiplicative",
                  lambda_radius=None if lambda_radius is None else float(lambda_radius),
                  floor=lambda_floor / (C.shape[0] + 1) if update == "multiplicative" else 0.0)
    state_d = {k: getattr(state, k) for k in ("theta", "bias", "opt_m", "opt_v", "opt_t", "matrix", "lam")}
    rec_d = dict(weights=records.weights, biases=records.biases, iterations=records.iterations,
                 multipliers=records.multipliers, rates=records.rates, count=int(records.count))
    if records.val_rates is not None:
        rec_d["val_rates"] = records.val_rates
    status, t, detail, count = _core.train_loop(blocks, val_blocks, game_d, model_d, mult_d, state_d, schedule,
                                                rec_d, callback)
    records.count = count
    name = _LOOP_STATUS[status]
    if name == "nonfinite_scores":
        raise NumericalError(f"the scores x.theta + bias of {detail} row(s) are not finite (overflow, or inf - inf): "
                             f"scale X or reduce theta (iteration {t})")
    if name == "nonfinite_outputs":
        raise NumericalError("the proxies overflowed (a non-finite proxy value, combination value, hinge rate or "
                             f"gradient): scale X or reduce theta, or the coefficients (iteration {t})")
    if name == "multiplier_overflow":
        raise NumericalError(f"the multiplier update overflows: eta * delta * lam leaves the float64 range "
                             f"(eta={eta_lambda!r}); reduce eta or rescale the constraints (iteration {t})")
    return LoopOutcome(name, int(t), int(count))
