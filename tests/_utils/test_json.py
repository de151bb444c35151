"""rateopt._utils._json.json_ready: NumPy values to plain Python, non-finite numbers replaced or kept."""

import json
import math

import numpy as np

from rateopt._utils._json import json_ready


def _nested():
    return {1: np.array([1.5, np.inf]), "b": (np.int64(3), np.bool_(True), np.float32(np.nan)), "c": [True, 2, "x"]}


def test_numpy_values_become_plain_python_and_nonfinite_numbers_none():
    out = json_ready(_nested())
    assert out == {"1": [1.5, None], "b": [3, True, None], "c": [True, 2, "x"]}
    assert [type(v) for v in out["b"]] == [int, bool, type(None)]
    json.dumps(out, allow_nan=False)  # strict JSON


def test_keep_leaves_nan_and_inf_as_floats():
    out = json_ready(_nested(), nonfinite="keep")
    assert out["1"] == [1.5, math.inf] and type(out["1"][1]) is float
    assert out["b"][:2] == [3, True] and math.isnan(out["b"][2]) and type(out["b"][2]) is float
    assert json.loads(json.dumps(out))["1"] == [1.5, math.inf]  # Python's JSON writes Infinity and reads it back
