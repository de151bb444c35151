"""Groups that are features: the cells of a problem as an affine function of X, and offsets folded into a model.

When the goals' group columns are also columns of X (one-hot, or one
indicator per two-valued group), every row's cell indicator is an affine
function of its features: ``1[cell(x) == c] = x . A[:, c] + b[c]``. A
per-cell class offset ``o[cell(x), k]`` is then a linear term, and a
multinomial linear model followed by per-cell offsets is again a multinomial
linear model (:func:`fold_cell_offsets`), which needs no groups at prediction.

:func:`cell_indicator_map` finds ``(A, b)`` from the training rows: the
columns of X whose value is constant within every cell, and a solution of
``[M, 1] V = I`` over the cells' values ``M`` of those columns. The map is
exact on the training rows (checked); on new rows it reads the same columns,
so it gives the rows' cells exactly when their group columns encode their
groups as on the training rows, which holds when the groups are features.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..core import FeatureMatrix

__all__ = ["cell_indicator_map", "fold_cell_offsets", "problem_cell_map"]

#: Rows per chunk when checking which columns are constant within the cells.
_CHUNK_ELEMENTS = 1 << 22
#: Largest error of the map on a training row's indicator (the map is a solution of a small exact system).
_EXACT = 1e-9


def _cell_values(X, cells, n_cells):
    """Each cell's first row (n_cells, d), or None when a cell has no row."""
    if cells.size and 0 <= cells.min() and cells.max() < n_cells:
        # codes in range: every cell's first row by counting, with no sort of the rows
        if np.count_nonzero(np.bincount(cells, minlength=n_cells)) != n_cells:
            return None
        first = np.empty(n_cells, dtype=np.int64)
        first[cells[::-1]] = np.arange(cells.size - 1, -1, -1)  # the last write of a cell is its first row
    else:
        present, first = np.unique(cells, return_index=True)
        if present.shape[0] != n_cells:
            return None
    M = X[first]
    return M.toarray() if sp.issparse(M) else np.asarray(M, dtype=np.float64)


def _constant_columns(X, cells, M):
    """The columns of X whose value equals their cell's first row's on every row."""
    n, d = X.shape
    # a first look at about 1,000 evenly spaced rows rules out most columns; the full pass checks the rest
    probe = np.arange(0, n, max(1, n // 1024))
    block = X[probe]
    block = block.toarray() if sp.issparse(block) else np.asarray(block, dtype=np.float64)
    J = np.flatnonzero(np.all(block == M[cells[probe]], axis=0))
    if J.size == 0:
        return J
    ok = np.ones(J.size, dtype=bool)
    MJ = M[:, J]
    step = max(1, _CHUNK_ELEMENTS // J.size)
    for lo in range(0, n, step):
        block = X[lo:lo + step][:, J]
        block = block.toarray() if sp.issparse(block) else np.asarray(block, dtype=np.float64)
        ok &= np.all(block == MJ[cells[lo:lo + step]], axis=0)
        if not ok.any():
            break
    return J[ok]


def cell_indicator_map(X, cells, n_cells):
    """The affine map from features to cell indicators, exact on the given rows, or None.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        The training features (finite).
    cells : ndarray of int of shape (n_samples,)
        Each row's cell in ``0..n_cells-1``.
    n_cells : int

    Returns
    -------
    tuple of (ndarray of shape (n_features, n_cells), ndarray of shape (n_cells,)) or None
        ``(A, b)`` with ``X @ A + b`` equal to the one-hot cells on every
        row (to 1e-9), or None when no affine function of X's columns gives
        the cells (the groups are not features, or a cell is a product of
        several group columns that X does not hold).
    """
    cells = np.asarray(cells, dtype=np.int64).reshape(-1)
    n, d = X.shape
    if cells.shape[0] != n or n == 0:
        raise ValueError(f"cells must have one entry per row of X ({n}), got {cells.shape[0]}")
    G = int(n_cells)
    if G == 1:
        return np.zeros((d, 1)), np.ones(1)
    if G > d + 1:  # the one-hot cells have rank G; an affine function of d features has rank at most d + 1
        return None
    if not sp.issparse(X):
        X = np.asarray(X, dtype=np.float64)
    M = _cell_values(X, cells, G)
    if M is None:
        return None
    J = _constant_columns(X, cells, M)
    if J.size == 0:
        return None
    Maug = np.column_stack([M[:, J], np.ones(G)])
    V, *_ = np.linalg.lstsq(Maug, np.eye(G), rcond=None)
    if not np.allclose(Maug @ V, np.eye(G), rtol=0.0, atol=_EXACT):
        return None
    A = np.zeros((d, G))
    A[J] = V[:-1]
    b = V[-1].copy()
    Z = X @ A + b
    if np.max(np.abs(np.asarray(Z) - np.eye(G)[cells])) > _EXACT:  # pragma: no cover - implied by the system
        return None
    return A, b


def problem_cell_map(problem):
    """:func:`cell_indicator_map` of a K-class problem's training rows and cells (None: the groups are not features).

    Parameters
    ----------
    problem : Problem
        A K-class problem (a :class:`~rateopt.ClassDataset`).

    Returns
    -------
    tuple or None
    """
    c = problem.compiled
    return cell_indicator_map(FeatureMatrix(problem.dataset.X).data, c.cells, c.n_cells)


def fold_cell_offsets(coef, intercept, offsets, cell_map):
    """A multinomial linear model followed by per-cell class offsets, as one multinomial linear model.

    Parameters
    ----------
    coef : ndarray of shape (K, n_features)
    intercept : ndarray of shape (K,)
    offsets : ndarray of shape (n_cells, K)
        ``o[c, k]`` added to class ``k``'s score of the rows of cell ``c``.
    cell_map : tuple
        ``(A, b)`` of :func:`cell_indicator_map`.

    Returns
    -------
    coef : ndarray of shape (K, n_features)
    intercept : ndarray of shape (K,)
        ``x . coef[k] + intercept[k] = x . coef_in[k] + intercept_in[k] + o[cell(x), k]`` wherever
        ``x . A + b`` is the row's cell indicator.
    """
    A, b = cell_map
    o = np.asarray(offsets, dtype=np.float64)
    if o.shape != (A.shape[1], np.shape(intercept)[0]):
        raise ValueError(f"offsets must have shape ({A.shape[1]}, {np.shape(intercept)[0]}), got {o.shape}")
    return np.asarray(coef, dtype=np.float64) + (A @ o).T, np.asarray(intercept, dtype=np.float64) + b @ o
