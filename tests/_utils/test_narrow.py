"""The narrow dtypes of the atom table: each the narrowest that holds every value, checked at its bounds."""

import numpy as np
import pytest

from rateopt._utils._narrow import atom_id_dtype, row_pointer_dtype


@pytest.mark.parametrize("n_atoms", [0, 1, 255, 256, 257, 65535, 65536, 65537, 2**31 - 1])
def test_atom_id_dtype_holds_the_largest_id_and_nothing_narrower_does(n_atoms):
    dt = atom_id_dtype(n_atoms)
    largest = max(n_atoms - 1, 0)
    assert np.iinfo(dt).max >= largest
    narrower = [t for t in (np.uint8, np.uint16, np.int32) if np.dtype(t).itemsize < dt.itemsize]
    assert all(np.iinfo(t).max < largest for t in narrower)


@pytest.mark.parametrize(("nnz", "dtype"), [(0, np.int32), (2**31 - 1, np.int32), (2**31, np.int64)])
def test_row_pointer_dtype_holds_the_last_pointer(nnz, dtype):
    dt = row_pointer_dtype(nnz)
    assert dt == dtype and np.iinfo(dt).max >= nnz
