"""Predicates built through contexts: masks against NumPy, and the group columns a predicate reads."""

import numpy as np
import pytest

from rateopt import Dataset
from rateopt._language._predicates import group_columns


def _random_tree(rng, ds, columns, depth):
    """A random context over ``columns`` with its NumPy mask and the columns it names, in construction order."""
    if depth == 0 or rng.random() < 0.25:
        c = columns[int(rng.integers(len(columns)))]
        v = int(rng.integers(3))
        return ds.context().subset(group=c, value=v), ds.groups[c] == v, [c]
    left, lm, lc = _random_tree(rng, ds, columns, depth - 1)
    op = rng.integers(3)
    if op == 2:
        return ~left, ~lm, lc
    right, rm, rc = _random_tree(rng, ds, columns, depth - 1)
    ctx, mask = (left & right, lm & rm) if op == 0 else (left | right, lm | rm)
    return ctx, mask, lc + rc


@pytest.mark.parametrize("seed", range(20))
def test_masks_and_group_columns_match_a_construction_record(seed):
    rng = np.random.default_rng(seed)
    n, columns = 40, ["a", "b", "c", "d"]
    ds = Dataset(np.zeros((n, 1)), y=rng.integers(2, size=n),
                 groups={c: rng.integers(3, size=n) for c in columns})
    ctx, mask, named = _random_tree(rng, ds, columns, 4)
    np.testing.assert_array_equal(ctx.mask(), mask)
    # the columns the tree names, each once, in the order they were first used
    assert group_columns(ctx._predicate) == list(dict.fromkeys(named))


def test_group_columns_of_label_and_whole_dataset_predicates_are_empty():
    ds = Dataset(np.zeros((4, 1)), y=[0, 1, 0, 1], groups={"g": [0, 0, 1, 1]})
    assert group_columns(ds.context()._predicate) == []
    assert group_columns(ds.context().positive()._predicate) == []
    both = ds.context().subset(group="g", value=1).positive()
    assert group_columns(both._predicate) == ["g"]
