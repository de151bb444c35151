"""The exact LP over randomized threshold rules: monotone decision tables on score bins.

A *chain* is one score-ordered list of bins (for a threshold classifier: one
group cell's bins; for a mixture over recorded iterates: one iterate's bins in
one cell). Every bin ``v`` carries a decision variable ``x_v``, the probability
of a positive decision for the rows that fall in it. A randomized threshold
rule on a chain is exactly a table that does not decrease along the chain
(a mixture of the deterministic rules ``score >= t`` puts mass
``P(t <= s)`` on a bin of score ``s``, and every non-decreasing table in
[0, 1] is such a mixture). Each row falls in one bin of one chain per record,
and every atom rate of a compiled problem is linear in the tables::

    p_a = sum_rows w_{j,a} * sum_r x_{bin_r(j)} = (M x)_a

so the best rule under linear rate constraints is one LP, with a variable per
bin and a row per atom, per constraint and per neighbouring pair of bins: its
size is linear in cells x bins, and it has no exponential dependence on the
number of groups. A mixture over ``R`` records puts mass ``mu_r`` on record
``r``; its tables are bounded by ``mu_r`` instead of 1 (``y = mu_r x_r`` is
linear in the pair), with ``sum_r mu_r = 1``.

Objectives: an affine rate objective ``c0 . p``, or one ratio
``c * (zN . p + n0) / (zD . p + d0)`` (an F-measure, a precision; Narasimhan et al. (2019)'s
ratio metrics with one term), made linear by the Charnes-Cooper
substitution ``(x, p, mu) -> t (x, p, mu)``, ``t = 1 / (zD . p + d0)``:
the optimum of the fractional program is the optimum of one LP, exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._compiler._linear_map import LinearMap
from .._utils._highs import solve_lp
from ..exceptions import RateoptError
from . import _shared_rate_lp, _two_rate_lp
from ._bins import narrow_codes, segment_accumulate

__all__ = [
    "Chains",
    "LinearObjective",
    "RatioObjective",
    "ThresholdLPSolution",
    "objective_of",
    "solve_threshold_lp",
    "solve_threshold_lp_generated",
]

_HIGHS_OPTIONS = {
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-9,
}
#: The increment form has a handful of rows and many bounded columns: the primal simplex without presolve
#: solves it in a fraction of the time presolve alone takes (34k bins, 8 constraints: 0.07 s against 0.57 s).
_INCREMENT_OPTIONS = dict(_HIGHS_OPTIONS, solver="simplex", simplex_strategy=4, presolve="off")
#: With many chains the increment form has a cap row per chain, and the simplex method without presolve slows
#: down with the rows (10^4 one-row cells: 0.76 s, 10^5: 106 s); presolve turns a one-bin chain's cap into a
#: bound (10^4: 0.1 s). It is used from this many chains on.
_PRESOLVE_MIN_CHAINS = 1024
_INCREMENT_PRESOLVE_OPTIONS = dict(_INCREMENT_OPTIONS, presolve="on")


@dataclass(frozen=True)
class Chains:
    """Bins (LP variables) grouped into score-ordered chains, and where every row falls.

    Parameters
    ----------
    start : ndarray of shape (n_chains + 1,) of int64
        The variables of chain ``k`` are ``start[k]:start[k+1]``, by ascending score.
    record : ndarray of shape (n_chains,) of int64
        The record (iterate) each chain belongs to, in ``0..n_records-1``.
    n_records : int
        Number of records (1 for a threshold classifier).
    bins : mapping of str to ndarray of shape (n_records, n_samples) of int64, default=None
        Per dataset name, the variable every row falls in, for every record
        (needed unless ``M`` is given).
    M : scipy.sparse matrix of shape (n_atoms, n_vars), default=None
        Every atom rate as a sum over bins, when the caller has it
        (:func:`rateopt._postprocess._bins.bin_chains`); None: summed from ``bins``.
    """

    start: np.ndarray
    record: np.ndarray
    n_records: int
    bins: dict = None
    M: object = None

    @property
    def n_vars(self) -> int:
        """Number of bins (decision variables)."""
        return int(self.start[-1])


@dataclass(frozen=True)
class LinearObjective:
    """Minimize ``coef . p + constant`` over atom rates ``p``."""

    coef: np.ndarray
    constant: float = 0.0


@dataclass(frozen=True)
class RatioObjective:
    """Minimize ``scale * (num . p + num0) / (den . p + den0)`` (a positive denominator)."""

    scale: float
    num: np.ndarray
    num0: float
    den: np.ndarray
    den0: float


@dataclass(frozen=True)
class ThresholdLPSolution:
    """An optimal table: ``x`` per bin, ``mu`` per record, the objective, the atom rates.

    Parameters
    ----------
    x : ndarray of shape (n_vars,)
        Probability of a positive decision per bin (divided by ``mu`` of its
        record for a mixture: every chain's table is a rule in [0, 1]).
    mu : ndarray of shape (n_records,)
        Mixture weights of the records (sum 1).
    objective : float
        The objective at the solution.
    atom_rates : ndarray of shape (n_atoms,)
        The expected atom rates of the solution.
    slack : float
        The violation allowed beyond ``epsilon`` (0 when the constraints can be met;
        else the smallest largest violation any rule achieves).
    """

    x: np.ndarray
    mu: np.ndarray
    objective: float
    atom_rates: np.ndarray
    slack: float


def objective_of(compiled):
    """The LP objective of a compiled problem: affine, or a single ratio.

    Parameters
    ----------
    compiled : CompiledProblem

    Returns
    -------
    LinearObjective or RatioObjective

    Raises
    ------
    RateoptError
        For a non-linear objective other than one ratio of affine rate
        expressions (a convex metric, a sum of ratios): no LP states it exactly.
    """
    rows = compiled.metric
    if rows is None:
        return LinearObjective(np.asarray(compiled.objective_coef, dtype=np.float64),
                               float(compiled.objective_constant))
    metric = rows.metric
    terms = getattr(metric, "terms", None)
    if getattr(metric, "kind", None) != "ratio" or terms is None or len(terms) != 1 or metric.affine is not None:
        raise RateoptError(
            f"the objective {getattr(metric, 'name', metric)!r} is not an affine rate expression or a single "
            "ratio of rates: threshold post-processing optimizes those exactly (error, any linear rate "
            "objective, an F-measure, a precision); train with rateopt.train for other metrics")
    scale = float(terms[0][0])
    return RatioObjective(scale, np.asarray(rows.Z[0], dtype=np.float64), float(rows.z0[0]),
                          np.asarray(rows.Z[1], dtype=np.float64), float(rows.z0[1]))


def _bin_matrix(compiled, chains):
    """``M`` (n_atoms, n_vars), CSC: every atom rate as a sum over bins, ``p = M x``."""
    if chains.M is not None:
        return sp.csc_matrix(chains.M)
    atoms, var, weight = [], [], []
    for name in compiled.datasets:
        table = compiled.tables[name]
        row_of_entry = np.repeat(np.arange(table.n_samples), np.diff(table.indptr))
        atom_of_entry = table.offset + table.indices.astype(np.int64)
        for r in range(chains.n_records):
            atoms.append(atom_of_entry)
            var.append(chains.bins[name][r][row_of_entry])
            weight.append(table.weights)
    M = sp.coo_matrix((np.concatenate(weight), (np.concatenate(atoms), np.concatenate(var))),
                      shape=(compiled.n_atoms, chains.n_vars))
    return M.tocsc()


def _refuse_unsupported(compiled):
    if compiled.thresholds:
        raise RateoptError(
            "the problem has trainable thresholds (ROC-AUC goals): their rates depend on a score threshold, "
            "not on decisions, so threshold post-processing cannot state them; train with rateopt.train")
    if compiled.metric_constraints:
        names = ", ".join(compiled.constraint_names[compiled.C.shape[0]:][:3])
        raise RateoptError(
            f"the problem constrains non-linear metrics ({names}): threshold post-processing states linear "
            "rate constraints (and bounds on single ratios, which are linear) exactly; train with "
            "rateopt.train for these")


def solve_threshold_lp(compiled, chains, *, epsilon=0.0):
    """The best mixture of threshold rules on the chains, under the compiled constraints.

    Parameters
    ----------
    compiled : CompiledProblem
        Its datasets' rows are those of ``chains.bins``.
    chains : Chains
        The bins and where every row falls.
    epsilon : float, default=0.0
        Allowed violation of every constraint.

    Returns
    -------
    ThresholdLPSolution
        When no rule meets the constraints, the rule of least objective among
        those whose largest violation is the smallest possible (``slack`` > 0).

    Raises
    ------
    RateoptError
        For objectives or constraints no LP states exactly (see :func:`objective_of`).
    """
    _refuse_unsupported(compiled)
    objective = objective_of(compiled)
    M = _bin_matrix(compiled, chains)
    # the one dispatch point: many chains (or many bins) whose rows compare each chain's rate with one shared
    # rate (or two chains' rates, pairwise), or many chains with two shared rates (as equalized odds' rows),
    # are solved without HiGHS (exact, linear in the bins); None there (another structure, an objective
    # beyond the shared rates, no interior point, infeasible) -> HiGHS
    solvers = ()
    if chains.n_records == 1 and isinstance(objective, LinearObjective):
        if chains.start.size - 1 >= _shared_rate_lp.MIN_CHAINS:
            solvers = (_shared_rate_lp.solve_shared_rate, _two_rate_lp.solve_two_rate)
        elif chains.n_vars >= _shared_rate_lp.MIN_BINS:  # the two-rate search is slower than HiGHS at few chains
            solvers = (_shared_rate_lp.solve_shared_rate,)
    for solver in solvers:
        fast = solver(compiled, chains.start, M, epsilon=epsilon)
        if fast is not None:
            return ThresholdLPSolution(x=fast.x, mu=np.ones(1), objective=fast.objective,
                                       atom_rates=fast.atom_rates, slack=0.0)
    lp = _Builder(compiled, chains, M)
    status, sol = lp.solve(objective, slack=epsilon)
    slack = 0.0
    if status == "infeasible":
        status, least = lp.solve(None, slack=epsilon, minimize_violation=True)
        if status != "optimal":  # pragma: no cover - the violation LP is always feasible and bounded
            raise RateoptError(f"HiGHS could not solve the threshold LP's violation phase ({status})")
        slack = max(float(least), 0.0)
        status, sol = lp.solve(objective, slack=epsilon + slack * (1 + 1e-9) + 1e-12)
    if status != "optimal":
        raise RateoptError(f"HiGHS could not solve the threshold LP ({status})")
    return _solution(lp, sol, compiled, chains, objective, M, slack)


def _solution(builder, sol, compiled, chains, objective, M, slack):
    n_vars, n_atoms, R = chains.n_vars, compiled.n_atoms, chains.n_records
    t = sol[n_vars + n_atoms + R]
    x = builder.tables(sol) / t
    mu = np.clip(sol[n_vars + n_atoms: n_vars + n_atoms + R] / t, 0.0, None)
    mu = mu / mu.sum()
    # Each chain's table divided by its record's mass is a rule in [0, 1]; clean round-off
    # (monotone, within [0, 1]) so that predictions are exactly a mixture of threshold rules.
    m = mu[chains.record[np.repeat(np.arange(chains.start.size - 1), np.diff(chains.start))]]
    seg = np.zeros(n_vars)
    np.divide(x, m, out=seg, where=m > 0)
    np.clip(seg, 0.0, 1.0, out=seg)
    x = segment_accumulate(np.maximum, seg, chains.start) + 0.0  # + 0.0: no negative zeros
    y = x * m
    p = M @ y
    if isinstance(objective, LinearObjective):
        value = float(objective.coef @ p + objective.constant)
    else:
        den = float(objective.den @ p + objective.den0)
        value = objective.scale * float(objective.num @ p + objective.num0) / den if den != 0 else 0.0
    return ThresholdLPSolution(x=x, mu=mu, objective=value, atom_rates=p, slack=slack)


#: The increment form is used while its dense (atom, chain) blocks hold at most this many entries.
_INCREMENT_FORM_MAX_NNZ = 4_000_000


def _increment_matrix(M, chains):
    """``D`` (n_atoms, n_vars), CSR: atom rates as sums over increments, ``p = D delta``, or None when too dense.

    With ``x_v = sum of delta over the chain's bins up to v``, the coefficient of
    ``delta_k`` is the sum of ``M``'s columns from ``k`` to the chain's end: a
    reverse cumulative sum within the chain, dense for every atom the chain
    touches up to its last bin. The entries of ``M`` are grouped by (atom,
    chain) in one stable sort, the suffix sums taken per group (the sums a
    dense reversed cumulative sum gives), and every sum is spread over the
    bins it covers, atom by atom: the rows come out sorted.
    """
    M = sp.csc_matrix(M)
    n_atoms, n_vars = M.shape
    start = chains.start
    n_chain = start.size - 1
    v = np.repeat(np.arange(n_vars), np.diff(M.indptr))
    a = M.indices.astype(np.int64)
    k = np.repeat(np.arange(n_chain), np.diff(start))[v]  # every entry's chain
    group = a * n_chain + k
    # within a group, bins stay ascending; the keys in the narrowest unsigned type that holds them (a radix sort
    # up to 65,536 (atom, chain) groups: the same permutation, a stable sort's is unique)
    order = np.argsort(narrow_codes(group, n_atoms * n_chain), kind="stable")
    # (one array at a time, so that at most one of them is held twice: the memory of a large exact re-fit)
    group = group[order]
    a = a[order]
    v = v[order]
    k = k[order]
    val = M.data[order]
    del order
    first = np.ones(group.size, dtype=bool)
    first[1:] = group[1:] != group[:-1]
    # the dense (atom, chain) blocks of the increment form: the chain's atoms times its bins
    total = int(np.bincount(k[first], minlength=n_chain) @ np.diff(start))
    if total > _INCREMENT_FORM_MAX_NNZ:
        return None
    if group.size == 0:
        return sp.csr_matrix(M.shape)
    bounds = np.append(np.flatnonzero(first), group.size)
    suffix = segment_accumulate(np.add, val[::-1], (group.size - bounds)[::-1])[::-1]
    del group, val, bounds
    lo = np.empty_like(v)
    lo[first] = start[k[first]]
    lo[~first] = v[np.flatnonzero(~first) - 1] + 1
    del k, first
    length = v - lo + 1
    del v
    keep = suffix != 0.0
    length, lo, a, suffix = length[keep], lo[keep], a[keep], suffix[keep]
    del keep
    # every entry of D, atom by atom: a run of ``length`` columns from ``lo`` per (atom, chain) sum, built in
    # place (the values of np.repeat(lo, length) + np.arange(n) - np.repeat(cumsum(length) - length, length))
    indptr = np.zeros(n_atoms + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, weights=length, minlength=n_atoms).astype(np.int64), out=indptr[1:])
    del a
    cols = np.arange(int(indptr[-1]))
    cols -= np.repeat(np.cumsum(length) - length, length)
    cols += np.repeat(lo, length)
    cols = cols.astype(np.int32)
    D = sp.csr_matrix((np.repeat(suffix, length), cols, indptr), shape=(n_atoms, n_vars))
    D.has_sorted_indices = True
    return D


def _increment_rows(D, compiled, chains):
    """The increment form's constraint matrix, CSR, rows and columns in :class:`_Builder`'s order.

    Rows: atoms (``p_a - D_a delta = 0``), constraints (``C p - kappa t``),
    caps (the chain's increments ``- mu_r``), mass (``sum mu - t``); every
    row's entries by ascending column. The constraint rows keep an entry in the
    ``t`` column even where ``kappa`` is 0 (the slack is added there).
    """
    n_atoms, n_vars = D.shape
    R = chains.n_records
    start = chains.start
    n_chain = start.size - 1
    p0, mu0, t = n_vars, n_vars + n_atoms, n_vars + n_atoms + R
    ind, dat, cnt = [], [], []
    # atom rows: -D then the atom's own p column
    d_cnt = np.diff(D.indptr)
    slot = np.repeat(np.arange(n_atoms), d_cnt)
    slot += np.arange(D.nnz)
    idx = np.empty(D.nnz + n_atoms, dtype=np.int64)
    val = np.empty(D.nnz + n_atoms)
    idx[slot] = D.indices
    val[slot] = D.data
    del slot
    np.negative(val, out=val)  # -D's entries (the own p entries are set below)
    own = np.cumsum(d_cnt + 1) - 1
    idx[own], val[own] = p0 + np.arange(n_atoms), 1.0
    ind.append(idx), dat.append(val), cnt.append(d_cnt + 1)
    # constraint rows: C p - kappa t
    C = LinearMap.from_dense(compiled.C, (np.shape(compiled.C)[0], n_atoms)).tocsr()  # row by row, ascending
    if C.shape[0]:
        c_cnt = np.diff(C.indptr) + 1
        r = np.repeat(np.arange(C.shape[0]), c_cnt - 1)
        slot = np.arange(r.size) + r
        idx = np.empty(r.size + C.shape[0], dtype=np.int64)
        val = np.empty(r.size + C.shape[0])
        idx[slot], val[slot] = p0 + C.indices, C.data
        last = np.cumsum(c_cnt) - 1
        idx[last], val[last] = t, -np.asarray(compiled.kappa, dtype=np.float64)
        ind.append(idx), dat.append(val), cnt.append(c_cnt)
    # cap rows: the chain's increments, minus its record's mass
    lengths = np.diff(start)
    slot = np.arange(n_vars) + np.repeat(np.arange(n_chain), lengths)
    idx = np.empty(n_vars + n_chain, dtype=np.int64)
    val = np.ones(n_vars + n_chain)
    idx[slot] = np.arange(n_vars)
    last = np.cumsum(lengths + 1) - 1
    idx[last], val[last] = mu0 + chains.record, -1.0
    ind.append(idx), dat.append(val), cnt.append(lengths + 1)
    # mass row
    ind.append(np.append(mu0 + np.arange(R), t)), dat.append(np.append(np.ones(R), -1.0)), cnt.append([R + 1])
    counts = np.concatenate(cnt)
    indptr = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    # joined one list at a time, the parts released as they are joined (the rows of a large exact re-fit)
    data = np.concatenate(dat)
    del dat, val
    indices = np.concatenate(ind)
    del ind, idx
    A = sp.csr_matrix((data, indices.astype(np.int32), indptr), shape=(counts.size, t + 1))
    A.has_sorted_indices = True
    return A


class _Builder:
    """The LP's rows, built once; :meth:`solve` sets the objective and solves.

    Two equivalent forms. The *increment* form (used when it is not too
    dense) has a variable ``delta_v >= 0`` per bin, the rise of the table at
    that bin: monotone tables are then bounds alone, and the LP has a handful
    of rows (atoms, constraints, one cap per chain), which the simplex method
    solves fast however many bins there are. The *table* form has the table
    ``x_v`` itself and a row per neighbouring pair of bins
    (``x_v - x_{v+1} <= 0``); it is sparser when one chain touches many atoms
    (a group-blind rule under many groups' goals).

    Columns: bins (n_vars), ``p`` (n_atoms), ``mu`` (n_records), ``t``, then ``z``
    (the violation phase). Rows: atoms (``p - D delta = 0`` or ``p - M x = 0``),
    constraints (``C p - (kappa + slack) t <= 0``, minus ``z`` in the violation
    phase), the table form's monotone rows, caps (the chain's top
    ``<= mu_r``), mass (``sum mu - t = 0``) and, for a ratio, the denominator
    (``den . p + den0 t = 1``).
    """

    def __init__(self, compiled, chains, M):
        self.compiled, self.chains, self.M = compiled, chains, M
        n_vars, n_atoms, R = chains.n_vars, compiled.n_atoms, chains.n_records
        self.n_cols = n_vars + n_atoms + R + 1
        self.n_c = np.shape(compiled.C)[0]
        n_chain = chains.start.size - 1
        D = _increment_matrix(M, chains)
        self.increments = D is not None
        if self.increments:
            rows = _increment_rows(D, compiled, chains)
            del D
            self.A = rows.tocsc()
            del rows
            n_mono = 0
        else:
            self.A, n_mono = _table_rows(M, compiled, chains)
        self.n_rows = self.A.shape[0]
        self.row_lo = np.concatenate([np.zeros(n_atoms), np.full(self.n_c, -np.inf), np.full(n_mono, -np.inf),
                                      np.full(n_chain, -np.inf), [0.0]])
        self.row_hi = np.concatenate([np.zeros(n_atoms), np.zeros(self.n_c), np.zeros(n_mono), np.zeros(n_chain),
                                      [0.0]])
        self.t_col = n_vars + n_atoms + R
        self.p_cols = slice(n_vars, n_vars + n_atoms)

    def tables(self, sol):
        """The bins' (scaled) tables from a solution's columns."""
        v = sol[: self.chains.n_vars]
        if not self.increments:
            return v.copy()
        return segment_accumulate(np.add, v, self.chains.start)

    def _matrix(self, slack, minimize_violation):
        """The rows with ``kappa + slack`` in the ``t`` column (and the column ``z`` for the violation phase)."""
        A = self.A
        c_lo = self.compiled.n_atoms
        a, b = A.indptr[self.t_col], A.indptr[self.t_col + 1]
        t_rows = A.indices[a:b]
        t_vals = A.data[a:b].copy()
        c_rows = (t_rows >= c_lo) & (t_rows < c_lo + self.n_c)
        t_vals[c_rows] -= slack  # slack enters as kappa + slack: the t column holds -kappa there
        missing = np.setdiff1d(np.arange(c_lo, c_lo + self.n_c), t_rows[c_rows])
        if missing.size:  # a zero kappa the table form dropped: the slack needs its entry
            t_rows = np.concatenate([t_rows, missing])
            t_vals = np.concatenate([t_vals, np.full(missing.size, -float(slack))])
            o = np.argsort(t_rows, kind="stable")
            t_rows, t_vals = t_rows[o], t_vals[o]
        indices = [A.indices[:a], t_rows]
        data = [A.data[:a], t_vals]
        ends = [A.indptr[: self.t_col + 1], [a + t_rows.size]]
        n_cols = self.n_cols
        if minimize_violation:
            indices.append(np.arange(c_lo, c_lo + self.n_c))
            data.append(np.full(self.n_c, -1.0))
            ends.append([a + t_rows.size + self.n_c])
            n_cols += 1
        out = sp.csc_matrix((np.concatenate(data), np.concatenate(indices).astype(np.int32),
                             np.concatenate(ends).astype(np.int64)), shape=(self.n_rows, n_cols))
        out.has_sorted_indices = True
        return out

    def solve(self, objective, *, slack, minimize_violation=False, duals=False):
        """``(status, column values)``; the value of ``z`` instead for ``minimize_violation``; with ``duals``,
        ``(status, column values, row duals)`` (HiGHS's, None unless optimal)."""
        A = self._matrix(slack, minimize_violation)
        n_cols = self.n_cols
        row_lo, row_hi = self.row_lo, self.row_hi
        cost = np.zeros(n_cols)
        lower = np.zeros(n_cols)
        upper = np.full(n_cols, np.inf)
        lower[self.p_cols] = -np.inf
        ratio = isinstance(objective, RatioObjective)
        if minimize_violation:
            cost = np.concatenate([cost, [1.0]])
            lower = np.concatenate([lower, [-np.inf]])
            upper = np.concatenate([upper, [np.inf]])
            lower[self.t_col] = upper[self.t_col] = 1.0
        elif ratio:
            den_row = np.zeros((1, A.shape[1]))
            den_row[0, self.p_cols] = objective.den
            den_row[0, self.t_col] = objective.den0
            A = sp.vstack([A, sp.csc_matrix(den_row)], format="csc")
            row_lo = np.concatenate([row_lo, [1.0]])
            row_hi = np.concatenate([row_hi, [1.0]])
            cost[self.p_cols] = objective.scale * objective.num
            cost[self.t_col] = objective.scale * objective.num0
        else:
            cost[self.p_cols] = objective.coef
            lower[self.t_col] = upper[self.t_col] = 1.0
        if not self.increments:
            options = _HIGHS_OPTIONS
        elif self.chains.start.size - 1 >= _PRESOLVE_MIN_CHAINS:
            options = _INCREMENT_PRESOLVE_OPTIONS
        else:
            options = _INCREMENT_OPTIONS
        sol = solve_lp(cost, A, row_lo, row_hi, col_lower=lower, col_upper=upper, options=options,
                       what="the threshold LP")
        if not sol.optimal:
            return (sol.status, None, None) if duals else (sol.status, None)
        value = sol.x[-1] if minimize_violation else sol.x
        return (sol.status, value, sol.row_dual) if duals else (sol.status, value)


def _table_rows(M, compiled, chains):
    """The table form's constraint matrix (CSC) and its number of monotone rows."""
    n_vars, n_atoms, R = chains.n_vars, compiled.n_atoms, chains.n_records
    C = LinearMap.from_dense(compiled.C, (np.shape(compiled.C)[0], n_atoms)).tocsr()
    n_c = C.shape[0]
    starts, ends = chains.start[:-1], chains.start[1:]
    n_chain = starts.size
    z = _zeros
    cap_mu = sp.coo_matrix((-np.ones(n_chain), (np.arange(n_chain), chains.record)), shape=(n_chain, R))
    kappa = sp.csr_matrix(-np.asarray(compiled.kappa, float)[:, None])
    mass = [z(1, n_vars), z(1, n_atoms), sp.csr_matrix(np.ones((1, R))), sp.csr_matrix([[-1.0]])]
    inner = np.ones(n_vars, dtype=bool)
    inner[ends - 1] = False  # the last bin of a chain has no upper neighbour
    lo = np.flatnonzero(inner)
    n_mono = lo.size
    mono = sp.coo_matrix((np.concatenate([np.ones(n_mono), -np.ones(n_mono)]),
                          (np.concatenate([np.arange(n_mono)] * 2), np.concatenate([lo, lo + 1]))),
                         shape=(n_mono, n_vars))
    cap_x = sp.coo_matrix((np.ones(n_chain), (np.arange(n_chain), ends - 1)), shape=(n_chain, n_vars))
    blocks = [
        [-M, sp.identity(n_atoms, format="csr"), z(n_atoms, R), z(n_atoms, 1)],
        [z(n_c, n_vars), C, z(n_c, R), kappa],
        [mono, z(n_mono, n_atoms), z(n_mono, R), z(n_mono, 1)],
        [cap_x, z(n_chain, n_atoms), cap_mu, z(n_chain, 1)],
        mass,
    ]
    A = sp.bmat([row for row in blocks if _height(row)], format="csc")
    A.sort_indices()
    return A, n_mono


def _height(row):
    """The row count of a block row of :func:`scipy.sparse.bmat` (0 drops the row)."""
    return max((b.shape[0] for b in row if b is not None), default=0)


def _zeros(rows, cols):
    """An all-zero block for :func:`scipy.sparse.bmat` (None when a side is empty)."""
    return sp.csr_matrix((rows, cols))


# --- the increment form by column generation ------------------------------------------------------- #
# The increment-form threshold LP over every bin, solved by column generation on a few of them.
#
# The increment form (``_Builder``) has one column ``delta_v``
# per bin (the rise of its chain's table there) and a handful of rows. A table
# whose increments vanish off a subset of the bins is a table on coarser bins
# (each bin joined to the chosen bins below it in its chain), so the LP over a
# subset is the same LP on coarser chains. Its row duals ``y`` price every bin
# of the full LP at once: ``delta_v``'s reduced cost is ``D_v . y_atoms - y_cap``,
# with ``D_v . y_atoms`` the suffix sum of ``M^T y_atoms`` from ``v`` to the end of
# its chain. The bins of negative reduced cost join the subset, until none is
# left: the subset's optimum is then an optimum of the LP over every bin (LP
# duality), found without building its dense increment matrix, which holds a
# nonzero per bin and atom and which HiGHS copies several times (for a boosted
# run's exact re-fit, 400,000 nonzeros and about 45 MiB of HiGHS's memory; the
# subset's LP needs a few thousand columns).
#
# The optimum is the full LP's; where the LP has several optimal vertices, the
# one found may differ from the vertex HiGHS returns on the full LP (another
# rule of the same objective).

#: Bins of every chain in the first subset (evenly spaced over the chain, its first bin included).
_GENERATED_INITIAL_BINS = 512
#: The most bins one pricing round adds to a chain (those of most negative reduced cost).
_GENERATED_ADD_BINS = 512
#: A bin joins the subset when its reduced cost is below minus this (HiGHS's dual feasibility tolerance).
_GENERATED_PRICE_TOL = 1e-9
#: Pricing rounds before the full LP is solved instead (not reached in practice: a round adds every chain's
#: most improving bins).
_GENERATED_MAX_ROUNDS = 100


class _RestrictedLP:
    """The increment-form LP on the chosen bins ``chosen`` (a sorted subset of ``chains``' bins holding every
    chain's first bin), as an LP on coarser chains, and the pricing of every bin from its duals."""

    def __init__(self, compiled, chains, M, chosen):
        self.compiled, self.chains, self.M = compiled, chains, M
        self.chosen = chosen
        n_vars = chains.n_vars
        is_chosen = np.zeros(n_vars, dtype=bool)
        is_chosen[chosen] = True
        group = np.cumsum(is_chosen) - 1  # every bin's coarse bin (its chosen bin)
        G = sp.csc_matrix((np.ones(n_vars), (np.arange(n_vars), group)), shape=(n_vars, chosen.size))
        Mc = sp.csc_matrix(M @ G)
        start = np.searchsorted(chosen, chains.start).astype(np.int64)
        self.coarse = Chains(start=start, record=chains.record, n_records=chains.n_records, M=Mc)
        self.builder = _Builder(compiled, self.coarse, Mc)

    def solve(self, objective, *, slack, minimize_violation=False):
        """``(status, coarse column values, the bins to add)``: no bin to add when the value is optimal over
        every bin."""
        status, value, y = self.builder.solve(objective, slack=slack, minimize_violation=minimize_violation,
                                              duals=True)
        if status != "optimal":
            return status, value, None
        return status, value, self._improving(y)

    def reduced_costs(self, y):
        """Every bin's reduced cost (``delta_v``'s, shape (n_vars,)) under the row duals ``y``: the suffix sum of
        ``M^T y_atoms`` from the bin to its chain's end, less its chain's cap dual."""
        chains, n_atoms = self.chains, self.compiled.n_atoms
        cap_row = n_atoms + self.builder.n_c  # the increment form has no monotone rows
        w = self.M.T @ y[:n_atoms]
        suffix = segment_accumulate(np.add, w[::-1], (w.size - chains.start)[::-1])[::-1]
        return suffix - np.repeat(y[cap_row:cap_row + chains.start.size - 1], np.diff(chains.start))

    def _improving(self, y):
        """The bins (not chosen) of reduced cost below ``-_GENERATED_PRICE_TOL`` under the row duals ``y``,
        at most ``_GENERATED_ADD_BINS`` a chain (the most negative)."""
        chains = self.chains
        reduced = self.reduced_costs(y)
        reduced[self.chosen] = 0.0
        add = []
        for k in range(chains.start.size - 1):
            a, b = chains.start[k], chains.start[k + 1]
            neg = np.flatnonzero(reduced[a:b] < -_GENERATED_PRICE_TOL)
            if neg.size > _GENERATED_ADD_BINS:
                neg = neg[np.argsort(reduced[a:b][neg], kind="stable")[:_GENERATED_ADD_BINS]]
            add.append(a + neg)
        return np.concatenate(add)

    def fine(self, value):
        """A coarse solution's columns as the full LP's (an unchosen bin's increment is 0)."""
        n_sel = self.chosen.size
        out = np.zeros(self.chains.n_vars + value.size - n_sel)
        out[self.chosen] = value[:n_sel]
        out[self.chains.n_vars:] = value[n_sel:]
        return out


class _FineTables:
    """The tables of the full LP's increments (``_Builder.tables`` of the increment form)."""

    def __init__(self, chains):
        self.chains = chains

    def tables(self, sol):
        return segment_accumulate(np.add, sol[: self.chains.n_vars], self.chains.start)


def _initial_bins(chains, n_bins):
    """Every chain's first bin and ``n_bins`` evenly spaced bins of it, sorted."""
    parts = []
    for k in range(chains.start.size - 1):
        a, b = int(chains.start[k]), int(chains.start[k + 1])
        parts.append(np.unique(np.linspace(a, b - 1, min(n_bins, b - a)).astype(np.int64)))
    return np.unique(np.concatenate(parts))


def solve_threshold_lp_generated(compiled, chains, *, epsilon=0.0, initial_bins=_GENERATED_INITIAL_BINS):
    """:func:`solve_threshold_lp`'s LP (the increment form), by column generation.

    The same phases: the LP at ``epsilon``; where no rule meets it, the least
    largest violation over every bin, then the LP at that slack. Each phase is
    solved on a subset of the bins grown by pricing until no bin improves it,
    so its optimum is the LP's over every bin (the rule found may be another
    optimal vertex than HiGHS's on the full LP).

    Parameters
    ----------
    compiled : CompiledProblem
    chains : Chains
        One chain per record (the increment form); ``chains.M`` given.
    epsilon : float, default=0.0
    initial_bins : int, default=512
        Bins of each chain in the first subset.

    Returns
    -------
    ThresholdLPSolution
        As ``solve_threshold_lp``'s (``x`` per bin of ``chains``).
    """
    _refuse_unsupported(compiled)
    objective = objective_of(compiled)
    M = _bin_matrix(compiled, chains)
    state = {"lp": _RestrictedLP(compiled, chains, M, _initial_bins(chains, int(initial_bins)))}

    def phase(obj, slack, minimize_violation=False):
        for _ in range(_GENERATED_MAX_ROUNDS):
            lp = state["lp"]
            if not lp.builder.increments:  # too dense for the increment form even on the subset
                return None
            status, value, add = lp.solve(obj, slack=slack, minimize_violation=minimize_violation)
            if status != "optimal" or add.size == 0:
                return status, value
            state["lp"] = _RestrictedLP(compiled, chains, M, np.union1d(lp.chosen, add))
        return None

    def full():
        return solve_threshold_lp(compiled, chains, epsilon=epsilon)

    out = phase(objective, epsilon)
    if out is None:
        return full()
    status, sol = out
    slack = 0.0
    if status == "infeasible":  # on the subset: the violation phase over every bin says whether it is at all
        out = phase(None, epsilon, minimize_violation=True)
        if out is None:
            return full()
        status, least = out
        if status != "optimal":  # pragma: no cover - the violation LP is always feasible and bounded
            return full()
        slack = max(float(least), 0.0)
        # the subset now holds a rule of that violation: the LP at that slack is feasible on it
        out = phase(objective, epsilon if slack == 0.0 else epsilon + slack * (1 + 1e-9) + 1e-12)
        if out is not None and out[0] == "infeasible" and slack == 0.0:  # met only to the solver's tolerance
            out = phase(objective, epsilon + 1e-12)
        if out is None:
            return full()
        status, sol = out
    if status != "optimal":
        return full()  # the full LP's own phases and errors
    lp = state["lp"]
    return _solution(_FineTables(chains), lp.fine(sol), compiled, chains, objective, M, slack)
