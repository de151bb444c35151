"""The core's validated data: :class:`FeatureMatrix` and :class:`AtomTable`.

Both are validated **once**, when they are built (shapes, dtypes, finite values,
index ranges and monotone row pointers, checked by parallel passes in the core);
every kernel call then reads them in place. Input in another layout is
converted once, with a :class:`~rateopt.exceptions.DataCopyWarning` that names
the layout to pass instead.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
import scipy.sparse as sp

from .._utils._narrow import atom_id_dtype, row_pointer_dtype
from .._utils._sealed import is_sealed, sealed
from .._utils._validation import as_index_array, as_real_array
from .._utils._weights import exact_normalized
from ..exceptions import DataCopyWarning, RateoptError
from ._runtime import extension as _core
from ._threads import resolve_n_threads

__all__ = ["FeatureMatrix", "AtomTable"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_INDEX = (np.dtype(np.int32), np.dtype(np.int64))
# The checks below are memory-bound passes; two threads saturate this kind of machine.
_CHECK_THREADS = None


def _check_threads():
    return resolve_n_threads(_CHECK_THREADS)


def checked_count(value, name, *, low, not_integer=TypeError):
    """``value`` as an int in ``[low, 2**31)``: the size of a table the core indexes with int32 ids.

    Parameters
    ----------
    value : int
        The count (a bool is refused).
    name : str
        The argument's name in error messages.
    low : int
        The smallest count allowed.
    not_integer : type, default=TypeError
        The exception raised for a value that is not an integer.

    Returns
    -------
    int

    Raises
    ------
    not_integer
        If ``value`` is not an integer (or is a bool).
    ValueError
        If it is outside ``[low, 2**31)``.
    """
    if isinstance(value, (bool, np.bool_)):
        raise not_integer(f"{name} must be an integer, got {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise not_integer(f"{name} must be an integer, got {value!r}") from None
    if not low <= value <= np.iinfo(np.int32).max:
        raise ValueError(f"{name} must be in [{low}, 2**31), got {value}")
    return value


def checked_ids(ids, name, n, *, n_name, kind, at="position"):
    """Sealed int32 ids in ``[0, n)`` from a 1-D integer array (what was checked is what the core reads).

    Parameters
    ----------
    ids : ndarray of int of shape (n_ids,)
        1-D, of an integer dtype (the caller checks both, with its own messages).
    name : str
        The argument's name in error messages ("atoms.indices").
    n : int
        The number of ids' targets, < 2**31 (see :func:`checked_count`).
    n_name : str
        ``n``'s name in error messages ("n_atoms").
    kind : str
        What an id names ("atom"), in error messages.
    at : str, default="position"
        What an index of ``ids`` is called in error messages ("row").

    Returns
    -------
    ndarray of int32 of shape (n_ids,)
        Read-only (:func:`sealed`).

    Raises
    ------
    ValueError
        If an id is outside ``[0, n)``; the message names ``name``, the id and its place.
    """
    # int32 ids (what compiled tables hold) are sealed as they are; other integer dtypes go through
    # int64 for the range check, then to the core's int32. Sealed before the check.
    idx_dtype = np.int32 if ids.dtype == np.int32 else np.int64
    ids = sealed(np.asarray(ids).astype(idx_dtype, copy=False), idx_dtype)
    bad = _core.first_out_of_range(ids, n, _check_threads()) if ids.size else -1
    if bad >= 0:
        raise RateoptError(f"{name} holds {kind} id {int(ids[bad])} at {at} {bad}, outside [0, {n_name}={n})")
    return ids if ids.dtype == np.int32 else sealed(ids, np.int32)  # in range: ids < n < 2**31


def _checked_atom_ids(ids, n_atoms):
    """Sealed atom ids in ``[0, n_atoms)`` of :func:`~rateopt._utils._narrow.atom_id_dtype` (what the core reads).

    Ids already of that dtype and sealed (a compiled table's) are range-checked in place, not copied;
    others go through :func:`checked_ids`, then narrow (exact: every id is below ``n_atoms``).
    """
    narrow = atom_id_dtype(n_atoms)
    if ids.dtype == narrow and is_sealed(ids, narrow):
        if ids.size and int(ids.max()) >= n_atoms:
            bad = int(np.flatnonzero(ids >= n_atoms)[0])
            raise RateoptError(f"atoms.indices holds atom id {int(ids[bad])} at position {bad}, "
                               f"outside [0, n_atoms={n_atoms})")
        return ids
    ids = checked_ids(ids, "atoms.indices", n_atoms, n_name="n_atoms", kind="atom")
    return sealed(ids, narrow)


def checked_weights(weights, name, *, at="position"):
    """Sealed float64 weights, each finite and non-negative (what was checked is what the core reads).

    Parameters
    ----------
    weights : ndarray of real numbers of shape (n,)
        1-D (the caller checks the shape and dtype, with its own messages).
    name : str
        The argument's name in error messages.
    at : str, default="position"
        What an index of ``weights`` is called in error messages ("row").

    Returns
    -------
    ndarray of float64 of shape (n,)
        Read-only (:func:`sealed`).

    Raises
    ------
    ValueError
        If a weight is not finite or is negative; the message names ``name`` and the place.
    """
    w = sealed(weights, np.float64)
    threads = _check_threads()
    bad = _core.first_nonfinite(w, threads)
    if bad >= 0:
        raise RateoptError(f"{name} holds a non-finite value at {at} {bad}")
    bad = _core.first_negative(w, threads)
    if bad >= 0:
        raise RateoptError(f"{name} holds a negative weight {w[bad]} at {at} {bad}")
    return w


def check_finite(arr, name):
    """Raise unless every entry of the float array ``arr`` is finite.

    Parameters
    ----------
    arr : ndarray of float
        The array to check (any shape).
    name : str
        The argument's name in the error message.

    Raises
    ------
    ValueError
        At the first NaN or inf, naming ``name`` and its place ("at position 3"
        for a vector, "at index (1, 0)" otherwise).
    """
    finite = np.isfinite(arr)
    if finite.all():  # the common case, in one reduction (a pass checks its inputs on every call)
        return
    bad = np.flatnonzero(~finite)
    if bad.size:
        where = np.unravel_index(int(bad[0]), arr.shape)
        place = f"position {where[0]}" if arr.ndim == 1 else f"index {tuple(int(i) for i in where)}"
        raise RateoptError(f"{name} holds a non-finite value (NaN or inf) at {place}")


def _read_only_view(a):
    """A read-only view of ``a`` (the values of ``a`` itself, no copy)."""
    v = a.view()
    v.flags.writeable = False
    return v


def _check_csr_indices(indptr, indices, n_values, n, d):
    """Raise ValueError unless ``indptr``/``indices`` describe a valid CSR matrix of shape (n, d)."""
    threads = _check_threads()
    if indptr.shape[0] != n + 1:
        raise RateoptError(f"X.indptr has length {indptr.shape[0]}, expected n_samples + 1 = {n + 1}")
    if indices.shape[0] != n_values:
        raise RateoptError("X.indices and X.data have different lengths")
    if indptr[0] != 0 or indptr[-1] > indices.shape[0]:
        raise RateoptError("X.indptr must start at 0 and end at most at len(X.indices)")
    bad = _core.first_decrease(indptr, threads)
    if bad >= 0:
        raise RateoptError(f"X.indptr decreases at row {bad}: not a valid CSR matrix")
    nnz = int(indptr[-1])
    bad = _core.first_out_of_range(indices[:nnz], d, threads)
    if bad >= 0:
        raise RateoptError(f"X.indices holds column {int(indices[bad])} at position {bad}, outside [0, n_features={d})")


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

    # What the core reads is held in private slots, set once here; the public attributes are read-only
    # properties, so an assignment (Xm.n_features = ..., Xm.data = ...) cannot reach the core either.
    __slots__ = ("_data", "_csr", "_n_samples", "_n_features", "_dtype", "_is_sparse", "_index_dtype")

    def __init__(self, X):
        if isinstance(X, FeatureMatrix):
            for name in self.__slots__:
                setattr(self, name, getattr(X, name))
            return
        self._csr = None
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
                raise RateoptError(f"X could not be read as a numeric 2-D array: {exc}") from None
        else:
            arr = X
        if arr.ndim != 2:
            raise RateoptError(f"X must be 2-D (n_samples, n_features), got an array with ndim={arr.ndim}")
        if arr.dtype.kind not in "biuf":
            raise RateoptError(f"X must hold real numbers, got dtype {arr.dtype}")
        if converted or arr.dtype not in _FLOATS or not arr.flags.c_contiguous:
            dtype = arr.dtype if arr.dtype in _FLOATS else np.float64
            arr = np.ascontiguousarray(arr, dtype=dtype)
            _warn_copy("X", f"a C-contiguous {np.dtype(dtype).name} NumPy array")
        if arr.shape[0] == 0:
            raise RateoptError("X has no rows (n_samples == 0)")
        # A read-only view, not a copy: the core takes the shape from this view, never from the caller's
        # array, so a later edit of the caller's values changes numbers only (a NaN written after validation
        # is still caught: the kernels count non-finite scores).
        arr = _read_only_view(arr)
        bad = _core.first_nonfinite(arr.reshape(-1), _check_threads())
        if bad >= 0:
            i, j = divmod(int(bad), arr.shape[1])
            raise RateoptError(f"X holds a non-finite value (NaN or inf) at row {i}, column {j}")
        self._data = arr
        self._n_samples, self._n_features = arr.shape
        self._dtype = arr.dtype
        self._is_sparse = False
        self._index_dtype = None

    def _init_sparse(self, X):
        if X.ndim != 2:
            raise RateoptError(f"X must be 2-D, got a sparse array with ndim={X.ndim}")
        if X.format != "csr":
            X = X.tocsr()
            _warn_copy("X", "CSR format")
        if X.dtype.kind not in "biuf":
            raise RateoptError(f"X must hold real numbers, got dtype {X.dtype}")
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
            raise RateoptError("X has no rows (n_samples == 0)")
        # Checked here on read-only views of the caller's arrays (no copy: a FeatureMatrix that only
        # scores rows in NumPy/scipy never needs one). The core trusts indptr and indices (they address
        # memory), so what it reads (csr_arrays) are sealed copies of them, made and checked again the
        # first time it asks: no later edit of the caller's matrix can reach it. Indices and row pointers
        # are the cheap part of a CSR matrix (one integer a row and one a stored value), so X's values
        # are not copied: the core reads a read-only view of them, and an edit of the caller's values
        # changes numbers only, never an address.
        indptr, indices, data = (_read_only_view(a) for a in (X.indptr, X.indices, X.data))
        _check_csr_indices(indptr, indices, data.shape[0], n, d)
        threads = _check_threads()
        nnz = int(indptr[-1])
        bad = _core.first_nonfinite(data[:nnz], threads)
        if bad >= 0:
            row = int(np.searchsorted(indptr, bad, side="right") - 1)
            raise RateoptError(f"X holds a non-finite value (NaN or inf) at row {row}, column {int(indices[bad])}")
        # The matrix callers see holds these read-only views (scipy may convert arrays when it builds a
        # matrix, so they are set afterwards); the core never reads this object's attributes (csr_arrays).
        M = type(X)((data, indices, indptr), shape=(n, d), copy=False)
        M.data, M.indices, M.indptr = data, indices, indptr
        self._data = M
        self._n_samples, self._n_features = n, d
        self._dtype = X.dtype
        self._is_sparse = True
        self._index_dtype = indices.dtype

    @property
    def data(self):
        """The wrapped matrix (read-only arrays)."""
        return self._data

    @property
    def n_samples(self):
        """Number of rows."""
        return self._n_samples

    @property
    def n_features(self):
        """Number of columns."""
        return self._n_features

    @property
    def dtype(self):
        """The dtype of the values: float32 or float64."""
        return self._dtype

    @property
    def is_sparse(self):
        """Whether ``data`` is CSR."""
        return self._is_sparse

    @property
    def index_dtype(self):
        """The dtype of a CSR matrix's indices: int32 or int64 (None for dense)."""
        return self._index_dtype

    @property
    def csr_arrays(self):
        """``(data, indices, indptr)`` of a CSR matrix, as the core reads them.

        Returns
        -------
        tuple of ndarray
            Read-only; ``indices`` and ``indptr`` are sealed copies (see :func:`sealed`), made and checked
            on the first call, then kept.

        Raises
        ------
        ValueError
            If the matrix is dense, or the caller's index arrays were edited into an invalid CSR matrix
            after the FeatureMatrix was built.
        """
        if not self._is_sparse:
            raise ValueError("a dense FeatureMatrix has no CSR arrays")
        if self._csr is None:
            M = self._data
            indptr, indices = sealed(M.indptr, self._index_dtype), sealed(M.indices, self._index_dtype)
            _check_csr_indices(indptr, indices, M.data.shape[0], self._n_samples, self._n_features)
            self._csr = (M.data, indices, indptr)
        return self._csr

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
        Stored as int32 when ``len(indices) < 2**31``, else int64.
    indices : array-like of int, shape (nnz,)
        Atom ids in ``[0, n_atoms)``. Stored as the narrowest of uint8 (up to
        256 atoms), uint16 (up to 65,536) and int32.
    weights : array-like of float, shape (nnz,)
        Normalized weights, finite and non-negative.
    n_atoms : int
        Number of atoms.

    Attributes
    ----------
    indptr : ndarray of int32 or int64
    indices : ndarray of uint8, uint16 or int32
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

    # Read-only properties over private slots: neither an assignment (t.n_atoms = 1) nor an in-place edit
    # (t.indices[0] = 10**9) reaches the core, which trusts the ids and row pointers it was given.
    __slots__ = ("_indptr", "_indices", "_weights", "_n_samples", "_n_atoms")

    def __init__(self, indptr, indices, weights, n_atoms):
        # Sealed copies, made before the checks, so what was checked is what the core reads: an atom
        # table is small beside X (one id and one weight per membership), and all of it is copied (the
        # ids and row pointers address memory; the weights are copied too, so the table a kernel reads
        # is the one that was validated, negative weights included).
        # The narrow layouts (int32 row pointers, uint8/uint16 ids) are kept as given when sealed, so a
        # compiled table (rateopt._compiler) is shared, not copied; wider ones are checked, then narrowed.
        ptr_dtype = np.int32 if getattr(indptr, "dtype", None) == np.int32 else np.int64
        indptr = sealed(as_index_array(indptr, "atoms.indptr", ptr_dtype), ptr_dtype)
        given = getattr(indices, "dtype", None)
        idx_dtype = given if given in (np.uint8, np.uint16, np.int32) else np.int64
        indices = as_index_array(indices, "atoms.indices", idx_dtype)
        weights = as_real_array(weights, "atoms.weights")
        n_atoms = checked_count(n_atoms, "atoms.n_atoms", low=0)
        if indptr.shape[0] < 2:
            raise ValueError("atoms.indptr must have length n_samples + 1 >= 2")
        if weights.ndim != 1 or weights.shape[0] != indices.shape[0]:
            raise ValueError("atoms.weights must be 1-D with the same length as atoms.indices")
        if indptr[0] != 0 or indptr[-1] != indices.shape[0]:
            raise ValueError("atoms.indptr must start at 0 and end at len(atoms.indices)")
        bad = _core.first_decrease(indptr, _check_threads())
        if bad >= 0:
            raise ValueError(f"atoms.indptr decreases at row {bad}")
        indices = _checked_atom_ids(indices, n_atoms)
        weights = checked_weights(weights, "atoms.weights")
        indptr = sealed(indptr, row_pointer_dtype(indices.shape[0]))  # values checked: 0 ... nnz
        self._indptr = indptr
        self._indices = indices
        self._weights = weights
        self._n_samples = indptr.shape[0] - 1
        self._n_atoms = n_atoms

    @property
    def indptr(self):
        """Row pointers (int32 when the table has fewer than ``2**31`` entries, else int64; read-only)."""
        return self._indptr

    @property
    def indices(self):
        """Atom ids (uint8 up to 256 atoms, uint16 up to 65,536, else int32; read-only)."""
        return self._indices

    @property
    def weights(self):
        """Normalized weights (float64, read-only)."""
        return self._weights

    @property
    def n_samples(self):
        """Number of rows."""
        return self._n_samples

    @property
    def n_atoms(self):
        """Number of atoms."""
        return self._n_atoms

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
                raise RateoptError(f"sample_weight has shape {w.shape}, expected ({n},)")
            if not np.all(np.isfinite(w)) or np.any(w < 0):
                raise RateoptError("sample_weight must be finite and non-negative")
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
        # Each atom's weights normalized on the dyadic grid of exact_normalized (members in row order),
        # so that a whole atom's rate is exactly 1 and the complement of a rate exactly 1 - rate.
        order = np.argsort(cols, kind="stable")
        bounds = np.searchsorted(cols[order], np.arange(n_atoms + 1))
        normalized = np.empty_like(scaled)
        for a in range(n_atoms):
            members = order[bounds[a]:bounds[a + 1]]
            normalized[members] = exact_normalized(scaled[members])
        return cls(M.indptr, cols, normalized, n_atoms)

    def __repr__(self):
        return f"AtomTable(n_samples={self.n_samples}, n_atoms={self.n_atoms}, nnz={self.indices.shape[0]})"
