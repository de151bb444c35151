"""Sealed arrays: read-only copies over immutable bytes, shared (not copied) once sealed."""

import numpy as np
import pytest

from rateopt._utils._sealed import is_sealed, sealed


def test_a_sealed_copy_has_the_values_and_cannot_be_made_writeable():
    a = np.arange(10, dtype=np.int64)
    s = sealed(a, np.int32)
    assert s.dtype == np.int32 and s.tolist() == list(range(10)) and is_sealed(s, np.int32)
    a[0] = 99  # the caller's array may change: the sealed copy does not
    assert s[0] == 0
    with pytest.raises(ValueError):
        s.flags.writeable = True
    m = sealed(np.ones((3, 4)), np.float64)
    assert m.shape == (3, 4) and is_sealed(m, np.float64)


def test_a_sealed_array_is_shared_and_a_frozen_one_is_not_sealed():
    s = sealed(np.linspace(0, 1, 5), np.float64)
    assert sealed(s, np.float64) is s
    assert sealed(s, np.float32) is not s  # another dtype: a new sealed copy
    frozen = np.linspace(0, 1, 5)
    frozen.flags.writeable = False  # read-only, but its owner can make it writeable again
    assert not is_sealed(frozen, np.float64)
    assert not is_sealed(s[::2], np.float64)  # not C-contiguous
    assert not is_sealed([1.0], np.float64)
