"""The one place rateopt talks to HiGHS: :func:`quiet_highs` (a silent solver) and :func:`solve_lp` (an LP).

:func:`solve_lp` is the one LP helper: the shrinking LP (``_solutions/_shrink``),
the threshold LP (``_postprocess/_lp``) and the plug-in column generation
(``_postprocess/_plugin``) all pass their rows, bounds and objective to it and
read back a :class:`LpSolution` (status, primal values, row and column duals,
objective). It validates the arrays once (each message names the argument),
hands HiGHS the constraint matrix column-wise with its zeros dropped, and maps
HiGHS' model status to three outcomes (``"optimal"``, ``"infeasible"``,
``"unbounded"``); any other ending (a rejected model, an iteration or time
limit, a solver error) raises :class:`LpSolveError`, whose message names the LP.

HiGHS prints a banner ("Running HiGHS 1.x ... Copyright ...") on the C-level
standard output (file descriptor 1, not ``sys.stdout``) from its constructor,
the first time a ``Highs`` object is built in a process, before the
``output_flag`` option can be set (upstream ERGO-Code/HiGHS#2749). It would land
in ``rateopt fit``'s summary table and in any pipeline that reads rateopt's
standard output. :func:`quiet_highs` builds the first instance with file
descriptor 1 pointed at the null device (C ``stdio`` buffers flushed before
the descriptor is restored, so nothing buffered leaks afterwards), and every
instance with ``output_flag`` off. Every module that solves an LP with highspy
gets its solver here.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..exceptions import RateoptError

__all__ = ["LpSolution", "LpSolveError", "import_highspy", "quiet_highs", "solve_lp", "solve_mixture_lp"]

_lock = threading.Lock()
_first_done = False


def _flush_c_stdio():
    """``fflush(NULL)``: push C ``stdio`` buffers (the banner's ``printf``) to their descriptors now."""
    try:
        libc = ctypes.CDLL(None)
        libc.fflush(None)
    except (OSError, AttributeError, TypeError):  # pragma: no cover - no C library handle (e.g. Windows)
        pass


def _construct_silenced():
    """A ``highspy.Highs()`` built with file descriptor 1 on the null device (its banner discarded)."""
    import highspy  # lazy: `import rateopt` loads no highspy
    fd = 1  # HiGHS prints with printf, whatever sys.stdout is
    try:
        saved = os.dup(fd)
    except OSError:  # no descriptor 1 at all (a detached process): nothing can be printed anyway
        return highspy.Highs()
    try:
        for stream in (sys.stdout, sys.__stdout__):  # what Python has buffered belongs before the redirect
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
        try:
            h = highspy.Highs()
        finally:
            _flush_c_stdio()
            os.dup2(saved, fd)
    finally:
        os.close(saved)
    return h


def import_highspy():
    """Import highspy now: for a module whose every use solves LPs, at that module's own import.

    ``import rateopt`` loads no highspy (this module is imported with it, so
    it imports highspy lazily); a lazily imported module whose every fit
    solves an LP (the threshold post-processor) calls this at its import, as
    it imports scikit-learn, so its first fit does not pay the import (about
    10 ms).

    Returns
    -------
    module
        ``highspy``.
    """
    import highspy  # lazy: `import rateopt` loads no highspy

    return highspy


def quiet_highs(options=None):
    """A ``highspy.Highs`` solver that prints nothing (no banner, ``output_flag`` off).

    Parameters
    ----------
    options : mapping of str to object, default=None
        Further HiGHS options, set with ``setOptionValue`` in order.

    Returns
    -------
    highspy.Highs
        A fresh solver with ``output_flag = False`` and ``options`` set.

    Raises
    ------
    ValueError
        If HiGHS refuses an option (unknown name or invalid value).
    """
    import highspy  # lazy: `import rateopt` loads no highspy
    global _first_done
    with _lock:
        if _first_done:
            h = highspy.Highs()
        else:
            h = _construct_silenced()
            _first_done = True
    for key, value in {"output_flag": False, **(options or {})}.items():
        if h.setOptionValue(key, value) == highspy.HighsStatus.kError:
            raise ValueError(f"HiGHS option {key!r}: HiGHS refused the value {value!r}")
    return h


class LpSolveError(RateoptError, RuntimeError):
    """HiGHS rejected an LP or ended it with a status other than optimal, infeasible or unbounded.

    A :class:`~rateopt.exceptions.RateoptError` (so a :class:`ValueError`) and a
    :class:`RuntimeError`: callers that documented either keep their promise.
    """


@dataclass(frozen=True, eq=False)
class LpSolution:
    """The outcome of :func:`solve_lp`.

    Attributes
    ----------
    status : {"optimal", "infeasible", "unbounded"}
        ``"infeasible"`` also stands for HiGHS' "unbounded or infeasible".
    x : ndarray of shape (n_cols,) or None
        The column values (None unless optimal).
    row_dual : ndarray of shape (n_rows,) or None
        HiGHS' row duals (None unless optimal): for a minimization, the
        derivative of the optimal objective with respect to the row's active
        bound (<= 0 at an active upper bound, >= 0 at an active lower bound),
        the sign convention of :func:`scipy.optimize.linprog`'s marginals.
    col_dual : ndarray of shape (n_cols,) or None
        The reduced costs ``cost - A^T row_dual`` (None unless optimal).
    objective : float or None
        The optimal objective value ``cost . x`` (None unless optimal).
    """

    status: str
    x: np.ndarray | None = None
    row_dual: np.ndarray | None = None
    col_dual: np.ndarray | None = None
    objective: float | None = None

    @property
    def optimal(self) -> bool:
        """True when HiGHS proved the LP optimal."""
        return self.status == "optimal"


def _as_bounds(value, n, name):
    """``value`` broadcast to a float64 vector of length ``n`` (NaN refused; +-inf means no bound)."""
    try:
        b = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric, got {type(value).__name__}") from None
    if b.ndim == 0:
        b = np.full(n, float(b))
    if b.shape != (n,):
        raise ValueError(f"{name} must be a scalar or of shape ({n},), got shape {b.shape}")
    if np.isnan(b).any():
        raise ValueError(f"{name} must not contain NaN (use +-inf for no bound)")
    return b


def _highs_bounds(b):
    """``b`` with +-inf written as HiGHS' infinity."""
    import highspy  # lazy: `import rateopt` loads no highspy
    inf = highspy.kHighsInf
    return np.where(np.isposinf(b), inf, np.where(np.isneginf(b), -inf, b))


def _as_csc(A):
    """``A`` (dense 2-D array or scipy sparse) as a CSC matrix of float64, zeros dropped, rows sorted per column."""
    if sp.issparse(A):
        M = sp.csc_matrix(A, dtype=np.float64, copy=True)
        M.eliminate_zeros()
    else:
        try:
            dense = np.asarray(A, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"A must be a numeric 2-D array or a scipy sparse matrix, got {type(A).__name__}") from None
        if dense.ndim != 2:
            raise ValueError(f"A must be 2-D of shape (n_rows, n_cols), got shape {dense.shape}")
        M = sp.csc_matrix(dense)
    M.sum_duplicates()
    M.sort_indices()
    if not np.all(np.isfinite(M.data)):
        raise ValueError("A must be finite (no NaN or inf)")
    return M


def solve_lp(cost, A, row_lower, row_upper, *, col_lower=0.0, col_upper=np.inf, options=None, what="the LP"):
    """Minimize ``cost . x`` subject to ``row_lower <= A x <= row_upper``, ``col_lower <= x <= col_upper``.

    Parameters
    ----------
    cost : array-like of shape (n_cols,)
        The objective's coefficients (finite).
    A : array-like of shape (n_rows, n_cols) or scipy sparse matrix
        The constraint rows (finite). Zeros are dropped; HiGHS gets it column-wise.
    row_lower, row_upper : float or array-like of shape (n_rows,)
        The rows' bounds; ``-inf`` / ``inf`` for none, equal for an equality.
    col_lower, col_upper : float or array-like of shape (n_cols,), default=0.0 and inf
        The columns' bounds (by default ``x >= 0``).
    options : mapping of str to object, default=None
        HiGHS options (see :func:`quiet_highs`).
    what : str, default="the LP"
        The LP's name in error messages ("the shrinking LP").

    Returns
    -------
    LpSolution
        The status, and when optimal the primal values, duals and objective.

    Raises
    ------
    ValueError
        If an argument has the wrong shape or is not finite (the message names it).
    LpSolveError
        If HiGHS rejects the model or ends with a status other than optimal,
        infeasible or unbounded (the message names ``what`` and the status).
    """
    import highspy  # lazy: `import rateopt` loads no highspy
    M = _as_csc(A)
    n_rows, n_cols = M.shape
    try:
        c = np.asarray(cost, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"cost must be numeric, got {type(cost).__name__}") from None
    if c.shape != (n_cols,):
        raise ValueError(f"cost must be of shape (n_cols,) = ({n_cols},), got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("cost must be finite (no NaN or inf)")
    bounds = {name: _as_bounds(value, n, name) for name, value, n in (
        ("row_lower", row_lower, n_rows), ("row_upper", row_upper, n_rows),
        ("col_lower", col_lower, n_cols), ("col_upper", col_upper, n_cols))}
    for lo, hi in (("row_lower", "row_upper"), ("col_lower", "col_upper")):
        bad = np.flatnonzero(bounds[lo] > bounds[hi])
        if bad.size:
            raise ValueError(f"{lo} must be <= {hi}: entry {bad[0]} has "
                             f"{bounds[lo][bad[0]]!r} > {bounds[hi][bad[0]]!r}")

    h = quiet_highs(options)
    # The model goes to HiGHS as arrays (addRows, then addCols with the matrix column-wise), which
    # highspy reads as buffers. Filling a HighsLp's fields converts them element by element, and
    # cost more than solving a threshold LP of 10^4 columns. (passModel's array form would be one
    # call, but highspy reads an empty integrality array as garbage.)
    empty = np.zeros(0, dtype=np.int32)
    if (h.addRows(n_rows, _highs_bounds(bounds["row_lower"]), _highs_bounds(bounds["row_upper"]), 0, empty, empty,
                  np.zeros(0)) == highspy.HighsStatus.kError
            or h.addCols(n_cols, np.ascontiguousarray(c), _highs_bounds(bounds["col_lower"]),
                         _highs_bounds(bounds["col_upper"]), int(M.nnz), M.indptr[:-1].astype(np.int32),
                         M.indices.astype(np.int32), np.ascontiguousarray(M.data)) == highspy.HighsStatus.kError):
        raise LpSolveError(f"HiGHS rejected {what} (addRows or addCols returned kError)")
    del M  # HiGHS holds its own copy
    run_status = h.run()
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kOptimal:
        if run_status == highspy.HighsStatus.kError:  # pragma: no cover - defensive
            raise LpSolveError(f"HiGHS reported {what} optimal but its run ended with an error")
        sol = h.getSolution()
        return LpSolution(
            "optimal",
            x=np.asarray(sol.col_value, dtype=np.float64),
            row_dual=np.asarray(sol.row_dual, dtype=np.float64),
            col_dual=np.asarray(sol.col_dual, dtype=np.float64),
            objective=float(h.getInfo().objective_function_value),
        )
    if status in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
        return LpSolution("infeasible")
    if status == highspy.HighsModelStatus.kUnbounded:
        return LpSolution("unbounded")
    raise LpSolveError(
        f"HiGHS ended {what} with unexpected model status {h.modelStatusToString(status)!r} ({status.name})"
    )


def solve_mixture_lp(cost, G, row_upper, *, with_z, options=None, what="the mixture LP"):
    """The LP over mixtures ``p`` of ``T`` candidates: ``min cost . (p[, z])`` s.t. ``G^T p [- z] <= row_upper``, ``sum p = 1``.

    Columns are ``p`` (``T`` of them, ``p >= 0``) and, if ``with_z``, a free
    column ``z`` (the largest constraint value, for a least-violation phase).
    Rows are the ``m`` constraints, then the equality ``sum(p) = 1``. The
    shrinking LP and the plug-in's restricted master LP are this LP.

    Parameters
    ----------
    cost : array-like of shape (T,) or (T + 1,) with ``with_z``
    G : ndarray of shape (T, m)
        The candidates' constraint values (finite).
    row_upper : array-like of shape (m,)
        The constraints' right-hand sides.
    with_z : bool
        Add the free column ``z``, subtracted from every constraint row.
    options : mapping of str to object, default=None
        HiGHS options.
    what : str, default="the mixture LP"
        The LP's name in error messages.

    Returns
    -------
    LpSolution
        ``row_dual`` has ``m + 1`` entries: the constraints', then the sum row's.

    Raises
    ------
    ValueError
        If an argument has the wrong shape or is not finite.
    LpSolveError
        As :func:`solve_lp`.
    """
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2:
        raise ValueError(f"G must be 2-D of shape (T, m), got shape {G.shape}")
    T, m = G.shape
    n_col = T + int(bool(with_z))
    A = np.zeros((m + 1, n_col))
    A[:m, :T] = G.T
    A[m, :T] = 1.0
    if with_z:
        A[:m, T] = -1.0
    col_lower = np.zeros(n_col)
    if with_z:
        col_lower[T] = -np.inf
    row_upper = np.asarray(row_upper, dtype=np.float64)
    if row_upper.shape != (m,):
        raise ValueError(f"row_upper must be of shape (m,) = ({m},), got shape {row_upper.shape}")
    return solve_lp(
        cost, A,
        np.concatenate((np.full(m, -np.inf), [1.0])),
        np.concatenate((row_upper, [1.0])),
        col_lower=col_lower, col_upper=np.inf, options=options, what=what,
    )
