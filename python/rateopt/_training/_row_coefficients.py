"""Per-row net coefficients of a combination of atom rates (methods_spec.md §1.5).

Every rate of a compiled problem is affine in the atoms
``p+(S_a) = sum_j v_ja 1[s_j >= 0]`` (``v_ja`` the normalized weights of the
membership tables), so a combination ``sum_a coef_a p+(S_a)`` is a per-row sum
``sum_j u_j 1[s_j >= 0]`` with

    u_j = sum_a coef_a v_ja,        u = V coef,

``V`` the membership table as an ``(n_samples, n_atoms)`` CSR matrix. This is the
net coefficient the fused rate kernel forms row by row; here it is computed
once per problem (scipy; the table is fixed per problem, so the product is too),
for the methods that need the rows' weights themselves rather than a kernel
pass: the cost-sensitive oracles of issue 12 (``A_j = n max(u_j, 0)``,
``B_j = n max(-u_j, 0)`` for :func:`rateopt.core.sdca_two_sided_hinge`; the
threshold and plug-in oracles) and the ramp-loss majorization of issue 13,
which needs one column per constraint, ``U = V [c0; C]^T``: pass the stacked
rows as a matrix of coefficients.

The products use scipy's CSR kernels, which sum each row's entries in table
order with the products ``v_ja coef_a``: the same operations, in the same order,
as the rate kernel's net coefficient, so ``u`` equals the kernel's value bit
for bit.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._compiler._compiled import CompiledProblem, MembershipTable
from .._utils._validation import as_real_array
from ..core import AtomTable
from ._spec import GameSpec

__all__ = ["row_coefficients", "problem_row_coefficients", "as_coefficients"]


def _membership_matrix(table):
    return sp.csr_matrix((np.asarray(table.weights, dtype=np.float64), np.asarray(table.indices),
                          np.asarray(table.indptr)), shape=(int(table.n_samples), int(table.n_atoms)))


def as_coefficients(coef, n_atoms):
    """Atom coefficients checked and converted to float64.

    Parameters
    ----------
    coef : array-like of shape (n_atoms,) or (k, n_atoms)
        One combination of atom rates, or one per row.
    n_atoms : int
        The number of atoms.

    Returns
    -------
    ndarray of float64
        ``coef``, of the same shape.

    Raises
    ------
    TypeError
        If ``coef`` is not numeric.
    ValueError
        If ``coef`` has the wrong shape or a non-finite value.
    """
    c = as_real_array(coef, "coef")
    if c.ndim == 1:
        if c.shape[0] != n_atoms:
            raise ValueError(f"coef has length {c.shape[0]}, expected n_atoms = {n_atoms}")
    elif c.ndim == 2:
        if c.shape[1] != n_atoms:
            raise ValueError(f"coef has shape {c.shape}, expected (k, n_atoms = {n_atoms})")
    else:
        raise ValueError(f"coef must be 1-D (n_atoms,) or 2-D (k, n_atoms), got ndim={c.ndim}")
    if not np.all(np.isfinite(c)):
        raise ValueError("coef holds a non-finite value (NaN or inf)")
    return c


def row_coefficients(table, coef):
    """Per-row net coefficients ``u = V coef`` of one membership table.

    Parameters
    ----------
    table : MembershipTable or rateopt.core.AtomTable
        One dataset's atoms: row ``j`` lists its atoms with weights ``v_ja``.
    coef : array-like of shape (n_atoms,) or (k, n_atoms)
        Coefficients of the table's (dataset-local) atoms, or one combination
        per row.

    Returns
    -------
    ndarray of shape (n_samples,) or (n_samples, k)
        ``u_j = sum_a coef_a v_ja`` (one column per combination for 2-D
        ``coef``), so that ``u @ d == coef @ table.atom_rates(d)`` for any
        decisions ``d`` (up to the rounding of two different summation orders).

    Raises
    ------
    ValueError
        If ``coef`` has the wrong shape or a non-finite value.
    TypeError
        If ``table`` is not a membership table, or ``coef`` is not numeric.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt.core import AtomTable
    >>> from rateopt._training._row_coefficients import row_coefficients
    >>> t = AtomTable.from_membership(np.array([[1, 0], [1, 1], [0, 1]], bool))
    >>> row_coefficients(t, [1.0, -1.0]).tolist()  # p+(S_0) - p+(S_1)
    [0.5, 0.0, -0.5]
    """
    if not isinstance(table, (MembershipTable, AtomTable)):
        raise TypeError(f"table must be a MembershipTable or an AtomTable, got {type(table).__name__}")
    c = as_coefficients(coef, int(table.n_atoms))
    V = _membership_matrix(table)
    if c.ndim == 1:
        return V @ c
    return np.ascontiguousarray(V @ c.T)


def problem_row_coefficients(problem, coef):
    """Per-row net coefficients of a combination of a problem's atom rates, per dataset.

    Parameters
    ----------
    problem : Problem, CompiledProblem or GameSpec
        The compiled problem (its membership tables and the global atom ids of
        each dataset's atoms).
    coef : array-like of shape (n_atoms,) or (k, n_atoms)
        Coefficients of the global atoms (e.g. ``c0``, a row of ``C``, a
        multiplier-weighted sum of them, or ``np.vstack([c0, C])`` for one
        column per objective and constraint).

    Returns
    -------
    dict of str to ndarray of shape (n_samples_d,) or (n_samples_d, k)
        For each dataset ``d``, in the problem's order, ``u_d = V_d coef[atoms
        of d]``: ``sum_d u_d @ decisions_d == coef @ atom_rates`` for any
        decisions.

    Raises
    ------
    ValueError
        If ``coef`` has the wrong shape or a non-finite value.
    TypeError
        If ``problem`` is none of the accepted types.

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt
    >>> from rateopt._training._row_coefficients import problem_row_coefficients
    >>> ds = rateopt.Dataset(np.zeros((4, 1)), np.array([1, 0, 1, 0]))
    >>> problem = rateopt.Problem(datasets=ds)            # the error rate
    >>> cp = problem.compiled
    >>> u = problem_row_coefficients(problem, cp.objective_coef)["train"]
    >>> float(u @ np.ones(4) + cp.objective_constant)      # all positive: half wrong
    0.5
    """
    blocks = _blocks(problem)
    n_atoms = _n_atoms(problem)
    c = as_coefficients(coef, n_atoms)
    out = {}
    for name, table, atom_ids in blocks:
        local = c[..., atom_ids]
        out[name] = row_coefficients(table, local)
    return out


def _blocks(problem):
    if isinstance(problem, GameSpec):
        return [(b.name, b.atoms, np.asarray(b.atom_ids, dtype=np.int64)) for b in problem.blocks]
    cp = _compiled(problem)
    return [(name, cp.tables[name], np.asarray(cp.tables[name].atom_ids, dtype=np.int64)) for name in cp.datasets]


def _n_atoms(problem):
    if isinstance(problem, GameSpec):
        return int(problem.n_atoms)
    return int(_compiled(problem).n_atoms)


def _compiled(problem):
    if isinstance(problem, CompiledProblem):
        return problem
    cp = getattr(problem, "compiled", None)
    if isinstance(cp, CompiledProblem):
        return cp
    raise TypeError(f"problem must be a Problem, CompiledProblem or GameSpec, got {type(problem).__name__}")
