"""Group-column factorization (rateopt._language._validation.factorize)."""

import sys

import numpy as np
import pandas as pd
import pytest

from rateopt._language._validation import factorize


def _reference(col):
    """Plain Python: the distinct non-missing values (sorted, else first appearance) and each row's index."""
    def missing(v):
        return v is None or v is pd.NA or (isinstance(v, float) and v != v)

    firsts = []
    for v in col.tolist():
        if not missing(v) and not any(v == f for f in firsts):
            firsts.append(v)
    try:
        values = sorted(firsts)
    except TypeError:
        values = firsts
    codes = [-1 if missing(v) else next(i for i, u in enumerate(values) if v == u) for v in col.tolist()]
    return values, codes


COLUMNS = [
    np.array(["b", "a", None, "b", float("nan"), pd.NA, "c", "a"], dtype=object),
    np.array([1, 1.0, True, 2, None, 2.0, 0], dtype=object),  # 1 == 1.0 == True: one group
    np.array(["x", 3, "x", None, 3, "y"], dtype=object),  # unorderable: first appearance
    np.random.default_rng(0).choice(["h0", "h1", "h2"], 5000).astype(object),
]


@pytest.mark.parametrize("col", COLUMNS)
@pytest.mark.parametrize("with_pandas", [True, False])
def test_object_columns_factorize_as_python_equality_does(col, with_pandas, monkeypatch):
    if not with_pandas:  # the dict path (pandas not loaded, so no pd.NA either)
        col = np.array([v for v in col.tolist() if v is not pd.NA] or [None], dtype=object)
        monkeypatch.setitem(sys.modules, "pandas", None)
    values, codes = factorize(col)
    want_values, want_codes = _reference(col)
    assert values.tolist() == want_values
    assert codes.tolist() == want_codes
    assert codes.dtype == np.int64


def test_unhashable_values_take_the_sorting_path_with_and_without_pandas(monkeypatch):
    col = np.empty(3, dtype=object)
    col[:] = [(1, 2), (0, 1), (1, 2)]
    v1, c1 = factorize(col)
    monkeypatch.setitem(sys.modules, "pandas", None)
    v2, c2 = factorize(col)
    assert v1.tolist() == v2.tolist() == [(0, 1), (1, 2)]
    assert c1.tolist() == c2.tolist() == [1, 0, 1]
