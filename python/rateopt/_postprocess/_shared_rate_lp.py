"""An exact solver for the threshold LP when every constraint compares one cell's rate with one shared rate.

Demographic parity and equal opportunity over many groups state the threshold
LP (:mod:`rateopt._postprocess._lp`) with one row per group and side, each
reading its group's rate and the overall rate. HiGHS' simplex methods need
about one iteration per group for it, each growing with the groups (10^4
one-row groups: 10 s; 3 x 10^4: 129 s; ``bench/results/threshold_lp_forms.md``).
This module solves that structure directly, in time linear in the bins (one
sort, then passes over arrays).

Structure (recognized from the compiled rows and the bins' atom rates, not
from the goals' types):

- exactly one *shared* atom ``s`` (its rate sums bins of more than one
  chain) appears in the constraints; every other atom a constraint reads is
  *local* (its bins lie in one chain), and every row reads the local atoms of
  at most one chain;
- on each chain ``k``, every local atom the rows read is a multiple of the
  shared atom's restriction ``d_k`` to the chain (``M[a, chain k] = alpha_a
  d_k``, ``d_k >= 0``): the chain's state, as far as the constraints see it,
  is the scalar ``r_k = d_k . x_k``, and the shared rate is ``R = sum_k r_k``.
  Both atoms sum the same rows of each bin, divided by different totals, so
  the multiple is checked to a relative 1e-9 (the bins' round-off, 2e-11 for
  groups of 300 rows) and taken as the ratio of the chain's sums.

Every row is then ``A_i r_k + B_i R <= kappa_i + epsilon`` (or ``B_i R <=
...`` alone). A monotone table of chain ``k`` is a mixture of its threshold
rules, so the least objective of the chain at a given ``r_k`` is the lower
convex hull ``h_k`` of its threshold rules' points ``(r, cost)`` (its ROC lower
hull). For a fixed ``R`` the LP separates by chain, apart from ``sum_k r_k =
R``: each chain keeps ``r_k`` in the interval its rows give, and the cheapest
allocation fills the hulls' segments in ascending order of slope (a fractional
knapsack over convex pieces: exact). The optimal value ``Phi(R)`` of that
inner problem is convex in ``R`` (a partial minimization of an LP), and its
feasible set is an interval; both are searched by golden sections and
bisections to a width of about 1e-15 of the rate's range. Every evaluated
point is a feasible rule (each chain a mixture of two neighbouring hull
vertices, so a monotone table in [0, 1]), and the objective is within that
width times ``Phi``'s slope of the optimum.

When the structure does not hold (two shared rates as in equalized odds, a
ratio objective, a mixture over records, negative weights) or no rule meets
the constraints, :func:`solve_shared_rate` returns None and the caller solves
the LP with HiGHS.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._compiler._linear_map import LinearMap
from ._bins import segment_accumulate

__all__ = ["MIN_BINS", "MIN_CHAINS", "PARALLEL_RTOL", "Reduced", "SharedRateSolution", "concat_ranges", "golden_section",
           "present_values", "reduce_rows", "shared_rate_structure", "solve_shared_rate", "threshold_hulls"]

#: ``solve_threshold_lp`` uses this solver from this many chains on (HiGHS below: its small LPs keep their
#: exact vertices and results, and HiGHS is as fast there).
MIN_CHAINS = 512
#: ... or from this many bins on, whatever the chains: HiGHS' simplex grows with the bins and this solver is
#: linear in them (census, 2 groups, 14,584 bins: 14 ms against 6 ms; the two meet near 2,000 bins).
MIN_BINS = 4096

#: Relative tolerance of the proportionality check between a local atom and the shared atom on one chain.
#: Both are sums over the same rows of a bin, divided by different totals, so their ratio carries the
#: round-off of the bins' sums (2e-11 for 600 groups of 300 rows); it stays below HiGHS' feasibility
#: tolerance (1e-9), which the LP it replaces is solved to.
PARALLEL_RTOL = 1e-9
#: Golden-section and bisection iterations stop at this fraction of the shared rate's range.
_WIDTH = 1e-15
#: The golden-section search for the least objective stops at this fraction, then takes the kink between
#: its last points (exact when one kink of the piecewise-linear objective is left in the bracket).
_SEARCH = 1e-12
_GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0
#: A shared rate is feasible when every scaled margin is at least minus this (round-off, not a slack).
_FEASIBLE_TOL = 1e-12


class SharedRateSolution:
    """The answer of a shared-rate solver (one shared rate, or two: :mod:`rateopt._postprocess._two_rate_lp`):
    the tables, the atom rates and the objective.

    Parameters
    ----------
    x : ndarray of shape (n_vars,)
        Every bin's probability of a positive decision (monotone, in [0, 1], per chain).
    atom_rates : ndarray of shape (n_atoms,)
        ``M x``.
    objective : float
        ``coef . atom_rates + constant``.
    """

    __slots__ = ("x", "atom_rates", "objective")

    def __init__(self, x, atom_rates, objective):
        self.x, self.atom_rates, self.objective = x, atom_rates, objective


class Reduced:
    """The LP reduced to chains' scalar rates: rows per chain, hull segments sorted by slope."""


def shared_rate_structure(compiled, start, M):
    """The reduced problem when the LP has the one-shared-rate structure, else None.

    Parameters
    ----------
    compiled, start, M
        As :func:`reduce_rows`.

    Returns
    -------
    Reduced or None
    """
    r = reduce_rows(compiled, start, M, 1)
    if r is None:
        return None
    objective = compiled.objective_coef if compiled.metric is None else None
    if objective is None:
        return None
    c = r.M.T @ np.asarray(objective, dtype=np.float64)
    st = Reduced()
    st.n_vars, st.n_chain, st.start, st.chain_of_var = r.n_vars, r.n_chain, r.start, r.chain_of_var
    st.A, st.B, st.kappa, st.row_chain = r.A, r.B[0], r.kappa, r.row_chain
    st.constant = float(compiled.objective_constant)
    st.M = r.M
    st.coef = np.asarray(objective, dtype=np.float64)
    st.in_shared = r.in_shared
    threshold_hulls(st, r.ds[0], c)
    _rows(st)
    return st


def reduce_rows(compiled, start, M, n_shared):
    """The LP's rows reduced to chains' rates against ``n_shared`` shared rates, or None.

    The structure both :func:`shared_rate_structure` (one shared rate) and the
    two-rate solver (:mod:`rateopt._postprocess._two_rate_lp`) read: exactly
    ``n_shared`` shared atoms (each sums bins of more than one chain) appear in
    the rows, with non-negative restrictions ``d_j`` to every chain; every
    other atom a row reads is local to one chain and a multiple ``alpha`` of
    one ``d_j`` there (its *direction* ``j``; the multiple checked to a
    relative :data:`PARALLEL_RTOL` and taken as the ratio of the chain's sums);
    every row reads the local atoms of at most one chain, in one direction.
    Each row is then ``A_i r_{k,j} + B_i . R <= kappa_i + eps``.

    Parameters
    ----------
    compiled : CompiledProblem
    start : ndarray of shape (n_chains + 1,) of int64
        The chains' bins.
    M : scipy.sparse matrix of shape (n_atoms, n_vars)
        Every atom rate as a sum over bins.
    n_shared : int
        The number of shared atoms the structure has.

    Returns
    -------
    Reduced or None
        ``M`` (CSR), ``n_vars``, ``n_chain``, ``start``, ``chain_of_var``,
        ``C`` (the rows, CSR), ``kappa``, ``shared`` (the atoms), ``ds`` (their bin vectors), ``B``
        (n_shared, m), ``A``, ``row_chain`` and ``row_dir`` (-1 for a row on
        the shared rates alone), ``in_shared`` (the chains the shared atoms
        read).
    """
    start = np.asarray(start, dtype=np.int64)
    n_chain = start.size - 1
    m = np.shape(compiled.C)[0]
    if m == 0 or n_chain == 0:
        return None
    M = sp.csr_matrix(M)
    n_atoms, n_vars = M.shape
    C = LinearMap.from_dense(compiled.C, (m, n_atoms)).tocsr()
    C.eliminate_zeros()
    M.eliminate_zeros()
    chain_of_var, counts, full, lo_chain, hi_chain = _chain_ranges(M, start, n_atoms)
    row_of_entry = np.repeat(np.arange(m), np.diff(C.indptr))
    atom = C.indices.astype(np.int64)
    coef = C.data
    used = full[atom]
    shared = present_values(atom[used & (lo_chain[atom] != hi_chain[atom])], n_atoms)
    # two chains whose rows compare their local rates (pairwise parity over two groups) and no shared atom:
    # the sum of one local atom of each chain is a shared rate R, and chain 1's rate is R - r_0
    paired = shared.size == 0 and n_shared == 1 and n_chain == 2
    if paired:
        first = [atom[used & (lo_chain[atom] == k)] for k in range(2)]
        if not (first[0].size and first[1].size):
            return None
        basis = [int(first[0][0]), int(first[1][0])]
    elif shared.size != n_shared:
        return None
    ds = []
    for group in ([basis] if paired else [[s] for s in shared]):
        d = np.zeros(n_vars)
        for s in group:  # one atom, or the paired chains' (their bins are disjoint)
            d[M.indices[M.indptr[s]:M.indptr[s + 1]]] = M.data[M.indptr[s]:M.indptr[s + 1]]
        if np.any(d < 0) or not np.all(np.isfinite(d)):
            return None
        ds.append(d)
    B = np.stack([np.bincount(row_of_entry[atom == s], weights=coef[atom == s], minlength=m) for s in shared]
                 if not paired else [np.zeros(m)])
    local = used & ~np.isin(atom, shared)
    l_row, l_atom, l_coef = row_of_entry[local], atom[local], coef[local]
    atoms_l = present_values(l_atom, n_atoms)
    # every local atom: a multiple of one d_j on its chain, covering d_j's support there (direction j)
    direction = np.full(n_atoms, -1, dtype=np.int64)
    alpha = np.zeros(n_atoms)
    factors = [_multiples(M, atoms_l, d, counts, lo_chain, chain_of_var, n_chain) for d in ds]
    for j, a in enumerate(factors):
        new = np.isfinite(a) & (direction[atoms_l] < 0)
        direction[atoms_l[new]] = j
        alpha[atoms_l[new]] = a[new]
    if atoms_l.size and np.any(direction[atoms_l] < 0):
        return None
    if n_shared == 2 and atoms_l.size:
        # an atom that is a multiple of both (a chain where d_1 and d_2 are parallel, e.g. one bin) takes the
        # direction of the one shared atom its rows read, as equalized odds' false positive rows read F
        both = np.isfinite(factors[0]) & np.isfinite(factors[1])
        reads = (B[:, row_of_entry[local]] != 0)  # per local entry: which shared atoms its row reads
        only_second = reads[1] & ~reads[0]
        flip = np.zeros(n_atoms, dtype=bool)
        flip[l_atom[only_second]] = True
        flip = atoms_l[both & flip[atoms_l]]
        direction[flip] = 1
        alpha[flip] = factors[1][np.searchsorted(atoms_l, flip)]
    # every row reads the local atoms of one chain at most, in one direction
    row_chain = np.full(m, -1, dtype=np.int64)
    row_dir = np.full(m, -1, dtype=np.int64)
    l_chain = lo_chain[l_atom]
    if paired:  # chain 1's term alpha r_1 is alpha R - alpha r_0: a term of chain 0 and one of the shared rate
        on1 = l_chain == 1
        B[0] += np.bincount(l_row[on1], weights=l_coef[on1] * alpha[l_atom[on1]], minlength=m)
        l_coef = np.where(on1, -l_coef, l_coef)
        l_chain = np.zeros_like(l_chain)
    if l_row.size:
        ch = l_chain
        row_chain[l_row] = ch  # one of the row's chains; all of them must be that one
        row_dir[l_row] = direction[l_atom]
        if np.any(row_chain[l_row] != ch) or np.any(row_dir[l_row] != direction[l_atom]):
            return None
    A = np.bincount(l_row, weights=l_coef * alpha[l_atom], minlength=m)
    row_chain[A == 0] = -1  # the local terms cancel: a bound on the shared rates alone
    row_dir[A == 0] = -1
    in_shared = np.zeros(n_chain, dtype=bool)
    for d in ds:
        in_shared |= np.bincount(chain_of_var, weights=d, minlength=n_chain) > 0
    if np.any(~in_shared[row_chain[row_chain >= 0]]):
        return None  # a constrained chain outside the shared rates: not this structure
    r = Reduced()
    r.M, r.n_vars, r.n_chain, r.start, r.chain_of_var = M, n_vars, n_chain, start, chain_of_var
    r.kappa, r.C = np.asarray(compiled.kappa, dtype=np.float64), C
    r.shared, r.ds, r.B, r.A, r.row_chain, r.row_dir, r.in_shared = shared, ds, B, A, row_chain, row_dir, in_shared
    return r


def _chain_ranges(M, start, n_atoms):
    """Every atom's least and greatest chain (-1 for an atom with no entries), and the chain of every bin."""
    n_chain = start.size - 1
    chain_of_var = np.repeat(np.arange(n_chain), np.diff(start))
    counts = np.diff(M.indptr)
    full = counts > 0
    ent_chain = chain_of_var[M.indices]
    lo_chain = np.full(n_atoms, -1, dtype=np.int64)
    hi_chain = np.full(n_atoms, -1, dtype=np.int64)
    if full.any():
        first = M.indptr[:-1][full]
        lo_chain[full] = np.minimum.reduceat(ent_chain, first)
        hi_chain[full] = np.maximum.reduceat(ent_chain, first)
    return chain_of_var, counts, full, lo_chain, hi_chain


def _multiples(M, atoms, d, counts, lo_chain, chain_of_var, n_chain):
    """For each atom (local to one chain), the factor ``alpha`` with ``M[a] = alpha d`` on its chain, or nan."""
    alpha = np.full(atoms.size, np.nan)
    if atoms.size == 0:
        return alpha
    support = np.bincount(chain_of_var[d > 0], minlength=n_chain)
    a_first = M.indptr[atoms]
    a_cnt = counts[atoms]
    idx = concat_ranges(a_first, a_cnt)
    dv = d[M.indices[idx]]
    seg = np.concatenate([[0], np.cumsum(a_cnt)[:-1]])
    ok = a_cnt == support[lo_chain[atoms]]
    bad_entry = (dv <= 0).astype(np.int64)
    ok &= np.add.reduceat(bad_entry, seg) == 0
    safe = np.where(dv > 0, dv, 1.0)
    ratio = M.data[idx] / safe
    rmin = np.minimum.reduceat(ratio, seg)
    rmax = np.maximum.reduceat(ratio, seg)
    ok &= rmax - rmin <= PARALLEL_RTOL * np.abs(rmax)
    den = np.add.reduceat(np.where(dv > 0, dv, 0.0), seg)
    ok &= den > 0
    alpha[ok] = np.add.reduceat(M.data[idx], seg)[ok] / den[ok]
    return alpha


def present_values(index, n):
    """The distinct values of ``index`` (in ``0..n-1``), ascending, without a sort."""
    mark = np.zeros(n, dtype=bool)
    mark[index] = True
    return np.flatnonzero(mark)


def concat_ranges(first, count):
    """The concatenated ranges ``first[i] : first[i] + count[i]``."""
    total = int(count.sum())
    offsets = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    return np.repeat(first, count) + offsets


def threshold_hulls(st, d, c):
    """Every chain's threshold points ``(r, cost)``, their lower convex hull and its segments sorted by slope.

    Point ``j`` of chain ``k`` switches on the chain's top ``j`` bins (threshold
    at bin ``end_k - j``); ``r`` and ``cost`` are suffix sums within the chain,
    ascending in ``r`` since ``d >= 0``.
    """
    start, n_chain = st.start, st.n_chain
    lengths = np.diff(start)
    # the chains reversed bin by bin (each chain's top bin first), as segments of the reversed array
    rev_start = np.concatenate([[0], np.cumsum(lengths[::-1])])
    r_rev = segment_accumulate(np.add, d[::-1].copy(), rev_start)
    c_rev = segment_accumulate(np.add, c[::-1].copy(), rev_start)
    # per chain in chain order: the point of 0 bins, then 1..n_k bins
    pstart = start + np.arange(n_chain + 1)
    n_pts = int(pstart[-1])
    chain_of_pt = np.repeat(np.arange(n_chain), lengths + 1)
    j = np.arange(n_pts) - pstart[:-1][chain_of_pt]  # bins switched on
    r = np.zeros(n_pts)
    cost = np.zeros(n_pts)
    on = j > 0
    # reversed position of chain k's j-th top bin: chain k is reversed segment n_chain-1-k
    pos = rev_start[n_chain - 1 - chain_of_pt[on]] + j[on] - 1
    r[on], cost[on] = r_rev[pos], c_rev[pos]
    thr = start[1:][chain_of_pt] - j  # the threshold bin: bins >= thr are on
    # equal r within a chain (bins outside the shared atom): keep the cheapest point of each run
    key_new = np.ones(n_pts, dtype=bool)
    key_new[1:] = (chain_of_pt[1:] != chain_of_pt[:-1]) | (r[1:] != r[:-1])
    runs = np.flatnonzero(key_new)
    if runs.size < n_pts:  # the first point of each run at the run's least cost (no sort: runs are contiguous)
        run = np.cumsum(key_new) - 1
        cheapest = np.flatnonzero(cost == np.minimum.reduceat(cost, runs)[run])
        first = np.ones(cheapest.size, dtype=bool)
        first[1:] = run[cheapest[1:]] != run[cheapest[:-1]]
        keep = cheapest[first]
        r, cost, thr, ch = r[keep], cost[keep], thr[keep], chain_of_pt[keep]
    else:  # every point its own run (the chains' rates rise at every bin)
        ch = chain_of_pt
    # free chains (outside the shared rate, no rows): their cheapest threshold, independently
    free = ~st.in_shared
    free_thr = np.full(n_chain, -1, dtype=np.int64)
    if free.any():
        cheapest = np.full(n_chain, np.inf)
        np.minimum.at(cheapest, ch, cost)
        is_min = (cost == cheapest[ch]) & free[ch]
        free_thr[ch[is_min][::-1]] = thr[is_min][::-1]  # the first (fewest bins on) cheapest point
    st.free_thr = free_thr
    # lower convex hull: drop every interior point on or above the chord of its neighbours until none is.
    # Each pass drops every such point at once, so the passes shrink geometrically on noisy curves (10 chains
    # of 100,000 random points: 22 passes, each about half the last, twice one pass's work in all)
    while True:
        n = r.size
        if n <= 2:
            break
        # every interior point's cross product with its neighbours, by slices (no gathers); a point at a
        # chain's end is never dropped
        inner = (ch[:-2] == ch[1:-1]) & (ch[2:] == ch[1:-1])
        cross = (r[1:-1] - r[:-2]) * (cost[2:] - cost[:-2]) - (cost[1:-1] - cost[:-2]) * (r[2:] - r[:-2])
        drop = np.flatnonzero(inner & (cross <= 0))
        if drop.size == 0:
            break
        drop += 1
        # two neighbours dropped in one pass are each on or above a chord of points of the set: still correct
        mask = np.ones(n, dtype=bool)
        mask[drop] = False
        r, cost, thr, ch = r[mask], cost[mask], thr[mask], ch[mask]
    # segments between neighbouring hull points of a chain
    seg = np.flatnonzero(ch[1:] == ch[:-1])
    s_ch = ch[seg]
    s_lo, s_hi = r[seg], r[seg + 1]
    s_len = s_hi - s_lo
    slope = (cost[seg + 1] - cost[seg]) / s_len
    # slopes ascend within a chain (a convex hull); round-off must not reorder a chain's pieces
    if seg.size:
        s_first = np.flatnonzero(np.concatenate([[True], s_ch[1:] != s_ch[:-1]]))
        slope = segment_accumulate(np.maximum, slope, np.append(s_first, seg.size))
    order = np.lexsort((np.arange(seg.size), slope))
    st.s_ch, st.s_lo, st.s_hi, st.s_len, st.slope = s_ch[order], s_lo[order], s_hi[order], s_len[order], slope[order]
    st.s_thr_lo, st.s_thr_hi = thr[seg][order], thr[seg + 1][order]
    st.s_pos = seg[order]  # position along the chain's hull (ascending r within a chain)
    st.r_top = np.zeros(n_chain)
    last = np.flatnonzero(np.append(ch[1:] != ch[:-1], True))  # every chain's last point: its greatest r
    st.r_top[ch[last]] = r[last]
    st.r_top[free] = 0.0
    n_seg = seg.size
    st.buffers = (np.empty(n_seg), np.empty(n_seg), np.empty(n_seg))


def _rows(st):
    """The rows as bounds on ``r_k`` affine in ``R``, grouped by chain; the rows on ``R`` alone."""
    A, B, kappa, rc = st.A, st.B, st.kappa, st.row_chain
    alone = rc < 0
    st.alone_B, st.alone_kappa = B[alone], kappa[alone]
    for name, sel in (("up", (rc >= 0) & (A > 0)), ("dn", (rc >= 0) & (A < 0))):
        i = np.flatnonzero(sel)
        i = i[np.argsort(rc[i], kind="stable")]
        ch = rc[i]
        first = np.flatnonzero(np.concatenate([[True], ch[1:] != ch[:-1]])) if i.size else np.zeros(0, np.int64)
        chains = ch[first] if i.size else ch
        # one row per chain, every chain in order (parity over one-row groups): no gather, no reduction
        each = first.size == i.size and chains.size == st.n_chain
        setattr(st, name, (i, chains, first, A[i], B[i], kappa[i], each))


def _affine(st, eps):
    """Per row set, the bound ``u0 + u1 R`` on ``r_k``: ``u0 = (kappa + eps) / A``, ``u1 = -B / A``."""
    if getattr(st, "eps", None) != eps:
        st.eps = eps
        st.affine = {name: ((kappa + eps) / A, -B / A) for name in ("up", "dn")
                     for (_, _, _, A, B, kappa, _) in [getattr(st, name)]}
    return st.affine


def _bounds(st, R, eps):
    """Every chain's interval ``[lo, hi]`` for ``r_k`` at the shared rate ``R``."""
    lo = np.zeros(st.n_chain)
    hi = st.r_top.copy()
    affine = _affine(st, eps)
    for name, out, fn in (("up", hi, np.minimum), ("dn", lo, np.maximum)):
        i, chains, first, _, _, _, each = getattr(st, name)
        if i.size:
            u0, u1 = affine[name]
            v = u1 * R
            v += u0
            if each:
                fn(out, v, out=out)
            else:
                out[chains] = fn(out[chains], v if first.size == i.size else fn.reduceat(v, first))
    return lo, hi


def _alone_margin(st, R, eps):
    """The least margin of the rows on ``R`` alone (inf: none)."""
    B = st.alone_B
    if B.size == 0:
        return np.inf
    v = st.alone_kappa + eps - B * R
    nz = B != 0
    if np.any(v[~nz] < 0):
        return -np.inf
    return float(np.min(v[nz] / np.abs(B[nz]))) if nz.any() else np.inf


def _margin(st, R, eps):
    """A concave function of ``R``, >= 0 where some rule has shared rate ``R`` and meets the rows.

    Each term is scaled by its range (a chain's by its top rate, the sums by
    the shared rate's top), so that one tolerance (:data:`_FEASIBLE_TOL`)
    absorbs the round-off of equalities such as zero-slack parity, whose
    chains' intervals are points that sum to ``R`` only up to round-off.
    """
    lo, hi = _bounds(st, R, eps)
    live = st.in_shared
    return min(float(np.min((hi[live] - lo[live]) / st.r_top[live])) if live.any() else np.inf,
               (R - float(lo[live].sum())) / st.top, (float(hi[live].sum()) - R) / st.top,
               _alone_margin(st, R, eps) / st.top)


def _phi(st, R, eps, *, full=False):
    """``Phi(R)``: the least objective at shared rate ``R`` (greedy over the sorted hull segments)."""
    lo, hi = _bounds(st, R, eps)
    np.minimum(lo, hi, out=lo)  # round-off at a zero-width interval
    a, b, forced = st.buffers
    np.take(lo, st.s_ch, out=a)
    np.take(hi, st.s_ch, out=b)
    np.subtract(a, st.s_lo, out=forced)  # the part of each segment below its chain's interval
    np.maximum(forced, 0.0, out=forced)
    np.minimum(forced, st.s_len, out=forced)
    avail = b  # the part inside the interval
    np.minimum(st.s_hi, b, out=avail)
    np.maximum(st.s_lo, a, out=a)
    np.subtract(avail, a, out=avail)
    np.maximum(avail, 0.0, out=avail)
    extra = R - float(lo[st.in_shared].sum())
    cs = np.cumsum(avail, out=a)
    total = float(cs[-1]) if cs.size else 0.0
    extra = min(max(extra, 0.0), total)
    k = int(np.searchsorted(cs, extra))
    fill = np.zeros_like(avail)
    if k < avail.size:
        fill[k] = min(max(extra - (float(cs[k - 1]) if k else 0.0), 0.0), avail[k])
    if k > 0:
        fill[:k] = avail[:k]
    used = np.add(forced, fill, out=fill)
    # a product and a sum, not a BLAS dot: a threaded BLAS call on 10^5 entries was 30x slower on a busy machine
    value = float(np.multiply(st.slope, used, out=forced).sum())
    if not full:
        return value
    return value, used.copy()


def _table(st, used):
    """The bins' tables from the segments' used lengths: each chain a mixture of two neighbouring hull points."""
    n_chain = st.n_chain
    on = used > 0
    # the last used segment of each chain (segments of a chain are used from its first up)
    last = np.full(n_chain, -1, dtype=np.int64)
    pos = np.full(n_chain, -1, dtype=np.int64)
    idx = np.flatnonzero(on)
    o = np.argsort(st.s_pos[idx], kind="stable")
    idx = idx[o]
    last[st.s_ch[idx]] = idx  # ascending position: the last write is the highest used segment
    pos[st.s_ch[idx]] = st.s_pos[idx]
    end = st.start[1:]
    thr_full = end.copy()  # bins >= thr_full are on (none by default)
    thr_part = end.copy()
    theta = np.zeros(n_chain)
    has = last >= 0
    j = last[has]
    thr_full[has] = st.s_thr_lo[j]
    thr_part[has] = st.s_thr_hi[j]
    theta[has] = np.clip(used[j] / st.s_len[j], 0.0, 1.0)
    free = ~st.in_shared
    thr_full[free] = np.where(st.free_thr[free] >= 0, st.free_thr[free], end[free])
    thr_part[free] = thr_full[free]
    v = np.arange(st.n_vars)
    ch = st.chain_of_var
    x = np.where(v >= thr_full[ch], 1.0, np.where(v >= thr_part[ch], theta[ch], 0.0))
    return x


def golden_section(f, lo, hi, width, *, maximize=False):
    """The argument of the least (greatest) value of a convex (concave) ``f`` on ``[lo, hi]``, to ``width``."""
    sign = -1.0 if maximize else 1.0
    a, b = lo, hi
    x1 = b - _GOLDEN * (b - a)
    x2 = a + _GOLDEN * (b - a)
    f1, f2 = sign * f(x1), sign * f(x2)
    while b - a > width:
        if f1 <= f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - _GOLDEN * (b - a)
            f1 = sign * f(x1)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + _GOLDEN * (b - a)
            f2 = sign * f(x2)
    fa, fb = sign * f(a), sign * f(b)
    candidates = [(f1, x1), (f2, x2), (fa, a), (fb, b)]
    if x1 < x2 and a < x1 and x2 < b:
        # a piecewise-linear f with one kink in [a, b] has it where the lines of its two sides meet
        s1, s2 = (f1 - fa) / (x1 - a), (fb - f2) / (b - x2)
        if s2 > s1:
            kink = (f2 - s2 * x2 - f1 + s1 * x1) / (s1 - s2)
            if a < kink < b:
                candidates.append((sign * f(kink), kink))
    best = min(candidates)
    return best[1], sign * best[0]


def _edge(ok, inside, outside, width):
    """The point nearest ``outside`` where ``ok`` holds, by bisection from ``inside`` (where it holds)."""
    while abs(outside - inside) > width:
        mid = inside + (outside - inside) / 2
        if ok(mid):
            inside = mid
        else:
            outside = mid
    return inside


def solve_shared_rate(compiled, start, M, *, epsilon=0.0):
    """The threshold LP's optimum when it has the one-shared-rate structure, else None.

    Parameters
    ----------
    compiled : CompiledProblem
        A linear objective (``compiled.metric`` is None).
    start : ndarray of shape (n_chains + 1,) of int64
        The chains' bins (one record).
    M : scipy.sparse matrix of shape (n_atoms, n_vars)
        Every atom rate as a sum over bins.
    epsilon : float, default=0.0
        Allowed violation of every constraint.

    Returns
    -------
    SharedRateSolution or None
        None when the structure does not hold or no rule meets the constraints
        (the caller then solves the LP with HiGHS).
    """
    st = shared_rate_structure(compiled, start, M)
    if st is None:
        return None
    eps = float(epsilon)
    top = st.top = float(st.r_top[st.in_shared].sum())
    if not top > 0:
        return None
    width = _WIDTH * max(top, 1e-300)
    lo, hi = 0.0, top
    # the rows on R alone narrow its range first
    for B, k in zip(st.alone_B, st.alone_kappa):
        if B > 0:
            hi = min(hi, (k + eps) / B)
        elif B < 0:
            lo = max(lo, (k + eps) / B)
    if lo > hi:
        return None

    def margin(R):
        return _margin(st, R, eps)

    # a feasible shared rate: the greatest margin of a concave function
    def feasible(R):
        return margin(R) >= -_FEASIBLE_TOL

    if feasible(lo):
        R0 = lo
    elif feasible(hi):
        R0 = hi
    else:
        R0, best = golden_section(margin, lo, hi, width, maximize=True)
        if best < -_FEASIBLE_TOL:
            return None

    r_lo = lo if feasible(lo) else _edge(feasible, R0, lo, width)
    r_hi = hi if feasible(hi) else _edge(feasible, R0, hi, width)
    if r_hi > r_lo:
        R, _ = golden_section(lambda R: _phi(st, R, eps), r_lo, r_hi, _SEARCH * top)
    else:
        R = r_lo
    _, used = _phi(st, R, eps, full=True)
    x = _table(st, used)
    p = st.M @ x
    value = float(st.coef @ p + st.constant)
    return SharedRateSolution(x=x, atom_rates=p, objective=value)
