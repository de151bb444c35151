"""Sealed arrays: read-only copies whose memory is an immutable ``bytes`` object.

The core reads a validated array in place and trusts what it checked; a
sealed array cannot be written through NumPy again (``flags.writeable = True``
raises), so a check once made stays true. An array that is already sealed is
shared, never copied again: the compiler seals the membership table it builds,
and the core's :class:`~rateopt.core.AtomTable` then keeps those very arrays.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sealed", "is_sealed"]


def sealed(a, dtype):
    """A read-only copy of ``a`` (C-contiguous, of ``dtype``) that nothing can make writeable again.

    Parameters
    ----------
    a : array-like
    dtype : dtype
        The copy's dtype.

    Returns
    -------
    ndarray
        ``a`` itself when it is already sealed (:func:`is_sealed`), else a copy
        whose memory is an immutable ``bytes`` object, so neither the array nor
        its ``base`` can be written through NumPy, and the caller's array, which
        may change later, is not what the core reads.
    """
    if is_sealed(a, dtype):
        return a  # already sealed (e.g. another validated object's array): shared, not copied again
    a = np.ascontiguousarray(a, dtype=dtype)
    out = np.frombuffer(a.tobytes(), dtype=dtype)
    return out if a.ndim == 1 else out.reshape(a.shape)


def is_sealed(a, dtype):
    """Whether ``a`` is a C-contiguous ``dtype`` array whose every base is read-only, ending in ``bytes``.

    Parameters
    ----------
    a : object
    dtype : dtype

    Returns
    -------
    bool
    """
    if not isinstance(a, np.ndarray) or a.dtype != dtype or not a.flags.c_contiguous:
        return False
    b = a
    while isinstance(b, np.ndarray):
        if b.flags.writeable:
            return False
        b = b.base
    return isinstance(b, bytes)
