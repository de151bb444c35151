"""The threshold LP with two shared rates (equalized odds over many cells), solved exactly without HiGHS.

Equalized odds over many groups states the threshold LP
(:mod:`rateopt._postprocess._lp`) with rows that compare each cell's true
(false) positive rate with the overall one: *two* shared atoms, where
:mod:`rateopt._postprocess._shared_rate_lp` handles one. This module
recognizes that structure from the compiled rows and the bins' atom rates and
answers, exactly and in time linear in the bins, the questions an outer search
over the pair ``R = (T, F)`` of shared rates asks:

- :func:`sum_range`: for a fixed ``R``, the range ``[F_min, F_max]`` of the
  second shared atom's sum over allocations whose first sums to ``T``, every
  cell inside its ROC polygon cut by the box its rows give at ``R``;
  ``R`` is feasible (some rule has shared rates ``R`` and meets every row)
  exactly when every cell's cut polygon is not empty, ``T`` lies in the range
  of the first sums, and ``F_min <= F <= F_max`` (:func:`feasible`);
- :func:`rule_at`: at a feasible ``R``, a rule meeting every row: each cell a
  mixture of at most four threshold rules (a monotone table in [0, 1]).

Structure (recognized, not read from the goals' types): exactly two shared
atoms ``s1``, ``s2`` (each sums bins of more than one chain) with
non-negative restrictions ``d1_k``, ``d2_k`` to each chain; every other atom a
row reads is local to one chain and a multiple of ``d1_k`` or of ``d2_k`` there;
every row reads the local atoms of at most one chain and one of the two
directions only (an axis-aligned box, as equalized odds' rows are). A cell's
state is then ``r_k = (d1_k . x_k, d2_k . x_k)`` and the shared rates are
``R = sum_k r_k``. The set of a cell's states is its ROC polygon: the points
between the lower convex and upper concave hulls of its threshold rules'
points, both non-decreasing.

Facts used (each checked by the tests against HiGHS):

1. For fixed ``R`` the rows are bounds ``lo_k <= r_k <= hi_k`` affine in ``R``
   per row; the cell's first coordinate ranges over ``K_k = [max(lo1, 0,
   upper^-1(lo2)), min(hi1, top1, lower^-1(hi2))]``.
2. The least second sum at ``sum_k r1_k = T`` minimizes ``sum_k max(lower_k(x_k),
   lo2_k)``, convex pieces whose slopes are the hull's (fixed) and 0: a greedy
   fill in ascending slope from ``K_lo`` (exact). The greatest is the greedy
   fill of ``min(upper_k(x_k), hi2_k)`` in descending slope.
3. Between the two optimal allocations lies one meeting ``sum f_k <= F <= sum
   g_k`` (intermediate values on the segment joining them); each cell then
   takes its second coordinate between its two bounds in one common
   proportion.
4. For an objective that reads the two shared atoms only (the error, weighted
   or not: every bin's cost is ``gamma . (d1, d2)``), the LP is the least
   ``gamma . R`` over the convex set of feasible ``R``.

:func:`solve_two_rate` searches that set from an interior point (on the
diagonal, every cell at one acceptance probability, or across it): a golden
section over the directions that decrease ``gamma . R`` (the objective along
the boundary has one minimum there), each direction's boundary point by secant
steps on a concave margin (``_margin``: exact on its last linear piece, so
about four oracle calls per direction with a neighbouring direction's distance
as the guess), to an angle of 1e-6; then the vertex where the two edges at the
ends of that bracket meet, accepted with a certificate (it is feasible and
``-gamma`` lies in the cone of the two edges' outward normals), else the golden
section on to 1e-13. About 200 oracle calls, each linear in the bins. At
zero slack (every cell's box a point, fixed by ``R``) the feasible set may
have no interior (the groups' ROC polygons often meet in a segment of the
diagonal); there the cells' hull lines are half-planes in ``R`` and the LP is
one two-column LP (``_solve_pinned``). It returns None (the caller solves the
LP with HiGHS) for other structures and objectives, a cell without one of the
two rates, and a feasible set with no interior point it finds when the boxes
are not points.
"""

from __future__ import annotations

import numpy as np

from .._utils._highs import solve_lp
from ._shared_rate_lp import MIN_CHAINS, Reduced, SharedRateSolution, golden_section, reduce_rows, threshold_hulls

__all__ = ["MIN_CHAINS", "TwoRateStructure", "feasible", "rule_at", "solve_two_rate", "sum_range",
           "two_rate_structure"]

#: Absolute tolerance, in units of a rate's range, of the oracle's inequalities (round-off, not a slack).
_TOL = 1e-12


class TwoRateStructure:
    """The LP reduced to cells' two rates: per-cell hulls and the rows as bounds affine in ``R``.

    Attributes read by callers: ``n_chain``, ``live`` (cells in the shared rates),
    ``top`` (the two shared atoms' greatest values), ``gamma`` and ``constant``
    (the objective as ``gamma . R + constant`` when it reads the two shared atoms
    only, else ``gamma`` is None), ``M``, ``coef``.
    """


def two_rate_structure(compiled, start, M):
    """The reduced problem when the LP has the two-shared-rate structure, else None.

    Parameters
    ----------
    compiled, start, M
        As :func:`rateopt._postprocess._shared_rate_lp.reduce_rows`.

    Returns
    -------
    TwoRateStructure or None
    """
    r = reduce_rows(compiled, start, M, 2)
    if r is None or compiled.metric is not None:
        return None
    st = TwoRateStructure()
    st.n_vars, st.n_chain, st.start, st.chain_of_var = r.n_vars, r.n_chain, r.start, r.chain_of_var
    st.shared = r.shared
    st.M, st.coef = r.M, np.asarray(compiled.objective_coef, dtype=np.float64)
    st.constant = float(compiled.objective_constant)
    st.C, st.kappa = r.C, r.kappa
    st.live = r.in_shared
    st.d1, st.d2 = r.ds
    _objective_on_shared(st)
    _cell_hulls(st)
    _row_bounds(st, r.A, r.B, r.kappa, r.row_chain, r.row_dir)
    return st


def _objective_on_shared(st):
    """``gamma`` with every live bin's cost ``gamma . (d1, d2)`` (the objective reads ``R`` only), else None."""
    c = st.M.T @ st.coef
    d1, d2 = st.d1, st.d2
    G = np.array([[d1 @ d1, d1 @ d2], [d1 @ d2, d2 @ d2]])
    rhs = np.array([d1 @ c, d2 @ c])
    st.gamma = None
    try:
        gamma = np.linalg.solve(G, rhs)
    except np.linalg.LinAlgError:
        return
    scale = max(float(np.max(np.abs(c))) if c.size else 0.0, 1e-300)
    if np.max(np.abs(c - gamma[0] * d1 - gamma[1] * d2), initial=0.0) <= 1e-9 * scale:
        st.gamma = gamma


def _cell_hulls(st):
    """Each cell's lower (convex) and upper (concave) hull of its threshold points in ``(r1, r2)``.

    Both come from :func:`rateopt._postprocess._shared_rate_lp.threshold_hulls` (the
    lower hull of ``(r1, cost)`` points): the lower with ``cost = r2``, the
    upper with ``cost = -r2``. Each side keeps its segments by chain and by
    position, with the second coordinate at their ends.
    """
    n_chain = st.n_chain
    for name, sign in (("lower", 1.0), ("upper", -1.0)):
        h = Reduced()
        h.start, h.n_chain, h.in_shared = st.start, n_chain, st.live
        threshold_hulls(h, st.d1, sign * st.d2)
        order = np.lexsort((h.s_pos, h.s_ch))  # by chain, then along the chain
        side = Reduced()
        side.ch, side.x0, side.len = h.s_ch[order], h.s_lo[order], h.s_len[order]
        side.slope = sign * h.slope[order]
        side.thr_lo, side.thr_hi = h.s_thr_lo[order], h.s_thr_hi[order]
        side.dy = side.slope * side.len
        side.first = np.searchsorted(side.ch, np.arange(n_chain + 1))  # chain k: first[k]:first[k+1]
        setattr(st, name, side)
    st.top1 = np.bincount(st.chain_of_var, weights=st.d1, minlength=n_chain)
    st.top2 = np.bincount(st.chain_of_var, weights=st.d2, minlength=n_chain)
    _start_points(st)
    for side in (st.lower, st.upper):
        excl = np.cumsum(side.dy) - side.dy  # the rise before each segment, over all chains
        side.y0 = side.y_start[side.ch] + excl - excl[side.first[side.ch]]  # the second coordinate at its start
    st.top = np.array([st.top1[st.live].sum(), st.top2[st.live].sum()])


def _start_points(st):
    """The hulls' first points: lower ``(0, 0)`` (nothing on), upper ``(0, u0)`` (every top bin without d1 on)."""
    n_chain, start = st.n_chain, st.start
    end = start[1:]
    # the longest run of top bins with d1 == 0: its d2 sum is u0, its first bin the threshold
    v = np.arange(st.n_vars)
    has1 = st.d1 > 0
    last1 = np.full(n_chain, -1, dtype=np.int64)
    np.maximum.at(last1, st.chain_of_var[has1], v[has1])
    thr0 = np.where(last1 >= 0, last1 + 1, start[:-1])
    top_run = v >= thr0[st.chain_of_var]
    u0 = np.bincount(st.chain_of_var[top_run], weights=st.d2[top_run], minlength=n_chain)
    st.lower.y_start, st.lower.thr_start = np.zeros(n_chain), end.copy()
    st.upper.y_start, st.upper.thr_start = u0, thr0


def _row_bounds(st, A, B, kappa, row_chain, row_dir):
    """The rows as bounds on one coordinate of one cell, ``(kappa + eps - B . R) / A``; rows on ``R`` alone."""
    alone = row_chain < 0
    st.alone_B, st.alone_kappa = B[:, alone], kappa[alone]
    st.rows = {}
    for j in (0, 1):
        for name, sel in (("hi", A > 0), ("lo", A < 0)):
            i = np.flatnonzero(sel & (row_dir == j) & ~alone)
            i = i[np.argsort(row_chain[i], kind="stable")]
            ch = row_chain[i]
            first = np.flatnonzero(np.concatenate([[True], ch[1:] != ch[:-1]])) if i.size else ch
            # one row per chain, every chain in order (equalized odds): the bounds need no reduction
            each = i.size == st.n_chain and bool(np.all(ch == np.arange(st.n_chain)))
            st.rows[(j, name)] = (ch, A[i], B[:, i], kappa[i], first, each)


def _boxes(st, R, eps):
    """Every cell's box ``lo1, hi1, lo2, hi2`` at ``R`` (the rows' bounds within the cell's own ranges)."""
    T, F = R
    if getattr(st, "box_eps", None) != eps:  # the bounds as u0 + u1 T + u2 F, per row
        st.box_eps = eps
        st.box_coef = {key: ((kappa + eps) / A, -B[0] / A, -B[1] / A)
                       for key, (_, A, B, kappa, _, _) in st.rows.items()}
    out = {}
    for j, top in ((0, st.top1), (1, st.top2)):
        lo, hi = np.zeros(st.n_chain), top.copy()
        for name, arr, fn in (("hi", hi, np.minimum), ("lo", lo, np.maximum)):
            ch, _, _, _, first, each = st.rows[(j, name)]
            if ch.size:
                u0, u1, u2 = st.box_coef[(j, name)]
                v = u1 * T
                v += u0
                v += u2 * F
                if each:
                    fn(arr, v, out=arr)
                else:
                    chains = ch[first]
                    arr[chains] = fn(arr[chains], fn.reduceat(v, first))
        out[j] = (lo, hi)
    return out[0][0], out[0][1], out[1][0], out[1][1]


def _alone_ok(st, R, eps):
    """Whether the rows on ``R`` alone hold."""
    if st.alone_kappa.size == 0:
        return True
    v = st.alone_kappa + eps - st.alone_B[0] * R[0] - st.alone_B[1] * R[1]
    return bool(np.all(v >= -_TOL * max(1.0, float(np.max(np.abs(st.alone_kappa))))))


def _value(side, x):
    """The side's second coordinate at first coordinate ``x`` (per chain)."""
    part = np.clip(x[side.ch] - side.x0, 0.0, side.len)
    return side.y_start + np.bincount(side.ch, weights=side.slope * part, minlength=x.size)


def _inverse(side, y, *, greatest):
    """Per chain, the greatest ``x`` with ``side(x) <= y`` (``greatest``) or the least ``x`` with ``side(x) >= y``."""
    if not hasattr(side, "inv_dy"):  # per segment: r1 per unit of r2 (0 on a flat one), a flat one's length
        rising = side.dy > 0
        side.inv_dy = np.divide(side.len, side.dy, out=np.zeros_like(side.dy), where=rising)
        side.flat_len = np.where(rising, 0.0, side.len)
    rise = np.take(y, side.ch)
    rise -= side.y0
    part = np.multiply(rise, side.inv_dy)  # the rising segments' r1 below y
    np.clip(part, 0.0, side.len, out=part)
    part += side.flat_len * ((rise >= 0) if greatest else (rise > 0))  # a flat segment: all of it or none
    return np.bincount(side.ch, weights=part, minlength=y.size)


def _greedy(side, a, b, extra, flat_len, *, descending):
    """Fill ``extra`` over each chain's hull segments clipped to ``[a, b]`` and its flat piece, by slope.

    ``a, b`` per chain bound the hull segments used; ``flat_len`` per chain is a
    piece of slope 0, filled before the segments (ascending: a non-decreasing
    hull's slopes are >= 0) or after them (descending). Returns the value added
    and every chain's amount.
    """
    lo = np.maximum(side.x0, a[side.ch])
    hi = np.minimum(side.x0 + side.len, b[side.ch])
    avail = np.maximum(hi - lo, 0.0)
    order = side.order_desc if descending else side.order_asc
    n = a.size
    total_flat = float(flat_len.sum())
    amount = np.zeros(n)
    value = 0.0
    if not descending:  # flat pieces first (slope 0 <= every slope of a non-decreasing hull)
        take = min(extra, total_flat)
        amount += _spread(flat_len, take)
        extra -= take
    av = np.take(avail, order)
    cs = np.cumsum(av)
    tot = float(cs[-1]) if cs.size else 0.0
    take = min(max(extra, 0.0), tot)
    k = int(np.searchsorted(cs, take))
    if k < av.size:  # the pieces below k fully, piece k partly, none above: only the prefix is read
        av[k] = min(max(take - (float(cs[k - 1]) if k else 0.0), 0.0), av[k])
    used = av[:k + 1]
    slope, ch = (side.slope_desc, side.ch_desc) if descending else (side.slope_asc, side.ch_asc)
    # a product and a sum, not a BLAS dot (threaded BLAS on 10^5 entries is slow on a busy machine)
    value += float(np.multiply(slope[:k + 1], used).sum())
    amount += np.bincount(ch[:k + 1], weights=used, minlength=n)
    extra -= take
    if descending:
        take = min(max(extra, 0.0), total_flat)
        amount += _spread(flat_len, take)
    return value, amount


def _spread(length, take):
    """``take`` filled over the pieces ``length`` in chain order (each used fully before the next)."""
    if take <= 0:
        return np.zeros_like(length)
    cs = np.cumsum(length)
    k = int(np.searchsorted(cs, take))
    out = np.zeros_like(length)
    out[:k] = length[:k]
    if k < length.size:
        out[k] = min(take - (float(cs[k - 1]) if k else 0.0), length[k])
    return out


def sum_range(st, R, eps=0.0, *, always=False):
    """The oracle at ``R``: the cut polygons' ranges, ``[F_min, F_max]`` at ``T`` and their allocations.

    Parameters
    ----------
    st : TwoRateStructure
    R : sequence of two floats
        ``(T, F)``, the two shared rates.
    eps : float, default=0.0
        Allowed violation of every row.
    always : bool, default=False
        Compute the greedy fills also when ``ok`` is false (on the cells'
        ranges made non-empty and ``T`` clipped to the reachable range).

    Returns
    -------
    dict
        ``ok`` (every cell's cut polygon is not empty and ``T`` is reachable),
        ``K`` (every cell's range of ``r1``), ``f_min``, ``f_max`` (nan unless
        ``ok``), ``x_min``, ``x_max`` (the greedy allocations of ``r1``), and the
        boxes.
    """
    for side in (st.lower, st.upper):
        if not hasattr(side, "order_asc"):
            side.order_asc = np.lexsort((np.arange(side.slope.size), side.slope))
            side.order_desc = side.order_asc[::-1].copy()
            for name, order in (("asc", side.order_asc), ("desc", side.order_desc)):
                setattr(side, "slope_" + name, side.slope[order])
                setattr(side, "ch_" + name, side.ch[order])
    T, F = float(R[0]), float(R[1])
    lo1, hi1, lo2, hi2 = _boxes(st, (T, F), eps)
    live = st.live
    tol1 = _TOL * max(st.top[0], 1e-300)
    tol2 = _TOL * max(st.top[1], 1e-300)
    inv_up = _inverse(st.upper, lo2, greatest=False)  # the least r1 whose upper hull reaches lo2
    inv_low = _inverse(st.lower, hi2, greatest=True)  # the greatest r1 whose lower hull stays below hi2
    k_lo = np.maximum(lo1, inv_up)
    k_hi = np.minimum(hi1, inv_low)
    cell_ok = (k_lo <= k_hi + tol1) & (lo2 <= hi2 + tol2) & (hi2 >= -tol2) & (lo2 <= st.top2 + tol2)
    cell_ok |= ~live
    width = k_hi - k_lo
    k_hi = np.maximum(k_hi, k_lo)
    out = {"lo1": lo1, "hi1": hi1, "lo2": lo2, "hi2": hi2, "k_lo": k_lo, "k_hi": k_hi,
           "f_min": np.nan, "f_max": np.nan}
    sum_lo, sum_hi = float(k_lo[live].sum()), float(k_hi[live].sum())
    ok = bool(cell_ok.all()) and sum_lo <= T + tol1 and T <= sum_hi + tol1 and _alone_ok(st, (T, F), eps)
    out["ok"] = ok
    out["t_range"] = (sum_lo, sum_hi)
    out["cell_ok"] = cell_ok
    out["k_width"] = width
    out["inv_up"], out["inv_low"] = inv_up, inv_low
    if not ok and not always:
        return out
    extra = min(max(T - sum_lo, 0.0), sum_hi - sum_lo)
    k_lo_l = np.where(live, k_lo, 0.0)
    k_hi_l = np.where(live, k_hi, 0.0)
    # least: f_k = max(lower_k, lo2_k) on K_k: flat on [K_lo, max(K_lo, xl)], then lower's segments
    xl = np.clip(_inverse(st.lower, lo2, greatest=True), k_lo_l, k_hi_l)
    base = np.maximum(_value(st.lower, k_lo_l), lo2)
    v, amount = _greedy(st.lower, xl, k_hi_l, extra, xl - k_lo_l, descending=False)
    out["f_min"] = float(base[live].sum()) + v
    out["x_min"] = k_lo_l + amount
    # greatest: g_k = min(upper_k, hi2_k) on K_k: upper's segments on [K_lo, min(K_hi, xu)], then flat
    xu = np.clip(_inverse(st.upper, hi2, greatest=False), k_lo_l, k_hi_l)
    base = np.minimum(_value(st.upper, k_lo_l), hi2)
    v, amount = _greedy(st.upper, k_lo_l, xu, extra, k_hi_l - xu, descending=True)
    out["f_max"] = float(base[live].sum()) + v
    out["x_max"] = k_lo_l + amount
    return out


def feasible(st, R, eps=0.0):
    """Whether some rule has shared rates ``R`` and meets every row (within round-off).

    Parameters
    ----------
    st : TwoRateStructure
    R : sequence of two floats
    eps : float, default=0.0

    Returns
    -------
    bool
    """
    return _feasible_range(st, R, eps) is not None


def _feasible_range(st, R, eps):
    """:func:`sum_range` at ``R`` when some rule has shared rates ``R`` and meets every row (within round-off),
    else None."""
    o = sum_range(st, R, eps)
    F, tol = float(R[1]), _TOL * max(st.top[1], 1e-300)
    return o if o["ok"] and o["f_min"] <= F + tol and F <= o["f_max"] + tol else None


def _bounds_at(st, o, x):
    """Every cell's least and greatest second coordinate at first coordinate ``x`` inside its cut polygon."""
    return np.maximum(_value(st.lower, x), o["lo2"]), np.minimum(_value(st.upper, x), o["hi2"])


def _point_rules(side, x):
    """Per chain, the two threshold bins and the weight of the second whose mixture is the side's point at ``x``."""
    n = x.size
    nseg = np.diff(side.first)
    below = np.bincount(side.ch, weights=(side.x0 + side.len <= x[side.ch]).astype(float), minlength=n)
    j = np.minimum(below.astype(np.int64), np.maximum(nseg - 1, 0))
    has = nseg > 0
    g = side.first[:-1] + j
    thr_a = side.thr_start.copy()
    thr_b = side.thr_start.copy()
    w = np.zeros(n)
    if has.any():
        gi = g[has]
        thr_a[has] = side.thr_lo[gi]
        thr_b[has] = side.thr_hi[gi]
        w[has] = np.clip((x[has] - side.x0[gi]) / side.len[gi], 0.0, 1.0)
    return thr_a, thr_b, w


def rule_at(st, R, eps=0.0):
    """A rule with shared rates ``R`` that meets every row, or None when ``R`` is not feasible.

    Parameters
    ----------
    st : TwoRateStructure
    R : sequence of two floats
    eps : float, default=0.0

    Returns
    -------
    ndarray of shape (n_vars,) or None
        Every bin's probability of a positive decision: per cell a mixture of at
        most four threshold rules (a monotone table in [0, 1]). Cells outside the
        shared rates take nothing on.
    """
    o = _feasible_range(st, R, eps)
    if o is None:
        return None
    F = float(R[1])
    live = st.live
    xa, xb = o["x_min"], o["x_max"]

    def low_sum(theta):
        x = xa + theta * (xb - xa)
        return float(_bounds_at(st, o, x)[0][live].sum())

    # the greatest theta with sum f(x(theta)) <= F (sum f is convex along the segment and <= F at 0)
    if low_sum(1.0) <= F:
        theta = 1.0
    else:
        a, b = 0.0, 1.0
        for _ in range(100):
            mid = (a + b) / 2
            if low_sum(mid) <= F:
                a = mid
            else:
                b = mid
            if b - a <= 1e-16:
                break
        theta = a
    x = xa + theta * (xb - xa)
    x = np.clip(x, o["k_lo"], o["k_hi"])
    f, g = _bounds_at(st, o, x)
    sf, sg = float(f[live].sum()), float(g[live].sum())
    tau = 0.0 if sg <= sf else min(max((F - sf) / (sg - sf), 0.0), 1.0)
    r2 = f + tau * (g - f)
    # the cell's point: between its lower and upper hull points at x
    lo_y, up_y = _value(st.lower, x), _value(st.upper, x)
    gap = up_y - lo_y
    up_w = np.zeros_like(x)
    np.divide(r2 - lo_y, gap, out=up_w, where=gap > 0)
    np.clip(up_w, 0.0, 1.0, out=up_w)
    parts = []
    for side, weight in ((st.lower, 1.0 - up_w), (st.upper, up_w)):
        thr_a, thr_b, w = _point_rules(side, x)
        parts += [(thr_a, weight * (1.0 - w)), (thr_b, weight * w)]
    ch = st.chain_of_var
    v = np.arange(st.n_vars)
    table = np.zeros(st.n_vars)
    for thr, w in parts:
        table += np.where(v >= thr[ch], w[ch], 0.0)
    table[~live[ch]] = 0.0
    return np.clip(table, 0.0, 1.0)


def _margin(st, R, eps):
    """A function of ``R``, concave where every cell's cut polygon is not empty, >= 0 exactly where ``R`` is feasible.

    The least of the scaled slacks of every condition of :func:`feasible`: each
    cell's range of ``r1`` and of ``r2`` (by the cell's own ranges), ``T``
    within the reachable sums and ``F`` within ``[F_min, F_max]`` (by the shared
    rates' ranges), the rows on ``R`` alone. Each is concave in ``R`` (the
    bounds are convex or concave, ``F_min`` a convex LP value, ``F_max`` a
    concave one).

    A direction whose boxes have zero width for every cell (zero slack) makes
    some of these slacks vanish on the whole feasible set (every cell's
    coordinate is fixed by ``R``, and its sum is ``R``'s); they are left out
    there (``st.flat``), so that the margin still has an interior. The points
    found are then checked by :func:`rule_at`, which reads every condition.
    """
    T, F = float(R[0]), float(R[1])
    box = min(T / st.top[0], (st.top[0] - T) / st.top[0], F / st.top[1], (st.top[1] - F) / st.top[1])
    if box < 0:  # outside the shared rates' ranges: the margin of the nearest point in them, less the distance
        return min(_margin(st, (min(max(T, 0.0), st.top[0]), min(max(F, 0.0), st.top[1])), eps), 0.0) + box
    o = sum_range(st, (T, F), eps, always=True)
    live = st.live
    t1, t2 = st.top1[live], st.top2[live]
    lo1, hi1, lo2, hi2 = (o[k][live] for k in ("lo1", "hi1", "lo2", "hi2"))
    up, low = o["inv_up"][live], o["inv_low"][live]
    flat1, flat2 = getattr(st, "flat", (False, False))
    # the cell's range of r1 is [max(lo1, up), min(hi1, low)]: its width is the least of four differences
    terms = [np.min((hi1 - up) / t1), np.min((low - lo1) / t1), np.min((low - up) / t1),
             np.min(hi2 / t2), np.min((t2 - lo2) / t2)]
    if not flat1:
        terms.append(np.min((hi1 - lo1) / t1))
        sum_lo, sum_hi = o["t_range"]
        terms += [(T - sum_lo) / st.top[0], (sum_hi - T) / st.top[0]]
    if not flat2:
        terms.append(np.min((hi2 - lo2) / t2))
        terms += [(F - o["f_min"]) / st.top[1], (o["f_max"] - F) / st.top[1]]
    out = float(min(terms))
    if st.alone_kappa.size:
        B = st.alone_B
        norm = np.abs(B[0]) * st.top[0] + np.abs(B[1]) * st.top[1]
        v = st.alone_kappa + eps - B[0] * T - B[1] * F
        nz = norm > 0
        if np.any(v[~nz] < 0):
            return -np.inf
        if nz.any():
            out = min(out, float(np.min(v[nz] / norm[nz])))
    return out


#: The zero-slack LP in ``R``: tight feasibility tolerances (its answer is then checked by the oracle), the primal
#: simplex without presolve, which is linear in the rows on two columns (presolve alone took 1.8 s at 10^4 cells
#: of 4 rows and 150 s at 10^5; without it 0.10 s and 0.94 s).
_PINNED_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10,
                   "solver": "simplex", "simplex_strategy": 4, "presolve": "off"}
#: The returned rule's rows, recounted from its tables, hold within this (HiGHS' feasibility tolerance).
_RECOUNT_TOL = 1e-9
#: Ray searches stop at this fraction of the shared rates' range.
_WIDTH = 1e-15
#: The search over directions stops at this angle (radians).
_ANGLE = 1e-13
#: The search over directions first narrows to this angle, then tries ``_vertex``.
_COARSE = 1e-6
#: Three boundary points are on one edge when the sine of their angle is below this: the points carry the ray
#: search's round-off (about 1e-15) over separations of about 1e-8, and a bend this small moves the vertex by
#: less than 1e-13 at these distances.
_COLLINEAR = 1e-6
#: A margin this close below 0 is a point on the boundary (round-off): feasible within the oracle's tolerance.
_ON_EDGE = -1e-14
#: A start point is interior when its margin is at least this.
_INTERIOR = 1e-9


def _ray(st, R0, u, eps, *, c0=None, guess=None):
    """The farthest feasible point of the ray ``R0 + t u`` from an interior ``R0``: secant steps from inside.

    The margin is concave and piecewise linear on the feasible part of the
    ray, so the line through two inside points crosses zero at or beyond the
    boundary (exactly at it when both lie on the last linear piece): each step
    either moves the inside end or shrinks the bracket from outside; a step
    that gains less than half the bracket is followed by a bisection. ``c0``
    is the margin at ``R0`` when known; ``guess`` a distance near the boundary
    (a neighbouring direction's): the line through two points just inside it
    lands on the boundary when they lie on its last linear piece.
    """
    top = st.top
    t_max = np.inf
    for j in (0, 1):
        if u[j] > 0:
            t_max = min(t_max, (top[j] - R0[j]) / u[j])
        elif u[j] < 0:
            t_max = min(t_max, -R0[j] / u[j])

    def c(t):
        return _margin(st, (R0[0] + t * u[0], R0[1] + t * u[1]), eps)

    p, fp = 0.0, (c(0.0) if c0 is None else c0)
    a, fa, b = p, fp, t_max
    if guess is not None and 0 < guess < t_max:
        for t in (guess * (1 - 2e-7), guess * (1 - 1e-7)):
            ft = c(t)
            if ft >= 0:
                p, fp, a, fa = a, fa, t, ft
            else:
                b = min(b, t)
                break
        if a > 0 and fp > fa:
            t = a + fa * (a - p) / (fp - fa)
            if a < t < b:
                ft = c(t)
                if -_ON_EDGE >= ft >= _ON_EDGE:
                    return t if ft < 0 or t > a else a
                if ft >= 0:
                    p, fp, a, fa = a, fa, t, ft
                else:
                    b = t
    fb = c(b)
    if b == t_max and fb >= _ON_EDGE:
        return t_max
    # the first step: regula falsi between the ends
    t = a + (b - a) * (fa / (fa - fb)) if np.isfinite(fb) else a + (b - a) / 2
    width = _WIDTH * max(1.0, t_max)
    while b - a > width:
        if not a < t < b:
            t = a + (b - a) / 2
        before = b - a
        ft = c(t)
        if -_ON_EDGE >= ft >= _ON_EDGE:  # on the boundary within round-off: feasible within the oracle's tolerance
            return t if ft < 0 or t > a else a
        if ft >= 0:
            p, fp, a, fa = a, fa, t, ft
        else:
            b = t
        # the next point: the line through the two inside points (p, a)
        t = a + fa * (a - p) / (fp - fa) if fp > fa else a + (b - a) / 2
        if b - a > 0.5 * before and a < t < b:
            if (t - a) > 0.5 * (b - a):  # a long step from a slow bracket: bisect instead
                t = a + (b - a) / 2
    return a


def _edge_line(boundary, points, theta, step):
    """The outward normal ``n`` and offset ``n . P`` of the edge through the boundary points at ``theta``,
    ``theta + step`` and ``theta + 2 step``, or None when the three are not on one line."""
    P = []
    for k in range(3):
        th = theta + k * step
        if th not in points:
            boundary(th)
        P.append(points[th])
    d1, d2 = P[1] - P[0], P[2] - P[0]
    spread = float(np.hypot(*d1)) * float(np.hypot(*d2))
    if spread == 0 or abs(d1[0] * d2[1] - d1[1] * d2[0]) > _COLLINEAR * spread:
        return None
    n = np.array([d2[1], -d2[0]])
    return n, float(n @ P[0])


def _vertex(st, gamma, R0, points, boundary, theta, eps):
    """The optimal vertex near direction ``theta`` with its certificate, or None.

    The least ``gamma . R`` lies within :data:`_COARSE` of ``theta``. The
    edges through the boundary points at both ends of that bracket (and two
    more points beyond each end, on the same line) are
    supporting lines of the (convex) feasible set; their intersection ``V`` is
    optimal when it is feasible and ``-gamma`` is a non-negative combination of
    the two outward normals (every feasible point lies in the cone of the two
    half-planes at ``V``, on which ``gamma . R`` is least at ``V``).
    """
    lines = [_edge_line(boundary, points, theta - _COARSE, -_COARSE),
             _edge_line(boundary, points, theta + _COARSE, _COARSE)]
    if any(line is None for line in lines):
        return None
    normals = []
    for n, c in lines:  # outward: R0 lies inside, n . R0 < c
        normals.append((n, c) if n @ R0 < c else (-n, -c))
    (na, ca), (nb, cb) = normals
    N = np.array([na, nb])
    det = float(np.linalg.det(N))
    if abs(det) <= 1e-12 * float(np.hypot(*na)) * float(np.hypot(*nb)):
        return None  # parallel edges
    V = np.linalg.solve(N, np.array([ca, cb]))
    weights = np.linalg.solve(N.T, -gamma)  # -gamma = wa na + wb nb
    tol = 1e-12 * float(np.hypot(*gamma))
    if np.any(weights * np.array([np.hypot(*na), np.hypot(*nb)]) < -tol):
        return None
    if _margin(st, V, eps) < _ON_EDGE or not feasible(st, V, eps):
        return None
    return V


def _solve_pinned(st, eps):
    """The least ``gamma . R`` when every cell's box is a point (zero slack): one LP in ``R`` alone, or None.

    Each cell's state is then an affine function of ``R`` (one row per cell
    and side pins each coordinate), and it must lie in the cell's ROC polygon:
    above every line of its lower hull's segments (a convex function is the
    greatest of its pieces), below every line of its upper hull's, within its
    ranges. The feasible ``R`` are the intersection of those half-planes (with
    the sums of the cells' coordinates equal to ``R`` and the rows on ``R``
    alone): a two-column LP with a row per hull segment, which HiGHS solves
    exactly in a few passes over its rows; the feasible set needs no interior.
    """
    rows = [st.rows[(j, side)] for j in (0, 1) for side in ("lo", "hi")]
    if not all(r[5] for r in rows):  # a cell with several rows (or none) on a side: not pinned affinely
        return None
    _boxes(st, (0.0, 0.0), eps)  # the bounds' coefficients at eps
    (x0, xT, xF), (y0, yT, yF) = st.box_coef[(0, "lo")], st.box_coef[(1, "lo")]
    out_a, out_b = [], []  # rows a . R <= b

    def add(aT, aF, b):
        out_a.append(np.column_stack([aT, aF]))
        out_b.append(b)

    for side, sign in ((st.lower, 1.0), (st.upper, -1.0)):
        # lower: slope x - y <= slope x0 - y0; upper: y - slope x <= y0 - slope x0 (on the cell's state)
        k, sl = side.ch, side.slope
        add(sign * (sl * xT[k] - yT[k]), sign * (sl * xF[k] - yF[k]),
            sign * (sl * side.x0 - side.y0 - sl * x0[k] + y0[k]))
    live = np.flatnonzero(st.live)
    zero = np.zeros(live.size)
    for (cT, cF, c0), top in (((xT, xF, x0), st.top1), ((yT, yF, y0), st.top2)):
        add(-cT[live], -cF[live], c0[live] + zero)  # coordinate >= 0
        add(cT[live], cF[live], top[live] - c0[live])  # coordinate <= the cell's range
    A = np.vstack(out_a)
    b = np.concatenate(out_b)
    lo = np.full(b.size, -np.inf)
    # the sums of the cells' coordinates are R (identically for equalized odds: kept when not)
    for j, (cT, cF, c0) in enumerate(((xT, xF, x0), (yT, yF, y0))):
        row = np.array([cT[live].sum(), cF[live].sum()])
        row[j] -= 1.0
        if np.max(np.abs(row)) > 1e-12 or abs(c0[live].sum()) > 1e-12:
            A = np.vstack([A, row])
            b = np.append(b, -c0[live].sum())
            lo = np.append(lo, -c0[live].sum())
    if st.alone_kappa.size:
        A = np.vstack([A, st.alone_B.T])
        b = np.append(b, st.alone_kappa + eps)
        lo = np.append(lo, np.full(st.alone_kappa.size, -np.inf))
    A[np.abs(A) < 1e-300] = 0.0
    sol = solve_lp(st.gamma, A, lo, b, col_lower=np.zeros(2), col_upper=st.top.copy(),
                   options=_PINNED_OPTIONS, what="the zero-slack two-rate LP")
    if not sol.optimal:
        return None
    return np.clip(np.asarray(sol.x, dtype=np.float64), 0.0, st.top)


def solve_two_rate(compiled, start, M, *, epsilon=0.0):
    """The threshold LP's optimum when it has the two-shared-rate structure, else None.

    The objective must read the two shared atoms only (``gamma . R``). Then
    the LP is the least ``gamma . R`` over the convex set of feasible ``R``: a
    golden-section search over the directions from an interior point (on the
    diagonal, every cell at the same acceptance probability, or across it),
    each direction's boundary point found by ``_ray`` on the margin of the
    oracle (:func:`sum_range`); the objective along the boundary has one
    minimum on the half circle of directions that decrease it. The search
    stops at an angle of 1e-6 when ``_vertex`` certifies the vertex there, else
    at 1e-13. When every cell's box is a point (zero slack), one two-column LP
    in ``R`` instead (``_solve_pinned``). The returned rule is
    :func:`rule_at`'s at the point found, its rows recounted.

    Parameters
    ----------
    compiled, start, M, epsilon
        As :func:`rateopt._postprocess._shared_rate_lp.solve_shared_rate`.

    Returns
    -------
    SharedRateSolution or None
        None when the structure does not hold, the objective reads more than
        the two shared rates, a cell lacks one of the two rates, or no interior
        start point is found when the boxes are not points (the caller then
        solves the LP with HiGHS).
    """
    st = two_rate_structure(compiled, start, M)
    if st is None or st.gamma is None:
        return None
    live = st.live
    if not np.all(st.top1[live] > 0) or not np.all(st.top2[live] > 0) or not np.all(st.top > 0):
        return None
    eps = float(epsilon)
    # directions whose every box has zero width (zero slack): read at a point of the diagonal
    o = sum_range(st, 0.5 * st.top, eps, always=True)
    st.flat = tuple(bool(np.all(o[hi][live] - o[lo][live] <= _TOL * top[live]))
                    for lo, hi, top in (("lo1", "hi1", st.top1), ("lo2", "hi2", st.top2)))
    if all(st.flat):
        return _answer(st, _solve_pinned(st, eps), eps)
    best = None
    for p in (0.5, 0.25, 0.75, 0.1, 0.9):
        R = p * st.top
        m = _margin(st, R, eps)
        if best is None or m > best[0]:
            best = (m, R)
    if best[0] < _INTERIOR:
        # the feasible set may lie on one side of the diagonal: the greatest margin across it
        base = best[1]
        normal = np.array([-st.top[1], st.top[0]]) / float(np.hypot(*st.top))
        up = min(base[0] / -normal[0], (st.top[1] - base[1]) / normal[1])  # T falls, F rises
        down = min((st.top[0] - base[0]) / -normal[0], base[1] / normal[1])
        off, m = golden_section(lambda d: _margin(st, base + d * normal, eps), -down, up, 1e-9 * (up + down),
                                maximize=True)
        best = (m, base + off * normal)
        if best[0] < _INTERIOR:
            return None
    R0 = best[1]
    gamma = st.gamma
    g_norm = float(np.hypot(*gamma))
    if g_norm == 0:
        R = R0
    else:
        center = float(np.arctan2(-gamma[1], -gamma[0]))
        points = {}
        c0 = _margin(st, R0, eps)

        def boundary(theta):
            u = np.array([np.cos(theta), np.sin(theta)])
            near = min(points, key=lambda th: abs(th - theta)) if points else None
            guess = float(np.hypot(*(points[near] - R0))) if near is not None else None
            R = R0 + _ray(st, R0, u, eps, c0=c0, guess=guess) * u
            points[theta] = R
            return float(gamma @ R)

        theta, _ = golden_section(boundary, center - np.pi / 2, center + np.pi / 2, _COARSE)
        if theta not in points:
            boundary(theta)
        R = _vertex(st, gamma, R0, points, boundary, theta, eps)
        if R is None:  # no certified vertex: the golden section on to its full precision
            theta, _ = golden_section(boundary, theta - _COARSE, theta + _COARSE, _ANGLE)
            if theta not in points:
                boundary(theta)
            R = points[theta]
    return _answer(st, R, eps)


def _answer(st, R, eps):
    """The solution at ``R``: :func:`rule_at`'s rule, its rows recounted, or None."""
    if R is None:
        return None
    x = rule_at(st, R, eps)
    if x is None:  # the ray search returns feasible points only; the pinned LP's within its tolerance
        return None
    p = st.M @ x
    # the rule's rows recounted from its tables: within HiGHS' feasibility tolerance, or HiGHS answers
    scale = max(1.0, float(np.max(np.abs(st.kappa), initial=0.0)))
    if np.max(st.C @ p - st.kappa - eps, initial=-np.inf) > _RECOUNT_TOL * scale:  # pragma: no cover
        return None
    value = float(st.coef @ p + st.constant)
    return SharedRateSolution(x=x, atom_rates=p, objective=value)
