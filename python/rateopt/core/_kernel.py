"""The fused rate kernels: atom rates, proxy values and gradients in one pass over the data.

:func:`rate_kernel_multi` evaluates k combinations of atom rates, each with its
proxy (:data:`PROXIES`), in one pass; :func:`rate_kernel` is its form for one
hinge combination, :func:`rate_kernel_offsets` its form for atoms that see
shifted scores (trainable thresholds), and :func:`ramp_rates` reads its
``"ramp"`` proxy for every atom. The checks the kernels share (features, atom
table, coefficients, proxies, bias, margin, minibatch rows) are made here, on
every call; the data objects themselves were validated when they were built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._utils._validation import as_finite_scalar, as_float_vector, as_index_array, as_real_array
from ..exceptions import NumericalError
from ._matrix import AtomTable, FeatureMatrix, check_finite
from ._runtime import extension as _core
from ._threads import resolve_n_threads

__all__ = [
    "KernelResult",
    "rate_kernel",
    "PROXIES",
    "MultiKernelResult",
    "rate_kernel_multi",
    "OffsetKernelResult",
    "rate_kernel_offsets",
    "RampRates",
    "ramp_rates",
]

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
    return (as_finite_scalar(bias, "bias"),) + margin_and_rows(Xm, margin, rows)


def margin_and_rows(Xm, margin, rows):
    """The hinge margin and minibatch rows of one pass over ``Xm`` (two-class or K-class), checked."""
    margin = as_finite_scalar(margin, "margin")
    if margin <= 0:
        raise ValueError(f"margin must be > 0, got {margin}")
    if rows is not None:
        rows = as_index_array(rows, "rows", np.int64)
        if rows.shape[0] == 0:
            raise ValueError("rows must not be empty")
        if rows.min() < 0 or rows.max() >= Xm.n_samples:
            raise ValueError(f"rows holds a row index outside [0, n_samples={Xm.n_samples})")
    return margin, rows


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
    check_finite(coefs, "coefs")
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
    (``u clip(1/2 + s, 0, 1)``, Goh et al. (2016)). Hinge and logistic are upper bounds
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
    return _kernel_pass(MultiKernelResult, _core.rate_kernel_csr, _core.rate_kernel_dense, Xm, args,
                        separate_gradients, "scores x.theta + bias", "theta")


def _kernel_pass(result, csr, dense, Xm, args, separate, scores, reduce):
    """One pass of a multi-combination kernel over ``Xm``, its overflow checks, and its ``result``.

    The core returns the atom rates, hinge rates, proxy values, values, gradients (then any further gradient)
    and the count of non-finite ``scores``; without ``separate`` gradients the first row of each is kept. The
    messages say to scale X or reduce ``reduce``.
    """
    out = csr(*Xm.csr_arrays, Xm.n_samples, Xm.n_features, *args) if Xm.is_sparse else dense(Xm.data, *args)
    *arrays, n_nonfinite = out
    if n_nonfinite:
        raise NumericalError(f"the {scores} of {n_nonfinite} row(s) are not finite (overflow, or inf - inf): "
                             f"scale X or reduce {reduce}")
    if not all(np.all(np.isfinite(a)) for a in arrays[1:]):
        raise NumericalError("the proxies overflowed (a non-finite proxy value, combination value, hinge rate or "
                             f"gradient): scale X or reduce {reduce}, or the coefficients")
    if not separate:  # grad, grad_bias and any further gradient: the one weighted sum
        arrays[5:] = [arrays[5][0], float(arrays[6][0]), *(a[0] for a in arrays[7:])]
    return result(*arrays)


# --- offset atoms: thresholded rates with trainable thresholds (ROC-AUC, issue 11) ---


@dataclass(frozen=True)
class OffsetKernelResult(MultiKernelResult):
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
    >>> res.rates.tolist()  # scores >= 0, and scores >= 1.5 (weights on the 2**-53 grid: 1/3 to within 2**-53)
    [0.6666666666666666, 0.33333333333333337]
    """
    Xm, theta, coefs, k, codes, weights = _kernel_inputs(X, theta, atoms, coefs, proxies, grad_weights)
    offsets = as_real_array(offsets, "offsets")
    if offsets.ndim != 1:
        raise ValueError(f"offsets must be 1-D, got shape {offsets.shape}")
    offsets = np.ascontiguousarray(offsets, dtype=np.float64)
    check_finite(offsets, "offsets")
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
    return _kernel_pass(OffsetKernelResult, _core.offset_kernel_csr, _core.offset_kernel_dense, Xm, args,
                        separate_gradients, "shifted scores x.theta + bias - offset", "theta and the offsets")


# --- ramp rates (Goh et al., 2016): the kernel's "ramp" proxy on one combination per atom ---


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
    """Per-atom ramp rates and 0-1 rates in one pass over the data (Goh et al., 2016).

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
