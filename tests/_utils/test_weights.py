"""Normalized weights on a dyadic grid (``rateopt._utils._weights``): exact sums in any order."""

from __future__ import annotations

import numpy as np
import pytest
from rateopt._utils._weights import GRID_EXPONENT, exact_normalized

ULP = 2.0**-GRID_EXPONENT


def _weights(seed, n):
    rng = np.random.default_rng(seed)
    w = rng.lognormal(0.0, 2.0, n)  # spread over orders of magnitude
    w[rng.random(n) < 0.1] = 0.0
    w[0] = 1.0
    return w


@pytest.mark.parametrize("seed, n", [(0, 1), (1, 2), (2, 7), (3, 1000), (4, 100_003)])
def test_every_sum_of_normalized_weights_is_exact(seed, n):
    w = _weights(seed, n)
    q = exact_normalized(w.copy())
    # On the grid: each weight is an integer number of 2**-53, and the integers sum to 2**53 exactly.
    k = q / ULP
    assert np.array_equal(k, np.round(k)) and int(k.astype(np.int64).sum()) == 2**GRID_EXPONENT
    assert np.all(q >= 0) and np.all(q[w == 0] == 0)
    # Close to w / sum(w), computed independently in long double where available.
    ref = w.astype(np.longdouble) / np.sum(w.astype(np.longdouble))
    assert np.max(np.abs(q - ref)) <= 4 * ULP
    # Any order, any subset: the same exact value (the integers' sum, scaled).
    rng = np.random.default_rng(seed + 100)
    for _ in range(5):
        subset = rng.random(n) < 0.5
        exact = int(k[subset].astype(np.int64).sum()) * ULP
        perm = rng.permutation(np.flatnonzero(subset))
        assert float(np.sum(q[perm])) == exact and float(np.cumsum(q[perm])[-1] if perm.size else 0.0) == exact
    assert float(np.sum(q)) == 1.0 and float(np.sum(q[::-1])) == 1.0 and float(np.cumsum(q)[-1]) == 1.0
    assert 1.0 - float(np.sum(q[w > 0])) == 0.0


def test_out_may_be_the_input():
    w = _weights(5, 50)
    expected = exact_normalized(w.copy())
    got = exact_normalized(w, out=w)
    assert got is w and np.array_equal(w, expected)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000, 196_003])
def test_unit_normalized_is_exact_normalized_of_equal_weights_bit_for_bit(n):
    from rateopt._utils._weights import unit_normalized

    got = unit_normalized(n)
    for q in (1.0, 0.5):  # a unit weight, and one rescaled by its maximum (as the compiler does)
        want = exact_normalized(np.full(n, q))
        assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert unit_normalized(0).size == 0
