"""Builders shared by the fused-kernel tests (tests/core/test_kernel.py, tests/core/test_proxies.py).

Random problems that contain every case the kernel must get right, feature matrices in every format
and dtype the core accepts, and the atom tables of the core and of the NumPy reference (tests/reference.py).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rateopt.core import AtomTable

import reference as ref

FORMATS = ["dense", "csr32", "csr64"]
DTYPES = [np.float32, np.float64]
THREADS = [1, 2]

# --------------------------------------------------------------------------- #
# Builders
# --------------------------------------------------------------------------- #


def make_X(D, fmt, dtype, *, explicit_zero_rows=()):
    """``D`` (float64, dense values) in the given format and dtype.

    CSR stores only the nonzeros, plus explicit zeros in ``explicit_zero_rows``
    (valid CSR; they must not change anything).
    """
    D = np.asarray(D, np.float64)
    if fmt == "dense":
        return np.ascontiguousarray(D.astype(dtype))
    idx_dtype = {"csr32": np.int32, "csr64": np.int64}[fmt]
    data, indices, indptr = [], [], [0]
    for j, row in enumerate(D):
        nz = np.flatnonzero(row)
        if j in explicit_zero_rows:
            nz = np.union1d(nz, [0, D.shape[1] - 1])
        data.extend(row[nz])
        indices.extend(nz)
        indptr.append(len(indices))
    A = sp.csr_matrix(
        (np.array(data, dtype), np.array(indices, idx_dtype), np.array(indptr, idx_dtype)),
        shape=D.shape,
    )
    # scipy may downcast index arrays on construction; force the requested dtype.
    A.indices = A.indices.astype(idx_dtype)
    A.indptr = A.indptr.astype(idx_dtype)
    assert A.dtype == dtype and A.indices.dtype == idx_dtype
    return A


def make_problem(seed, *, n=600, d=20, n_atoms=9, weighted=True):
    """A random problem that contains every case the kernel must get right.

    * rows 0-4 are all zero (empty CSR rows; CSR row 3 stores explicit zeros),
    * rows 10-19 are in no atom (u_j == 0), rows 20-29 in every atom but the
      two single-example ones,
    * atoms 0 and 1 have the same members and opposite coefficients, and rows
      30-39 are in exactly these two: u_j == 0 exactly (c*v - c*v),
    * atom n_atoms-1 has the single example 7, atom n_atoms-2 the single
      (all-zero) example 2,
    * coef has both signs and one zero; non-uniform weights, rows 40-44 weight 0.
    """
    rng = np.random.default_rng(seed)
    D = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.4)
    D[:5] = 0.0
    B = rng.random((n, n_atoms)) < 0.25
    B[10:20] = False
    B[20:30] = True
    B[:, 1] = B[:, 0]
    B[30:40] = False
    B[30:40, [0, 1]] = True
    B[:, -1] = False
    B[7, -1] = True
    B[:, -2] = False
    B[2, -2] = True
    if weighted:
        w = rng.uniform(0.2, 3.0, n)
        w[40:45] = 0.0
    else:
        w = None
    theta = rng.standard_normal(d)
    bias = 0.3
    coef = rng.standard_normal(n_atoms)
    coef[1] = -coef[0]
    coef[3] = 0.0
    return D, B, w, theta, bias, coef


def core_atoms(B, w):
    return AtomTable.from_membership(B, sample_weight=w)


def ref_atoms(B, w):
    return ref.atoms_from_membership(B, sample_weight=w)
