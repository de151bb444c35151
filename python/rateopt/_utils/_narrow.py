"""The narrow integer dtypes of an atom-membership table (issue 33's memory target).

The core reads atom ids as uint8, uint16 or int32 and row pointers as int32 or
int64 (``cpp/include/rateopt/matrix_view.hpp``, ``AtomView``); these pick the
narrowest that holds a table's values, so a table costs 1 byte per entry and 4
per row less than the widest layout wherever it can.
"""

from __future__ import annotations

import numpy as np

__all__ = ["atom_id_dtype", "row_pointer_dtype"]


def atom_id_dtype(n_atoms):
    """The narrowest dtype of the core's atom ids that holds ids in ``[0, n_atoms)``.

    Parameters
    ----------
    n_atoms : int
        The number of atoms, ``0 <= n_atoms < 2**31``.

    Returns
    -------
    numpy.dtype
        ``uint8`` up to 256 atoms, ``uint16`` up to 65,536, else ``int32``.
    """
    if n_atoms <= 1 << 8:
        return np.dtype(np.uint8)
    if n_atoms <= 1 << 16:
        return np.dtype(np.uint16)
    return np.dtype(np.int32)


def row_pointer_dtype(nnz):
    """The dtype of the core's row pointers for a table of ``nnz`` entries.

    Parameters
    ----------
    nnz : int
        The table's number of entries (its last row pointer).

    Returns
    -------
    numpy.dtype
        ``int32`` when ``nnz < 2**31``, else ``int64``.
    """
    return np.dtype(np.int32) if nnz < 1 << 31 else np.dtype(np.int64)
