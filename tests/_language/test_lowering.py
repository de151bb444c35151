"""``rateopt._language._lowering.Env``: the weight sums of subsets, against ``WeightSum.of`` of their weights."""

from __future__ import annotations

import numpy as np
import pytest
import rateopt as ro
from rateopt._language._lowering import Env, WeightSum


@pytest.mark.parametrize("n", [1, 50, 200_003])
def test_weight_sums_without_weights_are_those_of_unit_weights_bit_for_bit(n):
    """A dataset without weights (their broadcast 1.0) sums a subset's weights from its size; the sum is
    ``WeightSum.of`` of the subset's ones (and of the same dataset with an array of ones), mantissa and
    exponent alike."""
    rng = np.random.default_rng(n)
    X, y, g = rng.random((n, 1)), rng.integers(0, 2, n), rng.integers(0, 3, n)
    plain = ro.Dataset(X, y, groups={"g": g})
    ones = ro.Dataset(X, y, weights=np.ones(n), groups={"g": g})
    assert plain.weights.strides == (0,) and ones.weights.strides != (0,)
    for ds in (plain, ones):
        env = Env()
        base = ro.goals.objective(None, ds).context
        subsets = [base, base.positive(), base.negative()]
        subsets = [c for c in subsets if c.mask().any()]
        for ctx in subsets:
            got = env.weight(ctx)
            want = WeightSum.of(np.ones(int(ctx.mask().sum())))
            assert (got.mant, got.exp) == (want.mant, want.exp)
