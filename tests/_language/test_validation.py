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


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64, np.uint64])
@pytest.mark.parametrize("shape", [(1,), (500,), (7, 3)])
def test_small_integer_columns_are_counted_to_numpy_unique_values(dtype, shape):
    # the counting path of unique / unique_inverse / factorize against numpy.unique's sort
    from rateopt._language._validation import unique, unique_inverse

    rng = np.random.default_rng(3)
    info = np.iinfo(dtype) if dtype is not np.bool_ else None
    for lo, hi in ((0, 2), (-5, 40), (0, 300)):
        if info is None:
            a = rng.integers(0, 2, shape).astype(bool)
        else:
            lo, hi = max(lo, int(info.min)), min(hi, int(info.max) + 1)
            a = rng.integers(lo, hi, shape).astype(dtype)
        ref = np.unique(a)
        got = unique(a)
        assert got.dtype == ref.dtype and np.array_equal(got, ref)
        keys, codes = unique_inverse(a)
        rkeys, rcodes = np.unique(a, return_inverse=True)
        assert keys.dtype == rkeys.dtype and np.array_equal(keys, rkeys)
        assert codes.dtype == np.int64 and np.array_equal(codes, rcodes.reshape(-1))
        values, fcodes = factorize(a.reshape(-1))
        assert np.array_equal(values, ref) and np.array_equal(values[fcodes], a.reshape(-1))


@pytest.mark.parametrize("a", [
    np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max]),  # a span past int64: the sort
    np.array([0, 10**9, 5, 5]),  # a wide span: the sort
    np.array([np.iinfo(np.uint64).max, 0], dtype=np.uint64),
    np.array([np.iinfo(np.int8).min, np.iinfo(np.int8).max, 0], dtype=np.int8),  # the extremes of a narrow dtype
    np.array([], dtype=np.int64),
])
def test_integer_columns_of_any_span_give_numpy_unique_values(a):
    from rateopt._language._validation import unique, unique_inverse

    ref = np.unique(a)
    got = unique(a)
    assert got.dtype == ref.dtype and np.array_equal(got, ref)
    keys, codes = unique_inverse(a)
    rkeys, rcodes = np.unique(a, return_inverse=True)
    assert np.array_equal(keys, rkeys) and np.array_equal(codes, rcodes.reshape(-1))


def _random_columns(seed):
    """Random group columns of every kind a user passes: strings (object and fixed-width), integers, floats,
    booleans, pandas categoricals, with None / NaN / pd.NA, few or many distinct values, the first row's value
    the smallest or not (first appearance in sorted order, or not)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    k = int(rng.choice([1, 2, 3, 17, 150]))
    words = np.array([f"g{i:03d}" for i in rng.permutation(k)])
    picks = rng.integers(0, k, n)
    missing = rng.random(n) < rng.choice([0.0, 0.1])
    cols = {
        "object str": words[picks].astype(object),
        "fixed str": words[picks],
        "int": (picks * 7 - 30).astype(np.int64),
        "float": picks / 4.0,
        "bool": picks % 2 == 1,
        "categorical": np.asarray(pd.Categorical(words[picks], categories=sorted(words[::-1]))),
    }
    out = []
    for name, col in cols.items():
        out.append((name, col))
        if name in ("object str", "float", "categorical"):
            holes = col.astype(object) if name != "float" else col.copy()
            marks = [None, float("nan"), pd.NA] if name != "float" else [np.nan]
            for i in np.flatnonzero(missing):
                holes[i] = marks[i % len(marks)]
            out.append((name + " with missing", holes))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_random_columns_factorize_as_the_plain_python_reference(seed):
    # the same values in the same (sorted) order and the same codes as the reference, whatever order the
    # values first appear in; codes int64, -1 for a missing entry
    for name, col in _random_columns(seed):
        values, codes = factorize(col)
        want_values, want_codes = _reference(col)
        assert values.tolist() == want_values, name
        assert codes.tolist() == want_codes, name
        assert codes.dtype == np.int64, name


@pytest.mark.parametrize("seed", range(6))
def test_dataset_group_codes_of_random_columns_are_the_reference_codes(seed):
    # what a Dataset stores (factorized, compact or kept as an array) gives the reference's values and codes
    from rateopt import Dataset

    for name, col in _random_columns(seed):
        ds = Dataset(np.zeros((col.shape[0], 1)), groups={"g": col})
        values, codes = ds.group_factorization("g")
        want_values, want_codes = _reference(col)
        assert list(values.tolist()) == want_values, name
        assert np.asarray(codes).tolist() == want_codes, name
