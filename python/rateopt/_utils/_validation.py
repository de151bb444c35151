"""The validators of rateopt, in one place.

Scalars (``check_*``: training and estimator parameters, names in every
message) and arrays (``as_*``: the boundary of the compiled core and the
shrinking LP). Each returns the validated value, converted where the
docstring says so, or raises ``ValueError``/``TypeError`` naming the argument.
"""

from __future__ import annotations

import math
import operator

import numpy as np

__all__ = ["check_positive", "check_nonnegative", "check_int", "check_choice", "check_bool", "check_real",
           "check_seed", "as_index_array", "as_real_array", "as_float_vector", "as_finite_scalar",
           "as_numeric_array"]


def _real(name, value, what):
    if isinstance(value, bool):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what}, got {value!r}") from None


def check_positive(name, value, allow_none=False):
    """A finite number > 0 (or None when allowed)."""
    if value is None and allow_none:
        return None
    v = _real(name, value, "a positive number")
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v


def check_nonnegative(name, value):
    """A finite number >= 0."""
    v = _real(name, value, "a non-negative number")
    if not (math.isfinite(v) and v >= 0):
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return v


#: The largest integer the core takes (its counts and sizes are signed 64-bit).
INT64_MAX = 2**63 - 1
#: The largest seed the core takes (unsigned 64-bit).
UINT64_MAX = 2**64 - 1


def check_int(name, value, minimum, allow_none=False, maximum=INT64_MAX):
    """An integer in ``[minimum, maximum]`` (or None when allowed); booleans are refused.

    ``maximum`` defaults to the core's signed 64-bit range.
    """
    if value is None and allow_none:
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        v = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_choice(name, value, options):
    """One of ``options``."""
    if not isinstance(value, str) or value not in options:
        if len(options) == 2:
            raise ValueError(f"{name} must be {options[0]!r} or {options[1]!r}, got {value!r}")
        raise ValueError(f"{name} must be one of {tuple(options)}, got {value!r}")
    return value


def check_bool(name, value):
    """True or False (NumPy booleans too)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {value!r}")


def check_real(name, value):
    """A finite number."""
    v = _real(name, value, "a real number")
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return v


def check_seed(name, value):
    """None or an integer in ``[0, 2**64 - 1]`` (the core's unsigned 64-bit seeds)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= value <= UINT64_MAX:
        return int(value)
    raise ValueError(f"{name} must be None or an integer in [0, 2**64 - 1], got {value!r}")


def as_index_array(a, name, dtype):
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got ndim={arr.ndim}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=dtype)


def as_real_array(a, name):
    """``a`` as a C-contiguous float64 array; only booleans, integers and reals are accepted."""
    arr = np.asarray(a)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.float64)


def as_float_vector(a, name, length=None):
    try:
        arr = as_real_array(a, name)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a vector of real numbers") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got ndim={arr.ndim}")
    if length is not None and arr.shape[0] != length[1]:
        raise ValueError(f"{name} has length {arr.shape[0]}, expected {length[0]} = {length[1]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds a non-finite value (NaN or inf)")
    return arr


def as_finite_scalar(x, name):
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {x!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def as_numeric_array(x, name):
    """``x`` as a float64 array, rejecting non-numeric and complex input."""
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name} must be a numeric array ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    return np.array(arr, dtype=np.float64)  # always a private copy
