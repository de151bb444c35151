"""Normalized weights on a dyadic grid: every sum of them is exact, in any order.

An atom's rate is a sum of its members' normalized weights over the members
with a positive decision. With weights ``w / sum(w)`` computed in floating
point, the weights of a whole atom sum to ``1 +- a few ulp`` (the amount
depending on the weights and the order of the sum), so the rate of an atom
whose members are all positive is not exactly 1, and its complement
(``tnr = 1 - fpr``, ``npr = 1 - ppr``) comes out as ``+-1e-16`` instead of 0:
enough to move a G-mean (``sqrt``) by 1e-8 and a KL divergence (``log``) by
1e-6.

:func:`exact_normalized` rounds the normalized weights to multiples of
``2**-53`` so that they sum to exactly 1. Every partial sum is then a
multiple of ``2**-53`` no larger than 1, which float64 holds exactly: any
subset of the weights sums to the same value whatever the order (threads,
chunks, minibatches of whole atoms, partitions), a whole atom to exactly 1,
and the complement of a rate to exactly ``1 - rate``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GRID_EXPONENT", "exact_normalized", "unit_normalized"]

#: Normalized weights are multiples of ``2**-GRID_EXPONENT`` (the finest grid whose sums up to 1 are exact).
GRID_EXPONENT = 53


def exact_normalized(w, out=None):
    """``w / sum(w)`` rounded to multiples of ``2**-53`` that sum to exactly 1.

    The rounding is of the running sums, not of each weight, so the rounded
    weights telescope: their total is exactly 1, none is negative, a zero
    weight stays 0, and each differs from ``w_j / sum(w)`` by at most a few
    units of ``2**-53`` (about ``3e-16``, the size of the round-off a
    floating-point normalization already had, now without its drift).

    Parameters
    ----------
    w : ndarray of shape (n,)
        Finite, non-negative weights with a positive sum (rescale weights near
        the float64 maximum by a power of two first: the running sum must not
        overflow).
    out : ndarray of shape (n,) of float64, default=None
        Where to write the result (may be ``w`` itself, when it is float64).

    Returns
    -------
    ndarray of shape (n,) of float64
        The normalized weights.
    """
    c = np.cumsum(w, dtype=np.float64, out=out)
    if c.size == 0:
        return c
    return _on_grid(c)


def unit_normalized(n):
    """:func:`exact_normalized` of ``n`` equal weights, bit for bit, without its running sum.

    The running sums of ``n`` equal weights ``q`` (a power of two, as a unit
    weight rescaled by its maximum is: 0.5) are ``q, 2q, ..., nq``, exactly, and
    ``(i q) / (n q)`` rounds as ``i / n`` does: the running sums are
    ``1, 2, ..., n`` (one pass, where a cumulative sum is a slow sequential one).

    Parameters
    ----------
    n : int
        The number of weights (at most ``2**53``).

    Returns
    -------
    ndarray of shape (n,) of float64
        The normalized weights.
    """
    c = np.arange(1, n + 1, dtype=np.float64)
    return _on_grid(c) if n else c


def _on_grid(c):
    """Running sums ``c`` (positive total) in place -> the weights on the ``2**-53`` grid that telescope to 1."""
    total = c[-1]
    c /= total  # the last running sum becomes 1.0 exactly (x / x)
    np.ldexp(c, GRID_EXPONENT, out=c)  # exact: a power of two
    np.rint(c, out=c)  # integers in [0, 2**53], non-decreasing (rounding is monotone)
    np.subtract(c[1:], c[:-1], out=c[1:])  # exact: differences of integers below 2**53 (NumPy buffers overlap)
    np.ldexp(c, -GRID_EXPONENT, out=c)  # exact
    return c
